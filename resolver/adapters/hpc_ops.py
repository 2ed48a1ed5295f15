"""Tencent HPC-Ops (``hpc_ops``, import ``hpc``): SM90-only MHA kernels.
Evidence: the ids cited are in docs/evidence.md."""
from ._platforms import ROCM, SM8X, SM10X, SM12X, SM90, SM110
from .base import Claim, KernelAdapter, Limit, package_probe

ADAPTER = KernelAdapter(
    name="hpc-ops",
    family="Tencent HPC-Ops attention (SM90)",
    package="hpc",
    claims=(
        Claim("attention", ("hpc_ops",), "supported", SM90, "S23: the kernels ship sm90a",
              kv_dtypes=("auto", "bf16", "bfloat16")),
        Claim("attention", ("hpc_ops",), "unsupported", SM8X + SM10X + SM110 + SM12X + ROCM,
              "S23, S36: ValueError at backend construction for any major but 9 (\"the kernels ship sm90a\")"),
    ),
    limits=(
        Limit(("hpc_ops",), "page_sizes", (64,), "S23, S31"),
        Limit(("hpc_ops",), "head_dims", ("128/128",), "S23", "GQA group 4 or 8; no sliding window, no logit cap"),
        Limit(("hpc_ops",), "kv_dtypes", ("auto", "bf16", "bfloat16", "fp8_e4m3"), "S23",
              "fp8_e4m3 only with HunYuan V3's fused QKNorm+RoPE+quant op"),
    ),
    probe=package_probe("hpc", "hpc"),
)
