"""SGLang's portable DSA kernels: TileLang (JIT) and Triton.  Mostly unknown on CUDA, so
mostly undeclared (unknown is neither refused nor preferred).
Evidence: shared/reference/kernels.md sections 2.8 and 2.9."""
from ._platforms import ROCM
from .base import Claim, KernelAdapter, package_probe

ADAPTER = KernelAdapter(
    name="tilelang",
    family="TileLang DSA kernels (SGLang's own, JIT-compiled)",
    package="tilelang",
    claims=(
        Claim("dsa_prefill", ("tilelang",), "supported", ROCM, "S38, M10: the HIP DSA path (HiSparse default on ROCm)"),
        Claim("dsa_decode", ("tilelang",), "supported", ROCM, "S38, M10: the HIP DSA path (HiSparse default on ROCm)"),
        Claim("dsa_prefill", ("tilelang",), "supported", ("sm90",), "S38, upstream table: bf16 on SM90", "medium"),
        Claim("dsa_decode", ("tilelang",), "supported", ("sm90",), "S38, upstream table: bf16 on SM90", "medium"),
    ),
    probe=package_probe("tilelang", "tilelang"),
)
