"""What the process shows the operator: terminal-safe text, whole writes, interrupts at safe points.

A model config, a batch ``id``, a flag value or a rule file can carry control characters (an
escape sequence that clears the screen, a bell, a C1 control, a newline starting a fake line);
printed raw, they could hide or fake a report.  :func:`escape` makes them visible.  Text laid
out from quoted pieces escapes each piece whole (the text renderer, whose colour codes must
survive, and the batch's ``--explain`` lines); :class:`Output` escapes everything else the
command line writes, keeping the newlines and tabs of its layout.
"""
from __future__ import annotations

# _signal: the C functions behind signal.signal and signal.getsignal, whose public wrappers
# turn every handler into an enum through a failing lookup: with them, holding the signals
# around a resolution cost 60 us instead of 10-15 us
import _signal
import io
import os
import re
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from .errors import ResolverError

__all__ = ["Output", "OutputError", "Terminated", "escape", "signals_deferred"]

# C0 controls, DEL, C1 controls; and lone surrogates (the undecodable bytes of an argument or
# a batch file), which a UTF-8 stream refuses to encode.  _UNSAFE_IN_LAYOUT spares newline and tab.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_UNSAFE_IN_LAYOUT = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")

_DEFERRED = (signal.SIGINT, signal.SIGTERM)


def escape(text: str, layout: bool = False) -> str:
    """``text`` with each control character written as ``\\uXXXX``; with ``layout`` (a whole
    message, laid out by us), newlines and tabs are kept.

    That form is visible on a terminal and is also a valid JSON string escape of the same
    character, so escaping JSON output keeps it valid and equal.
    """
    return (_UNSAFE_IN_LAYOUT if layout else _UNSAFE).sub(lambda m: f"\\u{ord(m.group()):04x}", text)


@contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM until the block ends, then hand them to the handlers in place.

    For code that must not be left halfway: a durable-rules call (an exception raised inside
    its Python glue leaves its C state half-updated, and a later call segfaults), or the write
    of one output line.  Python runs signal handlers only on the main thread, and only there
    may they be changed: on another thread a signal cannot interrupt the block anyway.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    # None: a handler installed outside Python, which could not be put back; SIG_IGN: nothing to hold
    held = [s for s in _DEFERRED if _signal.getsignal(s) not in (None, _signal.SIG_IGN)]
    # a handler that records: a signal another thread takes still has its handler run on this one
    previous = [(s, _signal.signal(s, lambda signum, _frame: caught.append(signum))) for s in held]
    # blocked on this thread: a signal would cut a blocking write short, and CPython's buffered
    # writer then drops the rest of the data (measured: 24 KiB of a 40 KiB line written)
    mask = _signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        for s, handler in previous:
            _signal.signal(s, handler)
        _signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # a blocked signal is handled here, by its own handler
        for signum in dict.fromkeys(caught):  # once each, in arrival order
            signal.raise_signal(signum)  # its handler runs now: SIGINT raises KeyboardInterrupt here


class Terminated(BaseException):
    """SIGTERM, raised where it lands (the command line installs the handler), as KeyboardInterrupt is for
    SIGINT: not an error of the run, and never to be swallowed by code that catches BaseException."""


class OutputError(ResolverError):
    """The output cannot be written (a full disk, say): a clean exit 2, not a traceback."""


class Output(io.TextIOBase):
    """A text stream whose every write is escaped, whole, and failure-proof.

    Each write is flushed at once with SIGINT/SIGTERM held, so a reader never sees half a line
    and an interrupt lands between lines (a write blocked by a reader that neither reads nor
    closes holds the interrupt until it can go on).  When the reader goes away (a broken pipe), later
    writes are dropped and ``broken`` is set: the run keeps its exit status.  Any other write
    error (ENOSPC) raises :class:`OutputError`, once.  Either way the stream's descriptor is
    then pointed at /dev/null, as the Python documentation recommends for SIGPIPE, so the
    interpreter's last flush of what stayed buffered cannot fail again at exit.
    """

    def __init__(self, stream: TextIO):
        super().__init__()
        self.stream = stream
        self.broken = False

    @classmethod
    def of(cls, stream: TextIO | Output) -> Output:
        return stream if isinstance(stream, Output) else cls(stream)

    def isatty(self) -> bool:
        return self.stream.isatty()

    def write(self, text: str) -> int:
        self.write_safe(escape(text, layout=True))
        return len(text)

    def write_safe(self, text: str) -> None:
        """Write ``text`` that is already terminal-safe (the text renderer's, with its colour codes)."""
        if self.broken:
            return
        with signals_deferred():
            try:
                self.stream.write(text)
                self.stream.flush()
            except OSError as exc:
                self.broken = True
                _to_devnull(self.stream)
                if not isinstance(exc, BrokenPipeError):
                    raise OutputError(f"cannot write output: {exc.strerror or exc}") from None


def _to_devnull(stream: TextIO) -> None:
    try:
        fd = stream.fileno()
    except (OSError, ValueError):  # not backed by a descriptor (a StringIO), or closed
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)
