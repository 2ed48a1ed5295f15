"""Measure the limits of durable-rules 2.0.28 by bisection against the installed engine.

Run by hand from the repository root (it takes a few minutes; past some limits the engine
loops forever, and each such probe waits for its timeout)::

    .venv/bin/python -m tests.engine_limits

It prints every limit next to the constant the compiler checks (resolver/compiler.py
``ENGINE_MAX_*``, resolver/numbers.py ``ENGINE_MAX_STRING_BYTES``).  Every probe runs in a fresh
subprocess with a timeout, because past a limit the engine may return an error, loop forever
or crash the process.  The rulesets are what the compiler emits for the ``when:`` texts below
(``resolver.compiler._patterns``), and facts are encoded as the resolver encodes them
(``resolver.engine_values``), so what is measured is what the resolver would run.
``tests/unit/test_engine_limits.py`` runs the same probes at each limit and one past it.
"""
from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from resolver import compiler
from resolver.compiler import SINK, SINK_RULE, _patterns
from resolver.conditions import parse_condition
from resolver.engine_values import constant
from resolver.numbers import ENGINE_MAX_STRING_BYTES

# The child: a quiet host (no timer threads), the ruleset, each batch asserted; one JSON line out.
_CHILD = r"""
import json, sys, warnings
warnings.filterwarnings("ignore")
from durable import engine
spec = json.loads(sys.stdin.read())
fired = []
class Host(engine.Host):
    def _run(self):
        pass
    def get_action(self, name):
        return lambda c: fired.append(name)
host = Host()
try:
    host.set_rulesets({"rs": spec["ruleset"]})
except Exception as exc:
    print(json.dumps({"status": "error", "detail": f"create: {exc}"}))
    sys.exit(0)
asserted = 0
for batch in spec["batches"]:
    try:
        host.assert_facts("rs", [dict(f, sid="1") for f in batch])
    except Exception as exc:
        print(json.dumps({"status": "error", "detail": f"assert: {exc}"}))
        sys.exit(0)
    asserted += len(batch)
stored = len(host.get_facts("rs", "1")) if asserted else 0
print(json.dumps({"status": "ok", "fired": sorted(set(fired) - {"_sink"}), "lost": asserted - stored}))
"""


@dataclass(frozen=True)
class Outcome:
    status: str  # ok | error | hang | crash
    detail: str = ""
    fired: tuple[str, ...] = ()
    lost: int = 0  # facts asserted but not stored (the engine dropped them)


def run(ruleset: dict, batches: list[list[dict]], timeout: float = 20.0) -> Outcome:
    """Create ``ruleset`` and assert ``batches`` in a fresh process."""
    # ASCII JSON: a lone surrogate travels as an escape and reaches durable-rules as Python sees it
    payload = json.dumps({"ruleset": ruleset, "batches": batches})
    try:
        proc = subprocess.run([sys.executable, "-c", _CHILD], input=payload, capture_output=True, text=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return Outcome("hang", f"no answer in {timeout:g} s")
    if proc.returncode != 0:
        return Outcome("crash", f"exit status {proc.returncode}: {proc.stderr.strip()[-200:]}")
    out = json.loads(proc.stdout)
    return Outcome(out["status"], out.get("detail", ""), tuple(out.get("fired", ())), out.get("lost", 0))


def ruleset_of(whens: list[str]) -> dict:
    """The compiled ruleset of one rule per ``when:`` (keys ``r<i>#0``) plus the sink, unchecked."""
    rules = {}
    for i, when in enumerate(whens):
        (atoms,) = parse_condition(when).branches
        rules[f"r{i}#0"] = {"all": _patterns(atoms, None), "run": f"r{i}#0"}
    rules[SINK] = SINK_RULE
    return rules


def fact(name: str, value: Any) -> dict:
    """A fact as resolver/resolution.py builds it and the matcher sends it (with its bucket), without the
    resolver's checks (probes go past them),
    flagged for the sink (``s``) as the matcher flags a fact no rule lets through: a probe's facts
    walk the whole network, sink included, as the heaviest real fact does."""
    f: dict[str, Any] = {"id": f"v:{name}", "t": "val", "b": compiler.fact_bucket(name), "o": name, "s": 1}
    if value is not None:
        f["v"] = constant(value)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            f["n"] = value
    return f


@dataclass(frozen=True)
class Probe:
    """A family of packs of growing size ``n``; ``fires(n)`` is what must fire for the pack to work.

    ``limit`` is the largest ``n`` the resolver allows, ``capacity`` the largest the engine runs
    (the same, except where the engine only ran ``limit + 1`` by reading past a full list).
    """

    name: str
    build: Callable[[int], tuple[dict, list[list[dict]]]]
    fires: Callable[[int], set[str]]
    limit: int
    check: str  # how the resolver's constant gives ``limit``
    timeout: float = 20.0
    extra: int = 0  # capacity - limit
    hangs: bool = False  # past the capacity the engine loops forever

    @property
    def capacity(self) -> int:
        return self.limit + self.extra

    def works(self, n: int, timeout: float | None = None) -> tuple[bool, Outcome]:
        ruleset, batches = self.build(n)
        out = run(ruleset, batches, timeout or self.timeout)
        return out.status == "ok" and out.lost == 0 and set(out.fired) == self.fires(n), out


def _all(n: int) -> set[str]:
    return {f"r{i}#0" for i in range(n)}


def _one(n: int) -> set[str]:
    return {"r0#0"}


def _rules(n: int):
    # n - 1 rules and the sink; at most 500 constants per fact, to stay clear of the per-test limit
    return ruleset_of([f'a{i // 500} == "v{i % 500}"' for i in range(n - 1)]), [[fact("a0", "v0")]]


def _tests_after(n: int):
    return ruleset_of([f'a == "v{i}"' for i in range(n)]), [[fact("a", "v0")]]


def _patterns_at(n: int):
    return ruleset_of(["flag"] * n), [[fact("flag", True)]]


def _joined_patterns_at(n: int):
    # b<i> == a: every rule's pattern on `a` is the same, the join sits in each rule's own b<i>
    return ruleset_of([f"b{i} == a" for i in range(n)]), [[fact("a", 1)] + [fact(f"b{i}", 1) for i in range(n)]]


def _pending_joins(n: int):
    return ruleset_of(["tp_size == dcp_size"] * n), [[fact("tp_size", 2), fact("dcp_size", 2)]]


def _pending_in_lists(n: int):
    return ruleset_of(['x in ["a", "b"]'] * n), [[fact("x", "a")]]


def _pending_not_equal(n: int):
    return ruleset_of([f'x != "a{i}"' for i in range(n)]), [[fact("x", None)]]


def _alternatives(n: int):
    # the value asserted reaches none of the shared alternatives: only their number counts
    return ruleset_of(['x in ["a", "b"]'] * n), [[fact("x", "c")]]


def _expressions(n: int):
    # n entries: the pattern's $and (2), an `in` list of two values each (2), a join (1) to make n odd
    lists, join = divmod(n - 2, 2)
    when = " and ".join([f'x in ["a{i}", "b"]' for i in range(lists)] + ["x == y"] * join) or "x"
    return ruleset_of([when]), [[fact("x", "b" if lists or join else True), fact("y", "b")]]


def _facts_per_rule(n: int):
    return ruleset_of([" and ".join(f"f{i}" for i in range(n))]), [[fact(f"f{i}", True) for i in range(n)]]


def _fact_string(n: int):
    # n bytes of string body in the fact, type tag included
    return ruleset_of(["x != null"]), [[fact("x", "a" * (n - 2))]]


def _with_test(test: dict) -> dict:
    """One rule ``x != null`` whose test is replaced by ``test`` (past what a ``when:`` may say)."""
    rules = ruleset_of(["x != null"])
    rules["r0#0"]["all"][0]["p0"]["$and"][-1] = test
    return rules


def _constant_string(n: int):
    text = "a" * (n - 2)
    return _with_test({"v": constant(text)}), [[fact("x", text)]]


def _int_constant(n: int):
    # x < C with x = C - 1 holds exactly as long as the engine reads the constant C exactly
    c = 2**n - 1
    return _with_test({"$lt": {"n": c}}), [[fact("x", c - 1)]]


PROBES = [
    Probe("rules in one ruleset", _rules, lambda n: _one(n) if n > 1 else set(), compiler.ENGINE_MAX_RULES,
          "ENGINE_MAX_RULES"),
    Probe("distinct tests after one test", _tests_after, _one, compiler.ENGINE_MAX_TESTS_AFTER,
          "ENGINE_MAX_TESTS_AFTER", timeout=10, hangs=True),
    # a list of 256 slots read until an empty slot: a full list is read past its end
    Probe("rule patterns ending on one test", _patterns_at, _all, compiler.ENGINE_MAX_PATTERNS_AT,
          "ENGINE_MAX_PATTERNS_AT", extra=1),
    # here the slot after the list was free: the 257th pattern is written past its end, the 258th fails
    Probe("joined rule patterns ending on one test", _joined_patterns_at, _all, compiler.ENGINE_MAX_PATTERNS_AT,
          "ENGINE_MAX_PATTERNS_AT", extra=2),
    # the sink's `$or` keeps one test waiting under every fact: n rules leave n + 1 pending
    Probe("tests pending at once: joins (n rules + 1)", _pending_joins, _all, compiler.ENGINE_MAX_PENDING - 1,
          "ENGINE_MAX_PENDING - 1"),
    Probe("tests pending at once: `in` lists (n rules + 1)", _pending_in_lists, _all,
          compiler.ENGINE_MAX_PENDING - 1, "ENGINE_MAX_PENDING - 1"),
    Probe("tests pending at once: `!=` on null (n rules + 1)", _pending_not_equal, _all,
          compiler.ENGINE_MAX_PENDING - 1, "ENGINE_MAX_PENDING - 1"),
    Probe("alternatives after one test", _alternatives, lambda n: set(), compiler.ENGINE_MAX_ALTERNATIVES_AFTER,
          "ENGINE_MAX_ALTERNATIVES_AFTER", extra=1),
    Probe("expressions in one pattern", _expressions, _one, compiler.ENGINE_MAX_EXPRESSIONS,
          "ENGINE_MAX_EXPRESSIONS"),
    Probe("facts in one rule", _facts_per_rule, _one, compiler.ENGINE_MAX_PATTERNS, "ENGINE_MAX_PATTERNS"),
    Probe("string bytes in a fact", _fact_string, _one, ENGINE_MAX_STRING_BYTES, "ENGINE_MAX_STRING_BYTES", 60),
    Probe("string bytes in a rule constant", _constant_string, _one, ENGINE_MAX_STRING_BYTES,
          "ENGINE_MAX_STRING_BYTES", 60),
    Probe("bits of an integer constant read exactly", _int_constant, _one, 63, "(the resolver caps at 2**53)"),
]


def bisect(probe: Probe, lo: int, hi: int) -> int:
    """The largest n in [lo, hi) that works, given that lo works and hi does not."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if probe.works(mid)[0]:
            lo = mid
        else:
            hi = mid
    return lo


def measure(probe: Probe) -> tuple[int, Outcome]:
    """Find the limit from scratch: double until a pack fails, then bisect; return it and how n + 1 fails."""
    lo, hi = 1, 2
    while probe.works(hi)[0]:
        lo, hi = hi, hi * 2
    limit = bisect(probe, lo, hi)
    return limit, probe.works(limit + 1)[1]


def _constants() -> list[tuple[str, Outcome]]:
    """Constants and facts that are not limits but fail: what resolver/numbers.py refuses."""
    with_test = _with_test
    ok = [[fact("x", 1)]]
    exponent_fact = dict(fact("x", 1), n=1e-05)
    return [
        ("constant 1e-07", run(with_test({"$lt": {"n": 1e-07}}), ok)),
        ("constant 1e+16", run(with_test({"$lt": {"n": 1e16}}), ok)),
        ("constant Infinity", run(with_test({"$lt": {"n": float("inf")}}), ok)),
        ("constant NaN (x < NaN never holds; x = 1 should not fire)", run(with_test({"$lt": {"n": float("nan")}}), ok)),
        ("int constant 2**53 + 1 vs float fact 2**53 (x < C should fire)",
         run(with_test({"$lt": {"n": 2**53 + 1}}), [[dict(fact("x", 1), n=float(2**53))]])),
        ("fact 1e-05 followed by another fact", run(ruleset_of(["x != null", "y != null"]),
                                                   [[exponent_fact, fact("y", 1)]])),
        ("constant with a lone surrogate", run(with_test({"v": constant("\ud800")}), ok)),
        ("fact with a lone surrogate", run(ruleset_of(["x != null"]), [[fact("x", "\ud800")]])),
    ]


def main() -> int:
    drift = 0
    print(f"durable-rules limits (Python {sys.version.split()[0]}); every probe in a subprocess")
    for probe in PROBES:
        limit, past = measure(probe)
        same = limit == probe.capacity
        drift += not same
        print(f"{probe.name:50} runs {limit:>8}; one more: {past.status} {past.detail[:50]:50}"
              f" resolver allows {probe.check} = {probe.limit}{'' if same else '  <-- DIFFERS'}")
    print("\nconstants and facts the resolver refuses:")
    for what, out in _constants():
        print(f"{what:75} {out.status} {out.detail[:50]} fired={list(out.fired)} lost={out.lost}")
    return 1 if drift else 0


if __name__ == "__main__":
    sys.exit(main())
