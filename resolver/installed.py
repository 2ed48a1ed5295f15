"""Which kernel packages are present on the target: input facts ``installed.<package>``.

For a named target platform nothing can be probed, so each package has an assumed value
(SGLang's own unit tests assume FlashInfer is importable on CUDA); a request overrides it
with ``"installed": {"flashinfer": false}`` or ``--installed flashinfer=no``.  Probing the
local machine arrives with the kernel adapters.
"""
from __future__ import annotations

from typing import Any

from .errors import InputError

__all__ = ["INSTALLED_FACTS", "installed_facts"]

#: fact name -> (package, assumed when not told, meaning)
INSTALLED_FACTS: dict[str, tuple[str, bool, str]] = {
    "installed.flashinfer": ("flashinfer", True, "FlashInfer is importable on the target (SGLang has_flashinfer)"),
}
_BY_PACKAGE = {pkg: name for name, (pkg, _, _) in INSTALLED_FACTS.items()}


def installed_facts(installed: dict[str, Any] | None, probed: dict[str, tuple[bool, str]] | None = None
                    ) -> dict[str, tuple[bool, str]]:
    """``{fact: (value, origin)}`` for every known package: what the request says, else what was
    probed on this machine (``--platform auto`` / ``--check-installed``), else the assumption."""
    installed = installed or {}
    probed = probed or {}
    if not isinstance(installed, dict):
        raise InputError("'installed' must map package names to true or false")
    for pkg, value in installed.items():
        if pkg not in _BY_PACKAGE:
            raise InputError(f"unknown package '{pkg}' in installed; known: {', '.join(sorted(_BY_PACKAGE))}")
        if not isinstance(value, bool):
            raise InputError(f"installed.{pkg} must be true or false, got {value!r}")
    out = {}
    for name, (pkg, assumed, _) in INSTALLED_FACTS.items():
        if pkg in installed:
            out[name] = (installed[pkg], f"given: installed {pkg}={'yes' if installed[pkg] else 'no'}")
        elif pkg in probed:
            out[name] = probed[pkg]
        else:
            out[name] = (assumed, f"assumed for a named target ({pkg} {'present' if assumed else 'absent'})")
    return out
