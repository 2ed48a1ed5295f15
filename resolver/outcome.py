"""What a resolution starts from and what it ends with, as data: the typed request, and the outcome (every
value with the facts, rules and candidates behind it, the conflicts with their fixes).  Renderers read
these; nothing here resolves (resolver/resolution.py does)."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Literal

from .installed import absent_packages
from .notices import Notice
from .platforms import Platform
from .provenance import Origin
from .rules import KERNEL_CONTEXT, ROLE_CONTEXT, RuleRef
from .wording import origin_text

__all__ = [
    "Adjustment",
    "Candidate",
    "CandidateOutcome",
    "ConflictReport",
    "Derivation",
    "FactUse",
    "Fix",
    "Loser",
    "ORDER",
    "Outcome",
    "Reason",
    "Request",
    "Source",
    "format_value",
    "kernel_context",
    "kernel_verdict",
    "show_value",
]


#: who decided a value: the user, a rule (default, adjustment, derived, computed), the option's own fallback, or
#: what the request gives (the model, the platform, a kernel adapter, an installed package, an untyped input)
Source = Literal["user", "default", "adjustment", "fallback", "derived", "computed", "model", "platform", "kernel",
                 "installed", "input", "request"]
#: what became of one default rule's proposal for an option
CandidateOutcome = Literal["chosen", "shadowed", "overridden-by-user", "skipped"]


@dataclass(frozen=True)
class Request:
    """What one resolution starts from: typed, validated input."""

    platform: Platform
    platform_source: str  # how the target was named, in words: "--platform h100"
    model: dict[str, tuple[Any, Origin]]  # model fact -> (value, origin)
    args: dict[str, Any]  # option -> the user's value (already normalised for aliases)
    flags: dict[str, str] = field(default_factory=dict)  # option -> the flag the user typed
    installed: dict[str, tuple[bool, Origin]] = field(default_factory=dict)  # installed.<pkg> -> (value, origin)
    spelled: dict[str, Any] = field(default_factory=dict)  # option -> deprecated spelling the user typed
    strict: bool = False  # an adjustment of a typed value is a conflict, not a warning
    kernels: Any = None  # the kernel adapters' registry (what runs where); None: every kernel is unknown
    unchecked: dict[str, Any] = field(default_factory=dict)  # SGLang fields no rule reads, carried through
    #: an unknown kernel verdict on a chosen backend is a conflict (rules/kernels.yaml)
    require_known_kernels: bool = False
    #: draft fact -> (value, origin): resolver/draft.py
    draft: dict[str, tuple[Any, Origin]] = field(default_factory=dict)
    #: environment variables the request sets that no rule declares: carried through, not checked
    environment: dict[str, str] = field(default_factory=dict)
    platform_how: str = "flag"  # how the target was known: flag, detected, or given (a Platform object)

    def changed(self, set_: Mapping[str, Any], unset: Iterable[str] = ()) -> Request:
        """This request with options set (``set_``) or removed (``unset``): what every what-if resolves.  A changed
        or removed option no longer carries the spelling or flag typed for it; an untouched one keeps both, also
        when its typed value was an alias of "let the resolver pick" and so is not in ``args`` (rules read
        ``typed.*``: --moe-runner-backend megamoe)."""
        gone = set(unset)
        args = {k: v for k, v in self.args.items() if k not in gone}
        args.update(set_)
        touched = gone | set(set_)
        return replace(self, args=args, spelled={n: v for n, v in self.spelled.items() if n not in touched},
                       flags={n: v for n, v in self.flags.items() if n in args and n not in touched})

    @cached_property
    def absent(self) -> dict[str, str]:
        """package -> why it is known to be missing on the target: its kernels cannot run (computed once:
        every kernel verdict of the resolution asks)."""
        return absent_packages(self.installed)


@dataclass(frozen=True)
class FactUse:
    """A fact a rule read: its value, who decided it (source) and how (origin)."""

    name: str
    value: Any
    source: Source
    origin: Origin

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "source": self.source, "origin": origin_text(self.origin)}


@dataclass(frozen=True)
class Candidate:
    rule: RuleRef
    value: Any
    priority: int
    outcome: CandidateOutcome
    why: str
    kernel_why: str | None = None  # skipped: the kernel adapters' evidence that it cannot run here

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule.to_dict(), "value": self.value, "priority": self.priority, "outcome": self.outcome,
                "why": self.why}


@dataclass(frozen=True)
class Adjustment:
    rule: RuleRef
    old: Any
    new: Any
    message: str
    normalize: bool
    facts: tuple[FactUse, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule.to_dict(), "from": self.old, "to": self.new, "message": self.message,
                "kind": "normalization" if self.normalize else "adjustment", "facts": [f.to_dict() for f in self.facts]}


@dataclass(frozen=True)
class Derivation:
    """Why a name has its value."""

    name: str
    value: Any
    source: Source
    rule: RuleRef | None
    doc: str
    facts: tuple[FactUse, ...] = ()
    candidates: tuple[Candidate, ...] = ()
    adjustments: tuple[Adjustment, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "source": self.source, "rule": self.rule.to_dict() if self.rule else None,
                "doc": self.doc, "facts": [f.to_dict() for f in self.facts],
                "candidates": [c.to_dict() for c in self.candidates],
                "adjustments": [a.to_dict() for a in self.adjustments]}


@dataclass(frozen=True)
class Fix:
    description: str
    set: dict[str, Any]
    unset: tuple[str, ...]
    argv: tuple[str, ...]
    #: what else the fix changes: (option, value now, value under the fix) for every option, other than
    #: those the fix sets or omits and those a conflict names, whose resolved value differs
    also: tuple[tuple[str, Any, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"description": self.description, "set": dict(self.set), "unset": list(self.unset),
                "argv": list(self.argv), "also": [{"option": n, "from": old, "to": new} for n, old, new in self.also]}


@dataclass(frozen=True)
class ConflictReport:
    rule: RuleRef
    doc: str
    message: str
    options: tuple[str, ...]
    facts: tuple[FactUse, ...]
    allowed: tuple[Any, ...] | None
    evidence: str | None
    fixes: tuple[Fix, ...] = ()
    #: the evidence the rule's message would quote, kept out of ``message`` (the headline): each kernel
    #: verdict's ``kernel.<option>_why`` the template names, as (fact name, full text); shown under --explain
    details: tuple[tuple[str, str], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule.to_dict(), "doc": self.doc, "message": self.message, "options": list(self.options),
                "facts": [f.to_dict() for f in self.facts],
                "allowed": list(self.allowed) if self.allowed is not None else None,
                "evidence": self.evidence, "details": dict(self.details), "fixes": [f.to_dict() for f in self.fixes]}


@dataclass(frozen=True)
class Outcome:
    """The raw result of :func:`run`; :class:`resolver.api.Resolution` wraps it for users."""

    values: dict[str, Any]  # every option
    facts: dict[str, FactUse]  # every name (inputs, derived facts, options) with its origin
    derivations: dict[str, Derivation]  # options and derived facts
    conflicts: tuple[ConflictReport, ...]
    warnings: tuple[Notice, ...]
    fired: tuple[str, ...]  # every branch the engine fired, sorted (for tests and explanations)


@dataclass(frozen=True)
class Reason:
    kind: str  # shadowed | skipped | not-fired | kernel | conflict
    rule: str | None  # the rule id (a default or conflict rule), None for a kernel verdict
    text: str  # the resolver's own words, short
    where: str | None = None  # file:line of the rule

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "rule": self.rule, "where": self.where, "text": self.text}


#: the strongest reason first: a refusal, then a default that fired and lost, then one that did not fire
ORDER = {"conflict": 0, "kernel": 1, "skipped": 2, "shadowed": 3, "not-fired": 4}


@dataclass(frozen=True)
class Loser:
    value: Any
    reasons: tuple[Reason, ...]
    #: with the value typed instead, whether the request resolves (None: not re-resolved)
    resolves: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "reasons": [r.to_dict() for r in self.reasons], "resolves": self.resolves}


def format_value(v: Any) -> str:
    """How values appear inside messages (SGLang prints Python values)."""
    return "None" if v is None else str(v)


def show_value(value: Any) -> str:
    """A value as the resolver's own words print it (explanations, fixes): null, true, false, or the value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def kernel_verdict(request: Request, role: str, backend: Any, facts):
    """What the adapters say about ``backend`` here, counting the packages the target lacks."""
    quantization = None
    for n in ROLE_CONTEXT.get(role, ()):  # the MoE runner's claims may be narrowed by the weights' quantization
        quantization = facts[n].value if n in facts else None
    return request.kernels.verdict(role, backend, request.platform.name, *kernel_context(facts), absent=request.absent,
                                   quantization=quantization)


def kernel_context(facts) -> tuple[str | None, bool | None]:
    """What a kernel claim may be narrowed by (KERNEL_CONTEXT, decided before any kernel option)."""
    kv, mla = (facts.get(n) for n in KERNEL_CONTEXT)
    return (kv.value if kv else None), (bool(mla.value) if mla and mla.value is not None else None)
