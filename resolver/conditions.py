"""The ``when:`` expression language.

A ``when:`` is a small boolean expression over fact names::

    enable_hisparse and platform.is_hip and kv_cache_dtype in ["bfloat16", "fp8_e4m3"]

Grammar (a subset of Python's, parsed with :mod:`ast` and never evaluated by Python):
names (``kv_cache_dtype``, ``platform.major``), literals (strings, numbers, ``true`` /
``false`` / ``null`` or their Python spellings), lists of literals, comparisons
(``== != < <= > >= in not in``), ``and``, ``or``, ``not`` and parentheses.  A bare name
means ``name == true``.

A condition is normalised to disjunctive normal form: a tuple of *branches*, each a tuple of
:class:`Atom` tests that must all hold.  Each atom tests one fact against constants, or (only
``==``) against another fact; that is exactly the subset durable-rules 2.0.28 runs safely
(see ``docs/rule-format.md``).

Missing values (``null``) follow one rule everywhere: ``==``/``in`` match them only when
``null`` is listed, ``!=``/``not in`` match them unless ``null`` is listed, and ordered
comparisons never match them.  Negation flips the test *and* the null rule, so ``not`` is
exact.  A boolean equals only a boolean (``true == 1`` is false), also between two facts.

Constants must be values durable-rules holds exactly (:func:`resolver.numbers.engine_value`):
integers up to 2**53, floats written without an exponent (``0.0001`` to ``1e16``), strings that
encode to UTF-8 and are shorter than 16 MiB.  Others are refused with their column.
"""
from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from .errors import InputError
from .numbers import engine_value

__all__ = ["MAX_BRANCHES", "MAX_EXPRESSION_CHARS", "MAX_EXPRESSION_DEPTH", "TRUE", "Atom", "Condition",
           "ConditionError", "compiled_test", "parse_condition", "parse_tree"]

_ORDERED = {"lt", "le", "gt", "ge"}
#: a test's operator: compare with a constant, test membership in constants, or join two facts (equality)
Op = Literal["eq", "ne", "lt", "le", "gt", "ge", "in", "notin", "join"]
_NEGATE: dict[Op, Op] = {"eq": "ne", "ne": "eq", "lt": "ge", "ge": "lt", "gt": "le", "le": "gt", "in": "notin",
                         "notin": "in"}

_SYMBOL = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "in": "in", "notin": "not in",
           "join": "=="}
_LITERAL_NAMES = {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}
#: DNF branches of one ``when:``; counted before anything is expanded (a product of 24 two-way
#: choices would otherwise build 2**24 branches)
MAX_BRANCHES = _MAX_BRANCHES = 64
#: characters of one ``when:`` or ``value:`` (the shipped pack's longest has 2,640)
MAX_EXPRESSION_CHARS = 10_000
#: nesting of its syntax tree, in ast nodes (the shipped pack's deepest has 14)
MAX_EXPRESSION_DEPTH = 64


class ConditionError(Exception):
    """A ``when:`` that does not parse or is outside the language; ``column`` is 0-based."""

    def __init__(self, message: str, column: int = 0, code: str = "syntax"):
        super().__init__(message)
        self.message = message
        self.column = column
        self.code = code  # the problem's kind (RuleFileProblem.code): syntax, or engine-safety


@dataclass(frozen=True)
class Atom:
    """One test of one fact.

    ``op`` is one of eq, ne, lt, le, gt, ge, in, notin (``value`` a constant, or a tuple for
    in/notin) or join (``value`` is the other fact's name; equality only).  ``none_ok`` says
    whether a missing value (null) satisfies the test.
    """

    name: str
    op: Op
    value: Any
    none_ok: bool

    def negate(self) -> Atom:
        if self.op == "join":
            raise ConditionError(
                f"'not ({self.name} == {self.value})' compares two facts with '!=', which "
                "durable-rules 2.0.28 cannot run safely (it crashes); compare each fact with constants",
                code="engine-safety")
        return Atom(self.name, _NEGATE[self.op], self.value, not self.none_ok)

    def holds(self, values: dict[str, Any]) -> bool:
        """Evaluate on plain values (the reference semantics the engine must match)."""
        v = values.get(self.name)
        if self.op == "join":
            return v is not None and _same(v, values.get(self.value))
        if v is None:
            return self.none_ok
        if self.op in ("eq", "ne"):
            same = _same(v, self.value)
            return same if self.op == "eq" else not same
        if self.op in ("in", "notin"):
            inside = any(_same(v, c) for c in self.value)
            return inside if self.op == "in" else not inside
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return self.none_ok  # a non-number is "no value" to an ordered test, so negation stays exact
        return {"lt": v < self.value, "le": v <= self.value, "gt": v > self.value, "ge": v >= self.value}[self.op]

    def names(self) -> tuple[str, ...]:
        return (self.name, self.value) if self.op == "join" else (self.name,)

    def __str__(self) -> str:
        if self.op == "join":
            return f"{self.name} == {self.value}"
        if self.op in ("in", "notin"):
            return f"{self.name} {_SYMBOL[self.op]} [{', '.join(_lit(c) for c in self.value)}]"
        if self.op == "eq" and self.value is True:
            return self.name
        if self.op == "ne" and self.value is True:
            return f"not {self.name}"
        return f"{self.name} {_SYMBOL[self.op]} {_lit(self.value)}"


def compiled_test(atom: Atom) -> Callable[[dict[str, Any]], bool]:
    """:meth:`Atom.holds` as a closure with the operator and constant worked out once: the same answer for
    every value (tests/unit/test_conditions.py), for the loops that test atoms by the million (the reference
    matcher in the fix search's screening)."""
    name, op, c, none_ok = atom.name, atom.op, atom.value, atom.none_ok
    if op == "join":
        return lambda values: (v := values.get(name)) is not None and _same(v, values.get(c))
    if op in ("eq", "ne"):
        same: Callable[[Any], bool]
        if isinstance(c, bool):  # a boolean equals only a boolean (both are singletons)
            same = (lambda v: v is c)  # noqa: E731
        elif isinstance(c, (int, float)):  # a number equals a number of the same value, never a boolean
            same = (lambda v: v == c and not isinstance(v, bool))  # noqa: E731
        else:  # a string equals only a string: Python's == already says so
            same = (lambda v: v == c)  # noqa: E731
        if op == "eq":
            return lambda values: none_ok if (v := values.get(name)) is None else same(v)
        return lambda values: none_ok if (v := values.get(name)) is None else not same(v)
    if op in ("in", "notin"):
        # a set lookup by kind in place of a scan (architecture lists run to hundreds of names): a boolean is
        # looked up among the boolean constants only, a string or number among the others (1 == 1.0 as in _same)
        bools = frozenset(k for k in c if isinstance(k, bool))
        plain = frozenset(k for k in c if isinstance(k, (str, int, float)) and not isinstance(k, bool))

        def inside(v: Any) -> bool:
            if isinstance(v, bool):
                return v in bools
            if isinstance(v, (str, int, float)) and v == v:  # NaN equals nothing, not even itself in a set
                return v in plain
            return any(_same(v, k) for k in c)
        if op == "in":
            return lambda values: none_ok if (v := values.get(name)) is None else inside(v)
        return lambda values: none_ok if (v := values.get(name)) is None else not inside(v)
    compare = _ORDER[op]

    def ordered(values: dict[str, Any]) -> bool:
        v = values.get(name)
        if v is None or isinstance(v, bool) or not isinstance(v, (int, float)):
            return none_ok  # a non-number is "no value" to an ordered test
        return compare(v, c)
    return ordered


_ORDER: dict[str, Callable[[Any, Any], bool]] = {"lt": operator.lt, "le": operator.le, "gt": operator.gt,
                                                 "ge": operator.ge}


def _same(a: Any, b: Any) -> bool:
    # true == 1 in Python; not here: a boolean fact only equals a boolean constant.
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return a == b


def _lit(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"'
    return repr(v)


Branch = tuple[Atom, ...]


@dataclass(frozen=True)
class Condition:
    """A parsed ``when:``: the source text and its DNF branches (``()`` never holds)."""

    source: str
    branches: tuple[Branch, ...]

    def holds(self, values: dict[str, Any]) -> bool:
        return any(all(a.holds(values) for a in b) for b in self.branches)

    def names(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for b in self.branches:
            for a in b:
                for n in a.names():
                    seen.setdefault(n)
        return tuple(seen)

    def constants(self, name: str) -> set[Any]:
        """Every constant this condition compares ``name`` with (for fix search)."""
        out: set[Any] = set()
        for b in self.branches:
            for a in b:
                if a.name == name and a.op != "join":
                    out.update(a.value if a.op in ("in", "notin") else (a.value,))
        return out


TRUE = Condition("true", ((),))


def parse_tree(text: str, what: str) -> ast.expr:
    """The syntax tree of one ``when:`` or ``value:`` (``what`` names it), within the caps on its length
    and nesting; else :class:`ConditionError`.

    Python's parser turns very deep input (20,000 ``not``, 300 nested parentheses) into a
    MemoryError or RecursionError rather than a SyntaxError; the length cap keeps that cheap and
    both become a ConditionError here.  The depth is measured without recursion, so the walks of
    the tree that follow (normal form, checks) stay far from Python's recursion limit.
    """
    if len(text) > MAX_EXPRESSION_CHARS:
        raise ConditionError(f"'{what}' is {len(text)} characters long (the limit is {MAX_EXPRESSION_CHARS}); "
                             "split the rule or name a part of it as a fact")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise ConditionError(f"invalid syntax in '{what}': {exc.msg}", max((exc.offset or 1) - 1, 0)) from None
    except (MemoryError, RecursionError):  # the parser's own stack: nesting far past MAX_EXPRESSION_DEPTH
        raise ConditionError(f"'{what}' is nested more than {MAX_EXPRESSION_DEPTH} levels deep") from None
    level: list[ast.AST] = [tree.body]
    # a level is an operation (`not`, `==`, `and`, a call, ...) holding others: the names and constants at
    # the bottom are none, nor is an operator node (the Not of `not x`) or a name's context
    for _ in range(MAX_EXPRESSION_DEPTH + 1):
        level = [child for node in level for child in ast.iter_child_nodes(node) if isinstance(child, ast.expr)]
        if not level:
            return tree.body
    raise ConditionError(f"'{what}' is nested more than {MAX_EXPRESSION_DEPTH} levels deep",
                         getattr(level[0], "col_offset", 0))


def parse_condition(text: str | None) -> Condition:
    """Parse a ``when:`` string; raise :class:`ConditionError` with a column on failure."""
    if text is None or not str(text).strip():
        return TRUE
    text = " ".join(str(text).split())  # YAML folded scalars: one logical line, columns stay meaningful
    body = parse_tree(text, "when")
    _count_branches(body)  # before expanding: the expansion itself could be exponential
    branches = _dnf(body)
    if len(branches) > _MAX_BRANCHES:  # pragma: no cover - _count_branches refuses first
        raise ConditionError(f"'when' expands to {len(branches)} alternatives (limit {_MAX_BRANCHES}); split the rule")
    return Condition(text, tuple(branches))


def _count_branches(node: ast.AST, negated: bool = False) -> int:
    """How many DNF branches ``node`` expands to, refusing (ConditionError) as soon as any part of it
    expands past MAX_BRANCHES: so no part is ever expanded past the cap, even one that a ``false``
    beside it would discard.  Recursive: parse_tree bounds the depth."""
    if isinstance(node, ast.BoolOp):
        is_and = isinstance(node.op, ast.And) != negated
        counts = [_count_branches(v, negated) for v in node.values]
        total = 1 if is_and else 0
        for c in counts:
            total = total * c if is_and else total + c
            if total > _MAX_BRANCHES:
                raise ConditionError(f"'when' expands to more than {_MAX_BRANCHES} alternatives (its disjunctive "
                                     "normal form); split the rule or name a part of it as a fact",
                                     getattr(node, "col_offset", 0))
        return total
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return _count_branches(node.operand, not negated)
    if isinstance(node, ast.Constant) and isinstance(node.value, bool) or _literal_name(node):
        try:
            return 1 if bool(_literal(node)) != negated else 0
        except ConditionError:
            return 1  # _dnf reports it with its column
    return 1


def _dnf(node: ast.AST, negated: bool = False) -> list[Branch]:
    if isinstance(node, ast.BoolOp):
        is_and = isinstance(node.op, ast.And) != negated  # De Morgan
        parts = [_dnf(v, negated) for v in node.values]
        if not is_and:
            return [b for p in parts for b in p]
        if not all(parts):  # a part that never holds: the conjunction never holds
            return []
        out: list[Branch] = [()]
        for p in parts:
            out = [x + y for x in out for y in p]
        return out
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return _dnf(node.operand, not negated)
    if isinstance(node, ast.Compare):
        if len(node.ops) != 1:
            raise ConditionError("chained comparisons are not supported; use 'and'", node.col_offset)
        atom = _compare(node)
    elif _is_name(node):
        atom = Atom(_name(node), "eq", True, False)
    elif isinstance(node, ast.Constant) and isinstance(node.value, bool) or _literal_name(node):
        value = _literal(node)
        return [()] if bool(value) != negated else []
    else:
        raise ConditionError(f"unsupported expression '{ast.unparse(node)}'", getattr(node, "col_offset", 0))
    try:
        return [(atom.negate() if negated else atom,)]
    except ConditionError as exc:
        raise ConditionError(exc.message, getattr(node, "col_offset", 0), exc.code) from None


_OPS: dict[type, Op] = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge",
                        ast.In: "in", ast.NotIn: "notin"}
_MIRROR: dict[Op, Op] = {"lt": "gt", "gt": "lt", "le": "ge", "ge": "le", "eq": "eq", "ne": "ne"}


def _compare(node: ast.Compare) -> Atom:
    op = _OPS.get(type(node.ops[0]))
    left, right = node.left, node.comparators[0]
    if op is None:
        raise ConditionError(f"unsupported operator in '{ast.unparse(node)}'", node.col_offset)
    if op in ("in", "notin") and not isinstance(right, (ast.List, ast.Tuple, ast.Set)):
        raise ConditionError(f"'{_SYMBOL[op]}' needs a list of constants", right.col_offset)
    if _is_name(left) and _is_name(right):
        if op != "eq":
            raise ConditionError(
                "only '==' may compare two facts: durable-rules 2.0.28 crashes on ordered or '!=' "
                "comparisons between facts; compare each fact with constants instead",
                node.col_offset, code="engine-safety",
            )
        return Atom(_name(left), "join", _name(right), False)
    if not _is_name(left):
        if op in ("in", "notin") or not _is_name(right):
            raise ConditionError(f"a comparison needs a fact name on its left: '{ast.unparse(node)}'", node.col_offset)
        left, right, op = right, left, _MIRROR[op]
    name = _name(left)
    if op in ("in", "notin"):
        if not isinstance(right, (ast.List, ast.Tuple, ast.Set)):
            raise ConditionError(f"'{_SYMBOL[op]}' needs a list of constants", right.col_offset)
        values = tuple(_literal(e) for e in right.elts)
        if not values:
            raise ConditionError("an empty list never matches; remove the test", right.col_offset)
        return Atom(name, op, values, (None in values) == (op == "in"))
    value = _literal(right)
    if op in _ORDERED and (not isinstance(value, (int, float)) or isinstance(value, bool)):
        raise ConditionError(f"'{_SYMBOL[op]}' needs a number", right.col_offset)
    if op in ("eq", "ne"):
        return Atom(name, op, value, (value is None) == (op == "eq"))
    return Atom(name, op, value, False)


def _is_name(node: ast.AST) -> bool:
    if isinstance(node, ast.Name):
        return node.id not in _LITERAL_NAMES
    return isinstance(node, ast.Attribute) and _is_name(node.value)


def _literal_name(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id in _LITERAL_NAMES


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    assert isinstance(node, ast.Attribute)
    return f"{_name(node.value)}.{node.attr}"


def _literal(node: ast.AST) -> Any:
    if _literal_name(node):
        return _LITERAL_NAMES[node.id]  # type: ignore[attr-defined]
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float, bool, type(None))):
        return _engine_constant(node.value, node)
    if (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant)
            and isinstance(node.operand.value, (int, float)) and not isinstance(node.operand.value, bool)):
        return _engine_constant(-node.operand.value, node)
    raise ConditionError(f"expected a constant, got '{ast.unparse(node)}'", getattr(node, "col_offset", 0))


def _engine_constant(value: Any, node: ast.expr) -> Any:
    # a constant becomes part of the compiled durable-rules JSON: 1e-07, 1e999 or a lone surrogate
    # would pass Python and then fail in the engine, so they are refused here, with their column
    try:
        return engine_value(value, "constant")
    except InputError as exc:
        raise ConditionError(str(exc), node.col_offset) from None
