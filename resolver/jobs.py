"""Long work on several processes, with progress on a terminal: how ``resolve lint`` (its sweep),
``resolve diff``, ``resolve matrix`` and ``resolve --batch`` run their many resolutions.

:func:`run_ordered` hands each item to ``work(context, item)`` and yields the results **in the
order of the items**, whatever the number of processes: the callers merge them in that order, so
their output is the same for ``--jobs 1`` and ``--jobs 8`` (``tests/test_jobs.py``).  With more
than one job the items go, in small chunks, to a :class:`~concurrent.futures.ProcessPoolExecutor`
of *spawned* workers: a durable-rules engine lives in C memory that a fork would share
half-consistently, so each worker builds its own, once, in its initializer (``setup``).

Interrupts: the workers start with SIGINT and SIGTERM blocked and then ignore SIGINT, so a Ctrl-C
on the terminal (sent to the whole process group) reaches the parent alone, which ends the workers
it started and goes on with its own contract (exit 130, ``resolve: interrupted``).

Progress (:class:`Progress`) is a tqdm bar on stderr, drawn only when stderr is a terminal: never
in a pipe, a file or the output a test captures.  ``TQDM_DISABLE=1`` turns it off (tqdm reads its
``TQDM_*`` variables since 4.66).
"""
from __future__ import annotations

import os
import signal
import sys
from argparse import ArgumentTypeError
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Self, TypeVar

from .errors import InputError, ResolverError
from .terminal import signals_deferred

if TYPE_CHECKING:  # imported where used: the command line starts without them
    from concurrent.futures import Future, ProcessPoolExecutor

__all__ = ["Progress", "add_jobs_argument", "plan_jobs", "run_ordered", "usable_cpus"]

C = TypeVar("C")
T = TypeVar("T")
R = TypeVar("R")

#: the fewest items per worker the default --jobs gives each: starting a worker (a fresh
#: interpreter that imports the resolver and loads the cached rule pack) takes about 1 s on the
#: development machine (0.5 s of CPU), the time of 50 to 70 resolutions without fixes
#: (docs/performance.md, "The long commands")
MIN_ITEMS_PER_JOB = 200


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask, which a container or taskset narrows)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def plan_jobs(jobs: int | None, items: int | None = None) -> int:
    """The processes to use: ``jobs`` as given (``--jobs N``) but never more than the usable CPUs (the
    work is CPU-bound, and each process holds its own engine: 24 processes on 2 CPUs took 2 GB and ran
    no faster), or for 0/None one per usable CPU, then no more than the work pays for
    (:data:`MIN_ITEMS_PER_JOB`; when ``items`` is known)."""
    if jobs is not None and jobs < 0:
        raise InputError("--jobs must be 0 (one per usable CPU) or more")
    n = usable_cpus()
    if jobs:
        return min(jobs, n)
    if items is not None:
        n = min(n, max(1, items // MIN_ITEMS_PER_JOB))
    return n


def _jobs_value(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise ArgumentTypeError(f"must be 0 (one per usable CPU) or more, got '{text}'")
    return value


def add_jobs_argument(parser, default: int, what: str) -> None:
    """The ``--jobs`` option of a subcommand (the same words everywhere)."""
    default_text = "one per usable CPU, as far as the work pays for them" if default == 0 else str(default)
    parser.add_argument("--jobs", type=_jobs_value, default=default, metavar="N",
                        help=f"processes resolving {what} (0: one per usable CPU; default: {default_text}; "
                             "at most one per usable CPU); the output is the same for every N")


class Progress:
    """A progress bar on ``stream`` (default stderr) when it is a terminal; otherwise nothing at all."""

    def __init__(self, what: str, total: int | None = None, unit: str = " requests", stream: Any = None):
        raw = getattr(stream if stream is not None else sys.stderr, "stream", None) or (
            stream if stream is not None else sys.stderr)  # a resolver.terminal.Output escapes \r: write past it
        self._bar: Any = None
        if not _is_terminal(raw):
            return
        try:
            from tqdm import tqdm
        except ImportError:  # a declared dependency; an install without it still works, without the bar
            return
        tqdm.monitor_interval = 0  # no monitor thread: the bar is redrawn from the loop that advances it
        self._bar = tqdm(total=total, desc=what, unit=unit, file=raw, leave=False, dynamic_ncols=True,
                         mininterval=0.25)

    @property
    def shown(self) -> bool:
        return self._bar is not None

    def update(self, n: int = 1) -> None:
        if self._bar is not None:
            self._bar.update(n)

    @contextmanager
    def cleared(self, needed: bool = True) -> Iterator[None]:
        """The bar taken off the terminal for the block (whose writes share the terminal with it when
        ``needed``), and drawn again after."""
        if self._bar is None or not needed:
            yield
            return
        with self._bar.external_write_mode(file=self._bar.fp):
            yield

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # no isatty, or a closed stream
        return False


# --- the workers ------------------------------------------------------------------------------------------

_CONTEXT: list[Any] = []  # the worker's context, built once by _start_worker


def _start_worker(setup: Callable[..., Any], args: tuple) -> None:
    # the parent spawned this process with SIGINT and SIGTERM blocked (run_ordered): ignore Ctrl-C,
    # which the terminal sends to the whole process group (the parent answers it and ends us), and
    # take SIGTERM's default again
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    _CONTEXT[:] = [setup(*args)]


def _work_chunk(work: Callable[[Any, Any], Any], chunk: list) -> list:
    context = _CONTEXT[0]
    return [work(context, item) for item in chunk]


def _chunks(items: Iterable[T], size: int) -> Iterator[list[T]]:
    chunk: list[T] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def run_ordered(setup: Callable[..., C], setup_args: tuple, work: Callable[[C, T], R], items: Iterable[T],
                jobs: int, progress: Progress | None = None, chunk: int = 16) -> Generator[R, None, None]:
    """``work(setup(*setup_args), item)`` for each item, yielded in the order of ``items``.

    ``jobs`` > 1: that many spawned processes, each running ``setup`` once; ``setup`` and ``work``
    must be module-level functions and the items and results picklable.  The items are read
    lazily, at most ``3 * jobs`` chunks of ``chunk`` ahead of the result being yielded.  Closing the
    iterator early (a consumer that stops) or an interrupt ends the workers.  As with any spawned
    process, a script that calls this with ``jobs`` > 1 needs the ``if __name__ == "__main__":`` guard
    (the workers import the main module).
    """
    if jobs <= 1:
        context = setup(*setup_args)
        for item in items:
            result = work(context, item)
            if progress is not None:
                progress.update()
            yield result
        return
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    try:
        os.getcwd()
    except FileNotFoundError:
        # spawning a worker reads the working directory; a deleted one would end the run with a traceback.
        # Every path in play is absolute by now (the rules directory, the files opened).
        os.chdir("/")

    pool = ProcessPoolExecutor(jobs, mp_context=get_context("spawn"), initializer=_start_worker,
                               initargs=(setup, setup_args))
    pending: deque[Future] = deque()
    chunks = _chunks(items, chunk)
    try:
        for part in chunks:
            # a worker is started by submit: with the signals held, it starts with them blocked
            with signals_deferred():
                pending.append(pool.submit(_work_chunk, work, part))
            if len(pending) < 3 * jobs:
                continue
            yield from _take(pending.popleft(), progress)
        while pending:
            yield from _take(pending.popleft(), progress)
    except BaseException:  # an interrupt, a consumer that stopped (GeneratorExit), a failed item
        _end_workers(pool)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _take(future: Future, progress: Progress | None) -> Iterator[Any]:
    from concurrent.futures.process import BrokenProcessPool

    try:
        results = future.result()
    except BrokenProcessPool:  # a worker died (killed, out of memory, a crash in the engine's C code)
        raise ResolverError("a worker process died before it answered; run again with --jobs 1 to see why") from None
    if progress is not None:
        progress.update(len(results))
    yield from results


def _end_workers(pool: ProcessPoolExecutor) -> None:
    # ProcessPoolExecutor has no public way to stop a running task before Python 3.14
    # (terminate_workers): the workers are ours, end them rather than wait for their chunks
    processes = getattr(pool, "_processes", None) or {}
    for process in list(processes.values()):
        if process.is_alive():
            process.terminate()
    pool.shutdown(wait=False, cancel_futures=True)
