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

import functools
import itertools
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from .errors import AmbiguousDefaultError
from .options import to_argv
from .provenance import fact_name, kernel_fact
from .resolution import ConflictReport, Fix, Outcome, Request, conflict_report, run, show_value
from .rules import Conflict, RulePack
from .whatif import what_if

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

    def _run(self, memo, matcher, set_, unset) -> Outcome | None:
        key = self.key(set_, unset)
        if key not in memo:
            try:
                memo[key] = what_if(self.engine, self.request, dict(key[0]), key[1], matcher=matcher,
                                    brief=matcher is self.engine.reference)
            except AmbiguousDefaultError:
                memo[key] = None
        return memo[key]

    def screen(self, set_: dict, unset: tuple = ()) -> Outcome | None:
        return self._run(self._screen, self.engine.reference, set_, unset)

    def confirm(self, set_: dict, unset: tuple = ()) -> Outcome | None:
        out = self._run(self._confirm, self.engine.matcher, set_, unset)
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
            reports.append(replace(report, fixes=tuple(_strict_fixes(trial, pack, report, flags, outcome))))
            continue
        allowed = _allowed(trial, rule, outcome, report) if rule.option else None
        if allowed is not None and tuple(allowed) != tuple(report.allowed or ()):
            read = {f.name: f.value for f in report.facts}
            report = conflict_report(rule, read, outcome.facts, _values(outcome), pack, allowed)
        fixes = _fixes_for(trial, pack, rule, report, outcome, flags, allowed or ())
        reports.append(replace(report, fixes=tuple(fixes)))
    if reports and not any(r.fixes for r in reports):
        reports[0] = replace(reports[0], fixes=_start_over(trial, pack, outcome, reports, flags))
    return tuple(reports)


def _start_over(trial: _Trial, pack: RulePack, outcome: Outcome, reports, flags) -> tuple[Fix, ...]:
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
        out = trial.confirm({}, unset)
        if out is not None:
            return (_fix(pack, outcome, f"Omit {names} and let the resolver pick them all (no smaller "
                         f"change resolves every conflict)", {}, unset, out),)
        left = trial.screen({}, unset)
        for c in (left.conflicts if left is not None else ()):
            rule = pack.rule(c.rule.id)
            for hint in getattr(rule, "hints", ()):
                keep_unset = tuple(n for n in unset if n not in hint.set)
                out = trial.confirm(dict(hint.set), keep_unset)
                if out is not None and not _unfit(pack, trial.request, dict(hint.set)):
                    omitted = " ".join(flags[n] for n in keep_unset)
                    return (_fix(pack, outcome, (f"Omit {omitted}; then: " if omitted else "")
                                 + hint.description, dict(hint.set), keep_unset, out),)
    return ()


#: words for a fix, from the outcome under it (what the resolver then picks)
Describe = Callable[[Outcome], str]


class _Proposal(NamedTuple):
    """A change to screen: its size, its words, what it sets and omits; a fallback (several changes mending
    several conflicts) is shown only when nothing direct works; a group caps how many of its kind are listed."""

    size: int
    describe: Describe
    set: dict[str, Any]
    unset: tuple[str, ...]
    fallback: bool = False
    group: str | None = None


def _fixed_words(words: str) -> Describe:
    return lambda out: words


def _omit_words(flags: dict[str, str], name: str) -> Describe:
    """Omitting a typed flag, with what the resolver then picks."""
    return lambda out: f"Omit {flags[name]} and let the resolver pick (it picks {name}={show_value(out.values[name])})"


def _change_words(pack: RulePack, flags: dict[str, str], set_: dict[str, Any], unset: tuple[str, ...],
                  option: str | None, user: dict[str, Any]) -> Describe:
    return lambda out: _describe_change(pack, flags, set_, unset, option, user)


def _followed_by(describe: Describe, also: str) -> Describe:
    """``describe``, followed by the changes a completion added ("...; also set --page-size 64")."""
    return lambda out: f"{describe(out)}; also {also[0].lower()}{also[1:]}"


def _strict_fixes(trial: _Trial, pack: RulePack, report: ConflictReport, flags, outcome: Outcome) -> list[Fix]:
    """Under --strict: type the value the adjustment wanted, omit the option, or keep the typed value
    and pick another backend (an option with a kernel role the adjustment reads and the user did not
    type): --page-size 16 with DeepSeek-V3 on B200 is kept by flashinfer, not by trtllm_mla."""
    name, (wanted,) = report.options[0], report.allowed or (None,)
    user = trial.request.args
    proposals: list[_Proposal] = [
        _Proposal(1, lambda out: f"Use {flags[name]} {show_value(wanted)}", {name: wanted}, ()),
        _Proposal(1, lambda out: f"Omit {flags[name]} and let the resolver pick", {}, (name,))]
    when = getattr(pack.rule(report.rule.id), "when", None)
    behind = options_behind(pack, when.names()) if when is not None else set()
    backends = {n for n in behind if pack.options[n].kernel_role}
    for other in sorted(backends - {name} - set(user)):
        for value in _domain(pack, other, outcome.values.get(other), False):
            set_, unset = ({other: value}, ()) if value is not None else ({}, (other,))
            proposals.append(_Proposal(1, _change_words(pack, flags, set_, unset, name, user), set_, unset,
                                       group="search"))
    return _ranked(trial, pack, outcome, proposals, caps={"search": _MAX_SEARCH_FIXES})


def _values(outcome: Outcome) -> dict[str, Any]:
    return {n: f.value for n, f in outcome.facts.items()}


def _allowed(trial: _Trial, rule: Conflict, outcome: Outcome, report: ConflictReport) -> list[Any]:
    """The rule's allowed values less those that would break another rule reading the option."""
    before = {c.rule.id for c in outcome.conflicts}
    keep = []
    for value in rule.allowed:
        if value is None or _foreign(trial.engine.pack, trial.request, {rule.option: value}):
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
    proposals: list[_Proposal] = []

    def propose(size: int, set_: dict, unset: tuple, describe: Describe, fallback: bool = False,
                group: str | None = None) -> None:
        proposals.append(_Proposal(size, describe, set_, unset, fallback, group))

    for name in report.options:
        if name in user:
            propose(1, {}, (name,), _omit_words(flags, name))
    mine = tuple(n for n in report.options if n in user)
    if len(mine) > 1:
        # omitting everything the user typed here always works, but is shown only when nothing smaller does
        every = " and ".join(flags[n] for n in mine)
        propose(len(mine), {}, mine, lambda out: f"Omit {every} and let the resolver pick", fallback=True)
    for value in allowed:
        if rule.option is not None and (rule.option in user or value != outcome.values.get(rule.option)):
            propose(1, {rule.option: value}, (), _fixed_words(f"Use {flags[rule.option]} {show_value(value)}"))
    for hint in rule.hints:
        propose(len(hint.set) + len(hint.unset), dict(hint.set), tuple(hint.unset), _fixed_words(hint.description))
    for set_, unset in _search(trial, pack, rule, report, outcome):
        size = len(set_) + len(unset)
        propose(size, set_, unset, _change_words(pack, flags, set_, unset, rule.option, user), group="search")

    completed: list[_Proposal] = []
    for size, describe, set_, unset, fallback, group in proposals:
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
                describe = _followed_by(describe, _describe_change(pack, flags, extra_set, extra_unset, None, user))
            fallback = True
        completed.append(_Proposal(size, describe, set_, unset, fallback, group))

    return _ranked(trial, pack, outcome, completed, caps={"search": _MAX_SEARCH_FIXES})


@dataclass(frozen=True)
class _Candidate:
    """One change that screened clean, with what the ranking reads."""

    set: dict[str, Any]
    unset: tuple[str, ...]
    describe: Callable[[Outcome], str]
    group: str | None
    rank: tuple


def _ranked(trial: _Trial, pack: RulePack, outcome: Outcome, proposals: list[_Proposal], limit: int = _MAX_FIXES,
            caps: dict[str, int] | None = None) -> list[Fix]:
    """The proposals that resolve, best first, one
    per resulting configuration, at most ``limit`` (and at most ``caps[group]`` of a group).

    Order (docs/explain.md, "Which fixes, in which order"): a fallback (several changes mending several
    conflicts at once) only when nothing direct works; then fewest changes; then fewest of the user's
    typed options changed (by the fix or as its consequence); then kernels: fewest chosen backends
    whose kernel verdict here is not "supported", fewest backends moved off the resolver's own pick,
    and a backend earlier in SGLang's own default order for this platform and model (the defaults
    that held, by priority); then fewest other values changed; then an omission before a value set;
    then the order proposed.  Two fixes under which every option resolves alike are one: the first
    in that order is kept (omitting --kv-cache-dtype, not "use --kv-cache-dtype auto" when auto is
    what the resolver picks).  A fix that picks a backend of another device family is never offered."""
    request = trial.request
    candidates: list[_Candidate] = []
    seen: set = set()
    for index, (size, describe, set_, unset, fallback, group) in enumerate(proposals):
        key = trial.key(set_, unset)
        if key in seen:
            continue
        seen.add(key)
        set_key, unset_key = dict(key[0]), key[1]
        if _unfit(pack, request, set_key):
            continue
        screened = trial.screen(set_key, unset_key)
        if screened is None or screened.conflicts or _overrides(pack, request, outcome, screened, set_key, unset_key):
            continue
        rank = (fallback, size, *_preference(pack, request, outcome, screened, set_key, unset_key), len(set_key), index)
        candidates.append(_Candidate(set_key, unset_key, describe, group, rank))
    fixes: list[Fix] = []
    configurations = set()
    taken: dict[str | None, int] = {}
    for cand in sorted(candidates, key=lambda c: c.rank):
        if cand.rank[0] and fixes:
            break  # sorted: every candidate left is a fallback
        if caps and cand.group in caps and taken.get(cand.group, 0) >= caps[cand.group]:
            continue
        out = trial.confirm(cand.set, cand.unset)
        if out is None:
            continue
        same = _configuration(trial.engine.compiled, out)
        if same in configurations:
            continue
        configurations.add(same)
        taken[cand.group] = taken.get(cand.group, 0) + 1
        fixes.append(_fix(pack, outcome, cand.describe(out), cand.set, cand.unset, out))
        if len(fixes) >= limit:
            break
    return fixes


def _overrides(pack: RulePack, request: Request, now: Outcome, then: Outcome, set_: dict, unset: tuple) -> bool:
    """Does the fix leave a typed backend alone but have a rule change it (--prefill-attention-backend
    fa4 beside a typed --decode-attention-backend fa4 replaces a typed --attention-backend)?  Such a fix does
    not keep the choice it seems to keep, and SGLang may check the typed value before the rule's change:
    deterministic inference refuses a typed torch_native (arg_groups/overrides.py
    _deterministic_attention_backend) before the prefill/decode pair replaces it (_attention_backend_default)."""
    return any(n in pack.options and pack.options[n].kernel_role and n not in set_ and n not in unset
               and then.values.get(n) != now.values.get(n) for n in request.args)


def _configuration(compiled, out: Outcome) -> tuple:
    """Every option's value, each spelling the rule pack normalises written as it normalises it (bf16 and
    bfloat16 are one KV dtype: rules/dsa.yaml adjust.dsa.kv.bf16-spelling)."""
    spellings = _spellings(compiled)
    options = compiled.pack.options
    # a json option (an object or list: unhashable) keeps the typed value or its default whatever a fix changes
    return tuple(sorted(((n, spellings.get((n, v), v) if isinstance(v, str) else v) for n, v in out.values.items()
                         if not options[n].opaque), key=str))


def _spellings(compiled) -> dict[tuple[str, Any], Any]:
    """(option, spelling) -> the value a normalisation (an adjustment marked normalize, from a constant to
    a constant) writes it as; worked out once per compiled pack."""
    known = compiled.memo.get("fixes.spellings")
    if known is not None:
        return known
    out: dict[tuple[str, Any], Any] = {}
    for adjust in compiled.pack.adjusts:
        if not adjust.normalize or isinstance(adjust.value, dict):
            continue
        for branch in adjust.when.branches:
            for atom in branch:
                if atom.name == adjust.option and atom.op == "eq" and isinstance(atom.value, str):
                    out[(adjust.option, atom.value)] = adjust.value
    compiled.memo["fixes.spellings"] = out
    return out


def _preference(pack: RulePack, request: Request, now: Outcome, then: Outcome, set_: dict, unset: tuple) -> tuple:
    """(typed options changed, chosen backends without a "supported" verdict, backends changed, their
    places in SGLang's default order, other values changed): the smaller the better."""
    typed = sum(1 for n in request.args if n in pack.options
                and (n in unset or n in set_ or then.values.get(n) != now.values.get(n)))
    not_supported = moved = place = 0
    for name, opt in pack.options.items():
        if not opt.kernel_role:
            continue
        backend = then.values.get(name)
        if backend is not None and backend not in opt.unset_values:
            verdict = then.facts.get(kernel_fact(name))
            not_supported += verdict is not None and verdict.value not in ("supported", "delegated")
        if backend != now.values.get(name):
            moved += 1
            order = _default_order(now, name)
            place += order.index(backend) if backend in order else len(order)
    others = sum(1 for n in pack.options if then.values.get(n) != now.values.get(n))
    return typed, not_supported, moved, place, others


def _default_order(outcome: Outcome, name: str) -> list[Any]:
    """The values the defaults of ``name`` that held here would give it, highest priority first: SGLang's
    own preference for this platform and model (trtllm_mla, then flashinfer, then triton for DeepSeek-V3
    on B200).  The adapters carry no speed order; this is the order the resolver itself picks in."""
    derivation = outcome.derivations.get(name)
    order: list[Any] = []
    for cand in sorted(derivation.candidates if derivation else (), key=lambda c: -c.priority):
        if cand.value not in order:
            order.append(cand.value)
    return order


def _fix(pack: RulePack, outcome: Outcome, description: str, set_: dict, unset: tuple, out: Outcome) -> Fix:
    return Fix(description, dict(set_), tuple(unset), to_argv(pack, dict(set_)), _also(pack, outcome, out, set_, unset))


def _also(pack: RulePack, now: Outcome, then: Outcome, set_: dict, unset: tuple) -> tuple[tuple[str, Any, Any], ...]:
    """What else a fix changes: every option whose value differs, other than those the fix sets or omits
    and those that are not the conflict-free part of the current resolution (what a conflict names, and
    what was derived from that: the prefill backend nvfp4 picked is no choice to keep)."""
    skip = set(set_) | set(unset) | _in_conflict(pack, now)
    return tuple((n, now.values.get(n), then.values.get(n)) for n in pack.options
                 if n not in skip and now.values.get(n) != then.values.get(n))


def _in_conflict(pack: RulePack, outcome: Outcome) -> set[str]:
    """The options a conflict names, and every name derived (by its rule, or an adjustment) from one."""
    tainted = {n for c in outcome.conflicts for n in c.options}

    def base(fact: str) -> str:  # user.X, typed.X and kernel.X are about option X
        return fact_name(fact).option or fact

    for name, d in outcome.derivations.items():  # in the order they were decided: what a name reads comes first
        reads = [f.name for f in d.facts] + [f.name for a in d.adjustments for f in a.facts]
        if name not in tainted and any(base(f) in tainted for f in reads):
            tainted.add(name)
    return tainted


def _unfit(pack: RulePack, request: Request, set_: dict) -> bool:
    """A change no fix proposes: a value of another device family, or one SGLang checks beyond the rules (an
    option's ``fixes_skip``, docs/rule-format.md)."""
    return any(v in pack.options[n].fixes_skip for n, v in set_.items() if n in pack.options) \
        or _foreign(pack, request, set_)


def _foreign(pack: RulePack, request: Request, set_: dict) -> bool:
    """Does the change pick a value of another device family than the target's: ``ascend`` (Huawei
    NPUs) or ``intel_xpu`` anywhere, ``aiter`` on NVIDIA, a CUDA-only kernel on ROCm?  The kernel
    adapters tie backends to vendors (resolver/adapters); a value of any option whose name holds such a
    backend's name (``ascend_tp``, ``flashinfer_megamoe``, ``experimental_sgl_trtllm``) is of its family."""
    kernels = request.kernels if request.kernels is not None else _builtin_registry()
    vendor = request.platform.vendor
    return any(isinstance(v, str) and _of_another_family(kernels, v, vendor)
               for n, v in set_.items() if n in pack.options)


def _builtin_registry():
    from .adapters.registry import registry  # loaded only when a fix is checked without a request's registry

    return registry()


@functools.lru_cache(maxsize=8)
def _families(kernels) -> dict[str, tuple[frozenset[str], frozenset[str]]]:
    """backend -> (the vendors of the platforms some adapter lets it run on, or where SGLang's own checks
    refuse it: its device family; the platforms an adapter says it cannot run on, whatever the KV dtype,
    model or weights)."""
    from .platforms import ALL_PLATFORMS

    vendor = {p.name: p.vendor for p in ALL_PLATFORMS}
    runs: dict[str, set[str]] = {}
    cannot: dict[str, set[str]] = {}
    for adapter in kernels.adapters:
        for claim in adapter.claims:
            for backend in claim.backends:
                runs.setdefault(backend, set())
                cannot.setdefault(backend, set())
                if claim.status != "unsupported":
                    runs[backend] |= {vendor[p] for p in claim.platforms if p in vendor}
                elif claim.kv_dtypes is None and claim.mla is None and claim.quantizations is None:
                    cannot[backend] |= set(claim.platforms)
    return {b: (frozenset(runs[b]), frozenset(cannot[b])) for b in runs}


def _of_another_family(kernels, value: str, vendor: str) -> bool:
    """True when ``value``, or a backend named inside it (between underscores), is of another device
    family than ``vendor``'s: the adapters let it run on other vendors' platforms only, or on none at all
    and never on any of ``vendor``'s (a backend no adapter speaks about is unknown, not foreign)."""
    from .platforms import ALL_PLATFORMS

    families = _families(kernels)
    tokens = value.split("_")
    named = {value} | {"_".join(tokens[i:j]) for i in range(len(tokens)) for j in range(i + 1, len(tokens) + 1)}
    for backend in sorted(named & set(families)):
        runs, cannot = families[backend]
        if vendor in runs:
            continue
        if runs or all(p.name in cannot for p in ALL_PLATFORMS if p.vendor == vendor):
            return True
    return False


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
        set_items, dropped = trial.key(set_, unset)
        args = trial.request.changed(dict(set_items), dropped).args
        options: list[tuple[dict[str, Any], tuple[str, ...]]] = [
            ({}, (n,)) for n in first.options if n in args and n not in touched]
        if rule.option and rule.option not in touched:
            options += [({rule.option: v}, ()) for v in rule.allowed if v is not None]
        options += [(dict(h.set), tuple(h.unset)) for h in rule.hints]
        for more_set, more_unset in options:
            cand_set, cand_unset = {**set_, **more_set}, tuple(sorted(set(unset) | set(more_unset)))
            cand = trial.screen(cand_set, cand_unset)
            if cand is not None and _repairs(cand, rule.ref.id, before):
                if not cand.conflicts:  # the last round's extension counts too
                    return cand_set, cand_unset
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
            if value is None or (not pack.options[name].fixes_omit_only
                                 and not _unfit(pack, trial.request, {name: value})):
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
        return 0 if out is None else sum(out.values.get(n) != v for n, v in fix[0].items())

    # stable: the declared order of values; at most _MAX_SEARCH_FIXES of them are listed, the best after ranking
    found.sort(key=lambda f: (len(f[1]), spelled_as_resolved(f)))
    return found


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
