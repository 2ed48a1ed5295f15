"""SGLang 0.5.23 checks the resolver used to miss (issue 24, item 3): launches SGLang refuses that were
answered "resolved".  For each check, launches that must conflict (with the rule that says so and the words
of SGLang's refusal) and near-misses that must resolve, on several models and platforms.

The table is a plain expectation of the resolver; ``test_the_table_is_sglangs_answer`` asks SGLang itself (the
oracle, tests/oracle.py) the same launches when its venv is there, and is skipped otherwise.
"""
from __future__ import annotations

import copy
import os
from typing import Any

import pytest

from resolver.api import get_engine, resolve_request
from resolver.model_source import catalogue

from .conftest import CATALOGUE
from .oracle import ORACLE, oracle_python

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
QWEN_MOE = "Qwen/Qwen3-30B-A3B"
QWEN = "Qwen/Qwen3-8B"
DSV3 = "deepseek-ai/DeepSeek-V3"
DSV32 = "deepseek-ai/DeepSeek-V3.2"
FP4 = "nvidia/DeepSeek-R1-FP4"  # a ModelOpt NVFP4 export: the quantization is in hf_quant_config.json
GLM5 = "zai-org/GLM-5"
OSS = "openai/gpt-oss-20b"
FILES = {e.id: dict(e.files) for e in catalogue() if getattr(e, "files", None)}


def _with_quant(quantization_config: dict[str, Any]) -> dict[str, Any]:
    """Llama 3.1 8B's config.json with a checkpoint quantization."""
    config = copy.deepcopy(CATALOGUE[LLAMA])
    config["quantization_config"] = quantization_config
    return config


AWQ = _with_quant({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"})
GPTQ = _with_quant({"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": True, "desc_act": False})
COMPRESSED = _with_quant({"quant_method": "compressed-tensors", "format": "float-quantized", "config_groups": {}})
W4AFP8 = _with_quant({"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION",
                      "quantized_layers": {"model.layers.0.mlp": {"quant_algo": "FP8"}}})

# (id, platform, model: catalogue id or config, args, env, the rule that refuses or None, SGLang's words)
CASES: list[tuple[str, str, Any, dict[str, Any], dict[str, str], str | None, str]] = [
    # --- 1. attention context parallelism (parallel_hook.py handle_context_parallelism) ------------------
    ("attn-cp-off-tp", "sm90", LLAMA, {"tp_size": 8, "attn_cp_size": 3}, {},
     "conflict.parallel.tp-attn-cp", "tp_size must be divisible by attn_cp_size"),
    ("attn-cp-off-tp-rocm", "gfx942", QWEN, {"tp_size": 6, "attn_cp_size": 4}, {},
     "conflict.parallel.tp-attn-cp", "tp_size must be divisible by attn_cp_size"),
    ("attn-cp-off-tp-dsa-interleave", "sm90", DSV32,
     {"tp_size": 8, "attn_cp_size": 3, "enable_prefill_cp": True, "cp_strategy": "interleave"}, {},
     "conflict.parallel.tp-attn-cp", "tp_size must be divisible by attn_cp_size"),
    ("attn-cp-divides", "sm90", LLAMA, {"tp_size": 8, "attn_cp_size": 2}, {}, None, ""),
    # the DSA prefill-CP layout spans the TP group itself: the typed width 1 is not what SGLang checks
    ("attn-cp-dsa-layout", "sm90", DSV32,
     {"tp_size": 8, "enable_prefill_cp": True, "cp_strategy": "interleave"}, {}, None, ""),
    ("attn-dp-cp-off-tp", "sm90", LLAMA, {"tp_size": 8, "attn_cp_size": 4, "attn_dp_size": 4}, {},
     "conflict.parallel.tp-attn-dp-cp", "tp_size must be divisible by attn_dp_size * attn_cp_size"),
    ("attn-dp-cp-divide", "sm90", LLAMA, {"tp_size": 8, "attn_cp_size": 2, "attn_dp_size": 4}, {}, None, ""),
    ("cp-aiter-fusion-glm5", "gfx942", GLM5, {"tp_size": 8, "attn_cp_size": 2}, {},
     "conflict.parallel.cp-aiter-allreduce-fusion", "Aiter allreduce fusion is not supported with context"),
    ("cp-aiter-fusion-typed", "gfx942", LLAMA,
     {"tp_size": 8, "attn_cp_size": 2, "enable_aiter_allreduce_fusion": True}, {},
     "conflict.parallel.cp-aiter-allreduce-fusion", "Aiter allreduce fusion is not supported with context"),
    ("cp-rocm-no-fusion", "gfx942", LLAMA, {"tp_size": 8, "attn_cp_size": 2}, {}, None, ""),
    # --- 2. --quantization against the checkpoint (model_config.py _verify_quantization) --------------------
    ("quant-fp8-ckpt-awq", "sm90", DSV3, {"tp_size": 8, "quantization": "awq"}, {},
     "conflict.quantization.checkpoint-mismatch", "Quantization method specified in the model config (fp8)"),
    ("quant-mxfp4-ckpt-fp8", "sm90", OSS, {"quantization": "fp8"}, {},
     "conflict.quantization.checkpoint-mismatch", "model config (mxfp4) does not match"),
    ("quant-awq-ckpt-fp8", "sm100", AWQ, {"quantization": "fp8"}, {},
     "conflict.quantization.checkpoint-mismatch", "model config (awq) does not match"),
    ("quant-compressed-modelopt-fp4", "sm90", COMPRESSED, {"quantization": "modelopt_fp4"}, {},
     "conflict.quantization.checkpoint-mismatch", "model config (compressed-tensors) does not match"),
    ("quant-w4afp8-modelopt", "sm90", W4AFP8, {"quantization": "modelopt"}, {},
     "conflict.quantization.checkpoint-mismatch", "model config (w4afp8) does not match"),
    ("quant-nvfp4-ckpt-online", "sm100", FP4, {"tp_size": 8, "quantization": "nvfp4_online"}, {},
     "conflict.quantization.checkpoint-mismatch", "model config (modelopt_fp4) does not match"),
    ("quant-fp8-ckpt-modelopt-fp4", "sm90", DSV3, {"tp_size": 8, "quantization": "modelopt_fp4"}, {}, None, ""),
    ("quant-fp8-ckpt-unquant", "sm90", DSV3, {"tp_size": 8, "quantization": "unquant"}, {}, None, ""),
    ("quant-nvfp4-ckpt-detects", "sm100", FP4, {"tp_size": 8, "quantization": "awq"}, {}, None, ""),
    ("quant-compressed-w8a8", "sm90", COMPRESSED, {"quantization": "w8a8_int8"}, {}, None, ""),
    ("quant-awq-marlin", "sm90", AWQ, {"quantization": "awq_marlin"}, {}, None, ""),
    ("quant-awq-wna16", "sm90", AWQ, {"quantization": "moe_wna16"}, {}, None, ""),
    ("quant-fp8-ckpt-online", "sm100", DSV3, {"tp_size": 8, "quantization": "nvfp4_online"}, {}, None, ""),
    # plain GPTQ is not registered on CUDA or ROCm
    ("quant-gptq-typed", "sm90", LLAMA, {"quantization": "gptq"}, {},
     "conflict.quantization.not-registered", "Unknown quantization method: gptq"),
    ("quant-gptq-ckpt-gptq", "sm100", GPTQ, {"quantization": "gptq"}, {},
     "conflict.quantization.not-registered", "Unknown quantization method: gptq"),
    ("quant-gptq-ckpt-marlin", "sm90", GPTQ, {"quantization": "gptq_marlin"}, {}, None, ""),
    ("quant-gptq-ckpt-unset", "sm90", GPTQ, {}, {}, None, ""),
    ("quant-mxfp4-typed-gfx942", "gfx942", LLAMA, {"quantization": "mxfp4"}, {},
     "conflict.quantization.mxfp4-platform", "Unknown quantization method: mxfp4"),
    ("quant-mxfp4-typed-gfx950", "gfx950", LLAMA, {"quantization": "mxfp4"}, {}, None, ""),
    # --- 3. MoE data parallelism (parallel_hook.py handle_context_parallelism) --------------------------
    ("moe-dp-off-tp", "sm90", LLAMA, {"tp_size": 8, "moe_dp_size": 3}, {},
     "conflict.parallel.tp-moe-dp", "tp_size must be divisible by moe_dp_size"),
    ("moe-dp-over-tp", "gfx942", QWEN_MOE, {"tp_size": 8, "moe_dp_size": 16}, {},
     "conflict.parallel.tp-moe-dp", "tp_size must be divisible by moe_dp_size"),
    ("moe-dp-without-cp", "sm90", LLAMA, {"tp_size": 8, "moe_dp_size": 2}, {},
     "conflict.parallel.attn-cp-moe-dp", "attn_cp_size != moe_dp_size is only supported when moe_dp_size == 1"),
    ("moe-dp-ep-short", "sm90", QWEN_MOE, {"tp_size": 8, "moe_dp_size": 2, "attn_cp_size": 2, "ep_size": 2}, {},
     "conflict.parallel.moe-dp-ep", "ep_size * moe_dp_size must be equal to tp_size"),
    ("moe-dp-pp", "sm90", LLAMA, {"tp_size": 8, "moe_dp_size": 2, "attn_cp_size": 2, "pp_size": 2}, {},
     "conflict.parallel.moe-dp-pp", "PP is not supported with context parallelism"),
    ("moe-dp-with-cp", "sm90", LLAMA, {"tp_size": 8, "moe_dp_size": 2, "attn_cp_size": 2}, {}, None, ""),
    ("moe-dp-ep-spans", "sm90", QWEN_MOE, {"tp_size": 8, "moe_dp_size": 2, "attn_cp_size": 2, "ep_size": 4}, {},
     None, ""),
    ("moe-dp-dsa-layout", "sm90", DSV32,
     {"tp_size": 8, "moe_dp_size": 8, "enable_prefill_cp": True, "cp_strategy": "interleave"}, {}, None, ""),
    # DeepSeek V3's MLA prefill CP spans the TP group too, and gives expert parallelism (DeepEP) the whole TP
    # group whatever was typed: no room left for MoE data parallelism
    ("moe-dp-mla-layout", "sm90", DSV3,
     {"tp_size": 8, "moe_dp_size": 8, "enable_prefill_cp": True, "cp_strategy": "interleave"}, {},
     "conflict.parallel.moe-dp-ep", "ep_size * moe_dp_size must be less than or equal to tp_size"),
    ("moe-dp-mla-layout-narrow", "sm90", DSV3,
     {"tp_size": 8, "moe_dp_size": 2, "enable_prefill_cp": True, "cp_strategy": "interleave"}, {},
     "conflict.parallel.moe-dp-ep", "ep_size * moe_dp_size must be less than or equal to tp_size"),
    ("mla-layout", "sm90", DSV3, {"tp_size": 8, "enable_prefill_cp": True, "cp_strategy": "interleave"}, {},
     None, ""),
    ("mla-layout-deepep-v2", "sm90", DSV3,
     {"tp_size": 8, "enable_prefill_cp": True, "cp_strategy": "interleave", "moe_a2a_backend": "deepep_v2"}, {},
     None, ""),
    # --- 4. the context length (model_config.py _derive_context_length) --------------------------------
    ("context-over-llama", "sm90", LLAMA, {"context_length": 131073}, {},
     "conflict.serving.context-length-over-model", "is greater than the derived context_length (131072)"),
    ("context-over-dsv3", "sm90", DSV3, {"tp_size": 8, "context_length": 163841}, {},
     "conflict.serving.context-length-over-model", "is greater than the derived context_length (163840)"),
    ("context-over-qwen-rocm", "gfx942", QWEN, {"context_length": 1000000}, {},
     "conflict.serving.context-length-over-model", "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"),
    ("context-at-model", "sm90", LLAMA, {"context_length": 131072}, {}, None, ""),
    ("context-over-allowed", "sm90", LLAMA, {"context_length": 1000000},
     {"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1"}, None, ""),
    ("context-over-in-ci", "gfx942", QWEN, {"context_length": 1000000}, {"SGLANG_IS_IN_CI": "true"}, None, ""),
    ("context-over-not-allowed", "sm90", LLAMA, {"context_length": 1000000},
     {"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "0"},
     "conflict.serving.context-length-over-model", "is greater than the derived context_length"),
    # --- 5. priority scheduling (validation_hook.py check_server_args) ----------------------------------
    ("priority-lpm", "sm90", LLAMA, {"enable_priority_scheduling": True, "schedule_policy": "lpm"}, {},
     "conflict.serving.priority-schedule-policy", "schedule_policy must be 'fcfs' or 'lof'"),
    ("priority-hrrn-rocm", "gfx942", QWEN, {"enable_priority_scheduling": True, "schedule_policy": "hrrn"}, {},
     "conflict.serving.priority-schedule-policy", "schedule_policy must be 'fcfs' or 'lof'"),
    ("priority-lof", "sm90", LLAMA, {"enable_priority_scheduling": True, "schedule_policy": "lof"}, {}, None, ""),
    ("priority-default-policy", "sm100", DSV3, {"tp_size": 8, "enable_priority_scheduling": True}, {}, None, ""),
    ("no-priority-lpm", "sm90", LLAMA, {"schedule_policy": "lpm"}, {}, None, ""),
    # --- 6. the LoRA MoE runners (lora_hook.py check_lora_moe_runner_args) ------------------------------
    ("lora-runner-bare", "sm90", QWEN_MOE, {"moe_runner_backend": "lora_triton"}, {},
     "conflict.moe.lora-runner-backend", "requires --enable-lora (or --lora-paths)"),
    ("lora-runner-csgmv", "sm100", LLAMA,
     {"moe_runner_backend": "lora_marlin", "enable_lora": True, "max_lora_rank": 16,
      "lora_target_modules": ["q_proj"]}, {},
     "conflict.moe.lora-runner-backend", "requires --lora-backend triton_v2"),
    ("lora-runner-rocm", "gfx942", QWEN_MOE,
     {"moe_runner_backend": "lora_cutedsl", "enable_lora": True, "max_lora_rank": 16,
      "lora_target_modules": ["q_proj"], "lora_backend": "triton_v2"}, {},
     "conflict.moe.lora-runner-v2-modes", "does not yet support ROCm"),
    ("lora-runner-awq", "sm90", QWEN_MOE,
     {"moe_runner_backend": "lora_triton", "enable_lora": True, "max_lora_rank": 16,
      "lora_target_modules": ["q_proj"], "lora_backend": "triton_v2", "quantization": "awq"}, {},
     "conflict.moe.lora-runner-quantization", "supports unquantized BF16, 128-block FP8 and ModelOpt NVFP4"),
    ("lora-runner-a2a", "sm90", QWEN_MOE,
     {"moe_runner_backend": "lora_triton", "enable_lora": True, "max_lora_rank": 16,
      "lora_target_modules": ["q_proj"], "lora_backend": "triton_v2", "moe_a2a_backend": "deepep", "tp_size": 4},
     {}, "conflict.moe.lora-runner-dispatch", "requires Standard dispatch"),
    # under mxfp8 SGLang replaces the runner before its LoRA checks
    ("lora-runner-mxfp8", "sm100", FP4, {"tp_size": 8, "quantization": "mxfp8", "moe_runner_backend": "lora_cutedsl"},
     {}, None, ""),
    ("lora-backend-v2-attn-dp", "sm90", LLAMA,
     {"tp_size": 8, "attn_dp_size": 8, "enable_lora": True, "max_lora_rank": 16, "lora_target_modules": ["q_proj"],
      "lora_backend": "triton_v2"}, {},
     "conflict.lora.triton-v2-modes", "--lora-backend triton_v2 does not yet support DP-attention"),
    ("lora-backend-v2", "sm90", LLAMA,
     {"enable_lora": True, "max_lora_rank": 16, "lora_target_modules": ["q_proj"], "lora_backend": "triton_v2"}, {},
     None, ""),
    ("lora-runner-served", "sm90", QWEN_MOE,
     {"moe_runner_backend": "lora_marlin", "enable_lora": True, "max_lora_rank": 16,
      "lora_target_modules": ["q_proj"], "lora_backend": "triton_v2"}, {}, None, ""),
    # --- 7. online NVFP4, the intel_xpu sampler, DeepEP v2 ------------------------------------------------
    ("nvfp4-online-hopper", "sm90", LLAMA, {"quantization": "nvfp4_online"}, {},
     "conflict.quantization.nvfp4-online-platform", "supported only on NVIDIA Blackwell SM100/SM103"),
    ("nvfp4-online-sm120", "sm120", QWEN_MOE, {"quantization": "nvfp4_online"}, {},
     "conflict.quantization.nvfp4-online-platform", "supported only on NVIDIA Blackwell SM100/SM103"),
    ("nvfp4-online-triton", "sm100", QWEN_MOE, {"quantization": "nvfp4_online", "moe_runner_backend": "triton"}, {},
     "conflict.quantization.nvfp4-online-runner", "nvfp4_online supports only --moe-runner-backend"),
    ("nvfp4-online-b200", "sm100", QWEN_MOE, {"quantization": "nvfp4_online"}, {}, None, ""),
    # on ROCm a generic ModelOpt checkpoint verifies as Petit's NVFP4, which ROCm runs: the platform check refuses
    ("nvfp4-online-rocm-petit", "gfx942",
     _with_quant({"quant_method": "modelopt", "quant_algo": "INT8_SQ"}), {"quantization": "nvfp4_online"}, {},
     "conflict.quantization.nvfp4-online-platform", "supported only on NVIDIA Blackwell SM100/SM103"),
    ("sampling-intel-xpu", "sm90", LLAMA, {"sampling_backend": "intel_xpu"}, {},
     "conflict.serving.sampling-intel-xpu", "--sampling-backend intel_xpu requires --device xpu"),
    ("sampling-intel-xpu-rocm", "gfx950", QWEN, {"sampling_backend": "intel_xpu"}, {},
     "conflict.serving.sampling-intel-xpu", "--sampling-backend intel_xpu requires --device xpu"),
    # deterministic inference samples with PyTorch whatever was typed
    ("sampling-intel-xpu-deterministic", "sm90", LLAMA,
     {"sampling_backend": "intel_xpu", "enable_deterministic_inference": True}, {}, None, ""),
    ("deepep-v2-model", "sm90", LLAMA, {"tp_size": 8, "moe_a2a_backend": "deepep_v2"}, {},
     "conflict.a2a.deepep-v2-model", "DeepEP v2 MoE is not validated for 'LlamaForCausalLM'"),
    ("deepep-v2-runner", "sm90", QWEN_MOE,
     {"tp_size": 8, "moe_a2a_backend": "deepep_v2", "moe_runner_backend": "triton"}, {},
     "conflict.a2a.deepep-v2-runner", "supports only --moe-runner-backend deep_gemm"),
    ("deepep-v2-prefill-budget", "sm100", DSV3, {"tp_size": 8, "moe_a2a_backend": "deepep_v2"}, {},
     "conflict.a2a.deepep-v2-prefill-budget", "DeepEP v2 per-rank prefill budget exceeds"),
    ("deepep-v2-decode-budget", "sm90", GLM5,
     {"tp_size": 8, "moe_a2a_backend": "deepep_v2", "chunked_prefill_size": 1024}, {},
     "conflict.a2a.deepep-v2-decode-budget", "DeepEP v2 per-rank decode CUDA graph exceeds"),
    ("deepep-v2-direct-nodes", "sm90", DSV3,
     {"tp_size": 8, "moe_a2a_backend": "deepep_v2", "chunked_prefill_size": 1024, "cuda_graph_max_bs_decode": 16,
      "nnodes": 2, "node_rank": 0, "dist_init_addr": "127.0.0.1:5000"}, {},
     "conflict.a2a.deepep-v2-direct-nodes", "--deepep-v2-mode direct is NVLink-only"),
    ("deepep-v2-fits", "sm90", DSV3,
     {"tp_size": 8, "moe_a2a_backend": "deepep_v2", "chunked_prefill_size": 1024, "cuda_graph_max_bs_decode": 16},
     {}, None, ""),
    ("deepep-v2-fits-attn-dp", "sm100", QWEN_MOE,
     {"tp_size": 8, "attn_dp_size": 8, "moe_a2a_backend": "deepep_v2", "chunked_prefill_size": 1024,
      "max_running_requests": 1024}, {}, None, ""),
    ("deepep-v2-hybrid-nodes", "sm90", DSV3,
     {"tp_size": 8, "moe_a2a_backend": "deepep_v2", "chunked_prefill_size": 1024, "cuda_graph_max_bs_decode": 16,
      "nnodes": 2, "node_rank": 0, "dist_init_addr": "127.0.0.1:5000", "deepep_v2_mode": "hybrid"}, {}, None, ""),
    # --- 8. ModelOpt FP4 on ROCm, typed or the checkpoint's (model_config.py _verify_quantization) ------------
    ("rocm-modelopt-fp4-typed", "gfx942", LLAMA, {"quantization": "modelopt_fp4"}, {},
     "conflict.quantization.rocm", "modelopt_fp4 quantization is currently not supported in ROCm"),
    ("rocm-modelopt-fp4-ckpt", "gfx942", FP4, {"tp_size": 8}, {},
     "conflict.quantization.rocm", "modelopt_fp4 quantization is currently not supported in ROCm"),
    # the checkpoint's detection replaces a typed method SGLang's ROCm build runs
    ("rocm-modelopt-fp4-ckpt-awq", "gfx950", FP4, {"tp_size": 8, "quantization": "awq"}, {},
     "conflict.quantization.rocm", "modelopt_fp4 quantization is currently not supported in ROCm"),
    ("rocm-fp8-ckpt-modelopt-fp4", "gfx950", DSV3, {"tp_size": 8, "quantization": "modelopt_fp4"}, {},
     "conflict.quantization.rocm", "modelopt_fp4 quantization is currently not supported in ROCm"),
    ("rocm-fp8-ckpt", "gfx950", DSV3, {"tp_size": 8}, {}, None, ""),
    # --- 9. the weight cache and speculative decoding (model_path_hook.py handle_load_format) ----------------
    ("weight-cache-eagle", "sm90", LLAMA,
     {"weight_cache_mode": "daemon", "speculative_algorithm": "NGRAM"}, {},
     "conflict.spec.weight-cache", "--weight-cache-mode is not supported together with speculative decoding"),
    ("weight-cache-client-mtp", "sm100", DSV3, {"tp_size": 8, "weight_cache_mode": "client",
                                                "speculative_algorithm": "EAGLE"}, {},
     "conflict.spec.weight-cache", "--weight-cache-mode is not supported together with speculative decoding"),
    ("weight-cache-alone", "sm90", LLAMA, {"weight_cache_mode": "daemon"}, {}, None, ""),
    # --- 10. the aux hidden-state capture's layer ids (validation_hook.py handle_aux_hidden_state_capture) ------
    ("aux-layer-ids-no-capture", "sm90", LLAMA, {"return_aux_hidden_state_layer_ids": [1, 2]}, {},
     "conflict.aux-hidden.layer-ids-without-capture",
     "--return-aux-hidden-state-layer-ids requires --enable-return-aux-hidden-states"),
    ("aux-layer-ids-needed-dflash", "sm90", QWEN, {"enable_return_aux_hidden_states": True,
                                                  "speculative_algorithm": "DFLASH"}, {},
     "conflict.aux-hidden.layer-ids-needed", "requires --return-aux-hidden-state-layer-ids"),
    ("aux-layer-ids-dflash", "sm90", QWEN, {"enable_return_aux_hidden_states": True, "speculative_algorithm": "DFLASH",
                                           "return_aux_hidden_state_layer_ids": [1, 17, 33]}, {}, None, ""),
    ("aux-layer-ids-eagle3-own", "sm90", LLAMA, {"enable_return_aux_hidden_states": True,
                                                "speculative_algorithm": "EAGLE3"}, {}, None, ""),
    ("weight-cache-off-ngram", "sm90", LLAMA, {"weight_cache_mode": "off", "speculative_algorithm": "NGRAM"}, {},
     None, ""),
]
REFUSED = [c for c in CASES if c[5] is not None]
RESOLVED = [c for c in CASES if c[5] is None]


def _config(model: Any) -> dict[str, Any]:
    return dict(CATALOGUE[model]) if isinstance(model, str) else copy.deepcopy(model)


def _files(model: Any) -> dict[str, Any] | None:
    return FILES.get(model) if isinstance(model, str) else None


def _resolve(platform: str, model: Any, args: dict[str, Any], env: dict[str, str]):
    return resolve_request(get_engine(), platform=platform, model=_config(model), args=dict(args),
                           env=dict(env) or None, model_files=_files(model), fixes=False)


@pytest.mark.parametrize("case, platform, model, args, env, rule, phrase", REFUSED, ids=[c[0] for c in REFUSED])
def test_refused(case, platform, model, args, env, rule, phrase):
    res = _resolve(platform, model, args, env)
    assert rule in {c.rule.id for c in res.conflicts}, (case, [c.rule.id for c in res.conflicts])


@pytest.mark.parametrize("case, platform, model, args, env, rule, phrase", RESOLVED, ids=[c[0] for c in RESOLVED])
def test_resolved(case, platform, model, args, env, rule, phrase):
    res = _resolve(platform, model, args, env)
    assert not res.conflicts, (case, [(c.rule.id, c.message) for c in res.conflicts])


def test_the_brief_example_conflicts_from_the_command_line():
    """`resolve --platform h200 --model-path deepseek-ai/DeepSeek-V3 --tp 8 --quantization awq` exits 1."""
    import contextlib
    import io

    from resolver.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["--platform", "h200", "--model-path", DSV3, "--tp", "8", "--quantization", "awq"])
    assert status == 1
    assert "does not match the quantization method" in out.getvalue()
    assert "remove --quantization" in out.getvalue()


def test_fixes_resolve():
    """Every fix a refusal lists resolves that refusal's rule (the fix search checks it; this keeps it so)."""
    for case, platform, model, args, env, rule, _ in REFUSED:
        res = resolve_request(get_engine(), platform=platform, model=_config(model), args=dict(args),
                              env=dict(env) or None, model_files=_files(model))
        conflict = next(c for c in res.conflicts if c.rule.id == rule)
        for fix in conflict.fixes:
            typed = {**{a: v for a, v in args.items() if a not in fix.unset}, **fix.set}
            after = _resolve(platform, model, typed, env)
            assert rule not in {c.rule.id for c in after.conflicts}, (case, fix.to_dict())


def test_the_table_is_sglangs_answer():
    """Ask SGLang 0.5.23 (the oracle) every launch of the table: the refusals with their words, and the rest
    resolved."""
    python = oracle_python()
    from tools.sglang_diff import ask_oracle

    # the oracle's worker processes start with a clean environment: a fixture folder of one's own
    # (SGLANG_ORACLE_FIXTURE, the oracle's README) reaches them only through the request's env
    fixture = {"SGLANG_ORACLE_FIXTURE": os.environ["SGLANG_ORACLE_FIXTURE"]} \
        if os.environ.get("SGLANG_ORACLE_FIXTURE") else {}
    requests = []
    for case, platform, model, args, env, _, _ in CASES:
        request = {"id": case, "platform": platform, "model": _config(model), "args": dict(args)}
        if _files(model):
            request["model_files"] = _files(model)
        if env or fixture:
            request["env"] = {**env, **fixture}
        requests.append(request)
    answers = {rid: a.get("sglang", a) for rid, a in ask_oracle(requests, python, ORACLE).items()}
    for case, _, _, _, _, rule, phrase in CASES:
        got = answers[case]
        if rule is None:
            assert got.get("status") == "resolved", (case, got)
        else:
            assert got.get("status") == "error" and phrase in got["message"], (case, got)
