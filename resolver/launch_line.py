"""The resolved launch as an SGLang command line (``resolve --format args``) and the full
command line after a fix: what the user typed, with every decided value SGLang would otherwise
not have, spelled as SGLang's parser reads it."""
from __future__ import annotations

import shlex
from typing import Any

from .catalogue import catalogue
from .expressions import cached_expression
from .options import to_argv
from .outcome import Fix
from .result import LaunchResult

__all__ = ["LAUNCHER", "copied_from_checkpoint", "export_lines", "launch_argv", "launch_value", "launch_values",
           "shell_line", "typed_after_fix"]

#: how SGLang 0.5.23 starts a server
LAUNCHER = ("python", "-m", "sglang.launch_server")


def _typed(res: LaunchResult) -> dict[str, Any]:
    """What the user typed, as SGLang fields (deprecated value spellings already normalised); the
    environment variables a request gives are not flags."""
    options = res.pack.options
    return {**res.request.unchecked, **{n: v for n, v in res.request.args.items() if not options[n].env}}


def copied_from_checkpoint(res: LaunchResult, name: str) -> bool:
    """Whether ``name`` holds a copy of a checkpoint fact (``{from: model.*}``: the quantization a
    model takes from its config.json, an MTP draft that is the target's --model-path).  SGLang
    derives such a value itself; typed, it would read as the user's choice (a typed --quantization
    also quantizes the draft model)."""
    d = res.derivations[name]
    rule = res.pack.rule(d.rule.id) if d.source == "default" and d.rule is not None else None
    proposed = getattr(rule, "set", {}).get(name)
    return isinstance(proposed, dict) and str(proposed.get("from", "")).startswith("model.")


def launch_value(res: LaunchResult, name: str) -> Any:
    """The value to give SGLang for ``name``: the resolved one, except where SGLang itself works the
    final value out from the given one (an ``{expr}`` adjustment of an option from its own value, such
    as the chunk size divided among attention-DP ranks): then the value before that step, since given
    the final one SGLang would apply the step again."""
    d = res.derivations.get(name)
    for a in (d.adjustments if d is not None else ()):
        value = getattr(res.pack.rule(a.rule.id), "value", None)
        if isinstance(value, dict) and "expr" in value and name in cached_expression(value["expr"]).names:
            return a.old
    return res.values[name]


def launch_argv(res: LaunchResult) -> tuple[str, ...]:
    """The user's flags plus every resolved value that differs from SGLang's default, so SGLang
    given this line decides nothing differently from the resolver (a value SGLang copies from the
    checkpoint itself is left to it: see :func:`copied_from_checkpoint`)."""
    return to_argv(res.pack, launch_values(res))


def launch_values(res: LaunchResult) -> dict[str, Any]:
    """The SGLang fields :func:`launch_argv` types, with their values."""
    cat = catalogue()
    typed = _typed(res)
    options = res.pack.options
    chosen = {}
    for name in res.values:
        if name not in typed and name in res.derivations and copied_from_checkpoint(res, name):
            continue
        if name not in typed and name in options and options[name].opaque:
            continue  # untyped, a json field holds what SGLang itself declares for it ({} or [])
        value = launch_value(res, name)
        if name in typed or (name in cat.by_dest and value != cat.default(name)):
            chosen[name] = value
    return chosen


def typed_after_fix(res: LaunchResult, fix: Fix) -> tuple[str, ...]:
    """The complete command line the user types once ``fix`` is applied (not only the delta)."""
    options = res.pack.options
    typed = {n: v for n, v in _typed(res).items() if n not in fix.unset}
    typed.update((n, v) for n, v in fix.set.items() if n not in options or not options[n].env)
    return to_argv(res.pack, typed)


def shell_line(argv: tuple[str, ...]) -> str:
    return shlex.join((*LAUNCHER, *argv))


def export_lines(res: LaunchResult) -> list[str]:
    """The environment SGLang's processes get, as POSIX shell ``export`` lines (``--format env``)."""
    return [f"export {name}={shlex.quote(value)}" for name, value in sorted(res.env.items())]
