"""Render a :class:`~resolver.api.Resolution` as text (people) or as a JSON-ready dict.

Both come from the same derivation data; the JSON keeps everything the text shows.
"""
from __future__ import annotations

from typing import Any

from .resolution import FactUse

__all__ = ["render_text", "to_json_dict"]


def _v(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _fact_line(f: FactUse, width: int) -> str:
    return f"{f.name:<{width}} = {_v(f.value):<18} {f.source}: {f.origin}"


def _facts_block(facts, indent: str) -> list[str]:
    if not facts:
        return []
    width = max(len(f.name) for f in facts)
    return [indent + _fact_line(f, width) for f in facts]


def _chain(res, facts, indent: str) -> list[str]:
    """The derived facts behind ``facts``, transitively, each shown once with what it read."""
    out, seen = [], set()
    todo = [f.name for f in facts if f.source == "derived"]
    while todo:
        name = todo.pop(0)
        if name in seen:
            continue
        seen.add(name)
        d = res.outcome.derivations[name]
        reads = ", ".join(f"{f.name}={_v(f.value)}" for f in d.facts) or "none of its branches matched"
        out.append(f"{indent}{name} = {_v(d.value)} by {d.rule}: {reads}")
        todo += [f.name for f in d.facts if f.source == "derived"]
    return out


def render_text(res, explain: bool = False, only: str | None = None) -> str:
    pack = res.engine.pack
    lines: list[str] = []
    req = res.request
    model = req.model.get("model.architecture", (None, ""))[0]
    lines.append(f"platform: {req.platform.name} ({req.platform_source})")
    lines.append(f"model:    {model or '(none given)'}")
    if res.conflicts:
        lines.append("")
        lines += _conflicts(res)
    else:
        lines.append("")
        lines.append("resolved configuration:")
        names = [only] if only else [n for n in sorted(pack.options) if res.derivations[n].source != "fallback"]
        width = max([len(n) for n in names] + [1])
        for name in names:
            d = res.derivations[name]
            lines.append(f"  {name:<{width}} = {_v(d.value):<16} ({_source_label(d)})")
        rest = len(pack.options) - len(names)
        if not only and rest:
            lines.append(f"  ({rest} other options keep their declared defaults; --format json lists every value)")
    if res.warnings:
        lines.append("")
        lines.append("warnings:")
        lines += [f"  - {w}" for w in res.warnings]
    if explain and not res.conflicts:
        lines.append("")
        lines.append("why:")
        names = [only] if only else [n for n in sorted(pack.options) if res.derivations[n].source != "fallback"]
        for name in names:
            lines += _derivation(res, name)
    return "\n".join(lines) + "\n"


def _source_label(d) -> str:
    if d.source == "user":
        return "set by you"
    if d.source == "fallback":
        return "option default"
    return f"{d.source}: {d.rule.id}"


def _derivation(res, name: str) -> list[str]:
    d = res.derivations[name]
    out = [f"  {name} = {_v(d.value)}"]
    if d.source == "user":
        out.append(f"    set by the user ({res.request.flags.get(name, res.engine.pack.options[name].flag)})")
    elif d.rule is not None:
        out.append(f"    decided by: {d.source} rule {d.rule}")
        out.append(f"      {d.doc}")
    if d.facts:
        out.append("    because:")
        out += _facts_block(d.facts, "      ")
        out += _chain(res, d.facts, "      where ")
    kernel = res.outcome.facts.get(f"kernel.{name}")
    if kernel is not None and d.value is not None:
        why = res.outcome.facts[f"kernel.{name}_why"].value
        out.append(f"    kernel on {res.request.platform.name}: {kernel.value} ({why})")
    for a in d.adjustments:
        kind = "normalised" if a.normalize else "adjusted"
        out.append(f"    {kind} {_v(a.old)} -> {_v(a.new)} by {a.rule}: {a.message}")
    if d.candidates:
        out.append("    other candidates:")
        for c in d.candidates:
            out.append(f"      - {_v(c.value)} from {c.rule} priority {c.priority}: {c.outcome} ({c.why})")
    return out


def _conflicts(res) -> list[str]:
    out = [f"{len(res.conflicts)} conflict{'s' if len(res.conflicts) != 1 else ''}:"]
    for i, c in enumerate(res.conflicts, 1):
        out.append("")
        out.append(f"[{i}] {c.message}")
        out.append(f"    rule: {c.rule}")
        if c.allowed is not None:
            out.append(f"    allowed {c.options[0] if c.options else ''}: {', '.join(map(_v, c.allowed)) or 'none on this platform'}")
        if c.evidence:
            out.append(f"    evidence: {c.evidence}")
        out.append("    caused by:")
        out += _facts_block(c.facts, "      ")
        out += _chain(res, c.facts, "      where ")
        if c.fixes:
            out.append("    to fix, any one of:")
            for j, f in enumerate(c.fixes, 1):
                out.append(f"      {j}. {f.description}")
                typed = " ".join(f.argv)
                removed = " ".join(res.engine.pack.options[n].flag for n in f.unset)
                how = "; ".join(x for x in (f"add {typed}" if typed else "", f"remove {removed}" if removed else "") if x)
                out.append(f"         {how}")
        else:
            out.append("    no single or double change to the options resolves this; see the rule's doc:")
            out.append(f"      {c.doc}")
    return out


def to_json_dict(res) -> dict[str, Any]:
    req = res.request
    model = {f.name.split(".", 1)[1]: f.value for n, f in res.outcome.facts.items() if n.startswith("model.")}
    model["origins"] = {f.name: f.origin for n, f in res.outcome.facts.items() if n.startswith("model.")}
    source = "detected" if req.platform_source.startswith("detected") else "flag"
    platform = {"name": req.platform.name, "source": source, "given_as": req.platform_source,
                "vendor": req.platform.vendor, "capability": req.platform.capability}
    return {
        "status": res.status,
        "platform": platform,
        "model": model,
        "values": dict(res.values),
        "derivations": {n: d.to_dict() for n, d in res.derivations.items()},
        "facts": {n: f.to_dict() for n, f in sorted(res.outcome.facts.items()) if n.startswith(("model.", "platform."))
                  or n in res.engine.pack.facts},
        "conflicts": [c.to_dict() for c in res.conflicts],
        "warnings": list(res.warnings),
    }

