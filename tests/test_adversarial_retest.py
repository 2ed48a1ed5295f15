"""Issue 23: the holes an adversarial re-test found, each with its reproduction.

Every case shows the intended behaviour: bad input is exit 2 with one clear line and no traceback,
no code runs, nothing hangs past its documented bound, and exit 1 means a conflict and nothing
else.  The pack-cache cases (D, E) are in tests/test_cache_security.py, beside the cache's other
guarantees; the --jobs cap (L) is in tests/test_jobs.py.
"""
from __future__ import annotations

import importlib
import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from resolver import InputError, resolve
from resolver.adapters import registry
from resolver.cli import main
from resolver.conditions import ConditionError, parse_condition
from resolver.expressions import MAX_ROUND_DIGITS, parse_expression
from resolver.tools.batch import MAX_UNREADABLE_RUN

from .conftest import ROOT

registry_module = importlib.import_module("resolver.adapters.registry")  # the package's `registry` is the function

LLAMA = ["--platform", "h100", "--model-arch", "LlamaForCausalLM"]
OK_LINE = json.dumps({"id": "ok", "platform": "h100", "model_arch": "LlamaForCausalLM"})
# the CLI in a fresh interpreter, as an operator runs it
ENV = {**os.environ, "PYTHONPATH": ROOT}


def _cli(argv: list[str], stdin: str | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    if stdin is None:
        return main(argv, out, err), out.getvalue(), err.getvalue()
    saved = sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        return main(argv, out, err), out.getvalue(), err.getvalue()
    finally:
        sys.stdin = saved


def _one_clear_line(code: int, err: str, needle: str) -> None:
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("resolve: error: ") and needle in err, err
    assert "Traceback" not in err


# --- A. --format env: only POSIX names, every value quoted -------------------------------------------


@pytest.mark.parametrize("item", ["X;touch /tmp/pwned;Y=1", "B\nC=1", "1X=1", "A-B=1", "=1", "ÄB=1", "A B=1"])
def test_an_env_name_that_is_not_a_posix_name_is_bad_input(tmp_path, item):
    code, out, err = _cli([*LLAMA, "--env", item, "--format", "env"])
    _one_clear_line(code, err, "not a POSIX name" if item.partition("=")[0] else "NAME=VALUE")
    assert out == ""


def test_a_bad_env_name_in_a_batch_line_or_the_api_is_refused(tmp_path):
    line = json.dumps({"id": "e", "platform": "h100", "model_arch": "LlamaForCausalLM",
                       "env": {"X;touch /tmp/pwned": "1"}})
    code, out, _ = _cli(["--batch", "-"], stdin=line + "\n")
    (result,) = map(json.loads, out.splitlines())
    assert code == 2 and result["status"] == "error" and "not a POSIX name" in result["error"]
    with pytest.raises(InputError, match="not a POSIX name"):
        resolve({}, platform="h100", model_arch="LlamaForCausalLM", env={"A\nB": "1"})


def test_env_output_evaluated_by_a_shell_runs_nothing_and_keeps_each_value(tmp_path):
    marker = tmp_path / "pwned"
    value = f"$(touch {marker}); `touch {marker}` ' \" \n;touch {marker}"
    proc = subprocess.run([sys.executable, "-m", "resolver", *LLAMA, "--env", f"MY_VAR={value}", "--format", "env"],
                          capture_output=True, text=True, env=ENV, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    shell = subprocess.run(["sh", "-c", 'eval "$1"; printf %s "$MY_VAR"', "sh", proc.stdout], capture_output=True,
                           text=True, timeout=10, check=False)
    assert shell.returncode == 0 and shell.stdout == value
    assert not marker.exists()


# --- B. a read that fails is exit 2, never a traceback ------------------------------------------------

UNREADABLE = [path for path in ("/proc/self/mem", "/proc/sys/kernel/random/uuid") if os.path.exists(path)]


@pytest.mark.skipif(not UNREADABLE, reason="needs Linux /proc")
@pytest.mark.parametrize("path", UNREADABLE)
@pytest.mark.parametrize("flag", ["--model-config", "--model-path"])
def test_a_file_whose_read_fails_is_bad_input(path, flag):
    code, _, err = _cli(["--platform", "h100", flag, path])
    assert code == 2 and "Traceback" not in err and path in err, err


@pytest.mark.skipif(not UNREADABLE, reason="needs Linux /proc")
def test_a_read_error_in_a_batch_line_a_rule_file_cross_node_and_diff_is_bad_input(tmp_path, monkeypatch):
    path = UNREADABLE[0]
    line = json.dumps({"id": "m", "platform": "h100", "model_path": path})
    code, out, err = _cli(["--batch", "-"], stdin=line + "\n")
    (result,) = map(json.loads, out.splitlines())
    assert code == 2 and result["status"] == "error" and not result.get("internal") and "Traceback" not in err
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "a.yaml").symlink_to(path)
    code, _, err = _cli(["--rules", str(rules), *LLAMA])
    assert code == 2 and "Traceback" not in err and "a.yaml" in err, err
    code, _, err = _cli(["cross-node", path])
    _one_clear_line(code, err, path)
    code, _, err = _cli(["diff", "rules", "rules", "--requests", path])
    assert code == 2 and "Traceback" not in err and path in err, err
    # through the Hugging Face cache: a snapshot's config.json links to a file whose read fails
    snapshot = tmp_path / "hub" / "models--acme--broken" / "snapshots" / ("0" * 40)
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").symlink_to(path)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    code, _, err = _cli(["--platform", "h100", "--model-path", "acme/broken"])
    assert code == 2 and "Traceback" not in err and "config.json" in err, err


# --- C. the expression language bounds every operation ------------------------------------------------


def test_a_round_to_an_absurd_precision_is_refused_when_the_pack_loads(rules_dir):
    directory = rules_dir({"bomb.yaml": """\
        schema: resolver/1
        rules:
          - id: compute.bomb
            kind: compute
            doc: A CPU bomb.
            name: bomb.value
            value: round(tp_size, -300000000)
        """}, with_shipped_options=True)
    start = time.monotonic()
    code, _, err = _cli(["--rules", directory, *LLAMA])
    assert code == 2 and "round() to -300000000 digits" in err and "bomb.yaml" in err, err
    assert time.monotonic() - start < 10


@pytest.mark.parametrize("expression, values", [
    ("round(tp_size, digits)", {"tp_size": 8, "digits": -300_000_000}),
    ("round(tp_size, digits)", {"tp_size": 8, "digits": MAX_ROUND_DIGITS + 1}),
    ("a * b", {"a": 2**60, "b": 3}),
    ("a // b", {"a": 10**400, "b": 7}),
    ("a * a * a * a", {"a": 2**53}),
])
def test_an_operand_out_of_bounds_is_null_at_once(expression, values):
    start = time.monotonic()
    assert parse_expression(expression).evaluate(values) is None
    assert time.monotonic() - start < 0.1


def test_operands_in_bounds_still_compute():
    assert parse_expression("round(x, 2)").evaluate({"x": 0.123456}) == 0.12
    assert parse_expression("round(x, -3)").evaluate({"x": 123456}) == 123000
    assert parse_expression("a * b").evaluate({"a": 2**26, "b": 2**26}) == 2**52


def test_a_chain_of_compute_rules_cannot_grow_numbers_without_bound(rules_dir):
    squares = "".join(f"""
          - id: compute.square-{i}
            kind: compute
            doc: Square the last.
            name: square.v{i}
            value: square.v{i - 1} * square.v{i - 1}
        """ for i in range(1, 40))
    directory = rules_dir({"chain.yaml": """\
        schema: resolver/1
        rules:
          - id: compute.square-0
            kind: compute
            doc: Start big.
            name: square.v0
            value: tp_size * 1000000
        """ + squares}, with_shipped_options=True)
    start = time.monotonic()
    res = resolve({"tp_size": 8}, platform="h100", model_arch="LlamaForCausalLM", rules=directory)
    assert time.monotonic() - start < 20 and res.ok


# --- F. a batch source that never ends as lines ---------------------------------------------------------


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_device_as_batch_source_is_refused_unread(device):
    start = time.monotonic()
    code, out, err = _cli(["--batch", device])
    _one_clear_line(code, err, "not a file or a pipe (a character device)")
    assert out == "" and time.monotonic() - start < 5
    with open(device, "rb") as stdin:
        proc = subprocess.run([sys.executable, "-m", "resolver", "--batch", "-"], stdin=stdin, capture_output=True,
                              text=True, env=ENV, timeout=60, check=False)
    assert proc.returncode == 2 and "standard input is not a file or a pipe" in proc.stderr


def test_a_pipe_without_newlines_ends_the_batch_with_exit_2():
    proc = subprocess.run(f"head -c 40000000 /dev/zero | {sys.executable} -m resolver --batch -", shell=True,
                          capture_output=True, text=True, env=ENV, timeout=120, check=False)
    assert proc.returncode == 2 and "stopped: no newline in 17 MiB" in proc.stderr, proc.stderr[-500:]
    assert "Traceback" not in proc.stderr


def test_a_run_of_lines_that_are_not_requests_stops_the_batch(tmp_path):
    garbage = ["\x00\x01 not json"] * (MAX_UNREADABLE_RUN + 50)
    code, out, err = _cli(["--batch", "-"], stdin="\n".join([OK_LINE, *garbage, OK_LINE]) + "\n")
    results = [json.loads(line) for line in out.splitlines()]
    assert code == 2 and len(results) == 1 + MAX_UNREADABLE_RUN
    assert results[0]["status"] == "resolved" and all(r["status"] == "error" for r in results[1:])
    assert f"stopped: {MAX_UNREADABLE_RUN} lines in a row are not JSON requests" in err
    # bad requests that are requests (an unknown platform) never stop a batch, nor do runs broken by good lines
    lines = [json.dumps({"id": i, "platform": "bogus"}) for i in range(MAX_UNREADABLE_RUN + 5)]
    lines += [*garbage[:MAX_UNREADABLE_RUN - 1], OK_LINE, *garbage[:MAX_UNREADABLE_RUN - 1], OK_LINE]
    code, out, err = _cli(["--batch", "-"], stdin="\n".join(lines) + "\n")
    assert code == 2 and len(out.splitlines()) == len(lines) and "stopped" not in err


# --- G. a newline typed in a value cannot forge a line ---------------------------------------------------

FORGED = "x\nresolve: ok: configuration resolved, exit 0"


@pytest.mark.parametrize("argv", [
    [*LLAMA, "--attention-backend", FORGED], ["--platform", FORGED], [*LLAMA, "--installed", FORGED],
    [*LLAMA, f"--bogus{FORGED}"], [*LLAMA, "--explain", FORGED], [*LLAMA, "--why-not", FORGED],
    ["--platform", "h100", "--model-path", FORGED], ["--compute-capability", FORGED], ["--rules", FORGED, *LLAMA],
    ["--platform", "h100", "--model-config", FORGED], [*LLAMA, "--env", FORGED],
], ids=["attention-backend", "platform", "installed", "unknown-flag", "explain", "why-not", "model-path",
        "compute-capability", "rules", "model-config", "env"])
def test_a_newline_in_an_input_is_escaped_in_the_error(argv):
    code, _, err = _cli(argv)
    assert code == 2 and "Traceback" not in err
    assert not any(line.startswith("resolve: ok") for line in err.splitlines()), err
    assert "\\u000aresolve: ok" in err


# --- H. exit 1 means a conflict, and nothing else ----------------------------------------------------------


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("argv, streams", [
    (["--platform", "bogus"], ("stderr",)),
    (LLAMA, ("stdout", "stderr")),
    (LLAMA, ("stdout",)),
    ([*LLAMA, "--format", "json"], ("stdout",)),
])
def test_output_that_cannot_be_written_is_exit_2(argv, streams):
    with open("/dev/full", "w") as full:
        redirect = {name: full for name in streams}
        proc = subprocess.run([sys.executable, "-m", "resolver", *argv], env=ENV, timeout=60, check=False,
                              stdout=redirect.get("stdout", subprocess.PIPE), stderr=redirect.get("stderr",
                                                                                                  subprocess.PIPE))
    assert proc.returncode == 2


# --- I. plugins: isolated, bounded, and no look-alike names ------------------------------------------------


ADAPTER = '''
from resolver.adapters import Claim, KernelAdapter, Probe
ADAPTER = KernelAdapter(name={name!r}, family="a plugin", package=None,
    claims=(Claim("dsa_decode", ("trtllm",), "supported", ("sm120",), "vendor notes"),),
    probe=lambda: {probe})
'''


def test_a_plugin_raising_a_base_exception_or_generator_exit_is_a_warning(plugins):
    plugins({"custom_base": "class Boom(BaseException):\n    pass\nraise Boom('custom')\n",
             "gen_exit": "raise GeneratorExit('closing')\n"},
            "custom = custom_base:ADAPTER\ngen = gen_exit:ADAPTER\n")
    errors = [str(e) for e in registry().errors]
    assert any("custom = custom_base:ADAPTER failed to load: Boom('custom')" in e for e in errors), errors
    assert any("gen = gen_exit:ADAPTER failed to load: GeneratorExit('closing')" in e for e in errors), errors
    assert "custom_base" not in sys.modules and "gen_exit" not in sys.modules  # never imported here
    code, out, _ = _cli([*LLAMA, "--format", "json"])
    assert code == 0 and len([w for w in json.loads(out)["warnings"] if w["code"] == "plugin"]) == 2


def test_a_plugin_whose_import_hangs_is_abandoned_at_its_deadline(plugins, monkeypatch):
    monkeypatch.setattr(registry_module, "PLUGIN_TIMEOUT", 1.0)
    start = time.monotonic()
    plugins({"hangs_at_import": "import time\ntime.sleep(600)\n"}, "hangs = hangs_at_import:ADAPTER\n")
    (error,) = registry().errors
    assert time.monotonic() - start < 15
    assert "hangs = hangs_at_import:ADAPTER failed to load: its import did not finish within 1s" in str(error)
    code, out, _ = _cli(["kernels"])
    assert code == 0 and "did not finish within 1s" in out


def test_a_probe_stuck_in_c_code_is_killed_at_its_deadline(plugins, monkeypatch):
    monkeypatch.setattr(registry_module, "PROBE_TIMEOUT", 1.0)
    # sum() over a huge range runs in C holding the interpreter lock: no thread of this process could stop it
    plugins({"gil_probe": ADAPTER.format(name="gil-probe", probe="sum(range(10**15))")}, "gil = gil_probe:ADAPTER\n")
    start = time.monotonic()
    probes = registry().probes()
    assert time.monotonic() - start < 15
    assert "probe did not answer within 1s" in str(probes["gil-probe"])
    assert registry().probes()["fa3"] is not None


def test_a_plugin_probe_answers_through_its_child(plugins):
    plugins({"good_probe": ADAPTER.format(name="good-probe", probe='Probe(True, "1.2", "found", (90, 100))')},
            "good = good_probe:ADAPTER\n")
    assert registry().errors == []
    from resolver.adapters import Probe

    assert registry().probes()["good-probe"] == Probe(True, "1.2", "found", (90, 100))


def test_sigterm_ends_a_run_whose_plugin_probe_is_stuck(tmp_path):
    (tmp_path / "gil_probe.py").write_text(textwrap.dedent(ADAPTER.format(name="gil-probe",
                                                                         probe="sum(range(10**15))")))
    dist = tmp_path / "gil_probe-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: gil-probe\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[resolver.kernels]\ngil = gil_probe:ADAPTER\n")
    env = dict(ENV, PYTHONPATH=os.pathsep.join([str(tmp_path), ROOT]))
    proc = subprocess.Popen([sys.executable, "-m", "resolver", "--check-installed", *LLAMA], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(2.5)  # started, and waiting on the probe's child
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode in (143, 0), err  # terminated (or done already, had the machine been that fast)
    assert "Traceback" not in err
    # the probe's child, which the terminated parent could not kill, ends itself at the probe deadline
    deadline = time.monotonic() + registry_module.PROBE_TIMEOUT + 10
    while _children_of(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _children_of(tmp_path)


def _children_of(tmp_path) -> list[str]:
    """Processes whose command line names ``tmp_path`` (the plugin children carry the parent's sys.path)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if str(tmp_path).encode() in fh.read():
                    found.append(pid)
        except OSError:
            continue
    return found


@pytest.mark.parametrize("name", ["flash_infer", "flash-infer", " flashinfer.", "FLASHINFER", "fa_3", "tr\u0456ton"])
def test_a_look_alike_of_a_builtin_name_is_refused(plugins, name):
    plugins({"look_alike": ADAPTER.format(name=name, probe='Probe(True, "1", "x")')}, "alike = look_alike:ADAPTER\n")
    (error,) = registry().errors
    assert all(a.source == "built-in" for a in registry().adapters)
    assert "has the name of the built-in adapter" in str(error) or "printable ASCII text" in str(error)


# --- J. command-line request flags with --batch are refused ------------------------------------------------


@pytest.mark.parametrize("extra, named", [
    (["--check-installed"], "--check-installed"), (["--platform", "b200"], "--platform"),
    (["--installed", "flashinfer=no"], "--installed"), (["--env", "A=1"], "--env"),
    (["--attention-backend", "triton"], "--attention-backend"), (["--tp", "2"], "--tp-size"),
    (["--model-arch", "LlamaForCausalLM"], "--model-arch"), (["--format", "env"], "--format env"),
])
def test_request_flags_with_batch_are_refused_not_dropped(extra, named):
    code, out, err = _cli(["--batch", "-", *extra], stdin=OK_LINE + "\n")
    _one_clear_line(code, err, named)
    assert out == ""


def test_flags_the_batch_applies_to_every_line_are_still_taken():
    code, out, _ = _cli(["--batch", "-", "--strict", "--require-known-kernels", "--no-fixes", "--explain"],
                        stdin=OK_LINE + "\n")
    assert code in (0, 1) and json.loads(out)["id"] == "ok"


# --- K. Ctrl-C during start-up ---------------------------------------------------------------------------

_INTERRUPTED_IMPORT = """
import sys
class Interrupting:
    def find_spec(self, name, path=None, target=None):
        if name == "resolver.core":
            raise KeyboardInterrupt  # as Ctrl-C lands while the resolver is being imported
        return None
sys.meta_path.insert(0, Interrupting())
from resolver.entry import main
sys.exit(main())
"""


def test_ctrl_c_while_the_resolver_is_imported_is_interrupted_exit_130():
    proc = subprocess.run([sys.executable, "-c", _INTERRUPTED_IMPORT, *LLAMA], capture_output=True, text=True,
                          env=ENV, timeout=60, check=False)
    assert (proc.returncode, proc.stderr) == (130, "resolve: interrupted\n")


def test_importing_the_package_does_not_import_the_resolver():
    code = ("import sys, resolver; print('resolver.api' in sys.modules); resolver.resolve; "
            "print('resolver.api' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV, timeout=60,
                          check=True)
    assert proc.stdout.split() == ["False", "True"]


# --- L. minor ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("rules", ["absolute", "relative"])
def test_rules_from_a_deleted_working_directory(tmp_path, rules):
    gone = tmp_path / "gone"
    gone.mkdir()
    shipped = os.path.join(ROOT, "rules")
    argv = ["--rules", shipped if rules == "absolute" else "rules", *LLAMA]
    code = ("import os, sys; os.chdir(sys.argv[1]); os.rmdir(sys.argv[1]); "
            "from resolver.entry import main; sys.argv[1:] = sys.argv[2:]; sys.exit(main())")
    proc = subprocess.run([sys.executable, "-c", code, str(gone), *argv], capture_output=True, text=True,
                          env=ENV, timeout=60, check=False)
    assert "Traceback" not in proc.stderr
    if rules == "absolute":
        assert proc.returncode == 0, proc.stderr
    else:
        assert proc.returncode == 2 and "the working directory no longer exists" in proc.stderr


def test_nesting_counts_operations_not_syntax_nodes():
    parse_condition("not " * 64 + "page_size")
    parse_condition("not " * 63 + "page_size == 1")
    for text in ("not " * 65 + "page_size", "not " * 64 + "page_size == 1"):
        with pytest.raises(ConditionError, match="nested more than 64 levels"):
            parse_condition(text)



# --- the review's follow-ups ----------------------------------------------------------------------------


def _dist(tmp_path, module: str, source: str, entry: str) -> dict[str, str]:
    """A plugin distribution in ``tmp_path``; the environment that makes a fresh interpreter see it."""
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(source))
    dist = tmp_path / f"{module}-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[resolver.kernels]\n{entry}\n")
    return dict(ENV, PYTHONPATH=os.pathsep.join([str(tmp_path), ROOT]))


def test_sigterm_while_a_plugin_is_imported_here_ends_the_run(tmp_path):
    """Its child imported it at once; the import here (not isolated) waits: SIGTERM lands in it."""
    marker = tmp_path / "importing"
    source = textwrap.dedent(f"""
        import sys, time
        if not sys.flags.isolated:
            open({str(marker)!r}, "w").close()
            time.sleep(30)
        """) + ADAPTER.format(name="slow-here", probe='Probe(True, "1", "x")')
    env = _dist(tmp_path, "slow_here", source, "slow = slow_here:ADAPTER")
    proc = subprocess.Popen([sys.executable, "-m", "resolver", *LLAMA], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert marker.exists(), "the plugin was never imported here"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert (proc.returncode, err) == (143, "resolve: terminated\n")


def test_a_plugin_that_prints_at_import_leaves_the_answer_clean(tmp_path):
    source = 'print("NOISY")\nimport os\nos.write(1, b"NOISY FD\\n")\n' + ADAPTER.format(name="noisy",
                                                                                         probe='Probe(True, "1", "x")')
    env = _dist(tmp_path, "noisy_plugin", source, "noisy = noisy_plugin:ADAPTER")
    proc = subprocess.run([sys.executable, "-m", "resolver", *LLAMA, "--format", "json"], env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0 and "NOISY" not in proc.stdout
    assert any(a["name"] == "noisy" for a in json.loads(subprocess.run(
        [sys.executable, "-m", "resolver", "kernels", "--format", "json"], env=env, capture_output=True, text=True,
        timeout=120, check=True).stdout)["adapters"])


def test_a_plugin_slow_to_import_is_still_probed(plugins, monkeypatch):
    """The probe's child imports the plugin again: the probe's deadline starts after that import."""
    monkeypatch.setattr(registry_module, "PROBE_TIMEOUT", 1.0)
    plugins({"slow_import": "import time\ntime.sleep(1.5)\n" + ADAPTER.format(name="slow-import",
                                                                            probe='Probe(True, "2", "found")')},
            "slow = slow_import:ADAPTER\n")
    from resolver.adapters import Probe

    assert registry().errors == [] and registry().probes()["slow-import"] == Probe(True, "2", "found")


def test_a_rule_pack_env_name_with_a_trailing_newline_is_refused(rules_dir):
    directory = rules_dir({"env.yaml": 'schema: resolver/1\nrules:\n  - {id: env.evil, kind: env, doc: d, '
                                       'name: "EVIL\\n", default: x, help: h}\n'})
    code, _, err = _cli(["--rules", directory, *LLAMA, "--format", "env"])
    assert code == 2 and "EVIL" in err


def test_the_null_device_is_an_empty_batch():
    code, out, err = _cli(["--batch", os.devnull])
    assert (code, out) == (0, "") and "batch: 0 resolved" in err


def test_workers_start_from_a_deleted_working_directory(tmp_path):
    batch = tmp_path / "one.jsonl"
    batch.write_text(OK_LINE + "\n")
    gone = tmp_path / "gone"
    gone.mkdir()
    # as the console script runs: no working-directory entry ('') on sys.path
    code = ("import os, sys; sys.path.remove(''); os.chdir(sys.argv[1]); os.rmdir(sys.argv[1]); "
            "from resolver.entry import main; sys.argv[1:] = sys.argv[2:]; sys.exit(main())")
    proc = subprocess.run([sys.executable, "-c", code, str(gone), "--batch", str(batch), "--jobs", "2"],
                          capture_output=True, text=True, env=ENV, timeout=120, check=False)
    assert proc.returncode == 0 and json.loads(proc.stdout)["id"] == "ok", proc.stderr[-2000:]
