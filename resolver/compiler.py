"""Compile a rule pack to a durable-rules JSON ruleset, inside the subset 2.0.28 runs safely.

Facts in the engine (one per name, asserted once per resolution, never retracted):

* ``{"t": "val", "o": NAME, "v": VALUE}``  the final value of an input fact, derived fact or
  option (``v`` is omitted for null, so ``== null`` is ``$nex``);
* ``{"t": "adj", "o": OPTION, "k": STEP, "v": VALUE}``  an option's value before adjustment
  step ``STEP``; adjustment ``STEP`` matches only this fact, so adjustments chain in order.

Each DNF branch of each rule becomes one durable rule whose action (bound by name) records
the firing.  What is emitted: per-fact constant tests, ``$or`` of constants, and equality
joins; never a join under ``$neq``/ordered operators (P3), never an ``$or`` mixing a join
with a constant (P4), never ``none()`` (P5).  A ``_sink`` rule consumes every fact kind (P7).
The limits of reference section 6 are counted before any ruleset is created (P9).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .conditions import Atom
from .errors import RuleFileErrors, RuleFileProblem
from .rules import Adjust, Conflict, Default, Fact, RulePack

__all__ = ["CompiledBranch", "CompiledPack", "compile_pack", "check_safe_subset", "SINK"]

SINK = "_sink"
_MAX_SIBLING_CONSTANTS = 500  # engine hangs at 513 distinct constant tests under one node
_MAX_SHARED_JOIN_PATTERN = 250  # engine fails at 258 rules sharing one joined pattern
_MAX_RULES = 4000  # engine limit 4096 rules per ruleset
_ANCHOR = Atom("platform.name", "ne", None, False)  # always true: every resolution has a platform


@dataclass(frozen=True)
class CompiledBranch:
    """One DNF branch of one rule: the unit durable-rules matches and fires."""

    key: str  # durable rule and action name: "<rule id>#<branch>"
    rule: Fact | Default | Adjust | Conflict
    atoms: tuple[Atom, ...]
    adj_step: int | None  # for an adjustment: which step's "adj" fact it matches


@dataclass(frozen=True)
class CompiledPack:
    pack: RulePack
    branches: dict[str, CompiledBranch]
    ruleset: dict[str, dict]
    adjust_steps: dict[str, tuple[Adjust, ...]]  # option -> its adjustments, in order
    reads: frozenset[str]  # every name some branch reads (input facts nobody reads are not asserted)


def compile_pack(pack: RulePack) -> CompiledPack:
    steps: dict[str, list[Adjust]] = {}
    for a in sorted(pack.adjusts, key=lambda a: (a.option, a.order, a.ref.id)):
        steps.setdefault(a.option, []).append(a)
    problems: list[RuleFileProblem] = []
    branches: dict[str, CompiledBranch] = {}
    ruleset: dict[str, dict] = {}
    for rule in (*pack.facts.values(), *pack.defaults, *pack.adjusts, *pack.conflicts):
        adj_option = rule.option if isinstance(rule, Adjust) else None
        step = steps[adj_option].index(rule) if adj_option else None
        for i, atoms in enumerate(rule.when.branches):
            key = f"{rule.ref.id}#{i}"
            if not atoms:
                # a rule without `when` must still be activated by a fact: anchor it on the platform
                atoms = (_ANCHOR,)
            try:
                ruleset[key] = {"all": _patterns(atoms, adj_option, step), "run": key}
            except ValueError as exc:
                problems.append(RuleFileProblem(rule.ref.file, rule.ref.line, f"rule {rule.ref.id}: {exc}"))
                continue
            branches[key] = CompiledBranch(key, rule, atoms, step)
    ruleset[SINK] = {"all": [{"f": {"$or": [{"t": "val"}, {"t": "adj"}]}}], "run": SINK}
    problems += check_safe_subset(ruleset, pack)
    if problems:
        raise RuleFileErrors(problems)
    reads = frozenset(n for b in branches.values() for a in b.atoms for n in a.names())
    return CompiledPack(pack, branches, ruleset, {k: tuple(v) for k, v in steps.items()}, reads)


def _patterns(atoms: tuple[Atom, ...], adj_option: str | None, step: int | None) -> list[dict]:
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
        if name == adj_option:
            tests: list[dict] = [{"t": "adj"}, {"o": name}, {"k": step}]
        else:
            tests = [{"t": "val"}, {"o": name}]
        for a in by_name[name]:
            tests.append({"v": {aliases[a.value]: "v"}} if a.op == "join" else _test(a))
        patterns.append({alias: {"$and": tests}})
    return patterns


def _test(a: Atom) -> dict:
    """The durable test for one constant atom on field ``v`` (absent ``v`` = null)."""
    present, absent = {"$ex": {"v": 1}}, {"$nex": {"v": 1}}
    if a.op in ("lt", "le", "gt", "ge"):
        ordered = {f"${a.op.replace('le', 'lte').replace('ge', 'gte')}": {"v": a.value}}
        return {"$or": [absent, ordered]} if a.none_ok else ordered
    if a.op in ("eq", "ne"):
        values = (a.value,)
    else:
        values = a.value
    consts = [v for v in values if v is not None]
    if a.op in ("eq", "in"):
        tests = [{"v": v} for v in consts]
    else:
        tests = [{"$neq": {"v": v}} for v in consts]
    if a.op in ("eq", "in"):
        core = tests[0] if len(tests) == 1 else ({"$or": tests} if tests else None)
    else:
        core = tests[0] if len(tests) == 1 else ({"$and": tests} if tests else None)
    if a.none_ok:
        return absent if core is None else {"$or": [absent, core]}
    return present if core is None else ({"$and": [present, core]} if a.op in ("ne", "notin") else core)


def _constants(node: Any) -> set:
    """Every (operator, constant) the engine tests on field ``v`` below ``node``."""
    out: set = set()
    if isinstance(node, list):
        for n in node:
            out |= _constants(n)
    elif isinstance(node, dict):
        for op, sub in node.items():
            if op == "v" and not isinstance(sub, dict):
                out.add(("==", repr(sub)))
            elif op in ("$neq", "$lt", "$lte", "$gt", "$gte") and isinstance(sub, dict) and not isinstance(sub.get("v"), dict):
                out.add((op, repr(sub.get("v"))))
            else:
                out |= _constants(sub)
    return out


def check_safe_subset(ruleset: dict[str, dict], pack: RulePack) -> list[RuleFileProblem]:
    """Walk the emitted JSON: refuse what durable-rules 2.0.28 crashes, hangs or errs on."""
    problems: list[RuleFileProblem] = []

    def where(key: str):
        rid = key.split("#")[0]
        try:
            ref = pack.rule(rid).ref
            return ref.file, ref.line
        except KeyError:
            return "<compiled>", 0

    def walk(node: Any, key: str) -> tuple[bool, bool]:
        """Return (has join reference, has constant) below ``node``; check operator nesting."""
        join = const = False
        if isinstance(node, dict):
            for op, sub in node.items():
                if op in ("$and", "$or"):
                    flags = [walk(s, key) for s in sub]
                    j, c = any(f[0] for f in flags), any(f[1] for f in flags)
                    if op == "$or" and j and c:
                        problems.append(RuleFileProblem(*where(key), f"rule {key}: $or mixes a join with a constant (P4)"))
                    join, const = join or j, const or c
                elif op in ("$lt", "$lte", "$gt", "$gte", "$neq", "$eq"):
                    for v in sub.values():
                        if isinstance(v, dict):
                            if op != "$eq":
                                problems.append(RuleFileProblem(*where(key), f"rule {key}: join under {op} (P3)"))
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

    sibling: dict[str, set] = {}
    biggest: dict[str, tuple[str, int]] = {}  # fact -> the rule testing it the most ways (to cite)
    shared: dict[str, int] = {}
    for key, rule in ruleset.items():
        pats = rule["all"]
        for p in pats:
            for body in p.values():
                walk(body, key)
                tests = body.get("$and", [])
                if len(tests) >= 3 and "o" in tests[1]:
                    # every alternative of an `in [...]` is its own constant test to the engine
                    consts = _constants(tests[2:])
                    sibling.setdefault(tests[1]["o"], set()).update(consts)
                    heaviest = biggest.get(tests[1]["o"])
                    if heaviest is None or len(consts) > heaviest[1]:
                        biggest[tests[1]["o"]] = (key, len(consts))
                if len(pats) > 1:
                    shared[repr(body)] = shared.get(repr(body), 0) + 1
    if len(ruleset) > _MAX_RULES:
        problems.append(RuleFileProblem(pack.directory, 0, f"{len(ruleset)} compiled rules exceed the engine's limit ({_MAX_RULES})"))
    if len(sibling) > _MAX_SIBLING_CONSTANTS:
        problems.append(RuleFileProblem(pack.directory, 0, f"{len(sibling)} distinct facts tested exceed the engine's safe limit"))
    for name, tests in sibling.items():
        if len(tests) > _MAX_SIBLING_CONSTANTS:
            key = biggest[name][0]
            problems.append(RuleFileProblem(*where(key), f"'{name}' is tested {len(tests)} distinct ways across the pack "
                                            f"(this rule: {biggest[name][1]}); the engine hangs past 512"))
    for body, count in shared.items():
        if count > _MAX_SHARED_JOIN_PATTERN:
            problems.append(RuleFileProblem(pack.directory, 0, f"{count} rules share one pattern; the engine fails past 257: {body}"))
    return problems
