"""Turn what a user typed (flags or JSON ``args``) into typed, validated option values.

Everything here comes from the option declarations in ``rules/``: flags, deprecated aliases,
types, choices, deprecated values.  Errors are :class:`~resolver.errors.InputError` with a
"did you mean" where one is close.
"""
from __future__ import annotations

import difflib
from typing import Any

from .errors import InputError
from .numbers import engine_number
from .rules import Option, RulePack

__all__ = ["coerce_args", "coerce_value", "to_argv"]

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def to_argv(pack: RulePack, values: dict[str, Any]) -> tuple[str, ...]:
    """The flags that type ``values`` (option name -> value), in name order; a false switch or a
    null value is not typed at all."""
    argv: list[str] = []
    for name in sorted(values):
        opt, value = pack.options[name], values[name]
        if opt.type == "bool":
            if value:
                argv.append(opt.flag)
        elif value is not None:
            argv += [opt.flag, str(value)]
    return tuple(argv)


def _did_you_mean(word: str, known) -> str:
    close = difflib.get_close_matches(word, sorted(known), n=1)
    return f" Did you mean '{close[0]}'?" if close else ""


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def coerce_value(option: Option, value: Any, flag: str | None = None) -> tuple[Any, str | None]:
    """Return (typed value, deprecation note or None) or raise InputError listing valid values."""
    flag = flag or option.flag
    if value is None:
        return None, None
    if option.type == "bool":
        if isinstance(value, bool):
            return value, None
        if isinstance(value, str) and value.lower() in _TRUE | _FALSE:
            return value.lower() in _TRUE, None
        raise InputError(f"{flag}: expected true or false, got {_short(value)}")
    if option.type in ("int", "float"):
        if isinstance(value, bool):
            raise InputError(f"{flag}: expected a number, got {_short(value)}")
        try:
            typed = float(value) if option.type == "float" else value
            if option.type == "int":
                if isinstance(value, float) and (not value.is_integer()):
                    raise ValueError
                typed = int(value)
        except (TypeError, ValueError, OverflowError):
            raise InputError(f"{flag}: expected {'an integer' if option.type == 'int' else 'a number'}, got {_short(value)}") from None
        typed = engine_number(typed, flag)
        if option.minimum is not None and typed < option.minimum:
            raise InputError(f"{flag}: must be at least {option.minimum:g}, got {typed}")
        return typed, None
    if not isinstance(value, str):
        raise InputError(f"{flag}: expected a string, got {_short(value)}")
    if option.type == "choice":
        if value in option.value_aliases:
            new = option.value_aliases[value]
            return new, f"{flag} {value} is deprecated; it means {new}: use {flag} {new}"
        if value not in option.choices:
            raise InputError(
                f"{flag}: invalid value '{value}'.{_did_you_mean(value, option.choices)} "
                f"Valid values: {', '.join(option.choices)}"
            )
    return value, None


def coerce_args(pack: RulePack, args: dict[str, Any], flags: dict[str, str] | None = None):
    """Validate a mapping of option name -> value.

    Returns (typed args without unset values, notes about deprecated spellings, the spellings
    the user typed where a deprecated value alias was normalised).  Values listed in an
    option's ``unset_values`` (``auto`` for the KV dtype) mean "let the resolver pick".
    """
    if not isinstance(args, dict):
        raise InputError(f"args must be a JSON object of option: value, got {type(args).__name__}")
    flags = flags or {}
    typed: dict[str, Any] = {}
    spelled: dict[str, Any] = {}
    notes: list[str] = []
    for name in args:
        if not isinstance(name, str):
            raise InputError(f"option names must be strings, got {name!r}")
    for name in sorted(args):
        option = pack.options.get(name)
        if option is None:
            raise InputError(f"unknown option '{name}'.{_did_you_mean(str(name), pack.options)}")
        value, note = coerce_value(option, args[name], flags.get(name))
        if note:
            notes.append(note)
            spelled[name] = args[name]
        if value is None or value in option.unset_values and not isinstance(value, bool):
            continue
        typed[name] = value
    return typed, notes, spelled
