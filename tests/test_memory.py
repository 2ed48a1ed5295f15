"""SGLang's memory-driven defaults (rules/memory.yaml) and the platform memory they read.

Every expected value was asked of the oracle (SGLang 0.5.23 on CPU, docs/parity.md) with the
Llama 3.1 8B catalogue config: the platform, ``platform_overrides.gpu_memory_gb`` where given, and
the typed arguments shown.
"""
import io
import json

import pytest

from resolver.api import get_engine, resolve_request
from resolver.cli import main
from resolver.errors import InputError
from resolver.platforms import find_platform
from resolver.tools.batch import resolve_line

from .conftest import CATALOGUE
from .oracle import oracle_python

LLAMA = CATALOGUE["meta-llama/Llama-3.1-8B-Instruct"]


@pytest.mark.parametrize("platform, memory, expected", [
    ("sm90", None, 8192), ("sm90", 141, 8192), ("sm120", 32, 4096), ("sm80", 40, 4096), ("gfx942", None, 16384),
    ("sm90", 16, 2048),
])
def test_the_chunk_size_follows_the_gpu_memory(platform, memory, expected):
    res = resolve_request(get_engine(), platform=platform, model=dict(LLAMA), gpu_memory_gb=memory, fixes=False)
    assert res.values["chunked_prefill_size"] == expected


@pytest.mark.parametrize("args, refused", [
    ({"chunked_prefill_size": 1000, "page_size": 64}, True),
    ({"chunked_prefill_size": 1000, "page_size": 64, "disaggregation_mode": "decode"}, False),
    ({"chunked_prefill_size": -1, "page_size": 64}, False),
])
def test_a_chunk_holds_whole_pages(args, refused):
    res = resolve_request(get_engine(), platform="sm90", model=dict(LLAMA), args=args)
    assert ("conflict.memory.chunk-page" in {c.rule.id for c in res.conflicts}) == refused
    if refused:
        (conflict,) = res.conflicts
        assert any(f.unset == ("chunked_prefill_size",) for f in conflict.fixes)


def test_an_alias_names_its_cards_memory():
    assert (find_platform("h100").gpu_memory_gb, find_platform("h200").gpu_memory_gb) == (80, 141)
    assert (find_platform("b200").gpu_memory_gb, find_platform("mi300x").gpu_memory_gb) == (180, 192)
    assert find_platform("h200").name == "sm90"


def test_the_memory_can_be_given_on_the_command_line_and_in_a_batch_line():
    out = io.StringIO()
    assert main(["--platform", "h100", "--gpu-memory-gb", "32", "--model-arch", "LlamaForCausalLM", "--format", "json"],
                out, io.StringIO()) == 0
    assert json.loads(out.getvalue())["values"]["chunked_prefill_size"] == 4096
    line = json.dumps({"platform": "sm90", "model": LLAMA, "platform_overrides": {"gpu_memory_gb": 16}})
    assert resolve_line(get_engine(), line, fixes=False)["values"]["chunked_prefill_size"] == 2048


@pytest.mark.parametrize("bad", [0, -4, True, "80", 1e9])
def test_a_bad_memory_size_is_an_input_error(bad):
    with pytest.raises(InputError):
        resolve_request(get_engine(), platform="sm90", model_arch="LlamaForCausalLM", gpu_memory_gb=bad)


@pytest.mark.parametrize("args, expected", [
    ({"attn_dp_size": 8, "tp_size": 8}, 1024),                                 # 8192 for the card, per rank
    ({"attn_dp_size": 4, "tp_size": 8, "chunked_prefill_size": 4096}, 1024),    # a typed size too, with a warning
    ({"dp_size": 8, "enable_dp_attention": True, "tp_size": 8}, 1024),         # the deprecated spelling
])
def test_attention_dp_divides_the_chunk_among_its_ranks(args, expected):
    # tests/test_sglang_roundtrip.py checks the same against SGLang's parser and resolution (DeepSeek V3.2 on h200)
    res = resolve_request(get_engine(), platform="h200", model=dict(LLAMA), args=args, fixes=False)
    assert res.values["chunked_prefill_size"] == expected
    (step,) = res.derivations["chunked_prefill_size"].adjustments
    assert step.rule.id == "adjust.memory.chunk-per-attention-dp-rank"
    warned = "chunked prefill size is adjusted" in " ".join(w.message for w in res.warnings)
    assert warned == ("chunked_prefill_size" in args)


# --- the static memory fraction, the decode graph's largest batch, the running-request cap ---------
# (id, resolver platform, oracle platform, gpu_memory_gb given to the oracle, model, typed args,
#  SGLang's (mem_fraction_static, cuda_graph_config.decode.max_bs, max_running_requests)); every answer
#  was asked of the oracle (test_the_memory_table_is_sglangs_answer asks again when it is available)
DSV3 = CATALOGUE["deepseek-ai/DeepSeek-V3"]
QWEN_MOE = CATALOGUE["Qwen/Qwen3-30B-A3B"]
# the DeepSeek V4 config the oracle loads (tests/test_moe_overrides.py: the catalogue's plus the fields its class reads)
DSV4 = {**CATALOGUE["deepseek-ai/DeepSeek-V4-Flash"], "compress_ratios": [0] * 43,
        "rope_scaling": {"type": "yarn", "factor": 16, "original_max_position_embeddings": 65536, "beta_fast": 32,
                         "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0}}
MEMORY_CASES = [
    ("llama-h100", "h100", "sm90", None, LLAMA, {}, (0.83, 256, None)),
    ("llama-h200", "h200", "sm90", 141, LLAMA, {}, (0.904, 256, None)),
    ("llama-rtx5090", "rtx5090", "sm120", 32, LLAMA, {}, (0.778, 48, None)),
    ("llama-rtx5090-tp4", "rtx5090", "sm120", 32, LLAMA, {"tp_size": 4}, (0.759, 160, None)),
    ("llama-16gb", "sm90", "sm90", 16, LLAMA, {}, (0.752, 8, None)),
    ("llama-a100-40gb-tp4", "sm80", "sm80", 40, LLAMA, {"tp_size": 4}, (0.807, 160, None)),
    # MLA: 1.5 GiB of prefill graph
    ("dsv3-h200-tp8", "h200", "sm90", 141, DSV3, {"tp_size": 8}, (0.887, 512, None)),
    ("dsv3-b200-tp8", "b200", "sm100", 180, DSV3, {"tp_size": 8}, (0.844, 512, None)),
    # attention DP: 3 MiB per decode batch and rank, 1.5 more past 300
    ("dsv3-h200-dp8", "h200", "sm90", 141, DSV3, {"tp_size": 8, "attn_dp_size": 8}, (0.759, 512, None)),
    ("llama-h200-dp8", "h200", "sm90", 141, LLAMA, {"tp_size": 8, "attn_dp_size": 8}, (0.766, 512, None)),
    ("llama-h200-dp2-mrr", "h200", "sm90", 141, LLAMA, {"tp_size": 2, "attn_dp_size": 2, "max_running_requests": 128},
     (0.899, 128, 128)),
    # PD: a prefill server captures no decode graph, a decode server no prefill graph and sizes by its requests
    ("llama-h200-prefill", "h200", "sm90", 141, LLAMA, {"disaggregation_mode": "prefill"}, (0.907, 256, None)),
    ("llama-h200-decode", "h200", "sm90", 141, LLAMA, {"disaggregation_mode": "decode"}, (0.929, 256, None)),
    ("llama-h200-decode-spec", "h200", "sm90", 141, LLAMA,
     {"disaggregation_mode": "decode", "max_running_requests": 1024, "speculative_algorithm": "NGRAM",
      "speculative_num_draft_tokens": 8}, (0.907, 256, 1024)),
    ("dsv3-h200-decode-dp8", "h200", "sm90", 141, DSV3,
     {"tp_size": 8, "attn_dp_size": 8, "disaggregation_mode": "decode"}, (0.833, 512, None)),
    ("dsv3-h200-prefill", "h200", "sm90", 141, DSV3, {"tp_size": 8, "disaggregation_mode": "prefill"},
     (0.894, 512, None)),
    # speculative decoding caps the requests at 48 after SGLang sized the graph: the graph keeps 256
    ("llama-h100-ngram", "h100", "sm90", None, LLAMA, {"speculative_algorithm": "NGRAM"}, (0.83, 256, 48)),
    ("llama-h100-mrr64", "h100", "sm90", None, LLAMA, {"max_running_requests": 64}, (0.835, 64, 64)),
    ("llama-h100-mrr64-bs320", "h100", "sm90", None, LLAMA,
     {"max_running_requests": 64, "cuda_graph_max_bs_decode": 320}, (0.829, 320, 64)),
    ("llama-h100-typed", "h100", "sm90", None, LLAMA, {"mem_fraction_static": 0.7}, (0.7, 256, None)),
    # aiter with a long context keeps 15% of the fraction, a typed one too
    ("llama-mi300x", "mi300x", "gfx942", 192, LLAMA, {}, (0.73695, 512, None)),
    ("llama-mi300x-typed", "mi300x", "gfx942", 192, LLAMA, {"mem_fraction_static": 0.7}, (0.595, 512, None)),
    ("llama-mi300x-triton", "mi300x", "gfx942", 192, LLAMA, {"attention_backend": "triton"}, (0.867, 512, None)),
    # DeepEP: 2 GiB over the floor, 1 GiB for the breakable prefill graph, its buckets aligned to 8
    ("dsv3-h200-deepep", "h200", "sm90", 141, DSV3, {"tp_size": 8, "moe_a2a_backend": "deepep"}, (0.865, 512, None)),
    ("qwen-h200-deepep", "h200", "sm90", 141, QWEN_MOE, {"tp_size": 8, "moe_a2a_backend": "deepep"},
     (0.874, 512, None)),
    ("qwen-h200-megamoe-runner", "h200", "sm90", 141, QWEN_MOE,         # the runner alias overrides DeepEP
     {"tp_size": 8, "moe_runner_backend": "megamoe", "moe_a2a_backend": "deepep"}, (0.894, 512, None)),
    # no prefill graph
    ("qwen-h200-mooncake", "h200", "sm90", 141, QWEN_MOE, {"tp_size": 8, "moe_a2a_backend": "mooncake"},
     (0.897, 512, None)),
    ("dsv3-h200-deepep-decode", "h200", "sm90", 141, DSV3,
     {"tp_size": 8, "moe_a2a_backend": "deepep", "disaggregation_mode": "decode"}, (0.915, 512, None)),
    ("dsv3-h200-deepep-prefill", "h200", "sm90", 141, DSV3,
     {"tp_size": 8, "moe_a2a_backend": "deepep", "disaggregation_mode": "prefill"}, (0.887, 512, None)),
    ("llama-h100-no-chunks", "h100", "sm90", None, LLAMA, {"chunked_prefill_size": -1, "max_prefill_tokens": 32768},
     (0.386, 256, None)),
    ("llama-h100-no-graphs", "h100", "sm90", None, LLAMA, {"disable_cuda_graph": True}, (0.842, 256, None)),
    ("llama-h100-pp2", "h100", "sm90", None, LLAMA, {"pp_size": 2}, (0.834, 256, None)),
    ("llama-h100-pp2-breakable", "h100", "sm90", None, LLAMA, {"pp_size": 2, "cuda_graph_backend_prefill": "breakable"},
     (0.829, 256, None)),
    ("llama-h100-prefill-bs", "h100", "sm90", None, LLAMA, {"cuda_graph_max_bs_prefill": 1024}, (0.832, 256, None)),
    ("llama-h100-max-total", "h100", "sm90", None, LLAMA, {"max_total_tokens": 4096}, (0.831, 256, None)),
    ("llama-h200-prefill-decode-graph", "h200", "sm90", 141, LLAMA,
     {"disaggregation_mode": "prefill", "cuda_graph_backend_decode": "breakable"}, (0.907, 256, None)),
    ("llama-h100-dp4-decode-off", "h100", "sm90", None, LLAMA,
     {"tp_size": 4, "attn_dp_size": 4, "disable_decode_cuda_graph": True}, (0.719, 512, None)),
    ("dsv3-h200-dp8-mrr", "h200", "sm90", 141, DSV3, {"tp_size": 8, "attn_dp_size": 8, "max_running_requests": 256},
     (0.848, 256, 256)),
    # DeepSeek V4 runs at most 256 requests unless typed, and captures no breakable prefill graph
    ("dsv4-h100", "h100", "sm90", None, DSV4, {}, (0.836, 256, 256)),
    ("dsv4-h200-tp8-mrr", "h200", "sm90", 141, DSV4, {"tp_size": 8, "max_running_requests": 64}, (0.903, 64, 64)),
]
MEMORY_FIELDS = ("mem_fraction_static", "cuda_graph_max_bs_decode", "max_running_requests")


@pytest.mark.parametrize("case, platform, _machine, memory, model, args, expected", MEMORY_CASES,
                         ids=[c[0] for c in MEMORY_CASES])
def test_memory_values_are_sglangs(case, platform, _machine, memory, model, args, expected):
    res = resolve_request(get_engine(), platform=platform, model=dict(model), args=dict(args), gpu_memory_gb=memory,
                          fixes=False)
    assert not res.conflicts
    assert tuple(res.values[f] for f in MEMORY_FIELDS) == expected


def test_the_memory_table_is_sglangs_answer():
    """Ask SGLang 0.5.23 (the oracle) the whole table again."""
    from tools.sglang_diff import ask_oracle, default_oracle_dir, sglang_value

    python = oracle_python()
    requests = [{"id": c[0], "platform": c[2], "model": c[4], "args": c[5],
                 **({"platform_overrides": {"gpu_memory_gb": c[3]}} if c[3] else {})} for c in MEMORY_CASES]
    answers = ask_oracle(requests, python, default_oracle_dir())
    for case, *_, args, expected in MEMORY_CASES:
        sg = answers[case]["sglang"]
        assert sg["status"] == "resolved", (case, sg)
        assert tuple(sglang_value(sg, {"args": args}, f, {}) for f in MEMORY_FIELDS) == expected, case


def test_token_budgets_take_sglangs_suffixes():
    res = resolve_request(get_engine(), platform="h100", model=dict(LLAMA), fixes=False,
                          args={"chunked_prefill_size": -1, "max_prefill_tokens": "16k", "max_total_tokens": "1Mi"})
    assert (res.values["max_prefill_tokens"], res.values["max_total_tokens"]) == (16000, 2**20)
    assert res.values["mem_fraction_static"] == round((81920 - (512 + 16000 * 1.5 + 128 + 512)) / 81920, 3)


def test_the_reserve_explains_itself():
    res = resolve_request(get_engine(), platform="h200", model=dict(DSV3), args={"tp_size": 8}, fixes=False)
    d = res.derivations["mem_fraction_static"]
    assert d.rule.id == "default.memory.mem-fraction-static"
    # 512 + 1.5 x 8,192 activation tokens, 1 GiB for TP 8, 2 x 512 decode batches, 1.5 GiB of MLA prefill graph
    assert res.outcome.derivations["memory.reserved"].value == 512 + 12288 + 1024 + 1024 + 1536
    assert res.outcome.derivations["graph.prefill_backend"].value == "breakable"
    assert res.outcome.derivations["graph.decode_backend"].value == "full"


@pytest.mark.parametrize("limit, expected", [(400, 400), (600, 256), (None, 256)])
def test_hopper_qwen3_vl_raises_its_decode_graph_to_the_running_limit(limit, expected):
    # SGLang 0.5.23 model_overrides/qwen3_vl.py expand_multimodal_decode_graph_to_running_limit (the oracle cannot
    # load multimodal configs: not oracle-checked); its static fraction is left to SGLang (the encoder's cut)
    args = {"max_running_requests": limit} if limit else {}
    res = resolve_request(get_engine(), platform="h100", model=dict(CATALOGUE["Qwen/Qwen3-VL-8B-Instruct"]), args=args,
                          fixes=False)
    assert res.values["cuda_graph_max_bs_decode"] == expected
    assert res.values["mem_fraction_static"] is None


@pytest.mark.parametrize("memory, tp, expected", [
    (16, 1, 8), (24, 1, 48), (24, 4, 160), (40, 2, 32), (40, 8, 160), (80, 1, 256), (80, 4, 512), (141, 2, 256),
    (192, 1, 512),
])
def test_the_decode_graph_follows_the_card_and_tp(memory, tp, expected):
    res = resolve_request(get_engine(), platform="sm90", model=dict(LLAMA), args={"tp_size": tp}, gpu_memory_gb=memory,
                          fixes=False)
    assert res.values["cuda_graph_max_bs_decode"] == expected
