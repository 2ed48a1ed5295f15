"""The kernel adapters in force: the built-in ones plus third-party ones from the entry-point
group ``resolver.kernels`` (so a kernel package can ship its own adapter).

A third-party adapter that is malformed or whose probe crashes gives an AdapterError naming it;
the others still load.  Where several adapters claim the same (role, backend, platform), the
last one loaded wins and the explanation names it: built-ins load first, then entry points
sorted by name, so a kernel package's own (newer) claim overrides the built-in one.
"""
from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
import threading
from dataclasses import dataclass

from ..platforms import ALL_PLATFORMS
from .base import ROLE_FALLBACK, AdapterError, Claim, KernelAdapter, Probe, validate

__all__ = ["Registry", "registry", "reload_registry", "GROUP"]

GROUP = "resolver.kernels"
_BUILTIN = ("flashmla", "fa3", "fa4", "flashinfer", "trtllm", "flashinfer_sparse_mla", "tilelang", "triton", "aiter",
            "intel_xpu", "torch_native", "hpc_ops")
_PLATFORM = {p.name: p for p in ALL_PLATFORMS}


@dataclass(frozen=True)
class Verdict:
    status: str  # supported | unsupported | refused | unknown
    why: str  # the evidence, with the adapter that claims it

    def to_dict(self):
        return {"status": self.status, "why": self.why}


class Registry:
    def __init__(self, adapters: list[KernelAdapter], errors: list[AdapterError], probed: dict | None = None):
        self.adapters = adapters
        self.errors = errors
        #: adapter name -> Probe, when the local machine's packages count (--platform auto / --check-installed)
        self.probed = probed
        self._checking: Registry | None = None
        #: (role, backend, platform) -> the claims about it, in load order
        self._index: dict[tuple[str, str, str], list[tuple[Claim, KernelAdapter]]] = {}
        for adapter in adapters:
            for claim in adapter.claims:
                for backend in claim.backends:
                    for platform in claim.platforms:
                        self._index.setdefault((claim.role, backend, platform), []).append((claim, adapter))

    def claim(self, role: str, backend: str, platform: str, kv_dtype: str | None = None,
              mla: bool | None = None) -> tuple[Claim, KernelAdapter] | None:
        """The claim that decides: the narrowest one that applies, the last loaded among equals (so a
        kernel package's own adapter overrides a built-in one); a role without claims of its own
        reads its fallback role's (prefill, decode and draft attention run the attention kernels)."""
        for r in (role, ROLE_FALLBACK.get(role)):
            hits = [(i, c, a) for i, (c, a) in enumerate(self._index.get((r, backend, platform), ()))
                    if c.applies(kv_dtype, mla)]
            if hits:
                _, claim, adapter = max(hits, key=lambda h: (h[1].specificity, h[0]))
                return claim, adapter
        return None

    def verdict(self, role: str, backend: str | None, platform: str, kv_dtype: str | None = None,
                mla: bool | None = None) -> Verdict:
        if backend is None:
            return Verdict("unknown", "no backend")
        hit = self.claim(role, backend, platform, kv_dtype, mla)
        if hit is None:
            return Verdict("unknown", f"no adapter declares {backend} ({role}) on {platform}")
        claim, adapter = hit
        probe = (self.probed or {}).get(adapter.name)
        if claim.status == "supported" and isinstance(probe, Probe):
            missing = _not_runnable_here(adapter, probe, backend, platform)
            if missing:
                return Verdict("unsupported", f"{missing} [adapter {adapter.name}, {adapter.source}; probed]")
        scope = f" ({claim.scope()})" if claim.scope() else ""
        return Verdict(claim.status, f"{claim.evidence}{scope} [adapter {adapter.name}, {adapter.source}; {claim.strength}]")

    def served(self, role_prefix: str | None = None) -> set[str]:
        """The backends the adapters speak about: all of them, or those with a claim in a role
        starting with ``role_prefix`` ("attention" covers prefill, decode and draft too)."""
        if role_prefix is None:
            return {b for adapter in self.adapters for b in adapter.serves()}
        return {b for adapter in self.adapters for c in adapter.claims if c.role.startswith(role_prefix)
                for b in c.backends}

    def checking_installed(self) -> "Registry":
        """The same claims, with this machine's probes counting (a missing package cannot run).
        Probed once per registry: a batch of --platform auto requests does not re-read the
        installed libraries for every line (reload_registry() after installing one)."""
        if self._checking is None:
            self._checking = Registry(self.adapters, self.errors, self.probes())
        return self._checking

    def probes(self) -> dict[str, Probe | AdapterError]:
        out: dict[str, Probe | AdapterError] = {}
        for adapter in self.adapters:
            try:
                out[adapter.name] = adapter.probe()
            except Exception as exc:  # noqa: BLE001 - a crashing probe is reported, not fatal
                out[adapter.name] = AdapterError(f"kernel adapter '{adapter.name}' ({adapter.source}): probe failed: {exc!r}")
        return out


def _not_runnable_here(adapter: KernelAdapter, probe: Probe, backend: str, platform: str) -> str:
    """Why this machine's install cannot run ``backend`` on ``platform`` ("" if nothing says so)."""
    if not probe.installed:
        return f"its package {adapter.package} is not installed here ({probe.detail})"
    target = _PLATFORM.get(platform)
    if backend in adapter.compiled_backends and probe.archs is not None and target is not None \
            and target.vendor == "nvidia" and not _loadable(probe, target.major, target.minor):
        built = ", ".join(f"sm_{sm}" for sm in probe.archs) or "no GPU"
        return (f"the installed {adapter.package} {probe.version or ''} has {built} code only and no PTX it could "
                f"run ({probe.detail})").replace("  ", " ")
    return ""


def _loadable(probe: Probe, major: int, minor: int) -> bool:
    """Can the driver load this build on capability major.minor?  SASS needs the same major and a
    minor not above the device's (an "a" build needs the exact one, which the SM number alone does
    not tell, so this errs towards loadable); PTX needs a target at or below the device's
    (kernels.md 0.5)."""
    device = major * 10 + minor
    return any(sm // 10 == major and sm % 10 <= minor for sm in probe.archs) or any(sm <= device for sm in probe.ptx)


def _builtin_adapters() -> list[KernelAdapter]:
    return [validate(importlib.import_module(f"{__package__}.{module}").ADAPTER, "built-in") for module in _BUILTIN]


def _load() -> Registry:
    adapters = _builtin_adapters()
    errors: list[AdapterError] = []
    for ep in sorted(importlib.metadata.entry_points(group=GROUP), key=lambda e: e.name):
        origin = f"entry point {ep.name} = {ep.value}"
        try:
            obj = ep.load()
            adapter = validate(obj, origin)
            adapters.append(dataclasses.replace(adapter, source=origin))
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
