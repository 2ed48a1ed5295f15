"""Fixes for conflicts: computed, then checked by re-resolving.

For each conflict the candidates are, smallest change first:

1. omit an option the user set that the conflict involves (saying what would be picked);
2. each allowed value of a restricted option;
3. the rule's own fix hints;
4. the smallest change to *other* options under which the user's choice becomes valid:
   a search over the options the failing rules read (single changes, then pairs), with the
   values those rules and the option declarations name.

Candidates are screened with the plain-Python matcher (fast) and every fix that is listed is
then re-resolved through durable-rules: only fixes under which the whole request resolves
are shown.  A conflict's ``allowed`` set is narrowed the same way: a value that would
itself break another rule reading that option (a kernel that cannot run here) is dropped.
"""
from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any, Callable

from .errors import AmbiguousDefaultError
from .options import to_argv
from .provenance import fact_name
from .resolution import ConflictReport, Fix, Outcome, Request, conflict_report, run, show_value
from .rules import Conflict, RulePack

__all__ = ["attach_fixes", "platforms_that_resolve"]

_MAX_FIXES = 8
_MAX_SEARCH_FIXES = 3


class _Trial:
    """Memoised re-resolution of the request with some options changed."""

    def __init__(self, engine, request: Request):
        self.engine, self.request = engine, request
        self._screen: dict[Any, Outcome | None] = {}
        self._confirm: dict[Any, Outcome | None] = {}

    @staticmethod
    def key(set_: dict, unset) -> tuple:
        # "set a flag to false" and "omit it" are the same change
        unset = set(unset) | {k for k, v in set_.items() if v is None or v is False}
        return tuple(sorted(((k, v) for k, v in set_.items() if k not in unset), key=str)), tuple(sorted(unset))

    def _args(self, key: tuple) -> dict:
        set_items, unset = key
        args = {k: v for k, v in self.request.args.items() if k not in unset}
        args.update(set_items)
        return args

    def _run(self, memo, matcher, set_, unset) -> Outcome | None:
        key = self.key(set_, unset)
        if key not in memo:
            args = self._args(key)
            # a changed or dropped option no longer carries the spelling or flag the user typed; an
            # untouched one keeps it, also when its typed value was an alias of "let the resolver
            # pick" and so is not in args (--moe-runner-backend megamoe: rules read typed.*)
            kept = {n for n in args if n not in set_}
            untouched = set(self.request.spelled) - set(set_) - set(key[1])
            req = replace(self.request, args=args,
                          spelled={n: v for n, v in self.request.spelled.items() if n in kept or n in untouched},
                          flags={n: v for n, v in self.request.flags.items() if n in kept})
            try:
                memo[key] = run(self.engine.compiled, matcher, req, brief=matcher is self.engine.reference)
            except AmbiguousDefaultError:
                memo[key] = None
        return memo[key]

    def screen(self, set_: dict, unset: tuple = ()) -> Outcome | None:
        return self._run(self._screen, self.engine.reference, set_, unset)

    def confirm(self, set_: dict, unset: tuple = ()) -> Outcome | None:
        out = self._run(self._confirm, self.engine.durable, set_, unset)
        return out if out is not None and not out.conflicts else None


def _domain(pack: RulePack, name: str, current: Any, user_set: bool) -> list[Any]:
    """Values worth trying for ``name``: one per class of values that every rule treats alike."""
    opt = pack.options[name]
    atoms = pack.atoms.get(name, ())
    if opt.type == "bool":
        values: list[Any] = [not bool(current)]
    elif opt.choices:
        values = [c for c in opt.choices if c not in opt.value_aliases and c not in opt.unset_values]
    else:
        consts = {c for a in atoms for c in (a.value if a.op in ("in", "notin") else (a.value,))
                  if isinstance(c, (int, float)) and not isinstance(c, bool)}
        if isinstance(opt.default, (int, float)) and not isinstance(opt.default, bool):
            consts.add(opt.default)  # a text option's default (--eplb-algorithm auto) is no number to step from
        # a constant c in "x > c" is not itself a satisfying value: try its neighbours too
        values = sorted({v for c in consts for v in (c, c + 1, c - 1)
                         if opt.minimum is None or v >= opt.minimum}, key=float)
    classes: dict[tuple, Any] = {}
    for v in values:
        if v == current:
            continue
        classes.setdefault(tuple(a.holds({name: v}) for a in atoms), v)  # the first value of each class
    return ([None] if user_set else []) + list(classes.values())


def attach_fixes(engine, request: Request, outcome: Outcome) -> tuple[ConflictReport, ...]:
    pack = engine.pack
    trial = _Trial(engine, request)
    flags = {n: request.flags.get(n, pack.options[n].flag) for n in pack.options}
    reports = []
    for report in outcome.conflicts:
        rule = pack.rule(report.rule.id)
        if not isinstance(rule, Conflict):  # --strict: an adjustment of a typed value
            reports.append(replace(report, fixes=tuple(_strict_fixes(trial, pack, report, flags))))
            continue
        allowed = _allowed(trial, rule, outcome, report) if rule.option else None
        if allowed is not None and tuple(allowed) != tuple(report.allowed or ()):
            read = {f.name: f.value for f in report.facts}
            report = conflict_report(rule, read, outcome.facts, _values(outcome), pack, allowed)
        fixes = _fixes_for(trial, pack, rule, report, outcome, flags, allowed or ())
        reports.append(replace(report, fixes=tuple(fixes)))
    if reports and not any(r.fixes for r in reports):
        reports[0] = replace(reports[0], fixes=_start_over(trial, pack, reports, flags))
    return tuple(reports)


def _start_over(trial: _Trial, pack: RulePack, reports, flags) -> tuple[Fix, ...]:
    """When no small change mends every conflict at once: omit every typed option the conflicts
    read (or, failing that, every typed option) and let the resolver pick them all; where what is
    left still conflicts, apply that conflict's own fix hint on top (a DSA model with no kernel
    for its defaults here: TileLang and bfloat16)."""
    user = trial.request.args
    read = set()
    for r in reports:
        read |= options_behind(pack, [f.name for f in r.facts]) | set(r.options)
    for unset in (tuple(sorted(n for n in read if n in user)), tuple(sorted(user))):
        if not unset:
            continue
        names = " ".join(flags[n] for n in unset)
        if trial.confirm({}, unset) is not None:
            return (Fix(f"Omit {names} and let the resolver pick them all (no smaller change resolves every "
                        f"conflict)", {}, unset, ()),)
        left = trial.screen({}, unset)
        for c in (left.conflicts if left is not None else ()):
            rule = pack.rule(c.rule.id)
            for hint in getattr(rule, "hints", ()):
                keep_unset = tuple(n for n in unset if n not in hint.set)
                if trial.confirm(dict(hint.set), keep_unset) is not None:
                    omitted = " ".join(flags[n] for n in keep_unset)
                    return (Fix((f"Omit {omitted}; then: " if omitted else "") + hint.description, dict(hint.set),
                                keep_unset, to_argv(pack, dict(hint.set))),)
    return ()


def _strict_fixes(trial: _Trial, pack: RulePack, report: ConflictReport, flags) -> list[Fix]:
    """Under --strict: type the value the adjustment wanted, or omit the option."""
    name, (wanted,) = report.options[0], report.allowed
    fixes = []
    for set_, unset, text in (({name: wanted}, (), f"Use {flags[name]} {show_value(wanted)}"),
                              ({}, (name,), f"Omit {flags[name]} and let the resolver pick")):
        if trial.confirm(set_, unset) is not None:
            fixes.append(Fix(text, set_, unset, to_argv(pack, set_)))
    return fixes


def _values(outcome: Outcome) -> dict[str, Any]:
    return {n: f.value for n, f in outcome.facts.items()}


def _allowed(trial: _Trial, rule: Conflict, outcome: Outcome, report: ConflictReport) -> list[Any]:
    """The rule's allowed values less those that would break another rule reading the option."""
    before = {c.rule.id for c in outcome.conflicts}
    keep = []
    for value in rule.allowed:
        if value is None:
            continue
        trial_out = trial.screen({rule.option: value})
        if trial_out is None:
            continue
        broken = [c for c in trial_out.conflicts if c.rule.id != rule.ref.id and c.rule.id not in before
                  and rule.option in c.options]
        if not broken:
            keep.append(value)
    return keep


def _fixes_for(trial: _Trial, pack: RulePack, rule: Conflict, report: ConflictReport, outcome: Outcome,
               flags: dict[str, str], allowed) -> list[Fix]:
    user = trial.request.args
    proposals: list[tuple[int, str, dict, tuple]] = []  # (size, description-maker key, set, unset)

    def propose(size: int, set_: dict, unset: tuple, describe: Callable[[Outcome], str], fallback: bool = False):
        proposals.append((size, describe, set_, unset, fallback))

    for name in report.options:
        if name in user:
            propose(1, {}, (name,), lambda out, n=name: (
                f"Omit {flags[n]} and let the resolver pick (it picks {n}={show_value(out.values[n])})"))
    mine = tuple(n for n in report.options if n in user)
    if len(mine) > 1:
        # omitting everything the user typed here always works, but is shown only when nothing smaller does
        propose(len(mine), {}, mine, lambda out: "Omit " + " and ".join(flags[n] for n in mine) + " and let the resolver pick",
                fallback=True)
    for value in allowed:
        if rule.option in user or value != outcome.values.get(rule.option):
            propose(1, {rule.option: value}, (), lambda out, o=rule.option, v=value: f"Use {flags[o]} {show_value(v)}")
    for hint in rule.hints:
        propose(len(hint.set) + len(hint.unset), dict(hint.set), tuple(hint.unset), lambda out, h=hint: h.description)
    for set_, unset in _search(trial, pack, rule, report, outcome):
        size = len(set_) + len(unset)
        propose(size, set_, unset, lambda out, s=set_, u=unset, o=rule.option: _describe_change(pack, flags, s, u, o, user))

    completed = []
    for size, describe, set_, unset, fallback in proposals:
        screened = trial.screen(set_, unset)
        if screened is None or rule.ref.id in {c.rule.id for c in screened.conflicts}:
            continue
        if screened.conflicts:
            # this change mends this conflict; the request has others: add their own repairs
            done = _complete(trial, pack, set_, unset)
            if done is None:
                continue
            # what the completion changed besides this change (a value it set again counts too)
            extra_set = {k: v for k, v in done[0].items() if k not in set_ or set_[k] != v}
            extra_unset = tuple(n for n in done[1] if n not in unset)
            set_, unset = done
            size = len(set_) + len(unset)
            if extra_set or extra_unset:
                also = _describe_change(pack, flags, extra_set, extra_unset, None, user)
                describe = (lambda out, d=describe, a=also: f"{d(out)}; also {a[0].lower()}{a[1:]}")
            fallback = True
        completed.append((size, describe, set_, unset, fallback))

    fixes: list[Fix] = []
    seen = set()
    outcomes = set()  # two spellings of one change (bf16 / bfloat16) that resolve alike: list one
    # fallbacks (several changes mending several conflicts at once) only when nothing direct works
    for size, describe, set_, unset, fallback in sorted(completed, key=lambda p: (p[4], p[0])):
        key = trial.key(set_, unset)
        if key in seen or fallback and fixes:
            continue
        seen.add(key)
        out = trial.confirm(set_, unset)
        if out is None:
            continue
        same = tuple(sorted(out.values.items(), key=str))
        if same in outcomes and (set_ or unset) and size > 1:
            continue
        outcomes.add(same)
        set_key, unset_key = key  # "set a flag to false" is written as "omit it"
        fixes.append(Fix(describe(out), dict(set_key), unset_key, to_argv(pack, dict(set_key))))
        if len(fixes) >= _MAX_FIXES:
            break
    return fixes


def _repairs(out: Outcome, rule_id: str, before: set[str]) -> bool:
    """The change removes this conflict and breaks nothing that held before."""
    now = {c.rule.id for c in out.conflicts}
    return rule_id not in now and now <= before


def _complete(trial: _Trial, pack: RulePack, set_: dict, unset: tuple, rounds: int = 4):
    """Extend a change that mends one conflict until the whole request resolves, or give up."""
    set_, unset = dict(set_), tuple(unset)
    for _ in range(rounds):
        out = trial.screen(set_, unset)
        if out is None:
            return None
        if not out.conflicts:
            return set_, unset
        before = {c.rule.id for c in out.conflicts}
        first = out.conflicts[0]
        rule: Conflict = pack.rule(first.rule.id)
        touched = set(set_) | set(unset)
        args = trial._args(trial.key(set_, unset))
        options = [({}, (n,)) for n in first.options if n in args and n not in touched]
        if rule.option and rule.option not in touched:
            options += [({rule.option: v}, ()) for v in rule.allowed if v is not None]
        options += [(dict(h.set), tuple(h.unset)) for h in rule.hints]
        for more_set, more_unset in options:
            cand_set, cand_unset = {**set_, **more_set}, tuple(sorted(set(unset) | set(more_unset)))
            cand = trial.screen(cand_set, cand_unset)
            if cand is not None and _repairs(cand, rule.ref.id, before):
                set_, unset = cand_set, cand_unset
                break
        else:
            return None
    return None


def _describe_change(pack, flags, set_, unset, keep, user) -> str:
    parts = []
    for n in sorted(unset):
        parts.append(f"omit {flags[n]}")
    for n in sorted(set_):
        v = set_[n]
        opt = pack.options[n]
        if opt.type == "bool":
            parts.append(f"{'add' if v else 'omit'} {flags[n]}")
        elif v is None:
            parts.append(f"omit {flags[n]}")
        else:
            parts.append(f"set {flags[n]} {show_value(v)}")
    text = " and ".join(parts)
    if keep and keep in user:
        return f"Keep {flags[keep]} {show_value(user[keep])}: {text}"
    return text[0].upper() + text[1:]


def options_behind(pack: RulePack, names) -> set[str]:
    """The options a condition reads, directly, as typed (user.X, typed.X), or through derived and
    kernel facts."""
    out: set[str] = set()
    todo, seen = list(names), set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        parts = fact_name(name)
        base = parts.option or name
        if base in pack.options:
            if not pack.options[base].no_cli:  # a field with no flag is no change a user can make
                out.add(base)
        elif base in pack.facts:
            todo += pack.facts[base].when.names()
    return out


def _search(trial: _Trial, pack: RulePack, rule: Conflict, report: ConflictReport, outcome: Outcome):
    """Smallest changes to other options, among those the failing rules read, that resolve."""
    user = trial.request.args
    before = {c.rule.id for c in outcome.conflicts}
    read = options_behind(pack, rule.when.names())
    read.discard(rule.option)
    # two changes only to keep a choice the user made; otherwise one change (or omit it) is enough
    max_size = 2 if rule.option in user else 1
    changes = []
    for name in sorted(read):
        for value in _domain(pack, name, outcome.values.get(name), name in user):
            changes.append((name, value))
    found = []
    for size in range(1, max_size + 1):
        for combo in itertools.combinations(changes, size):
            names = [n for n, _ in combo]
            if len(set(names)) < size:
                continue
            set_ = {n: v for n, v in combo if v is not None}
            unset = tuple(n for n, v in combo if v is None)
            out = trial.screen(set_, unset)
            if out is not None and _repairs(out, rule.ref.id, before):
                found.append((set_, unset))
        if found:
            break
    def spelled_as_resolved(fix) -> int:
        # prefer the spelling the value resolves to (bfloat16 over its alias bf16)
        out = trial.screen(*fix)
        return sum(out.values.get(n) != v for n, v in fix[0].items())

    found.sort(key=lambda f: (len(f[1]), spelled_as_resolved(f)))  # stable: the declared order of values
    return found[:_MAX_SEARCH_FIXES]


def platforms_that_resolve(engine, request: Request) -> tuple[str, ...]:
    """The contract's platforms on which the same launch resolves as typed: what would work when no
    change of options does (a platform-level refusal, such as an MXFP4 checkpoint on gfx942)."""
    from .platforms import PLATFORMS

    found = []
    for platform in PLATFORMS:
        if platform == request.platform:
            continue
        trial = replace(request, platform=platform, platform_source=f"--platform {platform.name}")
        if not run(engine.compiled, engine.reference, trial, brief=True).conflicts:
            found.append(platform.name)
    return tuple(found)
