"""Data parallelism (rules/parallel.yaml) against SGLang 0.5.23.

Every case was asked of the oracle (SGLang 0.5.23 on CPU, docs/parity.md) on sm90 with the DeepSeek V3,
Qwen3-30B-A3B and Llama 3.1 8B catalogue configs: 18 launches, all agreeing.
"""
import pytest

from resolver.api import get_engine, resolve_request

from .conftest import CATALOGUE

LLAMA = CATALOGUE["meta-llama/Llama-3.1-8B-Instruct"]


def _resolve(**args):
    return resolve_request(get_engine(), platform="sm90", model=dict(LLAMA), args=args, fixes=False)


@pytest.mark.parametrize("args, expected", [
    ({"tp_size": 8, "attn_dp_size": 8}, (0.3, 1024)),
    ({"tp_size": 8, "dp_size": 8, "enable_dp_attention": True}, (0.3, 1024)),   # the deprecated spelling
    ({"tp_size": 8, "attn_dp_size": 4, "schedule_conservativeness": 2.0}, (0.6, 2048)),  # typed, scaled too
    ({"tp_size": 4, "dp_size": 2}, (1.0, 8192)),                                # replicas, no attention DP
])
def test_attention_dp_schedules_less_conservatively(args, expected):
    res = _resolve(**args)
    assert not res.conflicts
    assert (res.values["schedule_conservativeness"], res.values["chunked_prefill_size"]) == expected


@pytest.mark.parametrize("args, rule", [
    ({"tp_size": 8, "attn_dp_size": 3}, "conflict.parallel.tp-attn-dp"),
    ({"tp_size": 8, "attn_dp_size": 2, "dp_size": 2}, "conflict.parallel.dp-with-attn-dp"),
])
def test_refusals(args, rule):
    assert {c.rule.id for c in _resolve(**args).conflicts} == {rule}
