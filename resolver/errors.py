"""The exception hierarchy.

Every expected failure derives from :class:`ResolverError`; anything else that escapes the
resolver is a bug and keeps its traceback.  The CLI maps the classes to exit codes:
``ConflictError`` -> 1, every other ``ResolverError`` -> 2.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "AmbiguousDefaultError",
    "ConflictError",
    "EngineError",
    "InputError",
    "ResolverError",
    "RuleFileError",
    "RuleFileErrors",
    "UnsupportedPythonError",
]


class ResolverError(Exception):
    """Base of every expected failure of the resolver."""


class InputError(ResolverError):
    """The request itself is bad: unknown option, value, platform, unreadable model config."""


@dataclass(frozen=True)
class RuleFileProblem:
    """One problem in one rule file, at file:line (and column, for a bad ``when:``)."""

    path: str
    line: int
    message: str
    column: int | None = None
    source: str | None = None  # the offending line, for the caret
    #: the stable kind of problem, set where it is raised; lint reports it as its check (resolver.tools.lint.CHECKS):
    #: syntax, schema (also a file that cannot be read or a pack over a cap), unknown-name, unknown-value,
    #: duplicate, cycle, missing-doc, missing-message, engine-safety
    code: str = "schema"

    def caret(self) -> str:
        """The offending line with a caret under the column, when both are known ("" otherwise)."""
        if self.source is None or self.column is None:
            return ""
        source, column = _window(self.source, self.column)
        return f"    {source}\n    {' ' * column}^"

    def lines(self) -> tuple[str, ...]:
        """The problem as lines: ``file:line: message``, then the source and the caret when known.  A
        newline inside the message is the rule file's own text, so a printer escapes each line whole."""
        caret = self.caret()
        return (f"{self.path}:{self.line}: {self.message}", *(caret.split("\n") if caret else ()))

    def render(self) -> str:
        return "\n".join(self.lines())


#: characters of a source line shown under a problem; a longer line is cut around the caret
SOURCE_WIDTH = 100


def _window(source: str, column: int) -> tuple[str, int]:
    """The part of ``source`` around ``column`` that fits SOURCE_WIDTH, and the caret's column in it
    (a 10,000-character ``when:`` must not print whole, once per problem)."""
    if len(source) <= SOURCE_WIDTH:
        return source, column
    start = min(max(column - SOURCE_WIDTH // 2, 0), len(source) - SOURCE_WIDTH)
    head, tail = ("..." if start > 0 else ""), ("..." if start + SOURCE_WIDTH < len(source) else "")
    return head + source[start:start + SOURCE_WIDTH] + tail, column - start + len(head)


class RuleFileError(ResolverError):
    """A single rule-file problem (see :class:`RuleFileErrors` for the collected form)."""

    def __init__(self, problem: RuleFileProblem):
        super().__init__(problem.render())
        self.problem = problem

    def lines(self) -> tuple[str, ...]:
        return self.problem.lines()


class RuleFileErrors(ResolverError):
    """Every problem found while loading a rule pack, reported together."""

    def __init__(self, problems: list[RuleFileProblem]):
        self.problems = sorted(problems, key=lambda p: (p.path, p.line, p.column or 0, p.message))
        count = len(self.problems)
        #: the first line of the message, before the problems
        self.header = f"{count} problem{'s' if count != 1 else ''} in the rule files:"
        super().__init__("\n".join([self.header, *(p.render() for p in self.problems)]))

    def lines(self) -> tuple[str, ...]:
        """The message as lines (see :meth:`RuleFileProblem.lines`)."""
        return (self.header, *(line for p in self.problems for line in p.lines()))


class AmbiguousDefaultError(ResolverError):
    """Two active defaults of equal priority propose different values for one option."""


class EngineError(ResolverError):
    """The rule engine failed while running a rule (an action raised, a fact went missing)."""


class UnsupportedPythonError(ResolverError):
    """durable-rules 2.0.28 does not import on this Python."""


class ConflictError(ResolverError, ValueError):
    """The configuration conflicts.  ``conflicts`` holds every conflict found, as data.

    It subclasses ``ValueError`` because SGLang's callers catch ``ValueError``.
    """

    def __init__(self, resolution):
        self.resolution = resolution
        self.conflicts = tuple(resolution.conflicts)
        super().__init__("\n".join(f"conflict {c.rule.id}: {c.message}" for c in self.conflicts))
