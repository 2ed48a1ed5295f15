"""Ctrl-C and SIGTERM: never a segfault, never swallowed, never half an output line."""
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

import resolver.engine as engine_module
from resolver.cli import main
from resolver.engine import DurableMatcher
from resolver.model import model_facts
from resolver.platforms import find_platform
from resolver.resolution import Request, run
from resolver.terminal import signals_deferred

from .conftest import ROOT, SEED_ARGS

ENV = dict(os.environ, PYTHONPATH=ROOT)
PYTHON_M = (sys.executable, "-m", "resolver")
# the console script pip installed next to this interpreter (the `resolve` command)
_SCRIPT = os.path.join(os.path.dirname(sys.executable), "resolve")
CONSOLE = [(_SCRIPT,)] if os.path.exists(_SCRIPT) else []
# a conflict with fixes: some 100 ms of resolutions, so that an interrupt can land anywhere in them
SEED_LINE = json.dumps({"id": "seed", "platform": "h100", "model_arch": "DeepseekV32ForCausalLM",
                        "args": SEED_ARGS}) + "\n"


def _request():
    return Request(find_platform("h100"), "--platform h100", model_facts(arch="DeepseekV32ForCausalLM"),
                   dict(SEED_ARGS))


def test_signals_deferred_delivers_after_the_block():
    reached = []
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt), signals_deferred():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.01)  # the signal has arrived; its handler must not have run yet
        reached.append(True)
    assert reached and signal.getsignal(signal.SIGINT) is before


def test_signals_deferred_off_the_main_thread_changes_nothing():
    errors = []

    def work():
        try:
            with signals_deferred():
                pass
        except BaseException as exc:  # noqa: BLE001 - reported to the main thread
            errors.append(exc)

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert errors == []


@pytest.mark.parametrize("raised", [KeyboardInterrupt, SystemExit])
def test_an_interrupt_inside_an_action_propagates_as_itself(engine, monkeypatch, raised):
    """durable-rules catches BaseException in actions (P6): the action keeps it and it is raised as
    itself after the engine call, never turned into an EngineError."""
    matcher = DurableMatcher(engine.compiled)
    expected = run(engine.compiled, matcher, _request())

    def interrupt(matched):
        raise raised

    monkeypatch.setattr(engine_module, "_facts_of", interrupt)
    with pytest.raises(raised):
        run(engine.compiled, matcher, _request())
    monkeypatch.undo()
    assert run(engine.compiled, matcher, _request()) == expected  # the interrupted sid was deleted


def test_ctrl_c_inside_an_action_stops_the_batch_with_130(tmp_path, monkeypatch):
    """Not a line with "status": "error" and the batch going on: the run ends, as interrupted."""
    batch = tmp_path / "r.jsonl"
    batch.write_text(SEED_LINE * 3)

    def interrupt(matched):
        raise KeyboardInterrupt

    monkeypatch.setattr(engine_module, "_facts_of", interrupt)
    out, err = io.StringIO(), io.StringIO()
    assert main(["--batch", str(batch)], out, err) == 130
    assert out.getvalue() == "" and err.getvalue() == "resolve: interrupted\n"


def _signal_batch(sig, delay: float, extra: tuple[str, ...] = (), lines: int = 6, entry=PYTHON_M):
    """Start ``resolve --batch -``, wait for its first result line, wait ``delay``, send ``sig``."""
    # unbuffered: communicate() reads the descriptor, and would miss what a buffered readline read ahead
    with subprocess.Popen([*entry, "--batch", "-", *extra], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV, bufsize=0) as proc:
        # stdin stays open until the signal is sent: a batch that ran out of lines waits in a read
        proc.stdin.write((SEED_LINE * lines).encode())
        first = proc.stdout.readline()  # start-up is over: the batch loop runs
        time.sleep(delay)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    return proc.returncode, (first + out).decode(), err.decode()


def _whole_json_lines(out: str) -> None:
    assert out.endswith("\n")
    for line in out.splitlines():
        json.loads(line)


@pytest.mark.parametrize("delay", [0.0, 0.004, 0.015, 0.04, 0.09])
def test_ctrl_c_in_a_batch_exits_130_after_whole_lines(delay):
    code, out, err = _signal_batch(signal.SIGINT, delay)
    assert code == 130, err  # never -11 (a segfault), 0/1/2 (swallowed) or 3
    assert err == "resolve: interrupted\n"
    _whole_json_lines(out)


def test_ctrl_c_while_a_line_is_being_written_still_ends_with_whole_lines():
    """Nobody reads stdout until after the signal: the batch is blocked writing a line into a full pipe."""
    code, out, err = _signal_batch(signal.SIGINT, 0.3, ("--no-fixes",), lines=100)  # MBs: far more than a pipe holds
    assert code == 130 and err == "resolve: interrupted\n"
    _whole_json_lines(out)


@pytest.mark.parametrize("entry", [PYTHON_M, *CONSOLE])
def test_sigterm_in_a_batch_exits_143_after_whole_lines(entry):
    code, out, err = _signal_batch(signal.SIGTERM, 0.01, entry=entry)
    assert code == 143 and err == "resolve: terminated\n"
    _whole_json_lines(out)


@pytest.mark.parametrize("entry", CONSOLE)
def test_the_resolve_command_exits_130_like_python_m_resolver(entry):
    code, out, err = _signal_batch(signal.SIGINT, 0.01, entry=entry)
    assert code == 130 and err == "resolve: interrupted\n"
    _whole_json_lines(out)


_INTERRUPT_LOOP = """
import json, os, signal, sys
from resolver.api import get_engine, resolve_request
args = json.loads(sys.argv[1])
engine = get_engine()
def seed():
    res = resolve_request(engine, platform="h100", args=args, model_arch="DeepseekV32ForCausalLM")
    return sorted(c.rule.id for c in res.conflicts)
expected = seed()
# a real SIGINT (through its handler), at 100 moments spread over the resolutions and their fixes
signal.signal(signal.SIGALRM, lambda *_: os.kill(os.getpid(), signal.SIGINT))
interrupted = 0
for k in range(100):
    signal.setitimer(signal.ITIMER_REAL, 0.0003 + (k * 0.00137) % 0.03)
    try:
        while True:
            seed()
    except KeyboardInterrupt:
        interrupted += 1
print(json.dumps({"interrupted": interrupted, "same": seed() == expected}))
"""


def test_interrupts_at_many_moments_leave_the_engine_whole():
    """Before the signals were held, this failed on every run: an interrupt came back as a failed
    rule action, durable-rules printed the interrupts it caught, or delete_state segfaulted."""
    proc = subprocess.run([sys.executable, "-c", _INTERRUPT_LOOP, json.dumps(SEED_ARGS)], capture_output=True,
                          text=True, env=ENV, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout) == {"interrupted": 100, "same": True}
    assert proc.stderr == ""  # durable-rules prints nothing about an exception it caught
