"""The checks SGLang makes at launch, and which of them the rules encode.

``resolver/data/sglang_checks.json`` lists every raise and assert site of SGLang 0.5.23's launch
resolution (``tools/sync_checks.py`` makes it from the wheel's source); ``resolver/data/checks.yaml``
maps each raising function to the rules that encode its checks, or says why none does
(docs/checks.md).  This module joins the two into :class:`Check` records and answers the one
question a resolution asks: which checks SGLang would make on this launch that no rule evaluated
(:func:`not_checked`).  Both files are read on first use and kept for the process.
"""
from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Literal

__all__ = ["Check", "REASONS", "catalogue", "coverage", "not_checked", "platform_facts", "release"]

Status = Literal["modelled", "not-modelled"]

#: why a check is not modelled (checks.yaml writes "code: text"); docs/checks.md explains each
REASONS = ("not-yet", "partial", "needs-weights", "needs-gpu", "needs-install", "needs-file", "needs-network",
           "other-platform", "unreachable-from-flags")
#: reasons no launch the resolver answers can trigger: such checks are never named by not_checked
_NEVER_TRIGGERED = frozenset({"other-platform", "unreachable-from-flags"})
_UNMAPPED = "not-yet: not mapped in resolver/data/checks.yaml"


@dataclass(frozen=True)
class Check:
    """One raise or assert site of SGLang's launch resolution and what the rules make of it."""

    id: str  # "module:function", e.g. "srt/arg_groups/parallel_hook.py:handle_context_parallelism"
    site: str  # the site's handle within its function: its message's leading words (stable across releases)
    module: str
    function: str  # Class.method or func (outer.inner for a nested def)
    line: int  # in the release catalogued; moves between releases, so nothing keys on it
    kind: str  # raise | assert
    exception: str  # ValueError, AssertionError, ...
    message: str  # SGLang's message template, f-string fields as {expr}
    fields: tuple[str, ...]  # the ServerArgs fields its guards read
    model: tuple[str, ...]  # the model-config attributes they read (hf_config.X, model_config.X)
    env: tuple[str, ...]  # the environment variables they read
    status: Status
    rules: tuple[str, ...]  # the rule ids that encode it (in part, when status is not-modelled)
    reason: str  # "code: text" when not modelled, else ""
    #: what must hold for it to fire, as far as launch values tell (the predicate tools/sync_checks.py writes,
    #: as nested lists: JSON; None where a test reads what no launch value gives)
    guard: Any = field(default=True, repr=False, compare=False)

    @property
    def sglang_name(self) -> str:
        """``sglang.srt.pkg.module:function``, as a traceback (and the oracle's ``raised_in``) names it."""
        return f"sglang.{self.module.removesuffix('.py').replace('/', '.')}:{self.function.rsplit('.', 1)[-1]}"

    @property
    def reason_code(self) -> str:
        return self.reason.split(":", 1)[0] if self.reason else ""

    def to_dict(self) -> dict[str, Any]:
        return {"check": self.id, "site": self.site, "line": self.line, "kind": self.kind, "exception": self.exception,
                "message": self.message,
                "reads": {"fields": list(self.fields), "model": list(self.model), "env": list(self.env)},
                "status": self.status, "rules": list(self.rules), "reason": self.reason or None}


def _read(name: str) -> str:
    return resources.files(__package__).joinpath("data", name).read_text(encoding="utf-8")


@functools.lru_cache(maxsize=1)
def _data() -> tuple[dict[str, Any], dict[str, Any]]:
    import yaml  # here, not at import: importing resolver.checks reads nothing

    # libyaml's loader when PyYAML has it: the pure-Python one takes about a second on this file
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return json.loads(_read("sglang_checks.json")), yaml.load(_read("checks.yaml"), Loader=loader)  # noqa: S506


def release() -> str:
    """The SGLang release the catalogue was made from."""
    return str(_data()[0]["release"])


def _status(entry: Mapping[str, Any]) -> tuple[Status, tuple[str, ...], str]:
    rules = tuple(entry.get("rules") or ())
    reason = str(entry.get("not_modelled") or "")
    if not rules and not reason:
        reason = _UNMAPPED
    return ("not-modelled" if reason else "modelled"), rules, reason


@functools.lru_cache(maxsize=1)
def catalogue() -> tuple[Check, ...]:
    """Every check, in the catalogue's order (module, then line)."""
    sites, mapping = _data()
    functions: Mapping[str, Any] = mapping.get("functions") or {}
    out = []
    for s in sites["sites"]:
        key = f"{s['module']}:{s['function']}"
        entry = functions.get(key) or {}
        # a site's own entry replaces the function's; the function's covers the sites it does not list
        chosen = (entry.get("sites") or {}).get(s["handle"], entry)
        status, rules, reason = _status(chosen)
        reads = s["reads"]
        guard = _untyped(s["guard"], chosen.get("untyped") if chosen is not entry else None)
        out.append(Check(key, s["handle"], s["module"], s["function"], s["line"], s["kind"], s["exception"],
                         s["message"],
                         tuple(reads["fields"]), tuple(reads["model"]), tuple(reads["env"]), status, rules, reason,
                         _and(_and(guard, _when(entry.get("when"))),
                              _when(chosen.get("when")) if chosen is not entry else True)))
    return tuple(out)


@dataclass(frozen=True)
class _Index:
    named: tuple[Check, ...]  # the checks a launch can leave unevaluated
    by_read: dict[str, tuple[int, ...]]  # field, or environment variable ("$" before it) -> positions in named
    read_fields: frozenset[str]  # the fields some named check reads
    defaults: dict[str, Any]  # SGLang's defaults (the flag table's): what a default launch holds
    #: position -> (its compiled guard, its blockers), worked out the first time a launch touches the check: a
    #: launch touches a handful of the ~500, and compiling every guard up front cost a CLI run ~0.3 s
    memo: dict[int, tuple[Callable[[_Scope], Any], tuple[frozenset[str], ...]]] = field(default_factory=dict)
    shared: dict[Any, Any] = field(default_factory=dict)  # equal guard subtrees, one object (see _frozen)

    def guard_and_blockers(self, i: int) -> tuple[Callable[[_Scope], Any], tuple[frozenset[str], ...]]:
        """Check ``i``'s compiled guard, and its blockers: the reads ("$" before a variable) of each top-level
        condition of its guard that is false for a default launch and reads no model or platform fact; while
        a launch touches none of a blocker's reads, that condition stays false and so does the guard."""
        known = self.memo.get(i)
        if known is None:
            guard = _frozen(self.named[i].guard, self.shared)
            conditions = guard[1:] if isinstance(guard, tuple) and guard[0] == "and" else (guard,)
            default_launch = _Scope({}, {}, self.defaults, {}, None, None)
            blockers = []
            for condition in conditions:
                condition_reads = _reads(condition)
                if condition_reads is not None and _truth(_compile(condition)(default_launch)) is False:
                    blockers.append(frozenset(condition_reads))
            known = self.memo[i] = (_compile(guard), tuple(blockers))
        return known


@functools.lru_cache(maxsize=1)
def _index() -> _Index:
    """Built once per process: not_checked runs on every resolution."""
    from .catalogue import catalogue as flag_table

    named = tuple(c for c in catalogue() if c.status == "not-modelled" and c.reason_code not in _NEVER_TRIGGERED)
    by_read: dict[str, list[int]] = {}
    for i, c in enumerate(named):
        for name in (*c.fields, *("$" + e for e in c.env)):
            by_read.setdefault(name, []).append(i)
    return _Index(named, {k: tuple(v) for k, v in by_read.items()},
                  frozenset(f for c in named for f in c.fields), flag_table().defaults)


def _reads(p: Any) -> set[str] | None:
    """The fields and ("$"-prefixed) environment variables a predicate reads; None when it reads a model or
    platform fact (its value then depends on the target, which the default launch above has none of)."""
    if not isinstance(p, tuple):
        return set()
    tag = p[0]
    if tag == "field":
        return {p[1]}
    if tag == "env":
        return {"$" + p[1]}
    if tag in ("arch", "model", "platform"):
        return None
    if tag == "const":
        return set()
    out: set[str] = set()
    for q in p[1:] if tag in ("not", "and", "or") else p[2:]:
        r = _reads(q)
        if r is None:
            return None
        out |= r
    return out


def platform_facts(vendor: str, major: int, minor: int) -> dict[str, Any]:
    """SGLang's platform probes (PlatformContext's names) for a target, as SGLang 0.5.23 works them out from
    the compute capability (assuming a CUDA new enough for the arch's kernels): what ``not_checked``'s
    ``platform`` takes.  ROCm reports major 9; gfx95 is the MI350 family."""
    cuda, hip = vendor == "nvidia", vendor == "amd"
    return {"is_cuda": cuda, "is_hip": hip, "is_npu": False, "is_xpu": False, "is_musa": False, "is_mps": False,
            "is_cpu": False, "is_sm90": cuda and major == 9, "is_sm100": cuda and major == 10,
            "is_sm110": cuda and major == 11, "is_sm100_or_sm110": cuda and major in (10, 11),
            "is_sm120": cuda and major == 12, "is_blackwell": cuda and major in (10, 11, 12),
            "is_gfx95": hip and (major, minor) == (9, 5), "device_sm": major * 10 + minor if cuda else UNKNOWN}


def not_checked(typed: Mapping[str, Any], decided: Mapping[str, Any], defaults: Mapping[str, Any],
                env: Mapping[str, str] | None = None, model: Mapping[str, Any] | None = None,
                platform: Mapping[str, Any] | None = None) -> tuple[Check, ...]:
    """The checks SGLang makes that no rule evaluated and that this launch could trigger.

    A not-modelled check is a candidate when a ServerArgs field its guards read was typed by the user
    (``typed``) or decided by a rule (``decided``, the resolved values) to a value other than SGLang's
    default (``defaults``: the flag table's), or when an environment variable it reads is set in the
    launch's environment (``env``: the request's and what the resolution sets).  A candidate is named
    unless its guard is false for this launch: the guard is evaluated with the decided value of each
    field, else the typed one, else SGLang's default (unknown for a field SGLang fills in itself when
    left unset), the ``model``'s config.json (its architecture and attributes; a ``text_config`` or
    ``language_config`` it nests is searched too), the ``platform``'s facts (:func:`platform_facts`),
    and ``env`` (an unset variable takes SGLang's default);
    whatever the guard reads beyond these is unknown, and an unknown guard names the check.  A check
    whose guards read no field and no environment variable (it tests only the model's config) is never
    named: it depends on the checkpoint, not on anything the launch sets, and ``resolve checks`` lists
    it.  Checks that fire only on platforms the resolver has no target for, or that no launch reaches,
    are never named either.  The result is in catalogue order.
    """
    index = _index()
    env = env or {}
    touched = set(typed)
    for name in index.read_fields.intersection(decided):
        if decided[name] != defaults.get(name):
            touched.add(name)
    touched.update("$" + name for name in env)
    hits: set[int] = set()
    for name in touched:
        positions = index.by_read.get(name)
        if positions:
            hits.update(positions)
    if not hits:
        return ()
    scope = _Scope(typed, decided, defaults, env, model, platform)
    baseline = _Scope({}, {}, defaults, {}, model, platform)  # a default launch of the same model, same target
    out = []
    for i in sorted(hits):
        guard, blockers = index.guard_and_blockers(i)
        # a check stays off while one of its blockers (a condition a default launch fails) reads nothing touched
        if any(not blocker & touched for blocker in blockers):
            continue
        verdict = _truth(guard(scope))
        # an unknown guard names the check only where a default launch decides it (the launch then moved it)
        if verdict is True or (verdict is UNKNOWN and _truth(guard(baseline)) is not UNKNOWN):
            out.append(index.named[i])
    return tuple(out)


class _Unknown:
    """A value the launch does not give (a helper's result, a platform query, the model's config)."""

    def __repr__(self) -> str:
        return "unknown"


UNKNOWN = _Unknown()
_TRUE = ("1", "true", "yes", "y", "on")
_FALSE = ("0", "false", "no", "n", "off", "")


class _Scope:
    """The launch's values, as a guard predicate reads them (three-valued: True, False or unknown)."""

    def __init__(self, typed: Mapping[str, Any], decided: Mapping[str, Any], defaults: Mapping[str, Any],
                 env: Mapping[str, str], model: Mapping[str, Any] | None, platform: Mapping[str, Any] | None):
        self.typed, self.decided, self.defaults, self.env = typed, decided, defaults, env
        self.model, self.platform = model, platform or {}
        archs = (model or {}).get("architectures")
        self.architecture = archs[0] if isinstance(archs, list) and archs else UNKNOWN
        self.derived = _derived()

    def field(self, name: str, untyped: Any = UNKNOWN) -> Any:
        if name in self.decided:
            return self.decided[name]
        if name in self.typed:
            return self.typed[name]
        if untyped is not UNKNOWN:
            return untyped
        default = self.defaults.get(name)
        # SGLang fills an unset field it derives (device, chunked_prefill_size) with its own value
        return UNKNOWN if default is None and name in self.derived else default

    def model_attr(self, name: str, missing: Any) -> Any:
        """A config.json attribute; a model config that lacks it gives the getattr default where SGLang
        names one, else unknown (transformers fills defaults the file omits)."""
        if self.model is None:
            return UNKNOWN
        for config in (self.model, self.model.get("text_config"), self.model.get("language_config")):
            if isinstance(config, Mapping) and name in config:
                return config[name]
        return missing

    def env_value(self, name: str, kind: str, default: Any) -> Any:
        if name not in self.env:
            return default
        text = str(self.env[name])
        if kind == "bool":
            low = text.strip().lower()
            return True if low in _TRUE else False if low in _FALSE else UNKNOWN
        if kind in ("int", "float"):
            try:
                return int(text) if kind == "int" else float(text)
            except ValueError:
                return UNKNOWN
        return text


def _compile(p: Any) -> Callable[[_Scope], Any]:
    """A guard predicate as a Python closure: the tree is walked once here, not on every resolution."""
    if p is None:
        return lambda scope: UNKNOWN
    if not isinstance(p, tuple):
        return lambda scope: p
    tag = p[0]
    if tag == "const":
        value = p[1]
        return lambda scope: value
    if tag == "field":
        name = p[1]
        if len(p) > 2:  # the value SGLang gives it before this site, when the launch does not type it
            untyped = p[2]
            return lambda scope: scope.field(name, untyped)
        return lambda scope: scope.field(name)
    if tag == "arch":
        return lambda scope: scope.architecture
    if tag == "platform":
        fact = p[1]
        return lambda scope: scope.platform.get(fact, UNKNOWN)
    if tag == "model":
        attr, missing = p[1], (p[2] if len(p) > 2 else UNKNOWN)
        return lambda scope: scope.model_attr(attr, missing)
    if tag == "env":
        name, kind, default = p[1], p[2], p[3]
        return lambda scope: scope.env_value(name, kind, default)
    if tag == "not":
        inner = _compile(p[1])

        def negation(scope: _Scope) -> Any:
            v = inner(scope)
            return UNKNOWN if v is UNKNOWN else not v
        return negation
    if tag in ("and", "or"):
        # smallest first: three-valued and/or do not depend on the order, and a launch's own switch (a small
        # test) usually settles a guard before the callers' long conditions need reading
        parts = tuple(_compile(q) for q in sorted(p[1:], key=_size))
        settles = tag == "or"  # the truth value that decides: True for or, False for and

        def junction(scope: _Scope) -> Any:
            unknown = False
            for part in parts:
                v = part(scope)
                if v is UNKNOWN:
                    unknown = True
                elif bool(v) is settles:
                    return settles
            return UNKNOWN if unknown else not settles
        return junction
    if tag in ("cmp", "bin") and isinstance(p[2], tuple) and p[2][0] == "field" and len(p[2]) == 2 \
            and isinstance(p[3], tuple) and p[3][0] == "const":
        # the commonest test, field against constant, without the generic operand calls
        op, name, constant = _OPERATORS[p[1]], p[2][1], p[3][1]

        def field_test(scope: _Scope) -> Any:
            a = scope.field(name)
            if a is UNKNOWN:
                return UNKNOWN
            try:
                return op(a, constant)
            except (TypeError, ValueError, ZeroDivisionError):
                return UNKNOWN
        return field_test
    if tag in ("cmp", "bin"):
        op, left, right = _OPERATORS[p[1]], _compile(p[2]), _compile(p[3])

        def operation(scope: _Scope) -> Any:
            a = left(scope)
            if a is UNKNOWN:
                return UNKNOWN
            b = right(scope)
            if b is UNKNOWN:
                return UNKNOWN
            try:
                return op(a, b)
            except (TypeError, ValueError, ZeroDivisionError):
                return UNKNOWN
        return operation
    return lambda scope: UNKNOWN


def _size(p: Any) -> int:
    return 1 + sum(_size(q) for q in p[1:]) if isinstance(p, tuple) else 1


def _truth(value: Any) -> bool | _Unknown:
    return UNKNOWN if value is UNKNOWN else bool(value)


def _same(a: Any, b: Any) -> bool:
    return a == b and type(a) is type(b)


_OPERATORS = {
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b, ">=": lambda a, b: a >= b, "in": lambda a, b: a in b, "not in": lambda a, b: a not in b,
    "is": _same, "is not": lambda a, b: not _same(a, b),
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": lambda a, b: a / b,
    "//": lambda a, b: a // b, "%": lambda a, b: a % b,
}


@functools.lru_cache(maxsize=1)
def _derived() -> frozenset[str]:
    return frozenset(_data()[0].get("derived_fields", ()))


def _frozen(p: Any, shared: dict[Any, Any]) -> Any:
    """A predicate as nested tuples (a Check is frozen and hashable), equal subtrees shared: the sites of
    one function repeat their callers' conditions, which a launch then evaluates once."""
    if not isinstance(p, list):
        return p
    t = tuple(_frozen(q, shared) for q in p)
    return shared.setdefault(t, t)


def _and(a: Any, b: Any) -> Any:
    if b is True:
        return a
    if a is True:
        return b
    return ["and", a, b]


def _when(spec: Mapping[str, Any] | None) -> Any:
    """checks.yaml's ``when: {field: [values]}`` (of a function, or of one site): the dispatch SGLang's source
    expresses in a way the generator cannot read (``SpeculativeAlgorithm.is_uno()``, a checkpoint kind known
    by its architecture), as a predicate."""
    if not spec:
        return True
    # the key ``architecture`` is the model's class (architectures[0]); every other key is a ServerArgs field
    parts: list[Any] = [["cmp", "in", ["arch"] if name == "architecture" else ["field", name], ["const", list(values)]]
                        for name, values in sorted(spec.items())]
    return parts[0] if len(parts) == 1 else ["and", *parts]


def _untyped(guard: Any, values: Mapping[str, Any] | None) -> Any:
    """checks.yaml's ``untyped: {field: value}`` of a site: what a field SGLang fills in itself (so unknown to a
    launch that does not type it) holds when the site reads it (``lora_paths`` is ``[]`` by then), written into
    the guard's reads of it as ``["field", name, value]``."""
    if not values:
        return guard
    if isinstance(guard, list):
        if guard[:1] == ["field"] and len(guard) == 2 and guard[1] in values:
            return ["field", guard[1], values[guard[1]]]
        return [_untyped(q, values) for q in guard]
    return guard


def _function_reason(checks: list[Check]) -> str:
    """The reason a function none of whose sites is modelled counts under: its sites' commonest
    (ties alphabetical)."""
    counts: dict[str, int] = {}
    for c in checks:
        counts[c.reason_code] = counts.get(c.reason_code, 0) + 1
    return min(counts, key=lambda code: (-counts[code], code))


def coverage(checks: tuple[Check, ...] | None = None) -> dict[str, Any]:
    """Functions and sites, modelled and not (by reason), in all and per module."""
    checks = catalogue() if checks is None else checks

    def tally(group: list[Check]) -> dict[str, Any]:
        by_function: dict[str, list[Check]] = {}
        for c in group:
            by_function.setdefault(c.id, []).append(c)
        functions: dict[str, Any] = {"total": len(by_function), "modelled": 0, "partly": 0,
                                     "not_modelled": 0, "not_modelled_by_reason": {}}
        for sites in by_function.values():
            modelled = sum(c.status == "modelled" for c in sites)
            if modelled == len(sites):
                functions["modelled"] += 1
            elif modelled:
                functions["partly"] += 1
            else:
                functions["not_modelled"] += 1
                code = _function_reason(sites)
                functions["not_modelled_by_reason"][code] = functions["not_modelled_by_reason"].get(code, 0) + 1
        site_reasons: dict[str, int] = {}
        for c in group:
            if c.status == "not-modelled":
                site_reasons[c.reason_code] = site_reasons.get(c.reason_code, 0) + 1
        return {
            "functions": {**functions, "not_modelled_by_reason": dict(sorted(functions["not_modelled_by_reason"]
                                                                             .items()))},
            "sites": {"total": len(group), "modelled": sum(c.status == "modelled" for c in group),
                      "not_modelled": sum(c.status == "not-modelled" for c in group),
                      "not_modelled_by_reason": dict(sorted(site_reasons.items())),
                      "raise": sum(c.kind == "raise" for c in group),
                      "assert": sum(c.kind == "assert" for c in group)},
        }

    modules: dict[str, list[Check]] = {}
    for c in checks:
        modules.setdefault(c.module, []).append(c)
    return {"release": release(), **tally(list(checks)),
            "modules": {m: tally(group) for m, group in sorted(modules.items())}}
