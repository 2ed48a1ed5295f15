#!/usr/bin/env python3
"""Differential test against SGLang 0.5.23: seeded random launches, SGLang's own resolution vs the resolver.

    python tools/sglang_diff.py --seed 7 --count 2000 [--oracle-python PY] [--oracle-dir DIR] [--show 5]

Each launch is a real catalogued checkpoint (``resolver/data/models.json``) on one of SGLang's
platforms, with a random draw of the options the rules cover: attention, prefill/decode and DSA
backends, KV-cache dtype, page size, HiSparse, speculative decoding (EAGLE, EAGLE3, NEXTN,
STANDALONE, NGRAM, DFLASH with their shapes, draft checkpoints, the draft's quantization and MoE
runner), tensor parallelism, deterministic inference, the PD role, the quantization, the MoE
runner, TF32 matmuls and shared-expert fusion.  Most options stay unset in most launches, as in real
commands.  SGLang answers through the oracle (a separate Python with the sglang 0.5.23 wheel and
torch stubbed out; its ``ask.py``), the resolver answers in this process, and every launch is
classed:

- ``agree``: both refuse, or both resolve with the same value for every option the rules decide;
- ``divergence``: the resolver refuses by a rule of docs/divergences.md (a kernel that cannot run
  what SGLang picks), or SGLang picks a default whose kernel is absent or cannot run there;
- ``not-offered``: a value SGLang's own CLI does not offer (an input error here);
- ``harness``: the oracle could not run the request (not a verdict on either side);
- anything else is a difference, grouped by kind (a refusal we miss, a conflict SGLang does not
  raise, a value that differs) with an example of each.

The exit status is 1 when a difference is left, else 0.  The same seed and count give the same
launches on every machine: the draw uses only ``random.Random(seed)`` over sorted inputs.
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import fcntl
import hashlib
import json
import os
import random
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, ROOT)

# imported only after the path above, so a script run imports this checkout's resolver, not an installed one
from resolver.api import Engine, get_engine  # noqa: E402
from resolver.catalogue import catalogue as flag_catalogue  # noqa: E402
from resolver.model_source import catalogue as model_catalogue  # noqa: E402
from resolver.tools.batch import resolve_line  # noqa: E402

PLATFORMS = ("sm80", "sm86", "sm89", "sm90", "sm100", "sm103", "sm120", "sm121", "gfx942", "gfx950")
#: the oracle writes its checkpoints under one fixed folder: one oracle process at a time, by this lock
ORACLE_LOCK = "/tmp/sglang-oracle-fixture.lock"
#: where the oracle writes the target checkpoint (SGLang's model_path)
ORACLE_MODEL_DIR = "/tmp/sglang-oracle-fixture/model"
#: where the oracle writes the draft checkpoint it is given (``speculative_draft_model_path`` must name it)
ORACLE_DRAFT_DIR = "/tmp/sglang-oracle-fixture/draft"

#: draft checkpoints (config.json of public draft heads; the weights are never read)
DRAFTS: dict[str, dict[str, Any]] = {
    # EAGLE-2 head for Llama-3.1-8B-Instruct: huggingface.co/lmsys/sglang-EAGLE-LLaMA3-Instruct-8B
    "EAGLE": {"architectures": ["LlamaForCausalLMEagle"], "model_type": "llama", "hidden_size": 4096,
              "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 1,
              "num_key_value_heads": 8, "head_dim": 128, "max_position_embeddings": 131072,
              "rope_theta": 500000.0, "torch_dtype": "bfloat16", "vocab_size": 128256},
    # EAGLE-3 head: huggingface.co/lmsys/sglang-EAGLE3-LLaMA3.1-Instruct-8B
    "EAGLE3": {"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_size": 4096,
               "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 1,
               "num_key_value_heads": 8, "head_dim": 128, "max_position_embeddings": 131072,
               "rope_theta": 500000.0, "draft_vocab_size": 32000, "torch_dtype": "bfloat16", "vocab_size": 128256},
    # a small standalone draft: huggingface.co/meta-llama/Llama-3.2-1B-Instruct
    "STANDALONE": {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 2048,
                   "intermediate_size": 8192, "num_attention_heads": 32, "num_hidden_layers": 16,
                   "num_key_value_heads": 8, "head_dim": 64, "max_position_embeddings": 131072,
                   "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                                    "original_max_position_embeddings": 8192, "rope_type": "llama3"},
                   "rope_theta": 500000.0, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
                   "vocab_size": 128256},
    # a DFlash block-diffusion draft: huggingface.co/z-lab/Qwen3-8B-DFlash-b16
    "DFLASH": {"architectures": ["DFlashDraftModel"], "model_type": "qwen3", "hidden_size": 4096,
               "intermediate_size": 12288, "num_attention_heads": 32, "num_hidden_layers": 5,
               "num_key_value_heads": 8, "head_dim": 128, "max_position_embeddings": 40960,
               "rope_theta": 1000000, "block_size": 16, "torch_dtype": "bfloat16", "vocab_size": 151936,
               "dflash_config": {"target_layer_ids": [1, 9, 17, 25, 33], "mask_token_id": 151669}},
}

#: the same draft heads as variants a launch may bring: the DFlash draft with another block size
#: (its block sets the draft tokens) and declared causal (it may then keep a trtllm_mha draft backend)
DRAFT_VARIANTS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "DFLASH": [("DFLASH", DRAFTS["DFLASH"]), ("DFLASH-b8", {**DRAFTS["DFLASH"], "block_size": 8}),
               ("DFLASH-causal", {**DRAFTS["DFLASH"], "is_causal": True})],
}

#: other cards of a platform than its usual one, by their memory in GB (H20, H200; A100 40GB; RTX 5090; ...)
CARD_MEMORY_GB: dict[str, tuple[int, ...]] = {
    "sm80": (40,), "sm86": (24,), "sm89": (24,), "sm90": (96, 141), "sm100": (186,), "sm103": (288,),
    "sm120": (32,), "gfx942": (128, 256),
}

#: catalogued checkpoints the oracle cannot load (its stand-ins for transformers fail before SGLang decides
#: anything), so launches of them would tell nothing: left out of the draw
ORACLE_CANNOT_RUN = {
    # multimodal configs: the stubbed transformers recurse in hf_transformers_patches
    "meta-llama/Llama-4-Scout-17B-16E-Instruct": "RecursionError in the transformers stub",
    "meta-llama/Llama-4-Maverick-17B-128E-Instruct": "RecursionError in the transformers stub",
    "Qwen/Qwen3-VL-8B-Instruct": "RecursionError in the transformers stub",
    "Qwen/Qwen3-VL-235B-A22B-Instruct": "RecursionError in the transformers stub",
    "moonshotai/Kimi-K2.5": "RecursionError in the transformers stub",
    "moonshotai/Kimi-VL-A3B-Instruct": "RecursionError in the transformers stub",
    "google/gemma-3-27b-it": "RecursionError in the transformers stub",
    # the model class reads config fields the catalogue does not carry
    "deepseek-ai/DeepSeek-Coder-V2-Lite-Base": "no vocab_size in the catalogued config",
    "openbmb/MiniCPM3-4B": "no vocab_size in the catalogued config",
    "deepseek-ai/DeepSeek-V4-Flash": "no compress_ratios in the catalogued config",
    "moonshotai/Kimi-Linear-48B-A3B-Instruct": "the oracle's fixture config has no qk_rope_head_dim",
    "meituan-longcat/LongCat-Flash-Chat": "the oracle's fixture config has no num_hidden_layers",
}

#: rules whose refusals are intended departures from SGLang 0.5.23 -> their section in docs/divergences.md
DIVERGENCE_RULES: dict[str, str] = {
    "conflict.kernel.flashinfer-sparse-mla.glm-sm12x": "D2",
    # what the kernel adapters report (resolver/adapters): a kernel that cannot run what SGLang picks
    **{rule: "K" for rule in (
        "conflict.kernel.dsa-prefill.cannot-run", "conflict.kernel.dsa-decode.cannot-run",
        "conflict.kernel.attention.cannot-run", "conflict.kernel.dsa-prefill.none-runs",
        "conflict.kernel.dsa-decode.none-runs", "conflict.kernel.attention.none-runs",
        "conflict.kernel.prefill-attention.cannot-run", "conflict.kernel.decode-attention.cannot-run",
        "conflict.kernel.draft-attention.cannot-run", "conflict.kernel.mxfp8-sm12x",
        "conflict.kernel.tilelang-bf16-sm12x-nope",
        # the MoE kernel adapters (resolver/adapters/moe.py, rules/moe_kernels.yaml)
        "conflict.kernel.moe.cannot-run", "conflict.kernel.moe.pplx-deep-gemm")},
}

# ---------------------------------------------------------------------------------------------
# Launches
# ---------------------------------------------------------------------------------------------

_BACKENDS = ("fa3", "fa4", "flashinfer", "triton", "torch_native", "flex_attention", "flashmla", "trtllm_mla",
             "trtllm_mha", "cutlass_mla", "aiter", "wave", "dsa", "nsa", "ascend", "intel_amx")
_KV = ("auto", "bf16", "bfloat16", "fp8_e4m3", "fp8_e5m2", "fp4_e2m1", "nvfp4")
_DSA = ("flashmla_sparse", "flashmla_kv", "flashmla_auto", "fa3", "tilelang", "aiter", "trtllm")
_SPEC = ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM", "DFLASH")
#: MoE runners an operator types.  Not drawn: the lora_* runners (they need --enable-lora, which no rule
#: reads), megamoe (SGLang's alias of --moe-a2a-backend megamoe) and flashinfer_megamoe, experimental_sgl_marlin,
#: whose checks are SGLang's all-to-all and LoRA steps (not encoded yet)
_MOE_RUNNERS = ("auto", "triton", "deep_gemm", "triton_kernel", "flashinfer_trtllm", "flashinfer_trtllm_routed",
                "flashinfer_cutlass", "flashinfer_mxfp4", "flashinfer_cutedsl", "cutlass", "marlin")


def _quantizations(config: dict) -> tuple:
    """--quantization values an operator types for this checkpoint: its own method, "unquant", and the
    online methods SGLang accepts on it (fp8 and NVFP4 on an unquantised checkpoint, NVFP4 over FP8)."""
    qc = config.get("quantization_config")
    method = qc.get("quant_method") if isinstance(qc, dict) else None
    if method is None:
        return ("fp8", "modelopt_fp4", "unquant")
    return (method, "unquant", "modelopt_fp4") if method == "fp8" else (method, "unquant")


def _maybe(rng: random.Random, p: float, choices) -> Any:
    """One of ``choices`` with probability ``p``, else None (the option stays unset)."""
    return rng.choice(choices) if rng.random() < p else None


def _offered(catalogue, field: str, values) -> tuple:
    """The values SGLang's CLI offers for a choice field, in the order given (sorted for a stable draw)."""
    flag = catalogue.by_dest.get(field)
    choices = set(flag.choices) if flag is not None and flag.choices else None
    return tuple(v for v in values if choices is None or v in choices)


def launch(rng: random.Random, models: list[tuple[str, dict]], catalogue) -> dict[str, Any]:
    """One random launch in the oracle's request format."""
    name, config = rng.choice(models)
    platform = rng.choice(PLATFORMS)
    args: dict[str, Any] = {
        "attention_backend": _maybe(rng, 0.35, _offered(catalogue, "attention_backend", _BACKENDS)),
        "prefill_attention_backend": _maybe(rng, 0.08, _offered(catalogue, "prefill_attention_backend", _BACKENDS)),
        "decode_attention_backend": _maybe(rng, 0.08, _offered(catalogue, "decode_attention_backend", _BACKENDS)),
        "kv_cache_dtype": _maybe(rng, 0.35, _offered(catalogue, "kv_cache_dtype", _KV)),
        "page_size": _maybe(rng, 0.25, (1, 16, 32, 64, 128)),
        "tp_size": _maybe(rng, 0.4, (1, 2, 4, 8)),
        "enable_deterministic_inference": _maybe(rng, 0.04, (True,)),
        "disaggregation_mode": _maybe(rng, 0.08, ("prefill", "decode")),
    }
    if config.get("index_topk") is not None or rng.random() < 0.05:
        args["dsa_prefill_backend"] = _maybe(rng, 0.2, _offered(catalogue, "dsa_prefill_backend", _DSA))
        args["dsa_decode_backend"] = _maybe(rng, 0.2, _offered(catalogue, "dsa_decode_backend", _DSA))
        if rng.random() < 0.15:
            args["enable_hisparse"] = True
            args["disable_radix_cache"] = rng.random() < 0.8
    request: dict[str, Any] = {"platform": platform, "model_name": name, "model": config}
    algorithm = _maybe(rng, 0.3, _SPEC)
    if algorithm is not None:
        args["speculative_algorithm"] = algorithm
        args["speculative_num_steps"] = _maybe(rng, 0.4, (1, 2, 3, 5))
        args["speculative_eagle_topk"] = _maybe(rng, 0.4, (1, 2, 4, 8))
        args["speculative_num_draft_tokens"] = _maybe(rng, 0.4, (2, 4, 8, 16))
        args["speculative_draft_attention_backend"] = _maybe(
            rng, 0.1, _offered(catalogue, "speculative_draft_attention_backend",
                               ("fa3", "flashinfer", "triton", "trtllm_mha")))
        args["speculative_adaptive"] = _maybe(rng, 0.05, (True,))
        if algorithm in DRAFTS and rng.random() < 0.85:  # sometimes the draft path is forgotten
            name, draft = rng.choice(DRAFT_VARIANTS.get(algorithm, [(algorithm, DRAFTS[algorithm])]))
            request["draft_model_name"] = name
            request["draft_model"] = draft
            args["speculative_draft_model_path"] = ORACLE_DRAFT_DIR
        args["speculative_draft_model_quantization"] = _maybe(rng, 0.1, ("fp8", "unquant", "modelopt_fp4"))
        args["speculative_moe_runner_backend"] = _maybe(rng, 0.05, ("auto", "triton", "flashinfer_trtllm"))
    # the MoE kernels and quantization
    args["quantization"] = _maybe(rng, 0.15, _offered(catalogue, "quantization", _quantizations(config)))
    args["moe_runner_backend"] = _maybe(rng, 0.12, _offered(catalogue, "moe_runner_backend", _MOE_RUNNERS))
    args["enable_tf32_matmul"] = _maybe(rng, 0.08, (True, False))
    args["disable_shared_experts_fusion"] = _maybe(rng, 0.04, (True,))
    # memory: another card of the platform's family (its memory sizes the defaults), a typed chunk size
    memory = _maybe(rng, 0.2, CARD_MEMORY_GB[platform]) if platform in CARD_MEMORY_GB else None
    if memory is not None:
        request["platform_overrides"] = {"gpu_memory_gb": memory}
    args["chunked_prefill_size"] = _maybe(rng, 0.05, (-1, 1000, 2048, 4096, 8192))
    _draw_memory(rng, args, request, catalogue)
    _draw_pd_hicache(rng, args, catalogue)
    request["args"] = {k: v for k, v in args.items() if v is not None}
    _draw_parallel(rng, request["args"], catalogue)
    _draw_moe_extras(rng, request["args"], request, catalogue)
    _draw_env_flags(rng, request["args"])
    return request


def _draw_env_flags(rng: random.Random, args: dict[str, Any]) -> None:
    """Flags whose effect is on the environment (rules/env.yaml): symmetric memory's preallocation."""
    if rng.random() < 0.04:
        args["enable_symm_mem"] = True


#: MoE all-to-all backends an operator types on these platforms (not the Ascend ones, nor DeepEP v2, whose
#: model registry and dispatch budget the rules do not encode)
_A2A = ("deepep", "mooncake", "nixl", "mori", "pplx", "flashinfer", "megamoe", "flashinfer_megamoe")


def _draw_parallel(rng: random.Random, args: dict[str, Any], catalogue) -> None:
    """Data, expert, pipeline and decode-context parallelism, nodes, the LM head and the MoE all-to-all
    (rules/parallel.yaml, rules/moe_a2a.yaml), added to ``args`` (a drawn value only)."""
    tp = args.get("tp_size", 1)
    layout = rng.random()
    if layout < 0.08:  # attention DP, sometimes not dividing the TP size
        args["attn_dp_size"] = rng.choice((2, 4, 8, tp))
    elif layout < 0.14:  # the deprecated spelling
        args["dp_size"] = rng.choice((2, 4, 8, tp))
        args["enable_dp_attention"] = True
    elif layout < 0.18:  # replicas
        args["dp_size"] = rng.choice((2, 4))
    a2a = _maybe(rng, 0.1, _offered(catalogue, "moe_a2a_backend", _A2A))
    drawn = {
        "ep_size": _maybe(rng, 0.08, (2, 4, 8)),
        "moe_a2a_backend": a2a,
        "deepep_mode": _maybe(rng, 0.3 if a2a else 0.02, ("auto", "normal", "low_latency")),
        "pp_size": _maybe(rng, 0.04, (2, 4)),
        "nnodes": _maybe(rng, 0.04, (2, 4)),
        "dcp_size": _maybe(rng, 0.03, (2, 4)),
        "dcp_comm_backend": _maybe(rng, 0.02, ("ag_rs", "a2a", "fi_a2a")),
        "enable_dp_lm_head": _maybe(rng, 0.05, (True,)),
        "enable_tp_lm_head_all_to_all": _maybe(rng, 0.03, (True, False)),
        "flashinfer_allreduce_fusion_backend": _maybe(rng, 0.03, ("auto", "trtllm", "mnnvl", "cutedsl")),
        "enable_flashinfer_allreduce_fusion": _maybe(rng, 0.02, (True,)),
        "moe_dense_tp_size": _maybe(rng, 0.03, (1, 2, 8)),
        # alone: --enable-prefill-cp is not drawn (the DeepSeek CP layouts it sets up are not encoded)
        "cp_strategy": _maybe(rng, 0.02, ("zigzag", "interleave")),
    }
    args.update({k: v for k, v in drawn.items() if v is not None})
    if "moe_runner_backend" not in args and rng.random() < 0.02:  # SGLang's alias of --moe-a2a-backend megamoe
        args["moe_runner_backend"] = "megamoe"


#: config keys that mark a mixture-of-experts checkpoint (the EPLB / overlap draws only make sense there)
_MOE_KEYS = ("n_routed_experts", "num_experts", "num_local_experts", "moe_intermediate_size")
#: draft all-to-all backends drawn (SGLang refuses a DeepEP v2 draft)
_DRAFT_A2A = ("none", "deepep", "mooncake", "nixl", "flashinfer", "pplx", "deepep_v2")


def _draw_moe_extras(rng: random.Random, args: dict[str, Any], request: dict[str, Any], catalogue) -> None:
    """EPLB and the expert distribution recorder, the replica dispatch, two-/single-batch overlap, elastic EP
    and the draft's own all-to-all backend (rules/moe_extras.yaml), on MoE checkpoints only, each in a few
    launches (not the fields SGLang passes through untouched: redundant experts, rebalance chunking and
    threshold, the TBO token threshold); EPLB sometimes stretches EP over the TP group and overlap sometimes
    adds attention DP, so that some of these launches resolve."""
    config = request["model"]
    if not any(config.get(k) for k in _MOE_KEYS):
        return
    tp = args.get("tp_size", 1)
    if rng.random() < 0.06:
        args["enable_eplb"] = True
        if tp > 1 and "ep_size" not in args and rng.random() < 0.6:
            args["ep_size"] = tp
        drawn = {
            "eplb_algorithm": _maybe(rng, 0.2, ("auto", "deepseek", "elasticity_aware")),
            "eplb_rebalance_num_iterations": _maybe(rng, 0.3, (10, 500)),
        }
        args.update({k: v for k, v in drawn.items() if v is not None})
    if rng.random() < 0.05:
        args["enable_two_batch_overlap"] = True
        if (tp > 1 and "attn_dp_size" not in args and "dp_size" not in args
                and args.get("speculative_algorithm") is None and rng.random() < 0.5):
            args["attn_dp_size"] = tp
    drawn = {
        "init_expert_location": _maybe(rng, 0.02, ("trivial", "/tmp/expert_location.json")),
        "expert_distribution_recorder_mode": _maybe(
            rng, 0.03, _offered(catalogue, "expert_distribution_recorder_mode",
                                ("stat", "stat_approx", "per_pass", "per_token"))),
        "expert_distribution_recorder_buffer_size": _maybe(rng, 0.03, (-1, 100)),
        "expert_balancedness_report_mode": _maybe(
            rng, 0.03, _offered(catalogue, "expert_balancedness_report_mode",
                                ("off", "server_log", "prometheus", "both"))),
        "ep_dispatch_algorithm": _maybe(
            rng, 0.04, _offered(catalogue, "ep_dispatch_algorithm", ("static", "dynamic", "fake", "lp"))),
        "enable_single_batch_overlap": _maybe(rng, 0.04, (True,)),
        "elastic_ep_backend": _maybe(
            rng, 0.03, _offered(catalogue, "elastic_ep_backend", ("none", "mooncake", "nixl"))),
    }
    if args.get("speculative_algorithm") is not None:
        drawn["speculative_moe_a2a_backend"] = _maybe(
            rng, 0.08, _offered(catalogue, "speculative_moe_a2a_backend", _DRAFT_A2A))
    args.update({k: v for k, v in drawn.items() if v is not None})


def _draw_memory(rng: random.Random, args: dict[str, Any], request: dict[str, Any], catalogue) -> None:
    """The memory settings (rules/memory.yaml, rules/cuda_graph.yaml): a typed static fraction, decode graph
    batch, running-request cap or prefill token budget, the CUDA-graph switches, and attention DP over the
    whole TP group (its graph reserve), each in a few launches."""
    args["mem_fraction_static"] = _maybe(rng, 0.05, (0.7, 0.85, 0.9))
    args["cuda_graph_max_bs_decode"] = _maybe(rng, 0.06, (16, 64, 160, 320))
    args["max_running_requests"] = _maybe(rng, 0.08, (8, 32, 64, 128, 512))
    args["max_prefill_tokens"] = _maybe(rng, 0.03, (4096, 32768))
    args["disable_cuda_graph"] = _maybe(rng, 0.03, (True,))
    args["disable_prefill_cuda_graph"] = _maybe(rng, 0.03, (True,))
    args["cuda_graph_backend_decode"] = _maybe(rng, 0.03, _offered(catalogue, "cuda_graph_backend_decode",
                                                                   ("full", "breakable", "disabled")))
    args["cuda_graph_backend_prefill"] = _maybe(rng, 0.03, _offered(catalogue, "cuda_graph_backend_prefill",
                                                                    ("full", "breakable", "disabled")))
    args["cuda_graph_max_bs_prefill"] = _maybe(rng, 0.03, (1024, 4096))
    args["disable_decode_cuda_graph"] = _maybe(rng, 0.03, (True,))
    args["max_total_tokens"] = _maybe(rng, 0.03, (4096, 1 << 20))
    # attention DP without speculative decoding (DSpark under attention DP needs --enable-dp-lm-head, not
    # modelled by the speculative rules yet)
    if (rng.random() < 0.1 and args.get("attn_dp_size") is None and (args.get("tp_size") or 1) > 1
            and args.get("speculative_algorithm") is None):
        args["attn_dp_size"] = args["tp_size"]


def _draw_pd_hicache(rng: random.Random, args: dict[str, Any], catalogue) -> None:
    """The PD transfer backend, decode host receive, offload and allocation policy, optimistic prefill,
    HiCache with its host pool, layout, I/O and storage, LMCache, and the serving defaults (sampling,
    grammar, load balancing, prefill/decode interval, boundary reduction): rules/pd.yaml,
    rules/hicache.yaml, rules/serving_defaults.yaml."""
    mode = args.get("disaggregation_mode")
    if mode is not None:
        args["disaggregation_transfer_backend"] = _maybe(
            rng, 0.3, _offered(catalogue, "disaggregation_transfer_backend",
                               ("mooncake", "mooncake_tcp", "nixl", "mori", "ascend", "fake")))
    if mode == "decode":
        args["disaggregation_decode_enable_radix_cache"] = _maybe(rng, 0.1, (True,))
        args["disaggregation_decode_host_receive_threshold"] = _maybe(rng, 0.08, (0.5, 0.9))
        args["max_running_requests"] = _maybe(rng, 0.1, (8, 16, 64, 256))
    args["disaggregation_decode_retraction_backup"] = _maybe(rng, 0.03, ("host_pool", "cpu_tensor", "none"))
    if mode is not None and rng.random() < 0.15:  # the prefill_complete pair and optimistic prefill
        args["disaggregation_decode_allocation_policy"] = _maybe(rng, 0.6, ("early", "prefill_complete"))
        args["optimistic_prefill_attempts"] = _maybe(rng, 0.5, (0, 1, 3))
    if mode == "decode":
        args["disaggregation_decode_enable_offload_kvcache"] = _maybe(rng, 0.05, (True,))
    if rng.random() < 0.08 or (mode == "decode" and rng.random() < 0.1):
        args["enable_hierarchical_cache"] = True if mode != "decode" or rng.random() < 0.5 else None
        args["hicache_ratio"] = _maybe(rng, 0.2, (1.5, 3.0))
        args["hicache_size"] = _maybe(rng, 0.1, (0, 64))
        args["hicache_host_memory_mode"] = _maybe(rng, 0.1, ("cache", "buffer_only"))
        args["hicache_mem_layout"] = _maybe(rng, 0.25, _offered(catalogue, "hicache_mem_layout", (
            "layer_first", "page_first", "page_first_direct", "page_first_kv_split", "page_head")))
        args["hicache_io_backend"] = _maybe(rng, 0.2, ("direct", "kernel"))
        args["hicache_storage_backend"] = _maybe(rng, 0.2, ("file", "mooncake", "nixl", "hf3fs"))
        args["hicache_write_policy"] = _maybe(rng, 0.15, ("write_back", "write_through", "write_through_selective"))
    args["enable_lmcache"] = _maybe(rng, 0.02, (True,))
    args["sampling_backend"] = _maybe(rng, 0.05, ("flashinfer", "pytorch"))
    args["grammar_backend"] = _maybe(rng, 0.04, ("xgrammar", "outlines", "llguidance", "none"))
    args["load_balance_method"] = _maybe(rng, 0.04, ("auto", "round_robin", "total_requests", "total_tokens"))
    args["prefill_decode_interval"] = _maybe(rng, 0.03, (0, 5, 22))
    args["boundary_reduction"] = _maybe(rng, 0.04, ("auto", "ar", "rs", "rsv", "rs+rsv"))


def launches(seed: int, count: int) -> list[dict[str, Any]]:
    """``count`` launches drawn from ``seed`` (ids ``s<seed>-<n>``), the same on every machine."""
    rng = random.Random(seed)
    models = sorted((m.id, dict(m.config)) for m in model_catalogue() if m.id not in ORACLE_CANNOT_RUN)
    catalogue = flag_catalogue()
    return [{"id": f"s{seed}-{n}", **launch(rng, models, catalogue)} for n in range(count)]


# ---------------------------------------------------------------------------------------------
# Both sides
# ---------------------------------------------------------------------------------------------

def default_oracle_dir() -> str:
    return os.environ.get("SGLANG_ORACLE_DIR") or os.path.join(os.path.dirname(ROOT), "shared", "oracle")


def default_oracle_python() -> str | None:
    """$SGLANG_ORACLE_PYTHON, else the venv beside the checkout where the tests look (tests/oracle.py)."""
    beside = os.path.join(os.path.dirname(ROOT), ".oracle-venv", "bin", "python")
    return os.environ.get("SGLANG_ORACLE_PYTHON") or (beside if os.path.isfile(beside) else None)


@contextlib.contextmanager
def oracle_lock() -> Iterator[None]:
    """Hold the oracle's lock (other oracle runs on this machine wait; see ORACLE_LOCK)."""
    with open(ORACLE_LOCK, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def ask_oracle(requests: list[dict], python: str, oracle_dir: str, cache: str | None = None) -> dict[str, dict]:
    """SGLang's answer per request id, from ``ask.py`` (one oracle process; answers cached by request)."""
    keyed = {r["id"]: hashlib.sha256(json.dumps({k: v for k, v in r.items() if k != "id"}, sort_keys=True)
                                      .encode()).hexdigest() for r in requests}
    known: dict[str, dict] = {}
    if cache and os.path.exists(cache):
        with open(cache, encoding="utf-8") as fh:
            for line in fh:
                entry = json.loads(line)
                known[entry["key"]] = entry["answer"]
    todo = [r for r in requests if keyed[r["id"]] not in known]
    if todo:
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as fh:
            fh.writelines(json.dumps(r) + "\n" for r in todo)
        try:
            with oracle_lock():
                proc = subprocess.run([python, "-B", os.path.join(oracle_dir, "ask.py"), fh.name],
                                      cwd=os.path.dirname(oracle_dir), capture_output=True, text=True, check=False)
        finally:
            os.unlink(fh.name)
        answers = {a["id"]: a for a in map(json.loads, proc.stdout.splitlines())}
        if len(answers) != len(todo):
            raise SystemExit(f"the oracle answered {len(answers)} of {len(todo)} requests "
                             f"(exit {proc.returncode}): {proc.stderr.strip()[-2000:]}")
        fresh = {keyed[rid]: a for rid, a in answers.items()}
        known.update(fresh)
        if cache:
            with open(cache, "a", encoding="utf-8") as out:
                out.writelines(json.dumps({"key": k, "answer": a}) + "\n" for k, a in fresh.items())
    return {rid: known[key] for rid, key in keyed.items()}


def as_launched(request: dict) -> dict:
    """The request as the oracle launches it: SGLang's ``model_path`` is the oracle's checkpoint folder
    (SGLang copies it into other fields), and the config beside it is the request's ``model``."""
    return {**{k: v for k, v in request.items() if k != "fix"},
            "args": {"model_path": ORACLE_MODEL_DIR, **request["args"]}}


def ask_resolver(requests: list[dict], engine: Engine) -> dict[str, dict]:
    """The resolver's result per request id, as ``resolve --batch --no-fixes`` gives it."""
    return {r["id"]: resolve_line(engine, json.dumps(as_launched(r)), fixes=False) for r in requests}


# ---------------------------------------------------------------------------------------------
# Comparison
# ---------------------------------------------------------------------------------------------

#: modules of the oracle's environment (stubbed transformers): an error raised there is not SGLang's answer
ORACLE_STUBS = ("sglang.srt.utils.hf_transformers_patches",)
#: values SGLang 0.5.23's CLI does not offer (the resolver refuses them as input errors)
NOT_OFFERED = ("'cutlass_mla'", "'float16'")


def _template(message: str) -> str:
    """An error message with its numbers and quoted values blanked, to group one kind of refusal."""
    message = re.sub(r"'[^']*'|\"[^\"]*\"|\[[^\]]*\]", "…", message.splitlines()[0] if message else "")
    return re.sub(r"\d+(\.\d+)?", "N", message)[:160]


#: options SGLang reports nested: the decode graph's largest batch is cuda_graph_config.decode.max_bs, and
#: what rules/cuda_graph_config.yaml decides per phase
NESTED = {"cuda_graph_max_bs_decode": ("cuda_graph_config", "decode", "max_bs"),
          "cuda_graph_config_decode_backend": ("cuda_graph_config", "decode", "backend"),
          "cuda_graph_config_prefill_backend": ("cuda_graph_config", "prefill", "backend"),
          "cuda_graph_config_prefill_max_bs": ("cuda_graph_config", "prefill", "max_bs"),
          "cuda_graph_config_decode_bs": ("cuda_graph_config", "decode", "bs"),
          "cuda_graph_config_prefill_bs": ("cuda_graph_config", "prefill", "bs")}


def _prefill_buckets(max_bs: int) -> list[int]:
    """SGLang 0.5.23 cuda_graph_hook.py generate_prefill_cuda_graph_batch_sizes."""
    sizes = [*range(4, 33, 4), *range(48, 257, 16), *range(288, 513, 32), *range(576, 1025, 64),
             *range(1280, 4097, 256), *range(4608, max_bs + 1, 512)]
    return [s for s in sizes if s <= max_bs]


def _decode_batches(max_bs: int, speculative: bool) -> list[int]:
    """SGLang 0.5.23 cuda_graph_hook.py generate_decode_cuda_graph_batch_sizes (padding on)."""
    if speculative:
        sizes = [*range(1, 9), *range(10, 33, 2), *range(40, 65, 4), *range(72, 257, 8), *range(272, max_bs + 1, 16)]
    else:
        sizes = [1, 2, 4, 8, 12, *range(16, 257, 8), *range(272, 512, 16), *range(512, max_bs + 1, 32)]
    sizes = [s for s in sizes if s <= max_bs]
    return sizes if max_bs in sizes else [*sizes, max_bs]


#: the generators a phase's batch list comes from, by the name rules/cuda_graph_config.yaml gives them
BATCH_LISTS = {
    "decode": {"default": lambda m: _decode_batches(m, False), "speculative": lambda m: _decode_batches(m, True)},
    "prefill": {"default": _prefill_buckets,
                "aligned8": lambda m: sorted({(b + 7) // 8 * 8 for b in _prefill_buckets(m)})},
}


def _batch_list_name(phase: str, batches: Any, max_bs: Any) -> Any:
    """A phase's batch list named by the generator that makes it from the phase's max_bs (the list itself
    when none does, so it shows as a difference)."""
    if isinstance(batches, list) and isinstance(max_bs, int):
        for name, make in BATCH_LISTS[phase].items():
            if make(max_bs) == batches:
                return name
    return batches


def sglang_value(answer: dict, request: dict, field: str, defaults: dict[str, Any]) -> Any:
    """SGLang's final value: what a step declared, else what was typed, else SGLang's default."""
    if field in NESTED and NESTED[field][0] in answer["values"]:
        value = answer["values"][NESTED[field][0]]
        for key in NESTED[field][1:-1]:
            value = value.get(key) if isinstance(value, dict) else None
        phase = value if isinstance(value, dict) else {}
        value = phase.get(NESTED[field][-1])
        return _batch_list_name(NESTED[field][1], value, phase.get("max_bs")) if isinstance(value, list) else value
    if field in answer["values"]:
        return answer["values"][field]
    return request["args"].get(field, defaults.get(field))


def classify(request: dict, answer: dict, result: dict, fields: list[str], defaults: dict[str, Any],
             aliases: dict[str, dict[str, Any]]) -> str:
    """``agree``, ``divergence``, ``not-offered``, ``harness``, or a difference named by its kind."""
    if "harness_error" in answer:
        return "harness"
    sg = answer["sglang"]
    if sg["status"] == "error" and sg.get("raised_in", "").startswith(ORACLE_STUBS):
        return "harness"  # the oracle's stand-in for transformers failed: no verdict of SGLang's
    if result["status"] == "error":
        if "invalid value" in result.get("error", "") and any(v in result["error"] for v in NOT_OFFERED):
            return "not-offered"
        return f"input error here: {_template(result['error'])}"
    if sg["status"] == "error":
        if result["status"] == "conflict":
            return "agree"
        return f"SGLang refuses, we resolve: {sg['type']}: {_template(sg['message'])}"
    if result["status"] == "conflict":
        rules = sorted({c["rule"]["id"] for c in result["conflicts"]})
        if set(rules) <= set(DIVERGENCE_RULES):
            return "divergence"
        return f"we refuse, SGLang resolves: {' + '.join(r for r in rules if r not in DIVERGENCE_RULES)}"
    differ = sorted(f for f in fields if result["values"].get(f) != _spelled(sglang_value(sg, request, f, defaults),
                                                                              aliases.get(f, {})))
    if differ and _skipped_for_kernel(result, differ, sg, request, defaults):
        return "divergence"
    if differ:
        return f"values differ: {', '.join(differ)}"
    # the environment SGLang's processes get: what the request brought, with what the resolution set on top
    expected = {**(request.get("env") or {}), **sg.get("env", {})}
    env_differ = sorted(n for n in set(expected) | set(result.get("env", {}))
                        if expected.get(n) != result.get("env", {}).get(n))
    return f"environment differs: {', '.join(env_differ)}" if env_differ else "agree"


def _spelled(value: Any, aliases: dict[str, Any]) -> Any:
    """SGLang keeps a deprecated spelling (``nsa``) where the resolver names the value it means (``dsa``)."""
    return aliases.get(value, value) if isinstance(value, str) else value


#: why a default candidate was passed over for a kernel reason (resolver.resolution): SGLang would pick it
#: and crash or fail to import (docs/divergences.md, K)
_KERNEL_SKIPS = ("is not installed on the target", "its kernel cannot run on")


#: values that follow from the attention backend (page size, the radix cache under deterministic
#: inference, the draft backend that copies it, the mamba radix cache that follows the radix cache) or
#: from the MoE runner (the shared-expert fusion its kernel needs off, the draft's runner that copies it)
FOLLOW_THE_BACKEND = {"page_size", "disable_radix_cache", "uses_mamba_radix_cache",
                      "speculative_draft_attention_backend", "disable_shared_experts_fusion",
                      "speculative_moe_runner_backend"}


def _skipped_for_kernel(result: dict, differ: list[str], sg: dict, request: dict, defaults: dict) -> bool:
    """SGLang's pick is a default the resolver passed over because its kernel is absent or cannot run
    here, so it took the next candidate; values that follow from it may differ too."""
    skipped = {f for f in differ if any(
        c["outcome"] == "skipped" and c["value"] == sglang_value(sg, request, f, defaults)
        and any(why in c["why"] for why in _KERNEL_SKIPS)
        for c in result.get("derivations", {}).get(f, {}).get("candidates", ()))}
    return bool(skipped) and set(differ) - skipped <= FOLLOW_THE_BACKEND


def compare(requests: list[dict], answers: dict[str, dict], results: dict[str, dict],
            engine: Engine) -> dict[str, list[str]]:
    """Request ids by class (see the module doc)."""
    fields = sorted(engine.compiled.pack.options)
    defaults = {dest: a.default for dest, a in flag_catalogue().by_dest.items()}
    aliases = {name: dict(o.value_aliases or {}) for name, o in engine.compiled.pack.options.items()}
    classes: dict[str, list[str]] = collections.defaultdict(list)
    for r in requests:
        classes[classify(r, answers[r["id"]], results[r["id"]], fields, defaults, aliases)].append(r["id"])
    return dict(classes)


PASSING = ("agree", "divergence", "not-offered", "harness")


def fix_trials(requests: list[dict], results: dict[str, dict], engine: Engine, every: int = 1) -> list[dict]:
    """Every fix the resolver lists for every ``every``-th conflicted launch, applied: one request each
    (id ``<launch>/fix<n>``, the fix under ``"fix"``), for SGLang to accept or refuse."""
    trials = []
    conflicted = [r for r in requests if results[r["id"]]["status"] == "conflict"][::every]
    for r in conflicted:
        with_fixes = resolve_line(engine, json.dumps(as_launched(r)), fixes=True)
        fixes = [f for c in with_fixes.get("conflicts", ()) for f in c["fixes"]]
        for n, fix in enumerate(fixes):
            args = {k: v for k, v in r["args"].items() if k not in fix["unset"]}
            args.update(fix["set"])
            trials.append({**r, "id": f"{r['id']}/fix{n}", "args": args, "fix": fix})
    return trials


def check_fixes(trials: list[dict], answers: dict[str, dict], results: dict[str, dict]) -> dict[str, list[str]]:
    """Trial ids by class: ``accepted`` (both resolve), ``harness``, or what went wrong with the fix."""
    classes: dict[str, list[str]] = collections.defaultdict(list)
    for t in trials:
        answer, result = answers[t["id"]], results[t["id"]]
        sg = answer.get("sglang", {})
        if "harness_error" in answer or sg.get("raised_in", "").startswith(ORACLE_STUBS):
            kind = "harness"
        elif result["status"] != "resolved":
            kind = f"the fix does not resolve here: {result['status']}"
        elif sg["status"] == "error":
            kind = f"SGLang refuses the fix: {sg['type']}: {_template(sg['message'])}"
        else:
            kind = "accepted"
        classes[kind].append(t["id"])
    return dict(classes)


def report(classes: dict[str, list[str]], requests: list[dict], answers: dict, results: dict, show: int,
           out=sys.stdout) -> int:
    """Print the classes, commonest difference first, with ``show`` examples each; the number of differences."""
    by_id = {r["id"]: r for r in requests}
    total = sum(map(len, classes.values()))
    for name in PASSING:
        print(f"{name:<12} {len(classes.get(name, ())):>6}", file=out)
    differences = sorted(((k, v) for k, v in classes.items() if k not in PASSING), key=lambda kv: (-len(kv[1]), kv[0]))
    n_diff = sum(len(v) for _, v in differences)
    print(f"{'different':<12} {n_diff:>6}  of {total} launches, {len(differences)} kinds", file=out)
    for kind, ids in differences:
        print(f"\n{len(ids):>5} x {kind}", file=out)
        for rid in ids[:show]:
            r = by_id[rid]
            sg = answers[rid].get("sglang", {})
            print(f"      {rid}: {r['platform']} {r['model_name']} {json.dumps(r['args'], sort_keys=True)}", file=out)
            if kind.startswith("values differ"):
                fields = kind.split(": ", 1)[1].split(", ")
                res = results[rid]["values"]
                shown = {f: (sg.get("values", {}).get(f, r["args"].get(f, "<default>")), res.get(f)) for f in fields}
                print(f"        (sglang, ours): {shown}", file=out)
            elif kind.startswith("environment differs"):
                names = kind.split(": ", 1)[1].split(", ")
                shown = {n: (sg.get("env", {}).get(n), results[rid].get("env", {}).get(n)) for n in names}
                print(f"        (sglang, ours): {shown}", file=out)
            elif sg.get("status") == "error":
                print(f"        sglang: {sg['type']}: {sg['message'][:300]}", file=out)
    return n_diff


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=20261201, help="random seed of the launches (default: %(default)s)")
    ap.add_argument("--count", type=int, default=2000, help="how many launches (default: %(default)s)")
    ap.add_argument("--oracle-python", default=default_oracle_python(),
                    help="the Python of the oracle's venv (default: $SGLANG_ORACLE_PYTHON, else ../.oracle-venv)")
    ap.add_argument("--oracle-dir", default=default_oracle_dir(),
                    help="the oracle folder holding ask.py (default: $SGLANG_ORACLE_DIR or ../shared/oracle)")
    ap.add_argument("--cache", help="a JSONL file of oracle answers kept between runs (keyed by request)")
    ap.add_argument("--show", type=int, default=3, help="examples shown per kind of difference")
    ap.add_argument("--fixes", type=int, default=0, metavar="N",
                    help="also apply every fix listed for every N-th conflicted launch and ask SGLang about each")
    ap.add_argument("--write", help="write every launch with both answers and its class to this JSONL file")
    a = ap.parse_args(argv)
    if not a.oracle_python:
        ap.error("give --oracle-python (or set SGLANG_ORACLE_PYTHON): see the oracle's README for its venv")
    if a.count < 1:
        ap.error("--count must be at least 1")
    if not os.path.isfile(os.path.join(a.oracle_dir, "ask.py")):
        ap.error(f"no ask.py in {a.oracle_dir}: give --oracle-dir (or set SGLANG_ORACLE_DIR)")
    requests = launches(a.seed, a.count)
    print(f"seed {a.seed}: {len(requests)} launches; asking SGLang 0.5.23 (oracle) ...", file=sys.stderr)
    answers = ask_oracle(requests, a.oracle_python, a.oracle_dir, a.cache)
    print("asking the resolver ...", file=sys.stderr)
    engine = get_engine()
    results = ask_resolver(requests, engine)
    classes = compare(requests, answers, results, engine)
    if a.write:
        kind = {rid: k for k, ids in classes.items() for rid in ids}
        with open(a.write, "w", encoding="utf-8") as fh:
            fh.writelines(json.dumps({"request": r, "sglang": answers[r["id"]], "resolver": results[r["id"]],
                                     "class": kind[r["id"]]}) + "\n" for r in requests)
    failed = report(classes, requests, answers, results, a.show)
    if a.fixes > 0:
        trials = fix_trials(requests, results, engine, a.fixes)
        print(f"\nchecking {len(trials)} fixes with SGLang ...", file=sys.stderr)
        fix_answers = ask_oracle([{k: v for k, v in t.items() if k != "fix"} for t in trials],
                                 a.oracle_python, a.oracle_dir, a.cache)
        fix_results = ask_resolver(trials, engine)
        fix_classes = check_fixes(trials, fix_answers, fix_results)
        by_id = {t["id"]: t for t in trials}
        print(f"\nfixes: {len(fix_classes.get('accepted', ()))} accepted by SGLang, "
              f"{len(fix_classes.get('harness', ()))} the oracle could not run", file=sys.stdout)
        for kind, ids in sorted(fix_classes.items(), key=lambda kv: -len(kv[1])):
            if kind in ("accepted", "harness"):
                continue
            failed += len(ids)
            print(f"\n{len(ids):>5} x {kind}")
            for tid in ids[:a.show]:
                t = by_id[tid]
                print(f"      {tid}: {t['platform']} {t['model_name']} fix {t['fix']['description']!r} -> "
                      f"{json.dumps(t['args'], sort_keys=True)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
