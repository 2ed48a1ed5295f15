"""The ``value:`` language of ``compute`` rules: a value worked out from other values.

SGLang computes some settings from others (draft tokens = steps + 1, NGRAM steps = draft
tokens // breadth) and compares settings with each other (the corpus budget against the draft
tokens).  durable-rules cannot compare two facts with ``<`` or ``!=`` safely (it crashes:
docs/engine-limits.md), and case rules per constant only cover the constants someone wrote
down.  A ``compute`` rule states the arithmetic once; the resolution evaluates it in Python as
soon as the values it reads are decided, and asserts the result as a fact the engine matches
with constant tests, like any other.

Grammar (parsed with :mod:`ast`, never evaluated by Python): names, numbers, ``true`` /
``false`` / ``null``, ``+ - * / // %``, unary ``-``, one comparison (``== != < <= > >=``),
``and`` / ``or`` / ``not``, parentheses, ``coalesce(a, b, ...)`` (the first value that is
not null), ``min(a, b, ...)`` / ``max(a, b, ...)``, ``largest(name)`` and ``count(name)`` (the
largest number of a ``json`` option's list and how many items it has, the only ways a value reads
a list: null unless it is a non-empty list of numbers), ``round(x, digits)`` (Python's rounding,
as SGLang rounds its memory fraction) and ``a if condition else b`` (SGLang's tier tables).
``null`` propagates: arithmetic, ``min``/``max``/``round`` or a comparison with a null operand is
null, as are ``x / 0``, ``x // 0`` and ``x % 0``, and a conditional whose condition is null; a
boolean is not a number.

Every operation is bounded, so no rule pack can make an evaluation slow: an integer operand
beyond the engine's exact range (``MAX_OPERAND``, 2**53), a float that is not finite, or a
``round`` to more than ``MAX_ROUND_DIGITS`` digits either way makes the result null (Python
would otherwise compute ``round(x, -300000000)`` for minutes, or multiply ever larger
integers from one compute rule to the next); a literal ``round`` precision past that bound is
refused when the pack loads.
"""
from __future__ import annotations

import ast
import functools
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .conditions import (
    ConditionError,
    _is_name,
    _literal,
    _literal_name,
    _name,
    parse_tree,
)

__all__ = ["Expression", "cached_expression", "parse_expression"]

_ARITH = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
          ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod}
_DIVIDE = (ast.Div, ast.FloorDiv, ast.Mod)
#: the calls a value may make: coalesce (any arity), min and max (two or more numbers), round (a number, digits)
_CALLS = {"coalesce": 1, "min": 2, "max": 2, "round": 2, "largest": 1, "count": 1}
#: the calls that read a json option's list (one name each)
_LIST_CALLS = ("largest", "count")
_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
            ast.Gt: operator.gt, ast.GtE: operator.ge}
_MAX_NODES = 200  # a value is a line of arithmetic, not a program
#: the largest integer operand: what the engine holds exactly (resolver/numbers.py); a larger one gives null
MAX_OPERAND = 2**53
#: ``round``'s precision, either way: a double has 17 significant digits, and 10**n is computed for it
MAX_ROUND_DIGITS = 20


@dataclass(frozen=True)
class Expression:
    """A parsed ``value:``: its text, the names it reads, and its checked syntax tree."""

    source: str
    names: tuple[str, ...]
    tree: ast.expr = field(compare=False)  # the source decides equality (pack cache round trip)
    lists: tuple[str, ...] = ()  # the names it reads as lists (``largest(name)``, ``count(name)``): json options

    def evaluate(self, values: dict[str, Any]) -> Any:
        value = self._evaluator(values)
        # a product of two operands in range can leave it: null, like an operand out of range
        return None if isinstance(value, (int, float)) and not isinstance(value, bool) and not _number(value) \
            else value

    @functools.cached_property
    def _evaluator(self) -> _Evaluator:
        return _compile(self.tree)


@functools.lru_cache(maxsize=1024)
def cached_expression(text: str) -> Expression:
    """The parsed expression of an adjustment's ``{expr: ...}`` (checked when the pack loads; parsed
    once per process when it is used)."""
    return parse_expression(text)


def parse_expression(text: str) -> Expression:
    """Parse a ``value:``; raise :class:`~resolver.conditions.ConditionError` with a column on failure."""
    text = " ".join(str(text).split())
    tree = parse_tree(text, "value")  # capped length and nesting (20,000 unary minuses cannot crash the parser)
    if sum(1 for _ in ast.walk(tree)) > _MAX_NODES:
        raise ConditionError(f"'value' is longer than {_MAX_NODES} terms; split it into several compute rules")
    names: dict[str, None] = {}
    bare: dict[str, bool] = {}  # name -> whether it is read as an operand (else only as largest()'s list)
    _check(tree, names, bare)
    # a json option is never an operand: a name read bare anywhere is no list name
    return Expression(text, tuple(names), tree, tuple(n for n, operand in bare.items() if not operand))


def _check(node: ast.AST, names: dict[str, None], bare: dict[str, bool]) -> None:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _LIST_CALLS:
        if len(node.args) != 1 or node.keywords or not _is_name(node.args[0]):
            raise ConditionError(f"{node.func.id}() takes one name, a json option's list: '{ast.unparse(node)}'",
                                 node.col_offset)
        names.setdefault(_name(node.args[0]))
        bare.setdefault(_name(node.args[0]), False)
    elif _is_name(node):
        names.setdefault(_name(node))
        bare[_name(node)] = True
    elif _literal_name(node) or isinstance(node, ast.Constant):
        _literal(node)  # the same constants as ``when:`` (engine-exact numbers, no bytes)
    elif isinstance(node, ast.BinOp) and type(node.op) in _ARITH:
        _check(node.left, names, bare)
        _check(node.right, names, bare)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Not)):
        _check(node.operand, names, bare)
    elif isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE:
        _check(node.left, names, bare)
        _check(node.comparators[0], names, bare)
    elif isinstance(node, ast.BoolOp):
        for v in node.values:
            _check(v, names, bare)
    elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _CALLS
          and len(node.args) >= _CALLS[node.func.id] and not node.keywords
          and (node.func.id != "round" or len(node.args) == 2)):
        for a in node.args:
            _check(a, names, bare)
        digits = node.args[1] if node.func.id == "round" else None
        if digits is not None and not _is_name(digits) and _literal_bound(digits) is False:
            raise ConditionError(f"round() to {ast.unparse(digits)} digits: the precision must be an integer "
                                 f"between -{MAX_ROUND_DIGITS} and {MAX_ROUND_DIGITS}", digits.col_offset)
    elif isinstance(node, ast.IfExp):
        for part in (node.test, node.body, node.orelse):
            _check(part, names, bare)
    else:
        raise ConditionError(f"unsupported expression '{ast.unparse(node)}' in 'value'", getattr(node, "col_offset", 0))


def _literal_bound(node: ast.expr) -> bool | None:
    """Whether a constant ``round`` precision (``2``, ``-3``) is within MAX_ROUND_DIGITS; None when
    it is not a constant (it is checked when evaluated)."""
    negative = isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
    inner = node.operand if negative and isinstance(node, ast.UnaryOp) else node
    if not isinstance(inner, ast.Constant):
        return None
    value: Any = inner.value
    if negative:
        if not _number(value):
            return None  # the constant check refuses it with its own words
        value = -value
    return _digits(value)


def _number(v: Any) -> bool:
    """A number an operation takes: not a boolean, an integer within MAX_OPERAND, a finite float."""
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return -MAX_OPERAND <= v <= MAX_OPERAND
    return isinstance(v, float) and math.isfinite(v)


def _digits(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and -MAX_ROUND_DIGITS <= v <= MAX_ROUND_DIGITS


#: an evaluator: the values decided so far -> the value (null propagates, see the module doc)
_Evaluator = Callable[[dict[str, Any]], Any]


def _compile(node: ast.AST) -> _Evaluator:
    """The checked tree as nested closures, built once per expression: evaluating walks no syntax tree
    and dispatches on no node type (a resolution evaluates dozens of values)."""
    if _is_name(node):
        name = _name(node)
        return lambda values: values.get(name)
    if _literal_name(node) or isinstance(node, ast.Constant):
        constant = _literal(node)
        return lambda values: constant
    if isinstance(node, ast.BinOp):
        left, right, op = _compile(node.left), _compile(node.right), _ARITH[type(node.op)]
        divides = isinstance(node.op, _DIVIDE)

        def arithmetic(values):
            a, b = left(values), right(values)
            if not (_number(a) and _number(b)) or (divides and b == 0):
                return None
            return op(a, b)
        return arithmetic
    if isinstance(node, ast.UnaryOp):
        operand = _compile(node.operand)
        if isinstance(node.op, ast.Not):
            return lambda values: None if (v := operand(values)) is None else not v
        return lambda values: -v if _number(v := operand(values)) else None
    if isinstance(node, ast.Compare):
        left, right, kind = _compile(node.left), _compile(node.comparators[0]), type(node.ops[0])
        compare = _COMPARE[kind]

        def comparison(values):
            a, b = left(values), right(values)
            if a is None or b is None:
                return None
            if kind in (ast.Eq, ast.NotEq):
                same = a == b and isinstance(a, bool) == isinstance(b, bool)  # true is not 1 (conditions.py)
                return same if kind is ast.Eq else not same
            return compare(a, b) if _number(a) and _number(b) else None
        return comparison
    if isinstance(node, ast.BoolOp):
        parts, conjunction = [_compile(v) for v in node.values], isinstance(node.op, ast.And)

        def boolean(values):
            items = [p(values) for p in parts]
            if any(v is None for v in items):
                return None
            return all(items) if conjunction else any(items)
        return boolean
    if isinstance(node, ast.IfExp):
        test, body, orelse = _compile(node.test), _compile(node.body), _compile(node.orelse)

        def conditional(values):
            t = test(values)
            if t is None:
                return None
            return body(values) if t else orelse(values)
        return conditional
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)  # one of _CALLS (_check)
    args, call = [_compile(a) for a in node.args], node.func.id
    if call == "coalesce":
        return lambda values: next((v for v in (a(values) for a in args) if v is not None), None)
    if call in _LIST_CALLS:
        name, largest = _name(node.args[0]), call == "largest"

        def of_list(values):
            items = values.get(name)
            if not isinstance(items, list) or not items or not all(map(_number, items)):
                return None
            return max(items) if largest else len(items)
        return of_list

    def function(values):
        got = [a(values) for a in args]
        if not all(map(_number, got)):
            return None
        if call == "round":
            number, digits = got
            return round(number, digits) if _digits(digits) else None
        return min(got) if call == "min" else max(got)
    return function
