"""FlashInfer's SM12x sparse MLA kernels (``flashinfer_sparse_mla``).  Which models SGLang lets
use them is a rule (rules/kernels.yaml, divergence D2); here only where the kernels exist.
Evidence: the ids cited are in docs/evidence.md."""
from ._platforms import ROCM, SM8X, SM10X, SM12X, SM90, SM110
from .base import Claim, KernelAdapter, Limit, Status, package_probe

_WHY = "B10: flashinfer 0.7.2 _sparse_mla_sm120 is declared for CC 120/121 only; S6: SGLang refuses it elsewhere"

_CLAIMS: tuple[tuple[Status, tuple[str, ...], str], ...] = (
    ("supported", SM12X, "B10: kernels for CC 120/121"),
    ("unsupported", SM8X + SM90 + SM10X + SM110 + ROCM, _WHY),
)

ADAPTER = KernelAdapter(
    name="flashinfer-sparse-mla",
    family="FlashInfer sparse MLA for SM120/SM121",
    package="flashinfer-python",
    claims=tuple(
        Claim(role, ("flashinfer_sparse_mla",), status, platforms, why)
        for role in ("dsa_prefill", "dsa_decode")
        for status, platforms, why in _CLAIMS
    ),
    limits=(Limit(("flashinfer_sparse_mla",), "kv_dtypes", ("fp8_e4m3",), "S6", "GLM's packed fp8 layout"),),
    probe=package_probe("flashinfer-python", "flashinfer"),
)
