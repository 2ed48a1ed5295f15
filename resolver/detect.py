"""``--platform auto``: find the local GPU.

Probes, in order, each answering a list of GPUs or nothing: NVML (the optional
``nvidia-ml-py`` package), ``nvidia-smi``, an already-installed torch (never installed for this
unless present), then ROCm's ``amd-smi`` and ``rocminfo``.  The first probe that sees GPUs
decides.  Several GPU kinds in one machine, or none at all, are input errors that say how to
name the target instead.  Every probe is injectable, so tests fake them and need no GPU.

Probes are bounded: a GPU driver can hang and a tool can misbehave, and neither may hang or
crash the resolver.  Tools run with a timeout and an output cap; the Python libraries (pynvml,
torch) are imported only in a child interpreter under the same bounds, never in this process.
A probe that times out, fails or answers nonsense is skipped with a reason, and the next one looks.
"""
from __future__ import annotations

import importlib.util
import re
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .child import ChildFailed, capture
from .errors import InputError
from .platforms import PLATFORMS, Platform, platform_from_capability
from .safe_io import parse_json

__all__ = ["PROBES", "Detection", "Unavailable", "detect_platform"]

#: seconds a tool (nvidia-smi, amd-smi, rocminfo) or the NVML probe may take
PROBE_TIMEOUT = 10.0
#: seconds for the torch probe: importing torch from a cold disk cache alone can take this long
TORCH_TIMEOUT = 30.0


@dataclass(frozen=True)
class Detection:
    platform: Platform
    how: str  # e.g. "nvidia-smi: NVIDIA H100 80GB HBM3, compute capability 9.0 (8 GPUs)"


@dataclass(frozen=True)
class Unavailable:
    """A probe that could not look, and why (shown when no probe finds a GPU)."""

    reason: str


Found = list[tuple[str, Platform]]
# A probe returns [(device name, platform)], Unavailable(reason), or None when its tool or
# package is simply absent.
Probe = Callable[[], "Found | Unavailable | None"]


def _capture(argv: list[str], timeout: float) -> str | Unavailable:
    """``argv``'s standard output, bounded (resolver/child.py), or Unavailable(why)."""
    out = capture(argv, timeout)
    return Unavailable(out.reason) if isinstance(out, ChildFailed) else out


def _run(argv: list[str]) -> str | Unavailable | None:
    """A tool's output, Unavailable(reason) if it failed, None if it is not installed."""
    exe = shutil.which(argv[0])
    if exe is None:
        return None
    return _capture([exe, *argv[1:]], PROBE_TIMEOUT)


# The child's answer is the last line of its output (a library may print while importing); it
# leaves with os._exit so that a library's exit handlers (a CUDA teardown) cannot hang it.
_CHILD_PRELUDE = r'''
import json, os, sys

def done(result):
    sys.stdout.write("\n" + json.dumps(result) + "\n")
    sys.stdout.flush()
    os._exit(0)

def failed(what, exc):
    text = (str(exc).splitlines() or [""])[0][:100]
    done({"unavailable": f"{what} ({type(exc).__name__}{': ' + text if text else ''})"})
'''

_NVML_CHILD = _CHILD_PRELUDE + r'''
try:
    import pynvml
except BaseException as exc:
    failed("not available: importing pynvml failed", exc)
try:
    pynvml.nvmlInit()
except BaseException as exc:
    failed("not available: no NVIDIA driver", exc)
gpus = []
try:
    for i in range(pynvml.nvmlDeviceGetCount()):
        handle = pynvml.nvmlDeviceGetHandleByIndex(i)
        major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(handle)
        name = pynvml.nvmlDeviceGetName(handle)
        if isinstance(name, bytes):
            name = name.decode("utf-8", "replace")
        gpus.append({"name": str(name), "capability": f"{int(major)}.{int(minor)}"})
except BaseException as exc:
    failed("NVML error", exc)
done({"gpus": gpus})
'''

_TORCH_CHILD = _CHILD_PRELUDE + r'''
try:
    import torch
except BaseException as exc:
    failed("not available: importing torch failed", exc)
gpus = []
try:
    if torch.cuda.is_available():
        hip = bool(getattr(torch.version, "hip", None))
        for i in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(i)
            if hip:
                gpus.append({"name": str(props.name), "arch": str(getattr(props, "gcnArchName", ""))})
            else:
                gpus.append({"name": str(props.name), "capability": f"{int(props.major)}.{int(props.minor)}"})
except BaseException as exc:
    failed("CUDA error", exc)
done({"gpus": gpus})
'''


def _run_python(code: str, timeout: float) -> dict[str, Any] | Unavailable:
    """Run ``code`` in a child interpreter (bounded like a tool); its JSON answer."""
    # -P: a pynvml.py or torch.py in the working directory is not imported
    text = _capture([sys.executable, "-P", "-c", code], timeout)
    if isinstance(text, Unavailable):
        return text
    last = text.strip().splitlines()[-1:]
    try:
        answer = parse_json(last[0], "probe") if last else None
    except (ValueError, InputError):  # json.JSONDecodeError is a ValueError
        answer = None
    return answer if isinstance(answer, dict) else Unavailable("the probe gave no answer")


def _has_module(name: str) -> bool:
    """Whether ``name`` is installed, without importing it."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


_SHAPE = "answered in an unexpected shape"


def _library_probe(code: str, timeout: float) -> Found | Unavailable:
    answer = _run_python(code, timeout)
    if isinstance(answer, Unavailable):
        return answer
    if "unavailable" in answer:
        return Unavailable(str(answer["unavailable"])[:200])
    gpus = answer.get("gpus")
    if not isinstance(gpus, list):
        return Unavailable(_SHAPE)
    out = []
    for gpu in gpus:
        name = gpu.get("name") if isinstance(gpu, dict) else None
        if not isinstance(name, str):
            return Unavailable(_SHAPE)
        cap, arch = gpu.get("capability"), gpu.get("arch")
        if isinstance(cap, str) and re.fullmatch(r"\d+\.\d+", cap):
            out.append(_nvidia(cap, name))
        elif isinstance(arch, str):
            out.append(_amd(arch, name))
        else:
            return Unavailable(_SHAPE)
    return out


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


def probe_nvml() -> Found | Unavailable | None:
    if not _has_module("pynvml"):
        return None
    return _library_probe(_NVML_CHILD, PROBE_TIMEOUT)


def probe_nvidia_smi() -> Found | Unavailable | None:
    text = _run(["nvidia-smi", "--query-gpu=name,compute_cap", "--format=csv,noheader"])
    if not isinstance(text, str):
        return text
    out = []
    for line in text.splitlines():
        if "," in line:
            name, cap = (part.strip() for part in line.rsplit(",", 1))
            if not re.fullmatch(r"\d+\.\d+", cap):  # e.g. [N/A] under MIG: this probe cannot tell
                return Unavailable(f"no compute capability reported ({cap[:20]!r})")
            out.append(_nvidia(cap, name))
    return out


def probe_torch() -> Found | Unavailable | None:
    if not _has_module("torch"):  # only a torch the user already has
        return None
    return _library_probe(_TORCH_CHILD, TORCH_TIMEOUT)


def probe_amd_smi() -> Found | Unavailable | None:
    text = _run(["amd-smi", "static", "--asic", "--json"])
    if not isinstance(text, str):
        return text
    try:
        data = parse_json(text, "amd-smi")
    except (ValueError, InputError):
        return Unavailable("printed no readable JSON")
    gpus = data if isinstance(data, list) else data.get("gpu_data") if isinstance(data, dict) else None
    if not isinstance(gpus, list):
        return Unavailable(_SHAPE)
    out = []
    for gpu in gpus:
        asic = gpu.get("asic", {}) if isinstance(gpu, dict) else None
        if not isinstance(asic, dict):
            return Unavailable(_SHAPE)
        arch = asic.get("target_graphics_version") or asic.get("gfx_version")
        name = asic.get("market_name") or "AMD GPU"
        if arch is None:
            continue
        if not isinstance(arch, str) or not isinstance(name, str) or not re.match(r"gfx\w+", arch):
            return Unavailable(f"no gfx architecture reported ({str(arch)[:20]!r})")  # e.g. "N/A"
        out.append(_amd(arch, name))
    return out


def probe_rocminfo() -> Found | Unavailable | None:
    text = _run(["rocminfo"])
    if not isinstance(text, str):
        return text
    return [_amd(arch, f"AMD {arch}") for arch in re.findall(r"^\s*Name:\s*(gfx9\d\w*)\s*$", text, re.MULTILINE)]


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
        if isinstance(found, Unavailable):
            tried.append(f"{label} ({found.reason})")
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
        return Detection(platform, f"detected by {label}: {name}, {platform.name} "
                                   f"(capability {platform.capability:g}){count}")
    raise InputError("no GPU found on this machine (tried " + ", ".join(tried) + "); name the target GPU with "
                     "--platform NAME, e.g. --platform h100 (see 'resolve platforms' for every name)")
