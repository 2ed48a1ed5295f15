"""Numbers the rule engine can hold.

durable-rules 2.0.28 parses fact JSON with its own number reader, which does not accept
exponent notation: a float Python writes as ``1e-05`` or ``1e+16`` (or ``Infinity``, ``NaN``)
makes the engine drop that fact and every later fact of the same batch, silently (measured
here; not in the engine reference).  So every number that becomes a fact is checked first:
finite, an integer within JSON's exact range, or a float whose shortest form has no exponent.
"""
from __future__ import annotations

import math
from typing import Any

from .errors import InputError

__all__ = ["engine_number"]

_MAX_INT = 2**53  # beyond this JSON numbers stop being exact; no launch option needs more


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
