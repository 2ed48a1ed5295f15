"""Bounded reading of untrusted input: files, paths and JSON.

Everything the resolver reads from the user (a model config, rule files, batch lines) goes
through here, so that no input can block the process, exhaust its memory or escape as an
internal error: a file must be a regular file under a size cap (a FIFO or a device is refused
without being read), a path may not hold a NUL byte, and JSON is parsed with caps on nesting
depth and on integer length.  Every refusal is an :class:`~resolver.errors.InputError`.
"""
from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable, Iterator
from typing import Any, TextIO

from .errors import InputError

__all__ = [
    "absolute_path",
    "MAX_FILE_BYTES",
    "MAX_INT_DIGITS",
    "MAX_JSON_DEPTH",
    "MAX_DROPPED_CHARS",
    "MAX_LINE_CHARS",
    "UnreadableFile",
    "bounded_lines",
    "checked_path",
    "file_kind",
    "file_problem",
    "parse_json",
    "read_text",
]

#: a model config.json (real ones are kilobytes); parsing and checking 16 MiB of JSON takes ~2 s
MAX_FILE_BYTES = 16 * 2**20
#: bytes of one rule file: composing YAML costs ~1.5 s per MiB, and shipped files are under 20 KB
MAX_RULE_FILE_BYTES = 2**20
#: JSON nesting; real configs and requests are a few levels deep
MAX_JSON_DEPTH = 64
#: digits of one JSON integer (Python refuses over 4300 with a bare ValueError; real values have < 20)
MAX_INT_DIGITS = 100
#: one batch request line
MAX_LINE_CHARS = 2**20


class UnreadableFile(InputError):
    """A file the resolver refuses to read, and why (``reason`` is phrased without the path)."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def checked_path(path: object, what: str) -> str:
    """``path`` as a str the operating system accepts, else InputError naming ``what`` (e.g. ``--rules``)."""
    if not isinstance(path, (str, os.PathLike)):
        raise InputError(f"{what}: expected a path, got {type(path).__name__}")
    try:
        raw = os.fsencode(path)
    except (UnicodeError, TypeError):  # e.g. a lone surrogate given through the API
        raise InputError(f"{what}: the path {path!r} cannot be encoded for the file system") from None
    if b"\0" in raw:
        raise InputError(f"{what}: the path {path!r} contains a NUL byte")
    return os.fsdecode(raw)


def absolute_path(path: str, what: str) -> str:
    """``os.path.abspath(path)``, else InputError naming ``what``: a relative path cannot be placed when the
    working directory has been deleted (``getcwd`` fails)."""
    try:
        return os.path.abspath(path)
    except OSError:
        raise InputError(f"{what}: {path!r} is relative, and the working directory no longer exists; give an "
                         "absolute path") from None


def file_kind(mode: int) -> str:
    """What a file of ``mode`` is, in words ("a FIFO", "a character device", ...)."""
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _refusal(st: os.stat_result, limit: int) -> str | None:
    if not stat.S_ISREG(st.st_mode):
        return f"not a regular file ({file_kind(st.st_mode)})"
    if st.st_size > limit:
        return f"larger than the {_size(limit)} limit ({st.st_size} bytes)"
    return None


def _size(n: int) -> str:
    return f"{n // 2**20} MiB" if n % 2**20 == 0 else f"{n} bytes"


def file_problem(path: str, limit: int = MAX_FILE_BYTES) -> str | None:
    """Why ``path`` would be refused, from ``stat`` alone (nothing is opened), or None."""
    try:
        return _refusal(os.stat(path), limit)
    except FileNotFoundError:
        return "no such file"
    except (OSError, ValueError) as exc:
        return getattr(exc, "strerror", None) or str(exc)


def read_text(path: str, limit: int = MAX_FILE_BYTES) -> str:
    """The UTF-8 text of the regular file ``path``, at most ``limit`` bytes; else UnreadableFile."""
    path = checked_path(path, "file")
    # stat before opening: opening some devices has effects of its own
    problem = file_problem(path, limit)
    if problem is not None:
        raise UnreadableFile(path, problem)
    try:
        # O_NONBLOCK: if the path became a FIFO since the stat, opening it must not wait for a writer
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        reason = "no such file" if isinstance(exc, FileNotFoundError) else exc.strerror or str(exc)
        raise UnreadableFile(path, reason) from None
    with os.fdopen(fd, "rb") as fh:
        try:
            problem = _refusal(os.fstat(fd), limit)  # what was actually opened decides
            if problem is None:
                data = fh.read(limit + 1)  # st_size can lie (/proc files say 0): the read is capped too
        except OSError as exc:  # the read itself can fail: EIO (/proc/self/mem), ENOMEM (some /proc files)
            raise UnreadableFile(path, exc.strerror or str(exc)) from None
        if problem is not None:
            raise UnreadableFile(path, problem)
        if data is None:  # opened without blocking, and nothing to read yet (/proc/kmsg): no file to wait on
            raise UnreadableFile(path, "no data without waiting (not a regular file's contents)")
    if len(data) > limit:
        raise UnreadableFile(path, f"larger than the {_size(limit)} limit")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnreadableFile(path, f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})") from None


class _TooLong(Exception):
    def __init__(self, digits: int):
        self.digits = digits


def _parse_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:  # checked before int() does quadratic work or raises a bare ValueError
        raise _TooLong(digits)
    return int(text)


def _depth(value: Any) -> int:
    """Nesting depth of parsed JSON, up to MAX_JSON_DEPTH + 1.

    Level by level rather than recursively (a recursive walk could itself overflow), with list
    comprehensions: 16 MiB of JSON is walked in about a second.
    """
    level: list[Any] = [value]
    depth = 0
    while depth <= MAX_JSON_DEPTH:
        level = [node for node in level if isinstance(node, (dict, list))]
        if not level:
            break
        depth += 1
        level = [child for node in level for child in (node.values() if isinstance(node, dict) else node)]
    return depth


def parse_json(text: str, what: str) -> Any:
    """``json.loads`` with caps on depth and integer length (InputError naming ``what``).

    A syntax error stays a ``json.JSONDecodeError`` so each caller reports it its own way.
    """
    try:
        value = json.loads(text, parse_int=_parse_int)
    except _TooLong as exc:
        raise InputError(f"{what}: an integer of {exc.digits} digits (the limit is {MAX_INT_DIGITS})") from None
    except RecursionError:  # the C parser refuses nesting beyond the recursion limit this way
        value = None
        too_deep = True
    else:
        too_deep = _depth(value) > MAX_JSON_DEPTH
    if too_deep:
        raise InputError(f"{what}: JSON nested deeper than {MAX_JSON_DEPTH} levels")
    return value


#: characters of one over-long line read past the cap and dropped before the source is refused as not
#: line-oriented (``/dev/zero`` through a pipe has no newline at all)
MAX_DROPPED_CHARS = 16 * MAX_LINE_CHARS


def bounded_lines(stream: TextIO | Iterable[str], limit: int = MAX_LINE_CHARS,
                  drop: int = MAX_DROPPED_CHARS) -> Iterator[str]:
    """The lines of ``stream``, never holding more than ``limit + 1`` characters of one line.

    An over-long line is cut to ``limit + 1`` characters (the rest is read and dropped), so a
    line check can refuse it by its length; a stream without newlines (``/dev/zero``) cannot
    exhaust memory, nor keep the reader busy: past ``drop`` more characters without a newline
    it is not lines at all, an InputError.
    """
    readline = getattr(stream, "readline", None)
    if readline is None:  # a list of lines (tests, the API): already in memory
        yield from stream
        return
    while True:
        line = readline(limit + 1)
        if not line:
            return
        if len(line) > limit and not line.endswith("\n"):
            rest, dropped = line, 0
            while rest and not rest.endswith("\n"):  # drop the remainder of this line
                rest = readline(limit + 1)
                dropped += len(rest)
                if dropped > drop:
                    raise InputError(f"no newline in {(dropped + len(line)) // 2**20} MiB: the input is not "
                                     "JSON Lines (one request per line)")
        yield line
