"""FlashAttention 3 as the DSA decode backend ``fa3`` (sglang-kernel 0.4.10 flash_ops).
Evidence: shared/reference/kernels.md section 2.2 (ids as there)."""
from ._platforms import ROCM, SM8X, SM10X, SM12X, SM90
from .base import Claim, KernelAdapter, package_probe

ADAPTER = KernelAdapter(
    name="fa3",
    family="FlashAttention 3 (sgl_kernel.flash_ops) as the DSA bf16 decode kernel",
    package="sglang-kernel",
    claims=(
        Claim("dsa_decode", ("fa3",), "supported", SM90, "B3: FA3 576/512 head dims are instantiated for sm_90a"),
        Claim("dsa_decode", ("fa3",), "unsupported", SM8X,
              "R5: B3 \"Only Hopper supports different V headdim\" (sm_80/86 builds); GH8 (no DSA path on A100)"),
        Claim("dsa_decode", ("fa3",), "unsupported", SM10X + SM12X,
              "B3: flash_ops is built for sm_80/86/90a only, no PTX"),
        Claim("dsa_decode", ("fa3",), "unsupported", ROCM, "B3: a CUDA build"),
    ),
    probe=package_probe("sglang-kernel", "sgl_kernel"),
)
