"""Rule objects: what one YAML entry means, with its file:line.

Six kinds, each a frozen dataclass:

* :class:`Option`   a launch option (a SGLang ``ServerArgs`` field): flag, type, choices, help;
* :class:`Fact`     a derived boolean fact ("the model is DSA"), true when its ``when`` holds;
* :class:`Compute`  a value worked out from others (``speculative_num_steps + 1``), see expressions.py;
* :class:`Default`  candidate values for options, active when ``when`` holds, ranked by priority;
* :class:`Adjust`   a change applied to an option's value after it is chosen, always reported;
* :class:`Conflict` a condition that must not hold; optionally restricts one option to a set.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from .conditions import Atom, Condition
from .expressions import Expression

__all__ = ["RuleRef", "Option", "Fact", "Compute", "Default", "Adjust", "Conflict", "FixHint", "RulePack",
           "KERNEL_CONTEXT", "ROLE_CONTEXT"]

#: what a kernel adapter's claim may be narrowed by (resolver/adapters/base.py Claim): an option with a
#: kernel_role is decided after these, so its kernel facts never depend on the order facts arrive in
KERNEL_CONTEXT = ("kv_cache_dtype", "model.mla")
#: what claims of one role may be narrowed by besides KERNEL_CONTEXT: the MoE runner's by the weights'
#: quantization as SGLang's ModelConfig ends with (rules/moe.yaml compute.moe.model-quantization)
ROLE_CONTEXT = {"moe": ("moe.model_quantization",)}


@dataclass(frozen=True)
class RuleRef:
    """Where a rule lives: its id, file (relative to the rules directory's parent) and line."""

    id: str
    file: str
    line: int

    def __str__(self) -> str:
        return self._text

    @cached_property
    def _text(self) -> str:  # every explanation and origin names rules: spelled once
        return f"{self.id} ({self.file}:{self.line})"

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "file": self.file, "line": self.line}


@dataclass(frozen=True)
class Option:
    ref: RuleRef
    doc: str
    name: str
    flag: str
    type: str  # choice | bool | int | float | str | json (a JSON value no rule reads: OPAQUE)
    help: str
    choices: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    value_aliases: dict[str, str] = field(default_factory=dict)
    unset_values: tuple[Any, ...] = ()
    default: Any = None
    minimum: float | None = None
    kernel_role: str | None = None  # the role kernel adapters report this option's backends in
    #: an environment variable SGLang sets (``kind: env``): its name is the variable's, it has no flag of its
    #: own, a request gives it in ``env``, and results list it under ``env`` instead of ``values``
    env: bool = False
    #: a ServerArgs field SGLang declares without a command-line flag (``Arg(no_cli=True)``, e.g.
    #: speculative_boundary_reduction): only rules decide it; it is never typed nor written back
    no_cli: bool = False
    #: the note a value alias gets instead of "deprecated" ({flag}, {value}, {new}): SGLang's own alias
    #: spellings that are not deprecated (--moe-runner-backend megamoe)
    value_alias_note: str | None = None
    #: fixes may omit it but never set another value (``fixes_omit_only``): SGLang checks its value against what
    #: no rule sees (a checkpoint's quantization)
    fixes_omit_only: bool = False
    #: values no fix proposes (``fixes_skip``): SGLang requires of them what no rule encodes yet
    fixes_skip: tuple[str, ...] = ()
    #: why the resolver cannot know SGLang's value when nobody types one (``not_decided``: SGLang draws a
    #: random seed at start-up); results then name the field instead of reporting a value
    not_decided: str | None = None

    @property
    def opaque(self) -> bool:
        """A ``json`` option: SGLang's value is the typed one or the declared default; the engine never sees
        it (its JSON objects and lists are no engine values), so no rule may read or decide it."""
        return self.type == "json"


@dataclass(frozen=True)
class Fact:
    ref: RuleRef
    doc: str
    name: str
    when: Condition


@dataclass(frozen=True)
class Compute:
    ref: RuleRef
    doc: str
    name: str
    value: Expression


@dataclass(frozen=True)
class Default:
    ref: RuleRef
    doc: str
    when: Condition
    set: dict[str, Any]
    priority: int


@dataclass(frozen=True)
class Adjust:
    ref: RuleRef
    doc: str
    when: Condition
    option: str
    value: Any  # a constant, or {from: name} (the value of another option or fact)
    order: int
    message: str
    normalize: bool = False


@dataclass(frozen=True)
class FixHint:
    description: str
    set: dict[str, Any]
    unset: tuple[str, ...]


@dataclass(frozen=True)
class Conflict:
    ref: RuleRef
    doc: str
    when: Condition  # the full condition, including "option not in allowed" for a restriction
    message: str
    option: str | None = None
    allowed: tuple[Any, ...] = ()
    evidence: str | None = None
    hints: tuple[FixHint, ...] = ()
    #: what would work when no launch option does (another GPU family, another checkpoint)
    remedy: str | None = None


@dataclass(frozen=True)
class RulePack:
    """A loaded, checked rule pack.  Built by :func:`resolver.loader.load_rules`."""

    directory: str
    options: dict[str, Option]
    facts: dict[str, Fact]
    defaults: tuple[Default, ...]
    adjusts: tuple[Adjust, ...]
    conflicts: tuple[Conflict, ...]
    levels: tuple[tuple[str, ...], ...]  # options, derived facts and computed values, in dependency levels
    computes: dict[str, Compute] = field(default_factory=dict)

    @property
    def order(self) -> tuple[str, ...]:
        return tuple(n for level in self.levels for n in level)

    def _groups(self):
        return (self.options.values(), self.facts.values(), self.computes.values(), self.defaults, self.adjusts,
                self.conflicts)

    @cached_property
    def _by_id(self) -> dict:
        return {r.ref.id: r for group in self._groups() for r in group}

    def rule(self, rule_id: str):
        return self._by_id[rule_id]

    @cached_property
    def atoms(self) -> dict[str, tuple[Atom, ...]]:
        """Every constant test of the pack, by the name it tests (fix search, "did you mean")."""
        out: dict[str, list[Atom]] = {}
        for group in self._groups():
            for r in group:
                for branch in r.when.branches if hasattr(r, "when") else ():
                    for a in branch:
                        if a.op != "join":
                            out.setdefault(a.name, []).append(a)
        return {n: tuple(v) for n, v in out.items()}

    def all_refs(self) -> list[RuleRef]:
        return sorted((r.ref for g in self._groups() for r in g), key=lambda r: (r.file, r.line))
