"""Turn what a user typed (flags or JSON ``args``) into typed, validated option values.

Everything here comes from the option declarations in ``rules/``: flags, deprecated aliases,
types, choices, deprecated values.  Errors are :class:`~resolver.errors.InputError` with a
"did you mean" where one is close.
"""
from __future__ import annotations

import difflib
import json
from typing import Any

from .catalogue import catalogue
from .errors import InputError
from .numbers import engine_number
from .rules import Option, RulePack
from .safe_io import parse_json

__all__ = ["coerce_args", "coerce_value", "split_unchecked", "to_argv"]

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def to_argv(pack: RulePack, values: dict[str, Any]) -> tuple[str, ...]:
    """The flags that type ``values`` (SGLang field -> value), in name order, spelled as SGLang's
    parser reads them; a false switch or a null value is not typed at all (``--no-x`` where SGLang
    has one)."""
    cat = catalogue()
    argv: list[str] = []
    for name in sorted(values):
        value = values[name]
        opt = pack.options.get(name)
        action = cat.by_dest.get(name)
        if value is None or opt is not None and opt.no_cli:
            continue
        if opt is not None and opt.type == "bool" or action is not None and action.type == "bool":
            flag = opt.flag if opt is not None else action.flags[0]  # type: ignore[union-attr]
            if value:
                argv.append(flag)
            elif action is not None and action.kind == "bool_optional":
                argv.append(next(f for f in action.flags if f.startswith("--no-")))
            continue
        flag = opt.flag if opt is not None else action.flags[0] if action is not None else f"--{name.replace('_', '-')}"
        if action is not None and action.kind == "store_const":  # --monokernel-backend amd sets a constant
            argv += [flag, str(action.choices[0]) if action.choices else str(value)]
        elif isinstance(value, list):
            argv += [flag, *(_text(v) for v in value)]
        else:
            argv += [flag, _text(value)]
    return tuple(argv)


def _text(value: Any) -> str:
    """A value as SGLang's parser takes it back: JSON for objects, Python's spelling otherwise."""
    return json.dumps(value) if isinstance(value, (dict, list)) else str(value)


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
        action = catalogue().by_dest.get(option.name) if isinstance(value, str) else None
        if action is not None and action.type == "int_suffix":  # SGLang reads 16k, 1Mi (--max-prefill-tokens)
            value = catalogue().coerce(option.name, value, flag)
        try:
            typed = float(value) if option.type == "float" else value
            if option.type == "int":
                if isinstance(value, float) and (not value.is_integer()):
                    raise ValueError
                typed = int(value)
        except (TypeError, ValueError, OverflowError):
            what = "an integer" if option.type == "int" else "a number"
            raise InputError(f"{flag}: expected {what}, got {_short(value)}") from None
        typed = engine_number(typed, flag)
        if option.minimum is not None and typed < option.minimum:
            raise InputError(f"{flag}: must be at least {option.minimum:g}, got {typed}")
        return typed, None
    if option.type == "json":
        return _json_value(option, value, flag), None
    if not isinstance(value, str):
        raise InputError(f"{flag}: expected a string, got {_short(value)}")
    if option.type == "choice":
        if value in option.value_aliases:
            new = option.value_aliases[value]
            if option.value_alias_note:
                return new, option.value_alias_note.format(flag=flag, value=value, new=new)
            return new, f"{flag} {value} is deprecated; it means {new}: use {flag} {new}"
        if value not in option.choices:
            raise InputError(
                f"{flag}: invalid value '{value}'.{_did_you_mean(value, option.choices)} "
                f"Valid values: {', '.join(option.choices)}"
            )
    return value, None


def _json_value(option: Option, value: Any, flag: str) -> Any:
    """A json option's value: JSON text from the command line parsed where SGLang parses it (a ``json``
    flag), the words of a many-valued flag as a list, anything JSON from a request as it is."""
    action = catalogue().by_dest.get(option.name)
    if isinstance(value, str) and (action is None or action.type == "json"):
        try:
            return parse_json(value, flag)  # within the caps on depth and integer length
        except json.JSONDecodeError as exc:
            raise InputError(f"{flag}: expected JSON, got {_short(value)} ({exc.msg})") from None
    words = isinstance(value, list) and bool(value) and all(isinstance(w, str) for w in value)
    if action is not None and (isinstance(value, str) or words and action.nargs in ("+", "*")):
        # SGLang's own typing of a many-valued flag's words (--cuda-graph-bs-prefill 4 8: integers)
        value = catalogue().coerce(option.name, value, flag)
    try:
        return parse_json(json.dumps(value), flag)  # a copy, within the caps on depth and integer length
    except (TypeError, ValueError):
        raise InputError(f"{flag}: expected a JSON value, got {_short(value)}") from None


#: SGLang fields the resolver reads itself rather than carrying through (the model to resolve for)
CONSUMED = frozenset({"model_path"})


def split_unchecked(pack: RulePack, args: dict[str, Any], flags: dict[str, str] | None = None
                    ) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """Split ``args`` into the options the rules declare (typed later by :func:`coerce_args`) and
    SGLang fields no rule reads, typed here as SGLang's parser types them and carried through
    unchanged.  Returns (rule args, unchecked values, deprecation notes); a name that is neither
    is an InputError with a did-you-mean over every SGLang field."""
    if not isinstance(args, dict):
        raise InputError(f"args must be a JSON object of option: value, got {type(args).__name__}")
    flags = flags or {}
    cat = catalogue()
    rule_args: dict[str, Any] = {}
    unchecked: dict[str, Any] = {}
    notes: list[str] = []
    for name, value in args.items():
        if not isinstance(name, str):
            raise InputError(f"option names must be strings, got {name!r}")
        action = cat.by_dest.get(name)
        # SGLang's own deprecations, whether a rule reads the field or not
        typed_flag = flags.get(name) or (action.flags[0] if action is not None else None)
        deprecated = cat.by_flag[typed_flag].deprecated if typed_flag in cat.by_flag else None
        if deprecated:
            instead = f"; use {deprecated}" if isinstance(deprecated, str) else ""
            notes.append(f"{typed_flag} is deprecated in SGLang {cat.sglang_version}{instead}")
        if name in pack.options and pack.options[name].env:
            raise InputError(f"{name} is an environment variable, not a launch option: give it in 'env' "
                             f"(--env {name}=VALUE)")
        if name in pack.options and pack.options[name].no_cli:
            raise InputError(f"{name} has no flag in SGLang {cat.sglang_version}: its resolution derives it, "
                             "it cannot be typed")
        if name in pack.options:
            rule_args[name] = value
            continue
        if action is None:
            raise InputError(f"unknown option '{name}'.{_did_you_mean(name, [*pack.options, *cat.by_dest])}")
        typed = cat.coerce(name, value, flags.get(name))
        renamed = (cat.value_renames.get("deprecated_tool_call_parsers", {}).get(typed)
                   if name == "tool_call_parser" else None)
        if renamed:
            notes.append(f"{typed_flag} {typed} is deprecated; SGLang reads it as {renamed}")
            typed = renamed
        unchecked[name] = typed
    return rule_args, unchecked, notes


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
