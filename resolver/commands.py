"""Subcommands of ``resolve`` other than resolving: ``platforms`` (and, with the adapters, ``kernels``).

Each takes ``--format text|json``, exits 0 on success and 2 on bad input.
"""
from __future__ import annotations

import argparse
import json
from typing import TextIO

from .errors import InputError
from .platforms import PLATFORMS

__all__ = ["SUBCOMMANDS"]


def _parser(prog: str, description: str) -> argparse.ArgumentParser:
    from .cli import _Parser

    p = _Parser(prog=f"resolve {prog}", description=description, allow_abbrev=False)
    p.add_argument("--format", choices=["text", "json"], default="text", help="output format (default text)")
    return p


def platforms(argv: list[str], out: TextIO) -> int:
    p = _parser("platforms", "List the target platforms, their aliases and capabilities, and what this machine has.")
    ns = p.parse_args(argv)
    from .detect import detect_platform

    try:
        detection = detect_platform()
        detected, problem = {"name": detection.platform.name, "how": detection.how}, None
    except InputError as exc:
        detected, problem = None, str(exc)
    rows = [{"name": pl.name, "vendor": pl.vendor, "capability": f"{pl.major}.{pl.minor}", "aliases": list(pl.aliases),
             "description": pl.description} for pl in PLATFORMS]
    if ns.format == "json":
        out.write(json.dumps({"platforms": rows, "detected": detected, "detection_error": problem}, indent=2) + "\n")
        return 0
    out.write(f"{'name':<8} {'vendor':<7} {'capability':<11} {'aliases':<40} description\n")
    for r in rows:
        out.write(f"{r['name']:<8} {r['vendor']:<7} {r['capability']:<11} {', '.join(r['aliases']):<40} {r['description']}\n")
    out.write("\nthis machine: " + (detected["how"] if detected else problem) + "\n")
    return 0


SUBCOMMANDS = {"platforms": platforms}
