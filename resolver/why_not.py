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
``conflict``    with X typed, these conflict rules would fire (a re-resolution; only when asked, it costs
                one resolution per value).

A value with none of these has no reason against it: no default rule proposes it, so it is not picked,
and typing it resolves (the view says so).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from .conditions import Atom
from .resolution import _verdict, run, show_value
from .rules import Default

__all__ = ["Loser", "Reason", "describe", "first_false", "why_not"]


@dataclass(frozen=True)
class Reason:
    kind: str  # shadowed | skipped | not-fired | kernel | conflict
    rule: str | None  # the rule id (a default or conflict rule), None for a kernel verdict
    text: str  # the resolver's own words, short
    where: str | None = None  # file:line of the rule

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "rule": self.rule, "where": self.where, "text": self.text}


#: the strongest reason first: a refusal, then a default that fired and lost, then one that did not fire
_ORDER = {"conflict": 0, "kernel": 1, "skipped": 2, "shadowed": 3, "not-fired": 4}


@dataclass(frozen=True)
class Loser:
    value: Any
    reasons: tuple[Reason, ...]
    #: with the value typed instead, whether the request resolves (None: not re-resolved)
    resolves: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "reasons": [r.to_dict() for r in self.reasons], "resolves": self.resolves}


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


def why_not(res, name: str, values: list[Any] | None = None, rerun: bool = False) -> list[Loser]:
    """The values of ``name`` that lost, each with what removed it; [] for an option the user set.

    ``values``: which values to explain (default: every value a default rule proposes, the option's
    choices when it has a kernel role, and the candidates that lost).  ``rerun``: also re-resolve with
    each value typed and name the conflict rules it would raise."""
    pack = res.engine.pack
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
            verdict = _verdict(res.request, option.kernel_role, value, facts)
            if verdict.status in ("unsupported", "refused"):
                by = f"adapter {verdict.adapter}" if verdict.adapter else "the kernel adapters"
                add(value, Reason("kernel", None, f"{by}: {verdict.status} on {res.request.platform.name}"))
    resolves: dict[Any, bool] = {}
    if rerun:
        before = {c.rule.id for c in res.conflicts}
        for value in candidates:
            if value == d.value:
                continue
            trial = replace(res.request, args={**res.request.args, name: value})
            outcome = run(res.engine.compiled, res.engine.durable, trial, brief=True)
            resolves[value] = not outcome.conflicts
            for c in outcome.conflicts:
                if c.rule.id not in before:
                    add(value, Reason("conflict", c.rule.id, f"typed, it raises {c.rule.id}", _where(c.rule)))
    losers = [Loser(v, tuple(sorted(reasons.get(v, ()), key=lambda r: _ORDER[r.kind])), resolves.get(v))
              for v in candidates if v != d.value]
    # refused values first, then those a default proposed, then the rest; each group in the option's order
    return sorted(losers, key=lambda w: min((_ORDER[r.kind] for r in w.reasons), default=len(_ORDER)))


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


def describe(loser: Loser) -> str:
    """One loser as a line of text: the value, then its reasons (or that nothing stands against it)."""
    raised = [r.rule for r in loser.reasons if r.kind == "conflict"]
    texts = ([f"typed, it raises {', '.join(map(str, raised))}"] if raised else []) + \
        [r.text for r in loser.reasons if r.kind != "conflict"]
    said = "; ".join(texts) or "no default rule proposes it here"
    if loser.resolves:
        said += "; typed, it resolves"
    return f"{show_value(loser.value)}: {said}"
