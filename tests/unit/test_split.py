"""A pack 16 times the size the shipped one had when the split was written (214 compiled rules)
runs: the compiler splits it into durable-rules rulesets that each stay within the engine's
limits, and it resolves exactly as the plain-Python reference matcher does."""
import json

import pytest

from resolver.compiler import (
    PART_SHARE,
    EngineNetwork,
    compile_pack,
    fact_keys,
    part_ruleset,
)
from resolver.engine import DurableMatcher, ReferenceMatcher
from resolver.loader import load_rules
from resolver.pack_cache import from_data, to_data
from resolver.platforms import find_platform
from resolver.resolution import Request, run

GROUPS = 1080  # about 3.2 compiled rules each (an option compiles to none): 3,400 rules, x16 the shipped pack
HOT = 4  # input options every group tests: the limits that grow with the rules on one fact


def _pack_text() -> str:
    """Groups like benchmarks/bench.py's padding, plus `in` lists, adjustments and joins, whose
    facts cross parts: each group's option is decided from one of the hot inputs."""
    lines = ["schema: resolver/1", "rules:"]
    lines += [f"  - {{id: option.in{h}, kind: option, doc: input, name: in{h}, type: int, help: input}}"
              for h in range(HOT)]
    for i in range(GROUPS):
        hot, c = f"in{i % HOT}", 100000 + i
        lines += [
            (f"  - {{id: option.pad_{i}, kind: option, doc: pad, name: pad_{i}, type: choice, choices: [a, b], "
             "help: pad}"),
            (f"  - {{id: default.pad_{i}.a, kind: default, doc: pad, when: '{hot} != {c}', set: {{pad_{i}: a}}, "
             "priority: 1}"),
            (f"  - {{id: default.pad_{i}.b, kind: default, doc: pad, when: '{hot} == {c}', set: {{pad_{i}: b}}, "
             "priority: 2}"),
            (f"  - {{id: conflict.pad_{i}, kind: conflict, doc: pad, "
             f"when: 'pad_{i} == \"b\" and {hot} in [{c}, {c + 1}]', message: pad}}"),
        ]
        if i % 8 == 0:
            lines.append(f"  - {{id: adjust.pad_{i}, kind: adjust, doc: pad, "
                         f"when: 'pad_{i} == \"b\" and {hot} > {c - 1}', option: pad_{i}, value: a, order: 1, "
                         "message: pad}")
        if i % 16 == 0 and i + 1 < GROUPS:
            lines.append(f"  - {{id: conflict.join_{i}, kind: conflict, doc: pad, when: 'pad_{i} == pad_{i + 1}', "
                         "message: pad}")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    d = tmp_path_factory.mktemp("x16")
    (d / "pad.yaml").write_text(_pack_text())
    pack = load_rules(str(d))
    return pack, compile_pack(pack)


def test_a_pack_past_one_ruleset_is_split_into_parts_within_the_limits(big):
    pack, compiled = big
    assert len(compiled.branches) >= 3400
    assert EngineNetwork(compiled.ruleset, walk=False).problems  # as one ruleset, durable-rules would refuse or hang
    assert len(compiled.parts) > 1
    keys = [k for part in compiled.parts for k in part]
    assert sorted(keys) == sorted(compiled.branches)  # every branch in exactly one part
    for part in compiled.parts:
        network = EngineNetwork(part_ruleset(compiled.ruleset, part))
        assert network.problems == [] and network.load.fits(PART_SHARE), network.load
    # a fact goes only to the parts that read it: most facts to one part
    read = [{f for k in part for f in fact_keys(compiled.branches[k])} for part in compiled.parts]
    routed = sorted(sum(f in facts for facts in read) for f in set().union(*read))
    assert routed[len(routed) // 2] == 1
    again = from_data(json.loads(json.dumps(to_data(pack, compiled))))  # the pack cache keeps the parts
    assert again[1].parts == compiled.parts


@pytest.mark.parametrize("inputs", [
    {},
    {"in0": 100000 + 1000, "in1": 100001, "in2": 100000 + 402, "in3": 100000 + 403 + 1},  # early, middle, late groups
    {"in0": 100000 + 8, "in1": 100000 + 409, "in2": 7, "in3": 100000 + 1079},
])
def test_a_split_pack_resolves_as_the_reference_matcher_does(big, inputs):
    _, compiled = big
    request = Request(find_platform("h100"), "--platform h100", {}, dict(inputs))
    durable = DurableMatcher(compiled)
    try:
        a = run(compiled, durable, request)
    finally:
        durable.close()
    b = run(compiled, ReferenceMatcher(compiled), request)
    assert a == b
    fired = {k.split("#")[0] for k in a.fired}
    for h, value in inputs.items():  # each input picked out its group's "b" default, wherever its part is
        i = value - 100000
        if 0 <= i < GROUPS and i % HOT == int(h[2:]):
            assert f"default.pad_{i}.b" in fired
    assert sum(k.startswith("conflict.join_") for k in fired) > 0
