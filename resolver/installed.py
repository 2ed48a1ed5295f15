"""Which kernel packages are present on the target: input facts ``installed.<package>``.

Every package a kernel adapter names is known here (``PACKAGES``), under its distribution name (the
canonical spelling: ``flashinfer-python``) and its short or import names (``flashinfer``); spellings
are compared the way pip compares names (case, and runs of ``-``, ``_``, ``.``, do not count), so
``flash_mla`` is ``flash-mla``.  A package of a third-party adapter (entry point ``resolver.kernels``)
is known under its own distribution name.

For a named target platform nothing can be probed, so each package is assumed present (SGLang's own
unit tests assume FlashInfer is importable on CUDA); a request overrides that with
``"installed": {"flashinfer": false}`` or ``--installed flashinfer=no``, and ``--platform auto`` /
``--check-installed`` use this machine's probes.  What absence means is not decided here: the kernel
verdicts treat every kernel of an absent package as unable to run (``absent_packages``).
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

from .errors import InputError
from .provenance import Origin

__all__ = ["INSTALLED_FACTS", "PACKAGES", "Package", "absent_packages", "canonical_package", "installed_facts"]


@dataclass(frozen=True)
class Package:
    name: str  # the distribution, as pip names it: the canonical spelling
    fact: str  # the input fact rules may read (a rule condition needs an identifier, not a pip name)
    aliases: tuple[str, ...]  # other spellings accepted: short and import names
    meaning: str


#: every package a built-in kernel adapter names (tests/unit/test_adapters.py checks none is missing);
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
)
#: fact name -> (package, assumed when not told, meaning); the loader's known input facts
INSTALLED_FACTS: dict[str, tuple[str, bool, str]] = {p.fact: (p.name, True, p.meaning) for p in PACKAGES}

#: names people type for kernels that are not packages of their own (a "did you mean" would mislead)
_NOT_PACKAGES = {
    "flash-attn": "SGLang 0.5.23's fa3 kernels ship in sglang-kernel (sgl_kernel.flash_attn), and fa4 is SGLang's "
                  "own copy built on nvidia-cutlass-dsl; the flash-attn distribution runs neither",
    "fa3": "fa3 is a backend; its kernels ship in sglang-kernel",
    "fa4": "fa4 is a backend; SGLang runs its own copy, built on nvidia-cutlass-dsl",
}


def _norm(name: str) -> str:
    """pip's name comparison (PEP 503): ``Flash_MLA`` and ``flash-mla`` are one name."""
    return re.sub(r"[-_.]+", "-", name.strip()).lower()


_SPELLINGS: list = [None, {}]  # [the adapter registry they were built from, its spellings]


def _spellings() -> dict[str, str]:
    """normalised spelling -> canonical package, for the built-in packages and third-party adapters' ones
    (built once per adapter registry: every kernel verdict of a resolution asks; callers only read it)."""
    # imported here, not at import time: the adapters import this module
    from .adapters import registry

    current = registry()
    if _SPELLINGS[0] is not current:
        out = {_norm(s): p.name for p in PACKAGES for s in (p.name, *p.aliases)}
        for adapter in current.adapters:
            if adapter.package:
                out.setdefault(_norm(adapter.package), _norm(adapter.package))
        _SPELLINGS[:] = [current, out]
    return _SPELLINGS[1]


def canonical_package(name: str) -> str | None:
    """The distribution ``name`` spells (``flashinfer`` -> ``flashinfer-python``), or None if no adapter names it."""
    return _spellings().get(_norm(name)) if isinstance(name, str) else None


def _fact_of(package: str) -> str:
    known = next((p.fact for p in PACKAGES if p.name == package), None)
    return known or "installed." + re.sub(r"[^0-9a-z]+", "_", package)


def installed_facts(installed: dict[str, Any] | None, probed: dict[str, tuple[bool, Origin]] | None = None
                    ) -> dict[str, tuple[bool, Origin]]:
    """``{fact: (value, origin)}`` for every known package: what the request says, else what was
    probed on this machine (``--platform auto`` / ``--check-installed``), else the assumption.
    ``installed`` and ``probed`` may use any accepted spelling; an unknown name is an InputError."""
    installed = installed or {}
    if not isinstance(installed, dict):
        raise InputError("'installed' must map package names to true or false")
    spellings = _spellings()
    given: dict[str, tuple[bool, Origin]] = {}
    for name, value in installed.items():
        package = spellings.get(_norm(name)) if isinstance(name, str) else None
        if package is None:
            raise InputError(f"installed: unknown kernel package '{name}'.{_hint(str(name), spellings)}")
        if not isinstance(value, bool):
            raise InputError(f"installed.{name} must be true or false, got {value!r}")
        if package in given and given[package][0] != value:
            raise InputError(f"installed: '{name}' and another spelling of {package} disagree")
        # the origin is also the reason a verdict gives for an absent package: it says what the user typed
        given[package] = (value, Origin("installed", "given", f"--installed {name}={'yes' if value else 'no'}"))
    found = {spellings[_norm(k)]: v for k, v in (probed or {}).items() if _norm(k) in spellings}
    out = {}
    for package in sorted(set(spellings.values())):
        fact = _fact_of(package)
        if package in given:
            out[fact] = given[package]
        elif package in found:
            out[fact] = found[package]
        else:
            short = next((p.fact.split(".", 1)[1] for p in PACKAGES if p.name == package), package)
            out[fact] = (True, Origin("installed", "assumed", f"assumed for a named target ({short} present)"))
    return out


def absent_packages(installed: dict[str, tuple[bool, Origin]]) -> dict[str, str]:
    """canonical package -> why it is absent (its fact's origin), for the packages ``installed`` (facts
    as :func:`installed_facts` gives them) says are not on the target."""
    by_fact = {_fact_of(p): p for p in set(_spellings().values())}
    return {by_fact[f]: origin.where for f, (value, origin) in installed.items() if value is False and f in by_fact}


def _hint(name: str, spellings: dict[str, str]) -> str:
    known = " Known packages: " + ", ".join(sorted(set(spellings.values()))) + "."
    why = _NOT_PACKAGES.get(_norm(name))
    if why:
        return f" {why}.{known}"
    close = difflib.get_close_matches(_norm(name), list(spellings), n=1, cutoff=0.6)
    return (f" Did you mean '{close[0]}'?" if close else "") + known
