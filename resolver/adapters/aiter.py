"""AMD AITER (ROCm): the ``aiter`` attention backend and the DSA ``aiter`` decode.
Evidence: the ids cited are in docs/evidence.md."""
from ._platforms import CUDA, ROCM
from .base import Claim, KernelAdapter, Limit, package_probe

_ROCM_ONLY = "U8: AITER is AMD's ROCm library (gfx942 fully supported, gfx950 supported); no CUDA build"

ADAPTER = KernelAdapter(
    name="aiter",
    family="AMD AITER attention kernels (ROCm)",
    package="amd-aiter",
    claims=(
        Claim("attention", ("aiter",), "supported", ROCM, "U8, S24"),
        Claim("attention", ("aiter",), "unsupported", CUDA, _ROCM_ONLY),
        Claim("dsa_decode", ("aiter",), "supported", ROCM, "U13 (HIP decode supported), S43"),
        Claim("dsa_prefill", ("aiter",), "unsupported", CUDA, _ROCM_ONLY),
        Claim("dsa_decode", ("aiter",), "unsupported", CUDA, _ROCM_ONLY),
    ),
    limits=(
        Limit(("aiter",), "kv_dtypes", ("auto", "bf16", "bfloat16", "fp8_e4m3", "fp8_e5m2"), "S24, S25",
              "both fp8 spellings store the platform fp8 (float8_e4m3fnuz on gfx94x)"),
    ),
    probe=package_probe("amd-aiter", "aiter"),
)
