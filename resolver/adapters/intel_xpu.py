"""Intel XPU kernels (the XPU build of sgl-kernel): ``intel_xpu`` attention and DSA.  No contract
platform is an Intel GPU, so every claim here is "not on this vendor".
Evidence: the ids cited are in docs/evidence.md."""
import importlib.metadata

from ._platforms import ALL
from .base import Claim, KernelAdapter, Limit, Probe

_XPU_ONLY = "U9, S26: SYCL kernels of sgl-kernel-xpu for Intel XPU (Arc B-series) only"


def probe() -> Probe:
    # its import name (sgl_kernel) is the CUDA package's too, so only the distribution can tell
    for dist in ("sgl-kernel-xpu", "sglang-kernel-xpu"):
        try:
            return Probe(True, importlib.metadata.version(dist), f"distribution {dist} found")
        except importlib.metadata.PackageNotFoundError:
            continue
    return Probe(False, None, "no sgl-kernel-xpu distribution (its distribution name is not confirmed)")


ADAPTER = KernelAdapter(
    name="intel-xpu",
    family="Intel XPU attention kernels (SYCL)",
    package="sgl-kernel-xpu",
    claims=tuple(Claim(role, ("intel_xpu",), "unsupported", ALL, _XPU_ONLY)
                 for role in ("attention", "dsa_prefill", "dsa_decode")),
    limits=(
        Limit(("intel_xpu",), "kv_dtypes", ("auto", "bf16", "bfloat16"), "U10, S26", "no FP8"),
        Limit(("intel_xpu",), "page_sizes", (16, 32, 64, 128), "S42", "MHA 64 or 128; DSA 128"),
    ),
    probe=probe,
)
