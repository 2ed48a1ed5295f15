"""What SGLang 0.5.23 finally decides in cuda_graph_config (rules/cuda_graph_config.yaml): per phase the graph
backend, the prefill graph's largest batch and which list of batch sizes each phase captures.

Every case was asked of the oracle (SGLang 0.5.23 on CPU, docs/parity.md) with the catalogue config;
``test_the_table_is_sglangs_answer`` asks it again when it is installed.  SGLang's batch lists are named by
the generator that makes them from the phase's max_bs (tools/sglang_diff.py BATCH_LISTS).
"""

import pytest

from resolver.api import get_engine, resolve_request
from tools.sglang_diff import DRAFTS, NESTED, ORACLE_DRAFT_DIR, sglang_value

from .conftest import CATALOGUE
from .oracle import ORACLE, oracle_python

MODELS = {"llama": "meta-llama/Llama-3.1-8B-Instruct", "mistral": "mistralai/Mistral-7B-Instruct-v0.3",
          "dsv3": "deepseek-ai/DeepSeek-V3", "gptoss": "openai/gpt-oss-20b", "qwen3moe": "Qwen/Qwen3-30B-A3B"}
FIELDS = ("cuda_graph_config_decode_backend", "cuda_graph_config_prefill_backend", "cuda_graph_config_prefill_max_bs",
          "cuda_graph_config_decode_bs", "cuda_graph_config_prefill_bs")

# (platform, model, draft, args) -> SGLang's (decode backend, prefill backend, prefill max_bs, decode bs, prefill bs)
CASES = [
    ("sm90", "llama", None, {}, ("full", "breakable", 8192, "default", "default")),
    # torch_native and flex_attention turn both graphs off, a typed backend too
    ("sm90", "llama", None, {"attention_backend": "torch_native"},
     ("disabled", "disabled", 8192, "default", "default")),
    ("sm90", "llama", None, {"attention_backend": "flex_attention", "cuda_graph_backend_decode": "full"},
     ("disabled", "disabled", 8192, "default", "default")),
    # DeepSeek-V3 prefilling with trtllm_mla captures no prefill graph, unless the backend is typed
    ("sm100", "dsv3", None, {"tp_size": 8}, ("full", "disabled", 8192, "default", "default")),
    ("sm100", "dsv3", None, {"tp_size": 8, "cuda_graph_backend_prefill": "breakable"},
     ("full", "breakable", 8192, "default", "default")),
    # attention DP clamps the prefill graph to each rank's chunk, unless its max_bs is typed
    ("sm89", "mistral", None, {"tp_size": 8, "attn_dp_size": 8}, ("full", "breakable", 512, "default", "default")),
    ("sm89", "mistral", None, {"tp_size": 8, "attn_dp_size": 8, "cuda_graph_max_bs_prefill": 4096},
     ("full", "breakable", 4096, "default", "default")),
    # DeepEP: buckets up to 2,048 tokens (or the typed max_bs's largest bucket) rounded up to 8
    ("sm120", "gptoss", None, {"moe_a2a_backend": "deepep"}, ("full", "breakable", 2048, "default", "aligned8")),
    ("sm90", "qwen3moe", None, {"tp_size": 2, "moe_a2a_backend": "deepep", "cuda_graph_max_bs_prefill": 1000},
     ("full", "breakable", 960, "default", "aligned8")),
    ("sm90", "qwen3moe", None, {"tp_size": 2, "moe_a2a_backend": "deepep", "deepep_mode": "normal"},
     ("disabled", "disabled", 2048, "default", "aligned8")),
    ("sm90", "qwen3moe", None, {"tp_size": 4, "attn_dp_size": 4, "moe_a2a_backend": "deepep"},
     ("full", "breakable", 2048, "default", "aligned8")),
    # ... which attention DP re-clamps and lists again plainly
    ("sm90", "qwen3moe", None, {"tp_size": 8, "attn_dp_size": 8, "moe_a2a_backend": "deepep"},
     ("full", "breakable", 1024, "default", "default")),
    ("sm90", "llama", "EAGLE3", {"speculative_algorithm": "EAGLE3", "speculative_draft_model_path": ORACLE_DRAFT_DIR},
     ("full", "breakable", 8192, "speculative", "default")),
    ("sm90", "llama", None, {"disaggregation_mode": "prefill"}, ("disabled", "breakable", 8192, "default", "default")),
    ("gfx942", "llama", None, {}, ("full", "disabled", 16384, "default", "default")),
]


def _request(n, platform, model, draft, args):
    r = {"id": f"g{n}", "platform": platform, "model": CATALOGUE[MODELS[model]], "args": args}
    if draft:
        r["draft_model"] = DRAFTS[draft]
    return r


@pytest.mark.parametrize("platform, model, draft, args, expected", CASES)
def test_cuda_graph_config(platform, model, draft, args, expected):
    res = resolve_request(get_engine(), platform=platform, model=dict(CATALOGUE[MODELS[model]]), args=args,
                          draft_model=DRAFTS[draft] if draft else None, fixes=False)
    assert not res.conflicts
    assert tuple(res.values[f] for f in FIELDS) == expected


def test_batch_lists_are_named_by_their_generator():
    """The differential names SGLang's list by the generator that makes it, else shows the list."""
    answer = {"values": {"cuda_graph_config": {"decode": {"max_bs": 12, "bs": [1, 2, 4, 8, 12]},
                                               "prefill": {"max_bs": 20, "bs": [8, 16, 24]}}}}
    assert sglang_value(answer, {"args": {}}, "cuda_graph_config_decode_bs", {}) == "default"
    assert sglang_value(answer, {"args": {}}, "cuda_graph_config_prefill_bs", {}) == "aligned8"
    answer["values"]["cuda_graph_config"]["decode"]["bs"] = [1, 12]
    assert sglang_value(answer, {"args": {}}, "cuda_graph_config_decode_bs", {}) == [1, 12]
    assert set(FIELDS) < set(NESTED)


def test_the_table_is_sglangs_answer():
    """Ask SGLang 0.5.23 (the oracle) the table again."""
    python = oracle_python()
    from tools.sglang_diff import ask_oracle

    requests = [_request(n, p, m, d, a) for n, (p, m, d, a, _) in enumerate(CASES)]
    answers = {rid: a["sglang"] for rid, a in ask_oracle(requests, python, ORACLE).items()}
    for r, (_, _, _, args, expected) in zip(requests, CASES, strict=True):
        got = answers[r["id"]]
        assert got["status"] == "resolved", (args, got)
        assert tuple(sglang_value(got, r, f, {}) for f in FIELDS) == expected, args
