"""TileLang DSA kernels (SGLang's own programs, JIT-compiled for the running device).  Mostly
unknown on CUDA, so mostly undeclared (unknown is neither refused nor preferred).  The NoPE
shared-memory limit on SM12x depends on the model and is a rule (rules/kernels.yaml, R15).
Evidence: the ids cited are in docs/evidence.md."""
from ._platforms import BF16, ROCM
from .base import Claim, KernelAdapter, Limit, Status, package_probe

_FP8_GATE = "S28, S29: SGLang takes a tilelang fp8 DSA cache only on capability >= 8.9, both sides tilelang"

#: status, platforms, evidence, strength, KV dtypes: one claim of each for DSA prefill and decode
_CLAIMS: tuple[tuple[Status, tuple[str, ...], str, str, tuple[str, ...] | None], ...] = (
    ("supported", ROCM, "S38, M10: the HIP DSA path (HiSparse default on ROCm)", "strong", None),
    ("supported", ("sm90",), "S38, U13 (upstream table): bf16 on SM90", "medium", BF16),
    ("refused", ("sm80", "sm86"), _FP8_GATE, "strong", ("fp8_e4m3",)),
)

ADAPTER = KernelAdapter(
    name="tilelang",
    family="TileLang DSA kernels (SGLang's own, JIT-compiled)",
    package="tilelang",
    claims=tuple(
        Claim(role, ("tilelang",), status, platforms, why, strength, kv_dtypes=kv)
        for role in ("dsa_prefill", "dsa_decode")
        for status, platforms, why, strength, kv in _CLAIMS
    ),
    limits=(
        Limit(("tilelang",), "kv_dtypes", ("auto", "bf16", "bfloat16", "fp8_e4m3"), "S28, S38",
              "fp8 on CUDA needs both sides tilelang, capability >= 8.9 and no HiSparse; kernel status unknown"),
        Limit(("tilelang",), "head_dims", ("576/512", "512/512"), "S38", "d_v 512 with a rope tail of 64 or 0 (NoPE)"),
    ),
    probe=package_probe("tilelang", "tilelang"),
)
