"""Data parallelism (rules/parallel.yaml) against SGLang 0.5.23.

Every case was asked of the oracle (SGLang 0.5.23 on CPU, docs/parity.md) on sm90 with the Llama 3.1 8B
catalogue config; ``test_the_table_is_sglangs_answer`` asks it again when it is installed.  The parallel
layout beyond attention DP (nodes, the LM head, DCP, expert parallelism and the MoE all-to-all) is in
tests/test_moe_a2a.py.
"""

import pytest

from resolver.api import get_engine, resolve_request

from .conftest import CATALOGUE
from .oracle import ORACLE, oracle_python

LLAMA = CATALOGUE["meta-llama/Llama-3.1-8B-Instruct"]

VALUES = [
    ({"tp_size": 8, "attn_dp_size": 8}, (0.3, 1024)),
    ({"tp_size": 8, "dp_size": 8, "enable_dp_attention": True}, (0.3, 1024)),   # the deprecated spelling
    ({"tp_size": 8, "attn_dp_size": 4, "schedule_conservativeness": 2.0}, (0.6, 2048)),  # typed, scaled too
    ({"tp_size": 4, "dp_size": 2}, (1.0, 8192)),                                # replicas, no attention DP
    # a typed --attn-dp-size 1 with the deprecated spelling counts as unset: four attention-DP ranks
    ({"tp_size": 4, "dp_size": 4, "enable_dp_attention": True, "attn_dp_size": 1}, (0.3, 2048)),
]
REFUSED = [
    ({"tp_size": 8, "attn_dp_size": 3}, "conflict.parallel.tp-attn-dp", ""),   # SGLang asserts without a message
    ({"tp_size": 8, "attn_dp_size": 2, "dp_size": 2}, "conflict.parallel.dp-with-attn-dp",
     "data-parallel replicas combined with attention data parallelism are not supported"),
]


def _resolve(**args):
    return resolve_request(get_engine(), platform="sm90", model=dict(LLAMA), args=args, fixes=False)


@pytest.mark.parametrize("args, expected", VALUES)
def test_attention_dp_schedules_less_conservatively(args, expected):
    res = _resolve(**args)
    assert not res.conflicts
    assert (res.values["schedule_conservativeness"], res.values["chunked_prefill_size"]) == expected


@pytest.mark.parametrize("args, rule, phrase", REFUSED)
def test_refusals(args, rule, phrase):
    assert {c.rule.id for c in _resolve(**args).conflicts} == {rule}


def test_the_table_is_sglangs_answer():
    """Ask SGLang 0.5.23 (the oracle) the table again."""
    python = oracle_python()
    from tools.sglang_diff import ask_oracle

    requests = [{"id": f"v{n}", "platform": "sm90", "model": LLAMA, "args": a} for n, (a, _) in enumerate(VALUES)]
    requests += [{"id": f"r{n}", "platform": "sm90", "model": LLAMA, "args": a} for n, (a, _, _) in enumerate(REFUSED)]
    answers = {rid: a["sglang"] for rid, a in ask_oracle(requests, python, ORACLE).items()}
    for n, (args, (conservativeness, chunk)) in enumerate(VALUES):
        got = answers[f"v{n}"]
        assert got["status"] == "resolved", (args, got)
        values = got["values"]
        assert (values.get("schedule_conservativeness", args.get("schedule_conservativeness", 1.0)),
                values["chunked_prefill_size"]) == (conservativeness, chunk), (args, values)
    for n, (args, _rule, phrase) in enumerate(REFUSED):
        got = answers[f"r{n}"]
        assert got["status"] == "error" and phrase in got["message"], (args, got)
