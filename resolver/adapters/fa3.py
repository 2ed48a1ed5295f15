"""FlashAttention 3 (sglang-kernel 0.4.10 ``flash_ops``): the ``fa3`` attention backend and the
DSA bf16 decode path.  Evidence: the ids cited are in docs/evidence.md."""
from ._platforms import BF16, CUDA, ROCM, SM8X, SM10X, SM12X, SM90, SM110
from .base import Claim, KernelAdapter, Limit, package_probe

_BUILT = "B3: flash_ops is built for sm_80/86/90a only, no PTX; S2: the FA3 registry asserts SM>=80 and SM<=90"

ADAPTER = KernelAdapter(
    name="fa3",
    family="FlashAttention 3 (sgl_kernel.flash_ops)",
    package="sglang-kernel",
    claims=(
        Claim("attention", ("fa3",), "supported", SM8X + SM90, "B3, S15: sm_80/86 (also on 8.9) and sm_90a builds",
              kv_dtypes=BF16),
        Claim("attention", ("fa3",), "supported", SM90, "B3: e4m3 kernels exist for sm_90a", kv_dtypes=("fp8_e4m3",)),
        Claim("attention", ("fa3",), "unsupported", SM10X + SM110 + SM12X,
              "R7 (SM110): " + _BUILT
              + " (\"FlashAttention v3 Backend requires SM>=80 and SM<=90\", at backend construction)"),
        Claim("attention", ("fa3",), "unsupported", SM8X,
              "R8: S2, the FA3 registry refuses MLA on major 8; B3 \"Only Hopper supports different V headdim\"",
              mla=True),
        Claim("attention", ("fa3",), "unsupported", SM8X,
              "R14: B3 \"FlashAttention on Ampere/Ada cards only supports fp16 and bf16 data type\"",
              kv_dtypes=("fp8_e4m3",)),
        Claim("attention", ("fa3",), "refused", CUDA,
              "S32: no e5m2 kernel anywhere; SGLang rewrites fa3 to triton (B3)",
              kv_dtypes=("fp8_e5m2",)),
        # ROCm: unknown (R16, weak); no claim
        Claim("dsa_decode", ("fa3",), "supported", SM90, "B3: FA3 576/512 head dims are instantiated for sm_90a",
              kv_dtypes=BF16),
        Claim("dsa_decode", ("fa3",), "unsupported", SM8X,
              "R5: B3 \"Only Hopper supports different V headdim\" (sm_80/86 builds); GH8 (no DSA path on A100)"),
        Claim("dsa_decode", ("fa3",), "unsupported", SM10X + SM110 + SM12X, _BUILT),
        Claim("dsa_decode", ("fa3",), "unsupported", ROCM, "B3: a CUDA build"),
        # as a DSA prefill backend fa3 has no evidence of its own; only what the binary (B3) rules out is claimed
        Claim("dsa_prefill", ("fa3",), "unsupported", SM10X + SM110 + SM12X, _BUILT),
        Claim("dsa_prefill", ("fa3",), "unsupported", ROCM, "B3: a CUDA build"),
    ),
    limits=(
        Limit(("fa3",), "kv_dtypes", ("auto", "bf16", "bfloat16", "fp8_e4m3"), "B3", "fp8_e4m3 on SM90 only"),
        Limit(("fa3",), "head_dims", ("64/64", "96/96", "128/128", "192/128", "192/192", "256/256", "64/256", "64/512"),
              "B3", "QK/V on SM90; SM8x has equal dims 64-256 only; 64/256 and 64/512 are bf16/fp16 only"),
    ),
    probe=package_probe("sglang-kernel", "sgl_kernel", "flash_ops*.so"),
    compiled_backends=("fa3",),
)
