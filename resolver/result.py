"""A resolution's answer as plain data: what the renderers (text, JSON, launch line, environment) read.

:class:`LaunchResult` holds no engine and runs nothing: the values with the derivation behind each, the
conflicts with their checked fixes, the kernel verdicts, the notices, what SGLang would check that no rule
evaluated, and the why-not answers the core worked out because they were asked for.  The core's
:class:`~resolver.core.Resolution` is a LaunchResult that also keeps the engine it came from, for the
what-ifs a caller may ask next.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .checks import Check
from .notices import Notice
from .outcome import ConflictReport, Derivation, Loser, Outcome, Request
from .rules import RulePack

__all__ = ["LaunchResult"]


@dataclass
class LaunchResult:
    #: the rules the answer was resolved with (options, their flags, the rules' texts): data, not an engine
    pack: RulePack
    request: Request
    #: the raw result of the run: every fact and derivation, the branches that fired
    outcome: Outcome
    #: every option in scope -> resolved value (None where SGLang leaves the field unset), and every other
    #: SGLang field the user typed, as typed
    values: dict[str, Any]
    #: the environment SGLang's processes get: every variable the resolution sets (as SGLang writes it) and
    #: every other variable the request gave, carried through
    env: dict[str, str]
    #: option -> why it has its value
    derivations: dict[str, Derivation]
    conflicts: tuple[ConflictReport, ...]
    warnings: tuple[Notice, ...]
    #: option -> the kernel verdict on its chosen backend (resolver/verdicts.py)
    kernels: dict[str, dict[str, Any]]
    #: the SGLang fields (and environment variables) the user gave that no rule reads: carried through
    unchecked: tuple[str, ...]
    #: the checks SGLang would make on this launch that no rule encodes (resolver/checks.py): an answer
    #: never claims more than was checked
    not_checked: tuple[Check, ...]
    #: field -> why SGLang's value cannot be known here (it draws a random seed at start-up)
    not_decided: dict[str, str]
    #: when no change of options resolves the conflicts: the platforms where the same launch resolves (None
    #: when that was not asked: the request resolved, a fix exists, or fixes were not searched)
    resolves_on: tuple[str, ...] | None = None
    #: unevaluated checks make the result "unchecked" (exit 1) instead of "resolved" (--require-all-checks)
    require_all_checks: bool = False
    #: option -> every value that lost, each typed instead and re-resolved (asked for: --explain OPTION)
    why_not: dict[str, tuple[Loser, ...]] = field(default_factory=dict)

    @property
    def status(self) -> str:
        """conflict; unchecked (it resolves, but SGLang checks went unevaluated and all were required); resolved."""
        if self.conflicts:
            return "conflict"
        return "unchecked" if self.require_all_checks and self.not_checked else "resolved"

    @property
    def ok(self) -> bool:
        return not self.conflicts
