"""Third-party kernel adapters (entry points ``resolver.kernels``) cannot change a result silently:
a name clash is refused, a plugin that fails to load and a probe that fails or hangs are warnings."""
import importlib
import io
import json
import os
import subprocess
import sys
import textwrap
import time

from resolver.adapters import Probe, registry, reload_registry
from resolver.cli import main

registry_module = importlib.import_module("resolver.adapters.registry")  # the package's `registry` is the function

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FA3_CHECK = ["--check-installed", "--platform", "h100", "--attention-backend", "fa3"]
DSV32 = {"architectures": ["DeepseekV32ForCausalLM"], "index_topk": 2048, "kv_lora_rank": 512, "qk_rope_head_dim": 64}

IMPOSTOR = '''
from resolver.adapters import Claim, KernelAdapter, Probe
# named like the built-in FA3 adapter, with a probe that says its package is installed
ADAPTER = KernelAdapter(name="fa3", family="an impostor", package="sglang-kernel",
    claims=(Claim("attention", ("fa3",), "supported", ("sm90",), "trust me"),),
    probe=lambda: Probe(True, "9.9", "impostor probe"))
'''
TWINS = '''
from resolver.adapters import Claim, KernelAdapter, Probe
ONE = KernelAdapter(name="vendor-x", family="one", package=None,
    claims=(Claim("dsa_decode", ("trtllm",), "supported", ("sm120",), "one"),), probe=lambda: Probe(True, "1", "one"))
TWO = KernelAdapter(name="vendor-x", family="two", package=None,
    claims=(Claim("dsa_decode", ("trtllm",), "unsupported", ("sm120",), "two"),), probe=lambda: Probe(True, "2", "two"))
'''
OVERRIDE = '''
from resolver.adapters import Claim, KernelAdapter, Probe
# its own name, and a claim as narrow as the built-in one it overrides (loaded later: it wins)
ADAPTER = KernelAdapter(name="fa3-vendor-notes", family="FA3 vendor notes", package=None,
    claims=(Claim("attention", ("fa3",), "unsupported", ("sm90",), "vendor erratum 7",
                  kv_dtypes=("auto", "bf16", "bfloat16")),),
    probe=lambda: Probe(True, "1", "x"))
'''
HANGS = '''
import time
from resolver.adapters import Claim, KernelAdapter
ADAPTER = KernelAdapter(name="slow-sm120", family="a probe that never answers", package="slow-sm120",
    claims=(Claim("dsa_decode", ("trtllm",), "supported", ("sm120", "sm121"), "vendor notes"),),
    probe=lambda: time.sleep(60))
'''


def _run(argv):
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, out, err)
    return code, out.getvalue(), err.getvalue()


def _json(argv):
    """The JSON answer, with a resolution's warnings (code and message) as their messages; kernel-unknown
    warnings, about kernels no adapter vouches for, are not what these tests look at."""
    code, out, _ = _run([*argv, "--format", "json"])
    doc = json.loads(out)
    doc["warnings"] = [w["message"] if isinstance(w, dict) else w for w in doc["warnings"]
                       if not (isinstance(w, dict) and w["code"] == "kernel-unknown")]
    return code, doc


def test_a_plugin_named_like_a_builtin_is_refused_and_changes_nothing(plugins):
    before_code, before = _json(FA3_CHECK)
    plugins({"impostor_fa3": IMPOSTOR}, "fa3 = impostor_fa3:ADAPTER\n")
    reg = registry()
    assert [a.source for a in reg.adapters if a.name == "fa3"] == ["built-in"]
    (error,) = reg.errors
    assert "entry point fa3 = impostor_fa3:ADAPTER" in str(error) and "the built-in adapter 'fa3'" in str(error)
    assert "impostor" not in reg.probes()["fa3"].detail  # the built-in probe still answers for fa3
    code, after = _json(FA3_CHECK)
    assert (code, after["status"], after["values"]) == (before_code, before["status"], before["values"])
    assert [c["rule"] for c in after["conflicts"]] == [c["rule"] for c in before["conflicts"]]
    assert [w for w in after["warnings"] if w not in before["warnings"]] == [
        f"plugin: {error}; its claims are not used"]
    _, text, _ = _run(FA3_CHECK)
    assert "plugin: kernel adapter 'fa3' from entry point fa3 = impostor_fa3:ADAPTER" in text


def test_two_plugins_with_one_name_the_second_is_refused(plugins):
    plugins({"twins": TWINS}, "a = twins:ONE\nb = twins:TWO\n")
    reg = registry()
    assert [a.source for a in reg.adapters if a.name == "vendor-x"] == ["entry point a = twins:ONE"]
    (error,) = reg.errors
    assert "entry point b = twins:TWO" in str(error) and "entry point a = twins:ONE" in str(error)


def test_a_plugin_with_its_own_name_may_override_a_builtin_claim_and_says_so(plugins):
    plugins({"fa3_notes": OVERRIDE}, "notes = fa3_notes:ADAPTER\n")
    assert registry().errors == []
    code, doc = _json(["--platform", "h100", "--attention-backend", "fa3", "--explain"])
    assert code == 1 and doc["warnings"] == []
    (conflict,) = doc["conflicts"]
    # the headline names the adapter; its evidence (with where the plugin came from) is the conflict's details
    assert "kernel adapter fa3-vendor-notes" in conflict["message"]
    (evidence,) = conflict["details"].values()
    assert "vendor erratum 7" in evidence and "entry point notes = fa3_notes:ADAPTER" in evidence


def test_a_plugin_that_fails_to_load_is_a_warning_on_every_result(plugins):
    plugins({"boom_at_import": "raise RuntimeError('boom at import')\n", "quits_at_import": "raise SystemExit(3)\n"},
            "boom = boom_at_import:ADAPTER\nquits = quits_at_import:ADAPTER\n")
    expected = [f"plugin: kernel adapter from entry point {ep} failed to load: {exc}; its claims are not used"
                for ep, exc in (("boom = boom_at_import:ADAPTER", "RuntimeError('boom at import')"),
                                ("quits = quits_at_import:ADAPTER", "SystemExit(3)"))]
    for argv in (["--platform", "h100"], ["--platform", "b200", "--model-arch", "DeepseekV32ForCausalLM"], FA3_CHECK):
        _, doc = _json(argv)
        assert doc["warnings"][-2:] == expected, argv
        _, text, _ = _run(argv)
        assert "boom at import" in text and "SystemExit(3)" in text
    code, doc = _json(["kernels"])
    assert code == 0 and doc["warnings"] == expected and len(doc["errors"]) == 2
    _, text, _ = _run(["kernels"])
    assert "warning: plugin: kernel adapter from entry point boom" in text


def test_a_hanging_probe_is_abandoned_with_a_warning(plugins, monkeypatch):
    monkeypatch.setattr(registry_module, "PROBE_TIMEOUT", 0.5)
    plugins({"slow_sm120": HANGS}, "slow = slow_sm120:ADAPTER\n")
    warning = ("plugin: kernel adapter 'slow-sm120' (entry point slow = slow_sm120:ADAPTER): probe did not answer "
               "within 0.5s; its kernels are treated as unknown (not verified on this machine)")
    start = time.monotonic()
    code, doc = _json(["--check-installed", "--platform", "rtx5090", "--model-arch", "DeepseekV32ForCausalLM"])
    assert time.monotonic() - start < 10
    assert warning in doc["warnings"] and len(doc["warnings"]) == 1  # the other probes answered
    assert isinstance(registry().probes()["fa3"], Probe)
    # its "supported" claim is not verified here: unknown, neither a conflict nor "runs here"
    verdict = registry().checking_installed().verdict("dsa_decode", "trtllm", "sm120")
    assert verdict.status == "unknown" and "not verified on this machine" in verdict.why
    # without the probes counting, the hang does not matter and is not reported
    _, doc = _json(["--platform", "rtx5090", "--model-arch", "DeepseekV32ForCausalLM"])
    assert doc["warnings"] == []
    reload_registry()  # probe again, from `resolve kernels` this time
    start = time.monotonic()
    code, text, _ = _run(["kernels"])
    assert code == 0 and time.monotonic() - start < 10
    assert f"warning: {warning}" in text and "probe failed: kernel adapter 'slow-sm120'" in text


def test_a_hanging_probe_does_not_keep_the_process_alive(tmp_path):
    """The real budget, in a process of its own: it answers and exits though the probe thread sleeps on."""
    (tmp_path / "slow_sm120.py").write_text(textwrap.dedent(HANGS))
    dist = tmp_path / "slow_sm120-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: slow-sm120\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[resolver.kernels]\nslow = slow_sm120:ADAPTER\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), ROOT]))
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "resolver", *FA3_CHECK], capture_output=True, text=True, env=env,
                          timeout=30, check=False)
    assert time.monotonic() - start < 20
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr
    assert f"probe did not answer within {registry_module.PROBE_TIMEOUT:g}s" in proc.stdout
