"""Attention backends of other device families: ``ascend`` (Huawei Ascend NPU), ``intel_amx`` (Intel
CPUs) and ``wave`` (AMD GPUs).  SGLang 0.5.23 offers them on every platform; no contract platform
(NVIDIA CUDA, AMD ROCm) is one they run on, except that ``wave`` on ROCm is left unknown.
The kernel evidence of docs/evidence.md does not cover them: the evidence is SGLang's own source (paths
under sgl-project/sglang, python/sglang/srt/) and, for Wave, its authors.  One family per adapter,
each with its own package, so ``--installed`` can name each.
"""
import importlib.metadata

from ._platforms import ALL, CUDA
from .base import Claim, KernelAdapter, Probe, package_probe

_ASCEND = ("layers/attention/ascend_backend.py imports torch_npu (Huawei Ascend's PyTorch extension) when it is "
           "loaded and computes attention with torch.ops.npu kernels on NPU tensors; the attention registry builds it "
           "for --attention-backend ascend, and SGLang picks it itself only on NPU devices (S41: an out-of-tree "
           "platform's own default)")
_AMX = ("layers/attention/intel_amx_backend.py calls torch.ops.sgl_kernel.decode_attention_cpu and "
        "extend_attention_cpu, CPU kernels compiled only into sgl-kernel's CPU build (sgl-kernel/pyproject_cpu.toml: "
        "distribution sglang-kernel-cpu, sources csrc/cpu); SGLang picks intel_amx itself only on CPU devices "
        "(S41)")
_WAVE = ("layers/attention/wave_backend.py and wave_ops/ run kernels written in the Wave DSL (wave_lang / "
         "iree.turbine, with AMD MFMA matrix types such as F32_16x16x16_F16), which its authors describe as "
         "\"Targeting GPU (AMDGPU only currently)\" (I. Butygin, \"Wave programming language\", LLVM Developers' "
         "Meeting 2025-04, llvm.org/devmtg/2025-04/slides/technical_talk/butygin_tk_wave.pdf)")


def _cpu_build() -> Probe:
    # its import name (sgl_kernel) is the CUDA package's too, so only the distribution can tell
    try:
        return Probe(True, importlib.metadata.version("sglang-kernel-cpu"), "distribution sglang-kernel-cpu found")
    except importlib.metadata.PackageNotFoundError:
        return Probe(False, None, "no sglang-kernel-cpu distribution")


ADAPTERS = (
    KernelAdapter(
        name="ascend",
        family="Huawei Ascend NPU attention (torch_npu)",
        package="torch-npu",
        # prefill, decode and draft read the attention claim (--speculative-draft-attention-backend offers ascend)
        claims=(Claim("attention", ("ascend",), "unsupported", ALL, _ASCEND),),
        probe=package_probe("torch-npu", "torch_npu"),
    ),
    KernelAdapter(
        name="intel-amx",
        family="Intel AMX CPU attention (sgl-kernel CPU build)",
        package="sglang-kernel-cpu",
        claims=(Claim("attention", ("intel_amx",), "unsupported", ALL, _AMX),),
        probe=_cpu_build,
    ),
    KernelAdapter(
        name="wave",
        family="Wave DSL attention kernels (AMD GPUs)",
        package="wave-lang",
        # ROCm: Wave targets AMD GPUs, but nothing shows SGLang 0.5.23's wave backend running on gfx942/gfx950:
        # unknown there, so no claim
        claims=(Claim("attention", ("wave",), "unsupported", CUDA, _WAVE, "medium"),),
        probe=package_probe("wave-lang", "wave_lang"),
    ),
)
