"""What a kernel adapter declares, and the checks made when it is registered.

An adapter is data: the backend names a kernel family serves, in which role, and per target
platform whether that kernel runs there ("supported" / "unsupported"), each claim with its
evidence and strength; plus a probe of whether the family's package is installed.  A platform
an adapter does not mention is *unknown*: neither refused nor preferred.  Adapters only
report; what follows from a report is decided by rules (``rules/kernels.yaml``).
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
from dataclasses import dataclass, field
from typing import Callable

from ..errors import ResolverError
from ..platforms import PLATFORMS

__all__ = ["AdapterError", "Claim", "KernelAdapter", "Probe", "ROLES", "STATUSES", "package_probe"]

#: role -> the option whose value names the backend in that role
ROLES = {
    "attention": "attention_backend",
    "attention_prefill": "prefill_attention_backend",
    "attention_decode": "decode_attention_backend",
    "dsa_prefill": "dsa_prefill_backend",
    "dsa_decode": "dsa_decode_backend",
}
STATUSES = ("supported", "unsupported")
STRENGTHS = ("strong", "medium", "weak")
_PLATFORM_NAMES = {p.name for p in PLATFORMS}


class AdapterError(ResolverError):
    """A kernel adapter is malformed or its probe failed; names the adapter."""


@dataclass(frozen=True)
class Claim:
    """``backends`` in ``role`` is ``status`` on ``platforms``, per ``evidence``."""

    role: str
    backends: tuple[str, ...]
    status: str
    platforms: tuple[str, ...]
    evidence: str
    strength: str = "strong"


@dataclass(frozen=True)
class Probe:
    installed: bool
    version: str | None = None
    detail: str = ""


@dataclass(frozen=True)
class KernelAdapter:
    name: str
    family: str  # one line: what the kernel family is
    package: str | None  # the distribution that ships it (None: part of SGLang itself)
    claims: tuple[Claim, ...]
    probe: Callable[[], Probe] = field(default=lambda: Probe(False, None, "no probe"), compare=False)
    source: str = "built-in"  # or the entry point that provided it

    def serves(self) -> dict[str, tuple[str, ...]]:
        out: dict[str, set[str]] = {}
        for c in self.claims:
            for b in c.backends:
                out.setdefault(b, set()).add(c.role)
        return {b: tuple(sorted(r)) for b, r in sorted(out.items())}


def validate(adapter: object, origin: str) -> KernelAdapter:
    """Check an adapter object; raise AdapterError naming it (and ``origin``) on any problem."""
    if not isinstance(adapter, KernelAdapter):
        raise AdapterError(f"kernel adapter from {origin} is a {type(adapter).__name__}, not a KernelAdapter")
    where = f"kernel adapter '{adapter.name}' ({origin})"
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
    return adapter


def package_probe(distribution: str, module: str) -> Callable[[], Probe]:
    """A probe that finds a package without importing it (importing would load CUDA libraries)."""

    def probe() -> Probe:
        if importlib.util.find_spec(module) is None:
            return Probe(False, None, f"module {module} not found")
        try:
            version = importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            version = None
        return Probe(True, version, f"module {module} found")

    return probe
