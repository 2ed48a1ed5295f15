"""``resolve --batch``: one JSON request per line in, one JSON result per line out, in order.

A malformed line gives ``{"id": ..., "status": "error", "error": ...}`` and the batch goes
on.  The exit status is the worst of the lines (internal error 3 > error 2 > conflict 1, or SGLang checks
not evaluated under --require-all-checks 1 > resolved 0).  A
summary goes to stderr, so stdout stays pure JSON Lines.

Each result line is written whole and flushed at once (:class:`~resolver.terminal.Output`): a
consumer, or an interrupt, never meets half a line.  When the consumer stops reading (a broken
pipe, ``| head -1``), the batch stops: what it would resolve next could not be delivered, and
reading on might wait on a slow producer.  The exit status is then the worst of the lines
resolved so far, the one that could not be written included.
"""
from __future__ import annotations

import json
import sys
import traceback
from typing import Any, TextIO

from ..core import Engine, resolve
from ..errors import InputError, ResolverError
from ..explain import to_json_dict
from ..json_request import REQUEST_KEYS, launch_request
from ..safe_io import MAX_LINE_CHARS, parse_json
from ..terminal import Output, escape

__all__ = ["REQUEST_KEYS", "launch_request", "resolve_line", "run_batch"]

def _check_text(text: str, what: str) -> None:
    """InputError unless ``text`` is valid Unicode: a line read with ``surrogateescape`` holds each byte
    that is not UTF-8 as a lone surrogate (U+DC80-U+DCFF), which the engine and the output refuse."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        code = ord(text[exc.start])
        if 0xDC80 <= code <= 0xDCFF and what == "the line":
            raise InputError(f"the line is not UTF-8 text (byte 0x{code - 0xDC00:02x} "
                             f"at column {exc.start + 1})") from None
        raise InputError(f"{what} is not valid Unicode text (it holds the lone surrogate U+{code:04X})") from None


#: lines in a row that are not JSON requests at all (not text, not JSON, not an object, over the length cap)
#: after which a batch stops: its input is not JSON Lines (``--batch /dev/urandom`` would go on for ever)
MAX_UNREADABLE_RUN = 100
#: the key marking, between resolve_line and run_batch, a line that is no request at all (never written)
_UNREADABLE = "_unreadable"


class _NotARequest(ResolverError):
    """A line that is no JSON request at all (counted towards MAX_UNREADABLE_RUN)."""


def resolve_line(engine: Engine, line: str, strict: bool = False, fixes: bool = True,
                 require_known_kernels: bool = False, explain: bool = False,
                 require_all_checks: bool = False) -> dict[str, Any]:
    """Resolve one batch line into its result object (never raises a ResolverError): the compact JSON form,
    or with ``explain`` the full one (every derivation, fact and origin), as ``resolve --format json``."""
    rid = None
    try:
        try:
            req = _request(line)
        except ResolverError as exc:
            raise _NotARequest(str(exc)) from None
        rid = req.get("id")
        res = resolve(engine, launch_request(req, strict, require_known_kernels, require_all_checks), fixes=fixes)
        return {"id": rid, **to_json_dict(res, explain=explain)}
    except _NotARequest as exc:
        return {"id": None, "status": "error", "error": str(exc), _UNREADABLE: True}
    except ResolverError as exc:
        return {"id": rid, "status": "error", "error": str(exc)}
    except Exception as exc:  # noqa: BLE001 - an internal bug: keep its traceback, keep the batch going
        traceback.print_exc(file=Output(sys.stderr))  # its message may quote the request: escaped
        return {"id": rid, "status": "error", "error": f"internal error: {exc!r}", "internal": True}


def _request(line: str) -> dict[str, Any]:
    """The JSON object of one line, within the caps; else a ResolverError saying why it is none."""
    if len(line) > MAX_LINE_CHARS:  # json.loads would hold it all, and more, in memory
        raise ResolverError(f"the line is longer than the {MAX_LINE_CHARS // 2**20} MiB limit for a request")
    _check_text(line, "the line")  # bytes that are not UTF-8 arrive as lone surrogates (surrogateescape)
    try:
        req = parse_json(line, "the request")  # caps nesting depth and integer length
    except json.JSONDecodeError as exc:
        raise ResolverError(f"not valid JSON: {exc.msg} at column {exc.colno}") from None
    # a JSON escape can spell a lone surrogate too ("\ud800"): no text of a request may hold one
    _check_text(json.dumps(req, ensure_ascii=False), "a string of the request")
    if not isinstance(req, dict):
        raise ResolverError("a request must be a JSON object")
    return req


def _setup(rules: str, strict: bool, fixes: bool, require_known_kernels: bool, explain: bool,
           require_all_checks: bool) -> tuple[Engine, bool, bool, bool, bool, bool]:
    """A worker's context (``--jobs`` > 1): the engine of the batch's rule directory and its settings."""
    from ..api import get_engine

    return get_engine(rules), strict, fixes, require_known_kernels, explain, require_all_checks


def _resolve_numbered(context: tuple[Engine, bool, bool, bool, bool, bool],
                      item: tuple[int, str]) -> tuple[int, dict[str, Any]]:
    engine, strict, fixes, require_known_kernels, explain, require_all_checks = context
    return item[0], resolve_line(engine, item[1], strict, fixes, require_known_kernels, explain, require_all_checks)


def run_batch(engine: Engine, lines, out: TextIO | Output, err: TextIO | Output, explain: bool = False,
              strict: bool = False, fixes: bool = True, require_known_kernels: bool = False, jobs: int = 1,
              require_all_checks: bool = False) -> int:
    """Resolve each line and write its result, in the lines' order.  ``jobs`` > 1: on that many
    processes (each loading the engine's rule directory), reading a few lines per process ahead of
    the one written; 1 (the default): each line is answered before the next is read."""
    from contextlib import closing

    from ..jobs import Progress, run_ordered

    out, err = Output.of(out), Output.of(err)
    counts = {"resolved": 0, "unchecked": 0, "conflict": 0, "error": 0}
    by_rule: dict[str, int] = {}
    worst = 0
    stopped = ""
    unreadable = 0  # lines in a row that were no request at all
    numbered = ((number, line) for number, line in enumerate(lines, 1) if line.strip())
    settings = (strict, fixes, require_known_kernels, explain, require_all_checks)
    with Progress("batch", unit=" lines", stream=err) as bar:
        if jobs > 1:
            results = run_ordered(_setup, (engine.pack.directory, *settings), _resolve_numbered, numbered, jobs,
                                  bar, chunk=1)
        else:  # the engine given, which may not come from a directory
            results = run_ordered(lambda: (engine, *settings), (), _resolve_numbered, numbered, 1, bar)
        with closing(results):  # a batch that stops early ends its workers
            try:
                for number, result in results:
                    unreadable = unreadable + 1 if result.pop(_UNREADABLE, False) else 0
                    if result["status"] == "error" and result["id"] is None:
                        result["line"] = number
                    counts[result["status"]] += 1
                    worst = max(worst, 3 if result.get("internal") else
                                {"resolved": 0, "unchecked": 1, "conflict": 1, "error": 2}[result["status"]])
                    with bar.cleared(out.isatty()):  # json.dumps escapes every control character
                        out.write_safe(json.dumps(result, sort_keys=False) + "\n")
                    for c in result.get("conflicts", ()):
                        by_rule[c["rule"]["id"]] = by_rule.get(c["rule"]["id"], 0) + 1
                    if explain and result["status"] != "resolved":
                        with bar.cleared():
                            _explain_line(result, number, err, engine.pack.options)
                    if out.broken:
                        stopped = "; stopped: the output was closed"
                        break
                    if unreadable >= MAX_UNREADABLE_RUN:
                        stopped = (f"; stopped: {unreadable} lines in a row are not JSON requests (the input is "
                                   "not JSON Lines)")
                        break
            except InputError as exc:  # the input is not lines at all (no newline within the caps)
                stopped, worst = f"; stopped: {exc}", max(worst, 2)
    unchecked = f", {counts['unchecked']} with SGLang checks not evaluated" if counts["unchecked"] else ""
    err.write(f"batch: {counts['resolved']} resolved{unchecked}, {counts['conflict']} conflicted, "
              f"{counts['error']} failed{stopped}\n")
    if explain and by_rule:
        err.write("conflicts by rule:\n")
        err.writelines(f"  {n:>5} x {rule}\n" for rule, n in sorted(by_rule.items(), key=lambda kv: (-kv[1], kv[0])))
    return worst


def _explain_line(result: dict, number: int, err: Output, options) -> None:
    """Why one request of a fleet did not resolve: each conflict with its rule, root cause and first fix."""
    def say(line: str) -> None:  # one line: a newline in the id or a message must not start another
        err.write_safe(escape(line) + "\n")

    name = result["id"] if result["id"] is not None else f"line {number}"
    if result["status"] == "error":
        say(f"{name}: error: {result['error']}")
        return
    if result["status"] == "unchecked":
        say(f"{name}: {len(result['not_checked'])} SGLang checks not evaluated (--require-all-checks): "
            + ", ".join(dict.fromkeys(c["check"] for c in result["not_checked"])))
        return
    say(f"{name}: conflict")
    for c in result["conflicts"]:
        say(f"  - [{c['rule']['id']}] {c['message']}")
        say(f"    root cause: {c['root_cause']}")
        if c["fixes"]:
            fix = c["fixes"][0]
            removed = " ".join(options[n].flag if n in options else n for n in fix["unset"])
            how = "; ".join(x for x in (" ".join(fix["argv"]), f"remove {removed}" if removed else "") if x)
            say(f"    fix: {how}" + (f" ({len(c['fixes']) - 1} more)" if len(c["fixes"]) > 1 else ""))
