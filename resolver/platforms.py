"""Target platforms: names, aliases and the facts each one contributes.

The table is the contract's (docs/concepts.md).  ``major`` is what ``torch.cuda`` reports,
which is what SGLang 0.5.23's DSA passes read: ROCm devices report major 9 there.
Derived platform facts (``platform.is_hip``, ``platform.is_blackwell``, ...) are declared in
``rules/platform.yaml``, not here, so that they show up in explanations with a rule.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from .errors import InputError

__all__ = ["Platform", "PLATFORMS", "UNNAMED_PLATFORMS", "ALL_PLATFORMS", "PLATFORM_FACTS", "find_platform",
           "platform_from_capability"]


@dataclass(frozen=True)
class Platform:
    name: str
    vendor: str  # nvidia | amd
    major: int
    minor: int
    aliases: tuple[str, ...]
    description: str

    @property
    def capability(self) -> float:
        return float(f"{self.major}.{self.minor}")

    def facts(self) -> dict[str, Any]:
        return {
            "platform.name": self.name,
            "platform.vendor": self.vendor,
            "platform.major": self.major,
            "platform.minor": self.minor,
            "platform.capability": self.capability,
        }


PLATFORMS: tuple[Platform, ...] = (
    Platform("sm80", "nvidia", 8, 0, ("a100", "a800", "a30"), "Ampere (A100)"),
    Platform("sm86", "nvidia", 8, 6, ("a10", "a40", "rtx3090", "a6000"), "Ampere (consumer, A10/A40)"),
    Platform("sm89", "nvidia", 8, 9, ("l4", "l40", "l40s", "rtx4090", "rtx6000ada"), "Ada Lovelace"),
    Platform("sm90", "nvidia", 9, 0, ("h100", "h200", "h20", "h800", "gh200"), "Hopper"),
    Platform("sm100", "nvidia", 10, 0, ("b200", "gb200"), "Blackwell datacenter"),
    Platform("sm103", "nvidia", 10, 3, ("b300", "gb300"), "Blackwell Ultra"),
    Platform("sm120", "nvidia", 12, 0, ("rtx5090", "rtx-pro-6000"), "Blackwell workstation"),
    Platform("sm121", "nvidia", 12, 1, ("gb10", "dgx-spark"), "Blackwell (GB10)"),
    Platform("gfx942", "amd", 9, 4, ("mi300x", "mi300a", "mi325x"), "ROCm CDNA3"),
    Platform("gfx950", "amd", 9, 5, ("mi350x", "mi355x"), "ROCm CDNA4"),
)

#: GPUs the contract does not name, reachable only as a capability (``--compute-capability 11.0``) or
#: by detection: SGLang 0.5.23's gates (is_blackwell covers major 11) misjudge them, so the kernel
#: adapters speak about them (shared/reference/kernels.md 0.5)
UNNAMED_PLATFORMS: tuple[Platform, ...] = (
    Platform("sm110", "nvidia", 11, 0, (), "Blackwell (Jetson Thor); not a named platform: --compute-capability 11.0"),
)
ALL_PLATFORMS = PLATFORMS + UNNAMED_PLATFORMS

#: Facts every platform contributes, with their meaning (the rule loader checks names against these).
PLATFORM_FACTS: dict[str, str] = {
    "platform.name": "the platform's name (sm90, gfx942, ...)",
    "platform.vendor": "nvidia or amd",
    "platform.major": "compute-capability major as torch reports it (ROCm reports 9)",
    "platform.minor": "compute-capability minor",
    "platform.capability": "major.minor as a number (8.9, 9.0, 10.3, ...)",
}


def _index() -> dict[str, Platform]:
    out: dict[str, Platform] = {}
    for p in PLATFORMS:
        out[p.name] = p
        for a in p.aliases:
            out[a] = p
    return out


_BY_NAME = _index()


def find_platform(name: str) -> Platform:
    """Look a platform up by name or alias (case-insensitive)."""
    key = name.strip().lower()
    if key in _BY_NAME:
        return _BY_NAME[key]
    close = difflib.get_close_matches(key, list(_BY_NAME), n=1)
    hint = f" Did you mean '{close[0]}'?" if close else ""
    raise InputError(f"unknown platform '{name}'.{hint} Known platforms: {_known()}")


def platform_from_capability(capability: str, vendor: str = "nvidia") -> Platform:
    """The platform for a spelled-out ``--compute-capability 9.0 --vendor nvidia``."""
    try:
        major_s, _, minor_s = capability.strip().partition(".")
        major, minor = int(major_s), int(minor_s or 0)
    except ValueError:
        raise InputError(f"--compute-capability expects MAJOR.MINOR (e.g. 9.0), got '{capability}'") from None
    for p in ALL_PLATFORMS:
        if p.vendor == vendor and (p.major, p.minor) == (major, minor):
            return p
    raise InputError(f"no known {vendor} platform has capability {major}.{minor}. Known platforms: {_known()}")


def _known() -> str:
    return "; ".join(f"{p.name} ({', '.join(p.aliases)})" for p in PLATFORMS)
