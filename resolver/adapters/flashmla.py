"""FlashMLA (sgl-flash-mla 1.0.0): dense MLA decode ``flashmla`` and the DSA kernels
``flashmla_sparse``, ``flashmla_kv``, ``flashmla_auto``; and SGLang's own ``flashmla_sparse_q8``.
Evidence: the ids cited are in docs/evidence.md."""
from ._platforms import BF16, CUDA, ROCM, SM8X, SM10X, SM12X, SM90, SM110
from .base import Claim, KernelAdapter, Limit, package_probe

_BIN = ("B2: sgl-flash-mla 1.0.0 _C_legacy.abi3.so is built for sm_90a/100a/103a/107a only (no PTX); "
        "dense decode is SM90a-only, sparse kernels SM90a/SM100f")
_SPARSE = ("flashmla_sparse", "flashmla_kv")

ADAPTER = KernelAdapter(
    name="flashmla",
    family="FlashMLA: MLA dense decode and DeepSeek sparse-attention kernels",
    package="sgl-flash-mla",
    claims=(
        # dense decode; prefill, decode and draft roles read these "attention" claims
        Claim("attention", ("flashmla",), "supported", SM90, "U3, B2: dense MLA decode runs on SM90a", kv_dtypes=BF16),
        Claim("attention", ("flashmla",), "unsupported", SM8X + SM10X + SM110 + SM12X,
              "R9; U3 'Dense decode MLA is only supported on SM90a'; " + _BIN),
        Claim("attention", ("flashmla",), "unsupported", ROCM, "S5: FlashMLA is CUDA only"),
        Claim("attention", ("flashmla",), "unsupported", SM90,
              "R17: B2 instantiates dense FP8 decode for e4m3 only; S4 counts e5m2 as an fp8 cache", "medium",
              kv_dtypes=("fp8_e5m2",)),
        # the sparse (DSA) kernels
        Claim("dsa_prefill", _SPARSE + ("flashmla_auto",), "supported", SM90 + SM10X, _BIN),
        Claim("dsa_decode", _SPARSE, "supported", SM90 + SM10X, _BIN),
        Claim("dsa_prefill", _SPARSE + ("flashmla_auto",), "unsupported", SM110,
              "R4: " + _BIN + " (SM100f is the 10.x family; no SM11x code)"),
        Claim("dsa_decode", _SPARSE, "unsupported", SM110,
              "R4/R6: " + _BIN + " (SM100f is the 10.x family; no SM11x code)"),
        Claim("dsa_prefill", _SPARSE + ("flashmla_auto",), "unsupported", SM8X + SM12X,
              "R5/R2: " + _BIN + "; GH8 (SM80: no end-to-end DSA path); S6 (no flash_mla kernel on SM120)"),
        Claim("dsa_decode", _SPARSE, "unsupported", SM8X + SM12X,
              "R5/R2/R6: " + _BIN + "; GH8 (SM80); S6 (no flash_mla kernel on SM120)"),
        Claim("dsa_prefill", _SPARSE + ("flashmla_auto",), "unsupported", ROCM, "S5: FlashMLA is CUDA only"),
        Claim("dsa_decode", _SPARSE, "unsupported", ROCM, "S5: FlashMLA is CUDA only"),
        Claim("dsa_decode", ("flashmla_auto",), "unsupported", CUDA + ROCM,
              "R12, S13: flashmla_auto is prefill-only; decode fails with \"Unsupported dsa_impl = 'flashmla_auto'\""),
        Claim("dsa_prefill", ("flashmla_sparse_q8",), "supported", SM90, "S10: SGLang's SM90 JIT kernel"),
        Claim("dsa_prefill", ("flashmla_sparse_q8",), "unsupported", SM8X + SM10X + SM110 + SM12X + ROCM,
              "S10: \"flashmla_sparse_q8 is SM90-only\" (refused at backend construction)"),
        Claim("dsa_decode", ("flashmla_sparse_q8",), "unsupported", CUDA + ROCM,
              "S10: \"flashmla_sparse_q8 is a prefill-only backend\""),
    ),
    limits=(
        Limit(("flashmla", "flashmla_kv"), "page_sizes", (64,), "U3, S8, S31"),
        Limit(("flashmla",), "kv_dtypes", ("auto", "bf16", "bfloat16"), "B2, U10",
              "fp8_e4m3 has a kernel on SM90 that a docs revision calls broken: unknown (U10)"),
        Limit(("flashmla_kv",), "kv_dtypes", ("fp8_e4m3",), "B2, S8", "a bf16 cache is re-quantized on every call"),
        Limit(("flashmla", "flashmla_sparse", "flashmla_kv"), "head_dims", ("576/512",), "B2",
              "MLA: 512 latent + 64 rope for QK, 512 for V"),
    ),
    probe=package_probe("sgl-flash-mla", "flash_mla", "_C_legacy*.so"),
    compiled_backends=("flashmla", "flashmla_sparse", "flashmla_kv", "flashmla_auto"),
)
