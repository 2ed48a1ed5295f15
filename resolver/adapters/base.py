"""What a kernel adapter declares, and the checks made when it is registered.

An adapter is data: the backend names a kernel family serves, in which role, and per target
platform whether that kernel runs there, each claim with its evidence and strength, optionally
narrowed to some KV-cache dtypes or to MLA / non-MLA models; its limits (KV dtypes, page sizes,
head dims) as reported facts; and a probe of whether the family's package is installed, its
version and, for ahead-of-time builds, the GPU architectures it was compiled for.  A claim in the
``moe`` role (the MoE runner) may instead be narrowed to some weight quantizations (``quantizations``).

Statuses (docs/kernels.md, "What an adapter declares"): "supported" (Y), "unsupported" (N: no kernel,
an assertion, a crash), "refused" (Nr: SGLang 0.5.23's own resolution refuses or rewrites it, so
a rule in rules/ already says so; the adapter records the kernel-side reason), "delegated" (the
backend runs no kernel of its own but those other options name, whose verdicts are their own: ``dsa``
runs the DSA prefill and decode backends).  A combination no claim mentions is *unknown*: neither
refused nor preferred.  Evidence ids are those of docs/evidence.md.  Adapters only report; what follows from a report is
decided by rules (``rules/kernels.yaml``).
"""
from __future__ import annotations

import dataclasses
import glob
import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, get_args

from ..errors import ResolverError
from ..platforms import ALL_PLATFORMS

__all__ = ["AdapterError", "Claim", "KernelAdapter", "Limit", "Probe", "ROLES", "STATUSES", "Status", "UNQUANTIZED",
           "VERDICTS", "package_probe"]

#: role -> the option whose value names the backend in that role
ROLES = {
    "attention": "attention_backend",
    "attention_prefill": "prefill_attention_backend",
    "attention_decode": "decode_attention_backend",
    "draft": "speculative_draft_attention_backend",
    "dsa_prefill": "dsa_prefill_backend",
    "dsa_decode": "dsa_decode_backend",
    "moe": "moe_runner_backend",
}
#: a role with no claim of its own reads the claims of this one (the same kernel serves both)
ROLE_FALLBACK = {"attention_prefill": "attention", "attention_decode": "attention", "draft": "attention"}
#: what a claim says of its backends (checked when an adapter loads: a plugin's claims are data)
Status = Literal["supported", "unsupported", "refused", "delegated"]
STATUSES: tuple[Status, ...] = get_args(Status)
#: every value of a kernel.<option> fact: a claim's status, or unknown (no adapter speaks) and none (every
#: default candidate was skipped); resolver/resolution.py decides it
VERDICTS = (*STATUSES, "unknown", "none")
STRENGTHS = ("strong", "medium", "weak")
#: KV-cache dtypes a claim or limit may name (the contract's --kv-cache-dtype values)
KV_DTYPES = ("auto", "bf16", "bfloat16", "fp8_e4m3", "fp8_e5m2", "mxfp8", "nvfp4", "fp4_mx_block16")
LIMIT_KINDS = ("kv_dtypes", "page_sizes", "head_dims")
#: how a claim's ``quantizations`` names unquantized weights (the model's quantization is unset)
UNQUANTIZED = "unquantized"
_PLATFORM_NAMES = {p.name for p in ALL_PLATFORMS}


class AdapterError(ResolverError):
    """A kernel adapter is malformed or its probe failed; names the adapter."""


@dataclass(frozen=True)
class Claim:
    """``backends`` in ``role`` is ``status`` on ``platforms``, per ``evidence``; only for the KV
    dtypes in ``kv_dtypes``, for MLA (``mla=True``) or other (``False``) models, and for the weight
    quantizations in ``quantizations`` (SGLang's method names, the model's as resolved, or
    ``"unquantized"``), when given.  A narrower claim (more qualifiers) wins over a broader one for
    the same backend and platform."""

    role: str
    backends: tuple[str, ...]
    status: Status
    platforms: tuple[str, ...]
    evidence: str
    strength: str = "strong"
    kv_dtypes: tuple[str, ...] | None = None
    mla: bool | None = None
    quantizations: tuple[str, ...] | None = None

    def applies(self, kv_dtype: str | None, mla: bool | None, quantization: str | None = None) -> bool:
        if self.kv_dtypes is not None and kv_dtype not in self.kv_dtypes:
            return False
        if self.quantizations is not None and (quantization or UNQUANTIZED) not in self.quantizations:
            return False
        return self.mla is None or self.mla == mla

    @property
    def specificity(self) -> int:
        return (self.kv_dtypes is not None) + (self.mla is not None) + (self.quantizations is not None)

    def scope(self) -> str:
        parts = []
        if self.kv_dtypes is not None:
            parts.append("KV " + "/".join(self.kv_dtypes))
        if self.mla is not None:
            parts.append("MLA models" if self.mla else "non-MLA models")
        if self.quantizations is not None:
            parts.append("weights " + "/".join(self.quantizations))
        return ", ".join(parts)


@dataclass(frozen=True)
class Limit:
    """What ``backends`` accept of one kind (``kv_dtypes``, ``page_sizes``, ``head_dims``), reported
    for operators and checked against the rules by the tests; ``note`` says what the values mean."""

    backends: tuple[str, ...]
    kind: str
    values: tuple
    evidence: str
    note: str = ""


@dataclass(frozen=True)
class Probe:
    installed: bool
    version: str | None = None
    detail: str = ""
    #: SM numbers (90, 100, ...) the installed binary has GPU code for; None when not read (JIT, or no binary)
    archs: tuple[int, ...] | None = None
    ptx: tuple[int, ...] = ()  # SM numbers of its PTX (the driver JIT-compiles it for the same or newer GPUs)


@dataclass(frozen=True)
class KernelAdapter:
    name: str
    family: str  # one line: what the kernel family is
    package: str | None  # the distribution that ships it (None: part of SGLang itself)
    claims: tuple[Claim, ...]
    probe: Callable[[], Probe] = field(default=lambda: Probe(False, None, "no probe"), compare=False)
    source: str = "built-in"  # or the entry point that provided it
    limits: tuple[Limit, ...] = ()
    #: backends whose GPU code is in the binary the probe reads (its compiled archs bound where they run)
    compiled_backends: tuple[str, ...] = ()

    def serves(self) -> dict[str, tuple[str, ...]]:
        """backend -> the roles it has claims in (a backend with limits only has none: unknown everywhere)"""
        out: dict[str, set[str]] = {b: set() for lim in self.limits for b in lim.backends}
        for c in self.claims:
            for b in c.backends:
                out.setdefault(b, set()).add(c.role)
        return {b: tuple(sorted(r)) for b, r in sorted(out.items())}


def validate(adapter: object, origin: str) -> KernelAdapter:
    """Check an adapter object; raise AdapterError naming it (and ``origin``) on any problem."""
    if not isinstance(adapter, KernelAdapter):
        raise AdapterError(f"kernel adapter from {origin} is a {type(adapter).__name__}, not a KernelAdapter")
    # the name is printed in every listing and warning: one line of text, or it could forge others
    # ASCII: a look-alike letter (a Cyrillic 'і' in 'trіton') would pass for a built-in's name
    if (not isinstance(adapter.name, str) or not adapter.name.strip() or not adapter.name.isprintable()
            or not adapter.name.isascii()):
        raise AdapterError(f"kernel adapter from {origin}: its name must be non-empty printable ASCII text, "
                           f"got {ascii(adapter.name)}")
    where = f"kernel adapter '{adapter.name}' ({origin})"
    if not callable(adapter.probe):
        raise AdapterError(f"{where}: its probe is a {type(adapter.probe).__name__}, not a function")
    if not adapter.claims:
        raise AdapterError(f"{where} declares no claims")
    for c in adapter.claims:
        if not isinstance(c, Claim):
            raise AdapterError(f"{where}: {c!r} is not a Claim")
        if c.role not in ROLES:
            raise AdapterError(f"{where}: unknown role '{c.role}' (known: {', '.join(ROLES)})")
        if c.status not in STATUSES:
            raise AdapterError(f"{where}: status must be one of {STATUSES}, got '{c.status}'")
        if c.strength not in STRENGTHS:
            raise AdapterError(f"{where}: strength must be one of {STRENGTHS}, got '{c.strength}'")
        unknown = sorted(set(c.platforms) - _PLATFORM_NAMES)
        if unknown:
            raise AdapterError(f"{where}: unknown platform(s) {unknown}")
        if not c.backends or not c.evidence:
            raise AdapterError(f"{where}: every claim names its backends and its evidence")
        if c.kv_dtypes is not None and (not c.kv_dtypes or set(c.kv_dtypes) - set(KV_DTYPES)):
            raise AdapterError(f"{where}: unknown KV dtype(s) in {c.kv_dtypes} (known: {', '.join(KV_DTYPES)})")
        if c.mla not in (None, True, False):
            raise AdapterError(f"{where}: mla must be true, false or absent, got {c.mla!r}")
        if c.quantizations is not None and (
                not isinstance(c.quantizations, tuple) or not c.quantizations
                or not all(isinstance(q, str) and q.strip() and q.isprintable() for q in c.quantizations)):
            raise AdapterError(f"{where}: quantizations must be a non-empty tuple of method names "
                               f"(or \"{UNQUANTIZED}\"), got {c.quantizations!r}")
    for lim in adapter.limits:
        if not isinstance(lim, Limit) or lim.kind not in LIMIT_KINDS or not lim.backends or not lim.evidence:
            raise AdapterError(f"{where}: {lim!r} is not a Limit of a known kind ({', '.join(LIMIT_KINDS)}) "
                               "with backends and evidence")
        if lim.kind == "kv_dtypes" and set(lim.values) - set(KV_DTYPES):
            raise AdapterError(f"{where}: unknown KV dtype(s) in limit {lim.values}")
        if lim.kind == "page_sizes" and not all(isinstance(v, int) and v > 0 for v in lim.values):
            raise AdapterError(f"{where}: page sizes must be positive integers, got {lim.values}")
    return adapter


def package_probe(distribution: str, module: str, binary: str | None = None) -> Callable[[], Probe]:
    """A probe that finds a package without importing it (importing would load CUDA libraries).

    ``binary``, a glob under the package's directory (e.g. ``_C_legacy*.so``), names the
    ahead-of-time library whose compiled GPU architectures are read from its file."""

    def probe() -> Probe:
        from importlib import metadata  # ~20 ms to import: only when a probe runs

        spec = importlib.util.find_spec(module)  # a top-level name: finds it without importing it
        if spec is None:
            return Probe(False, None, f"module {module} not found")
        try:
            version = metadata.version(distribution)
        except metadata.PackageNotFoundError:
            version = None
        if binary is None:
            return Probe(True, version, f"module {module} found")
        return _with_gpu_code(Probe(True, version, f"module {module} found"), spec, binary)

    return probe


def _with_gpu_code(probe: Probe, spec, binary: str) -> Probe:
    from .fatbin import FatbinError, read_gpu_code  # pyelftools only when a binary is probed

    files = sorted(f for d in (spec.submodule_search_locations or ()) for f in glob.glob(os.path.join(d, binary)))
    if not files:
        return dataclasses.replace(probe, detail=f"{probe.detail}; no {binary} in it")
    try:
        code = read_gpu_code(files[0])
    except FatbinError as exc:
        return dataclasses.replace(probe, detail=f"{probe.detail}; compiled archs unread: {exc}")
    name = os.path.basename(files[0])
    if code is None:
        return dataclasses.replace(probe, detail=f"{probe.detail}; {name} has no GPU code section")
    return dataclasses.replace(probe, detail=f"{probe.detail}; {name}: {code.describe()}", archs=code.sass,
                               ptx=code.ptx)
