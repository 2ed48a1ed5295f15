"""--platform auto: each probe faked; no GPU needed."""
import sys
import types

import pytest

import resolver.detect as detect
from resolver.errors import InputError
from resolver.platforms import find_platform


def _fake_run(outputs):
    return lambda argv: outputs.get(argv[0])


def test_nvidia_smi(monkeypatch):
    monkeypatch.setattr(detect, "_run", _fake_run({"nvidia-smi": "NVIDIA H100 80GB HBM3, 9.0\nNVIDIA H100 80GB HBM3, 9.0\n"}))
    d = detect.detect_platform([("nvidia-smi", detect.probe_nvidia_smi)])
    assert d.platform.name == "sm90" and "nvidia-smi: NVIDIA H100 80GB HBM3" in d.how and "(2 GPUs)" in d.how


def test_several_kinds_ask_for_a_platform(monkeypatch):
    monkeypatch.setattr(detect, "_run", _fake_run({"nvidia-smi": "NVIDIA H100, 9.0\nNVIDIA B200, 10.0\n"}))
    with pytest.raises(InputError, match=r"several GPU kinds.*--platform \(sm100 or sm90\)"):
        detect.detect_platform([("nvidia-smi", detect.probe_nvidia_smi)])


def test_rocminfo_and_amd_smi(monkeypatch):
    monkeypatch.setattr(detect, "_run", _fake_run({
        "rocminfo": "Agent 2\n  Name:                    gfx942\n  Marketing Name: AMD Instinct MI300X\n",
        "amd-smi": '[{"gpu": 0, "asic": {"market_name": "AMD Instinct MI355X", "target_graphics_version": "gfx950"}}]'}))
    assert detect.detect_platform([("rocminfo", detect.probe_rocminfo)]).platform.name == "gfx942"
    assert detect.detect_platform([("amd-smi", detect.probe_amd_smi)]).platform.name == "gfx950"


def test_nvml(monkeypatch):
    fake = types.SimpleNamespace(
        nvmlInit=lambda: None, nvmlShutdown=lambda: None, nvmlDeviceGetCount=lambda: 1,
        nvmlDeviceGetHandleByIndex=lambda i: i, nvmlDeviceGetCudaComputeCapability=lambda h: (12, 0),
        nvmlDeviceGetName=lambda h: b"NVIDIA GeForce RTX 5090")
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.setattr(detect.importlib.util, "find_spec", lambda name: object() if name == "pynvml" else None)
    d = detect.detect_platform([("NVML", detect.probe_nvml)])
    assert d.platform == find_platform("rtx5090") and "RTX 5090" in d.how


def test_torch_on_rocm(monkeypatch):
    props = types.SimpleNamespace(name="AMD Instinct MI300X", gcnArchName="gfx942:sramecc+:xnack-", major=9, minor=4)
    fake = types.SimpleNamespace(
        cuda=types.SimpleNamespace(is_available=lambda: True, device_count=lambda: 1, get_device_properties=lambda i: props),
        version=types.SimpleNamespace(hip="6.2"))
    monkeypatch.setitem(sys.modules, "torch", fake)
    monkeypatch.setattr(detect.importlib.util, "find_spec", lambda name: object() if name == "torch" else None)
    assert detect.detect_platform([("torch", detect.probe_torch)]).platform.name == "gfx942"


def test_nothing_found_says_how_to_name_a_target(monkeypatch):
    monkeypatch.setattr(detect, "_run", lambda argv: None)
    monkeypatch.setattr(detect.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(InputError, match=r"no GPU found.*--platform NAME"):
        detect.detect_platform()


def test_an_unknown_gpu_is_named(monkeypatch):
    monkeypatch.setattr(detect, "_run", _fake_run({"nvidia-smi": "Tesla T4, 7.5\n"}))
    with pytest.raises(InputError, match="Tesla T4"):
        detect.detect_platform([("nvidia-smi", detect.probe_nvidia_smi)])


def test_the_explanation_says_how_the_platform_was_found(monkeypatch):
    from resolver import resolve
    from resolver.adapters.base import Probe
    from resolver.adapters.registry import Registry

    monkeypatch.setattr(detect, "_run", _fake_run({"nvidia-smi": "NVIDIA B200, 10.0\n"}))
    monkeypatch.setattr(detect.importlib.util, "find_spec", lambda name: None)
    # on the local GPU the local packages count: pretend every kernel package is installed
    monkeypatch.setattr(Registry, "probes", lambda self: {a.name: Probe(True, "1", "test") for a in self.adapters})
    res = resolve({}, platform="auto", model_arch="DeepseekV32ForCausalLM")
    assert res.to_dict()["platform"] == {"name": "sm100", "source": "detected", "vendor": "nvidia", "capability": 10.0,
                                         "given_as": "detected by nvidia-smi: NVIDIA B200, sm100 (capability 10)"}
    assert "detected by nvidia-smi" in res.explain()
