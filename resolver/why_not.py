"""Why not X: for an option the resolver decided, the values that lost and what removed each.

Modelled on Kconfiglib's symbol information view, which lists, beside a symbol's value, the
"select"/"imply" and "default" clauses that could set it and the condition each one waits on.
Here a value X of option O lost for one or more of these reasons, each read from data (never
from a sentence):

``shadowed``    a default rule proposing X fired, with a lower priority than the winner's;
``skipped``     a default rule proposing X fired, but the kernel adapters say its kernel cannot run here;
``not-fired``   a default rule proposing X did not fire: the first test of its nearest ``when:`` branch
                that is false on the resolved facts (the expression evaluator of resolver/conditions.py);
``kernel``      the kernel adapters refuse X in O's kernel role on the target (resolver/adapters);
``conflict``    with X typed, these conflict rules would fire (a re-resolution per value, only when asked:
                resolver/whatif.py adds these).

A value with none of these has no reason against it: no default rule proposes it, so it is not picked,
and typing it resolves (the view says so).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .conditions import Atom
from .outcome import ORDER, Loser, Reason, kernel_verdict, show_value
from .rules import Default

if TYPE_CHECKING:
    from .result import LaunchResult

__all__ = ["ORDER", "Loser", "Reason", "first_false", "why_not"]


def first_false(when, values: dict[str, Any]) -> tuple[Atom, ...]:
    """The tests of ``when``'s nearest branch (fewest false tests, then the first) that are false on ``values``."""
    best: tuple[Atom, ...] | None = None
    for branch in when.branches:
        failing = tuple(a for a in branch if not a.holds(values))
        if best is None or len(failing) < len(best):
            best = failing
    return best or ()


def _where(ref) -> str:
    return f"{ref.file}:{ref.line}"


def why_not(res: LaunchResult, name: str, values: list[Any] | None = None,
            raised: Mapping[Any, tuple[Reason, ...]] | None = None,
            resolves: Mapping[Any, bool] | None = None) -> list[Loser]:
    """The values of ``name`` that lost, each with what removed it; [] for an option the user set.

    ``values``: which values to explain (default: every value a default rule proposes, the option's
    choices when it has a kernel role, and the candidates that lost).  Read from the resolution's data
    alone; what each value, typed instead, raises (``raised``) and whether it resolves (``resolves``) are
    re-resolutions, worked out by :func:`resolver.whatif.rerun_why_not`."""
    pack = res.pack
    option = pack.options[name]
    d = res.derivations[name]
    if d.source == "user":
        return []
    facts = res.outcome.facts
    known = {n: f.value for n, f in facts.items()}
    winner = d.rule.id if d.rule is not None else None
    reasons: dict[Any, list[Reason]] = {}

    def add(value: Any, reason: Reason) -> None:
        if value != d.value and reason not in reasons.setdefault(value, []):
            reasons[value].append(reason)

    won = next((c.priority for c in d.candidates if c.outcome == "chosen"), None)
    winning = next((r.priority for r in pack.defaults if r.ref.id == winner), won) if d.source == "default" else None
    seen_rules = set()
    for c in d.candidates:
        seen_rules.add(c.rule.id)
        if c.outcome == "shadowed":
            add(c.value, Reason("shadowed", c.rule.id, f"default {c.rule.id} proposes it with priority {c.priority}, "
                                f"lower than {winner}'s{f' {winning}' if winning is not None else ''}", _where(c.rule)))
        elif c.outcome == "skipped":
            add(c.value, Reason("skipped", c.rule.id, f"default {c.rule.id} proposes it, but its kernel cannot run on "
                                f"{res.request.platform.name}", _where(c.rule)))
    for rule in pack.defaults:
        proposed = rule.set.get(name)
        if proposed is None or isinstance(proposed, dict) or rule.ref.id in seen_rules or rule.ref.id == winner:
            continue
        if rule.when.holds(known):
            continue  # it fired (a candidate above), or it proposes the value that won
        add(proposed, _not_fired(rule, known))
    candidates = list(reasons) if values is None else list(values)
    if values is None and option.kernel_role:
        candidates += [c for c in option.choices if c not in candidates]
    if option.kernel_role and res.request.kernels is not None:
        for value in candidates:
            verdict = kernel_verdict(res.request, option.kernel_role, value, facts)
            if verdict.status in ("unsupported", "refused"):
                by = f"adapter {verdict.adapter}" if verdict.adapter else "the kernel adapters"
                add(value, Reason("kernel", None, f"{by}: {verdict.status} on {res.request.platform.name}"))
    for value, more in (raised or {}).items():
        for reason in more:
            add(value, reason)
    losers = [Loser(v, tuple(sorted(reasons.get(v, ()), key=lambda r: ORDER[r.kind])), (resolves or {}).get(v))
              for v in candidates if v != d.value]
    # refused values first, then those a default proposed, then the rest; each group in the option's order
    return sorted(losers, key=lambda w: min((ORDER[r.kind] for r in w.reasons), default=len(ORDER)))


def _not_fired(rule: Default, known: dict[str, Any]) -> Reason:
    failing = first_false(rule.when, known)
    if failing:
        atom = failing[0]
        more = f" (and {len(failing) - 1} more)" if len(failing) > 1 else ""
        text = (f"default {rule.ref.id} did not fire: needs {atom}, "
                f"but {atom.name} = {show_value(known.get(atom.name))}{more}")
    else:
        text = f"default {rule.ref.id} did not fire"
    return Reason("not-fired", rule.ref.id, text, _where(rule.ref))
