"""FlashAttention 4 (CuTe DSL, JIT): ``fa4``.  SGLang 0.5.23 runs its vendored copy and, on
capability 12.x, its own forward host.  Evidence: the ids cited are in docs/evidence.md."""
from ._platforms import BF16, ROCM, SM8X, SM10X, SM12X, SM90, SM110
from .base import Claim, KernelAdapter, Limit, package_probe

_FP8 = ("fp8_e4m3", "mxfp8")
_ONLY_SM100 = "S17: \"FP8 is only supported on SM100 (compute capability 10.x)\"; B14"

ADAPTER = KernelAdapter(
    name="fa4",
    family="FlashAttention 4 (CuTe DSL, JIT-compiled through nvidia-cutlass-dsl)",
    package="nvidia-cutlass-dsl",
    claims=(
        Claim("attention", ("fa4",), "supported", SM90 + SM10X, "S17, U10: prefill and decode on SM90 and SM100",
              kv_dtypes=BF16),
        Claim("attention", ("fa4",), "supported", SM110, "S17: the interface treats 10.x and 11.x alike",
              kv_dtypes=BF16),
        Claim("attention", ("fa4",), "supported", SM12X, "S18: the fa4_sm120 forward host (bf16/fp16)", kv_dtypes=BF16),
        Claim("attention", ("fa4",), "supported", SM10X, _ONLY_SM100 + " (fp8 and the mxfp8 block-scaled path)",
              kv_dtypes=_FP8),
        Claim("attention", ("fa4",), "unsupported", SM8X + SM90 + SM110, _ONLY_SM100, kv_dtypes=_FP8),
        Claim("attention", ("fa4",), "unsupported", SM12X,
              "R13: " + _ONLY_SM100 + "; S18: the SM12x forward host has no fp8 path", "medium", kv_dtypes=_FP8),
        Claim("attention", ("fa4",), "unsupported", ROCM, "S17: a CUDA CuTe DSL kernel; no ROCm path"),
        # SM8x bf16: the interface accepts it, SGLang-level support is unknown (S17); no claim
    ),
    limits=(
        Limit(("fa4",), "kv_dtypes", ("auto", "bf16", "bfloat16", "fp8_e4m3", "mxfp8"), "S17, B14, S34",
              "fp8 and mxfp8 on SM100/SM103 only"),
        Limit(("fa4",), "head_dims", ("8-256", "512/512", "192/128", "64/512", "256/256"), "S17",
              "SM90: 8-256 both dims or 512/512; SM100: 8-128, 192/128, 64 or equal/512, 256/256"),
    ),
    probe=package_probe("nvidia-cutlass-dsl", "cutlass"),
)
