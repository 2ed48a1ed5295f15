"""Embed the resolver in an existing ``argparse`` launcher.

    parser = argparse.ArgumentParser()
    ...                                        # the launcher's own flags
    add_resolver_arguments(parser)             # the resolver's flags it does not have yet
    args = parser.parse_args()
    resolution = resolve_namespace(parser, args, model=args.model_path)   # raises ConflictError
    # args now holds the resolved values

Flags the launcher already declares (say its own ``--kv-cache-dtype``) are reused, never
added twice; their value counts as set by the user only when it differs from the launcher's
default (argparse cannot tell a typed value equal to the default from the default itself:
declare such a flag with ``default=None`` to let the resolver tell).  Each decision is logged once at INFO on the ``resolver`` logger; nothing here sets
up logging.
"""
from __future__ import annotations

import argparse
import logging
from typing import Any

from ..api import Resolution, get_engine, resolve_request
from ..errors import ConflictError

__all__ = ["add_resolver_arguments", "resolve_namespace"]

log = logging.getLogger("resolver")

_TARGET = (("--platform", dict(default="auto", help="target GPU: a platform name or alias, or 'auto' to detect it "
                                                      "(launch-resolver)")),)


def _existing(parser: argparse.ArgumentParser, flags) -> argparse.Action | None:
    # argparse keeps its flag table in _option_string_actions; it is the only way to reuse a flag
    return next((parser._option_string_actions[f] for f in flags if f in parser._option_string_actions), None)


def add_resolver_arguments(parser: argparse.ArgumentParser, rules: str | None = None,
                           title: str = "attention kernels (launch-resolver)") -> None:
    """Add the resolver's launch options (and ``--platform``) that ``parser`` does not have yet."""
    pack = get_engine(rules).pack
    group = None
    for flag, kw in _TARGET:
        if _existing(parser, [flag]) is None:
            group = group or parser.add_argument_group(title)
            group.add_argument(flag, dest="resolver_platform", **kw)
    for opt in sorted(pack.options.values(), key=lambda o: o.name):
        flags = [opt.flag, *opt.aliases]
        if _existing(parser, flags) is not None:
            continue
        group = group or parser.add_argument_group(title)
        help_ = opt.help + (f" (choices: {', '.join(opt.choices)})" if opt.choices else "")
        if opt.type == "bool":
            group.add_argument(*flags, dest=opt.name, action="store_const", const=True, default=None, help=help_)
        else:
            group.add_argument(*flags, dest=opt.name, default=None, metavar="VALUE", help=help_)


def _typed(parser: argparse.ArgumentParser, ns: argparse.Namespace, pack) -> dict[str, tuple[str, Any]]:
    """option -> (dest, value) for each resolver option the user set on the command line."""
    out = {}
    for opt in pack.options.values():
        action = _existing(parser, [opt.flag, *opt.aliases])
        if action is None:
            continue
        value = getattr(ns, action.dest, None)
        if value is None or value == action.default:
            continue  # the launcher's own default is not the user's choice: let the resolver pick
        out[opt.name] = (action.dest, value)
    return out


def resolve_namespace(parser: argparse.ArgumentParser, ns: argparse.Namespace, *, platform: str | None = None,
                      model: dict | str | None = None, model_arch: str | None = None,
                      rules: str | None = None) -> Resolution:
    """Resolve what ``ns`` holds, write the resolved values back into it, log each decision once.

    :raises ConflictError: the configuration conflicts (every conflict, with fixes, is on the error).
    :raises ResolverError: bad input (an unknown value, an unknown platform, an unreadable model).
    """
    engine = get_engine(rules)
    typed = _typed(parser, ns, engine.pack)
    own = _existing(parser, ["--platform"])  # the launcher's own --platform, or the one added above
    platform = platform or (getattr(ns, own.dest, None) if own is not None else None) or "auto"
    res = resolve_request(engine, platform=platform, args={name: value for name, (_, value) in typed.items()},
                          model=model, model_arch=model_arch)
    if res.conflicts:
        raise ConflictError(res)
    for name, value in res.values.items():
        action = _existing(parser, [engine.pack.options[name].flag, *engine.pack.options[name].aliases])
        if action is not None:
            setattr(ns, action.dest, value)
    for name in sorted(res.values):
        d = res.derivations[name]
        if d.source in ("default", "adjustment"):
            log.info("%s = %s (%s rule %s: %s)", name, res.values[name], d.source, d.rule, d.doc)
        elif d.adjustments:
            log.info("%s = %s (adjusted: %s)", name, res.values[name], d.adjustments[-1].message)
    for warning in res.warnings:
        log.warning("%s", warning)
    return res
