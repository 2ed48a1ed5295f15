"""Origins in words, for the renderers (text and JSON) only: no decision reads these sentences."""
from __future__ import annotations

from .provenance import Origin

__all__ = ["origin_text"]

_RULE_VERBS = {"default": "default", "derived": "derived by", "no-match": "no match in", "adjustment": "adjusted by",
               "computed": "computed by"}


def origin_text(o: Origin) -> str:
    if o.kind == "flag":
        return f"set by the user ({o.where})"
    if o.kind == "not-typed":
        return "not typed by the user"
    if o.kind == "rule":
        if o.how == "fallback":
            return f"the option's declared default ({o.rule})"
        return f"{_RULE_VERBS.get(o.how, o.how)} {o.rule}"
    if o.kind == "platform":
        return o.where  # "sm90 (--platform h100)": the fact's source already says "platform"
    if o.kind in ("model", "draft"):
        if o.how == "absent":
            if o.field.startswith("--"):
                return f"no {o.field} given"
            if o.where == "--model-arch":
                return f"--model-arch alone gives no {o.field}"
            return f"{o.where or 'no draft config'} has no {o.field}" if o.field else (o.where or "no draft config")
        sep = ": " if o.kind == "draft" else " "
        return f"{o.where}{sep}{o.field}" if o.field else o.where
    if o.kind == "kernel":
        return f"kernel adapter {o.adapter}" if o.adapter else "kernel adapters"
    if o.kind == "before-adjustment":
        return "the value before this adjustment"
    return o.where  # installed, request: what was given, probed or assumed, already in words
