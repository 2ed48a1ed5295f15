"""SGLang's Triton kernels: the ``triton`` attention backend, the ROCm DSA ``triton`` backend and
the DSA prefill ``triton_sparse_mla``.  Evidence: the ids cited are in docs/evidence.md."""
from ._platforms import BF16, ROCM, SM8X, SM10X, SM12X, SM90, SM110
from .base import Claim, KernelAdapter, Limit, package_probe

_HIP_ONLY = "S28: \"The triton DSA backend is only supported on ROCm/HIP.\""

ADAPTER = KernelAdapter(
    name="triton",
    family="Triton kernels (JIT): dense attention and DSA",
    package="triton",
    claims=(
        # SM110 is unknown for triton: no claim there
        Claim("attention", ("triton",), "supported", SM8X + SM90 + SM10X + SM12X + ROCM,
              "S41, U10: SGLang's own default for MLA on SM8x/SM12x and the ROCm fallback", kv_dtypes=BF16),
        Claim("attention", ("triton",), "supported", SM8X + SM90 + SM10X + SM12X,
              "S32: SGLang's fp8_e5m2 fallback for fa3; the kernels dequantize in-kernel", kv_dtypes=("fp8_e5m2",)),
        # fp8_e4m3 is unknown: Triton's fp8e4nv needs capability >= 8.9 (U11) but SGLang was not seen failing
        *(Claim(role, ("triton",), "refused", SM8X + SM90 + SM10X + SM110, _HIP_ONLY)
          for role in ("dsa_prefill", "dsa_decode")),
        # SGLang's resolution lets GLM DSA with fp8 on SM12x through; the kernel path is still HIP-only
        *(Claim(role, ("triton",), "unsupported", SM12X,
                _HIP_ONLY + "; SGLang's check exempts GLM DSA with fp8 on SM12x, which then has no triton DSA kernel")
          for role in ("dsa_prefill", "dsa_decode")),
        Claim("dsa_prefill", ("triton",), "supported", ROCM, "S28, M10: the HIP DSA default"),
        Claim("dsa_decode", ("triton",), "supported", ROCM, "S28, M10: the HIP DSA default"),
        Claim("dsa_prefill", ("triton_sparse_mla",), "supported", SM90 + SM12X,
              "S11, S39: tuned for SM90, SM120, SM121"),
        Claim("dsa_prefill", ("triton_sparse_mla",), "unsupported", SM8X + ROCM,
              "S11: CUDA capability major >= 9 only (refused at backend construction)"),
    ),
    limits=(
        Limit(("triton",), "kv_dtypes", ("auto", "bf16", "bfloat16", "fp8_e5m2"), "S41, S32, U10",
              "fp8_e4m3: the code dequantizes in-kernel, the docs say unsupported: unknown"),
        Limit(("triton_sparse_mla",), "kv_dtypes", ("auto", "bf16", "bfloat16", "fp8_e4m3"), "S11",
              "a bf16 kernel; an fp8 pool is dequantized"),
    ),
    probe=package_probe("triton", "triton"),
)
