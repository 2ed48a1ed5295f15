"""The resolution: forward chaining over the compiled rules, and its result as data.

:func:`run` drives one resolution.  The engine (a matcher, :mod:`resolver.engine`) does all
the matching; this module only schedules what is asserted and decides among the candidates
the engine produced, which durable-rules cannot do safely itself (docs/evidence.md, P5):

1. assert the input facts (platform, model);
2. for each dependency level of the pack (options, derived facts and computed values whose
   rules read only earlier levels): decide each name's value (a derived fact holds if one of
   its rules fired; a computed value is worked out from the values it reads; an option keeps
   the user's value, else takes the highest-priority default that fired, else its declared
   default), run its adjustments in order (an ``adj`` fact with the current value, which the
   engine matches against every step), then assert the level's values, which fires the next
   rules;
3. every conflict rule that fired is a conflict.

Because every value is asserted once and every decision sorts its candidates, neither the
order of facts nor of rule files can change the result.
"""
from __future__ import annotations

import string
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from .compiler import CompiledPack
from .draft import DRAFT_FACTS
from .engine_values import fact_fields
from .errors import AmbiguousDefaultError
from .expressions import cached_expression
from .loader import REQUIRE_KNOWN_KERNELS, kernel_option
from .model import MODEL_FACTS
from .notices import Notice
from .outcome import (
    Adjustment,
    Candidate,
    ConflictReport,
    Derivation,
    FactUse,
    Fix,
    Outcome,
    Request,
    format_value,
    kernel_verdict,
    show_value,
)
from .provenance import Origin, fact_name, given_fact, kernel_fact, kernel_why_fact, typed_fact, user_fact
from .rules import (
    Adjust,
    Compute,
    Conflict,
    Default,
    Fact,
    RuleRef,
)
from .wording import origin_text

__all__ = [
    "Adjustment",
    "Candidate",
    "ConflictReport",
    "Derivation",
    "FactUse",
    "Fix",
    "Outcome",
    "Request",
    "format_value",
    "show_value",
    "render_message",
    "run",
]


class _Formatter(string.Formatter):
    """Placeholders are whole fact names (``{platform.name}``), never attribute lookups."""

    def get_field(self, field_name, args, kwargs):
        return kwargs.get(field_name, "{" + field_name + "}"), field_name


_FORMATTER = _Formatter()


class _Spelled:
    """The values a message may name, each spelled when a placeholder asks for it (a message names a
    few of the hundreds of values: spelling them all for each message cost more than the rest)."""

    def __init__(self, values: dict[str, Any], extra: dict[str, Any]):
        self.values, self.extra = values, extra

    def get(self, name: str, missing: Any) -> Any:
        if name in self.extra:
            return self.extra[name]
        return format_value(self.values[name]) if name in self.values else missing


def render_message(template: str, values: dict[str, Any], extra: dict[str, Any] | None = None) -> str:
    return _FORMATTER.vformat(template, (), _Spelled(values, extra or {}))  # type: ignore[call-overload]


def run(compiled: CompiledPack, matcher, request: Request, shuffle=None, brief: bool = False) -> Outcome:
    """One resolution.  ``brief`` skips rendering conflict reports (fix screening needs only
    which rules fired).  ``shuffle`` (tests only) permutes each batch of facts before it is
    asserted, to show that the order of facts never changes the result."""
    pack = compiled.pack
    order = shuffle or (lambda batch: batch)
    facts: dict[str, FactUse] = {}
    values: dict[str, Any] = {}
    firings: dict[str, dict[str, Any]] = {}
    # name -> keys of the fired branches that decide it (its defaults, or its fact rule): indexed as
    # firings arrive, so deciding a name costs what concerns it, not a scan of every firing
    concerning: dict[str, list[str]] = {}
    derivations: dict[str, Derivation] = {}
    warnings: list[Notice] = []
    refused: list[ConflictReport] = []  # --strict: adjustments of typed values

    def record(batch):
        for key, read in batch:
            firings[key] = read
            rule = compiled.branches[key].rule
            if isinstance(rule, Fact):
                concerning.setdefault(rule.name, []).append(key)
            elif isinstance(rule, Default):
                for name in rule.set:
                    concerning.setdefault(name, []).append(key)

    def fact(name: str, value: Any) -> dict:
        # the value is checked (InputError) and type-tagged here, where facts are built: see engine_values.py
        return {"id": f"v:{name}", "t": "val", "o": name, **fact_fields(value, name)}

    with matcher.session() as session:
        inputs = []
        for name, value in sorted(request.platform.facts().items()):
            facts[name] = FactUse(name, value, "platform", Origin("platform", request.platform_how,
                                                                  f"{request.platform.name} "
                                                                  f"({request.platform_source})"))
            inputs.append(fact(name, value))
        # the config the model facts came from: an absent fact names it (or --model-arch, when there is none)
        config = request.model.get("model.from_arch_only", (None, Origin("model", where="config.json")))[1].where
        for name in sorted(MODEL_FACTS):  # declared model facts; an absent one is asserted as null
            value, origin = request.model.get(name, (None, Origin("model", "absent", config, MODEL_FACTS[name][0])))
            facts[name] = FactUse(name, value, "model", origin)
            inputs.append(fact(name, value))
        for name in sorted(DRAFT_FACTS):  # the draft checkpoint's config, when there is one
            value, origin = request.draft.get(name, (None, Origin("draft", "absent", "no draft config")))
            facts[name] = FactUse(name, value, "model", origin)
            if name in compiled.reads:
                inputs.append(fact(name, value))
        for name, (value, origin) in sorted(request.installed.items()):
            facts[name] = FactUse(name, value, "installed", origin)
            if name in compiled.reads:  # one fact per known package: the engine gets those a rule reads
                inputs.append(fact(name, value))
        gate = request.require_known_kernels
        facts[REQUIRE_KNOWN_KERNELS] = FactUse(REQUIRE_KNOWN_KERNELS, gate, "request", Origin(
            "request", where="asked (--require-known-kernels)" if gate else "not asked"))
        if REQUIRE_KNOWN_KERNELS in compiled.reads:
            inputs.append(fact(REQUIRE_KNOWN_KERNELS, gate))
        # what the user typed, before any rule: SGLang reads some raw fields (page_size when it
        # picks the attention backend); ``user.<option>`` is null when not typed, and
        # ``typed.<option>`` keeps a deprecated spelling as typed (tokenspeed_mla implies FP8)
        untyped, untyped_inputs = _untyped(compiled)
        facts.update(untyped)
        typed_options = sorted(n for n in {*request.args, *request.spelled} if n in pack.options
                               and (request.args.get(n) is not None or n in request.spelled))
        typed_set = set(typed_options)
        inputs += [f for option, f in untyped_inputs if option not in typed_set]
        for name in typed_options:
            value = request.args.get(name)
            origin = _origin_typed(name, request) if value is not None else NOT_TYPED
            spelled = request.spelled.get(name, value)
            for fname, typed, by_user in ((user_fact(name), value, value is not None),
                                          (typed_fact(name), spelled, spelled is not None),
                                          (given_fact(name), value is not None, value is not None)):
                facts[fname] = FactUse(fname, typed, "user" if by_user else "input", origin)
                if fname in compiled.reads:
                    inputs.append(fact(fname, typed))
        record(session.assert_facts(order(inputs)))
        values.update({n: f.value for n, f in facts.items()})

        def settle(name: str, d: Derivation, batch: list[dict]) -> None:
            """Record a decided name, and the engine facts of it (and of its kernel verdicts) rules read."""
            derivations[name] = d
            facts[name] = FactUse(name, d.value, d.source, _origin(d, request))
            values[name] = d.value
            if name in compiled.reads:
                batch.append(fact(name, d.value))
            elif not (name in pack.options and pack.options[name].opaque):
                # no rule reads it: no fact, but a value the engine could not hold is still refused (a json
                # option's value never reaches the engine: no rule may read it)
                fact_fields(d.value, name)
            role = pack.options[name].kernel_role if name in pack.options else None
            if role:  # what the kernel adapters report about the chosen backend, as facts the rules read
                status, why, adapter = _kernel_status(d, role, request, facts)
                # the origin names the adapter behind the verdict (resolver.verdicts reads it)
                origin = Origin("kernel", adapter=adapter)
                for fname, fvalue in ((kernel_fact(name), status), (kernel_why_fact(name), why)):
                    facts[fname] = FactUse(fname, fvalue, "kernel", origin)
                    values[fname] = fvalue
                    if fname in compiled.reads:
                        batch.append(fact(fname, fvalue))

        # one engine round per level (loader._engine_stages): its options and facts are decided from what has
        # fired, then adjusted side by side; its computed values follow, in their order, from the values so far
        typed_now = {n for n, v in request.args.items() if v is not None}
        for plan in _level_plans(compiled):
            # most names of a level are quiet (an option nobody typed and no default proposed, a derived fact no
            # branch of its rule matched): the same in every resolution, recorded at once; the rest one by one
            busy = plan.quiet.keys() & (concerning.keys() | typed_now)
            derivations.update(plan.derivations)
            values.update(plan.values)
            facts.update(plan.uses)
            batch = [f for n, f in plan.engine_facts if n not in busy] if busy else list(plan.facts_only)
            decided: dict[str, Derivation] = {}
            for name in order([*busy, *plan.decide]):
                if name in pack.facts:
                    decided[name] = _decide_fact(pack.facts[name], compiled, firings, concerning.get(name, []), facts)
                else:
                    decided[name] = _decide_option(name, compiled, firings, concerning.get(name, []), facts, request)
            decided.update(_adjust_level(decided, compiled, session, facts, values, request, warnings, record, refused))
            for name, d in decided.items():
                settle(name, d, batch)
            for name in plan.computes:
                settle(name, _compute(pack.computes[name], values, facts, compiled), batch)
            record(session.assert_facts(order(batch)))

    conflicts = []
    fired_rules: dict[str, dict] = {}  # conflict rule id -> the facts all its fired branches read
    for key, read in sorted(firings.items()):
        b = compiled.branches[key]
        if isinstance(b.rule, Conflict):
            fired_rules.setdefault(b.rule.ref.id, {}).update(read)
    # restrictions of one option (the "your flag is refused" kind) first, then by id: never by
    # file name or position, so renaming or reordering rule files changes nothing
    for rid in sorted(fired_rules, key=lambda r: (pack.rule(r).option is None, r)):
        rule: Conflict = pack.rule(rid)
        read = fired_rules[rid]
        if brief:
            options = tuple(n for n in (*read, rule.option, *map(kernel_option, read)) if n in pack.options)
            conflicts.append(ConflictReport(rule.ref, rule.doc, "", options, (), None, None))
        else:
            conflicts.append(conflict_report(rule, read, facts, values, pack, rule.allowed or None))
    option_values = {n: values[n] for n in pack.options}
    conflicts = refused + conflicts
    return Outcome(option_values, facts, derivations, tuple(conflicts), tuple(warnings), tuple(sorted(firings)))


NOT_TYPED = Origin("not-typed")


def _untyped(compiled: CompiledPack) -> tuple[dict[str, FactUse], list[tuple[str, dict]]]:
    """``user.<option>``, ``typed.<option>`` (null) and ``given.<option>`` (false) of every option as when it is not
    typed, and the engine facts of those a rule reads, each with its option: the same in every resolution, so
    worked out once per pack."""
    known = compiled.memo.get("resolution.untyped")
    if known is None:
        facts, inputs = {}, []
        for option in sorted(compiled.pack.options):
            for name, value in ((user_fact(option), None), (typed_fact(option), None), (given_fact(option), False)):
                facts[name] = FactUse(name, value, "input", NOT_TYPED)
                if name in compiled.reads:
                    inputs.append((option, {"id": f"v:{name}", "t": "val", "o": name, **fact_fields(value, name)}))
        known = compiled.memo["resolution.untyped"] = (facts, inputs)
    return known


def conflict_report(rule: Conflict, read: dict, facts, values, pack, allowed) -> ConflictReport:
    names = list(read)
    if rule.option and rule.option not in names:
        names.append(rule.option)
    # a kernel fact is about an option's value: that option is involved too
    names += [o for o in map(kernel_option, list(names)) if o and o not in names]
    used = tuple(facts[n] for n in _ordered(names))
    options = tuple(n for n in _ordered(names) if n in pack.options)
    extra = {"option": rule.option or "", "allowed": repr(sorted(allowed, key=str)) if allowed is not None else ""}
    # a kernel verdict's evidence (kernel.<option>_why, hundreds of characters) stays out of the headline: the
    # message names the adapter behind it, and the full text goes to ``details`` (shown under --explain)
    details = tuple((n, str(facts[n].value)) for n in _placeholders(rule.message)
                    if n in facts and fact_name(n).family == "kernel_why")
    extra.update({n: f"{origin_text(facts[n].origin)}, see --explain" for n, _ in details})
    message = render_message(rule.message, values, extra)
    return ConflictReport(rule.ref, rule.doc, message, options, used, tuple(allowed) if allowed is not None else None,
                          rule.evidence, details=details)


def _placeholders(template: str) -> tuple[str, ...]:
    """The fact names a message template quotes (``{kernel.attention_backend_why}``), in order."""
    return tuple(dict.fromkeys(f for _, f, _, _ in _FORMATTER.parse(template) if f))


def _ordered(names):
    # options first (what the user can change), then derived, model and platform facts
    return sorted(set(names), key=lambda n: (n.startswith("platform."), n.startswith("model."), n))


def _decide_fact(rule: Fact, compiled, firings, fired: list[str], facts) -> Derivation:
    """``fired``: the keys of the fired branches concerning ``rule.name``."""
    hits = sorted(k for k in fired if compiled.branches[k].rule is rule)
    if hits:
        read = firings[hits[0]]
        return Derivation(rule.name, True, "derived", rule.ref, rule.doc, tuple(facts[n] for n in _ordered(read)))
    return _unmatched(rule)


def _unmatched(rule: Fact) -> Derivation:
    return Derivation(rule.name, False, "derived", rule.ref, f"no branch of this rule matched: {rule.doc}")


def _compute(rule: Compute, values: dict[str, Any], facts, compiled: CompiledPack) -> Derivation:
    """A computed value (SGLang's arithmetic and cross-setting comparisons, worked out here and
    asserted as a fact the engine tests against constants: docs/evidence.md, P3)."""
    reads = compiled.memo.setdefault("resolution.compute_reads", {})
    names = reads.get(rule.name)
    if names is None:  # the names an expression reads never change: ordered once per pack
        names = reads[rule.name] = tuple(_ordered(rule.value.names))
    # an expression is a pure function of the values it reads: its value is kept per pack by those values,
    # each with its type (1, 1.0 and True are one dict key), a float by its spelling (0.0 and -0.0 too)
    inputs = [values.get(n) for n in names]
    key: tuple | None = (rule.name, *((v.__class__, repr(v) if v.__class__ is float else v) for v in inputs))
    if any(v.__class__ not in _KEYED for v in inputs):
        key = None  # a list or mapping (typed lists): not a key, evaluated each time
    memo = compiled.memo.setdefault("resolution.computed", {})
    value = memo.get(key, _ABSENT) if key is not None else _ABSENT
    if value is _ABSENT:
        value = rule.value.evaluate(values)
        if key is not None:
            if len(memo) > 50_000:  # typed values are unbounded: keep the memo small
                memo.clear()
            memo[key] = value
    return Derivation(rule.name, value, "computed", rule.ref, rule.doc, tuple(facts[n] for n in names))


_KEYED = frozenset({str, int, float, bool, type(None)})
_ABSENT = object()


def _kernel_status(d: Derivation, role: str, request: Request, facts) -> tuple[str, str, str | None]:
    """kernel.<option>, kernel.<option>_why and the adapter behind them, for the decided value."""
    if d.value is None and any(c.outcome == "skipped" for c in d.candidates):
        reasons: dict[Any, str] = {}
        for c in d.candidates:
            if c.outcome == "skipped":
                reasons.setdefault(c.value, c.kernel_why or "")
        return "none", "; ".join(f"{value} - {why}" for value, why in reasons.items()), None
    if request.kernels is None:
        return "unknown", "no kernel adapters consulted", None
    verdict = kernel_verdict(request, role, d.value, facts)
    return verdict.status, verdict.why, verdict.adapter


def _decide_option(name, compiled, firings, fired: list[str], facts, request: Request) -> Derivation:
    """``fired``: the keys of the fired branches concerning ``name``."""
    option = compiled.pack.options[name]
    if not fired and request.args.get(name) is None:  # most options: nothing proposed, nothing typed
        return _declared_default(option, compiled)
    proposals: list[tuple[Default, dict]] = []
    # in branch order, not firing order: when several branches of one rule fire, the one reported
    # must not depend on which the matcher happened to fire first
    for key in sorted(fired):
        b = compiled.branches[key]
        if isinstance(b.rule, Default) and name in b.rule.set:
            proposals.append((b.rule, firings[key]))
    # one proposal per rule (several branches of one rule may fire), best first, ties by id
    by_rule: dict[str, tuple[Default, dict]] = {}
    for rule, read in sorted(proposals, key=lambda p: p[0].ref.id):
        by_rule.setdefault(rule.ref.id, (rule, read))
    ranked = sorted(by_rule.values(), key=lambda p: (-p[0].priority, p[0].ref.id))

    def proposed(rule: Default):
        value = rule.set[name]
        return facts[value["from"]].value if isinstance(value, dict) else value

    if request.args.get(name) is not None:
        flag = request.flags.get(name, option.flag)
        cands = tuple(Candidate(r.ref, proposed(r), r.priority, "overridden-by-user", f"the user set {flag}")
                      for r, _ in ranked)
        return Derivation(name, request.args[name], "user", option.ref, option.doc, (), cands)
    skipped: list[Candidate] = []
    if option.kernel_role and request.kernels is not None:
        # a default whose kernel cannot run on the target is skipped (unknown is not refused)
        runnable = []
        for r, read_ in ranked:
            verdict = kernel_verdict(request, option.kernel_role, proposed(r), facts)
            if verdict.status == "unsupported":
                skipped.append(Candidate(r.ref, proposed(r), r.priority, "skipped",
                                         f"its kernel cannot run on {request.platform.name}: {verdict.why}",
                                         verdict.why))
            else:
                runnable.append((r, read_))
        ranked = runnable
    if not ranked:
        if skipped and option.default is not None and option.default in option.unset_values:
            # "auto" (the MoE runner): SGLang's own runner then picks at run time, as with no default at all
            return Derivation(name, option.default, "fallback", option.ref,
                              f"every default candidate was skipped: its kernel cannot run on {request.platform.name}; "
                              f"the option's declared default {option.default!r} leaves the pick to SGLang at run time",
                              (), tuple(skipped))
        if skipped:
            return Derivation(name, None, "fallback", option.ref,
                              f"every default candidate was skipped: its kernel cannot run on {request.platform.name}",
                              (), tuple(skipped))
        return _declared_default(option, compiled)
    best, read = ranked[0]
    for other, _ in ranked[1:]:
        if other.priority == best.priority and proposed(other) != proposed(best):
            raise AmbiguousDefaultError(
                f"two defaults of equal priority {best.priority} propose different values for {name}: {best.ref} -> "
                f"{proposed(best)!r} and {other.ref} -> {proposed(other)!r}; give them distinct priorities"
            )
    lower = f"lower priority than {best.ref.id} ({best.priority})"
    cands = tuple(skipped) + tuple(Candidate(r.ref, proposed(r), r.priority, "shadowed", lower) for r, _ in ranked[1:])
    used = set(read) | ({best.set[name]["from"]} if isinstance(best.set[name], dict) else set())
    return Derivation(name, proposed(best), "default", best.ref, best.doc, tuple(facts[n] for n in _ordered(used)),
                      cands)


class _Adjusting:
    """One option's adjustments in progress: its current value and the first step still to decide."""

    def __init__(self, d: Derivation, steps: tuple[Adjust, ...]):
        self.d, self.steps = d, steps
        self.current, self.start, self.round = d.value, 0, 0
        self.done: list[Adjustment] = []

    def fact(self) -> dict:
        return {"id": f"a:{self.d.name}:{self.round}", "t": "adj", "o": self.d.name,
                **fact_fields(self.current, self.d.name)}

    def derivation(self, compiled) -> Derivation:
        d = self.d
        if not self.done:
            return d
        last = [a for a in self.done if not a.normalize]
        source = "adjustment" if last else d.source
        doc = compiled.pack.rule(last[-1].rule.id).doc if last else d.doc
        return Derivation(d.name, self.current, source, (last[-1].rule if last else d.rule), doc, d.facts,
                          d.candidates, tuple(self.done))


@dataclass(frozen=True)
class _LevelPlan:
    """What :func:`run` does with one engine round of the pack, worked out once per pack.

    ``quiet``: the level's derived facts, and its options with no adjustment and no kernel verdict, each with
    the derivation, fact use and engine fact (None when no rule reads it) it has when nothing concerns it (no
    branch of a fact's rule matched; nobody typed an option and no default rule proposed a value for it): the
    same in every resolution.  ``decide``: the level's other options, decided one by one; ``computes``: its
    computed values, in order."""

    quiet: dict[str, tuple[Derivation, FactUse, dict | None]]
    decide: tuple[str, ...]
    computes: tuple[str, ...]

    @cached_property
    def derivations(self) -> dict[str, Derivation]:
        return {n: q[0] for n, q in self.quiet.items()}

    @cached_property
    def values(self) -> dict[str, Any]:
        return {n: q[0].value for n, q in self.quiet.items()}

    @cached_property
    def uses(self) -> dict[str, FactUse]:
        return {n: q[1] for n, q in self.quiet.items()}

    @cached_property
    def engine_facts(self) -> tuple[tuple[str, dict], ...]:
        return tuple((n, q[2]) for n, q in self.quiet.items() if q[2] is not None)

    @cached_property
    def facts_only(self) -> tuple[dict, ...]:
        return tuple(f for _, f in self.engine_facts)


def _level_plans(compiled: CompiledPack) -> tuple[_LevelPlan, ...]:
    """The plan of each engine round of the pack (built on first use, kept with the compiled pack)."""
    known = compiled.memo.get("resolution.plans")
    if known is None:
        pack, plans = compiled.pack, []
        for level in pack.levels:
            quiet, decide = {}, []
            for name in level:
                option = pack.options.get(name)
                if name in pack.facts:
                    d = _unmatched(pack.facts[name])
                elif option is None or option.kernel_role or compiled.adjust_steps.get(name):
                    if name not in pack.computes:
                        decide.append(name)
                    continue
                else:
                    d = _declared_default(option, compiled)
                engine_fact = None
                # a declared default the engine cannot hold is refused (a json option's never reaches it)
                if not (option and option.opaque):
                    fields = fact_fields(d.value, name)
                    if name in compiled.reads:
                        engine_fact = {"id": f"v:{name}", "t": "val", "o": name, **fields}
                quiet[name] = (d, FactUse(name, d.value, d.source, _origin(d, None)), engine_fact)
            plans.append(_LevelPlan(quiet, tuple(decide), tuple(n for n in level if n in pack.computes)))
        known = compiled.memo["resolution.plans"] = tuple(plans)
    return known


def _declared_default(option, compiled: CompiledPack) -> Derivation:
    """The derivation of an option no default rule set: the same in every resolution (built once per pack)."""
    known = compiled.memo.setdefault("resolution.declared", {})
    d = known.get(option.name)
    if d is None:
        d = known[option.name] = Derivation(option.name, option.default, "fallback", option.ref,
                                            f"no default rule applied; the option's declared default. {option.doc}")
    return d


def _adjust_level(decided: dict[str, Derivation], compiled, session, facts, values, request, warnings, record,
                  refused: list) -> dict[str, Derivation]:
    """Run the adjustments of one level's options; returns the adjusted derivations.

    One "adj" fact per option and round carries its current value, and every step of that option
    matches it; the options of a level share each round's engine call.  In the usual case no step
    fires and the whole level costs one call.  The first step (in order) that changes a value is
    applied; the steps after it saw a stale value, so the next round asserts the new value (a fresh
    id) and reads only the steps after the applied one, which is exactly what one fact per step, in
    order, would decide."""
    active = [_Adjusting(d, compiled.adjust_steps[n]) for n, d in decided.items() if compiled.adjust_steps.get(n)]
    states = list(active)
    while active:
        batch = session.assert_facts([s.fact() for s in active])
        by_option: dict[str, list] = {}
        for key, read in batch:
            by_option.setdefault(compiled.branches[key].rule.option, []).append((key, read))
        # an option none of whose steps fired this round is done (most options, in the first round)
        active = [s for s in active
                  if s.d.name in by_option and _adjust_round(s, sorted(by_option[s.d.name], key=lambda kr: kr[0]),
                                                             compiled, facts, values, request, warnings, record,
                                                             refused)]
    return {s.d.name: s.derivation(compiled) for s in states}


def _adjust_round(s: _Adjusting, batch: list, compiled, facts, values, request, warnings, record,
                  refused: list) -> bool:
    """Apply the first step of this round that changes ``s``'s value; whether another round is needed."""
    d, steps, current = s.d, s.steps, s.current
    fired: dict[int, dict] = {}
    for key, read in batch:
        i = compiled.branches[key].adj_step
        if i >= s.start:
            fired.setdefault(i, read)
    change = next((i for i in sorted(fired) if _target(steps[i], values, current) != current), None)
    # record what fired from this round's first step up to the applied one: the steps after
    # it are decided again in the next round
    record([(key, read) for key, read in batch
            if s.start <= compiled.branches[key].adj_step <= (len(steps) if change is None else change)])
    if change is None:
        return False
    adj, read = steps[change], fired[change]
    new = _target(adj, values, current)
    s.start, s.round = change + 1, s.round + 1
    reads = set(read) | _value_names(adj)
    used = tuple(FactUse(n, current, d.source, Origin("before-adjustment")) if n == d.name else facts[n]
                 for n in _ordered(reads))
    msg_values = dict(values)
    msg_values[d.name] = current
    message = render_message(adj.message, msg_values, {"old": format_value(current), "new": format_value(new)})
    if d.source == "user" and not adj.normalize:
        flag = request.flags.get(d.name, compiled.pack.options[d.name].flag)
        wanted = f"{_as_typed(flag, current)} would be changed to {show_value(new)}"
        if request.strict:
            # --strict: the typed value stays, and the change the rule wants is a conflict
            refusal = f"{wanted} ({message.rstrip('.')}); --strict refuses to change a value you typed."
            refused.append(ConflictReport(adj.ref, adj.doc, refusal, (d.name,), used, (new,), None))
            return s.start < len(steps)
        warnings.append(Notice("adjusted", f"{_as_typed(flag, current)} was changed to {show_value(new)} "
                                           f"by {adj.ref}: {message}"))
    s.done.append(Adjustment(adj.ref, current, new, message, adj.normalize, used))
    s.current = new
    return s.start < len(steps)


def _as_typed(flag: str, value: Any) -> str:
    """A typed flag and value as the user wrote them: a switch alone (``--no-enable-tf32-matmul``)."""
    if isinstance(value, bool) and value == (not flag.startswith("--no-")):
        return flag
    return f"{flag}={format_value(value)}"


def _target(adj: Adjust, values: dict[str, Any], current: Any) -> Any:
    """The value an adjustment sets: its constant, the value of the name it copies ({from: name}), or its
    expression ({expr: ...}), where the option's own name stands for its value before this step."""
    if not isinstance(adj.value, dict):
        return adj.value
    if "expr" in adj.value:
        return cached_expression(adj.value["expr"]).evaluate({**values, adj.option: current})
    return values[adj.value["from"]]


def _value_names(adj: Adjust) -> set[str]:
    """The names an adjustment's value reads (for its explanation)."""
    if not isinstance(adj.value, dict):
        return set()
    if "expr" in adj.value:
        return set(cached_expression(adj.value["expr"]).names)
    return {adj.value["from"]}


def _origin_typed(name: str, request: Request) -> Origin:
    flag = request.flags.get(name, "--" + name.replace("_", "-"))
    value = request.args.get(name)
    return Origin("flag", where=f"{flag}{'' if isinstance(value, bool) else ' ' + format_value(value)}")


def _origin(d: Derivation, request: Request | None) -> Origin:
    if d.source == "user":
        assert request is not None  # noqa: S101 - a typed value's derivation always comes with its request
        return _origin_typed(d.name, request)
    how = ("derived" if d.value else "no-match") if d.source == "derived" else d.source
    key = (how, d.rule)
    origin = _RULE_ORIGINS.get(key)
    if origin is None:  # default, fallback, adjustment, computed, derived: one per rule and kind (frozen)
        if len(_RULE_ORIGINS) > 100_000:
            _RULE_ORIGINS.clear()
        origin = _RULE_ORIGINS[key] = Origin("rule", how, rule=d.rule)
    return origin


_RULE_ORIGINS: dict[tuple[str, RuleRef | None], Origin] = {}
