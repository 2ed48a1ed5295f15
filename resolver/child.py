"""Code the resolver does not own, run in a child process under a hard deadline.

A GPU tool, a GPU library's Python binding or a third-party kernel adapter can hang (a driver
call, an import that waits for ever) or hold the interpreter lock in C code, where neither a
timeout in this process nor SIGTERM can reach it.  In a child of its own session it can be
killed, with every process it started, when its time is up; its output is read with a cap.
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass

__all__ = ["MAX_OUTPUT", "ChildFailed", "capture"]

#: bytes of output read from one child; real answers are a few kilobytes
MAX_OUTPUT = 2**20


@dataclass(frozen=True)
class ChildFailed:
    """Why a child gave no answer (it could not start, timed out, printed too much or failed)."""

    reason: str
    timed_out: bool = False  # the deadline passed (the child was killed)


def _kill(proc: subprocess.Popen) -> None:
    try:
        if hasattr(os, "killpg"):  # the whole session: a tool's own children hold the pipe too
            os.killpg(proc.pid, signal.SIGKILL)
        else:  # pragma: no cover - Windows
            proc.kill()
    except OSError:
        pass  # already gone
    with contextlib.suppress(subprocess.TimeoutExpired):  # stuck in the driver (uninterruptible): do not wait
        proc.wait(1.0)


def capture(argv: list[str], timeout: float, env: dict[str, str] | None = None) -> str | ChildFailed:
    """``argv``'s standard output, read for at most ``timeout`` seconds and ``MAX_OUTPUT`` bytes; the
    child and everything it started are killed at the deadline (or on an interrupt of this process)."""
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                start_new_session=True, env=env)
    except OSError as exc:
        return ChildFailed(f"cannot run: {exc.strerror or exc}")
    stdout = proc.stdout
    assert stdout is not None  # stdout=PIPE
    out = bytearray()

    def pump() -> None:  # a thread, so that a blocked read cannot outlast the timeout
        while len(out) <= MAX_OUTPUT:
            chunk = stdout.read1(65536)  # type: ignore[attr-defined]  # stdout=PIPE is a BufferedReader
            if not chunk:
                return
            out.extend(chunk)

    deadline = time.monotonic() + timeout
    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    status = None
    try:
        reader.join(timeout)
        if not reader.is_alive() and len(out) <= MAX_OUTPUT:
            with contextlib.suppress(subprocess.TimeoutExpired):
                status = proc.wait(max(0.0, deadline - time.monotonic()))
    finally:
        if status is None:  # timed out, over the cap, or interrupted (its own session never sees a Ctrl-C)
            _kill(proc)
    reader.join(1.0)  # the pipe closes once the process group is gone
    if not reader.is_alive():
        stdout.close()
    if len(out) > MAX_OUTPUT:
        return ChildFailed(f"printed more than {MAX_OUTPUT // 2**20} MiB")
    if status is None:
        return ChildFailed(f"timed out after {timeout:g}s", timed_out=True)
    if status != 0:
        return ChildFailed(f"exited with status {status}")
    return out.decode("utf-8", errors="replace")  # a device name is no reason to fail
