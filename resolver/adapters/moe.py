"""The MoE runner's kernel families (``--moe-runner-backend``, role ``moe``), one adapter each.

Evidence ids MK1-MK12 are listed, with what was observed, where, and a public link, in
docs/kernels.md, section "MoE kernels".  A claim narrowed by ``quantizations`` holds only for a model
whose weights SGLang quantizes so (``moe.model_quantization``: --quantization, else the checkpoint's
method); "unquantized" names BF16 weights.  What no claim covers is unknown: ``experimental_sgl_trtllm``,
``experimental_sgl_marlin``, ``humming``, ``flashinfer_megamoe`` (its SM100 check is SGLang's own,
rules/moe_a2a.yaml) and the ``lora_*`` runners, and every platform a family's evidence is silent on."""
from ._platforms import CUDA, ROCM, SM8X, SM10X, SM12X, SM90, SM110
from .base import Claim, KernelAdapter, package_probe
from .intel_xpu import probe as _xpu_probe

_ALL_BUT_SM100 = SM8X + SM90 + SM110 + SM12X
_FP8 = ("fp8",)
_MXFP4 = ("mxfp4",)
# one probe per package, shared by the families it ships
_FLASHINFER_PROBE = package_probe("flashinfer-python", "flashinfer")
_SGL_KERNEL_PROBE = package_probe("sglang-kernel", "sgl_kernel")

DEEP_GEMM = KernelAdapter(
    name="moe-deep-gemm",
    family="DeepGEMM grouped GEMMs (JIT), the deep_gemm MoE runner",
    package="sgl-deep-gemm",
    claims=(
        Claim("moe", ("deep_gemm",), "supported", SM90 + ("sm100",), "MK1: DeepGEMM requires an SM90 or SM100 GPU"),
        Claim("moe", ("deep_gemm",), "unsupported", SM8X,
              "MK1: DeepGEMM requires an SM90 or SM100 GPU; MK2: SGLang turns DeepGEMM off below SM90"),
        Claim("moe", ("deep_gemm",), "unsupported", ROCM,
              "MK1: DeepGEMM is a CUDA library (SM90/SM100); MK2: SGLang turns DeepGEMM off on ROCm (not CUDA)"),
        # SM103, SM110 and SM12x: unknown (SGLang probes an SM120 build of DeepGEMM, MK2)
    ),
    probe=package_probe("sgl-deep-gemm", "deep_gemm"),
)

FLASHINFER_TRTLLM = KernelAdapter(
    name="moe-flashinfer-trtllm",
    family="FlashInfer TRT-LLM-gen fused MoE (trtllm_*_moe): flashinfer_trtllm, flashinfer_trtllm_routed",
    package="flashinfer-python",
    claims=(
        Claim("moe", ("flashinfer_trtllm", "flashinfer_trtllm_routed"), "supported", SM10X,
              "MK3: the trtllm-gen MoE module is built for compute capability 10.x"),
        Claim("moe", ("flashinfer_trtllm", "flashinfer_trtllm_routed"), "unsupported", _ALL_BUT_SM100,
              "MK3: FlashInfer builds its trtllm-gen MoE module for compute capability 10.x only "
              "(\"currently only support Blackwell\")"),
        Claim("moe", ("flashinfer_trtllm", "flashinfer_trtllm_routed"), "unsupported", ROCM,
              "MK3: a CUDA module of FlashInfer (nvcc, compute capability 10.x)"),
    ),
    probe=_FLASHINFER_PROBE,
)

FLASHINFER_CUTLASS = KernelAdapter(
    name="moe-flashinfer-cutlass",
    family="FlashInfer CUTLASS fused MoE (cutlass_fused_moe): flashinfer_cutlass",
    package="flashinfer-python",
    claims=(
        Claim("moe", ("flashinfer_cutlass",), "supported", SM90 + SM10X + SM110 + SM12X,
              "MK4: CUTLASS fused-MoE modules for SM90, SM100/SM110, SM103 and SM120",
              quantizations=("unquantized", "modelopt_fp8")),
        Claim("moe", ("flashinfer_cutlass",), "supported", SM10X + SM110 + SM12X,
              "MK4: the SM100/SM110, SM103 and SM120 modules are built with FP4 (NVFP4 x NVFP4)",
              quantizations=("modelopt_fp4",)),
        Claim("moe", ("flashinfer_cutlass",), "unsupported", ROCM, "MK4: CUDA modules of FlashInfer (nvcc)"),
        # SM80/SM86 (no module), SM89 (a module without FP4) and FP4 on SM90: unknown
    ),
    probe=_FLASHINFER_PROBE,
)

FLASHINFER_MXFP4 = KernelAdapter(
    name="moe-flashinfer-mxfp4",
    family="FlashInfer MXFP4 MoE (trtllm-gen on SM100, CUTLASS on SM90/SM120): flashinfer_mxfp4",
    package="flashinfer-python",
    claims=(
        Claim("moe", ("flashinfer_mxfp4",), "supported", SM90 + SM10X + SM12X,
              "MK5: SGLang runs MXFP4 experts on FlashInfer's CUTLASS W4A16 (SM90), trtllm-gen (SM100) or "
              "CUTLASS MXFP8xMXFP4 (SM120) kernels", quantizations=_MXFP4),
        Claim("moe", ("flashinfer_mxfp4",), "unsupported", SM8X + SM110,
              "MK5: SGLang raises \"moe_runner_backend=flashinfer_mxfp4 requires SM90, SM100, or SM120.\" when "
              "the MXFP4 MoE layer is built", quantizations=_MXFP4),
        Claim("moe", ("flashinfer_mxfp4",), "unsupported", ROCM,
              "MK5: SGLang's flashinfer_mxfp4 path needs CUDA SM90, SM100 or SM120; MK3, MK4: FlashInfer's MoE "
              "modules are CUDA builds", quantizations=_MXFP4),
    ),
    probe=_FLASHINFER_PROBE,
)

FLASHINFER_CUTEDSL = KernelAdapter(
    name="moe-flashinfer-cutedsl",
    family="FlashInfer CuTe-DSL NVFP4 masked grouped GEMM MoE: flashinfer_cutedsl",
    package="flashinfer-python",
    claims=(
        Claim("moe", ("flashinfer_cutedsl",), "supported", SM10X,
              "MK6: the masked grouped GEMM has SM100/SM103 (Blackwell) kernels"),
        Claim("moe", ("flashinfer_cutedsl",), "unsupported", SM8X + SM90,
              "MK6: \"Masked grouped GEMM is only supported on SM100+ (Blackwell/Rubin)\""),
        Claim("moe", ("flashinfer_cutedsl",), "unsupported", SM110,
              "MK6: \"SM110 is not supported for cute-dsl backend.\""),
        Claim("moe", ("flashinfer_cutedsl",), "unsupported", ROCM, "MK6: CuTe-DSL kernels for NVIDIA SM100+ only"),
        # SM12x: the wrapper takes the SM100 branch for any major >= 10; whether it runs there is unknown
    ),
    probe=_FLASHINFER_PROBE,
)

SGL_CUTLASS = KernelAdapter(
    name="moe-cutlass",
    family="sgl-kernel's CUTLASS MoE (FP8 block-scale, MXFP8, NVFP4 grouped GEMMs): cutlass",
    package="sglang-kernel",
    claims=(
        Claim("moe", ("cutlass",), "supported", SM90 + SM10X + SM12X,
              "MK7: SGLang's cutlass FP8 MoE runs block-quantized FP8 on SM90, SM100 and SM120", quantizations=_FP8),
        Claim("moe", ("cutlass",), "unsupported", SM8X + SM110 + ROCM,
              "MK7: SGLang asserts \"cutlass_fp8 MoE requires SM90, SM100, or SM120 GPUs\" when the FP8 MoE "
              "layer is built", quantizations=_FP8),
        Claim("moe", ("cutlass",), "supported", SM10X,
              "MK7: the MXFP8 CUTLASS MoE asserts SM100", quantizations=("mxfp8",)),
        Claim("moe", ("cutlass",), "unsupported", SM8X + SM90 + SM110 + SM12X + ROCM,
              "MK7: SGLang asserts \"MXFP8 requires SM100\" in the CUTLASS MoE", quantizations=("mxfp8",)),
    ),
    probe=_SGL_KERNEL_PROBE,
)

MARLIN = KernelAdapter(
    name="moe-marlin",
    family="Marlin mixed-precision MoE (sgl-kernel moe_wna16_marlin_gemm): marlin",
    package="sglang-kernel",
    claims=(
        Claim("moe", ("marlin",), "supported", SM8X + SM90 + SM10X + SM12X,
              "MK8: Marlin's weight types (GPTQ uint4b8/uint8b128, AWQ uint4) need compute capability 8.0 or more",
              quantizations=("gptq", "gptq_marlin", "awq", "awq_marlin", "moe_wna16")),
        Claim("moe", ("marlin",), "supported", SM90 + SM10X + SM12X,
              "MK8: SGLang's MXFP4 Marlin MoE runs on SM90, SM100 and SM120", quantizations=_MXFP4),
        Claim("moe", ("marlin",), "unsupported", SM8X + SM110,
              "MK8: SGLang raises \"MXFP4 Marlin requires SM90+.\" (SM90, SM100 or SM120) when the layer is "
              "prepared", quantizations=_MXFP4),
    ),
    probe=_SGL_KERNEL_PROBE,
)

TRITON = KernelAdapter(
    name="moe-triton",
    family="SGLang's Triton fused MoE (JIT): triton",
    package="triton",
    claims=(
        Claim("moe", ("triton",), "supported", SM8X + SM90 + SM10X + SM12X + ROCM,
              "MK9: SGLang's fused_moe_triton, its default runner for unquantized experts on CUDA and ROCm",
              strength="medium", quantizations=("unquantized",)),
    ),
    probe=package_probe("triton", "triton"),
)

TRITON_KERNELS = KernelAdapter(
    name="moe-triton-kernels",
    family="OpenAI's triton_kernels (matmul_ogs) MoE: triton_kernel",
    package="triton-kernels",
    claims=(
        Claim("moe", ("triton_kernel",), "supported", SM90,
              "MK9: SGLang runs gpt-oss's MXFP4 experts on triton_kernels off SM100/SM12x when it is installed",
              strength="medium", quantizations=_MXFP4),
    ),
    probe=package_probe("triton-kernels", "triton_kernels"),
)

AITER = KernelAdapter(
    name="moe-aiter",
    family="AMD AITER fused MoE (ROCm): aiter",
    package="amd-aiter",
    claims=(
        Claim("moe", ("aiter",), "supported", ROCM, "MK10: AITER is AMD's ROCm operator library (fused MoE)"),
        Claim("moe", ("aiter",), "unsupported", CUDA, "MK10: AITER is AMD's ROCm operator library; no CUDA build"),
    ),
    probe=package_probe("amd-aiter", "aiter"),
)

HPC_OPS = KernelAdapter(
    name="moe-hpc-ops",
    family="Tencent HPC-Ops fused MoE: hpc_ops",
    package="hpc",
    claims=(
        Claim("moe", ("hpc_ops",), "supported", SM90, "MK11: HPC-Ops ships sm90a kernels"),
        Claim("moe", ("hpc_ops",), "unsupported", SM8X + SM10X + SM110 + SM12X + ROCM,
              "MK11: SGLang raises \"--moe-runner-backend hpc_ops requires an SM90 (Hopper) GPU (the HPC-Ops "
              "kernels ship sm90a only)\" when the runner is built"),
    ),
    probe=package_probe("hpc", "hpc"),
)

INTEL_XPU = KernelAdapter(
    name="moe-intel-xpu",
    family="Intel XPU fused MoE (sgl-kernel-xpu): intel_xpu",
    package="sgl-kernel-xpu",
    claims=(
        Claim("moe", ("intel_xpu",), "unsupported", CUDA + ROCM,
              "MK12: SGLang 0.5.23's MoE runner has no intel_xpu branch (\"Unsupported runner backend\"); Intel's "
              "XPU kernels are sgl-kernel-xpu SYCL builds for Intel GPUs", strength="medium"),
    ),
    probe=_xpu_probe,  # its import name (sgl_kernel) is the CUDA package's too
)

ADAPTERS = (DEEP_GEMM, FLASHINFER_TRTLLM, FLASHINFER_CUTLASS, FLASHINFER_MXFP4, FLASHINFER_CUTEDSL, SGL_CUTLASS,
            MARLIN, TRITON, TRITON_KERNELS, AITER, HPC_OPS, INTEL_XPU)
