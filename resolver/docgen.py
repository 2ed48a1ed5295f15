"""Generate docs/options.md from the option declarations: ``python -m resolver.docgen``.

A test fails when the checked-in file is stale.
"""
from __future__ import annotations

import sys

from .loader import load_rules
from .rules import RulePack

__all__ = ["options_markdown"]


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def options_markdown(pack: RulePack) -> str:
    lines = [
        "# Options",
        "",
        "Generated from `rules/options.yaml` by `python -m resolver.docgen > docs/options.md`; do not edit.",
        "Each option is a SGLang 0.5.23 `ServerArgs` field; the flag is SGLang's, and the JSON key",
        "(batch `args`, `values`, `derivations`) is the option name.",
        "",
        "| option (JSON key) | flag | type | values | default | meaning |",
        "|---|---|---|---|---|---|",
    ]
    for opt in sorted(pack.options.values(), key=lambda o: o.name):
        flag = f"`{opt.flag}`" + "".join(f"<br>`{a}` (deprecated)" for a in opt.aliases)
        values = ", ".join(f"`{c}`" for c in opt.choices) if opt.choices else (
            f"≥ {opt.minimum:g}" if opt.minimum is not None else "any")
        if opt.value_aliases:
            values += "<br>deprecated: " + ", ".join(f"`{a}` → `{b}`" for a, b in opt.value_aliases.items())
        if opt.unset_values:
            values += "<br>means unset: " + ", ".join(f"`{v}`" for v in opt.unset_values)
        default = "unset (null)" if opt.default is None else f"`{opt.default}`"
        lines.append(f"| `{opt.name}` | {flag} | {opt.type} | {values} | {default} | {_cell(opt.help)} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # pragma: no cover
    sys.stdout.write(options_markdown(load_rules(sys.argv[1] if len(sys.argv) > 1 else None)))
