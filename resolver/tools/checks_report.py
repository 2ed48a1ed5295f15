"""``resolve checks``: which of SGLang's launch checks the rules encode, and why the others are not.

The catalogue is resolver/data/sglang_checks.json (every raise and assert site of SGLang's launch
resolution, made by tools/sync_checks.py) joined with resolver/data/checks.yaml (the rules encoding each,
or the reason none does); docs/checks.md explains both.  Text output is a coverage table per module, and,
for a FUNCTION_OR_MODULE, each site with its status; ``--format json`` is the whole (or the selected)
catalogue with each site's status.
"""
from __future__ import annotations

import difflib
import json
from typing import Any, TextIO

from ..checks import REASONS, Check, catalogue, coverage, release
from ..errors import InputError

__all__ = ["checks"]


def checks(argv: list[str], out: TextIO) -> int:
    from ..argv import subcommand_parser

    p = subcommand_parser("checks", "Show which of SGLang's launch checks (every raise and assert of its launch "
                                    "resolution) the rules encode, and why the others are not (docs/checks.md).")
    p.add_argument("target", nargs="?", metavar="FUNCTION_OR_MODULE",
                   help="only this SGLang function (handle_context_parallelism, "
                        "srt/arg_groups/parallel_hook.py:handle_context_parallelism) or module (parallel_hook, "
                        "srt/arg_groups/parallel_hook.py); its sites are listed one by one")
    ns = p.parse_args(argv)
    selected = catalogue() if ns.target is None else _select(ns.target)
    summary = coverage(selected)
    if ns.format == "json":
        out.write(json.dumps({"release": release(), "filter": ns.target, "coverage": summary,
                              "checks": [c.to_dict() for c in selected]}, indent=2) + "\n")
        return 0
    _table(summary, out)
    if ns.target is not None:
        _sites(selected, out)
    return 0


def _select(target: str) -> tuple[Check, ...]:
    """The checks of the function or module ``target`` names (InputError, with a close name, when none)."""
    every = catalogue()
    name = target.strip()
    stem = name[:-3] if name.endswith(".py") else name

    def matches(c: Check) -> bool:
        module_stem = c.module[:-3]
        return (name in (c.id, c.module, c.function) or c.function.rsplit(".", 1)[-1] == name
                or module_stem == stem or module_stem.endswith("/" + stem))

    chosen = tuple(c for c in every if matches(c))
    if not chosen:
        known = sorted({c.function.rsplit(".", 1)[-1] for c in every}
                       | {c.module.rsplit("/", 1)[-1][:-3] for c in every})
        close = difflib.get_close_matches(stem.rsplit("/", 1)[-1].rsplit(":", 1)[-1], known, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise InputError(f"no SGLang launch check is in a function or module named '{target}'{hint}; "
                         "'resolve checks' lists the modules")
    return chosen


def _table(summary: dict[str, Any], out: TextIO) -> None:
    f, s = summary["functions"], summary["sites"]
    out.write(f"SGLang {summary['release']} launch checks: {f['total']} functions, {s['total']} sites "
              f"({s['raise']} raise, {s['assert']} assert)\n\n")
    width = max([len(m) for m in summary["modules"]] + [len("total")])
    out.write(f"{'module':<{width}}  {'functions: modelled':>19} {'partly':>6} {'not':>4}  "
              f"{'sites: modelled':>15} {'not':>4}\n")
    rows = [*summary["modules"].items(), ("total", summary)]
    for module, m in rows:
        mf, ms = m["functions"], m["sites"]
        out.write(f"{module:<{width}}  {mf['modelled']:>19} {mf['partly']:>6} {mf['not_modelled']:>4}  "
                  f"{ms['modelled']:>15} {ms['not_modelled']:>4}\n")
    out.write("\nnot modelled, by reason: functions (none of their sites modelled) / sites\n")
    for code in REASONS:
        functions = f["not_modelled_by_reason"].get(code, 0)
        sites = s["not_modelled_by_reason"].get(code, 0)
        if functions or sites:
            out.write(f"  {code:<24} {functions:>4} / {sites}\n")


def _sites(selected: tuple[Check, ...], out: TextIO) -> None:
    current = None
    for c in selected:
        if c.id != current:
            current = c.id
            out.write(f"\n{c.id}\n")
        if c.status == "modelled":
            detail = "-> " + ", ".join(c.rules)
        else:
            detail = c.reason + (f" (rules: {', '.join(c.rules)})" if c.rules else "")
        status = "modelled" if c.status == "modelled" else c.reason_code
        out.write(f"  line {c.line:<5} {status:<22} {c.site}\n      {detail}\n")
