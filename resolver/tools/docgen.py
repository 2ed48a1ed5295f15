"""Generate docs from declarations: ``python -m resolver.tools.docgen > docs/options.md`` (the options)
and ``python -m resolver.tools.docgen kernels > docs/kernel-matrix.md`` (the kernel adapters' claims).

A test fails when a checked-in file is stale.
"""
from __future__ import annotations

import sys

from ..catalogue import catalogue
from ..loader import load_rules
from ..rules import RulePack

__all__ = ["options_markdown", "kernels_markdown"]

_MARK = {"supported": "Y", "unsupported": "N", "refused": "Nr", "delegated": "D"}


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def options_markdown(pack: RulePack) -> str:
    lines = [
        "# Options",
        "",
        "Generated from the option declarations of `rules/*.yaml` by `python -m resolver.tools.docgen > "
        "docs/options.md`; do not edit.",
        "Each option is a SGLang 0.5.23 `ServerArgs` field; the flag is SGLang's, and the JSON key",
        "(batch `args`, `values`, `derivations`) is the option name. These are the options the rules",
        "read. Every other SGLang 0.5.23 flag is accepted too, typed as SGLang types it (the table",
        "`resolver/data/sglang_flags.json`, made from SGLang's own parser by `tools/sync_flags.py`),",
        "carried through unchanged and listed as not checked (`unchecked` in JSON).",
        "",
        "| option (JSON key) | flag | type | values | default | meaning |",
        "|---|---|---|---|---|---|",
    ]
    cat = catalogue()
    for opt in sorted((o for o in pack.options.values() if not o.env), key=lambda o: o.name):
        flag = "none (derived)" if opt.no_cli else f"`{opt.flag}`" + "".join(
            f"<br>`{a}` (deprecated)" for a in opt.aliases)
        action = cat.by_dest.get(opt.name)
        if action is not None and action.kind == "bool_optional":  # SGLang's --no-x twin sets false
            flag += "".join(f"<br>`{f}`" for f in action.flags if f.startswith("--no-"))
        values = ", ".join(f"`{c}`" for c in opt.choices) if opt.choices else (
            f"≥ {opt.minimum:g}" if opt.minimum is not None else "any")
        if opt.value_aliases:
            values += "<br>deprecated: " + ", ".join(f"`{a}` → `{b}`" for a, b in opt.value_aliases.items())
        if opt.unset_values:
            values += "<br>means unset: " + ", ".join(f"`{v}`" for v in opt.unset_values)
        default = "unset (null)" if opt.default is None else f"`{opt.default}`"
        lines.append(f"| `{opt.name}` | {flag} | {opt.type} | {values} | {default} | {_cell(opt.help)} |")
    lines += [
        "",
        "## Environment variables",
        "",
        "The environment variables SGLang 0.5.23's resolution sets (`kind: env` in `rules/env.yaml`). A",
        "request gives the ones already set in its environment (`env` in a batch line or the API,",
        "`--env NAME=VALUE`); results list them under `env`, and `--format env` prints them for a shell.",
        "",
        "| variable | default | meaning |",
        "|---|---|---|",
    ]
    for opt in sorted((o for o in pack.options.values() if o.env), key=lambda o: o.name):
        default = "not set" if opt.default is None else f"`{opt.default}`"
        lines.append(f"| `{opt.name}` | {default} | {_cell(opt.help)} |")
    return "\n".join(lines) + "\n"


def kernels_markdown(adapters) -> str:
    """One row per (backend, role, narrowing), one column per platform: what the built-in adapters claim."""
    from ..platforms import ALL_PLATFORMS

    rows: dict[tuple[str, str, str], dict[str, str]] = {}
    sources: dict[tuple[str, str, str], set[str]] = {}
    for adapter in adapters:
        for c in adapter.claims:
            for backend in c.backends:
                key = (backend, c.role, c.scope())
                for platform in c.platforms:
                    rows.setdefault(key, {})[platform] = _MARK[c.status] + ("" if c.strength == "strong" else "~")
                sources.setdefault(key, set()).add(adapter.name)
    names = [p.name for p in ALL_PLATFORMS]
    lines = [
        "# Kernel matrix",
        "",
        "Generated from the built-in adapters (`resolver/adapters/`) by",
        "`python -m resolver.tools.docgen kernels > docs/kernel-matrix.md`; do not edit. `resolve kernels` shows",
        "the evidence of each cell. Y: runs; N: cannot run (the resolver refuses it, or skips it as a default);",
        "Nr: SGLang 0.5.23's own checks refuse or rewrite it (a rule in `rules/` does the same); D: runs no kernel",
        "of its own but those of other options, whose rows decide; `~`: medium evidence; blank: unknown, neither",
        "refused nor preferred. A narrowed row (KV dtype, MLA, the MoE weights) overrides the plain row of the same "
        "backend and",
        "role; prefill, decode and draft roles read the attention rows unless they have their own.",
        "",
        "| backend | role | only for | " + " | ".join(names) + " | adapter |",
        "|---|---|---|" + "---|" * len(names) + "---|",
    ]
    for (backend, role, scope), cells in sorted(rows.items()):
        marks = " | ".join(cells.get(n, "") for n in names)
        cited = ", ".join(sorted(sources[(backend, role, scope)]))
        lines.append(f"| `{backend}` | {role} | {scope} | {marks} | {cited} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # pragma: no cover
    if sys.argv[1:2] == ["kernels"]:
        from ..adapters.registry import Registry, _builtin_adapters

        sys.stdout.write(kernels_markdown(Registry(_builtin_adapters(), []).adapters))
    else:
        sys.stdout.write(options_markdown(load_rules(sys.argv[1] if len(sys.argv) > 1 else None)))
