"""What-ifs over a resolution: the same request with one change, resolved again (:func:`what_if`: the fix
search's screens and checks, and why-not, come through it; a cross-node what-if changes a role's launch,
:meth:`resolver.launch.LaunchRequest.changed`, and resolves it whole).

Why-not with re-resolution lives here: each value an option lost, typed instead, and the conflict rules
it would raise (``--explain OPTION``).  The renderers only read the answers (``LaunchResult.why_not``).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .outcome import Loser, Outcome, Reason, Request
from .resolution import run
from .why_not import why_not

if TYPE_CHECKING:
    from .engine import DurableMatcher, Engine, ReferenceMatcher
    from .result import LaunchResult

__all__ = ["rerun_why_not", "what_if"]


def what_if(engine: Engine, request: Request, set_: Mapping[str, Any], unset: Iterable[str] = (), *,
            matcher: DurableMatcher | ReferenceMatcher | None = None, brief: bool = True) -> Outcome:
    """``request`` with options set or removed (:meth:`Request.changed`), resolved again on ``matcher`` (default:
    the engine's own); ``brief``: without rendering conflict reports (which rules fired is the answer)."""
    return run(engine.compiled, matcher or engine.matcher, request.changed(set_, unset), brief=brief)


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
        outcome = what_if(engine, res.request, {name: loser.value})
        resolves[loser.value] = not outcome.conflicts
        raised[loser.value] = tuple(Reason("conflict", c.rule.id, f"typed, it raises {c.rule.id}",
                                           f"{c.rule.file}:{c.rule.line}")
                                    for c in outcome.conflicts if c.rule.id not in before)
    return tuple(why_not(res, name, raised=raised, resolves=resolves))
