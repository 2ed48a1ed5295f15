"""FlashInfer's own kernels: dense ``flashinfer`` (MHA and MLA, FA2 template plus CUTLASS FMHA on
SM100) and the cute-dsl MLA decode ``cutedsl_mla``.  Its TRT-LLM engines are in trtllm.py.
Evidence: the ids cited are in docs/evidence.md."""
import importlib.metadata
import importlib.util

from ._platforms import BF16, CUDA, ROCM, SM8X, SM10X, SM12X, SM90, SM110
from .base import Claim, KernelAdapter, Limit, Probe, package_probe

_CUDA_ONLY = "B13: FlashInfer's support table is CUDA SM75-SM121; SGLang enables it on CUDA only (S41)"


def probe() -> Probe:
    """flashinfer found without importing it, and whether its prebuilt cubins match its version
    (flashinfer itself does not flag a mismatch; B13 names the companion package)."""
    found = package_probe("flashinfer-python", "flashinfer")()
    if not found.installed or importlib.util.find_spec("flashinfer_cubin") is None:
        return found
    try:
        cubin = importlib.metadata.version("flashinfer-cubin")
    except importlib.metadata.PackageNotFoundError:
        return found
    if found.version and cubin != found.version:
        return Probe(True, found.version, f"{found.detail}; flashinfer-cubin {cubin} does not match flashinfer "
                                          f"{found.version}: its prebuilt kernels may fail to load")
    return Probe(True, found.version, f"{found.detail}; flashinfer-cubin {cubin}")


ADAPTER = KernelAdapter(
    name="flashinfer",
    family="FlashInfer dense attention (FA2 template, CUTLASS FMHA) and cute-dsl MLA decode",
    package="flashinfer-python",
    claims=(
        Claim("attention", ("flashinfer",), "supported", SM8X + SM90 + SM10X + SM12X, "B13 support table; S22",
              kv_dtypes=BF16),
        Claim("attention", ("flashinfer",), "supported", SM110, "B13 support table (11.0): MHA; MLA there is unknown",
              kv_dtypes=BF16, mla=False),
        Claim("attention", ("flashinfer",), "unsupported", ROCM, _CUDA_ONLY),
        Claim("attention", ("cutedsl_mla",), "supported", SM10X, "B9: FlashInfer cute-dsl MLA decode on SM100/SM103"),
        Claim("attention", ("cutedsl_mla",), "refused", SM8X + SM90 + SM110 + SM12X + ROCM,
              "S32: SGLang's resolver accepts cutedsl_mla only on is_sm100; B9"),
        Claim("attention_prefill", ("cutedsl_mla",), "refused", CUDA + ROCM,
              "S32: \"CuteDSL MLA only supports decoding for now\""),
    ),
    limits=(
        Limit(("flashinfer",), "kv_dtypes", ("auto", "bf16", "bfloat16"), "B13, U10",
              "fp8 for MHA is documented without an arch qualifier and for MLA marked unsupported: unknown"),
        Limit(("cutedsl_mla",), "kv_dtypes", ("auto", "bf16", "bfloat16", "fp8_e4m3"), "S32"),
        Limit(("cutedsl_mla",), "page_sizes", (32, 64), "S31"),
        Limit(("flashinfer",), "head_dims", ("64/64", "128/128", "256/256", "192/128"), "B11",
              "the FA3-template prefill; the FA2 template JIT-compiles other dims"),
    ),
    probe=probe,
)
