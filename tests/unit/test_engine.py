"""The engine: durable-rules does the matching, safely, and agrees with the reference matcher."""
import copy
import json
import os
import threading
from dataclasses import replace

import pytest

import resolver.engine as engine_module
from resolver.api import get_engine, resolve_request
from resolver.compiler import EngineNetwork, compile_pack, part_ruleset
from resolver.engine import DurableMatcher, ReferenceMatcher
from resolver.engine_values import constant, fact_fields, fact_value
from resolver.errors import EngineError, InputError, RuleFileErrors
from resolver.loader import load_rules
from resolver.model import model_facts
from resolver.platforms import find_platform
from resolver.resolution import Request, run

from ..conftest import ROOT, SEED_ARGS


def _request(args, platform="h100", arch="DeepseekV32ForCausalLM"):
    return Request(find_platform(platform), "--platform " + platform, model_facts(arch=arch), args)


def test_durable_rules_does_the_matching(engine, monkeypatch):
    """With the reference matcher disabled, results still come, from durable-rules' native engine."""
    monkeypatch.setattr(ReferenceMatcher, "session", lambda self: (_ for _ in ()).throw(AssertionError("not used")))
    calls = []
    real = engine_module._fire
    monkeypatch.setattr(engine_module, "_fire",
                        lambda native, handle, facts: calls.append(len(facts)) or real(native, handle, facts))
    res = resolve_request(engine, platform="h100", args=SEED_ARGS, model_arch="DeepseekV32ForCausalLM", fixes=False)
    assert calls, "durable-rules was not called"
    assert {c.rule.id for c in res.conflicts} == {"conflict.hisparse.decode.cuda-fp8",
                                                  "conflict.dsa.tilelang-fp8.hisparse"}


def test_the_compiled_json_decides(engine):
    """Changing one constant in the emitted durable JSON changes the result: the network matches."""
    compiled = engine.compiled
    tampered = copy.deepcopy(compiled.ruleset)
    key = "default.dsa.backends.fp8#0"
    text = json.dumps(tampered[key])
    assert '"s:fp8_e4m3"' in text  # constants are type-tagged strings (resolver/engine_values.py)
    tampered[key] = json.loads(text.replace('"s:fp8_e4m3"', '"s:bfloat16"'))

    changed = replace(compiled)
    changed.__dict__["ruleset"] = tampered  # the emitted JSON, as the cached property holds it
    matcher = DurableMatcher(changed)
    req = _request({"kv_cache_dtype": "bfloat16"})
    assert run(compiled, engine.durable, req).values["dsa_decode_backend"] == "fa3"
    assert run(compiled, matcher, req).values["dsa_decode_backend"] == "flashmla_kv"


def test_no_background_threads(engine):
    before = threading.active_count()
    DurableMatcher(engine.compiled)
    run(engine.compiled, engine.durable, _request({}))
    assert threading.active_count() == before


def test_sessions_are_deleted(engine):
    for _ in range(1100):  # more than the 1024 live sids one ruleset can hold (P2)
        run(engine.compiled, engine.durable, _request({}))


def _stored(matcher) -> list[int]:
    return [len(json.loads(matcher._native.get_facts(matcher._handles[i], matcher._sid)))
            for i in sorted(matcher._opened)]


def test_one_sid_serves_every_resolution_and_is_left_holding_only_its_sink_fact(engine):
    matcher = DurableMatcher(engine.compiled)
    requests = [_request(SEED_ARGS), _request({}, "b200", "DeepseekV3ForCausalLM"),
                _request({"page_size": 64}, "mi300x"), _request(SEED_ARGS)]
    outcomes = []
    for req in requests:
        outcomes.append(run(engine.compiled, matcher, req))
        assert matcher._sid == "1" and _stored(matcher) == [1] * len(matcher._opened)
    # what one resolution asserted leaves no trace in the next: the same request gives the same result,
    # and each agrees with the reference matcher
    assert outcomes[0] == outcomes[3]
    assert outcomes == [run(engine.compiled, engine.reference, req) for req in requests]


def test_a_failed_resolution_discards_the_sid(engine, monkeypatch):
    matcher = DurableMatcher(engine.compiled)
    good = run(engine.compiled, matcher, _request(SEED_ARGS))
    with monkeypatch.context() as m:
        m.setattr(engine_module, "_facts_of", lambda matched: 1 / 0)
        with pytest.raises(EngineError):
            run(engine.compiled, matcher, _request(SEED_ARGS))
    assert matcher._sid == "2" and not matcher._opened  # deleted from every part; a fresh sid next
    assert run(engine.compiled, matcher, _request(SEED_ARGS)) == good


def test_a_retraction_that_leaves_facts_behind_discards_the_sid(engine, monkeypatch):
    matcher = DurableMatcher(engine.compiled)
    monkeypatch.setattr(matcher, "_native", _NoRetraction(matcher._native))
    first = run(engine.compiled, matcher, _request(SEED_ARGS))
    assert matcher._sid == "2" and not matcher._opened
    assert run(engine.compiled, matcher, _request(SEED_ARGS)) == first


class _NoRetraction:
    """durable-rules' native module, except that retracting does nothing."""

    def __init__(self, native):
        self._native = native

    def __getattr__(self, name):
        return getattr(self._native, name)

    def retract_facts(self, handle, facts):
        return (0, 0)


def test_a_match_that_cannot_be_read_names_its_rule(engine, monkeypatch):
    matcher = DurableMatcher(engine.compiled)
    monkeypatch.setattr(engine_module, "_facts_of", lambda m: 1 / 0)
    with pytest.raises(EngineError, match=r"rule .*\(rules/.*\.yaml:\d+\) could not be read: ZeroDivisionError"):
        run(engine.compiled, matcher, _request({}))


def test_durable_and_reference_agree_on_the_seed(engine):
    req = _request(SEED_ARGS)
    a, b = run(engine.compiled, engine.durable, req), run(engine.compiled, engine.reference, req)
    assert a == b


@pytest.mark.parametrize("platform, arch, args", [
    ("h100", "DeepseekV32ForCausalLM", SEED_ARGS),  # two conflicts, fixes checked by re-resolving
    ("b200", "DeepseekV3ForCausalLM", {"enable_two_batch_overlap": True}),
    ("mi300x", "LlamaForCausalLM", {"kv_cache_dtype": "fp8_e4m3", "tp_size": 8}),
    ("a100", "Qwen3MoeForCausalLM", {"moe_runner_backend": "flashinfer_trtllm"}),
])
def test_a_one_shot_engine_gives_the_same_answers_without_building_durable_rules(platform, arch, args):
    """Engine.one_shot (the command line on one launch) matches in Python: the same values, conflicts, fixes
    and explanations as durable-rules, and no ruleset is built for it."""
    fresh = get_engine()
    shot = replace(fresh, built=[])  # as a new process has it: durable-rules not built yet
    one = resolve_request(shot.one_shot(), platform=platform, model_arch=arch, args=args).answer_why_not(
        "attention_backend")
    assert shot.built == []
    full = resolve_request(fresh, platform=platform, model_arch=arch, args=args).answer_why_not("attention_backend")
    assert fresh.built and one.to_dict() == full.to_dict() and one.explain() == full.explain()


def test_too_many_sibling_constants_are_split_over_rulesets(rules_dir):
    """513 tests after 'a' would make one ruleset loop forever (at most 511): the pack is split, and runs."""
    body = "\n".join(f"""  - id: conflict.c{i}
    kind: conflict
    doc: Constant {i}.
    when: a == "v{i}"
    message: m""" for i in range(513))
    text = f"""schema: resolver/1
rules:
  - id: option.a
    kind: option
    doc: An option.
    name: a
    type: str
    help: Option a.
{body}
"""
    d = rules_dir({"a.yaml": text})
    compiled = compile_pack(load_rules(d))
    assert len(compiled.parts) > 1
    assert not [p for part in compiled.parts for p in EngineNetwork(part_ruleset(compiled.ruleset, part)).problems]
    res = resolve_request(get_engine(d), platform="h100", args={"a": "v512"}, fixes=False)
    assert [c.rule.id for c in res.conflicts] == ["conflict.c512"]


def test_emitted_json_stays_in_the_safe_subset(engine):
    """No join under an ordered or != operator (P3); no $or mixing joins and constants (P4)."""
    def walk(node, under=None):
        if isinstance(node, dict):
            for op, sub in node.items():
                if op in ("$lt", "$lte", "$gt", "$gte", "$neq"):
                    assert not any(isinstance(v, dict) for v in sub.values()), node
                if op == "$or":
                    ops = {"$and", "$or", "$ex", "$nex", "$neq", "$lt", "$lte", "$gt", "$gte"}
                    kinds = {"join" if any(isinstance(v, dict) for t in s for v in t.values() if not t.keys() & ops)
                             else "const"
                             for s in [[x] for x in sub]}
                    assert len(kinds) == 1, node
                walk(sub, op)
        elif isinstance(node, list):
            for n in node:
                walk(n, under)
    for key, rule in engine.compiled.ruleset.items():
        assert callable(engine.durable._host.get_action(key))
        walk(rule["all"])


def test_every_alternative_of_an_in_list_counts_toward_the_engine_limit(rules_dir):
    names = ", ".join(f'"Arch{i}"' for i in range(520))
    text = f"""schema: resolver/1
rules:
  - id: conflict.big
    kind: conflict
    doc: Many names in one list.
    when: model.architecture in [{names}]
    message: big
"""
    pack = load_rules(rules_dir({"a.yaml": text}))
    with pytest.raises(RuleFileErrors,
                       match=r"a.yaml:3: rule conflict.big: 512 different tests follow 'model.architecture'"):
        compile_pack(pack)


@pytest.mark.parametrize("value", [None, True, False, 0, 1, 1.0, -0.0, 0.5, 2**53, "", "1", "true", "é", 'a"b'])
def test_values_round_trip_through_their_engine_encoding(value):
    fields = fact_fields(value, "x")
    back = fact_value(json.loads(json.dumps(fields)))  # as the engine hands facts back
    assert back == value and type(back) is type(value)


def test_encoded_values_are_equal_exactly_when_the_resolver_says_so():
    assert constant(1) == constant(1.0) == "n:1"
    assert len({constant(True), constant(1), constant("1"), constant("true"), constant("b:true")}) == 5
    with pytest.raises(InputError, match="not valid UTF-8"):
        fact_fields("\udcff", "x")
    with pytest.raises(InputError, match="outside what the resolver handles"):
        fact_fields(1e-05, "x")


WAITING = """schema: resolver/1
rules:
  - id: option.a
    kind: option
    doc: An option.
    name: a
    type: str
    help: Option a.
  - id: conflict.two-facts
    kind: conflict
    doc: Reads two facts; with a unset, the platform fact waits for a partner that never comes.
    when: platform.major != 10 and a == "b"
    message: m
"""


def test_sessions_where_nothing_fires_are_deleted_safely(rules_dir, tmp_path):
    """durable-rules 2.0.28 corrupts its heap when delete_state meets a sid that holds a waiting partial
    match but never ran an action: the matcher's opening fact makes the sink run once per session.  In a
    subprocess, since the failure is an abort; before the fix this crashed within a few sessions."""
    import subprocess
    import sys

    d = rules_dir({"a.yaml": WAITING})
    script = tmp_path / "sessions.py"
    script.write_text(f"""
from resolver.compiler import compile_pack
from resolver.engine import DurableMatcher
from resolver.loader import load_rules
from resolver.model import model_facts
from resolver.platforms import find_platform
from resolver.resolution import Request, run
compiled = compile_pack(load_rules({d!r}))
matchers = [DurableMatcher(compiled) for _ in range(50)]
for platform in ("gfx942", "sm80", "sm90") * 4:
    for m in matchers:
        assert not run(compiled, m, Request(find_platform(platform), "t", model_facts(arch=None), {{}})).conflicts
print("ok")
""")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, "PYTHONPATH": ROOT})
    assert (proc.returncode, proc.stdout.strip()) == (0, "ok"), proc.stderr[-2000:]


def test_the_stored_fact_count_reads_one_id_key_per_fact_whatever_the_values_hold():
    tricky = ['"id": 1', '{"id":', "\\\"id\\\":", "id", '"id"']
    facts = [{"id": f"v:x{i}", "t": "val", "o": f"x{i}", "v": "s:" + text, "sid": "1"} for i, text in enumerate(tricky)]

    class Native:
        def get_facts(self, handle, sid):
            return engine_module._encode(facts)

    assert engine_module._stored(Native(), 0, "1") == len(json.loads(Native().get_facts(0, "1"))) == len(tricky)
