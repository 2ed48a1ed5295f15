"""``--platform auto``: find the local GPU.

Probes, in order, each answering a list of GPUs or nothing: NVML (the optional
``nvidia-ml-py`` package), ``nvidia-smi``, an already-installed torch (never installed or
imported for this unless present), then ROCm's ``amd-smi`` and ``rocminfo``.  The first probe
that sees GPUs decides.  Several GPU kinds in one machine, or none at all, are input errors
that say how to name the target instead.  Nothing here imports a CUDA library unless the user
already has it; every probe is injectable, so tests fake them and need no GPU.
"""
from __future__ import annotations

import importlib
import importlib.util
import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from typing import Callable

from .errors import InputError
from .platforms import PLATFORMS, Platform, platform_from_capability

__all__ = ["Detection", "detect_platform", "PROBES"]


@dataclass(frozen=True)
class Detection:
    platform: Platform
    how: str  # e.g. "nvidia-smi: NVIDIA H100 80GB HBM3, compute capability 9.0 (8 GPUs)"


# A probe returns [(device name, platform)] or None when it cannot look (tool or package absent).
Probe = Callable[[], "list[tuple[str, Platform]] | None"]


def _run(argv: list[str]) -> str | None:
    if shutil.which(argv[0]) is None:
        return None
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


def _nvidia(capability: str, name: str) -> tuple[str, Platform]:
    try:
        return name, platform_from_capability(capability, "nvidia")
    except InputError:
        raise InputError(f"found {name} (compute capability {capability}), which is not a known target; "
                         "name one with --platform (see 'resolve platforms')") from None


def _amd(arch: str, name: str) -> tuple[str, Platform]:
    base = arch.split(":")[0].lower()
    for p in PLATFORMS:
        if p.vendor == "amd" and p.name == base:
            return name, p
    raise InputError(f"found {name} ({base}), which is not a known target; name one with --platform")


def probe_nvml() -> list[tuple[str, Platform]] | None:
    if importlib.util.find_spec("pynvml") is None:
        return None
    pynvml = importlib.import_module("pynvml")
    try:
        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - no driver: this probe cannot look
        return None
    try:
        out = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(handle)
            name = pynvml.nvmlDeviceGetName(handle)
            out.append(_nvidia(f"{major}.{minor}", name.decode() if isinstance(name, bytes) else name))
        return out
    except InputError:
        raise
    except Exception:  # noqa: BLE001 - an NVML error: let the next probe look
        return None
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass


def probe_nvidia_smi() -> list[tuple[str, Platform]] | None:
    text = _run(["nvidia-smi", "--query-gpu=name,compute_cap", "--format=csv,noheader"])
    if text is None:
        return None
    out = []
    for line in text.splitlines():
        if "," in line:
            name, cap = (part.strip() for part in line.rsplit(",", 1))
            if not re.fullmatch(r"\d+\.\d+", cap):  # e.g. [N/A] under MIG: this probe cannot tell
                return None
            out.append(_nvidia(cap, name))
    return out


def probe_torch() -> list[tuple[str, Platform]] | None:
    if importlib.util.find_spec("torch") is None:  # only a torch the user already has
        return None
    torch = importlib.import_module("torch")
    try:
        if not torch.cuda.is_available():
            return []
        out = []
        for i in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(i)
            if getattr(torch.version, "hip", None):
                out.append(_amd(getattr(props, "gcnArchName", ""), props.name))
            else:
                out.append(_nvidia(f"{props.major}.{props.minor}", props.name))
        return out
    except Exception:  # noqa: BLE001 - a broken CUDA install: this probe cannot look
        return None


def probe_amd_smi() -> list[tuple[str, Platform]] | None:
    text = _run(["amd-smi", "static", "--asic", "--json"])
    if text is None:
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return None
    out = []
    for gpu in data if isinstance(data, list) else data.get("gpu_data", []):
        asic = gpu.get("asic", {}) if isinstance(gpu, dict) else {}
        arch = asic.get("target_graphics_version") or asic.get("gfx_version") or ""
        if arch:
            out.append(_amd(str(arch), asic.get("market_name", "AMD GPU")))
    return out


def probe_rocminfo() -> list[tuple[str, Platform]] | None:
    text = _run(["rocminfo"])
    if text is None:
        return None
    return [_amd(arch, f"AMD {arch}") for arch in re.findall(r"^\s*Name:\s*(gfx9\d\w*)\s*$", text, re.M)]


#: (label, probe) in the order they are tried
PROBES: list[tuple[str, Probe]] = [
    ("NVML", probe_nvml),
    ("nvidia-smi", probe_nvidia_smi),
    ("torch", probe_torch),
    ("amd-smi", probe_amd_smi),
    ("rocminfo", probe_rocminfo),
]


def detect_platform(probes: list[tuple[str, Probe]] | None = None) -> Detection:
    """The local GPU's platform, or InputError saying how to name one."""
    tried = []
    for label, probe in probes if probes is not None else PROBES:
        found = probe()
        if found is None:
            tried.append(f"{label} (not available)")
            continue
        if not found:
            tried.append(f"{label} (no GPU)")
            continue
        kinds = sorted({p.name for _, p in found})
        if len(kinds) > 1:
            listing = ", ".join(f"{name} ({p.name})" for name, p in found)
            raise InputError(f"{label} found several GPU kinds: {listing}; name the one to resolve for with "
                             f"--platform ({' or '.join(kinds)})")
        name, platform = found[0]
        count = f" ({len(found)} GPUs)" if len(found) > 1 else ""
        return Detection(platform, f"detected by {label}: {name}, {platform.name} (capability {platform.capability:g}){count}")
    raise InputError("no GPU found on this machine (tried " + ", ".join(tried) + "); name the target GPU with "
                     "--platform NAME, e.g. --platform h100 (see 'resolve platforms' for every name)")
