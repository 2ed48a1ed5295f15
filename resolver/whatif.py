"""What-ifs over a resolution: the same request with one change, resolved again.

Why-not with re-resolution lives here: each value an option lost, typed instead, and the conflict rules
it would raise (``--explain OPTION``).  The renderers only read the answers (``LaunchResult.why_not``).
"""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .outcome import Loser, Reason
from .resolution import run
from .why_not import why_not

if TYPE_CHECKING:
    from .engine import Engine
    from .result import LaunchResult

__all__ = ["rerun_why_not"]


def rerun_why_not(engine: Engine, res: LaunchResult, name: str) -> tuple[Loser, ...]:
    """Every value of ``name`` that lost (resolver/why_not.py), each typed instead and resolved again: the
    conflict rules it raises that the request did not, and whether it resolves.  () for a typed option."""
    d = res.derivations[name]
    if d.source == "user":
        return ()
    before = {c.rule.id for c in res.conflicts}
    raised: dict[Any, tuple[Reason, ...]] = {}
    resolves: dict[Any, bool] = {}
    for loser in why_not(res, name):
        trial = replace(res.request, args={**res.request.args, name: loser.value})
        outcome = run(engine.compiled, engine.matcher, trial, brief=True)
        resolves[loser.value] = not outcome.conflicts
        raised[loser.value] = tuple(Reason("conflict", c.rule.id, f"typed, it raises {c.rule.id}",
                                           f"{c.rule.file}:{c.rule.line}")
                                    for c in outcome.conflicts if c.rule.id not in before)
    return tuple(why_not(res, name, raised=raised, resolves=resolves))
