"""Embed the resolver in an existing ``argparse`` launcher.

    parser = argparse.ArgumentParser()
    ...                                        # the launcher's own flags (or ServerArgs.add_cli_args(parser))
    add_resolver_arguments(parser)             # the resolver's flags it does not have yet
    args = parser.parse_args()
    resolution = resolve_namespace(parser, args)   # the model from --model-path; raises ConflictError
    # args now holds what the resolution decided

Flags the launcher already declares (say its own ``--kv-cache-dtype``) are reused, never
added twice; their value counts as set by the user only when it differs from the launcher's
default (argparse cannot tell a typed value equal to the default from the default itself:
declare such a flag with ``default=None`` to let the resolver tell).  Only the resolver's own
options are passed to it, and ``--model-path`` when the caller gives no ``model``; every other
flag stays in the namespace as parsed.

The write-back contract (what :func:`resolve_namespace` changes in the namespace):

* a value a rule decided (a default or an adjustment rule), or the resolution's spelling of
  a typed value (``--attention-backend nsa`` becomes ``dsa``), is written;
* the option's declared default, where no rule decided (source ``fallback``), is written only
  over a concrete launcher default that differs from it, or into a flag this module added; a
  launcher's ``None`` stays ``None`` (the launcher fills in its own default later, and SGLang
  reads a typed ``--page-size 1`` differently from an unset one);
* a copy of a checkpoint fact (an MTP draft that is the target's ``--model-path``, the quantization
  a model takes from its config.json) is not written over the launcher's ``None``: the launcher
  derives it itself, and written it would read as typed (a typed ``--quantization`` also quantizes
  the draft model);
* where SGLang works a value out from the given one (the chunk size it divides among attention-DP
  ranks), the value before that step is written: written final, SGLang would divide it again;
* ``None`` is never written: no rule decides None, and a launcher's default (SGLang's
  ``1.0`` receive threshold, its ``"auto"`` dequant dtype) must survive;
* on a conflict nothing is written (``ConflictError`` is raised first).

So the namespace round-trips: resolving it again changes nothing.  Each decision is logged
once at INFO on the ``resolver`` logger; nothing here sets up logging.
"""
from __future__ import annotations

import argparse
import logging
import weakref
from typing import Any

from ..api import Resolution, get_engine, resolve_request
from ..catalogue import catalogue
from ..errors import ConflictError
from ..launch_line import copied_from_checkpoint, launch_value
from ..rules import RulePack

__all__ = ["add_resolver_arguments", "resolve_namespace"]

log = logging.getLogger("resolver")

_PLATFORM_HELP = "target GPU: a platform name or alias, or 'auto' to detect it (launch-resolver)"

#: the flags add_resolver_arguments declared itself: the launcher has no value of its own there, so
#: they show every resolved value (weak: a parser and its actions may come and go)
_ADDED: weakref.WeakSet[argparse.Action] = weakref.WeakSet()


def _existing(parser: argparse.ArgumentParser, flags: list[str]) -> argparse.Action | None:
    # argparse keeps its flag table in _option_string_actions; it is the only way to reuse a flag
    return next((parser._option_string_actions[f] for f in flags if f in parser._option_string_actions), None)


def add_resolver_arguments(parser: argparse.ArgumentParser, rules: str | None = None,
                           title: str = "attention kernels (launch-resolver)") -> None:
    """Add the resolver's launch options (and ``--platform``) that ``parser`` does not have yet."""
    pack = get_engine(rules).pack
    group = None
    if _existing(parser, ["--platform"]) is None:
        group = parser.add_argument_group(title)
        group.add_argument("--platform", dest="resolver_platform", default="auto", help=_PLATFORM_HELP)
    for opt in sorted(pack.options.values(), key=lambda o: o.name):
        flags = [opt.flag, *opt.aliases]
        if opt.env or opt.no_cli or _existing(parser, flags) is not None:  # an environment variable is no flag
            continue
        group = group or parser.add_argument_group(title)
        help_ = opt.help + (f" (choices: {', '.join(opt.choices)})" if opt.choices else "")
        if opt.type == "bool" and _bool_optional(opt.name):  # SGLang's --x / --no-x pair
            action = group.add_argument(*flags, dest=opt.name, action=argparse.BooleanOptionalAction, default=None,
                                        help=help_)
        elif opt.type == "bool":
            action = group.add_argument(*flags, dest=opt.name, action="store_const", const=True, default=None,
                                        help=help_)
        else:
            action = group.add_argument(*flags, dest=opt.name, default=None, metavar="VALUE", help=help_)
        _ADDED.add(action)


def _typed(parser: argparse.ArgumentParser, ns: argparse.Namespace, pack: RulePack) -> dict[str, Any]:
    """option -> value, for each resolver option the user set on the command line.  Other flags
    are not passed: the launcher's parser has checked them and they stay in ``ns`` as parsed, so
    the resolver could only refuse one its own catalogue types differently."""
    out = {}
    for opt in pack.options.values():
        action = None if opt.env or opt.no_cli else _existing(parser, [opt.flag, *opt.aliases])
        if action is None:
            continue
        value = getattr(ns, action.dest, None)
        if value is None or value == action.default:
            continue  # the launcher's own default is not the user's choice: let the resolver pick
        out[opt.name] = value
    return out


def _write_back(parser: argparse.ArgumentParser, ns: argparse.Namespace, res: Resolution) -> None:
    """Write what the resolution decided into ``ns`` (the contract in the module docstring)."""
    for name, opt in res.pack.options.items():
        action = None if opt.env or opt.no_cli else _existing(parser, [opt.flag, *opt.aliases])
        if action is None:
            continue
        value, held = launch_value(res, name), getattr(ns, action.dest, None)
        if value is None or value == held:
            continue
        if res.derivations[name].source == "fallback" and held is None and action not in _ADDED:
            continue  # the launcher's "unset": it applies its own default, which the fallback mirrors
        if copied_from_checkpoint(res, name) and held is None:
            continue  # the launcher derives it from the checkpoint itself; written, it would read as typed
        setattr(ns, action.dest, value)


def _bool_optional(name: str) -> bool:
    """Whether SGLang declares ``name`` with a ``--no-`` twin (argparse.BooleanOptionalAction)."""
    action = catalogue().by_dest.get(name)
    return action is not None and action.kind == "bool_optional"


def resolve_namespace(parser: argparse.ArgumentParser, ns: argparse.Namespace, *, platform: str | None = None,
                      model: dict | str | None = None, model_arch: str | None = None,
                      rules: str | None = None) -> Resolution:
    """Resolve what ``ns`` holds, write what the resolution decided back into it, log each decision once.

    :raises ConflictError: the configuration conflicts (every conflict, with fixes, is on the
        error); ``ns`` is left as it was.
    :raises ResolverError: bad input (an unknown value, an unknown platform, an unreadable model).
    """
    engine = get_engine(rules)
    own = _existing(parser, ["--platform"])  # the launcher's own --platform, or the one added above
    platform = platform or (getattr(ns, own.dest, None) if own is not None else None) or "auto"
    args = _typed(parser, ns, engine.pack)
    path = _existing(parser, ["--model-path"])
    if model is None and model_arch is None and path is not None and getattr(ns, path.dest, None) is not None:
        # SGLang's --model-path (a directory, a Hugging Face id in the local cache, a catalogued id):
        # the resolver finds the model the same way when the caller names none
        args["model_path"] = getattr(ns, path.dest)
    res = resolve_request(engine, platform=platform, args=args, model=model, model_arch=model_arch)
    if res.conflicts:
        raise ConflictError(res)
    _write_back(parser, ns, res)
    for name in sorted(engine.pack.options):
        d = res.derivations[name]
        # an environment variable is logged as SGLang writes it; the launcher reads it from res.env
        value = res.env.get(name) if engine.pack.options[name].env else res.values[name]
        if d.source in ("default", "adjustment"):
            log.info("%s = %s (%s rule %s: %s)", name, value, d.source, d.rule, d.doc)
        elif d.adjustments:
            log.info("%s = %s (adjusted: %s)", name, value, d.adjustments[-1].message)
    for warning in res.warnings:
        log.warning("%s", warning)
    return res
