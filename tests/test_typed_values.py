"""One truth for typed values: durable-rules and the reference matcher agree on every value type.

durable-rules 2.0.28 on its own finds ``true == 1``, ``1 == "1"``, ``true == "true"``, compares
booleans and strings with numbers in ordered tests, and finds ``1 != 1.0`` in a join.  Facts and
constants are type-tagged (resolver/engine_values.py) so that the engine decides as
:meth:`resolver.conditions.Atom.holds` does.  Every case here is an explicit, fixed list: odd
types in the shipped rules (booleans where numbers are expected and the reverse, floats, big
integers, long and unicode strings), and every operator of the ``when:`` language on them.
"""
import io
import itertools
import json

import pytest

from resolver import InputError, resolve
from resolver.cli import main
from resolver.compiler import compile_pack
from resolver.engine import DurableMatcher, ReferenceMatcher
from resolver.loader import load_rules
from resolver.model import model_facts
from resolver.numbers import MAX_STRING_BYTES
from resolver.platforms import find_platform
from resolver.resolution import Request, run

DSV32 = "DeepseekV32ForCausalLM"

ODD = [None, True, False, 0, 1, 1.0, 2, 0.5, -1, 64, 64.0, 2**53, float(2**53), "1", "true", "64", "", "é",
       "名前", "😀", 'a"b\\c', "x" * 100_000]


def _agree(compiled, durable, reference, request):
    a, b = run(compiled, durable, request), run(compiled, reference, request)
    assert a == b, request.model
    return a


def test_index_kpool_true_is_not_1(engine):
    """The fuzzed config: `"index_kpool": true` resolved page_size 64 in durable-rules (true == 1)."""
    config = {"architectures": [DSV32], "index_topk": 2048, "index_kpool": True}
    request = Request(find_platform("h100"), "test", model_facts(config), {})
    outcome = _agree(engine.compiled, engine.durable, engine.reference, request)
    assert outcome.values["page_size"] == 1  # "index_kpool in [1, null]" does not hold for a boolean
    kpool_1 = Request(find_platform("h100"), "test", model_facts(dict(config, index_kpool=1)), {})
    assert run(engine.compiled, engine.durable, kpool_1).values["page_size"] == 64


@pytest.mark.parametrize("field", ["index_kpool", "qk_rope_head_dim", "num_key_value_heads", "index_topk",
                                   "head_dim", "kv_lora_rank", "model_type", "learnable_sink"])
def test_the_shipped_rules_agree_on_odd_model_values(engine, field):
    for platform, value in itertools.product(("h100", "b200", "mi300x"), ODD):
        config = {"architectures": [DSV32], "index_topk": 2048, "kv_lora_rank": 512, field: value}
        request = Request(find_platform(platform), "test", model_facts(config), {})
        _agree(engine.compiled, engine.durable, engine.reference, request)


# {a} is model.index_topk and {b} model.head_dim: facts any config.json can give any JSON type
_TESTS = ["{a} == 1", "{a} == true", "{a} == false", '{a} == "1"', "{a} == 1.0", "{a} == 0.5", "{a} != 1",
          "{a} != true", '{a} in [1, "1", true]', "{a} not in [1, true]", "{a} not in [1, null]", "{a} < 2",
          "{a} >= 1", "not ({a} < 2)", "{a} > 0.25", "{a} <= 9007199254740992", "{a} == null", "{a}", "not {a}",
          "{a} == {b}", "{b} == {a} and {a} != null", '{a} == "é"', '{a} in ["😀", "64"]', "{a} == 64 or {b} == 64",
          "not ({a} >= 64) and {b} != null"]


@pytest.fixture(scope="module")
def typed_pack(tmp_path_factory):
    d = tmp_path_factory.mktemp("typed")
    rules = "".join(f"""  - id: conflict.c{i}
    kind: conflict
    doc: Test {i}.
    when: '{when.format(a="model.index_topk", b="model.head_dim")}'
    message: "{i}"
""" for i, when in enumerate(_TESTS))
    (d / "typed.yaml").write_text(f"schema: resolver/1\nrules:\n{rules}")
    compiled = compile_pack(load_rules(str(d)))
    return compiled, DurableMatcher(compiled), ReferenceMatcher(compiled)


def test_every_operator_agrees_on_every_type(typed_pack):
    """a = model.index_topk, b = model.head_dim: every pair of odd values, joins of bools and numbers included."""
    compiled, durable, reference = typed_pack
    platform = find_platform("h100")
    fired = set()
    for a, b in itertools.product(ODD, [None, True, 1, 1.0, "1", 64, "64", "é"]):
        facts = model_facts({"index_topk": a, "head_dim": b})
        outcome = _agree(compiled, durable, reference, Request(platform, "test", facts, {}))
        fired |= {c.rule.id for c in outcome.conflicts}
    assert fired == {f"conflict.c{i}" for i in range(len(_TESTS))}  # every test fired for some values


def test_a_bool_never_joins_a_number(typed_pack):
    compiled, durable, _ = typed_pack
    platform = find_platform("h100")
    join = {f"conflict.c{_TESTS.index('{a} == {b}')}"}
    for a, b, same in [(True, 1, False), (1, True, False), (1, 1.0, True), (True, True, True), ("1", 1, False)]:
        outcome = run(compiled, durable, Request(platform, "test", model_facts({"index_topk": a, "head_dim": b}), {}))
        assert (join <= {c.rule.id for c in outcome.conflicts}) == same, (a, b)


def test_strings_the_engine_cannot_hold_are_input_errors():
    with pytest.raises(InputError, match="not valid UTF-8"):
        resolve({}, platform="h100", model={"architectures": [DSV32], "model_type": "\udcff"})
    with pytest.raises(InputError, match="too long"):
        resolve({}, platform="h100", model={"architectures": [DSV32], "model_type": "x" * (MAX_STRING_BYTES + 1)})


def test_a_batch_line_with_invalid_utf8_is_an_input_error(tmp_path):
    f = tmp_path / "r.jsonl"
    good = json.dumps({"id": "ok", "platform": "h100", "model_arch": DSV32}).encode()
    bad = (b'{"id": "bad", "platform": "h100", "model": {"architectures": ["' + DSV32.encode()
           + b'"], "model_type": "\xff"}}')
    f.write_bytes(good + b"\n" + bad + b"\n")
    out, err = io.StringIO(), io.StringIO()
    code = main(["--batch", str(f)], out, err)
    results = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [r["status"] for r in results] == ["resolved", "error"]
    assert "not UTF-8 text" in results[1]["error"] and "refused a fact" not in results[1]["error"]
    assert code == 2 and "Traceback" not in err.getvalue()
