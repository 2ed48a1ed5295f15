"""The exhaustive sweep of ``resolve lint``: real requests over platforms x model kinds x KV dtypes
x the explicit choices that matter, each resolved with its fixes, each fix resolved again.

What must hold: no request crashes; with nothing set, every platform and model kind resolves or
conflicts only for a kernel reason (no kernel for it there); every conflicted request offers a
fix (a fix resolves the whole request, so one is a way out), and every fix resolves.  Findings are
grouped by check and rule, with a count and one example.
"""
from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, field
from typing import Any

from ..errors import ResolverError
from .matrix import MODEL_KINDS as MATRIX_KINDS

__all__ = ["MODEL_KINDS", "SweepReport", "requests", "run_sweep"]

#: representative config.json of each model kind the rules tell apart: the matrix's, and an MHA
#: model with attention sinks (its defaults differ)
MODEL_KINDS: dict[str, dict[str, Any]] = {
    **{kind.key: kind.config for kind in MATRIX_KINDS},
    "mha-sinks": {"architectures": ["GptOssForCausalLM"], "num_attention_heads": 64, "num_key_value_heads": 8,
                  "head_dim": 64},
}
_DSA_KINDS = tuple(kind.key for kind in MATRIX_KINDS if "dsa_decode" in kind.tried_roles)
#: options turned on by themselves (with what they need)
_SWITCHES = ({"enable_hisparse": True, "disable_radix_cache": True},
             {"speculative_algorithm": "EAGLE", "speculative_num_steps": 3, "speculative_eagle_topk": 1})


@dataclass
class SweepReport:
    requests: int = 0
    resolved: int = 0
    conflicts: int = 0
    fixes_checked: int = 0
    seconds: float = 0.0
    jobs: int = 1
    #: (check, rule id or "", file, line) -> [count, message, example request]
    problems: dict[tuple, list] = field(default_factory=dict)

    def add(self, check: str, rule, message: str, request: dict) -> None:
        key = (check, rule.id if rule else "", rule.file if rule else "-", rule.line if rule else 0)
        entry = self.problems.setdefault(key, [0, message, request])
        entry[0] += 1

    def merge(self, other: SweepReport) -> None:
        for name in ("requests", "resolved", "conflicts", "fixes_checked"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for key, (count, message, example) in other.problems.items():
            entry = self.problems.setdefault(key, [0, message, example])
            entry[0] += count


def requests(pack) -> list[dict[str, Any]]:
    """Every request of the sweep, in a fixed order."""
    from ..adapters import registry
    from ..errors import InputError
    from ..platforms import PLATFORMS

    missing = sorted({"kv_cache_dtype", "attention_backend"} - set(pack.options))
    if missing:
        raise InputError(f"the sweep varies {', '.join(missing)}, which this rule pack does not declare "
                         "(use --no-sweep, or --requests FILE with resolve diff)")
    kv_values = [None] + [v for v in pack.options["kv_cache_dtype"].choices if v not in
                          pack.options["kv_cache_dtype"].unset_values]
    attention = sorted(v for v in registry().served("attention") if v in pack.options["attention_backend"].choices)
    choices: dict[str, list[dict[str, Any]]] = {
        kind: [{}] + [{"attention_backend": v} for v in attention]
        + [s for s in _SWITCHES if set(s) <= set(pack.options)]
        for kind in MODEL_KINDS}
    for kind in _DSA_KINDS:
        for option in ("dsa_prefill_backend", "dsa_decode_backend"):
            if option not in pack.options:
                continue
            served = registry().served(option.removesuffix("_backend"))  # dsa_prefill, dsa_decode: the roles
            choices[kind] += [{option: v} for v in sorted(served) if v in pack.options[option].choices]
    out = []
    for platform in PLATFORMS:
        for kind in MODEL_KINDS:
            for kv in kv_values:
                for choice in choices[kind]:
                    args = dict(choice, **({"kv_cache_dtype": kv} if kv else {}))
                    out.append({"platform": platform.name, "model_kind": kind, "args": args})
    return out


def _check_one(engine, req: dict, report: SweepReport, checked: dict | None = None) -> None:
    from ..api import resolve_request

    model = MODEL_KINDS[req["model_kind"]]
    report.requests += 1
    try:
        res = resolve_request(engine, platform=req["platform"], args=req["args"], model=model)
    except ResolverError as exc:
        report.add("sweep-crash", None, f"{type(exc).__name__}: {exc}", req)
        return
    except Exception:  # noqa: BLE001 - a crash is exactly what the sweep looks for
        report.add("sweep-crash", None, traceback.format_exc(limit=3).strip().splitlines()[-1], req)
        return
    if res.ok:
        report.resolved += 1
        return
    report.conflicts += 1
    if not req["args"]:
        for c in res.conflicts:
            if not any(f.source == "kernel" for f in c.facts):
                report.add("sweep-default-conflict", c.rule,
                           f"{req['model_kind']} on {req['platform']} with nothing set conflicts: {c.message}", req)
    if not any(c.fixes for c in res.conflicts):  # one way out is enough; a fix resolves the whole request
        first = res.conflicts[0]
        report.add("sweep-no-fix", first.rule, f"no fix for {', '.join(c.rule.id for c in res.conflicts)}", req)
    for c in res.conflicts:
        for fix in c.fixes:
            report.fixes_checked += 1
            fixed = {k: v for k, v in req["args"].items() if k not in fix.unset}
            fixed.update(fix.set)
            # many fixes lead to the same request ("omit X" from several starting points): resolve each once
            key = (req["platform"], req["model_kind"], tuple(sorted(fixed.items(), key=str)))
            if checked is None or key not in checked:
                try:
                    again = resolve_request(engine, platform=req["platform"], args=fixed, model=model, fixes=False)
                except Exception as exc:  # noqa: BLE001 - a fix that crashes the resolver is a finding, like above
                    report.add("sweep-crash", c.rule, f"the fix '{fix.description}' crashes: "
                                                      f"{type(exc).__name__}: {exc}", {**req, "args": fixed})
                    continue
                still = tuple(x.rule.id for x in again.conflicts)
                if checked is not None:
                    checked[key] = still
            else:
                still = checked[key]
            if still:
                report.add("sweep-bad-fix", c.rule, f"fix '{' '.join(fix.argv) or 'omit ' + ', '.join(fix.unset)}' "
                           f"of {c.rule.id} does not resolve (still: {', '.join(still)})", req)


def _setup(rules: str | None) -> tuple[Any, dict]:
    """A worker's context: the engine of ``rules`` and the fix outcomes it has already resolved."""
    from ..api import get_engine

    return get_engine(rules), {}


def _check(context: tuple[Any, dict], req: dict) -> SweepReport:
    """One request's findings (merged in the sweep's order: the same report for any ``jobs``)."""
    engine, checked = context
    report = SweepReport()
    _check_one(engine, req, report, checked)
    return report


def run_sweep(rules: str | None, pack, jobs: int | None = None, only=None, chunk: int = 24) -> SweepReport:
    """Run every request (or those ``only`` keeps) on ``jobs`` processes (0 or None: one per usable CPU,
    as far as the work pays for them: resolver/jobs.py), handed out ``chunk`` at a time; a bar on
    stderr when it is a terminal."""
    from ..jobs import Progress, plan_jobs, run_ordered

    todo = [r for r in requests(pack) if only is None or only(r)]
    jobs = plan_jobs(jobs, len(todo))
    start = time.perf_counter()
    report = SweepReport(jobs=jobs)
    # chunks of the grid's order keep a platform and model kind's requests together: their fixes
    # lead to the same requests, which each worker resolves once (the ``checked`` of its context)
    with Progress("lint sweep", len(todo)) as bar:
        for part in run_ordered(_setup, (rules,), _check, todo, jobs, bar, chunk):
            report.merge(part)
    report.seconds = time.perf_counter() - start
    return report
