"""The kernel packages the built-in adapters name, and how pip spells a package: facts about packages
that the adapters (resolver/adapters/) and the request's ``installed.<package>`` facts (resolver/installed.py)
both read, so neither imports the other for them."""
from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["INSTALLED_FACTS", "PACKAGES", "Package", "distribution", "norm"]


@dataclass(frozen=True)
class Package:
    name: str  # the distribution, as pip names it: the canonical spelling
    fact: str  # the input fact rules may read (a rule condition needs an identifier, not a pip name)
    aliases: tuple[str, ...]  # other spellings accepted: short and import names
    meaning: str


#: every package a built-in kernel adapter names (tests/unit/test_adapters.py checks none is missing), and those
#: SGLang's launch resolution itself asks for;
#: sources: the distributions SGLang 0.5.23's METADATA pins and their import names (docs/kernels.md, "Installed or not")
PACKAGES: tuple[Package, ...] = (
    Package("flashinfer-python", "installed.flashinfer", ("flashinfer",),
            "FlashInfer: flashinfer, cutedsl_mla, trtllm_mha, trtllm_mla, DSA trtllm and flashinfer_sparse_mla "
            "(SGLang has_flashinfer)"),
    Package("sgl-flash-mla", "installed.flash_mla", ("flash-mla", "flashmla"),
            "FlashMLA: flashmla and the DSA flashmla_* kernels"),
    Package("sglang-kernel", "installed.sglang_kernel", ("sgl-kernel",), "sglang-kernel (sgl_kernel): FA3 (fa3)"),
    Package("nvidia-cutlass-dsl", "installed.cutlass_dsl", ("cutlass-dsl", "cutlass"),
            "CuTe DSL, which FA4 (fa4) is written in"),
    Package("tilelang", "installed.tilelang", (), "TileLang: the DSA tilelang kernels"),
    Package("triton", "installed.triton", (), "Triton: triton, DSA triton and triton_sparse_mla"),
    Package("amd-aiter", "installed.aiter", ("aiter",), "AMD AITER: aiter"),
    Package("sgl-kernel-xpu", "installed.sgl_kernel_xpu", ("sglang-kernel-xpu",), "Intel XPU kernels: intel_xpu"),
    Package("torch", "installed.torch", ("pytorch",), "PyTorch: torch_native (SDPA) and flex_attention"),
    Package("hpc", "installed.hpc", ("hpc-ops",), "Tencent HPC-Ops: hpc_ops"),
    Package("torch-npu", "installed.torch_npu", (), "Ascend NPU support for PyTorch: ascend"),
    Package("sglang-kernel-cpu", "installed.sglang_kernel_cpu", ("sgl-kernel-cpu",),
            "sgl-kernel's CPU build: intel_amx"),
    Package("wave-lang", "installed.wave_lang", (), "the Wave kernel language: wave"),
    # the MoE runners' own packages (resolver/adapters/moe.py); SGLang 0.5.23 depends on sgl-deep-gemm
    Package("sgl-deep-gemm", "installed.deep_gemm", ("deep-gemm", "deepgemm"), "DeepGEMM: the deep_gemm MoE runner"),
    Package("triton-kernels", "installed.triton_kernels", (), "OpenAI's triton_kernels: the triton_kernel MoE runner"),
    # not a kernel: SGLang 0.5.23 asks for mooncake.engine at launch (model_path_hook.py validate_transfer_engine)
    Package("mooncake-transfer-engine", "installed.mooncake", ("mooncake",),
            "Mooncake's TransferEngine (mooncake.engine): the remote weight loader's seed service over it"),
)
#: fact name -> (package, assumed when not told, meaning); the loader's known input facts
INSTALLED_FACTS: dict[str, tuple[str, bool, str]] = {p.fact: (p.name, True, p.meaning) for p in PACKAGES}


def norm(name: str) -> str:
    """pip's name comparison (PEP 503): ``Flash_MLA`` and ``flash-mla`` are one name."""
    return re.sub(r"[-_.]+", "-", name.strip()).lower()


#: every accepted spelling of a built-in package (normalised) -> its distribution name
BUILTIN_SPELLINGS: dict[str, str] = {norm(s): p.name for p in PACKAGES for s in (p.name, *p.aliases)}


def distribution(name: str) -> str:
    """The canonical spelling of the package an adapter names: a built-in package's distribution name
    (``flashinfer`` -> ``flashinfer-python``), else the name as pip normalises it."""
    return BUILTIN_SPELLINGS.get(norm(name), norm(name))
