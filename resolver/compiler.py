"""Compile a rule pack to a durable-rules JSON ruleset, inside the subset 2.0.28 runs safely.

Facts in the engine (one per name, asserted once per resolution, never retracted):

* ``{"t": "val", "o": NAME, "v": ..., "n": ...}``  the final value of an input fact, derived
  fact or option;
* ``{"t": "adj", "o": OPTION, "v": ..., "n": ...}``  an option's value while its adjustment
  steps run; every step of OPTION matches it, and :func:`resolver.resolution.run` applies
  the first step in order that fired (one fact per round, not one per step: facts are what
  the engine spends its time on).

The matcher adds ``"b"``, the name's bucket (:func:`fact_bucket`), to every fact it asserts, and
every pattern tests it between ``t`` and ``o``.  The engine keeps the tests that follow one test
in an open-addressing hash set of 512 slots and probes it once per property of each fact: with
every fact name right after ``t`` the set was three quarters full and a fact cost the engine
three times as much as in a small ruleset (measured; docs/performance.md).  Buckets keep every
such set nearly empty.

``v`` is the value as a type-tagged string (absent for null, so ``== null`` is ``$nex``) and
``n`` the number, for numbers only (:mod:`resolver.engine_values`): equality, ``in`` and joins
test ``v``; ordered tests test ``n``.

Each DNF branch of each rule becomes one durable rule whose action (bound by name) records
the firing.  What is emitted: per-fact constant tests, ``$or`` of constants, and equality
joins; never a join under ``$neq``/ordered operators (P3), never an ``$or`` mixing a join
with a constant (P4), never ``none()`` (P5).  A ``_sink`` rule consumes every fact kind (P7).
Before any ruleset is created, :class:`EngineNetwork` rebuilds the test network the engine
would build from the JSON and counts it against the engine's measured limits (P9).  The P-numbers are
durable-rules 2.0.28's pitfalls, listed in docs/evidence.md; the limits are in docs/engine-limits.md.

The branches are split into parts, each its own durable-rules ruleset with its own sink
(:func:`split`): the limits are per ruleset and most of them grow with the rules in it, so a
pack of any size runs if its parts stay small.  A fact is asserted into every part with a
branch that reads it (:func:`fact_keys`), so each branch sees all its facts in its own part
and the split changes nothing that fires.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from functools import cached_property
from itertools import pairwise
from typing import Any

from .conditions import Atom
from .engine_values import constant, fact_value
from .errors import InputError, RuleFileErrors, RuleFileProblem
from .numbers import engine_value
from .rules import Adjust, Conflict, Default, Fact, RulePack

__all__ = ["SINK", "SINK_RULE", "CompiledBranch", "CompiledPack", "EngineNetwork", "NetworkLoad", "check_safe_subset",
           "compile_pack", "durable_rule", "emit_ruleset", "fact_bucket", "fact_keys", "part_ruleset"]

SINK = "_sink"
#: P7: durable-rules refuses a fact that no rule's tests let through.  The matcher asserts into a
#: part only facts some branch of it lets through (resolver.engine), so in a resolution nothing
#: reaches the sink; it takes facts flagged ``"s": 1`` (the limit probes of tests/engine_limits.py
#: walk the whole network with them).  A sink taking every fact fired once per fact, and each
#: firing went through durable-rules' Python action machinery: about a third of a resolution.
#: (A sink whose second pattern never completes took facts without firing, but crashed
#: delete_state on random packs.)
SINK_RULE = {"all": [{"f": {"$and": [{"$or": [{"t": "val"}, {"t": "adj"}]}, {"s": 1}]}}], "run": SINK}
#: buckets of fact names (:func:`fact_bucket`): few enough that the tests after ``t`` stay few, many
#: enough that each bucket's names do too (the shipped pack reads some 700 names)
FACT_BUCKETS = 32
_ANCHOR = Atom("platform.name", "ne", None, False)  # always true: every resolution has a platform
_OTHER = "s:\x00other"  # in the limit check: a fact string that no rule names

# Limits of durable-rules 2.0.28, each measured by bisection against the installed engine, every
# probe in a subprocess with a timeout: ``python -m tests.engine_limits`` measures and prints them,
# tests/unit/test_engine_limits.py fails if one drifts.  The engine matches facts with a network
# of tests (property, operator, constant) shared by every rule whose patterns start with the same
# tests; an equality join and the continuation after an ``$or`` are never shared.  A fact walks
# the network depth first, keeping the tests still to visit on a stack of 64.
ENGINE_MAX_RULES = 4096  # rules in one ruleset; one more: create_ruleset error 106
ENGINE_MAX_TESTS_AFTER = 511  # distinct tests (joins included) right after one test, in a hash set of 512
#   slots: with 512 every fact reaching that test loops forever in C, with 513 create_ruleset does
ENGINE_MAX_ALTERNATIVES_AFTER = 127  # ``$nex`` tests and ``$or`` continuations right after one test.  The list
#   has 128 slots and is read until an empty one: 128 ran in every probe, but only because the slot
#   after the list happened to be free or harmless; 129: error 107.  127 keeps the end inside the list.
ENGINE_MAX_PATTERNS_AT = 255  # rule patterns ending on one test: a list of 256 slots, read the same way.
#   256 ran; 257: error 108, or (joined patterns, where the next slot was free) written past the list
ENGINE_MAX_PENDING = 64  # tests on the stack while one fact walks the network; one more: every assert of that
#   fact fails with error 303 (and creating another ruleset later in the process segfaults)
ENGINE_MAX_EXPRESSIONS = 31  # ``$and``/``$or`` (2 each) and joins (1 each) in one pattern; one more: error 113
ENGINE_MAX_PATTERNS = 16  # facts one rule matches; a 17th: every assert completing the match fails with error 304
#   String and number limits of facts and constants: resolver/numbers.py.

# A part (one ruleset) uses at most this share of each limit that grows with its number of rules, so
# that no part sits at a limit: the pending count is a model of the engine's walk (worst sibling
# order, cross-checked on random packs, not proven).  Not less: every part costs each resolution
# its own engine calls and per-sid state (about 0.3 ms), and a half share doubled the parts of a
# pack crowded on one fact (7 -> 14 for 988 rules).  A branch that alone uses more still gets a
# part of its own, checked against the limits proper.
PART_SHARE = 0.75

#: the code of every problem this module finds: what durable-rules 2.0.28 cannot run safely (lint's check)
ENGINE_SAFETY = "engine-safety"


@dataclass(frozen=True)
class CompiledBranch:
    """One DNF branch of one rule: the unit durable-rules matches and fires."""

    key: str  # durable rule and action name: "<rule id>#<branch>"
    rule: Fact | Default | Adjust | Conflict
    atoms: tuple[Atom, ...]
    adj_step: int | None  # for an adjustment: its place among its option's steps


def fact_bucket(name: str) -> int:
    """The bucket of the fact ``name``: a pattern's test between its kind and its name (the module
    docstring says why); the same in every process."""
    return zlib.crc32(name.encode("utf-8", "surrogatepass")) % FACT_BUCKETS


def fact_keys(b: CompiledBranch) -> tuple[tuple, ...]:
    """The engine facts ``b`` matches: ``("val", name)`` for each name it reads, and for an
    adjustment ``("adj", option)``, which stands for its own option (see _patterns)."""
    option = b.rule.option if isinstance(b.rule, Adjust) else None
    names = dict.fromkeys(n for a in b.atoms for n in a.names() if n != option)
    return (*(("val", n) for n in names), *((("adj", option),) if option is not None else ()))


@dataclass(frozen=True)
class CompiledPack:
    pack: RulePack
    branches: dict[str, CompiledBranch]
    adjust_steps: dict[str, tuple[Adjust, ...]]  # option -> its adjustments, in order
    reads: frozenset[str]  # every name some branch reads (input facts nobody reads are not asserted)
    parts: tuple[tuple[str, ...], ...]  # branch keys of each durable-rules ruleset, each within the limits
    #: what the modules that run the pack work out from it once, by key (never part of its identity)
    memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @cached_property
    def ruleset(self) -> dict[str, dict]:
        """Every branch's durable rule by key, and the sink (each part has its copy): emitted from the branches
        when durable-rules first takes the pack (a pack read from the cache and matched in Python never is)."""
        return emit_ruleset(self.branches)


def part_ruleset(ruleset: dict[str, dict], keys: tuple[str, ...]) -> dict[str, dict]:
    """The durable ruleset of one part: its branches and the sink (P7: every fact it gets is consumed)."""
    return {**{k: ruleset[k] for k in keys}, SINK: ruleset[SINK]}


def compile_pack(pack: RulePack) -> CompiledPack:
    steps: dict[str, list[Adjust]] = {}
    for a in sorted(pack.adjusts, key=lambda a: (a.option, a.order, a.ref.id)):
        steps.setdefault(a.option, []).append(a)
    problems = _value_problems(pack)
    branches: dict[str, CompiledBranch] = {}
    ruleset: dict[str, dict] = {}
    rules: list[Fact | Default | Adjust | Conflict] = [*pack.facts.values(), *pack.defaults, *pack.adjusts,
                                                       *pack.conflicts]
    for rule in rules:
        step = steps[rule.option].index(rule) if isinstance(rule, Adjust) else None
        for i, atoms in enumerate(rule.when.branches):
            key = f"{rule.ref.id}#{i}"
            if not atoms:
                # a rule without `when` must still be activated by a fact: anchor it on the platform
                atoms = (_ANCHOR,)
            branch = CompiledBranch(key, rule, atoms, step)
            try:
                ruleset[key] = durable_rule(branch)
            except ValueError as exc:
                problems.append(RuleFileProblem(rule.ref.file, rule.ref.line, f"rule {rule.ref.id}: {exc}",
                                                code=ENGINE_SAFETY))
                continue
            branches[key] = branch
    ruleset[SINK] = SINK_RULE
    problems += check_safe_subset(ruleset, pack)
    parts = split(ruleset, tuple(branches)) if branches else []
    for _, network in parts:
        problems += _located(network.problems, pack)
    if problems:
        raise RuleFileErrors(problems)
    reads = frozenset(n for b in branches.values() for a in b.atoms for n in a.names())
    compiled = CompiledPack(pack, branches, {k: tuple(v) for k, v in steps.items()}, reads,
                            tuple(part for part, _ in parts))
    compiled.__dict__["ruleset"] = ruleset  # the one just checked: the cached property's value, not emitted again
    return compiled


def durable_rule(branch: CompiledBranch) -> dict:
    """The durable rule ``branch`` compiles to (ValueError for joins in a circle)."""
    adj_option = branch.rule.option if isinstance(branch.rule, Adjust) else None
    return {"all": _patterns(branch.atoms, adj_option), "run": branch.key}


def emit_ruleset(branches: dict[str, CompiledBranch]) -> dict[str, dict]:
    """The ruleset of branches a compile accepted, emitted again (the pack cache stores no engine JSON)."""
    return {**{key: durable_rule(b) for key, b in branches.items()}, SINK: SINK_RULE}


def split(ruleset: dict[str, dict], keys: tuple[str, ...]) -> list[tuple[tuple[str, ...], EngineNetwork]]:
    """Consecutive runs of ``keys``, each with the network of its ruleset, every one within
    ``PART_SHARE`` of the limits that grow with a ruleset (or a single branch).

    Runs keep rules that sit together in the files (one topic, mostly the same facts) together,
    so most facts go to few parts.  Halving until each run fits, then joining neighbours while
    they still fit: the shipped pack today is one part, and a crowded stretch (many rules on one
    fact) is cut finer without cutting the rest of the pack as fine.
    """
    parts: list[tuple[tuple[str, ...], EngineNetwork]] = []
    for run, network in _halve(ruleset, keys):
        if parts:
            joined = _fitting(ruleset, parts[-1][0] + run)
            if joined is not None:
                parts[-1] = (parts[-1][0] + run, joined)
                continue
        parts.append((run, network))
    return parts


def _halve(ruleset: dict[str, dict], keys: tuple[str, ...]) -> list[tuple[tuple[str, ...], EngineNetwork]]:
    network = _fitting(ruleset, keys)
    if network is None and len(keys) > 1:
        half = len(keys) // 2
        return _halve(ruleset, keys[:half]) + _halve(ruleset, keys[half:])
    # one branch too big even alone keeps its part: compile_pack reports its problems
    return [(keys, network or EngineNetwork(part_ruleset(ruleset, keys)))]


def _fitting(ruleset: dict[str, dict], keys: tuple[str, ...]) -> EngineNetwork | None:
    """The network of ``keys``' ruleset if it is within ``PART_SHARE`` of the limits, else None."""
    network = EngineNetwork(part_ruleset(ruleset, keys), walk=False)
    if not network.load.fits(PART_SHARE):
        return None  # past a limit already: spare the walks counting pending tests (most of the cost)
    network.check_pending()
    return network if network.load.fits(PART_SHARE) else None


def _value_problems(pack: RulePack) -> list[RuleFileProblem]:
    """Values rules give options and facts become engine facts: check them here, not mid-resolution."""
    found: list[tuple[Any, Any, str]] = [(o.ref, o.default, f"option {o.name}: default") for o in pack.options.values()
                                         if not o.opaque]  # a json option's value never reaches the engine
    found += [(d.ref, v, f"rule {d.ref.id}: set {n}") for d in pack.defaults for n, v in d.set.items()
              if not isinstance(v, dict)]  # {from: other} copies a value that is checked itself
    found += [(a.ref, a.value, f"rule {a.ref.id}: value") for a in pack.adjusts if not isinstance(a.value, dict)]
    problems = []
    for ref, value, where in found:
        try:
            engine_value(value, where)
        except InputError as exc:
            problems.append(RuleFileProblem(ref.file, ref.line, str(exc), code=ENGINE_SAFETY))
    return problems


def _patterns(atoms: tuple[Atom, ...], adj_option: str | None) -> list[dict]:
    """One pattern per fact the branch reads; joins refer only to earlier aliases."""
    by_name: dict[str, list[Atom]] = {}
    for a in atoms:
        by_name.setdefault(a.name, []).append(a)
        if a.op == "join":
            by_name.setdefault(a.value, [])
    if adj_option is not None:
        by_name.setdefault(adj_option, [])
    aliases: dict[str, str] = {}
    patterns: list[dict] = []
    pending = list(by_name)
    while pending:
        # place a fact only once every fact it joins with is placed (no join cycles: equality only)
        for name in pending:
            joins = [a.value for a in by_name[name] if a.op == "join"]
            if all(j in aliases or j == name for j in joins):
                break
        else:
            raise ValueError("circular equality joins cannot be compiled")
        pending.remove(name)
        alias = f"p{len(aliases)}"
        aliases[name] = alias
        tests: list[dict] = [{"t": "adj" if name == adj_option else "val"}, {"b": fact_bucket(name)}, {"o": name}]
        for a in by_name[name]:
            tests.append({"v": {aliases[a.value]: "v"}} if a.op == "join" else _test(a))
        patterns.append({alias: {"$and": tests}})
    return patterns


def _test(a: Atom) -> dict:
    """The durable test for one constant atom (absent ``v`` = null; see the module docstring)."""
    present, absent = {"$ex": {"v": 1}}, {"$nex": {"v": 1}}
    if a.op in ("lt", "le", "gt", "ge"):
        # only numbers have ``n``: a null, string or boolean is "no value" to an ordered test
        ordered = {f"${a.op.replace('le', 'lte').replace('ge', 'gte')}": {"n": a.value}}
        return {"$or": [{"$nex": {"n": 1}}, ordered]} if a.none_ok else ordered
    values = (a.value,) if a.op in ("eq", "ne") else a.value
    consts = list(dict.fromkeys(constant(v) for v in values if v is not None))  # 1 and 1.0 are one test
    tests: list[dict]
    if a.op in ("eq", "in"):
        tests = [{"v": c} for c in consts]
        core = tests[0] if len(tests) == 1 else ({"$or": tests} if tests else None)
    else:
        tests = [{"$neq": {"v": c}} for c in consts]
        core = tests[0] if len(tests) == 1 else ({"$and": tests} if tests else None)
    if a.none_ok:
        return absent if core is None else {"$or": [absent, core]}
    return present if core is None else ({"$and": [present, core]} if a.op in ("ne", "notin") else core)


def _where(key: str, pack: RulePack) -> tuple[str, int]:
    try:
        ref = pack.rule(key.split("#")[0]).ref
    except KeyError:
        return "<compiled>", 0
    return ref.file, ref.line


def _located(found: list[tuple[str, str]], pack: RulePack) -> list[RuleFileProblem]:
    return [RuleFileProblem(*_where(key, pack), f"rule {key.split('#')[0]}: {message}", code=ENGINE_SAFETY)
            for key, message in found]


def check_safe_subset(ruleset: dict[str, dict], pack: RulePack) -> list[RuleFileProblem]:
    """Walk the emitted JSON: refuse the operator nestings durable-rules 2.0.28 crashes or mis-answers on
    (the limits are checked per part, by :class:`EngineNetwork`)."""
    problems: list[RuleFileProblem] = []

    def walk(node: Any, key: str) -> tuple[bool, bool]:
        """Return (has join reference, has constant) below ``node``; check operator nesting."""
        join = const = False
        if isinstance(node, dict):
            for op, sub in node.items():
                if op in ("$and", "$or"):
                    flags = [walk(s, key) for s in sub]
                    j, c = any(f[0] for f in flags), any(f[1] for f in flags)
                    if op == "$or" and j and c:
                        problems.append(RuleFileProblem(*_where(key, pack), f"rule {key}: $or mixes a join with a "
                                                        "constant (P4)", code=ENGINE_SAFETY))
                    join, const = join or j, const or c
                elif op in ("$lt", "$lte", "$gt", "$gte", "$neq", "$eq"):
                    for v in sub.values():
                        if isinstance(v, dict):
                            if op != "$eq":
                                problems.append(RuleFileProblem(*_where(key, pack), f"rule {key}: join under {op} (P3)",
                                                                code=ENGINE_SAFETY))
                            join = True
                        else:
                            const = True
                elif op in ("$ex", "$nex"):
                    const = True
                elif isinstance(sub, dict):
                    join = True
                else:
                    const = True
        return join, const

    for key, rule in ruleset.items():
        for p in rule["all"]:
            for body in p.values():
                walk(body, key)
    return problems


@dataclass(eq=False)
class _Test:
    """One node of the engine's test network: ``prop`` ``op`` ``const`` (op "join", "or" or a test)."""

    prop: str
    op: str
    const: Any
    name: str | None  # the fact name ("o") this test is about, for messages
    rule: str  # the rule that created it, cited when a limit is crossed here
    order: int
    shared: dict[tuple, _Test] = field(default_factory=dict)  # constant tests after this one, by _ident
    others: list[_Test] = field(default_factory=list)  # those of them that are not == or $nex
    joins: list[_Test] = field(default_factory=list)  # joins after this one (never shared)
    hashed: int = 0  # tests in the engine's hash set after this one: shared ones but $nex, and joins
    alts: list[_Test] = field(default_factory=list)  # $nex tests and $or continuations after this one
    ends: list[str] = field(default_factory=list)  # rules with a pattern ending here


def _ident(prop: str, op: str, const: Any) -> tuple:
    # the engine shares a test only with one of the same JSON type: 1 and 1.0 are two tests
    return prop, op, type(const).__name__, const


def _show(node: _Test) -> str:
    """A test as a rule author would write it."""
    if node.op == "or":
        return f"the `in`/`!=` list on '{node.name}'"
    if node.op == "join":
        return f"a join on '{node.name}'"
    if node.prop == "t":
        return "every fact"
    if node.prop == "b":
        return f"the facts of bucket {node.const}"
    if node.prop == "o":
        return f"'{node.name}'"
    shown = node.const
    if isinstance(shown, str) and shown[:2] in ("s:", "b:", "n:"):
        shown = repr(fact_value({"v": shown})) if shown[:2] == "s:" else shown[2:]
    symbol = {"eq": "==", "neq": "!=", "lt": "<", "lte": "<=", "gt": ">", "gte": ">=", "ex": "!= null",
              "nex": "== null"}.get(node.op, node.op)
    return f"'{node.name}' {symbol}" + ("" if node.op in ("ex", "nex") else f" {shown}")


@dataclass
class NetworkLoad:
    """The most one ruleset uses of each engine limit (``ENGINE_MAX_*``)."""

    rules: int = 0
    tests_after: int = 0
    alternatives_after: int = 0
    patterns_at: int = 0
    pending: int = 0
    expressions: int = 0  # in one pattern
    patterns: int = 0  # in one rule

    def fits(self, share: float = 1.0) -> bool:
        """Within ``share`` of every limit that grows with the number of rules, and within the
        per-branch limits (expressions, patterns: no split can lower those)."""
        return (self.rules <= ENGINE_MAX_RULES * share and self.tests_after <= ENGINE_MAX_TESTS_AFTER * share
                and self.alternatives_after <= ENGINE_MAX_ALTERNATIVES_AFTER * share
                and self.patterns_at <= ENGINE_MAX_PATTERNS_AT * share and self.pending <= ENGINE_MAX_PENDING * share
                and self.expressions <= ENGINE_MAX_EXPRESSIONS and self.patterns <= ENGINE_MAX_PATTERNS)


class EngineNetwork:
    """The test network durable-rules 2.0.28 builds from a JSON ruleset, counted against its limits.

    ``problems`` lists ``(rule key, message)`` for every limit the ruleset crosses, citing the
    rule whose test crossed it; ``load`` is how much of each limit it uses.  The network is
    rebuilt as the engine builds it: tests are shared by property, operator and constant; a
    join, and what follows an ``$or``, belong to one rule.  Tests still to visit while a fact
    walks the network (the engine's stack of 64) depend on the fact: every value that can make
    a difference is tried (null, each constant tested, a number in each interval between
    numeric constants, another string, both booleans), and siblings are assumed visited in the
    worst order.
    """

    def __init__(self, ruleset: dict[str, dict], walk: bool = True):
        """``walk=False``: the structure only, without the walks counting pending tests (the costly
        part, call :meth:`check_pending` for it), for a splitter that may reject the ruleset anyway."""
        self.problems: list[tuple[str, str]] = []
        self.load = NetworkLoad(rules=len(ruleset))
        self._count = 0
        self.root = self._new("", "root", None, None, SINK)
        for key, rule in ruleset.items():
            patterns = rule["all"]
            self.load.patterns = max(self.load.patterns, len(patterns))
            if len(patterns) > ENGINE_MAX_PATTERNS:
                self._problem(key, f"a branch reads {len(patterns)} facts; durable-rules 2.0.28 matches at most "
                                   f"{ENGINE_MAX_PATTERNS} facts in one rule (error 304)")
            for pattern in patterns:
                (body,) = pattern.values()
                size = [0]
                end = self._add(body, self.root, key, size)
                end.ends.append(key)
                self.load.patterns_at = max(self.load.patterns_at, len(end.ends))
                self.load.expressions = max(self.load.expressions, size[0])
                if len(end.ends) == ENGINE_MAX_PATTERNS_AT + 1:
                    self._problem(key, f"{len(end.ends)} rule branches test exactly the same conditions up to "
                                       f"{_show(end)}; durable-rules 2.0.28 takes at most {ENGINE_MAX_PATTERNS_AT} "
                                       "(error 108): merge them or make their conditions differ")
                if size[0] > ENGINE_MAX_EXPRESSIONS:
                    self._problem(key, f"the tests of one branch on '{end.name}' take {size[0]} engine expressions "
                                       "(2 per `in` list, `!=` letting null through or `and`/`or` group, 1 per `==` "
                                       f"between facts); durable-rules 2.0.28 takes at most {ENGINE_MAX_EXPRESSIONS} "
                                       "(error 113): split the rule")
        keys = [k for k in ruleset if k != SINK]
        if len(ruleset) > ENGINE_MAX_RULES:
            self._problem(keys[ENGINE_MAX_RULES - 1], f"the pack compiles to {len(ruleset)} engine rules (one per "
                          f"branch of each rule, and one more); durable-rules 2.0.28 takes at most {ENGINE_MAX_RULES} "
                          "in a ruleset (error 106)")
        if walk:
            self.check_pending()

    def _new(self, prop: str, op: str, const: Any, name: str | None, rule: str) -> _Test:
        self._count += 1
        return _Test(prop, op, const, name, rule, self._count)

    def _problem(self, key: str, message: str) -> None:
        self.problems.append((key, message))

    def _add(self, expr: dict, parent: _Test, key: str, size: list[int]) -> _Test:
        """Add one expression after ``parent`` as rete.c does; return the test it ends on."""
        ((op, body),) = expr.items()
        if op == "$and":
            size[0] += 2
            node = parent
            for e in body:
                node = self._add(e, node, key, size)
            return node
        if op == "$or":
            size[0] += 2
            after = self._new("$forward", "or", None, parent.name, key)  # a property no fact has: always visited
            for e in body:
                self._link(self._add(e, parent, key, size), after, key)
            return after
        if op.startswith("$"):
            ((prop, const),) = body.items()
            op = op[1:]
        else:
            prop, const, op = op, body, "eq"
        name = const if prop == "o" else parent.name
        if op == "eq" and isinstance(const, dict):
            size[0] += 1
            node = self._new(prop, "join", None, name, key)
            parent.joins.append(node)
            self._count_tests(parent, key)
            return node
        ident = _ident(prop, op, const)
        found = parent.shared.get(ident)
        if found is not None:
            return found
        node = parent.shared[ident] = self._new(prop, op, const, name, key)
        if op == "nex":
            self._link(parent, node, key)  # $nex tests live in the list of alternatives, not the hash set
            return node
        if op != "eq":
            parent.others.append(node)
        self._count_tests(parent, key)
        return node

    def _count_tests(self, parent: _Test, key: str) -> None:
        parent.hashed += 1
        self.load.tests_after = max(self.load.tests_after, parent.hashed)
        if parent.hashed == ENGINE_MAX_TESTS_AFTER + 1:
            what = ("different facts are tested" if parent.prop in ("t", "b")
                    else f"different tests follow {_show(parent)}")
            self._problem(key, f"{parent.hashed} {what} (each value of an `in` list and each `==` between facts "
                               f"counts); durable-rules 2.0.28 takes at most {ENGINE_MAX_TESTS_AFTER} and loops "
                               "forever past that")

    def _link(self, node: _Test, alt: _Test, key: str) -> None:
        node.alts.append(alt)
        self.load.alternatives_after = max(self.load.alternatives_after, len(node.alts))
        if len(node.alts) == ENGINE_MAX_ALTERNATIVES_AFTER + 1:
            self._problem(key, f"{len(node.alts)} `in` lists, `!=` tests letting null through or null tests follow "
                               f"{_show(node)}; durable-rules 2.0.28 takes at most {ENGINE_MAX_ALTERNATIVES_AFTER} "
                               "(error 107)")

    def check_pending(self) -> None:
        for kind in (t for t in self.root.shared.values() if t.prop == "t" and t.op == "eq"):
            facts: list[dict] = [{"t": kind.const, "b": 0, "o": "\x00"}]  # a fact no rule tests
            for bucket in (t for t in kind.shared.values() if t.prop == "b" and t.op == "eq"):
                for fact_node in (t for t in bucket.shared.values() if t.prop == "o" and t.op == "eq"):
                    facts += _candidates(kind.const, bucket.const, fact_node)
            for fact in facts:
                found = self._overflow(self.root, fact, 0)
                if found is not None:
                    pending, pushed = found
                    culprit = max(pushed, key=lambda t: t.order)
                    value = fact_value(fact)
                    shown = ("null" if value is None else "a string no rule names" if fact["v"].startswith(_OTHER)
                             else repr(value))
                    self._problem(culprit.rule, f"when '{fact['o']}' is {shown}, durable-rules 2.0.28 would have "
                                  f"{pending} tests pending at once (at most {ENGINE_MAX_PENDING}; such a resolution "
                                  "fails with error 303): too many rules compare it with another fact (`==`), or "
                                  "list one of its values in `in` lists or `!=` tests")
                    break  # one report per fact name

    def _overflow(self, node: _Test, fact: dict, below: int) -> tuple[int, list[_Test]] | None:
        """Visit ``node`` as handleAlpha does, ``below`` tests waiting under it; the first overflow found."""
        pushed = [a for a in node.alts if a.prop not in fact]
        for prop, value in fact.items():
            hit = node.shared.get(_ident(prop, "eq", value))
            if hit is not None:
                pushed.append(hit)
        pushed += [t for t in node.others if _holds(t, fact)]
        pushed += [j for j in node.joins if j.prop in fact]  # the engine visits a join whatever the value
        top = below + len(pushed)
        self.load.pending = max(self.load.pending, top)
        if top > ENGINE_MAX_PENDING:
            return top, pushed
        for child in pushed:  # worst order: each child visited while all its siblings wait
            found = self._overflow(child, fact, top - 1)
            if found is not None:
                return found
        return None


def _holds(test: _Test, fact: dict) -> bool:
    """Whether a non-equality test matches ``fact`` (True when in doubt: more to visit is the safe side)."""
    if test.prop not in fact:
        return False
    value, const = fact[test.prop], test.const
    if test.op == "ex":
        return True
    if test.op == "neq":
        return value != const or type(value) is not type(const)
    numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (value, const))
    if not numbers:
        return True
    return {"lt": value < const, "lte": value <= const, "gt": value > const, "gte": value >= const}[test.op]


def _candidates(kind: str, bucket: int, fact_node: _Test) -> list[dict]:
    """Facts that differ in every way the tests after ``fact_node`` can tell apart."""
    consts: dict[str, set] = {}
    seen: set[int] = set()
    todo = [fact_node]
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node.op not in ("join", "or", "ex", "nex"):
            consts.setdefault(node.prop, set()).add(node.const)
        todo += [*node.shared.values(), *node.joins, *node.alts]
    tagged = {c for c in consts.get("v", ()) if isinstance(c, str)}
    numbers = sorted({_number(c[2:]) for c in tagged if c.startswith("n:")}
                     | {c for c in consts.get("n", ()) if isinstance(c, (int, float)) and not isinstance(c, bool)})
    points = [*numbers, *((a + b) / 2 for a, b in pairwise(numbers)), numbers[0] - 1, numbers[-1] + 1] \
        if numbers else [0]
    other = _OTHER
    while other in tagged:
        other += "\x00"  # a string equal to no constant
    values: list[dict] = [{}, {"v": other}, {"v": "b:true"}, {"v": "b:false"}]
    values += [{"v": c} for c in sorted(tagged) if not c.startswith("n:")]
    values += [{"v": constant(x), "n": x} for x in points]
    return [{"t": kind, "b": bucket, "o": fact_node.const, **v} for v in values]


def _number(text: str) -> int | float:
    return int(text) if text.lstrip("-").isdigit() else float(text)
