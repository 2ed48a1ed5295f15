"""Which kernel packages are present on the target: input facts ``installed.<package>``.

Every package a kernel adapter names is known here (``PACKAGES``, resolver/packages.py), under its
distribution name (the canonical spelling: ``flashinfer-python``) and its short or import names
(``flashinfer``); spellings are compared the way pip compares names (case, and runs of ``-``, ``_``,
``.``, do not count), so ``flash_mla`` is ``flash-mla``.  A package of a third-party adapter (entry
point ``resolver.kernels``) is known under its own distribution name.

For a named target platform nothing can be probed, so each package is assumed present (SGLang's own
unit tests assume FlashInfer is importable on CUDA); a request overrides that with
``"installed": {"flashinfer": false}`` or ``--installed flashinfer=no``, and ``--platform auto`` /
``--check-installed`` use this machine's probes.  What absence means is not decided here: the kernel
verdicts treat every kernel of an absent package as unable to run (``absent_packages``).
"""
from __future__ import annotations

import difflib
import re
from typing import Any

from .errors import InputError
from .packages import BUILTIN_SPELLINGS, INSTALLED_FACTS, PACKAGES, Package, norm
from .provenance import Origin

__all__ = ["INSTALLED_FACTS", "PACKAGES", "Package", "absent_packages", "canonical_package", "installed_facts"]  # the
# package facts (resolver/packages.py) are handed on: this module is where a request's packages are read


#: names people type for kernels that are not packages of their own (a "did you mean" would mislead)
_NOT_PACKAGES = {
    "flash-attn": "SGLang 0.5.23's fa3 kernels ship in sglang-kernel (sgl_kernel.flash_attn), and fa4 is SGLang's "
                  "own copy built on nvidia-cutlass-dsl; the flash-attn distribution runs neither",
    "fa3": "fa3 is a backend; its kernels ship in sglang-kernel",
    "fa4": "fa4 is a backend; SGLang runs its own copy, built on nvidia-cutlass-dsl",
}


_SPELLINGS: list = [None, {}]  # [the adapter registry they were built from, its spellings]


def _spellings() -> dict[str, str]:
    """normalised spelling -> canonical package, for the built-in packages and third-party adapters' ones
    (built once per adapter registry: every kernel verdict of a resolution asks; callers only read it)."""
    # imported here, not at import time: the adapters import this module
    from .adapters import registry

    current = registry()
    if _SPELLINGS[0] is not current:
        out = dict(BUILTIN_SPELLINGS)
        for adapter in current.adapters:
            if adapter.package:
                out.setdefault(norm(adapter.package), norm(adapter.package))
        _SPELLINGS[:] = [current, out]
    return _SPELLINGS[1]


def canonical_package(name: str) -> str | None:
    """The distribution ``name`` spells (``flashinfer`` -> ``flashinfer-python``), or None if no adapter names it."""
    return _spellings().get(norm(name)) if isinstance(name, str) else None


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
        package = spellings.get(norm(name)) if isinstance(name, str) else None
        if package is None:
            raise InputError(f"installed: unknown kernel package '{name}'.{_hint(str(name), spellings)}")
        if not isinstance(value, bool):
            raise InputError(f"installed.{name} must be true or false, got {value!r}")
        if package in given and given[package][0] != value:
            raise InputError(f"installed: '{name}' and another spelling of {package} disagree")
        # the origin is also the reason a verdict gives for an absent package: it says what the user typed
        given[package] = (value, Origin("installed", "given", f"--installed {name}={'yes' if value else 'no'}"))
    found = {spellings[norm(k)]: v for k, v in (probed or {}).items() if norm(k) in spellings}
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
    why = _NOT_PACKAGES.get(norm(name))
    if why:
        return f" {why}.{known}"
    close = difflib.get_close_matches(norm(name), list(spellings), n=1, cutoff=0.6)
    return (f" Did you mean '{close[0]}'?" if close else "") + known
