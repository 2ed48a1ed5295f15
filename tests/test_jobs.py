"""--jobs and the progress bar of the long commands (lint's sweep, diff, matrix, --batch).

Whatever the number of processes, the output is the same, in the same order; the bar shows on a
terminal and nowhere else; Ctrl-C still ends the run with 130 and ends the workers too.
"""
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from resolver import jobs as jobs_module
from resolver.api import get_engine
from resolver.cli import main
from resolver.jobs import MIN_ITEMS_PER_JOB, Progress, plan_jobs, run_ordered
from resolver.loader import default_rules_dir
from resolver.tools.batch import run_batch
from resolver.tools.matrix import survey
from resolver.tools.sweep import requests, run_sweep

from .conftest import ROOT, SEED_ARGS
from .test_diff import GRID, LLAMA
from .test_matrix import SMALL_PACK

ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p))


class _Terminal(io.StringIO):
    """A captured stream that says it is a terminal."""

    def isatty(self):
        return True


def _square(offset, item):
    return item * item + offset


# --- the runner -------------------------------------------------------------------------------------------


def test_results_come_in_the_order_of_the_items_for_any_number_of_jobs():
    items = list(range(23))
    expected = [i * i + 5 for i in items]
    assert list(run_ordered(lambda: 5, (), _square, items, 1)) == expected
    # chunks of 2 on 2 processes: 12 chunks, more than are kept in flight, finishing in any order
    assert list(run_ordered(int, ("5",), _square, iter(items), 2, chunk=2)) == expected


def test_plan_jobs():
    assert plan_jobs(3, 10) == min(3, jobs_module.usable_cpus())  # asked for: used, even for little work
    assert plan_jobs(10_000) == jobs_module.usable_cpus()  # never more than the CPUs (issue 23 L)
    assert plan_jobs(0, MIN_ITEMS_PER_JOB - 1) == 1  # one worker would cost more than it saves
    assert plan_jobs(None, None) == plan_jobs(0) == jobs_module.usable_cpus()
    assert plan_jobs(0, 10 ** 6) == jobs_module.usable_cpus()
    with pytest.raises(Exception, match="--jobs must be 0"):
        plan_jobs(-1)


@pytest.mark.parametrize("argv", [["lint", "--no-sweep", "--jobs", "-1"], ["matrix", "--jobs", "x"],
                                  ["diff", ".", ".", "--jobs", "-2"], ["--batch", "-", "--jobs", "-1"],
                                  ["--platform", "h100", "--jobs", "2"]])
def test_a_bad_jobs_value_is_an_input_error(argv):
    err = io.StringIO()
    assert main(argv, io.StringIO(), err) == 2
    assert "--jobs" in err.getvalue()


# --- the same output for 1 and 2 jobs ---------------------------------------------------------------------


def test_the_sweep_merges_the_same_report_for_1_and_2_jobs(tmp_path):
    # a pack whose conflict has no fix on Llama on Hopper: findings with counts and a first example,
    # which the parallel sweep must pick as the serial one does
    rules = tmp_path / "rules"
    shutil.copytree(default_rules_dir(), rules)
    shutil.copy(os.path.join(ROOT, "tests", "fixtures", "lint", "sweep", "sweep-no-fix.yaml"), rules)
    pack = get_engine(str(rules)).pack
    grid = [r for r in requests(pack) if r["platform"] == "sm90" and r["model_kind"] == "mha"]
    # a backend with no KV dtype, then fp4 KV: findings whose order of first sight a merge out of order changes
    picked = grid[1:4] + grid[-4:]

    def only(r):
        return r in picked

    reports = [run_sweep(str(rules), pack, jobs, only, chunk=2) for jobs in (1, 2)]
    assert [r.jobs for r in reports] == [1, 2]
    first, second = ((r.requests, r.resolved, r.conflicts, r.fixes_checked, list(r.problems.items())) for r in reports)
    assert first == second
    assert first[0] == 7 and len(first[4]) > 2, "the sweep must find something for the comparison to mean anything"


def _diff(tmp_path, *extra):
    new = tmp_path / "new-rules"
    if not new.exists():
        shutil.copytree(default_rules_dir(), new)
        text = (new / "attention.yaml").read_text()
        old = "    set: {attention_backend: fa3}\n    priority: 49"
        assert text.count(old) == 1
        (new / "attention.yaml").write_text(text.replace(old,
                                                         "    set: {attention_backend: flashinfer}\n    priority: 49"))
    requests_file = tmp_path / "requests.jsonl"
    requests_file.write_text("".join(json.dumps(r) + "\n" for r in GRID + [{"platform": "nowhere", "model": LLAMA}]))
    out = io.StringIO()
    code = main(["diff", default_rules_dir(), str(new), "--requests", str(requests_file), *extra], out, io.StringIO())
    return code, out.getvalue()


@pytest.mark.parametrize("form", ["text", "json"])
def test_diff_says_the_same_for_1_and_2_jobs(tmp_path, form):
    one = _diff(tmp_path, "--format", form, "--jobs", "1")
    assert one[0] == 2 and "now" in one[1]  # changes, and an invalid request
    assert _diff(tmp_path, "--format", form, "--jobs", "2") == one


def test_matrix_is_the_same_for_1_and_2_jobs(rules_dir):
    engine = get_engine(rules_dir({"test.yaml": SMALL_PACK}, with_shipped_options=True))
    one, two = survey(engine, jobs=1), survey(engine, jobs=2)
    assert one.defaults == two.defaults and list(one.defaults) == list(two.defaults)
    assert one.choices == two.choices and one.choices


def test_the_matrix_command_takes_jobs(rules_dir):
    pack = rules_dir({"test.yaml": SMALL_PACK}, with_shipped_options=True)
    pages = []
    for jobs in ("1", "2"):
        out = io.StringIO()
        assert main(["matrix", "--rules", pack, "--format", "json", "--jobs", jobs], out, io.StringIO()) == 0
        pages.append(out.getvalue())
    assert pages[0] == pages[1]


BATCH = [json.dumps({"id": f"b{i}", "platform": p, "model_arch": arch, "args": args})
         for i, (p, arch, args) in enumerate(
             (p, arch, args) for p in ("h100", "b200", "mi300x")
             for arch in ("LlamaForCausalLM", "DeepseekV3ForCausalLM")
             for args in ({}, {"attention_backend": "flashmla"}, {"kv_cache_dtype": "fp8_e4m3"}))]
BATCH += ["not json", "", json.dumps({"platform": "nowhere"}), json.dumps({"id": "seed", "platform": "h100",
          "model_arch": "DeepseekV32ForCausalLM", "args": SEED_ARGS})]


def _batch(jobs, err=None):
    out, err = io.StringIO(), err if err is not None else io.StringIO()
    code = run_batch(get_engine(), (line + "\n" for line in BATCH), out, err, explain=True, jobs=jobs)
    return code, out.getvalue(), err.getvalue()


def test_a_batch_writes_the_same_lines_in_the_same_order_for_1_and_2_jobs():
    one = _batch(1)
    assert one[0] == 2 and len(one[1].splitlines()) == len(BATCH) - 1  # the blank line has no result
    assert [json.loads(line)["id"] for line in one[1].splitlines()][-1] == "seed"
    assert "conflicts by rule" in one[2]
    assert _batch(2) == one


# --- progress: on a terminal only -------------------------------------------------------------------------


def test_progress_shows_on_a_terminal_and_nowhere_else(tmp_path, monkeypatch):
    pytest.importorskip("tqdm")
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    quiet = _diff(tmp_path, "--jobs", "1")
    assert sys.stderr.getvalue() == ""
    monkeypatch.setattr(sys, "stderr", _Terminal())
    assert _diff(tmp_path, "--jobs", "1") == quiet  # stdout: the same, without a trace of the bar
    drawn = sys.stderr.getvalue()
    assert "diff:" in drawn and f"0/{len(GRID) + 1}" in drawn and "\r" in drawn


def test_a_batch_draws_its_bar_on_its_error_stream_when_that_is_a_terminal():
    pytest.importorskip("tqdm")
    plain = _batch(1)
    shown = _batch(1, _Terminal())
    assert shown[:2] == plain[:2]  # the results: the same
    assert " lines" in shown[2] and "\r" in shown[2] and "\r" not in plain[2]
    assert plain[2].splitlines()[-1] in shown[2]  # the explanations and the summary are still there


def test_without_a_terminal_progress_is_nothing():
    with Progress("x", 3) as bar:
        assert not bar.shown
        bar.update()
        with bar.cleared():
            pass


_DRAW = """
import io, sys
from resolver.jobs import Progress
class Terminal(io.StringIO):
    def isatty(self):
        return True
stream = Terminal()
with Progress("x", 3, stream=stream) as bar:
    bar.update(3)
print(repr(stream.getvalue()))
"""


@pytest.mark.parametrize("disable", [None, "1"])
def test_tqdm_disable_turns_the_bar_off(disable):
    pytest.importorskip("tqdm")
    # tqdm reads its TQDM_* variables when it is imported: a fresh process
    env = {k: v for k, v in ENV.items() if k != "TQDM_DISABLE"} | ({"TQDM_DISABLE": disable} if disable else {})
    proc = subprocess.run([sys.executable, "-c", _DRAW], capture_output=True, text=True, check=True, env=env)
    assert (proc.stdout.strip() == "''") == (disable == "1"), proc.stdout


# --- interrupts -------------------------------------------------------------------------------------------


SEED_LINE = json.dumps({"id": "seed", "platform": "h100", "model_arch": "DeepseekV32ForCausalLM", "args": SEED_ARGS})


def _alive(pid: str) -> bool:
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8") as fh:
            return "zombie" not in fh.read()
    except OSError:
        return False


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads the process table in /proc")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_with_2_jobs_exits_like_1_job_and_ends_the_workers(sig):
    # Ctrl-C on a terminal goes to the whole process group: the workers as well as the parent
    with subprocess.Popen([sys.executable, "-m", "resolver", "--batch", "-", "--jobs", "2"], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV, bufsize=0,
                          start_new_session=True) as proc:
        proc.stdin.write(((SEED_LINE + "\n") * 40).encode())
        first = proc.stdout.readline()  # the workers run
        children = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True,
                                  check=False).stdout.split()
        os.killpg(proc.pid, sig)
        out, err = proc.communicate(timeout=60)
    assert (proc.returncode, err.decode()) == ((130, "resolve: interrupted\n") if sig == signal.SIGINT
                                               else (143, "resolve: terminated\n"))
    for line in (first + out).decode().splitlines():
        json.loads(line)
    assert children
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in children)
