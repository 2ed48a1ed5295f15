"""Values the rule engine can hold: numbers and strings, checked before they become facts.

durable-rules 2.0.28 parses fact JSON with its own number reader, which does not accept
exponent notation: a float Python writes as ``1e-05`` or ``1e+16`` (or ``Infinity``, ``NaN``)
makes the engine drop that fact and every later fact of the same batch, silently, or crash the
process (a fact with ``"n": 1e-05`` then another fact: SIGSEGV); the same
constant in a rule makes ``create_ruleset`` fail (error 204; ``Infinity`` error 202).  It
compares an integer with a float as doubles, which are exact only up to 2**53.  So every
number that becomes a fact or a rule constant is checked first: finite, an integer within
JSON's exact range, or a float whose shortest form has no exponent.

Strings: the engine keeps a string's JSON text (escapes included, UTF-8) with a 24-bit length;
a string of 2**24 - 1 bytes or more crashes the process (SIGSEGV) or loses the fact.  Python
strings that cannot be encoded to UTF-8 (lone surrogates, e.g. undecodable bytes read with
``surrogateescape``) are refused by the engine's argument parsing ("Invalid argument").
Both limits were measured on 2.0.28 (``tests/engine_limits.py`` prints them again).
"""
from __future__ import annotations

import json
import math
from typing import Any

from .errors import InputError

__all__ = ["ENGINE_MAX_STRING_BYTES", "MAX_STRING_BYTES", "engine_number", "engine_string", "engine_value"]

_MAX_INT = 2**53  # beyond this JSON numbers stop being exact; no launch option needs more

#: the longest string body (JSON-escaped, UTF-8 bytes) durable-rules 2.0.28 holds: measured by
#: bisection, 16,777,214 bytes matched and 16,777,215 crashed, in a fact and in a rule constant
ENGINE_MAX_STRING_BYTES = 2**24 - 2
#: what a resolver string may take: a fact carries it behind a 2-byte type tag (engine_values.py)
MAX_STRING_BYTES = ENGINE_MAX_STRING_BYTES - 2
# a string this short cannot exceed the limit even if every character becomes a 6-byte escape
_SURELY_SHORT = MAX_STRING_BYTES // 6


def engine_number(value: Any, where: str) -> int | float:
    """Return ``value`` if the engine can hold it exactly, else raise InputError naming ``where``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{where}: expected a number, got {repr(value)[:40]}")
    if isinstance(value, int):
        if abs(value) > _MAX_INT:
            raise InputError(f"{where}: {value} is too large (at most {_MAX_INT})")
        return value
    if not math.isfinite(value):
        raise InputError(f"{where}: expected a finite number, got {value!r}")
    if "e" in repr(value):
        if value == int(value) and abs(value) <= _MAX_INT:
            return int(value)
        raise InputError(f"{where}: {value!r} is outside what the resolver handles (use 0 or a magnitude "
                         f"between 0.0001 and {_MAX_INT})")
    return value


def engine_string(value: str, where: str) -> str:
    """Return ``value`` if the engine can hold it, else raise InputError naming ``where``."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(f"{where}: {ascii(value)[:60]} is not valid UTF-8") from None
    if len(value) > _SURELY_SHORT:
        size = len(json.dumps(value, ensure_ascii=False).encode("utf-8")) - 2  # the body, as the engine reads it
        if size > MAX_STRING_BYTES:
            raise InputError(f"{where}: a string of {size} bytes is too long (at most {MAX_STRING_BYTES})")
    return value


def engine_value(value: Any, where: str) -> Any:
    """Check any value that becomes a fact or a rule constant: null, boolean, number or string."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return engine_number(value, where)
    if isinstance(value, str):
        return engine_string(value, where)
    raise InputError(f"{where}: expected a string, number, boolean or null, got {type(value).__name__}")
