"""The engine: durable-rules does the matching, safely, and agrees with the reference matcher."""
import copy
import threading

import pytest

from resolver.api import resolve_request
from resolver.compiler import compile_pack
from resolver.engine import DurableMatcher, ReferenceMatcher
from resolver.errors import EngineError, RuleFileErrors
from resolver.loader import load_rules
from resolver.resolution import Request, run
from resolver.platforms import find_platform
from resolver.model import model_facts

from ..conftest import SEED_ARGS


def _request(args, platform="h100", arch="DeepseekV32ForCausalLM"):
    return Request(find_platform(platform), "--platform " + platform, model_facts(arch=arch), args)


def test_durable_rules_does_the_matching(engine, monkeypatch):
    """With the reference matcher disabled, results still come, from durable-rules' actions."""
    monkeypatch.setattr(ReferenceMatcher, "session", lambda self: (_ for _ in ()).throw(AssertionError("not used")))
    calls = []
    host = engine.durable._host
    real = host.assert_facts
    monkeypatch.setattr(host, "assert_facts", lambda rs, facts: calls.append(len(facts)) or real(rs, facts))
    res = resolve_request(engine, platform="h100", args=SEED_ARGS, model_arch="DeepseekV32ForCausalLM", fixes=False)
    assert calls, "durable-rules was not called"
    assert {c.rule.id for c in res.conflicts} == {"conflict.hisparse.decode.cuda-fp8", "conflict.dsa.tilelang-fp8.hisparse"}


def test_the_compiled_json_decides(engine):
    """Changing one constant in the emitted durable JSON changes the result: the network matches."""
    compiled = engine.compiled
    tampered = copy.deepcopy(compiled.ruleset)
    key = "default.dsa.backends.fp8#0"
    text = repr(tampered[key]).replace("'fp8_e4m3'", "'bfloat16'")
    tampered[key] = eval(text)  # noqa: S307 - a repr of our own JSON dict
    from dataclasses import replace

    matcher = DurableMatcher(replace(compiled, ruleset=tampered))
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


def test_an_action_that_raises_names_its_rule(engine, monkeypatch):
    matcher = DurableMatcher(engine.compiled)
    import resolver.engine as eng

    monkeypatch.setattr(eng, "_facts_of", lambda m: 1 / 0)
    with pytest.raises(EngineError, match=r"rule .*\(rules/.*\.yaml:\d+\) failed: ZeroDivisionError"):
        run(engine.compiled, matcher, _request({}))


def test_durable_and_reference_agree_on_the_seed(engine):
    req = _request(SEED_ARGS)
    a, b = run(engine.compiled, engine.durable, req), run(engine.compiled, engine.reference, req)
    assert a == b


def test_too_many_sibling_constants_are_refused_before_the_engine(rules_dir):
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
    pack = load_rules(rules_dir({"a.yaml": text}))
    with pytest.raises(RuleFileErrors, match="the engine hangs past 512"):
        compile_pack(pack)


def test_emitted_json_stays_in_the_safe_subset(engine):
    """No join under an ordered or != operator (P3); no $or mixing joins and constants (P4)."""
    def walk(node, under=None):
        if isinstance(node, dict):
            for op, sub in node.items():
                if op in ("$lt", "$lte", "$gt", "$gte", "$neq"):
                    assert not any(isinstance(v, dict) for v in sub.values()), node
                if op == "$or":
                    kinds = {"join" if any(isinstance(v, dict) for t in s for v in t.values() if not t.keys() & {"$and", "$or", "$ex", "$nex", "$neq", "$lt", "$lte", "$gt", "$gte"}) else "const" for s in [[x] for x in sub]}
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
    with pytest.raises(RuleFileErrors, match=r"a.yaml:3: 'model.architecture' is tested 520 distinct ways"):
        compile_pack(pack)
