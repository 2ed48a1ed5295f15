"""``resolve``: the operator's command line (flags: docs/options.md).

Exit status: 0 resolved, 1 conflict, 2 bad input (unknown flag or value, bad model config,
unknown platform, broken rule files) or output that cannot be written (a full disk), 3 an
internal error (a bug; its traceback is printed), 130 interrupted (Ctrl-C), 143 terminated
(SIGTERM).  No traceback for a user mistake; an internal bug keeps its traceback.

Output goes through :class:`~resolver.terminal.Output`: control characters are escaped, each
write is whole, and a closed pipe (``resolve ... | head -1``) leaves the exit status what the
run made it (in batch mode: the worst of the lines resolved until then).
"""
from __future__ import annotations

import json
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import replace
from typing import Any, TextIO, cast

from .argv import UsageError, build_parser, launch_request, parse, pre_rules, suggest
from .core import Engine, LaunchRequest, get_engine, resolve
from .errors import ConflictError, InputError, ResolverError, RuleFileError, RuleFileErrors
from .explain import Style, render_text, to_json_dict
from .jobs import plan_jobs
from .terminal import Output, OutputError, Terminated, escape

__all__ = ["build_parser", "launch_request", "main"]

EXIT_OK, EXIT_CONFLICT, EXIT_INPUT, EXIT_INTERNAL = 0, 1, 2, 3
# the shell's status for a run ended by a signal: 128 + the signal's number
EXIT_INTERRUPTED, EXIT_TERMINATED = 128 + signal.SIGINT, 128 + signal.SIGTERM


def _emit(res, ns, out: Output, err: Output) -> int:
    only = ns.explain if isinstance(ns.explain, str) else None
    if only and only not in res.pack.options:
        raise InputError(f"--explain {only}: no such option.{suggest(only, res.pack.options)}")
    explain = bool(ns.explain) or ns.verbose
    if only:
        res.answer_why_not(only)  # each value it lost, typed instead and resolved again
    if ns.format == "json":
        out.write(json.dumps(to_json_dict(res, explain=explain, why_not=(only,) if only else ()), indent=2,
                             sort_keys=False) + "\n")
    elif ns.format == "args" and not res.conflicts:
        from .launch_line import launch_argv, shell_line

        out.write(shell_line(launch_argv(res)) + "\n")
    elif ns.format == "env" and not res.conflicts:
        from .launch_line import export_lines

        out.write("".join(line + "\n" for line in export_lines(res)))
    elif ns.format in ("args", "env"):
        # nothing to paste: say why where a script reading stdout will not take it as a command
        err.write_safe(render_text(res, explain=explain, only=only, style=Style.for_stream(err, ns.color),
                                   verbose=ns.verbose))
    else:
        # render_text escapes what it quotes itself: escaping here would break its colour codes
        out.write_safe(render_text(res, explain=explain, only=only, style=Style.for_stream(out, ns.color),
                                   verbose=ns.verbose))
    if res.status == "unchecked" and ns.format in ("args", "env"):  # the line is printed; say why the status is 1
        err.write(f"resolve: {len(res.not_checked)} SGLang checks were not evaluated (--require-all-checks): "
                  f"{', '.join(dict.fromkeys(c.id for c in res.not_checked))}\n")
    return exit_status(res)


def exit_status(res) -> int:
    """1 for a conflict, or for SGLang checks left unevaluated when all were required; else 0."""
    return EXIT_OK if res.status == "resolved" else EXIT_CONFLICT


def _single(engine: Engine, ns, out: Output, err: Output) -> int:
    launch = launch_request(engine, ns)
    res = resolve(engine, launch, fixes=not ns.no_fixes)
    if ns.why_not:
        return _why_not(engine, res, launch, ns, out)
    return _emit(res, ns, out, err)


def _why_not(engine: Engine, res, launch: LaunchRequest, ns, out: Output) -> int:
    """``--why-not OPTION=VALUE``: resolve again with VALUE typed, and say what stands against it: the conflicts
    it raises, else the defaults that did not pick it (resolver/why_not.py).  The exit status is the request's own."""
    from .explain import _conflicts, describe
    from .outcome import show_value
    from .why_not import why_not

    if ns.format != "text":
        raise InputError("--why-not answers in text; for the same answer as data use --explain OPTION --format json, "
                         "which lists every value that lost and what removed it")
    name, sep, value = ns.why_not.partition("=")
    options = engine.pack.options
    if not sep or name not in options or options[name].env or options[name].no_cli:
        raise InputError(f"--why-not expects OPTION=VALUE with an option the rules check, got '{ns.why_not}'."
                         f"{suggest(name, [n for n, o in options.items() if not o.env and not o.no_cli])}")
    flag = options[name].flag
    trial = resolve(engine, replace(launch, args={**launch.args, name: value}, flags={**launch.flags, name: flag}),
                    fixes=not ns.no_fixes)
    style = Style.for_stream(out, ns.color)
    typed = trial.request.args.get(name, value)
    now = res.values.get(name)
    lines = style.wrap(f"why not {name} = {show_value(typed)}? (the request gives {name} = {show_value(now)}"
                       f"{'' if res.ok else ', with conflicts'})", "", "  ")
    changed = [a for a in trial.derivations[name].adjustments if not a.normalize]
    as_typed = flag if typed is True else f"{flag} {value}"
    decided = res.derivations[name]
    if typed == now and not res.conflicts:
        by = "you typed it" if decided.source == "user" else f"{decided.source} rule {decided.rule}"
        lines += style.wrap(f"{name} = {show_value(typed)} is what the request resolves to ({by})", "", "  ")
    elif trial.conflicts:
        lines += [f"with {as_typed} typed, the request raises:", ""] + _conflicts(trial, style)
    elif changed:
        lines += style.wrap(f"with {as_typed} typed, the request resolves, but {changed[-1].rule.id} changes it to "
                            f"{show_value(trial.values[name])}: {changed[-1].message}", "", "  ")
    else:
        lines += style.wrap(f"with {as_typed} typed, the request resolves; it is not picked because:", "", "  ")
        loser = next((w for w in why_not(res, name, values=[typed]) if w.value == typed), None)
        said = describe(loser) if loser is not None else (
            f"you typed {name} = {show_value(now)}" if decided.source == "user" else "no default proposes it here")
        lines += style.wrap(said, "  - ", "    ")
    out.write_safe("\n".join(lines) + "\n")
    return exit_status(res)


#: what each request line says for itself: given on the command line with --batch it would be dropped
#: (flags the batch applies to every line: --strict, --require-known-kernels, --require-all-checks, --no-fixes
#: and --explain)
_PER_REQUEST: tuple[tuple[str, str, Any], ...] = (
    ("--platform", "platform", "auto"), ("--compute-capability", "compute_capability", None),
    ("--gpu-memory-gb", "gpu_memory_gb", None), ("--vendor", "vendor", "nvidia"),
    ("--model-config", "model_config", None), ("--model-arch", "model_arch", None),
    ("--check-installed", "check_installed", False), ("--gpus-per-node", "gpus_per_node", None),
    ("--env", "env", []), ("--installed", "installed", []), ("--why-not", "why_not", None))


def _batch_refusals(ns) -> list[str]:
    """The command-line flags that say something about one launch, given with --batch."""
    given = [flag for flag, dest, default in _PER_REQUEST if getattr(ns, dest) != default]
    given += [ns._flags[name] for name in sorted(ns._flags)]  # launch options (SGLang flags)
    if isinstance(ns.explain, str):
        given.append(f"--explain {ns.explain}")
    if ns.format in ("args", "env"):
        given.append(f"--format {ns.format}")
    return given


def _null(found: os.stat_result) -> bool:
    """Whether a file is the null device: an empty batch (scripts pass /dev/null for "no requests")."""
    try:
        null = os.stat(os.devnull)
    except OSError:
        return False
    return (found.st_dev, found.st_ino) == (null.st_dev, null.st_ino) or (
        found.st_rdev != 0 and found.st_rdev == null.st_rdev)


def _is_null_device(stream) -> bool:
    try:
        return _null(os.fstat(stream.fileno()))
    except (OSError, ValueError):
        return False


def _batch(engine: Engine, ns, out: Output, err: Output) -> int:
    import io
    import stat

    from .safe_io import bounded_lines, checked_path, file_kind
    from .tools.batch import run_batch

    refused = _batch_refusals(ns)
    if refused:
        raise InputError(f"--batch reads each launch from its request line; {', '.join(refused)} would not apply "
                         "to them: put it in each line ('platform', 'args', 'env', 'installed', ...) or drop it")

    def run(stream) -> int:
        # a batch source is a file, a pipe or a terminal: a device such as /dev/zero or /dev/urandom is
        # refused unread (it would never end); lines are read with a cap, and undecodable bytes become an
        # error on their own line, not a crash of the whole batch
        try:
            mode = os.fstat(stream.fileno()).st_mode
        except (OSError, ValueError):  # not backed by a descriptor (a test's StringIO): lines in memory
            mode = stat.S_IFIFO
        if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stream.isatty()
                or _is_null_device(stream)):
            raise InputError(f"--batch: {'standard input' if ns.batch == '-' else ns.batch} is not a file or a pipe "
                             f"({file_kind(mode)}); give a JSON Lines file, '-' for a pipe, or <(command)")
        return run_batch(engine, bounded_lines(stream), out, err, explain=bool(ns.explain), strict=ns.strict,
                         require_known_kernels=ns.require_known_kernels, require_all_checks=ns.require_all_checks,
                         fixes=not ns.no_fixes, jobs=plan_jobs(ns.jobs))

    if ns.batch == "-":
        raw = getattr(sys.stdin, "buffer", None)  # None when stdin was replaced by a text stream
        return run(sys.stdin if raw is None else io.TextIOWrapper(raw, encoding="utf-8", errors="surrogateescape"))
    try:
        path = checked_path(ns.batch, "--batch")
        found = os.stat(path)  # before opening: opening a device can have effects of its own
        mode = found.st_mode
        if (stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISDIR(mode)) and not _null(found):
            raise InputError(f"--batch: {ns.batch} is not a file or a pipe ({file_kind(mode)})")
        # a FIFO is a fair batch source (process substitution): only the lines are bounded; no O_NONBLOCK,
        # as a FIFO's writer may come later
        fh = open(path, encoding="utf-8", errors="surrogateescape")
    except OSError as exc:
        raise InputError(f"--batch: cannot read {ns.batch}: {exc.strerror}") from None
    with fh:
        return run(fh)


def _raise_terminated(signum, frame):
    raise Terminated


@contextmanager
def _sigterm_raises() -> Iterator[None]:
    # only the main thread may set a handler; one that someone else installed stays in place
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) != signal.SIG_DFL:
        yield
        return
    signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def main(argv: list[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    safe_out, safe_err = Output.of(out or sys.stdout), Output.of(err or sys.stderr)
    # an interrupt lands between two output writes and outside any engine call (both hold
    # signals), so what was written is whole lines, and the engine is left consistent
    try:
        with _sigterm_raises():
            return _run(argv, safe_out, safe_err)
    except KeyboardInterrupt:
        _last_word(safe_err, "resolve: interrupted\n")
        return EXIT_INTERRUPTED
    except Terminated:
        _last_word(safe_err, "resolve: terminated\n")
        return EXIT_TERMINATED
    except OutputError:
        # neither the answer nor the error about it could be written (a full disk on both streams):
        # the status is all that is left, and it must not read as a conflict
        return EXIT_INPUT


def _last_word(err: Output, text: str) -> None:
    with suppress(OutputError):
        err.write(text)


def _report(err: Output, lines: tuple[str, ...] | list[str]) -> None:
    """An error, each of its lines escaped whole: a newline inside one is input the user gave (a flag
    value typed with one), which must not start a line that reads as the resolver's own."""
    err.write_safe("".join(f"{'resolve: error: ' if i == 0 else ''}{escape(line)}\n" for i, line in enumerate(lines)))


def _run(argv: list[str], out: Output, err: Output) -> int:
    try:
        from .commands import SUBCOMMANDS

        if argv and argv[0] in SUBCOMMANDS:
            return SUBCOMMANDS[argv[0]](argv[1:], cast(TextIO, out))
        engine = get_engine(pre_rules(argv))
        if not argv or argv in (["-h"], ["--help"]) or "-h" in argv or "--help" in argv:
            build_parser(engine.pack).print_help(out)
            return EXIT_OK if argv else EXIT_INPUT
        ns = parse(argv, engine.pack)
        if ns.batch:
            return _batch(engine, ns, out, err)
        if ns.jobs != 1:
            raise InputError("--jobs is for --batch (and the subcommands lint, diff and matrix): "
                             "one launch is one resolution")
        # one launch, one resolution: matched in Python, where durable-rules' rulesets would cost more to build
        # than the resolution (Engine.one_shot); --batch keeps durable-rules, built once for every line
        return _single(engine.one_shot(), ns, out, err)
    except UsageError as exc:
        _report(err, (str(exc),))
        return EXIT_INPUT
    except ConflictError as exc:  # pragma: no cover - resolve does not raise it
        err.write(f"resolve: {exc}\n")
        return EXIT_CONFLICT
    except OutputError as exc:  # the answer could not be written: say so where errors go, if that can be written
        _report(err, (str(exc),))
        return EXIT_INPUT
    except ResolverError as exc:
        _report(err, exc.lines() if isinstance(exc, (RuleFileError, RuleFileErrors)) else (str(exc),))
        return EXIT_INPUT
    except Exception:  # an internal bug: keep the traceback, and never exit 1 (which means "conflict")
        import traceback

        with suppress(OutputError):  # unwritable stderr: the status still says "internal error"
            traceback.print_exc(file=err)
            err.write("resolve: internal error (a bug in launch-resolver, not in your input); please report it\n")
        return EXIT_INTERNAL
