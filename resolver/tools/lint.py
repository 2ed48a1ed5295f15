"""``resolve lint``: check a rule pack statically, then sweep it with real requests.

Static checks find what loading alone cannot: rules that can never fire, defaults another
default always beats, defaults of equal priority that can both hold, conflicts no option change
can fix.  Problems the loader and compiler already find (unknown names and values, missing doc
or message, dependency cycles, constructs durable-rules cannot run safely) are reported here
too, each with its own check id, at file:line.

Reasoning about ``when:`` is done per name over a finite set of witness values: an option's
choices, a derived fact's true/false, the platforms' own fact sets, and otherwise the constants
the rules mention plus values around and beyond them.  Names are treated as independent except
the platform facts, so a check can miss a contradiction across two names but never reports one
that is not there.
"""
from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from typing import Any

from ..adapters.base import VERDICTS
from ..conditions import Atom, parse_condition
from ..errors import InputError, RuleFileErrors
from ..options import to_argv
from ..platforms import ALL_PLATFORMS, PLATFORM_FACTS, VARIABLE_PLATFORM_FACTS
from ..provenance import fact_name
from ..rules import Default, RulePack

__all__ = ["CHECKS", "Finding", "problem_findings", "static_findings"]

#: check id -> what it finds (``resolve lint --list-checks``)
CHECKS = {
    "syntax": "a when: that does not parse",
    "schema": "a rule file that does not match the rule-file schema",
    "missing-doc": "a rule without a doc",
    "missing-message": "a conflict or adjustment without a message",
    "unknown-name": "an option, fact or placeholder that does not exist",
    "unknown-value": "a value that is not among the option's choices",
    "duplicate": "a rule id or option declared twice",
    "cycle": "options whose rules depend on each other in a cycle",
    "engine-safety": "a construct durable-rules 2.0.28 cannot run safely, or beyond its limits",
    "never-fires": "a rule whose when: can never hold",
    "shadowed-default": "a default another default of higher priority always beats",
    "ambiguous-priority": "two defaults of equal priority, different values, that can both hold",
    "no-fix": "a conflict that reads no option the user can change and offers no fix",
    "sweep-crash": "a request of the sweep that crashes the resolver",
    "sweep-default-conflict": "a platform and model kind that conflicts with nothing set, not for a kernel reason",
    "sweep-no-fix": "a conflict of the sweep with no fix",
    "sweep-bad-fix": "a fix of the sweep that does not resolve",
}

_KERNEL_STATUSES = VERDICTS


@dataclass(frozen=True)
class Finding:
    check: str
    file: str
    line: int
    message: str
    severity: str = "error"
    detail: str = ""  # the offending source line with a caret, when the loader has it

    def render(self) -> str:
        head = f"{self.file}:{self.line}: {self.severity}: [{self.check}] {self.message}"
        return f"{head}\n{self.detail}" if self.detail else head

    def to_dict(self) -> dict[str, Any]:
        return {"check": self.check, "severity": self.severity, "file": self.file, "line": self.line,
                "message": self.message, "detail": self.detail}


# --- problems the loader and compiler report -----------------------------------------------------

def problem_findings(errors: RuleFileErrors) -> list[Finding]:
    return [Finding(p.code, p.path, p.line, p.message, detail=p.caret()) for p in errors.problems]


# --- witness values: what a name can be ------------------------------------------------------------

def _domain(pack: RulePack, name: str) -> list[Any] | None:
    """Every value ``name`` can take, when that is a small known set; None when open."""
    parts = fact_name(name)
    if parts.typed_by_user and parts.option is not None:
        opt = pack.options.get(parts.option)
        if opt is not None and opt.type == "choice":
            spelled = list(opt.value_aliases) if parts.family == "typed" else []
            return [*opt.choices, *spelled, None]
        return [True, False, None] if opt is not None and opt.type == "bool" else None
    if name in pack.options:
        opt = pack.options[name]
        if opt.type == "choice":
            return [*opt.choices, None]
        return [True, False, None] if opt.type == "bool" else None
    if name in pack.facts:
        return [True, False]
    if parts.is_kernel_verdict:
        return list(_KERNEL_STATUSES)
    return None


def _witnesses(pack: RulePack, name: str, atoms) -> list[Any]:
    domain = _domain(pack, name)
    if domain is not None:
        return domain
    out: list[Any] = [None, "\0another value", True, False]
    for a in atoms:
        for c in (a.value if a.op in ("in", "notin") else (a.value,)):
            out.append(c)
            if isinstance(c, (int, float)) and not isinstance(c, bool):
                out += [c - 1, c - 0.5, c + 0.5, c + 1]
    return out + [-10**9, 10**9]


def _split(atoms) -> tuple[dict[str, list[Atom]], list[Atom], bool]:
    """Atoms by name (platform input facts apart, tested jointly); whether a join is present."""
    by_name: dict[str, list[Atom]] = {}
    platform: list[Atom] = []
    join = False
    for a in atoms:
        if a.op == "join":
            join = True
        elif a.name in PLATFORM_FACTS and a.name not in VARIABLE_PLATFORM_FACTS:
            platform.append(a)
        else:
            by_name.setdefault(a.name, []).append(a)
    return by_name, platform, join


def _platforms_where(atoms: list[Atom]) -> set[str]:
    return {p.name for p in ALL_PLATFORMS if all(a.holds(p.facts()) for a in atoms)}


def _expand(pack: RulePack, atoms, fuel: int = 6) -> list[tuple[Atom, ...]]:
    """``atoms`` with each derived fact replaced by its definition (or its negation), as DNF branches,
    so that platform.is_cuda and platform.is_hip are seen to exclude each other."""
    branches: list[tuple[Atom, ...]] = [()]
    for a in atoms:
        fact = pack.facts.get(a.name)
        if fact is None or a.op == "join" or fuel == 0:
            branches = [b + (a,) for b in branches]
            continue
        when_true, when_false = a.holds({a.name: True}), a.holds({a.name: False})
        if when_true and when_false:
            continue  # the atom always holds
        if not (when_true or when_false):
            return []
        definition = fact.when if when_true else parse_condition(f"not ({fact.when.source})")
        alternatives = [e for d in definition.branches for e in _expand(pack, d, fuel - 1)]
        branches = [b + e for b in branches for e in alternatives]
        if len(branches) > _MAX_EXPANSION:
            return [tuple(atoms)]  # too many to enumerate: reason about the facts as free booleans
    return branches


_MAX_EXPANSION = 256


def satisfiable(pack: RulePack, atoms) -> bool:
    """Can every atom hold at once?  (Joins are assumed satisfiable.)"""
    return any(_satisfiable_flat(pack, b) for b in _expand(pack, atoms))


def _satisfiable_flat(pack: RulePack, atoms) -> bool:
    by_name, platform, _ = _split(atoms)
    if platform and not _platforms_where(platform):
        return False
    return all(any(all(a.holds({n: v}) for a in group) for v in _witnesses(pack, n, group))
               for n, group in by_name.items())


def implies(pack: RulePack, branch_a, branch_b) -> bool:
    """Whenever every atom of ``branch_a`` holds, does every atom of ``branch_b``?"""
    a_names, a_platform, _ = _split(branch_a)
    b_names, b_platform, b_join = _split(branch_b)
    if b_join:
        return False
    if b_platform and not _platforms_where(a_platform) <= _platforms_where(b_platform):
        return False
    for name, b_atoms in b_names.items():
        a_atoms = a_names.get(name, [])
        for v in _witnesses(pack, name, a_atoms + b_atoms):
            if all(a.holds({name: v}) for a in a_atoms) and not all(b.holds({name: v}) for b in b_atoms):
                return False
    return True


# --- the static checks -------------------------------------------------------------------------------

def static_findings(pack: RulePack) -> list[Finding]:
    findings = _never_fires(pack) + _default_findings(pack) + _no_fix(pack)
    return sorted(findings, key=lambda f: (f.file, f.line, f.check))


def _rules_with_when(pack: RulePack):
    return (*pack.facts.values(), *pack.defaults, *pack.adjusts, *pack.conflicts)


def _never_fires(pack: RulePack) -> list[Finding]:
    out = []
    for rule in _rules_with_when(pack):
        if not any(satisfiable(pack, b) for b in rule.when.branches):
            out.append(Finding("never-fires", rule.ref.file, rule.ref.line,
                               f"rule {rule.ref.id} can never fire: its when: ({rule.when.source}) cannot hold"))
    return out


def _value_key(rule: Default, option: str):
    value = rule.set[option]
    return ("from", value["from"]) if isinstance(value, dict) else ("value", value)


def _default_findings(pack: RulePack) -> list[Finding]:
    out = []
    by_option: dict[str, list[Default]] = {}
    for d in pack.defaults:
        for option in d.set:
            by_option.setdefault(option, []).append(d)
    for option, rules in sorted(by_option.items()):
        live = [r for r in rules if any(satisfiable(pack, b) for b in r.when.branches)]
        kernel_skips = bool(pack.options[option].kernel_role) if option in pack.options else False
        for low, high in itertools.permutations(live, 2):
            if high.priority > low.priority and not kernel_skips and _always_beaten(pack, low, high):
                out.append(Finding(
                    "shadowed-default", low.ref.file, low.ref.line,
                    f"default {low.ref.id} (priority {low.priority}) never decides {option}: whenever it applies, "
                    f"{high.ref.id} (priority {high.priority}, {high.ref.file}:{high.ref.line}) applies too"))
        for a, b in itertools.combinations(live, 2):
            if a.priority == b.priority and _value_key(a, option) != _value_key(b, option) \
                    and _can_both_hold(pack, a, b):
                first, second = sorted((a, b), key=lambda r: (r.ref.file, r.ref.line))
                out.append(Finding(
                    "ambiguous-priority", second.ref.file, second.ref.line,
                    f"defaults {first.ref.id} ({first.ref.file}:{first.ref.line}) and {second.ref.id} both have "
                    f"priority {a.priority}, propose different values for {option} and can both apply"))
    return out


def _always_beaten(pack, low: Default, high: Default) -> bool:
    branches = [b for b in low.when.branches if satisfiable(pack, b)]
    return bool(branches) and all(any(implies(pack, lb, hb) for hb in high.when.branches) for lb in branches)


def _can_both_hold(pack, a: Default, b: Default) -> bool:
    return any(satisfiable(pack, ab + bb) for ab in a.when.branches for bb in b.when.branches)


def _no_fix(pack: RulePack) -> list[Finding]:
    from ..fixes import options_behind

    out = []
    for c in pack.conflicts:
        if c.hints or c.option or c.remedy:
            continue
        if not options_behind(pack, c.when.names()):
            out.append(Finding("no-fix", c.ref.file, c.ref.line,
                               f"conflict {c.ref.id} reads no option the user can change and has no fixes: nobody can "
                               "act on it (add fixes: with the change that helps, or remedy: what would work "
                               "instead)"))
    return out


# --- the command -------------------------------------------------------------------------------------

def lint(argv: list[str], out) -> int:
    """``resolve lint``: exit 0 when the pack is clean, 1 with findings, 2 on bad input."""
    import json

    from ..argv import subcommand_parser
    from ..jobs import add_jobs_argument

    p = subcommand_parser("lint", "Check a rule pack: static checks, then an exhaustive sweep of real requests.")
    p.add_argument("--rules", metavar="DIR", help="the rule pack to check (default: the shipped rules)")
    p.add_argument("--no-sweep", action="store_true", help="static checks only (fast)")
    add_jobs_argument(p, 0, "the sweep's requests")
    p.add_argument("--sweep-platform", action="append", metavar="NAME",
                   help="sweep only this platform (repeatable; default: every platform)")
    p.add_argument("--sweep-model-kind", action="append", metavar="KIND",
                   help="sweep only this model kind (repeatable; default: every kind)")
    p.add_argument("--list-checks", action="store_true", help="list the checks and exit")
    ns = p.parse_args(argv)
    if ns.list_checks:
        out.write("".join(f"{check:<24} {what}\n" for check, what in CHECKS.items()))
        return 0
    if ns.rules is not None and not os.path.isdir(ns.rules):
        raise InputError(f"--rules: {ns.rules} is not a directory")
    only = _sweep_filter(ns.sweep_platform, ns.sweep_model_kind)
    findings, sweep = _lint(ns.rules, not ns.no_sweep, ns.jobs, only)
    if ns.format == "json":
        doc = {"findings": [f.to_dict() for f in findings], "sweep": _sweep_dict(sweep)}
        out.write(json.dumps(doc, indent=2) + "\n")
    else:
        out.writelines(f.render() + "\n" for f in findings)
        if sweep is not None:
            out.write(f"sweep: {sweep.requests} requests ({sweep.resolved} resolved, {sweep.conflicts} conflicts, "
                      f"{sweep.fixes_checked} fixes re-resolved) in {sweep.seconds:.1f} s on {sweep.jobs} "
                      f"process{'es' if sweep.jobs > 1 else ''}\n")
        errors = sum(f.severity == "error" for f in findings)
        out.write(f"{errors} error{'s' if errors != 1 else ''}, {len(findings) - errors} warning"
                  f"{'s' if len(findings) - errors != 1 else ''}\n" if findings else "the rule pack is clean\n")
    return 1 if any(f.severity == "error" for f in findings) else 0


def _sweep_filter(platforms, kinds):
    from ..platforms import find_platform
    from .sweep import MODEL_KINDS

    names = {find_platform(p).name for p in platforms} if platforms else None
    for kind in kinds or ():
        if kind not in MODEL_KINDS:
            raise InputError(f"--sweep-model-kind: unknown kind '{kind}' (known: {', '.join(MODEL_KINDS)})")
    return lambda req: (names is None or req["platform"] in names) and (not kinds or req["model_kind"] in kinds)


def _lint(rules: str | None, sweep: bool, jobs: int, only=None):
    from ..api import get_engine

    try:
        pack = get_engine(rules).pack  # loaded and compiled once (and cached), as the sweep will use it
    except RuleFileErrors as exc:
        return problem_findings(exc), None  # the sweep needs a pack that loads
    findings = static_findings(pack)
    report = None
    if sweep and findings:
        findings.append(Finding("sweep-skipped", pack.directory, 0, "the sweep did not run: fix the static findings "
                                "first (it needs a pack that holds together)", severity="warning"))
    if sweep and not findings:
        from .sweep import run_sweep

        report = run_sweep(rules, pack, jobs or None, only)
        findings += [Finding(check, file, line, f"{message} ({count} request{'s' if count > 1 else ''}, e.g. "
                                                f"{_example(example, pack)})")
                     for (check, _rule, file, line), (count, message, example) in sorted(report.problems.items())]
    return findings, report


def _example(req: dict, pack) -> str:
    args = " ".join(to_argv(pack, req["args"]))
    return f"{req['model_kind']} model on {req['platform']}" + (f" with {args}" if args else " with nothing set")


def _sweep_dict(report) -> dict | None:
    if report is None:
        return None
    return {"requests": report.requests, "resolved": report.resolved, "conflicts": report.conflicts,
            "fixes_checked": report.fixes_checked, "seconds": round(report.seconds, 1), "jobs": report.jobs}
