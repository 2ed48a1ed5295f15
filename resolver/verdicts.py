"""The kernel verdict of every chosen backend, as data: for JSON (``kernels``), ``--explain`` and warnings.

A resolution decides, for each option with a ``kernel_role``, the facts ``kernel.<option>`` (the
status) and ``kernel.<option>_why`` (the evidence); the origin of the status fact names the adapter
behind it.  This module only reads them back:

- :func:`kernel_verdicts`: option -> ``{"backend", "role", "status", "why", "adapter"}``;
- :func:`kernel_warnings`: a warning (code ``kernel-unknown``) for each chosen backend whose verdict
  is unknown.  Unknown is neither refused nor preferred (docs/kernels.md); a request that sets
  ``require_known_kernels`` (``--require-known-kernels``) gets a conflict instead, from the rules
  ``conflict.kernel.*.unknown`` in rules/kernels.yaml, explained and fixed like every conflict.
"""
from __future__ import annotations

from typing import Any

from .notices import Notice
from .outcome import Derivation, Outcome, Request
from .provenance import kernel_fact, kernel_why_fact
from .rules import RulePack

__all__ = ["KERNEL_UNKNOWN", "kernel_verdicts", "kernel_warnings"]

#: the stable code of the warning about a chosen backend whose kernel verdict is unknown
KERNEL_UNKNOWN = "kernel-unknown"


def kernel_verdicts(pack: RulePack, outcome: Outcome) -> dict[str, dict[str, Any]]:
    """Every option with a kernel role that has a backend (or whose every default was skipped: status
    ``none``), in the rule pack's order, with the verdict on its final value.  ``status`` is one of
    supported, unsupported, refused (SGLang's own checks refuse it), unknown or none; ``adapter`` is
    None where no adapter speaks (unknown, none)."""
    facts = outcome.facts
    out: dict[str, dict[str, Any]] = {}
    for name, option in pack.options.items():
        status = facts.get(kernel_fact(name))
        if not option.kernel_role or status is None:
            continue
        backend = outcome.values.get(name)
        if backend is None and status.value != "none":
            continue  # not set: no backend of its own (prefill and decode then run --attention-backend's)
        if backend in (option.unset_values or ()):
            continue  # "auto" (the MoE runner): SGLang picks the kernel at run time, no backend of its own
        out[name] = {"backend": backend, "role": option.kernel_role, "status": status.value,
                     "why": facts[kernel_why_fact(name)].value, "adapter": status.origin.adapter}
    return out


def kernel_warnings(pack: RulePack, request: Request, derivations: dict[str, Derivation],
                    verdicts: dict[str, dict[str, Any]]) -> tuple[Notice, ...]:
    """A ``kernel-unknown`` warning for each chosen backend (``verdicts``: :func:`kernel_verdicts`) whose kernel
    no adapter vouches for here."""
    platform = request.platform.name
    return tuple(
        Notice(KERNEL_UNKNOWN,
               f"{_chosen(pack, request, derivations[name], v['backend'])}: whether this kernel runs on {platform} "
               f"is unknown ({v['why']}); it is neither refused nor preferred (--require-known-kernels refuses it)")
        for name, v in verdicts.items() if v["status"] == "unknown")


def _chosen(pack: RulePack, request: Request, d: Derivation, backend: Any) -> str:
    """A chosen backend as the warning names it: the flag as typed when the user typed it, else the option
    and the rule that picked it (a flag the user never typed must not read as typed)."""
    if d.source == "user":
        return f"{request.flags.get(d.name) or pack.options[d.name].flag} {backend}"
    by = f"{d.source} rule {d.rule.id}" if d.rule is not None and d.source != "fallback" else "its declared default"
    return f"{d.name} {backend} (picked by {by})"
