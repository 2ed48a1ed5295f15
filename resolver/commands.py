"""Subcommands of ``resolve`` other than resolving: ``platforms`` (and, with the adapters, ``kernels``).

Each takes ``--format text|json``, exits 0 on success and 2 on bad input.
"""
from __future__ import annotations

import difflib
import json
from typing import Any, TextIO

from .argv import subcommand_parser
from .errors import InputError
from .platforms import ALIAS_GPU_MEMORY_GB, PLATFORMS

__all__ = ["SUBCOMMANDS"]


def platforms(argv: list[str], out: TextIO) -> int:
    p = subcommand_parser("platforms",
                          "List the target platforms, their aliases and capabilities, and what this machine has.")
    ns = p.parse_args(argv)
    from .detect import detect_platform

    detected: dict[str, str] | None = None
    problem = ""
    try:
        detection = detect_platform()
        detected = {"name": detection.platform.name, "how": detection.how}
    except InputError as exc:
        problem = str(exc)
    rows: list[dict[str, Any]] = [{"name": pl.name, "vendor": pl.vendor, "capability": f"{pl.major}.{pl.minor}",
             "aliases": list(pl.aliases), "description": pl.description, "gpu_memory_gb": pl.gpu_memory_gb,
             "alias_gpu_memory_gb": {a: ALIAS_GPU_MEMORY_GB[a] for a in pl.aliases if a in ALIAS_GPU_MEMORY_GB}}
            for pl in PLATFORMS]
    if ns.format == "json":
        out.write(json.dumps({"platforms": rows, "detected": detected, "detection_error": problem or None}, indent=2)
                  + "\n")
        return 0
    out.write(f"{'name':<8} {'vendor':<7} {'capability':<11} {'memory':<7} {'aliases (other memory)':<60} "
              "description\n")
    for r in rows:
        aliases = ", ".join(f"{a} ({r['alias_gpu_memory_gb'][a]:g} GB)" if a in r["alias_gpu_memory_gb"] else a
                            for a in r["aliases"])
        out.write(f"{r['name']:<8} {r['vendor']:<7} {r['capability']:<11} {r['gpu_memory_gb']:g} GB{'':<2} "
                  f"{aliases:<60} {r['description']}\n")
    out.write("\nthis machine: " + (detected["how"] if detected else problem) + "\n")
    return 0


def kernels(argv: list[str], out: TextIO) -> int:
    p = subcommand_parser("kernels", "List the kernel adapters: what each serves and can run, and whether its "
                                     "package is installed here.")
    p.add_argument("backend", nargs="?", help="show only the adapters serving this backend (e.g. trtllm_mla)")
    p.add_argument("--evidence", metavar="ID", help="print what an evidence id (e.g. S9, B7, GH1, R1, MK3, P5) stands "
                                                  "for: what was observed, where, a public link (docs/evidence.md)")
    ns = p.parse_args(argv)
    if ns.evidence is not None:
        return _evidence(ns.evidence, ns.format, out)
    from .adapters import registry

    reg = registry()
    adapters = [a for a in reg.adapters if ns.backend is None or ns.backend in a.serves()]
    if not adapters:
        known = sorted({b for a in reg.adapters for b in a.serves()})
        raise InputError(f"no kernel adapter serves '{ns.backend}'{_close(ns.backend, known)}. "
                         f"Adapters serve: {', '.join(known)}")
    probes = reg.probes()
    rows = [_adapter_row(a, probes[a.name]) for a in adapters]
    errors = [str(e) for e in reg.errors]
    # the probes shown here are this machine's: the same warnings as a --check-installed resolution
    warnings = [w.message for w in reg.checking_installed().warnings()]
    if ns.format == "json":
        out.write(json.dumps({"adapters": rows, "errors": errors, "warnings": warnings}, indent=2) + "\n")
        return 0
    for r in rows:
        state = ("probe failed: " + r["probe_error"]) if r["probe_error"] else (
            f"installed {r['version'] or ''}".strip() if r["installed"] else "not installed here")
        out.write(f"{r['name']} ({r['source']}): {r['family']}\n"
                  f"  package: {r['package'] or 'part of SGLang'}; {state}\n")
        if r["probe_detail"]:
            out.write(f"  probe: {r['probe_detail']}\n")
        for backend, roles in r["serves"].items():
            if ns.backend not in (None, backend):
                continue
            out.write(f"  {backend} [{', '.join(roles)}]\n" if roles
                      else f"  {backend} (no claims: unknown everywhere)\n")
            for c in r["claims"]:
                if backend in c["backends"]:
                    scope = f" with {c['scope']}" if c["scope"] else ""
                    status = "refused by SGLang's own checks" if c["status"] == "refused" else c["status"]
                    out.write(f"    {c['role']}: {status} on {', '.join(c['platforms'])}{scope} "
                              f"({c['strength']}: {c['evidence']})\n")
            for lim in r["limits"]:
                if backend in lim["backends"]:
                    note = f"; {lim['note']}" if lim["note"] else ""
                    out.write(f"    {lim['kind'].replace('_', ' ')}: {', '.join(map(str, lim['values']))} "
                              f"({lim['evidence']}{note})\n")
    out.writelines(f"warning: {w}\n" for w in warnings)
    out.write("platforms no adapter mentions are unknown: neither refused nor preferred\n"
              "evidence ids (S9, B7, GH1, R1, MK3, ...): 'resolve kernels --evidence ID' prints one "
              "(docs/evidence.md)\n")
    return 0


def _evidence(entry_id: str, fmt: str, out: TextIO) -> int:
    from dataclasses import asdict

    from .evidence import catalogue, kinds, lookup, render_entry

    entry = lookup(entry_id)
    if entry is None:
        known = list(catalogue())
        prefixes = ", ".join(f"{k}1.." for k in kinds())
        raise InputError(f"no evidence id '{entry_id}'{_close(entry_id.strip().upper(), known)}. Evidence ids are "
                         f"{prefixes} ({len(known)} in all, listed in docs/evidence.md): {', '.join(known)}")
    if fmt == "json":
        out.write(json.dumps({**asdict(entry), "kind_title": kinds()[entry.kind]}, indent=2) + "\n")
    else:
        out.write(render_entry(entry))
    return 0


def models(argv: list[str], out: TextIO) -> int:
    p = subcommand_parser("models", "List the models --model-path knows without a download: the shipped catalogue (the "
                          "config.json fields the rules read, each entry citing its source). A local directory or "
                          "a Hugging Face id in the local cache works too.")
    ns = p.parse_args(argv)
    from .model_source import catalogue, hub_cache_dir

    rows = [{"id": e.id, "architecture": e.architecture, "aliases": list(e.aliases), "source": e.source}
            for e in catalogue()]
    if ns.format == "json":
        out.write(json.dumps({"models": rows, "hugging_face_cache": hub_cache_dir()}, indent=2) + "\n")
        return 0
    width = max(len(r["id"]) for r in rows)
    for r in rows:
        aliases = f"  (also: {', '.join(r['aliases'])})" if r["aliases"] else ""
        out.write(f"{r['id']:<{width}}  {r['architecture']}{aliases}\n")
    out.write(f"\n{len(rows)} catalogued models; sources: 'resolve models --format json'. Also accepted: a local "
              f"directory holding config.json, or a Hugging Face id found in {hub_cache_dir()}.\n")
    return 0


def _close(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _adapter_row(a, probe) -> dict:
    from .adapters.base import AdapterError
    from .evidence import cited_ids

    failed = isinstance(probe, AdapterError)
    return {
        "name": a.name, "family": a.family, "package": a.package, "source": a.source,
        "serves": {b: list(r) for b, r in a.serves().items()},
        "installed": None if failed else probe.installed,
        "version": None if failed else probe.version,
        "probe_detail": None if failed else probe.detail,
        "compiled_archs": None if failed or probe.archs is None else [f"sm_{sm}" for sm in probe.archs],
        "compiled_backends": list(a.compiled_backends),
        "probe_error": str(probe) if failed else None,
        "claims": [{"role": c.role, "backends": list(c.backends), "status": c.status, "platforms": list(c.platforms),
                    "kv_dtypes": list(c.kv_dtypes) if c.kv_dtypes is not None else None, "mla": c.mla,
                    "scope": c.scope(), "evidence": c.evidence, "evidence_ids": cited_ids(c.evidence),
                    "strength": c.strength} for c in a.claims],
        "limits": [{"backends": list(lim.backends), "kind": lim.kind, "values": list(lim.values),
                    "evidence": lim.evidence, "evidence_ids": cited_ids(lim.evidence), "note": lim.note}
                   for lim in a.limits],
    }


def _lazy(module: str, name: str):
    def run(argv: list[str], out: TextIO) -> int:
        import importlib

        return getattr(importlib.import_module(f"{__package__}.{module}"), name)(argv, out)

    return run


SUBCOMMANDS = {"platforms": platforms, "kernels": kernels, "models": models, "lint": _lazy("tools.lint", "lint"),
               "matrix": _lazy("tools.matrix", "matrix"), "diff": _lazy("tools.diff", "diff"),
               "cross-node": _lazy("cross_node_command", "cross_node"),
               "checks": _lazy("tools.checks_report", "checks")}
