"""Every field SGLang 0.5.23's launch pipeline declares is reported in ``values`` with SGLang's value (issue 24):
rules/declared.yaml and the fields the topic files gained for it (ROCm's Triton KV splits, deterministic
inference's all-reduce switches, HiCache's host-memory fraction, PD's RDMA devices and encoder transfer, the
SWA pool ratio); a field SGLang decides when it starts (the seed) is named under ``not_decided``.

Every expected value below is SGLang's own answer to the same request (the oracle, docs/parity.md), recorded when
the rules were written; ``test_the_table_is_sglangs_answer`` asks the oracle again when it is installed, and
``test_every_field_sglang_declares_is_reported`` checks, over a fixed and varied set of launches, that the
resolver reports every field SGLang declares.  The resolver is given SGLang's ``--model-path`` (the oracle's
checkpoint folder), which SGLang copies into the tokenizer path, the served model name and an MTP draft's path.
"""
from __future__ import annotations

import copy
import io
import json

import pytest

from resolver import ConflictError, resolve
from resolver.api import get_engine, resolve_request
from resolver.catalogue import catalogue as flag_catalogue
from resolver.cli import main
from resolver.model_source import catalogue as model_catalogue
from tools.sglang_diff import DRAFTS, ORACLE_DRAFT_DIR, ORACLE_MODEL_DIR, RANDOM_MARK, ask_oracle, sglang_value

from .conftest import CATALOGUE
from .oracle import ORACLE, oracle_python

LLAMA = CATALOGUE["meta-llama/Llama-3.1-8B-Instruct"]
QWEN3 = CATALOGUE["Qwen/Qwen3-8B"]
QWEN_MOE = CATALOGUE["Qwen/Qwen3-30B-A3B"]
QWEN_NEXT = CATALOGUE["Qwen/Qwen3-Next-80B-A3B-Instruct"]
DSV3 = CATALOGUE["deepseek-ai/DeepSeek-V3"]
DSV32 = CATALOGUE["deepseek-ai/DeepSeek-V3.2"]
GLM5 = CATALOGUE["zai-org/GLM-5"]
GLM45 = CATALOGUE["zai-org/GLM-4.5"]
GPT_OSS = CATALOGUE["openai/gpt-oss-20b"]
R1_FP4 = CATALOGUE["nvidia/DeepSeek-R1-FP4"]
R1_FP4_FILES = {e.id: e for e in model_catalogue()}["nvidia/DeepSeek-R1-FP4"].files
# Kimi-K3 is not catalogued: Kimi-K2's config under Kimi-K3's class (as tests/test_model_overrides.py does)
KIMI_K3 = {**CATALOGUE["moonshotai/Kimi-K2-Instruct"], "architectures": ["KimiK3ForConditionalGeneration"],
           "model_type": "kimi_k3"}
# the DeepSeek V4 config the oracle loads (tests/test_moe_overrides.py: the catalogue's plus the fields its class reads)
DSV4 = {**CATALOGUE["deepseek-ai/DeepSeek-V4-Flash"], "compress_ratios": [0] * 43,
        "rope_scaling": {"type": "yarn", "factor": 16, "original_max_position_embeddings": 65536, "beta_fast": 32,
                         "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0}}

#: stands for SGLang's --model-path (the oracle's checkpoint folder) in the expectations
MODEL = "<model-path>"
DETERMINISTIC = {"enable_deterministic_inference": True}
EVERY_LAUNCH = {"tokenizer_path": MODEL, "served_model_name": MODEL, "device": "cuda", "random_seed": None,
                "mm_process_config": {}, "custom_weight_loader": [], "allowed_media_domains": [],
                "grpc_worker_threads": 4, "encoder_transfer_backend": "zmq_to_scheduler",
                "_speculative_draft_quantization_explicitly_set": False, "_swa_full_tokens_ratio_explicitly_set": False,
                "triton_attention_num_kv_splits": 8, "hicache_host_memory_fraction": 0.8}

#: (case id, platform, model config, draft head (tools/sglang_diff.py DRAFTS) or None, typed args, environment,
#: {field: SGLang's final value})
CASES = [
    # what every launch declares
    ("plain-h100", "sm90", LLAMA, None, {}, {}, EVERY_LAUNCH),
    ("plain-a100", "sm80", LLAMA, None, {}, {}, EVERY_LAUNCH),
    ("plain-b200", "sm100", LLAMA, None, {}, {}, EVERY_LAUNCH),
    ("plain-mi300x", "gfx942", LLAMA, None, {}, {}, {**EVERY_LAUNCH, "triton_attention_num_kv_splits": 16}),
    ("plain-mi355x", "gfx950", LLAMA, None, {}, {}, {**EVERY_LAUNCH, "triton_attention_num_kv_splits": 16}),
    # typed values: kept, except a device index (stripped) and ROCm's KV splits (16 whatever is typed)
    ("typed-copies", "sm90", LLAMA, None,
     {"random_seed": 7, "tokenizer_path": ORACLE_MODEL_DIR, "served_model_name": "my-model"}, {},
     {"random_seed": 7, "tokenizer_path": ORACLE_MODEL_DIR, "served_model_name": "my-model"}),
    ("device-index", "sm90", LLAMA, None, {"device": "cuda:0"}, {}, {"device": "cuda"}),
    ("device-index-rocm", "gfx942", LLAMA, None, {"device": "cuda:3"}, {}, {"device": "cuda"}),
    ("typed-json", "sm90", LLAMA, None,
     {"custom_weight_loader": ["my.loader"], "mm_process_config": {"image": {"max_pixels": 1024}}}, {},
     {"custom_weight_loader": ["my.loader"], "mm_process_config": {"image": {"max_pixels": 1024}}}),
    ("grpc-threads-env", "sm90", LLAMA, None, {}, {"SGLANG_GRPC_WORKER_THREADS": "9"}, {}),  # see below: "9"
    ("kv-splits-cuda", "sm90", LLAMA, None, {"triton_attention_num_kv_splits": 4}, {},
     {"triton_attention_num_kv_splits": 4}),
    ("kv-splits-rocm", "gfx942", LLAMA, None, {"triton_attention_num_kv_splits": 4}, {},
     {"triton_attention_num_kv_splits": 16}),
    ("kv-splits-aiter", "gfx942", LLAMA, None, {}, {"SGLANG_USE_AITER": "1"}, {"triton_attention_num_kv_splits": 16}),
    # deterministic inference: with TP on CUDA the custom and symmetric-memory all-reduces are off
    ("deterministic-tp1", "sm90", LLAMA, None, {**DETERMINISTIC}, {},
     {"disable_custom_all_reduce": False, "enable_torch_symm_mem": False}),
    ("deterministic-tp2", "sm90", LLAMA, None, {**DETERMINISTIC, "tp_size": 2}, {},
     {"disable_custom_all_reduce": True, "enable_torch_symm_mem": False}),
    ("deterministic-tp4-symm-mem", "sm90", LLAMA, None, {**DETERMINISTIC, "tp_size": 4, "enable_torch_symm_mem": True},
     {}, {"disable_custom_all_reduce": True, "enable_torch_symm_mem": False}),
    ("deterministic-rocm-tp4", "gfx942", LLAMA, None, {**DETERMINISTIC, "tp_size": 4}, {},
     {"disable_custom_all_reduce": False, "enable_torch_symm_mem": False}),
    ("deterministic-rocm-tp2-no-custom", "gfx942", LLAMA, None,
     {**DETERMINISTIC, "tp_size": 2, "disable_custom_all_reduce": True}, {}, {"disable_custom_all_reduce": True}),
    ("symm-mem-kept", "sm90", LLAMA, None, {"enable_torch_symm_mem": True, "tp_size": 2}, {},
     {"enable_torch_symm_mem": True}),
    # HiCache: a typed host-pool size turns the host-memory auto-sizing off
    ("hicache", "sm90", LLAMA, None, {"enable_hierarchical_cache": True}, {},
     {"hicache_host_memory_fraction": 0.8, "hicache_ratio": 2.0}),
    ("hicache-ratio", "sm90", LLAMA, None, {"enable_hierarchical_cache": True, "hicache_ratio": 3.0}, {},
     {"hicache_host_memory_fraction": None, "hicache_ratio": 3.0}),
    ("hicache-size", "sm90", LLAMA, None, {"enable_hierarchical_cache": True, "hicache_size": 64}, {},
     {"hicache_host_memory_fraction": None, "hicache_size": 64}),
    ("hicache-fraction", "sm90", LLAMA, None, {"enable_hierarchical_cache": True, "hicache_host_memory_fraction": 0.5},
     {}, {"hicache_host_memory_fraction": 0.5}),
    ("hicache-size-decode", "sm90", LLAMA, None, {"hicache_size": 8, "disaggregation_mode": "decode"}, {},
     {"hicache_host_memory_fraction": None}),
    # PD: Mooncake's RDMA devices (auto discovery unless typed; none over TCP), the encoder transfer
    ("prefill", "sm90", LLAMA, None, {"disaggregation_mode": "prefill"}, {}, {"disaggregation_ib_device": None}),
    ("decode-dsv3", "sm90", DSV3, None, {"disaggregation_mode": "decode", "tp_size": 8}, {},
     {"disaggregation_ib_device": None}),
    ("decode-mooncake-tcp", "sm90", LLAMA, None,
     {"disaggregation_mode": "decode", "disaggregation_transfer_backend": "mooncake_tcp"}, {},
     {"disaggregation_ib_device": None}),
    ("encoder-mooncake", "sm90", LLAMA, None, {"encoder_transfer_backend": "mooncake"}, {},
     {"encoder_transfer_backend": "mooncake", "disaggregation_ib_device": None}),
    ("encoder-auto-tp2", "sm90", LLAMA, None, {"encoder_transfer_backend": "auto", "tp_size": 2}, {},
     {"encoder_transfer_backend": "zmq_to_scheduler"}),
    ("kimi-k3-tp8", "sm90", KIMI_K3, None, {"tp_size": 8}, {}, {"encoder_transfer_backend": "zmq_to_tokenizer"}),
    ("kimi-k3-tp1", "sm100", KIMI_K3, None, {}, {}, {"encoder_transfer_backend": "zmq_to_scheduler"}),
    ("kimi-k3-rocm-tp8", "gfx942", KIMI_K3, None, {"tp_size": 8}, {},
     {"encoder_transfer_backend": "zmq_to_tokenizer", "triton_attention_num_kv_splits": 16}),
    # speculative decoding: MTP checkpoints draft with themselves; a typed draft quantization is recorded
    ("eagle-llama", "sm90", LLAMA, "EAGLE", {"speculative_algorithm": "EAGLE"}, {},
     {"speculative_draft_model_path": ORACLE_DRAFT_DIR, "_speculative_draft_quantization_explicitly_set": False}),
    ("eagle3-draft-fp8", "sm90", LLAMA, "EAGLE3",
     {"speculative_algorithm": "EAGLE3", "speculative_draft_model_quantization": "fp8"}, {},
     {"_speculative_draft_quantization_explicitly_set": True}),
    ("eagle-draft-unquant", "sm90", LLAMA, "EAGLE",
     {"speculative_algorithm": "EAGLE", "speculative_draft_model_quantization": "unquant"}, {},
     {"_speculative_draft_quantization_explicitly_set": True}),
    ("eagle-dsv3", "sm90", DSV3, None, {"speculative_algorithm": "EAGLE", "tp_size": 8}, {},
     {"speculative_draft_model_path": MODEL}),
    ("nextn-dsv3-b200", "sm100", DSV3, None, {"speculative_algorithm": "NEXTN", "tp_size": 8}, {},
     {"speculative_draft_model_path": MODEL}),
    ("nextn-dsv3-rocm", "gfx942", DSV3, None, {"speculative_algorithm": "NEXTN", "tp_size": 8}, {},
     {"speculative_draft_model_path": MODEL}),
    ("eagle-dsv32-rocm", "gfx942", DSV32, None, {"speculative_algorithm": "EAGLE", "tp_size": 8}, {},
     {"speculative_draft_model_path": MODEL}),
    ("eagle-glm45", "sm90", GLM45, None, {"speculative_algorithm": "EAGLE", "tp_size": 8}, {},
     {"speculative_draft_model_path": MODEL}),
    ("ngram", "sm90", LLAMA, None, {"speculative_algorithm": "NGRAM"}, {}, {"speculative_draft_model_path": None}),
    # decode context parallelism: DSA models replicate the Q projection with an all-to-all reduction
    ("dcp-dsv32-h100", "sm90", DSV32, None, {"tp_size": 8, "dcp_size": 2}, {},
     {"dcp_replicate_q_proj": True, "dcp_comm_backend": "a2a"}),
    ("dcp-dsv32-b200", "sm100", DSV32, None, {"tp_size": 8, "dcp_size": 2}, {},
     {"dcp_replicate_q_proj": True, "dcp_comm_backend": "fi_a2a"}),
    ("dcp-dsv32-rocm", "gfx942", DSV32, None, {"tp_size": 8, "dcp_size": 2}, {}, {"dcp_replicate_q_proj": True}),
    ("dcp-dsv32-ag-rs", "sm100", DSV32, None, {"tp_size": 8, "dcp_size": 2, "dcp_comm_backend": "ag_rs"}, {},
     {"dcp_replicate_q_proj": None}),
    ("dcp-dsv32-typed-off", "sm100", DSV32, None, {"tp_size": 8, "dcp_size": 2, "dcp_replicate_q_proj": False}, {},
     {"dcp_replicate_q_proj": False}),
    ("dcp-glm5", "sm100", GLM5, None, {"tp_size": 8, "dcp_size": 2}, {}, {"dcp_replicate_q_proj": True}),
    ("dcp-dsv3-not-dsa", "sm100", DSV3, None, {"tp_size": 8, "dcp_size": 2}, {}, {"dcp_replicate_q_proj": None}),
    # the SWA pool: DeepSeek V4's override sets the ratio, before SGLang records whether it was set
    ("dsv4-h200", "sm90", DSV4, None, {"tp_size": 8}, {},
     {"swa_full_tokens_ratio": 0.1, "_swa_full_tokens_ratio_explicitly_set": True, "dsv4_attn_backend": "flashmla"}),
    ("dsv4-b200-prefill", "sm100", DSV4, None, {"tp_size": 8, "disaggregation_mode": "prefill"}, {},
     {"swa_full_tokens_ratio": 0.1, "dsv4_attn_backend": "flashmla"}),
    ("dsv4-typed-ratio", "sm100", DSV4, None, {"tp_size": 8, "swa_full_tokens_ratio": 0.5}, {},
     {"swa_full_tokens_ratio": 0.5, "_swa_full_tokens_ratio_explicitly_set": True}),
    ("dsv4-typed-trtllm", "sm100", DSV4, None, {"tp_size": 8, "dsv4_attn_backend": "trtllm"}, {},
     {"dsv4_attn_backend": "trtllm"}),
    ("gpt-oss-typed-ratio", "sm90", GPT_OSS, None, {"swa_full_tokens_ratio": 0.3}, {},
     {"swa_full_tokens_ratio": 0.3, "_swa_full_tokens_ratio_explicitly_set": True}),
    ("gpt-oss", "sm90", GPT_OSS, None, {}, {}, {"swa_full_tokens_ratio": None}),
]

#: (case id, platform, model config, typed args, environment, rule that refuses, phrase of SGLang's message)
REFUSED = [
    ("deterministic-rocm-tp4-no-custom", "gfx942", LLAMA,
     {**DETERMINISTIC, "tp_size": 4, "disable_custom_all_reduce": True}, {},
     "conflict.deterministic.rocm-custom-all-reduce", "--disable-custom-all-reduce cannot be combined"),
    ("hicache-fraction-over-one", "sm90", LLAMA, {"hicache_ratio": 1.5, "hicache_host_memory_fraction": 1.5}, {},
     "conflict.hicache.host-memory-fraction-range", "--hicache-host-memory-fraction must be in (0, 1]."),
    ("hicache-fraction-zero", "sm90", LLAMA, {"hicache_host_memory_fraction": 0.0}, {},
     "conflict.hicache.host-memory-fraction-range", "--hicache-host-memory-fraction must be in (0, 1]."),
    ("swa-ratio-zero", "sm90", LLAMA, {"swa_full_tokens_ratio": 0.0}, {},
     "conflict.memory.swa-ratio-range", "--swa-full-tokens-ratio should be in range (0, 1.0]."),
    ("swa-ratio-over-one", "sm90", GPT_OSS, {"swa_full_tokens_ratio": 1.5}, {},
     "conflict.memory.swa-ratio-range", "--swa-full-tokens-ratio should be in range (0, 1.0]."),
    ("replicate-q-no-dcp", "sm100", DSV32, {"tp_size": 8, "dcp_replicate_q_proj": True}, {},
     "conflict.declared.dcp-replicate-q-proj-needs-dcp", "--dcp-replicate-q-proj requires --dcp-size > 1."),
    ("replicate-q-ag-rs", "sm100", DSV32,
     {"tp_size": 8, "dcp_size": 2, "dcp_comm_backend": "ag_rs", "dcp_replicate_q_proj": True}, {},
     "conflict.declared.dcp-replicate-q-proj-needs-a2a", "only applies to the a2a/fi_a2a DCP communication backend"),
    ("dsv4-trtllm-h200", "sm90", DSV4, {"tp_size": 8, "dsv4_attn_backend": "trtllm"}, {},
     "conflict.declared.dsv4-trtllm-sm100", "--dsv4-attn-backend trtllm requires an SM100/SM103"),
    ("dsv4-trtllm-pd", "sm100", DSV4, {"tp_size": 8, "dsv4_attn_backend": "trtllm", "disaggregation_mode": "decode"},
     {}, "conflict.declared.dsv4-trtllm-pd", "--dsv4-attn-backend trtllm does not support PD disaggregation"),
    ("dsv4-trtllm-no-chunks", "sm100", DSV4, {"tp_size": 8, "dsv4_attn_backend": "trtllm", "chunked_prefill_size": -1},
     {}, "conflict.declared.dsv4-trtllm-chunked-prefill", "--dsv4-attn-backend trtllm requires chunked prefill"),
    ("dsv4-mega-not-v41", "sm100", DSV4, {"tp_size": 8, "dsv4_attn_backend": "flashmla_mega"}, {},
     "conflict.declared.dsv4-flashmla-mega", "--dsv4-attn-backend flashmla_mega requires DeepSeek-V4.1"),
]


def _expected(value):
    return ORACLE_MODEL_DIR if value == MODEL else value


def _args(args, draft):
    """The typed args, with the draft checkpoint's folder (where the oracle writes the draft head) for a draft."""
    return {"speculative_draft_model_path": ORACLE_DRAFT_DIR, **args} if draft else dict(args)


def _resolve(platform, model, draft, args, env, files=None):
    return resolve_request(get_engine(), platform=platform, model=copy.deepcopy(model),
                           args={"model_path": ORACLE_MODEL_DIR, **_args(args, draft)},
                           draft_model=DRAFTS[draft] if draft else None, env=env or None,
                           model_files=copy.deepcopy(files), fixes=False)


@pytest.mark.parametrize("case, platform, model, draft, args, env, expected", CASES, ids=[c[0] for c in CASES])
def test_declared_fields(case, platform, model, draft, args, env, expected):
    res = _resolve(platform, model, draft, args, env)
    assert not res.conflicts, [c.message for c in res.conflicts]
    assert {f: res.values[f] for f in expected} == {f: _expected(v) for f, v in expected.items()}


@pytest.mark.parametrize("case, platform, model, args, env, rule, phrase", REFUSED, ids=[c[0] for c in REFUSED])
def test_refused(case, platform, model, args, env, rule, phrase):
    res = _resolve(platform, model, None, args, env)
    assert rule in {c.rule.id for c in res.conflicts}, [c.rule.id for c in res.conflicts]


def test_the_seed_is_named_as_decided_at_start_up():
    res = _resolve("sm90", LLAMA, None, {}, {})
    assert res.values["random_seed"] is None and "random_seed" in res.not_decided
    assert "random_seed" in {entry["field"] for entry in res.to_dict()["not_decided"]}
    typed = _resolve("sm90", LLAMA, None, {"random_seed": 3}, {})
    assert typed.values["random_seed"] == 3 and "random_seed" not in typed.not_decided


def test_the_grpc_worker_threads_follow_the_environment():
    """SGLang copies SGLANG_GRPC_WORKER_THREADS (4 unset) into grpc_worker_threads: given, it is reported as the
    text given (a {from:} copy keeps the variable's text; SGLang's value is the int 9)."""
    assert _resolve("sm90", LLAMA, None, {}, {}).values["grpc_worker_threads"] == 4
    assert _resolve("sm90", LLAMA, None, {}, {"SGLANG_GRPC_WORKER_THREADS": "9"}).values["grpc_worker_threads"] == "9"


def test_the_copies_of_the_model_path_without_one():
    """With only a config or an architecture, SGLang's --model-path is unknown: its copies are null."""
    res = resolve({}, platform="h100", model_arch="LlamaForCausalLM")
    assert (res.values["tokenizer_path"], res.values["served_model_name"]) == (None, None)
    res = resolve({"model_path": "meta-llama/Llama-3.1-8B-Instruct"}, platform="h100")
    assert res.values["tokenizer_path"] == res.values["served_model_name"] == "meta-llama/Llama-3.1-8B-Instruct"


def test_the_json_answer_reports_the_fields():
    out, err = io.StringIO(), io.StringIO()
    code = main(["--platform", "mi300x", "--model-path", "meta-llama/Llama-3.1-8B-Instruct", "--device", "cuda:1",
                 "--allowed-media-domains", "a.com", "--format", "json"], out, err)
    answer = json.loads(out.getvalue())
    assert code == 0, err.getvalue()
    values = answer["values"]
    assert values["device"] == "cuda" and values["triton_attention_num_kv_splits"] == 16
    assert values["allowed_media_domains"] == ["a.com"] and values["mm_process_config"] == {}
    assert values["tokenizer_path"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert [e["field"] for e in answer["not_decided"]] == ["random_seed"]


def test_the_launch_line_leaves_sglang_its_own_copies():
    """The copies of --model-path are SGLang's to make (never spelled); the seed is never invented; a typed
    host-pool ratio keeps turning the host-memory fraction off when the line is run again."""
    from resolver.launch_line import launch_argv

    res = resolve({"hicache_ratio": 3.0, "enable_hierarchical_cache": True,
                   "model_path": "meta-llama/Llama-3.1-8B-Instruct"}, platform="sm90")
    argv = launch_argv(res)
    never = {"--tokenizer-path", "--served-model-name", "--random-seed", "--hicache-host-memory-fraction"}
    assert not never & set(argv)
    out, err = io.StringIO(), io.StringIO()
    assert main(["--platform", "h100", *argv, "--format", "json"], out, err) == 0, err.getvalue()
    values = json.loads(out.getvalue())["values"]
    assert values["hicache_host_memory_fraction"] is None and values["hicache_ratio"] == 3.0
    assert (values["tokenizer_path"], values["device"]) == (res.values["tokenizer_path"], res.values["device"])


def test_a_typed_ib_device_is_reported_as_typed_and_dropped_over_tcp():
    """SGLang checks typed RDMA devices against the machine (not modelled); over TCP it uses none."""
    res = _resolve("sm90", LLAMA, None, {"disaggregation_mode": "decode", "disaggregation_ib_device": "mlx5_0"}, {})
    assert res.values["disaggregation_ib_device"] == "mlx5_0"
    res = _resolve("sm90", LLAMA, None, {"disaggregation_mode": "decode", "disaggregation_ib_device": "mlx5_0",
                                         "disaggregation_transfer_backend": "mooncake_tcp"}, {})
    assert res.values["disaggregation_ib_device"] is None


def test_refusals_are_conflicts():
    with pytest.raises(ConflictError):
        resolve({"hicache_host_memory_fraction": 2.0}, platform="h100", model_arch="LlamaForCausalLM")


def _requests(cases):
    out = []
    for case, platform, model, draft, args, env, *rest in cases:
        r = {"id": case, "platform": platform, "model": model, "args": _args(args, draft)}
        if rest and isinstance(rest[0], dict) and "hf_quant_config.json" in rest[0]:
            r["model_files"] = rest[0]
        if draft:
            r["draft_model"] = DRAFTS[draft]
        if env:
            r["env"] = env
        out.append(r)
    return out


def test_the_table_is_sglangs_answer():
    """Ask SGLang 0.5.23 (the oracle) the whole table again: every value and every refusal."""
    python = oracle_python()
    refused = [(c, p, m, None, a, e) for c, p, m, a, e, _rule, _phrase in REFUSED]
    answers = {rid: a["sglang"] for rid, a in ask_oracle(_requests(CASES + refused), python, ORACLE).items()}
    defaults = {dest: a.default for dest, a in flag_catalogue().by_dest.items()}
    for case, _platform, _model, draft, args, env, expected in CASES:
        answer = answers[case]
        assert answer["status"] == "resolved", (case, answer)
        got = {f: sglang_value(answer, {"args": _args(args, draft)}, f, defaults) for f in expected}
        if got.get("random_seed") == RANDOM_MARK:
            got["random_seed"] = None  # SGLang drew one: the resolver names it under not_decided
        assert got == {f: _expected(v) for f, v in expected.items()}, case
        if env.get("SGLANG_GRPC_WORKER_THREADS"):
            assert answer["values"]["grpc_worker_threads"] == int(env["SGLANG_GRPC_WORKER_THREADS"])
    for case, *_rest, phrase in REFUSED:
        assert answers[case]["status"] == "error" and phrase in answers[case]["message"], (case, answers[case])


#: fields SGLang declares that the resolver does not report under their own name, and why (each must still be
#: missing: an entry is removed once the field is reported)
NOT_REPORTED = {
    "cuda_graph_config": "reported split per phase as the cuda_graph_config_* fields (rules/cuda_graph_config.yaml)",
}

#: launches drawn across the grid groups (speculative, MoE, parallel, PD/HiCache, quantization, recipes) and the
#: platforms: with CASES, the fixed set whose declared fields the resolver must report
VARIED = [
    ("v-qwen-moe-ep", "sm90", QWEN_MOE, None, {"tp_size": 4, "ep_size": 4, "moe_a2a_backend": "deepep"}, {}),
    ("v-qwen-moe-rocm", "gfx942", QWEN_MOE, None, {"tp_size": 2}, {}),
    ("v-dsv3-dp-attention", "sm90", DSV3, None, {"tp_size": 8, "dp_size": 8, "enable_dp_attention": True}, {}),
    ("v-dsv3-fp8-kv-b200", "sm100", DSV3, None, {"tp_size": 8, "kv_cache_dtype": "fp8_e4m3"}, {}),
    ("v-dsv32-h200", "sm90", DSV32, None, {"tp_size": 8}, {}),
    ("v-gpt-oss-b200", "sm100", GPT_OSS, None, {"tp_size": 2}, {}),
    ("v-qwen3-pp", "sm90", QWEN3, None, {"tp_size": 2, "pp_size": 2}, {}),
    ("v-llama-sm120", "sm120", LLAMA, None, {"kv_cache_dtype": "fp8_e4m3"}, {}),
    ("v-llama-dflash", "sm90", QWEN3, "DFLASH", {"speculative_algorithm": "DFLASH"}, {}),
    ("v-llama-standalone", "sm90", LLAMA, "STANDALONE", {"speculative_algorithm": "STANDALONE"}, {}),
    ("v-hicache-buffer-only", "sm90", LLAMA, None,
     {"enable_hierarchical_cache": True, "hicache_storage_backend": "file", "hicache_host_memory_mode": "buffer_only"},
     {}),
    ("v-decode-host-receive", "sm90", LLAMA, None,
     {"disaggregation_mode": "decode", "disaggregation_decode_host_receive_threshold": 0.5}, {}),
    ("v-rl-deterministic", "sm90", LLAMA, None, {"rl_on_policy_target": "fsdp", "tp_size": 2}, {}),
    ("v-qwen-next", "sm90", QWEN_NEXT, None, {"tp_size": 4}, {}),
    ("v-kimi-k3-b200", "sm100", KIMI_K3, None, {"tp_size": 8}, {}),
    ("v-glm5-eagle-rocm", "gfx942", GLM5, None, {"speculative_algorithm": "EAGLE", "tp_size": 8}, {}),
    ("v-dflash-adaptive-rocm", "gfx942", QWEN3, "DFLASH", {"speculative_algorithm": "DFLASH",
                                                         "speculative_adaptive": True}, {}),
    ("v-dsv3-eplb-rocm", "gfx942", DSV3, None,
     {"tp_size": 8, "ep_size": 8, "attn_dp_size": 8, "moe_a2a_backend": "deepep", "enable_eplb": True,
      "ep_num_redundant_experts": 32}, {}),
    ("v-dsv3-prefill-cp", "sm90", DSV3, None,
     {"tp_size": 16, "dp_size": 2, "ep_size": 8, "attn_cp_size": 4, "enable_prefill_cp": True,
      "cp_strategy": "interleave", "nnodes": 2, "node_rank": 1, "dist_init_addr": "10.0.0.1:5000",
      "chunked_prefill_size": -1}, {}),
    ("v-prefill-hicache-direct", "sm100", QWEN_MOE, None,
     {"disaggregation_mode": "prefill", "enable_hierarchical_cache": True, "hicache_io_backend": "kernel",
      "hicache_mem_layout": "page_first_direct", "page_size": 1}, {}),
    ("v-tool-call-parser", "sm90", QWEN_MOE, None, {"tool_call_parser": "qwen25"}, {}),
    ("v-r1-fp4-nvfp4-kv", "sm120", R1_FP4, None, {"kv_cache_dtype": "nvfp4", "attention_backend": "flashinfer"}, {},
     R1_FP4_FILES),
    ("v-r1-fp4-mori", "sm100", R1_FP4, None, {"tp_size": 16, "ep_size": 16, "attn_dp_size": 16, "nnodes": 2,
                                              "moe_a2a_backend": "mori"}, {}, R1_FP4_FILES),
]


def test_every_field_sglang_declares_is_reported():
    """The union of the fields SGLang declares over CASES and VARIED is reported in the resolver's values
    (each launch resolved with SGLang's --model-path, as SGLang has it)."""
    python = oracle_python()
    launches = [(*c[:6],) for c in CASES] + VARIED
    answers = {rid: a["sglang"] for rid, a in ask_oracle(_requests(launches), python, ORACLE).items()}
    declared: dict[str, str] = {}
    reported: set[str] = set()
    for case, platform, model, draft, args, env, *files in launches:
        answer = answers[case]
        if answer["status"] != "resolved":
            continue
        res = _resolve(platform, model, draft, args, env, files[0] if files else None)
        for field in answer["values"]:
            declared.setdefault(field, case)
        reported |= set(res.values)
    missing = {f: case for f, case in declared.items() if f not in reported}
    assert set(missing) <= set(NOT_REPORTED), {f: c for f, c in missing.items() if f not in NOT_REPORTED}
    assert set(NOT_REPORTED) <= set(missing), f"reported now: {set(NOT_REPORTED) - set(missing)}"
    assert len(declared) > 80  # the set is varied: SGLang declares more than 80 fields over it
