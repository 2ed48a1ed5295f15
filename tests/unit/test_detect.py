"""--platform auto: each probe faked; no GPU needed."""
import os
import sys
import textwrap
import time

import pytest

from resolver import detect
from resolver.errors import InputError
from resolver.platforms import find_platform


def _fake_run(outputs):
    return lambda argv: outputs.get(argv[0])


def test_nvidia_smi(monkeypatch):
    monkeypatch.setattr(detect, "_run",
                        _fake_run({"nvidia-smi": "NVIDIA H100 80GB HBM3, 9.0\nNVIDIA H100 80GB HBM3, 9.0\n"}))
    d = detect.detect_platform([("nvidia-smi", detect.probe_nvidia_smi)])
    assert d.platform.name == "sm90" and "nvidia-smi: NVIDIA H100 80GB HBM3" in d.how and "(2 GPUs)" in d.how


def test_several_kinds_ask_for_a_platform(monkeypatch):
    monkeypatch.setattr(detect, "_run", _fake_run({"nvidia-smi": "NVIDIA H100, 9.0\nNVIDIA B200, 10.0\n"}))
    with pytest.raises(InputError, match=r"several GPU kinds.*--platform \(sm100 or sm90\)"):
        detect.detect_platform([("nvidia-smi", detect.probe_nvidia_smi)])


def test_rocminfo_and_amd_smi(monkeypatch):
    monkeypatch.setattr(detect, "_run", _fake_run({
        "rocminfo": "Agent 2\n  Name:                    gfx942\n  Marketing Name: AMD Instinct MI300X\n",
        "amd-smi": '[{"gpu": 0, "asic": {"market_name": "AMD Instinct MI355X", '
                   '"target_graphics_version": "gfx950"}}]'}))
    assert detect.detect_platform([("rocminfo", detect.probe_rocminfo)]).platform.name == "gfx942"
    assert detect.detect_platform([("amd-smi", detect.probe_amd_smi)]).platform.name == "gfx950"


def _fake_modules(tmp_path, monkeypatch, **modules):
    """Python modules (name -> source) importable by the probes' child interpreter."""
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    for name, source in modules.items():
        (site / f"{name}.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(site))  # so that this process's find_spec sees them too
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])))


def test_nvml(tmp_path, monkeypatch):
    _fake_modules(tmp_path, monkeypatch, pynvml="""
        nvmlInit = nvmlShutdown = lambda: None
        nvmlDeviceGetCount = lambda: 1
        nvmlDeviceGetHandleByIndex = lambda i: i
        nvmlDeviceGetCudaComputeCapability = lambda h: (12, 0)
        nvmlDeviceGetName = lambda h: b"NVIDIA GeForce RTX 5090"
        print("a library chatting on stdout while it loads")
    """)
    d = detect.detect_platform([("NVML", detect.probe_nvml)])
    assert d.platform.name == find_platform("rtx5090").name and "RTX 5090" in d.how
    assert "pynvml" not in sys.modules  # imported by the child only


def test_torch_on_rocm(tmp_path, monkeypatch):
    _fake_modules(tmp_path, monkeypatch, torch="""
        from types import SimpleNamespace
        props = SimpleNamespace(name="AMD Instinct MI300X", gcnArchName="gfx942:sramecc+:xnack-", major=9, minor=4)
        cuda = SimpleNamespace(is_available=lambda: True, device_count=lambda: 1, get_device_properties=lambda i: props)
        version = SimpleNamespace(hip="6.2")
    """)
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


def test_the_explanation_says_how_the_platform_was_found(monkeypatch, request):
    from resolver import resolve
    from resolver.adapters import reload_registry
    from resolver.adapters.base import Probe
    from resolver.adapters.registry import Registry

    reload_registry()  # probes are cached per registry: an earlier test (resolve kernels) may have probed this machine
    request.addfinalizer(reload_registry)  # and the fake probes below must not outlive this test

    monkeypatch.setattr(detect, "_run", _fake_run({"nvidia-smi": "NVIDIA B200, 10.0\n"}))
    monkeypatch.setattr(detect.importlib.util, "find_spec", lambda name: None)
    # on the local GPU the local packages count: pretend every kernel package is installed
    monkeypatch.setattr(Registry, "probes", lambda self: {a.name: Probe(True, "1", "test") for a in self.adapters})
    res = resolve({}, platform="auto", model_arch="DeepseekV32ForCausalLM")
    assert res.to_dict()["platform"] == {"name": "sm100", "source": "detected", "vendor": "nvidia", "capability": 10.0,
                                         "given_as": "detected by nvidia-smi: NVIDIA B200, sm100 (capability 10)"}
    assert "detected by nvidia-smi" in res.explain()


# --- bounded probes: a hanging driver or a misbehaving tool ends in seconds, never in exit 3 ---

ROCMINFO = "Agent 2\n  Name:                    gfx942\n"


@pytest.fixture
def fake_tools(tmp_path, monkeypatch):
    """Write shell scripts (name -> body) into a directory put first on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(detect, "PROBE_TIMEOUT", 1.0)
    monkeypatch.setattr(detect, "TORCH_TIMEOUT", 1.0)

    def make(**scripts: str) -> None:
        for name, body in scripts.items():
            path = bin_dir / name
            path.write_text("#!/bin/sh\n" + body + "\n")
            path.chmod(0o755)

    return make


def _timed(probes):
    start = time.monotonic()
    try:
        return detect.detect_platform(probes), time.monotonic() - start
    except InputError as exc:
        return exc, time.monotonic() - start


def test_a_hanging_tool_times_out_and_the_next_probe_answers(fake_tools):
    fake_tools(**{"nvidia-smi": "sleep 30", "rocminfo": f"printf '{ROCMINFO}'"})
    d, took = _timed([("nvidia-smi", detect.probe_nvidia_smi), ("rocminfo", detect.probe_rocminfo)])
    assert d.platform.name == "gfx942" and took < 5
    err, took = _timed([("nvidia-smi", detect.probe_nvidia_smi)])
    assert isinstance(err, InputError) and "nvidia-smi (timed out after 1s)" in str(err) and took < 5


def test_a_hanging_tool_whose_child_holds_the_pipe_is_killed_too(fake_tools):
    fake_tools(**{"nvidia-smi": "sleep 30 &\necho 'NVIDIA H100, 9.0'"})  # output done, a child lingers
    d, took = _timed([("nvidia-smi", detect.probe_nvidia_smi)])
    assert isinstance(d, InputError) and "timed out" in str(d) and took < 5


def test_endless_output_is_capped(fake_tools):
    fake_tools(**{"nvidia-smi": "yes 'NVIDIA H100 80GB HBM3, 9.0'"})
    err, took = _timed([("nvidia-smi", detect.probe_nvidia_smi)])
    assert isinstance(err, InputError) and "nvidia-smi (printed more than 1 MiB)" in str(err) and took < 5


def test_a_failing_tool_is_skipped_with_its_status(fake_tools):
    fake_tools(**{"nvidia-smi": "echo 'NVIDIA-SMI has failed'; exit 9"})
    err, _ = _timed([("nvidia-smi", detect.probe_nvidia_smi)])
    assert "nvidia-smi (exited with status 9)" in str(err)


def test_output_that_is_not_utf8_is_read(fake_tools):
    fake_tools(**{"nvidia-smi": r"printf 'NVIDIA H100 \377\376 80GB, 9.0\n'"})
    d, _ = _timed([("nvidia-smi", detect.probe_nvidia_smi)])
    assert d.platform.name == "sm90" and "\ufffd" in d.how


@pytest.mark.parametrize("output", [
    '{"gpu_data": 5}', "[1, 2]", '[{"asic": "gfx942"}]', '"text"', "7", "{not json", "\377\376",
    '[{"asic": {"target_graphics_version": 942}}]', '[{"asic": {"target_graphics_version": "N/A"}}]',
    '[{"asic": {"target_graphics_version": "gfx942", "market_name": ["MI300X"]}}]',
    "[" * 5000 + "]" * 5000, '{"gpu_data": [' + "9" * 5000 + "]}",
], ids=["gpu_data-int", "list-of-ints", "asic-str", "str", "int", "not-json", "not-utf8", "arch-int", "arch-NA",
        "name-list", "deep", "long-int"])
def test_wrong_shaped_amd_smi_json_lets_the_next_probe_answer(fake_tools, tmp_path, output):
    (tmp_path / "amd.json").write_text(output)
    fake_tools(**{"amd-smi": f"cat '{tmp_path / 'amd.json'}'", "rocminfo": f"printf '{ROCMINFO}'"})
    d, took = _timed([("amd-smi", detect.probe_amd_smi), ("rocminfo", detect.probe_rocminfo)])
    assert d.platform.name == "gfx942" and d.how.startswith("detected by rocminfo") and took < 5
    assert isinstance(detect.probe_amd_smi(), detect.Unavailable)


@pytest.mark.parametrize("module, source, reason", [
    ("pynvml", "import time\ntime.sleep(30)\n", "NVML (timed out after 1s)"),
    ("pynvml", "raise RuntimeError('driver/library version mismatch')\n",
     "NVML (not available: importing pynvml failed (RuntimeError: driver/library version mismatch))"),
    ("pynvml", "import os\nos._exit(7)\n", "NVML (exited with status 7)"),
    ("pynvml", "def nvmlInit():\n    raise OSError('no libnvidia-ml.so')\n",
     "NVML (not available: no NVIDIA driver (OSError: no libnvidia-ml.so))"),
    ("torch", "import time\nclass cuda:\n    is_available = staticmethod(lambda: time.sleep(30))\n",
     "torch (timed out after 1s)"),
    ("torch", "raise ImportError('libcudart.so.12: cannot open shared object file')\n",
     "torch (not available: importing torch failed (ImportError: libcudart.so.12: cannot open shared object file))"),
], ids=["nvml-hangs", "nvml-import-raises", "nvml-exits", "nvml-no-driver", "torch-cuda-hangs", "torch-import-raises"])
def test_a_python_library_that_hangs_or_fails_is_skipped(fake_tools, tmp_path, monkeypatch, module, source, reason):
    _fake_modules(tmp_path, monkeypatch, **{module: source})
    fake_tools(rocminfo=f"printf '{ROCMINFO}'")
    probe = ("NVML", detect.probe_nvml) if module == "pynvml" else ("torch", detect.probe_torch)
    d, took = _timed([probe, ("rocminfo", detect.probe_rocminfo)])
    assert d.platform.name == "gfx942" and took < 5
    err, took = _timed([probe])
    assert isinstance(err, InputError) and reason in str(err) and took < 5


def test_the_cli_with_a_hanging_probe_exits_2_in_seconds(fake_tools, tmp_path, monkeypatch):
    import io

    from resolver.cli import main

    _fake_modules(tmp_path, monkeypatch, pynvml="import time\ntime.sleep(30)\n")
    fake_tools(**{"nvidia-smi": "sleep 30", "amd-smi": "yes '[[[['", "rocminfo": r"printf '\377\n'"})
    monkeypatch.setattr(detect, "PROBES", [p for p in detect.PROBES if p[0] != "torch"])  # a real torch may be here
    out, err = io.StringIO(), io.StringIO()
    start = time.monotonic()
    code = main(["--platform", "auto", "--model-arch", "DeepseekV32ForCausalLM"], out, err)
    assert code == 2 and time.monotonic() - start < 10, err.getvalue()
    assert "NVML (timed out after 1s), nvidia-smi (timed out after 1s), amd-smi (printed more than 1 MiB), " \
           "rocminfo (no GPU)" in err.getvalue()
    out = io.StringIO()
    assert main(["platforms", "--format", "json"], out) == 0
    assert "timed out" in out.getvalue()
