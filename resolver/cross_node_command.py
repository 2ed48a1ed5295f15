"""``resolve cross-node``: the servers of one deployment, each resolved, then compared (resolver/crossnode.py
does the comparing); the result as text for an operator or as JSON."""
from __future__ import annotations

import json
import shlex

from .argv import launch_request, parse, subcommand_parser
from .core import Engine, get_engine
from .crossnode import CHECKS, CrossNodeResult, RoleSpec, check_roles, flag_of, role_from_request
from .errors import InputError, ResolverError
from .outcome import show_value
from .safe_io import UnreadableFile, parse_json, read_text

__all__ = ["cross_node", "render_text"]


# -- text ----------------------------------------------------------------------------------------------------------

def render_text(result: CrossNodeResult) -> str:
    """The result for an operator: the roles, then each mismatch with its values, why, and checked fixes."""
    count = len(result.roles)
    lines = [f"{'PD' if result.layout == 'pd' else 'multi-node'} layout, {count} role{'s' if count != 1 else ''}:"]
    width = max(len(n) for n in result.roles)
    for name, res in result.roles.items():
        mode = res.values.get("disaggregation_mode")
        lines.append(f"  {name:<{width}}  {res.request.platform.name} ({res.request.platform_source})"
                     f"{f', {mode}' if mode not in (None, 'null') else ''}: {res.status}")
    if result.conflicting:
        lines.append("")
        for name in result.conflicting:
            res = result.roles[name]
            lines.append(f"role {name} conflicts, so the roles were not compared:")
            for c in res.conflicts:
                lines.append(f"  - [{c.rule.id}] {c.message}")
                if c.fixes:
                    extra = len(c.fixes) - 1
                    lines.append(f"    fix: {' '.join(c.fixes[0].argv) or c.fixes[0].description}"
                                 + (f" ({extra} more: resolve this role alone for all)" if extra else ""))
        lines.append(f"result: {len(result.conflicting)} role(s) conflict")
        return "\n".join(lines) + "\n"
    for m in result.mismatches:
        lines += ["", f"mismatch [{m.check}]: {m.message}"]
        vw = max(len(v.role) for v in m.values)
        for v in m.values:
            lines.append(f"  {v.role:<{vw}}  {show_value(v.value)}  ({v.source}: {v.origin})")
        lines.append(f"  why: {CHECKS[m.check].evidence}")
        if m.fixes:
            lines.append("  fixes (each checked: the changed role resolves again and the mismatch is gone):")
        for i, f in enumerate(m.fixes, 1):
            argv = "; ".join(f"{c.role}: {' '.join(c.argv) or 'omit ' + ' '.join(flag_of(n) for n in c.unset)}"
                             for c in f.changes)
            lines.append(f"    {i}. {argv}")
            for role, moved in f.effects.items():
                shown = ", ".join(f"{n} {show_value(a)} -> {show_value(b)}" for n, (a, b) in list(moved.items())[:4])
                more = f" and {len(moved) - 4} more" if len(moved) > 4 else ""
                lines.append(f"       then {role} also changes: {shown}{more}")
            if f.also_breaks:
                lines.append(f"       but then disagrees on: {', '.join(f.also_breaks)}")
        for d in m.not_offered:
            lines.append(f"  not offered: {d['description']}: {d['reason']}")
        if not m.fixes:
            lines.append("  no single change to the roles mends it")
    for n in result.notices:
        lines += ["", f"notice [{n.code}]: {n.message}"]
    checked = ", ".join(result.checked)
    lines += ["", f"checked: {checked}"]
    lines.append("result: the roles agree" if result.ok else f"result: {len(result.mismatches)} mismatch"
                 f"{'es' if len(result.mismatches) != 1 else ''}")
    return "\n".join(lines) + "\n"


# -- the command -------------------------------------------------------------------------------------------------

_NOT_PER_ROLE = ("--batch", "--format", "--explain", "--color", "--rules", "--no-fixes", "--help", "-h")


def _roles_from_flags(engine: Engine, items: list[str]) -> list[RoleSpec]:
    specs = []
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name.strip():
            raise InputError(f"--role expects NAME='FLAGS', got {item!r}")
        try:
            tokens = shlex.split(text)
        except ValueError as exc:
            raise InputError(f"role '{name}': cannot split its flags: {exc}") from None
        bad = [t for t in tokens if t.split("=", 1)[0] in _NOT_PER_ROLE]
        if bad:
            raise InputError(f"role '{name}': {bad[0]} is an option of the whole command, not of a role")
        try:
            specs.append(RoleSpec(name.strip(), launch_request(engine, parse(tokens, engine.pack))))
        except ResolverError as exc:
            raise InputError(f"role '{name}': {exc}") from None
    return specs


def _roles_from_file(path: str) -> list[RoleSpec]:
    try:
        data = parse_json(read_text(path), path)
    except UnreadableFile as exc:
        raise InputError(f"cross-node: cannot read {path}: {exc.reason}") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"cross-node: {path} is not valid JSON: {exc.msg} at line {exc.lineno}") from None
    if not isinstance(data, dict) or not data:
        raise InputError(f"cross-node: {path} must hold a JSON object of role name -> request")
    return [role_from_request(name, req) for name, req in data.items()]


def cross_node(argv: list[str], out) -> int:
    """``resolve cross-node``: exit 0 when every role resolves and they agree, 1 on a conflict or a
    mismatch, 2 on bad input."""
    p = subcommand_parser(
        "cross-node", "Check that the servers of one deployment agree on what must match between them: a PD layout "
                      "(prefill and decode servers: KV-cache dtype, page size, model and KV layout, transfer backend, "
                      "TP/PP/CP pairing) or the nodes of one multi-node server. Each role is resolved first; each "
                      "mismatch comes with fixes on either side, checked by resolving again.")
    p.add_argument("file", nargs="?", metavar="FILE.json",
                   help="a JSON object of role name -> request in the batch format "
                        "({\"platform\": ..., \"args\": {...}})")
    p.add_argument("--role", action="append", default=[], metavar="NAME=FLAGS",
                   help="a role and its resolve flags, e.g. prefill='--platform b200 --model-path deepseek-v3 "
                        "--disaggregation-mode prefill' (repeat for each role)")
    p.add_argument("--rules", metavar="DIR", help="use the rule files of DIR instead of the shipped ones")
    p.add_argument("--no-fixes", action="store_true", help="report mismatches without searching for fixes")
    ns = p.parse_args(argv)
    if bool(ns.file) == bool(ns.role):
        raise InputError("cross-node: give either FILE.json or --role NAME=FLAGS (two or more), not "
                         + ("both (quote each role's flags: --role NAME='--platform b200 ...')" if ns.file
                            else "neither"))
    engine = get_engine(ns.rules)
    specs = _roles_from_file(ns.file) if ns.file else _roles_from_flags(engine, ns.role)
    result = check_roles(engine, specs, fixes=not ns.no_fixes)
    if ns.format == "json":
        out.write(json.dumps(result.to_dict(), indent=2, default=str) + "\n")
    else:
        writer = getattr(out, "write_safe", out.write)
        writer(render_text(result))
    return 0 if result.ok else 1
