"""The kernel adapters in force: the built-in ones plus third-party ones from the entry-point
group ``resolver.kernels`` (so a kernel package can ship its own adapter).

A third-party adapter that is malformed or whose probe crashes gives an AdapterError naming it;
the others still load.  Where several adapters claim the same (role, backend, platform), the
last one loaded wins and the explanation names it: built-ins load first, then entry points
sorted by name, so a kernel package's own (newer) claim overrides the built-in one.
"""
from __future__ import annotations

import importlib
import importlib.metadata
import threading
from dataclasses import dataclass

from .base import AdapterError, Claim, KernelAdapter, Probe, validate

__all__ = ["Registry", "registry", "reload_registry", "GROUP"]

GROUP = "resolver.kernels"
_BUILTIN = ("flashmla", "trtllm", "fa3", "flashinfer_sparse_mla", "dsa_portable")


@dataclass(frozen=True)
class Verdict:
    status: str  # supported | unsupported | unknown
    why: str  # the evidence, with the adapter that claims it

    def to_dict(self):
        return {"status": self.status, "why": self.why}


class Registry:
    def __init__(self, adapters: list[KernelAdapter], errors: list[AdapterError], probed: dict | None = None):
        self.adapters = adapters
        self.errors = errors
        #: adapter name -> Probe, when the local machine's packages count (--platform auto / --check-installed)
        self.probed = probed
        self._index: dict[tuple[str, str, str], tuple[Claim, KernelAdapter]] = {}
        for adapter in adapters:
            for claim in adapter.claims:
                for backend in claim.backends:
                    for platform in claim.platforms:
                        self._index[(claim.role, backend, platform)] = (claim, adapter)

    def verdict(self, role: str, backend: str | None, platform: str) -> Verdict:
        if backend is None:
            return Verdict("unknown", "no backend")
        hit = self._index.get((role, backend, platform))
        if hit is None:
            return Verdict("unknown", f"no adapter declares {backend} ({role}) on {platform}")
        claim, adapter = hit
        probe = (self.probed or {}).get(adapter.name)
        if claim.status == "supported" and isinstance(probe, Probe) and not probe.installed:
            return Verdict("unsupported", f"its package {adapter.package} is not installed here ({probe.detail}) "
                                          f"[adapter {adapter.name}, {adapter.source}; probed]")
        return Verdict(claim.status, f"{claim.evidence} [adapter {adapter.name}, {adapter.source}; {claim.strength}]")

    def checking_installed(self) -> "Registry":
        """The same claims, with this machine's probes counting (a missing package cannot run)."""
        return Registry(self.adapters, self.errors, self.probes())

    def probes(self) -> dict[str, Probe | AdapterError]:
        out: dict[str, Probe | AdapterError] = {}
        for adapter in self.adapters:
            try:
                out[adapter.name] = adapter.probe()
            except Exception as exc:  # noqa: BLE001 - a crashing probe is reported, not fatal
                out[adapter.name] = AdapterError(f"kernel adapter '{adapter.name}' ({adapter.source}): probe failed: {exc!r}")
        return out


def _load() -> Registry:
    adapters: list[KernelAdapter] = []
    errors: list[AdapterError] = []
    for module in _BUILTIN:
        adapters.append(validate(importlib.import_module(f"{__package__}.{module}").ADAPTER, "built-in"))
    for ep in sorted(importlib.metadata.entry_points(group=GROUP), key=lambda e: e.name):
        origin = f"entry point {ep.name} = {ep.value}"
        try:
            obj = ep.load()
            adapter = validate(obj, origin)
            adapters.append(KernelAdapter(adapter.name, adapter.family, adapter.package, adapter.claims, adapter.probe,
                                          origin))
        except AdapterError as exc:
            errors.append(exc)
        except Exception as exc:  # noqa: BLE001 - a broken third-party package must not stop the others
            errors.append(AdapterError(f"kernel adapter from {origin} failed to load: {exc!r}"))
    return Registry(adapters, errors)


_REGISTRY: Registry | None = None
_LOCK = threading.Lock()


def registry() -> Registry:
    global _REGISTRY
    with _LOCK:
        if _REGISTRY is None:
            _REGISTRY = _load()
        return _REGISTRY


def reload_registry() -> Registry:
    """Load the adapters again (after installing a kernel package, or in tests)."""
    global _REGISTRY
    with _LOCK:
        _REGISTRY = None
    return registry()
