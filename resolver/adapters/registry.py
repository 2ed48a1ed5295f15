"""The kernel adapters in force: the built-in ones plus third-party ones from the entry-point
group ``resolver.kernels`` (so a kernel package can ship its own adapter).

A third-party adapter (a *plugin*) that is malformed or fails to load gives an AdapterError naming
it; the others still load.  A plugin is imported first in a child process with a hard deadline
(PLUGIN_TIMEOUT; resolver/child.py): one whose import hangs, exits or raises anything, even a
BaseException of its own, is reported there and never imported here.  Its probe runs in such a
child too, so a probe stuck in C code holding the interpreter lock is killed at the deadline.

A plugin cannot take the name of a built-in adapter or of another plugin: it would silently
replace that adapter's probe (probes are looked up by name), so it is not loaded and the error
names both.  Where several adapters claim the same (role, backend,
platform), the last one loaded wins and the verdict's reason names it: built-ins load first, then
entry points sorted by name, so a kernel package's own (newer) claim overrides the built-in one.

Probes are the adapters' Python code run on this machine, under one time budget (PROBE_TIMEOUT),
once per registry: the built-in ones (a file lookup each) in a daemon thread, each plugin's in a
child process of its own.  A probe that raises, returns something other
than a Probe, or does not answer in time is an AdapterError in ``probes()``; where probes count,
that adapter's "supported" claims become "unknown" (not verified here), its other claims stand.
Every problem with a plugin, and every failed probe where probes count, is a warning of every
resolution it could change (``Registry.warnings()``), prefixed by WARNING_PLUGIN or WARNING_PROBE.
"""
from __future__ import annotations

import contextlib
import dataclasses
import importlib
import importlib.metadata
import io
import json
import os
import re
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..child import ChildFailed, capture
from ..notices import Notice
from ..packages import distribution
from ..platforms import ALL_PLATFORMS
from ..terminal import Terminated
from .base import ROLE_FALLBACK, AdapterError, Claim, KernelAdapter, Probe, validate
from .plugin_child import BOOT, GROUP

__all__ = ["GROUP", "PROBE_TIMEOUT", "WARNING_PLUGIN", "WARNING_PROBE", "Registry", "registry", "reload_registry"]

#: seconds all probes together may take (they run in parallel); a probe still running then is abandoned
PROBE_TIMEOUT = 5.0
#: seconds a plugin's import may take in its child process (a cold start of a kernel package's Python)
PLUGIN_TIMEOUT = 20.0
#: the prefixes that start the text of the warnings about adapters (their codes: plugin, probe)
WARNING_PLUGIN = "plugin:"  # an entry-point adapter failed to load, clashed, or its probe failed
WARNING_PROBE = "probe:"  # a built-in adapter's probe failed
_BUILTIN = ("flashmla", "fa3", "fa4", "flashinfer", "trtllm", "flashinfer_sparse_mla", "tilelang", "triton", "aiter",
            "intel_xpu", "torch_native", "hpc_ops", "other_devices", "dsa_dispatch", "moe")
_PLATFORM = {p.name: p for p in ALL_PLATFORMS}


@dataclass(frozen=True)
class Verdict:
    status: str  # supported | unsupported | refused | delegated | unknown
    why: str  # the evidence, with the adapter that claims it
    adapter: str | None = None  # the adapter behind it (None: no adapter speaks about this backend here)

    def to_dict(self):
        return {"status": self.status, "why": self.why, "adapter": self.adapter}


class Registry:
    def __init__(self, adapters: list[KernelAdapter], errors: list[AdapterError], probed: dict | None = None,
                 entry_points: Mapping[str, str] | None = None, import_seconds: Mapping[str, float] | None = None):
        self.adapters = adapters
        self.errors = errors
        #: plugin adapter name -> its entry point's name (its probe runs in a child that loads it by that name)
        self.entry_points = dict(entry_points or {})
        #: plugin adapter name -> how long its import took in its child: a probe's child imports it again
        #: before the probe runs, so the probe's deadline starts that much later
        self.import_seconds = dict(import_seconds or {})
        #: adapter name -> Probe, when the local machine's packages count (--platform auto / --check-installed)
        self.probed = probed
        self._checking: Registry | None = None
        self._probes: dict[str, Probe | AdapterError] | None = probed
        # re-entrant: checking_installed() probes while holding it; one probe run however many threads ask
        self._lock = threading.RLock()
        #: (role, backend, platform) -> the claims about it, in load order
        self._index: dict[tuple[str, str, str], list[tuple[Claim, KernelAdapter]]] = {}
        #: backend -> the adapters that serve it anywhere (whose package it needs where no claim speaks)
        self._serving: dict[str, list[KernelAdapter]] = {}
        for adapter in adapters:
            for claim in adapter.claims:
                for backend in claim.backends:
                    for platform in claim.platforms:
                        self._index.setdefault((claim.role, backend, platform), []).append((claim, adapter))
            for backend in adapter.serves():
                self._serving.setdefault(backend, []).append(adapter)

    def claim(self, role: str, backend: str, platform: str, kv_dtype: str | None = None,
              mla: bool | None = None, quantization: str | None = None) -> tuple[Claim, KernelAdapter] | None:
        """The claim that decides: the narrowest one that applies, the last loaded among equals (so a
        kernel package's own adapter overrides a built-in one); a role without claims of its own
        reads its fallback role's (prefill, decode and draft attention run the attention kernels)."""
        for r in (role, ROLE_FALLBACK.get(role)):
            if r is None:
                continue
            hits = [(i, c, a) for i, (c, a) in enumerate(self._index.get((r, backend, platform), ()))
                    if c.applies(kv_dtype, mla, quantization)]
            if hits:
                _, claim, adapter = max(hits, key=lambda h: (h[1].specificity, h[0]))
                return claim, adapter
        return None

    def verdict(self, role: str, backend: str | None, platform: str, kv_dtype: str | None = None,
                mla: bool | None = None, absent: Mapping[str, str] | None = None,
                quantization: str | None = None) -> Verdict:
        """What the adapters say about ``backend`` in ``role`` on ``platform`` (for the model's weight
        ``quantization``, None when unquantized, where a claim is narrowed by it).  ``absent`` maps the
        (canonical) packages the target lacks to why that is known (``--installed X=no``): a kernel of
        an absent package cannot run, whatever its claim says, except that a refusal stays a refusal."""
        if backend is None:
            return Verdict("unknown", "no backend")
        absent = absent or {}
        hit = self.claim(role, backend, platform, kv_dtype, mla, quantization)
        if hit is None:
            # no claim here, but a kernel whose every serving package is absent cannot run anywhere
            serving = self._serving.get(backend, [])
            gone = [a for a in serving if _package(a) in absent]
            if serving and len(gone) == len(serving):
                return _absent(gone[-1], absent)
            return Verdict("unknown", f"no adapter declares {backend} ({role}) on {platform}")
        claim, adapter = hit
        name = adapter.name
        probe = (self.probed or {}).get(adapter.name)
        scope = f" ({claim.scope()})" if claim.scope() else ""
        if claim.status == "supported" and isinstance(probe, Probe):
            missing = _not_runnable_here(adapter, probe, backend, platform)
            if missing:
                return Verdict("unsupported", f"{missing} [adapter {name}, {adapter.source}; probed]", name)
        if claim.status == "supported" and _package(adapter) in absent:
            return _absent(adapter, absent)
        if claim.status == "supported" and isinstance(probe, AdapterError):
            # the install could not be checked: neither "runs here" (the package may be missing) nor
            # "cannot run" (a broken or slow probe must not manufacture a conflict); the warning says why
            return Verdict("unknown", f"{claim.evidence}{scope}, not verified on this machine: its probe gave "
                                      f"no answer [adapter {name}, {adapter.source}; {claim.strength}]", name)
        return Verdict(claim.status,
                       f"{claim.evidence}{scope} [adapter {name}, {adapter.source}; {claim.strength}]", name)

    def served(self, role_prefix: str | None = None) -> set[str]:
        """The backends the adapters speak about: all of them, or those with a claim in a role
        starting with ``role_prefix`` ("attention" covers prefill, decode and draft too)."""
        if role_prefix is None:
            return {b for adapter in self.adapters for b in adapter.serves()}
        return {b for adapter in self.adapters for c in adapter.claims if c.role.startswith(role_prefix)
                for b in c.backends}

    def checking_installed(self) -> Registry:
        """The same claims, with this machine's probes counting (a missing package cannot run).
        Probed once per registry: a batch of --platform auto requests does not re-read the
        installed libraries for every line (reload_registry() after installing one)."""
        with self._lock:
            if self._checking is None:
                self._checking = Registry(self.adapters, self.errors, self.probes(), self.entry_points,
                                          self.import_seconds)
            return self._checking

    def probes(self) -> dict[str, Probe | AdapterError]:
        """adapter name -> what its probe found on this machine, or the AdapterError saying why it
        has no answer; run once per registry (a copy: callers may change theirs)."""
        with self._lock:
            if self._probes is None:
                self._probes = _run_probes(self.adapters, PROBE_TIMEOUT, self.entry_points, self.import_seconds)
            return dict(self._probes)

    def warnings(self) -> tuple[Notice, ...]:
        """What a result of this registry cannot be trusted for: every plugin that did not load (its
        claims could have changed any verdict) and, where probes count, every probe without an answer.
        Each has the code ``plugin`` or ``probe``; its text starts with WARNING_PLUGIN or WARNING_PROBE."""
        out = [Notice("plugin", f"{WARNING_PLUGIN} {e}; its claims are not used") for e in self.errors]
        for adapter in self.adapters:
            probe = (self.probed or {}).get(adapter.name)
            if isinstance(probe, AdapterError):
                code, prefix = ("probe", WARNING_PROBE) if adapter.source == "built-in" else ("plugin", WARNING_PLUGIN)
                out.append(Notice(code, f"{prefix} {probe}; its kernels are treated as unknown (not verified on this "
                                        "machine)"))
        return tuple(out)


def _run_probes(adapters: list[KernelAdapter], timeout: float, entry_points: Mapping[str, str],
                import_seconds: Mapping[str, float] | None = None) -> dict[str, Probe | AdapterError]:
    """Run the probes and wait at most ``timeout`` seconds for all of them.  The built-in probes (a file
    lookup each, our own code) share one daemon thread, which costs less to start than one each on a
    busy machine; every plugin's probe runs in a child process of its own (``entry_points`` names the
    entry point to load there), killed at the deadline.  A probe that has not answered by then is
    reported.  A plugin's child first imports the plugin again: its deadline is ``timeout`` after the
    import time measured when the plugin was loaded (``import_seconds``)."""
    answers: dict[str, Probe | AdapterError] = {}
    # each plugin's own deadline: the probe's budget after its import (a kernel package can take seconds)
    budgets = {a.name: timeout + (import_seconds or {}).get(a.name, 0.0) for a in adapters}

    def run(group: list[KernelAdapter]) -> None:
        for adapter in group:
            where = f"kernel adapter '{adapter.name}' ({adapter.source})"
            try:
                got = adapter.probe()
            except BaseException as exc:  # noqa: BLE001 - even SystemExit: in a thread it would vanish unreported
                answers[adapter.name] = AdapterError(f"{where}: probe failed: {exc!r}")
                continue
            answers[adapter.name] = got if isinstance(got, Probe) else AdapterError(
                f"{where}: probe returned a {type(got).__name__}, not a Probe")

    def run_plugin(adapter: KernelAdapter) -> None:
        where = f"kernel adapter '{adapter.name}' ({adapter.source})"
        answer = _in_child("probe", entry_points[adapter.name], budgets[adapter.name])
        if isinstance(answer, ChildFailed):
            if not answer.timed_out:  # a probe past the deadline is reported as not answering, below
                answers[adapter.name] = AdapterError(f"{where}: probe failed: its process {answer.reason}")
        elif "probe" in answer:
            answers[adapter.name] = _probe_of(answer["probe"]) or AdapterError(
                f"{where}: probe returned a Probe that does not read back")
        elif "not_a_probe" in answer:
            answers[adapter.name] = AdapterError(f"{where}: probe returned a {answer['not_a_probe']}, not a Probe")
        else:
            answers[adapter.name] = AdapterError(
                f"{where}: probe failed: {answer.get('probe_error') or answer.get('error')}")

    # an adapter built in this process (the API, a test) has no entry point a child could load: its own thread
    built_in = [a for a in adapters if a.source == "built-in"]
    threads = [threading.Thread(target=run, args=(built_in,), name="probe built-ins", daemon=True)] if built_in else []
    threads += [threading.Thread(target=run_plugin, args=(a,), name=f"probe {a.name}", daemon=True)
                if a.name in entry_points else
                threading.Thread(target=run, args=([a],), name=f"probe {a.name}", daemon=True)
                for a in adapters if a.source != "built-in"]
    for t in threads:
        t.start()
    start = time.monotonic()
    for t in threads:
        t.join(max(0.0, start + max(budgets.values(), default=timeout) - time.monotonic()))
    out: dict[str, Probe | AdapterError] = {}
    for a in adapters:
        # a late answer may still arrive in ``answers``; it is ignored, so the result is fixed here
        out[a.name] = answers.get(a.name) or AdapterError(
            f"kernel adapter '{a.name}' ({a.source}): probe did not answer within {timeout:g}s")
    return out


def _package(adapter: KernelAdapter) -> str | None:
    """The adapter's package under its canonical spelling (the one ``absent`` is keyed by)."""
    return distribution(adapter.package) if adapter.package else None


def _absent(adapter: KernelAdapter, absent: Mapping[str, str]) -> Verdict:
    package = _package(adapter)
    return Verdict("unsupported", f"package {package} is not installed on the target ({absent[package or '']}) "
                                  f"[adapter {adapter.name}, {adapter.source}]", adapter.name)


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
    (CUDA's binary compatibility rules; docs/kernels.md)."""
    device = major * 10 + minor
    return (any(sm // 10 == major and sm % 10 <= minor for sm in probe.archs or ())
            or any(sm <= device for sm in probe.ptx or ()))


def _builtin_adapters() -> list[KernelAdapter]:
    """One adapter per module (ADAPTER), or several kernel families of one kind in one module (ADAPTERS)."""
    modules = [importlib.import_module(f"{__package__}.{name}") for name in _BUILTIN]
    return [validate(adapter, "built-in") for m in modules for adapter in getattr(m, "ADAPTERS", None) or (m.ADAPTER,)]


def _name_key(name: str) -> str:
    """Names that read the same (case, "-" / "_" / "." / spaces, which are dropped) count as one: a
    look-alike of a built-in's name (``flash_infer``, `` flashinfer.``) would confuse every listing
    and explanation that names the adapter.  (Names are ASCII: base.validate refuses others.)"""
    return re.sub(r"[\s_.-]+", "", name.casefold())


def _in_child(mode: str, name: str, timeout: float) -> dict[str, Any] | ChildFailed:
    """What the child process says of entry point ``name`` (resolver/adapters/plugin_child.py)."""
    out = capture([sys.executable, "-I", "-c", BOOT, json.dumps(sys.path), str(timeout), mode, name], timeout)
    if isinstance(out, ChildFailed):
        return out
    for line in out.splitlines():
        try:
            answer = json.loads(line)
        except ValueError:
            continue
        if isinstance(answer, dict) and answer.get("name") == name:
            return answer
    return ChildFailed("gave no answer")


def _probe_of(data: Any) -> Probe | None:
    """A Probe from the child's JSON, if it has a Probe's shape (the child runs a plugin's code)."""
    try:
        installed, version, detail = data["installed"], data["version"], data["detail"]
        archs, ptx = data["archs"], data["ptx"]
        if not (isinstance(installed, bool) and isinstance(version, (str, type(None))) and isinstance(detail, str)
                and (archs is None or all(isinstance(a, int) for a in archs)) and all(isinstance(p, int) for p in ptx)):
            return None
        return Probe(installed, version, detail, None if archs is None else tuple(archs), tuple(ptx))
    except (KeyError, TypeError):
        return None


def _plugins_that_load(names: list[str]) -> tuple[dict[str, str | None], dict[str, float]]:
    """entry point name -> None if it imports cleanly in a child process within PLUGIN_TIMEOUT, else why not;
    and how long each child took (all children at once: one slow plugin does not delay the others')."""
    verdicts: dict[str, str | None] = {}
    seconds: dict[str, float] = {}

    def check(name: str) -> None:
        start = time.monotonic()
        answer = _in_child("load", name, PLUGIN_TIMEOUT)
        seconds[name] = time.monotonic() - start
        if isinstance(answer, ChildFailed):
            verdicts[name] = (f"its import did not finish within {PLUGIN_TIMEOUT:g}s" if answer.timed_out
                              else f"its import {answer.reason}")
        else:
            verdicts[name] = answer.get("error")

    threads = [threading.Thread(target=check, args=(n,), name=f"load {n}", daemon=True) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()  # each child is killed at its own deadline: every thread ends
    return verdicts, seconds


def _load() -> Registry:
    adapters = _builtin_adapters()
    errors: list[AdapterError] = []
    plugins: dict[str, str] = {}
    #: name key -> who holds that name (for the error naming both sides of a clash)
    taken = {_name_key(a.name): f"the built-in adapter '{a.name}'" for a in adapters}
    eps = sorted(importlib.metadata.entry_points(group=GROUP), key=lambda e: e.name)
    loads, seconds = _plugins_that_load([ep.name for ep in eps]) if eps else ({}, {})
    import_seconds: dict[str, float] = {}
    for ep in eps:
        origin = f"entry point {ep.name} = {ep.value}"
        if loads.get(ep.name) is not None:  # never imported here: it hung, exited or raised in its child
            errors.append(AdapterError(f"kernel adapter from {origin} failed to load: {loads[ep.name]}"))
            continue
        try:
            with _quiet():
                obj = ep.load()
        except (KeyboardInterrupt, Terminated):
            raise  # the operator's interrupt, landing during the import: not the plugin's failure
        except BaseException as exc:  # noqa: BLE001 - a broken third-party package must not stop the others
            errors.append(AdapterError(f"kernel adapter from {origin} failed to load: {exc!r}"))
            continue
        try:
            adapter = validate(obj, origin)
        except AdapterError as exc:
            errors.append(exc)
            continue
        holder = taken.get(_name_key(adapter.name))
        if holder is not None:
            # loading it would replace the holder's probe (probes are looked up by name) with no trace
            errors.append(AdapterError(
                f"kernel adapter '{adapter.name}' from {origin} has the name of {holder} "
                "(a plugin cannot replace another adapter: it needs a name of its own)"))
            continue
        taken[_name_key(adapter.name)] = f"the adapter '{adapter.name}' from {origin}"
        adapters.append(dataclasses.replace(adapter, source=origin))
        plugins[adapter.name] = ep.name
        import_seconds[adapter.name] = seconds.get(ep.name, 0.0)
    return Registry(adapters, errors, entry_points=plugins, import_seconds=import_seconds)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Standard output silenced while a plugin is imported here: what it prints (Python or C) would land in the
    answer (a JSON document, or --format env lines a shell evaluates)."""
    sys.stdout.flush()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        with contextlib.redirect_stdout(io.StringIO()):
            yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


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
