"""Every SGLang 0.5.23 server flag, as SGLang's own argparse declares it.

The table (``resolver/data/sglang_flags.json``) is made from SGLang's parser by
``tools/sync_flags.py``; rules declare the options they reason about in ``rules/options.yaml``,
and every other flag comes from here, so a pasted launch command is never refused for a flag
the rules do not know.  This module reads the table, expands the unique-prefix abbreviations
SGLang's argparse accepts (``--tp`` is ``--tp-size``), and types a value as SGLang's parser
would.
"""
from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from importlib import resources
from typing import Any

from .errors import InputError

__all__ = ["CatalogueFlag", "Catalogue", "catalogue"]


@dataclass(frozen=True)
class CatalogueFlag:
    """One argparse action of SGLang's parser."""

    dest: str  # the ServerArgs field
    flags: tuple[str, ...]  # option strings, the first the canonical one
    kind: str  # store | true | false | bool_optional | store_const
    type: str  # str | int | float | bool | json | int_suffix | nullable_str
    default: Any
    nargs: str | None = None  # "+", "*", "?" or None (one value)
    choices: tuple[Any, ...] | None = None
    const: Any = None
    deprecated: str | bool | None = None  # True, or the flag that replaces it

    @property
    def takes_value(self) -> bool:
        return self.kind in ("store", "store_const")

    def value_of(self, typed_flag: str) -> bool | None:
        """The value a valueless flag sets (``--no-x`` sets False)."""
        if self.kind == "true":
            return True
        if self.kind == "false":
            return False
        if self.kind == "bool_optional":
            return not typed_flag.startswith("--no-")
        return None


class Catalogue:
    def __init__(self, table: dict[str, Any]):
        self.sglang_version: str = table["sglang_version"]
        self.actions: tuple[CatalogueFlag, ...] = tuple(
            CatalogueFlag(e["dest"], tuple(e["flags"]), e["kind"], e["type"], e["default"], e.get("nargs"),
                          tuple(e["choices"]) if "choices" in e else None, e.get("const"), e.get("deprecated"))
            for e in table["flags"])
        self.by_flag: dict[str, CatalogueFlag] = {f: a for a in self.actions for f in a.flags}
        #: ServerArgs field -> the action that owns it (the non-deprecated one where a field has two)
        self.by_dest: dict[str, CatalogueFlag] = {}
        for a in self.actions:
            if a.dest not in self.by_dest or self.by_dest[a.dest].deprecated:
                self.by_dest[a.dest] = a
        self.value_renames: dict[str, dict[str, str]] = table["value_renames"]
        #: ServerArgs field -> SGLang's default (argparse's), as the checks catalogue compares decided values
        self.defaults: dict[str, Any] = {dest: a.default for dest, a in self.by_dest.items()}

    def expand(self, token: str) -> str | list[str] | None:
        """The flag ``token`` names as SGLang's argparse reads it: itself, the one flag it is a
        prefix of (argparse's ``allow_abbrev``), the list of candidates when it is ambiguous, or
        None when it names no flag."""
        if token in self.by_flag:
            return token
        if not token.startswith("--") or len(token) < 3:
            return None
        hits = sorted(f for f in self.by_flag if f.startswith(token))
        if len(hits) == 1:
            return hits[0]
        return hits or None

    def default(self, dest: str) -> Any:
        return self.by_dest[dest].default

    def coerce(self, dest: str, value: Any, flag: str | None = None) -> Any:
        """``value`` typed as SGLang's parser types it (strings from a command line, or JSON values
        from a batch request); InputError names the flag and what it expects."""
        action = self.by_dest[dest]
        where = flag or action.flags[0]
        if value is None:
            return None
        if action.type == "bool":
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no"):
                return value.lower() in ("true", "1", "yes")
            raise InputError(f"{where}: expected true or false, got {_short(value)}")
        if action.nargs in ("+", "*"):
            items = value if isinstance(value, list) else [value]
            if action.nargs == "+" and not items:
                raise InputError(f"{where}: expected at least one value")
            return [self._one(action, v, where) for v in items]
        return self._one(action, value, where)

    def _one(self, action: CatalogueFlag, value: Any, where: str) -> Any:
        kind = action.type
        if kind == "json":
            if isinstance(value, str):
                try:
                    return json.loads(value)
                except ValueError:
                    raise InputError(f"{where}: expected JSON, got {_short(value)}") from None
            return value
        if kind in ("int", "int_suffix", "float"):
            typed = _number(value, kind)
            if typed is None:
                what = {"int": "an integer", "int_suffix": "an integer (1k, 1M, 1Ki also work)",
                        "float": "a number"}[kind]
                raise InputError(f"{where}: expected {what}, got {_short(value)}")
            value = typed
        elif not isinstance(value, str):
            raise InputError(f"{where}: expected a string, got {_short(value)}")
        elif kind == "nullable_str" and value in ("", "None"):
            return None
        if action.choices is not None and value not in action.choices:
            import difflib

            close = difflib.get_close_matches(str(value), [str(c) for c in action.choices], n=1)
            hint = f" Did you mean '{close[0]}'?" if close else ""
            raise InputError(f"{where}: invalid value '{value}'.{hint} "
                             f"Valid values: {', '.join(str(c) for c in action.choices)}")
        if action.kind == "store_const":
            return action.const
        return value


_SI = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
_IEC = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


def _number(value: Any, kind: str) -> int | float | None:
    """A number as SGLang's ``int``, ``float`` or suffix-aware integer type reads it, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        if kind == "float":
            return float(value)
        if isinstance(value, int):
            return value
        return int(value) if value.is_integer() else None
    if not isinstance(value, str):
        return None
    text = value.strip()
    try:
        if kind == "float":
            return float(text)
        return int(text)
    except ValueError:
        pass
    if kind == "int_suffix":
        # SI suffixes take decimals, IEC suffixes whole numbers only (sglang.srt.utils.common)
        m = re.fullmatch(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)", text)
        if m:
            number, suffix = m.groups()
            if suffix in _IEC:
                return None if "." in number else int(number) * _IEC[suffix]
            try:
                return int(Decimal(number) * _SI[suffix])
            except InvalidOperation:
                return None
    return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


@functools.lru_cache(maxsize=1)
def catalogue() -> Catalogue:
    """The shipped flag table (read once per process)."""
    text = resources.files("resolver").joinpath("data/sglang_flags.json").read_text(encoding="utf-8")
    return Catalogue(json.loads(text))
