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


def kernels(argv: list[str], out: TextIO) -> int:
    p = _parser("kernels", "List the kernel adapters: what each serves and can run, and whether its package is installed here.")
    ns = p.parse_args(argv)
    from .adapters import registry
    from .adapters.base import AdapterError

    reg = registry()
    probes = reg.probes()
    rows = []
    for a in reg.adapters:
        probe = probes[a.name]
        rows.append({
            "name": a.name, "family": a.family, "package": a.package, "source": a.source,
            "serves": {b: list(r) for b, r in a.serves().items()},
            "installed": None if isinstance(probe, AdapterError) else probe.installed,
            "version": None if isinstance(probe, AdapterError) else probe.version,
            "probe_error": str(probe) if isinstance(probe, AdapterError) else None,
            "claims": [{"role": c.role, "backends": list(c.backends), "status": c.status, "platforms": list(c.platforms),
                        "evidence": c.evidence, "strength": c.strength} for c in a.claims],
        })
    errors = [str(e) for e in reg.errors]
    if ns.format == "json":
        out.write(json.dumps({"adapters": rows, "errors": errors}, indent=2) + "\n")
        return 0
    for r in rows:
        state = ("probe failed: " + r["probe_error"]) if r["probe_error"] else (
            f"installed {r['version'] or ''}".strip() if r["installed"] else "not installed here")
        out.write(f"{r['name']} ({r['source']}): {r['family']}\n  package: {r['package'] or 'part of SGLang'}; {state}\n")
        for backend, roles in r["serves"].items():
            out.write(f"  {backend} [{', '.join(roles)}]\n")
            for c in r["claims"]:
                if backend in c["backends"]:
                    out.write(f"    {c['role']}: {c['status']} on {', '.join(c['platforms'])} ({c['strength']}: {c['evidence']})\n")
    for e in errors:
        out.write(f"error: {e}\n")
    out.write("platforms no adapter mentions are unknown: neither refused nor preferred\n")
    return 0


SUBCOMMANDS = {"platforms": platforms, "kernels": kernels}
