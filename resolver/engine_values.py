"""How a value is written into a durable-rules fact and a rule constant, and read back.

durable-rules 2.0.28 compares values by rules that are not the resolver's (measured on 2.0.28,
``tests/engine_limits.py``): an integer fact equals the string constant ``"1"`` and the
boolean ``true``; a boolean fact equals ``1`` and ``"true"``; ordered tests compare booleans
and strings with numbers; a join between facts finds ``1`` equal to ``"1"`` but not to ``1.0``.
The resolver's rule is that of :meth:`resolver.conditions.Atom.holds`: a boolean equals only a
boolean, a string only a string, numbers compare by value, and to an ordered test anything
that is not a number is "no value".  So no value reaches the engine as itself.  A fact carries:

* ``v``: a type-tagged string, absent for null: ``"s:<text>"``, ``"b:true"`` / ``"b:false"``,
  ``"n:<number>"`` with one spelling per value (``1`` and ``1.0`` are both ``"n:1"``).  Equality
  tests, ``in`` lists, ``!=`` and joins compare ``v``: strings against strings, exactly.
* ``n``: the number itself, for numbers only.  Ordered tests compare ``n``, so a string,
  boolean or null, which has no ``n``, is "no value" to them.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .numbers import engine_value

__all__ = ["constant", "fact_fields", "fact_value"]


def constant(value: Any) -> str:
    """The ``v`` form of a non-null value (already checked by :func:`engine_value`)."""
    if isinstance(value, bool):
        return "b:true" if value else "b:false"
    if isinstance(value, (int, float)):
        # equal numbers must be equal strings: an integral float is spelled as the integer
        return f"n:{int(value)}" if isinstance(value, int) or value.is_integer() else f"n:{value!r}"
    return f"s:{value}"


#: fact_fields' answers for the values that recur in every resolution (option values, model fields)
_FIELDS: dict[tuple[type, Any], dict[str, Any]] = {}
_MEMO_ENTRIES, _MEMO_TEXT = 4096, 256


def fact_fields(value: Any, where: str) -> dict[str, Any]:
    """The fields that carry ``value`` in a fact; InputError naming ``where`` if the engine cannot hold it.
    The answer may be shared: callers copy it, never change it."""
    key = (value.__class__, value)
    try:
        known = _FIELDS.get(key)
    except TypeError:  # unhashable: engine_value refuses it below
        known = None
    if known is not None:
        return known
    value = engine_value(value, where)
    if value is None:
        fields: dict[str, Any] = {}
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        fields = {"v": constant(value), "n": value}
    else:
        fields = {"v": constant(value)}
    # a float is kept out: -0.0 and 0.0 are one key but two facts; long strings would fill the memo
    if key[0] in (str, int, bool, type(None)) and len(_FIELDS) < _MEMO_ENTRIES \
            and not (key[0] is str and len(value) > _MEMO_TEXT):
        _FIELDS[key] = fields
    return fields


def fact_value(fact: Mapping[str, Any]) -> Any:
    """The value a fact (as the engine returns it) carries: the inverse of :func:`fact_fields`."""
    if "n" in fact:
        return fact["n"]
    v = fact.get("v")
    if v is None:
        return None
    return v[2:] if v.startswith("s:") else v == "b:true"
