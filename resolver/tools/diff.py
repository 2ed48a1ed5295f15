"""``resolve diff OLD NEW``: which launch requests change outcome between two rule packs, and why.

Each request is resolved under both packs (without fix search: only the outcome matters here).
A change is one of: now refused, now resolves, refused by other rules, or values that differ.
Changes with the same cause (the same rules, the same option moving the same way) form a group,
described by what all its requests share ("with --enable-hisparse on sm90: ...").  Requests
come from ``--requests FILE`` (batch format) or, by default, the lint sweep's grid.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError, ResolverError
from ..explain import show_value as _v
from ..options import to_argv
from ..safe_io import UnreadableFile, parse_json, read_text
from .batch import REQUEST_KEYS as _KEYS

__all__ = ["Change", "diff", "diff_outcomes"]


@dataclass
class Change:
    """One kind of change, and the requests that show it."""

    kind: str  # now-refused | now-resolves | refused-differently | value-changed | error-changed
    what: str  # the change in words
    rules: tuple[str, ...]  # the rules (id, file:line) that explain it, in the new pack (or the old one)
    requests: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "change": self.what, "rules": list(self.rules), "shared": _shared(self.requests),
                "count": len(self.requests), "requests": self.requests}


def _outcome(engine, req: dict) -> dict[str, Any]:
    from ..api import resolve_request

    try:
        res = resolve_request(engine, platform=req["platform"], args=req.get("args") or {}, model=req.get("model"),
                              model_arch=req.get("model_arch"), installed=req.get("installed"),
                              strict=bool(req.get("strict", False)), fixes=False)
    except ResolverError as exc:
        return {"status": "error", "error": str(exc)}
    return {"status": res.status, "values": res.values,
            "conflicts": {c.rule.id: str(c.rule) for c in res.conflicts},
            "deciders": {n: str(d.rule) if d.rule else d.source for n, d in res.derivations.items()}}


def _changes(old: dict, new: dict) -> list[tuple[str, str, tuple[str, ...]]]:
    """(kind, what, rules) for each way ``new`` differs from ``old``."""
    if old["status"] == "error" or new["status"] == "error":
        if old.get("error") == new.get("error") and old["status"] == new["status"]:
            return []
        return [("error-changed", f"{old['status']} -> {new['status']}: {new.get('error') or old.get('error')}", ())]
    if old["status"] == "resolved" and new["status"] == "conflict":
        return [("now-refused", "now refused", tuple(sorted(new["conflicts"].values())))]
    if old["status"] == "conflict" and new["status"] == "resolved":
        return [("now-resolves", "now resolves", tuple(sorted(old["conflicts"].values())))]
    if old["status"] == "conflict":
        if set(old["conflicts"]) == set(new["conflicts"]):
            return []
        gone = sorted(set(old["conflicts"]) - set(new["conflicts"]))
        added = sorted(set(new["conflicts"]) - set(old["conflicts"]))
        what = "refused by other rules" + (f": no longer {', '.join(gone)}" if gone else "") + \
            (f"; now also {', '.join(added)}" if added else "")
        return [("refused-differently", what, tuple(new["conflicts"].get(r) or old["conflicts"][r]
                                                      for r in added + gone))]
    out: list[tuple[str, str, tuple[str, ...]]] = []
    for name in sorted(set(old["values"]) | set(new["values"])):
        a, b = old["values"].get(name), new["values"].get(name)
        if a != b:
            rule = new["deciders"].get(name) or old["deciders"].get(name, "")
            out.append(("value-changed", f"{name}: {_v(a)} -> {_v(b)}", (rule,)))
    return out


def _setup(old_rules: str, new_rules: str) -> tuple[Any, Any]:
    """A worker's context: the engines of both packs."""
    from ..api import get_engine

    return get_engine(old_rules), get_engine(new_rules)


def _both(engines: tuple[Any, Any], req: dict) -> tuple[dict, dict]:
    return _outcome(engines[0], req), _outcome(engines[1], req)


def diff_outcomes(old_engine, new_engine, requests: list[dict],
                  jobs: int = 1) -> tuple[list[Change], list[tuple[dict, str]]]:
    """The changes, grouped; and the requests invalid under both packs (with the error), which
    compare equal but check nothing.  ``jobs`` > 1 resolves on that many processes (each loads the
    two packs from their directories); the outcomes are grouped in the requests' order all the same."""
    from ..jobs import Progress, run_ordered

    groups: dict[tuple, Change] = {}
    invalid = []
    dirs = (old_engine.pack.directory, new_engine.pack.directory)
    with Progress("diff", len(requests)) as bar:
        if jobs > 1:
            outcomes = run_ordered(_setup, dirs, _both, requests, jobs, bar)
        else:  # the engines given, which may not come from a directory
            outcomes = run_ordered(lambda: (old_engine, new_engine), (), _both, requests, 1, bar)
        for req, (old, new) in zip(requests, outcomes, strict=True):
            if old["status"] == new["status"] == "error" and old["error"] == new["error"]:
                invalid.append((req, old["error"]))
            for kind, what, rules in _changes(old, new):
                groups.setdefault((kind, what, rules), Change(kind, what, rules)).requests.append(req)
    order = ("now-refused", "now-resolves", "refused-differently", "value-changed", "error-changed")
    return sorted(groups.values(), key=lambda c: (order.index(c.kind), -len(c.requests), c.what)), invalid


def _shared(requests: list[dict]) -> dict[str, Any]:
    """What every request of a group has in common: its platforms, models and the flags all set alike."""
    common = dict(requests[0].get("args") or {})
    for req in requests[1:]:
        args = req.get("args") or {}
        common = {k: v for k, v in common.items() if k in args and args[k] == v}
    return {"platforms": sorted({r["platform"] for r in requests}),
            "models": sorted({_model_name(r) for r in requests}), "args": common}


def _model_name(req: dict) -> str:
    if req.get("model_kind"):
        return req["model_kind"]
    model = req.get("model") or {}
    return req.get("model_arch") or ", ".join(model.get("architectures", [])) or "(no model)"


def _read_requests(path: str) -> list[dict]:
    try:
        lines = read_text(path).splitlines()  # a regular file of bounded size, never a FIFO or device
    except UnreadableFile as exc:
        raise InputError(f"--requests: {exc}") from None
    out = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            req = parse_json(line, f"--requests {path}:{number}")  # depth and integer length capped
        except json.JSONDecodeError as exc:
            raise InputError(f"--requests {path}:{number}: not valid JSON: {exc.msg}") from None
        if not isinstance(req, dict) or "platform" not in req:
            raise InputError(f"--requests {path}:{number}: a request is a JSON object with a 'platform'")
        unknown = sorted(set(req) - _KEYS)
        if unknown:
            raise InputError(f"--requests {path}:{number}: unknown request key(s) {unknown}; known: {sorted(_KEYS)}")
        req.setdefault("id", f"line {number}")
        out.append(req)
    return out


def _sweep_requests(pack) -> list[dict]:
    from .sweep import MODEL_KINDS, requests

    return [{"id": f"{r['platform']}/{r['model_kind']}/" + ",".join(f"{k}={_v(v)}" for k, v in r["args"].items()),
             "platform": r["platform"], "model": MODEL_KINDS[r["model_kind"]], "model_kind": r["model_kind"],
             "args": r["args"]} for r in requests(pack)]


def _describe(change: Change, pack) -> str:
    shared = _shared(change.requests)
    flags = " ".join(to_argv(pack, {k: v for k, v in shared["args"].items() if k in pack.options}))
    where = f"on {', '.join(shared['platforms'])}" + (f", {', '.join(shared['models'])}" if len(shared["models"]) <= 3
                                                       else f", {len(shared['models'])} models")
    return f"{'with ' + flags + ' ' if flags else ''}{where}: {change.what}"


def diff(argv: list[str], out) -> int:
    """``resolve diff``: exit 0 when no request changes, 1 when some do, 2 on bad input."""
    from ..api import get_engine
    from ..argv import subcommand_parser
    from ..jobs import add_jobs_argument, plan_jobs

    p = subcommand_parser("diff", "Compare two rule packs: which launch requests change outcome, grouped by cause.")
    p.add_argument("old", metavar="OLD", help="the rule directory before")
    p.add_argument("new", metavar="NEW", help="the rule directory after")
    p.add_argument("--requests", metavar="FILE", help="launch requests to check, one JSON object per line (batch "
                                                      "format); default: the lint sweep's grid")
    p.add_argument("--examples", type=int, default=3, metavar="N", help="request ids shown per group (text)")
    add_jobs_argument(p, 0, "the requests")
    ns = p.parse_args(argv)
    for d in (ns.old, ns.new):
        if not os.path.isdir(d):
            raise InputError(f"{d} is not a rule directory")
    old, new = get_engine(ns.old), get_engine(ns.new)
    requests = _read_requests(ns.requests) if ns.requests else _sweep_requests(new.pack)
    changes, invalid = diff_outcomes(old, new, requests, plan_jobs(ns.jobs, len(requests)))
    changed = len({id(r) for c in changes for r in c.requests})
    if ns.format == "json":
        out.write(json.dumps({"requests": len(requests), "changed": changed,
                              "changes": [c.to_dict() for c in changes],
                              "invalid": [{"request": r, "error": e} for r, e in invalid]}, indent=2) + "\n")
    else:
        _write_text(changes, len(requests), changed, ns.examples, new.pack, out)
        for req, error in invalid[:ns.examples]:
            out.write(f"invalid under both packs: {req.get('id')}: {error}\n")
        if len(invalid) > ns.examples:
            out.write(f"... {len(invalid)} invalid requests in all\n")
    # an invalid request checks nothing: a gate must not pass on it
    return 2 if invalid else 1 if changes else 0


def _write_text(changes: list[Change], total: int, changed: int, examples: int, pack, out) -> None:
    out.write(f"{changed} of {total} requests change outcome" + (":\n" if changes else ".\n"))
    for c in changes:
        out.write(f"\n{len(c.requests)} x {_describe(c, pack)}\n")
        for rule in c.rules:
            out.write(f"    rule: {rule}\n")
        ids = [str(r.get("id")) for r in c.requests[:examples]]
        out.write(f"    e.g. {', '.join(ids)}{' ...' if len(c.requests) > examples else ''}\n")
