"""The limits the compiler checks are durable-rules' own, measured, not guessed.

For each limit (tests/engine_limits.py builds the packs, as the compiler emits them): the engine
runs the largest pack the compiler allows and fails on the next one past its capacity (so this
fails if a constant drifts from the installed engine), and the compiler's model of the engine's
network refuses exactly the packs past the limit.  Every engine probe runs in a subprocess with a
timeout: past some limits the engine loops forever or crashes the process.
"""
import io

import pytest

from resolver import compiler
from resolver.api import get_engine, resolve_request
from resolver.cli import main
from resolver.compiler import EngineNetwork, compile_pack, part_ruleset
from resolver.errors import InputError, RuleFileErrors
from resolver.loader import load_rules
from resolver.numbers import ENGINE_MAX_STRING_BYTES, MAX_STRING_BYTES, engine_string

from ..engine_limits import PROBES, Probe

# what the compiler's message says for each structural limit
_MARKERS = {
    "rules in one ruleset": "error 106",
    "distinct tests after one test": "loops forever",
    "rule patterns ending on one test": "error 108",
    "joined rule patterns ending on one test": "error 108",
    "tests pending at once: joins (n rules + 1)": "error 303",
    "tests pending at once: `in` lists (n rules + 1)": "error 303",
    "tests pending at once: `!=` on null (n rules + 1)": "error 303",
    "alternatives after one test": "error 107",
    "expressions in one pattern": "error 113",
    "facts in one rule": "error 304",
}


@pytest.mark.parametrize("probe", PROBES, ids=[p.name for p in PROBES])
def test_the_engine_runs_the_limit_and_fails_past_it(probe: Probe):
    works, out = probe.works(probe.limit)
    assert works, (probe.name, probe.limit, out)
    # where the engine loops forever, 5 s is plenty: the pack at the limit runs in well under 1 s
    works, out = probe.works(probe.capacity + 1, timeout=5 if probe.hangs else None)
    assert not works, (probe.name, probe.capacity + 1, out)


@pytest.mark.parametrize("probe", [p for p in PROBES if p.name in _MARKERS], ids=lambda p: p.name)
def test_the_compiler_refuses_exactly_past_the_limit(probe: Probe):
    marker = _MARKERS[probe.name]

    def refused(n: int) -> list[str]:
        return [message for _, message in EngineNetwork(probe.build(n)[0]).problems if marker in message]

    assert refused(probe.limit) == []
    assert refused(probe.limit + 1), probe.name


def test_strings_are_checked_against_the_engine_limit():
    tag = ENGINE_MAX_STRING_BYTES - MAX_STRING_BYTES  # a fact's string carries a type tag
    assert engine_string("a" * MAX_STRING_BYTES, "x")
    with pytest.raises(InputError, match="too long"):
        engine_string("a" * (MAX_STRING_BYTES + 1), "x")
    with pytest.raises(InputError, match="too long"):  # escapes count: the engine keeps the JSON text
        engine_string('"' * (MAX_STRING_BYTES // 2 + 1), "x")
    assert tag == 2


def test_limits_live_in_one_place():
    assert (compiler.ENGINE_MAX_RULES, compiler.ENGINE_MAX_TESTS_AFTER, compiler.ENGINE_MAX_ALTERNATIVES_AFTER,
            compiler.ENGINE_MAX_PATTERNS_AT, compiler.ENGINE_MAX_PENDING, compiler.ENGINE_MAX_EXPRESSIONS,
            compiler.ENGINE_MAX_PATTERNS) == (4096, 511, 127, 255, 64, 31, 16)


def _pack(rules_dir, body: str, options: str = "") -> str:
    return rules_dir({"a.yaml": f"schema: resolver/1\nrules:\n{options}{body}"})


def _option(name: str, kind: str) -> str:
    return f"""  - id: option.{name}
    kind: option
    doc: An option.
    name: {name}
    type: {kind}
    help: Option {name}.
"""


def _conflicts(whens: list[str]) -> str:
    return "".join(f"""  - id: conflict.c{i}
    kind: conflict
    doc: Conflict {i}.
    when: '{when}'
    message: m
""" for i, when in enumerate(whens))


def test_rules_sharing_one_condition_are_split_and_run(rules_dir):
    """The adversarial report: 257 rules `when: enable_hisparse` made the engine fail with error 108.
    The compiler now splits them over rulesets (each within the limits) and every one fires."""
    d = _pack(rules_dir, _conflicts(["enable_hisparse"] * 257), _option("enable_hisparse", "bool"))
    compiled = compile_pack(load_rules(d))
    assert len(compiled.parts) > 1
    assert not [p for part in compiled.parts for p in EngineNetwork(part_ruleset(compiled.ruleset, part)).problems]
    res = resolve_request(get_engine(d), platform="h100", args={"enable_hisparse": True}, fixes=False)
    assert len(res.conflicts) == 257


def test_a_branch_past_a_limit_no_split_can_lower_is_refused_with_file_and_line(rules_dir):
    """One branch reading 17 facts (error 304): refused with file:line, by the CLI (exit 2) and lint (exit 1)."""
    names = [f"f{i}" for i in range(17)]
    d = _pack(rules_dir, _conflicts([" and ".join(names)]), "".join(_option(n, "bool") for n in names))
    with pytest.raises(RuleFileErrors, match=r"a.yaml:\d+: rule conflict.c0: a branch reads 17 facts; .*error 304"):
        compile_pack(load_rules(d))
    out, err = io.StringIO(), io.StringIO()
    assert main(["--rules", d, "--platform", "h100"], out, err) == 2 and "error 304" in err.getvalue()
    assert main(["lint", "--rules", d, "--no-sweep"], out, err) == 1 and "error 304" in out.getvalue()


def test_rules_joining_the_same_facts_are_split_and_run(rules_dir):
    """The adversarial report: 64 rules `tp_size == dcp_size and ...` failed every request with error 303.
    Split over rulesets, every request runs and every rule fires."""
    options = _option("tp_size", "int") + _option("dcp_size", "int") + _option("flag", "bool")
    d = _pack(rules_dir, _conflicts(["tp_size == dcp_size and flag"] * 64), options)
    compiled = compile_pack(load_rules(d))
    assert len(compiled.parts) > 1
    res = resolve_request(get_engine(d), platform="h100", args={"tp_size": 2, "dcp_size": 2, "flag": True}, fixes=False)
    assert len(res.conflicts) == 64


@pytest.mark.parametrize("when, fragment", [
    ("x < 1e-7", "1e-07 is outside what the resolver handles"),
    ("x == 1e999", "expected a finite number"),
    ('x == "\\ud800"', "is not valid UTF-8"),
    ("x < 9007199254740993", "too large"),
])
def test_constants_the_engine_cannot_hold_are_refused_at_their_line(rules_dir, when, fragment):
    d = _pack(rules_dir, _conflicts([when]), _option("x", "str"))
    with pytest.raises(RuleFileErrors, match=r"a.yaml:\d+: .*" + fragment):
        load_rules(d)


def test_values_rules_set_are_checked_like_facts(rules_dir):
    body = """  - id: default.x
    kind: default
    doc: A default.
    set: {x: 1.0e-7}
    priority: 1
"""
    d = _pack(rules_dir, body, _option("x", "float"))
    with pytest.raises(RuleFileErrors, match=r"a.yaml:\d+: rule default.x: set x: 1e-07 is outside"):
        compile_pack(load_rules(d))
