"""Target platforms: names, aliases and the facts each one contributes.

The table is the contract's (docs/concepts.md).  ``major`` is what ``torch.cuda`` reports,
which is what SGLang 0.5.23's DSA passes read: ROCm devices report major 9 there.
Derived platform facts (``platform.is_hip``, ``platform.is_blackwell``, ...) are declared in
``rules/platform.yaml``, not here, so that they show up in explanations with a rule.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, replace
from typing import Any

from .errors import InputError

__all__ = [
    "ALIAS_GPU_MEMORY_GB",
    "ALL_PLATFORMS",
    "PLATFORMS",
    "PLATFORM_FACTS",
    "UNNAMED_PLATFORMS",
    "VARIABLE_PLATFORM_FACTS",
    "Platform",
    "find_platform",
    "platform_from_capability",
]


@dataclass(frozen=True)
class Platform:
    name: str
    vendor: str  # nvidia | amd
    major: int
    minor: int
    aliases: tuple[str, ...]
    description: str
    #: memory of one GPU: the platform's usual card, or the card an alias names (``h200``: 141 GB), or
    #: ``--gpu-memory-gb``; SGLang's memory defaults read it (rules/memory.yaml)
    gpu_memory_gb: float = 80
    #: GPUs in one node (``--gpus-per-node``; 8, an HGX board, by default).  SGLang 0.5.23's resolution
    #: does not read it (its device count is never asked); multi-node layouts do
    gpus_per_node: int = 8

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
            "platform.gpu_memory_gb": self.gpu_memory_gb,
            "platform.gpus_per_node": self.gpus_per_node,
        }

    def with_memory(self, gpu_memory_gb: Any) -> Platform:
        """The same platform with another GPU memory size (``--gpu-memory-gb``)."""
        if isinstance(gpu_memory_gb, bool) or not isinstance(gpu_memory_gb, (int, float)) \
                or not 1 <= gpu_memory_gb <= 100_000:
            raise InputError(f"--gpu-memory-gb expects a size in GB between 1 and 100000, got {gpu_memory_gb!r}")
        return replace(self, gpu_memory_gb=gpu_memory_gb)

    def with_gpus_per_node(self, gpus: Any) -> Platform:
        """The same platform in a node of another size (``--gpus-per-node``)."""
        if isinstance(gpus, bool) or not isinstance(gpus, int) or not 1 <= gpus <= 1024:
            raise InputError(f"--gpus-per-node expects a whole number of GPUs between 1 and 1024, got {gpus!r}")
        return replace(self, gpus_per_node=gpus)


# The memory of each platform's usual card, and of the cards its aliases name, in GB of HBM/GDDR per
# GPU as the vendors' product pages state it (nvidia.com/en-us/data-center/{a100,h100,h200,dgx-b200};
# amd.com/en/products/accelerators/instinct/mi300/mi300x.html, .../mi350/mi355x.html): SGLang's
# memory defaults read it.  The platform defaults are those of SGLang's CPU oracle (docs/parity.md).
PLATFORMS: tuple[Platform, ...] = (
    Platform("sm80", "nvidia", 8, 0, ("a100", "a800", "a30"), "Ampere (A100)", 80),
    Platform("sm86", "nvidia", 8, 6, ("a10", "a40", "rtx3090", "a6000"), "Ampere (consumer, A10/A40)", 48),
    Platform("sm89", "nvidia", 8, 9, ("l4", "l40", "l40s", "rtx4090", "rtx6000ada"), "Ada Lovelace", 48),
    Platform("sm90", "nvidia", 9, 0, ("h100", "h200", "h20", "h800", "gh200"), "Hopper", 80),
    Platform("sm100", "nvidia", 10, 0, ("b200", "gb200"), "Blackwell datacenter", 180),
    Platform("sm103", "nvidia", 10, 3, ("b300", "gb300"), "Blackwell Ultra", 270),
    Platform("sm120", "nvidia", 12, 0, ("rtx5090", "rtx-pro-6000"), "Blackwell workstation", 96),
    Platform("sm121", "nvidia", 12, 1, ("gb10", "dgx-spark"), "Blackwell (GB10)", 119),
    Platform("gfx942", "amd", 9, 4, ("mi300x", "mi300a", "mi325x"), "ROCm CDNA3", 192),
    Platform("gfx950", "amd", 9, 5, ("mi350x", "mi355x"), "ROCm CDNA4", 288),
)

#: aliases whose card has another memory size than its platform's usual one (GB per GPU)
ALIAS_GPU_MEMORY_GB: dict[str, float] = {
    "a30": 24, "a10": 24, "rtx3090": 24, "l4": 24, "rtx4090": 24, "h200": 141, "h20": 96, "gh200": 96,
    "gb200": 186, "b300": 288, "gb300": 288, "rtx5090": 32, "mi300a": 128, "mi325x": 256,
}

#: GPUs the contract does not name, reachable only as a capability (``--compute-capability 11.0``) or
#: by detection: SGLang 0.5.23's gates (is_blackwell covers major 11) misjudge them, so the kernel
#: adapters speak about them (docs/kernels.md; evidence S35)
UNNAMED_PLATFORMS: tuple[Platform, ...] = (
    Platform("sm110", "nvidia", 11, 0, (), "Blackwell (Jetson Thor); not a named platform: --compute-capability 11.0",
             128),
)
ALL_PLATFORMS = PLATFORMS + UNNAMED_PLATFORMS

#: Facts every platform contributes, with their meaning (the rule loader checks names against these).
PLATFORM_FACTS: dict[str, str] = {
    "platform.name": "the platform's name (sm90, gfx942, ...)",
    "platform.vendor": "nvidia or amd",
    "platform.major": "compute-capability major as torch reports it (ROCm reports 9)",
    "platform.minor": "compute-capability minor",
    "platform.capability": "major.minor as a number (8.9, 9.0, 10.3, ...)",
    "platform.gpu_memory_gb": "memory of one GPU in GB (the card an alias names, or --gpu-memory-gb)",
    "platform.gpus_per_node": "GPUs in one node (--gpus-per-node; 8 by default)",
}
#: platform facts a request may set to any value (not fixed by the platform's name): reasoning about
#: rules treats them as free, not as one value per platform (resolver/tools/lint.py)
VARIABLE_PLATFORM_FACTS = frozenset({"platform.gpu_memory_gb", "platform.gpus_per_node"})


def _index() -> dict[str, Platform]:
    out: dict[str, Platform] = {}
    for p in PLATFORMS:
        out[p.name] = p
        for a in p.aliases:
            out[a] = replace(p, gpu_memory_gb=ALIAS_GPU_MEMORY_GB[a]) if a in ALIAS_GPU_MEMORY_GB else p
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
