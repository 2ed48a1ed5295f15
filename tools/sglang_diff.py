#!/usr/bin/env python3
"""Differential test against SGLang 0.5.23: seeded random whole launches, SGLang's own resolution vs the resolver.

    python tools/sglang_diff.py --seed 7 --count 2000 [--oracle-python PY] [--oracle-dir DIR] [--show 5]

It measures fidelity where the rules are silent, not only where they speak.  Each launch is a model
fixture (the resolver's catalogue, ``resolver/data/models.json``, and the oracle's own
``full_pipeline.MODELS``, each with its checkpoint files) on one of SGLang's ten platforms, with

- the hand-written draws of the deep areas (attention, DSA and KV cache, speculative decoding with
  draft checkpoints, MoE kernels and quantization, the parallel layout and all-to-all, PD and
  HiCache, memory and CUDA graphs), as before, and
- a draw from the WHOLE flag catalogue (``resolver/data/sglang_flags.json``): any SGLang flag, by
  its type and choices (booleans flipped, choices drawn, numbers from small sets around the
  default), 0 to 4 of them per launch, so a flag no rule reads is drawn too.  The flags left out
  are listed in ``SKIPPED`` with the reason (they must name files, services or plugins).

SGLang answers through the oracle (``ask.py``: a separate Python with the sglang 0.5.23 wheel and
torch stubbed out), the resolver answers in this process, and every field SGLang declares is
compared (the answer's ``values``: what any pipeline step declared), with the environment, besides
every field the resolver reports.  Each launch gets one class:

- ``agree``: both refuse, or both resolve with the same value for every field and variable;
- ``divergence``: the resolver refuses only by rules of docs/divergences.md (``DIVERGENCE_RULES``),
  or SGLang picks a default whose kernel is absent or cannot run there;
- ``not-offered``: a value SGLang's own CLI does not offer (an input error here);
- ``harness``: the oracle could not run the request (no verdict on either side);
- ``named-not-checked``: SGLang refuses, the resolver resolves and names the refusing check
  (module:function) in its ``not_checked`` list;
- ``silent-miss``: SGLang refuses, the resolver resolves without naming that check;
- ``extra-refusal``: the resolver refuses (a conflict, or an input error), SGLang resolves;
- ``value-differs``: a field (or environment variable) SGLang declares has another value here;
- ``field-not-reported``: everything reported agrees, but SGLang declares a field the resolver's
  result does not report.

Within a launch every finding is also counted by its kind (the refusing SGLang function of a silent
miss, the field of a value difference or of an unreported field, the rules of an extra refusal).
The exit status is 1 when a silent miss, an extra refusal, a value difference or an unreported
field is left, else 0.  The same seed and count give the same launches on every machine with the
same oracle: the draw uses only ``random.Random(seed)`` over sorted inputs.
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import fcntl
import functools
import hashlib
import json
import os
import random
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, ROOT)

# imported only after the path above, so a script run imports this checkout's resolver, not an installed one
from resolver.api import Engine, get_engine  # noqa: E402
from resolver.catalogue import CatalogueFlag  # noqa: E402
from resolver.catalogue import catalogue as flag_catalogue  # noqa: E402
from resolver.model_source import catalogue as model_catalogue  # noqa: E402
from resolver.tools.batch import resolve_line  # noqa: E402

PLATFORMS = ("sm80", "sm86", "sm89", "sm90", "sm100", "sm103", "sm120", "sm121", "gfx942", "gfx950")
#: the folder the oracle writes its fixture checkpoints to, this run's own when $SGLANG_ORACLE_FIXTURE names one
#: (two oracle processes writing one folder would read each other's config.json)
ORACLE_FIXTURE = os.environ.get("SGLANG_ORACLE_FIXTURE") or "/tmp/sglang-oracle-fixture"
#: one oracle process per fixture folder at a time, by this lock
ORACLE_LOCK = ORACLE_FIXTURE + ".lock"
#: where the oracle writes the target checkpoint (SGLang's model_path)
ORACLE_MODEL_DIR = ORACLE_FIXTURE + "/model"
#: where the oracle writes the draft checkpoint it is given (``speculative_draft_model_path`` must name it)
ORACLE_DRAFT_DIR = ORACLE_FIXTURE + "/draft"

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


def _quantizations(config: dict, files: dict | None = None) -> tuple:
    """--quantization values an operator types for this checkpoint: its own method, "unquant", and the
    online methods SGLang accepts on it (fp8 and NVFP4 on an unquantised checkpoint, NVFP4 over FP8).
    A ModelOpt export keeps its method in ``hf_quant_config.json`` beside a config.json without one."""
    qc = config.get("quantization_config")
    method = qc.get("quant_method") if isinstance(qc, dict) else None
    modelopt = ((files or {}).get("hf_quant_config.json") or {}).get("quantization") or {}
    if method is None and modelopt.get("quant_algo") in ("NVFP4", "FP8"):
        method = "modelopt_fp4" if modelopt["quant_algo"] == "NVFP4" else "modelopt_fp8"
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




@dataclass(frozen=True)
class Fixture:
    """A model checkpoint a launch names: its label, config.json and the other files SGLang reads beside it."""

    name: str
    config: dict[str, Any]
    files: dict[str, Any] = dc_field(default_factory=dict)


def launch(rng: random.Random, models: list[Fixture], catalogue, draws: dict[str, tuple]) -> dict[str, Any]:
    """One random launch in the oracle's request format: the deep areas' draws, then the whole catalogue's."""
    model = rng.choice(models)
    name, config = model.name, model.config
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
    if model.files:
        request["model_files"] = model.files
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
            draft_name, draft = rng.choice(DRAFT_VARIANTS.get(algorithm, [(algorithm, DRAFTS[algorithm])]))
            request["draft_model_name"] = draft_name
            request["draft_model"] = draft
            args["speculative_draft_model_path"] = ORACLE_DRAFT_DIR
        args["speculative_draft_model_quantization"] = _maybe(rng, 0.1, ("fp8", "unquant", "modelopt_fp4"))
        args["speculative_moe_runner_backend"] = _maybe(rng, 0.05, ("auto", "triton", "flashinfer_trtllm"))
    # the MoE kernels and quantization
    args["quantization"] = _maybe(rng, 0.15, _offered(catalogue, "quantization", _quantizations(config, model.files)))
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
    _draw_catalogue(rng, request["args"], draws)
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



# ---------------------------------------------------------------------------------------------
# The whole flag catalogue
# ---------------------------------------------------------------------------------------------

#: how many flags of the whole catalogue a launch adds to the deep areas' draw (weights of 0, 1, 2, 3 and 4):
#: with the deep draws' own five or so, a launch sets about six flags, as real launch commands do
CATALOGUE_COUNT_WEIGHTS = (20, 30, 25, 15, 10)

#: values for flags whose type alone gives none (free-text strings, JSON, lists) or whose generic numbers
#: would not be sane (a ratio SGLang wants above 1, a port, a node rank), each a value SGLang documents
VALUES: dict[str, tuple] = {
    # model and checkpoint
    "model_impl": ("sglang", "transformers"),
    "model_config_parser": ("hf",),
    "json_model_override_args": ('{"max_position_embeddings": 32768}',),  # applied over config.json
    "revision": ("main",),
    "speculative_draft_model_revision": ("main",),
    "modelopt_quant": ("fp8", "nvfp4"),
    "context_length": (4096, 32768, 131072, 262144),
    # the machine and the service
    "device": ("cuda", "cpu"),
    "host": ("0.0.0.0",),
    "fastapi_root_path": ("/sglang",),
    "dist_init_addr": ("127.0.0.1:5000",),
    "node_rank": (1,),
    "nccl_port": (29500,),
    "grpc_port": (50051,),
    "gated_launch_port": (31000,),
    "smg_http_sidecar_port": (30010,),
    "served_model_name": ("my-model",),
    "weight_version": ("v2",),
    "api_key": ("sk-test",),
    "admin_api_key": ("sk-admin",),
    "random_seed": (0, 42),
    "dist_timeout": (600, 1800),
    # logging, metrics and tracing
    "log_level": ("debug", "warning"),
    "log_level_http": ("warning",),
    "log_requests_target": (["stdout"],),
    "tokenizer_metrics_custom_labels_header": ("x-tenant",),
    "tokenizer_metrics_allowed_custom_labels": (["tenant"],),
    "prompt_tokens_buckets": (["default"],),
    "generation_tokens_buckets": (["default"],),
    "bucket_time_to_first_token": ([0.1, 0.5, 1.0, 5.0],),
    "bucket_inter_token_latency": ([0.01, 0.05, 0.1],),
    "bucket_e2e_request_latency": ([1.0, 10.0, 60.0],),
    "extra_metric_labels": ({"cluster": "a"},),
    "forward_pass_metrics_worker_id": ("worker-0",),
    "trace_modules": ("request,mooncake",),
    "otlp_service_name": ("sglang",),
    "uvicorn_access_log_exclude_prefixes": (["/metrics", "/health"],),
    "gc_threshold": ([50000, 10, 10],),
    # serving
    "allowed_media_domains": (["huggingface.co"],),
    "default_chat_template_kwargs": ({"enable_thinking": False},),
    "preferred_sampling_params": ({"temperature": 0.6, "top_p": 0.95},),
    "limit_mm_data_per_request": ({"image": 2},),
    "constrained_json_whitespace_pattern": (r"[\n\t ]*",),
    "max_queued_requests": (64, 1024),
    "prefill_max_requests": (8, 64),
    "default_priority_value": (0, 10),
    "constrained_json_max_whitespace_cnt": (2, 8),
    "prefill_delayer_max_delay_ms": (10.0, 100.0),
    "prefill_delayer_forward_passes_buckets": ([1.0, 5.0, 10.0],),
    "prefill_delayer_wait_seconds_buckets": ([0.1, 1.0, 5.0],),
    # memory, cache and graphs
    "mem_fraction_static": (0.7, 0.8, 0.85, 0.9),
    "hicache_ratio": (1.5, 2.0, 3.0),  # the host pool over the device pool: SGLang wants it above 1
    "cuda_graph_bs_decode": ([1, 2, 4, 8, 16, 32],),
    "cuda_graph_bs_prefill": ([4, 8, 16, 32],),
    "cuda_graph_prefill_max_context": (4096, 32768),
    "cuda_graph_max_seq_len_prefill": (4096, 16384),
    "triton_attention_split_tile_size": (64, 256),
    "max_mamba_cache_size": (64, 512),
    "mm_preprocess_cache_size_mb": (256, 1024),
    "swa_prefix_tails": (1, 4),
    "disaggregation_decode_extra_slots": (0, 16),
    "min_free_slots_delay": (1, 8),
    # parallelism, experts and speculative decoding
    "pp_max_micro_batch_size": (4, 16),
    "shared_experts_tp_size": (1, 2, 4, 8),
    "eplb_algorithm": ("deepseek", "elasticity_aware"),
    "eplb_rebalance_layers_per_chunk": (1, 4),
    "init_expert_location": ("trivial",),
    "elastic_ep_initial_size": (2, 8),
    "max_ep_size": (8, 16),
    "paged_experts_num_resident": (8, 64),
    "speculative_algorithm": _SPEC,
    "speculative_draft_attention_backend": ("fa3", "fa4", "flashinfer", "triton", "trtllm_mha"),
    "speculative_dflash_block_size": (8, 16),
    "speculative_dspark_block_size": (8, 16),
    "speculative_draft_window_size": (128, 1024),
    "speculative_draft_sink_size": (4, 64),
    "return_aux_hidden_state_layer_ids": ([1, 2],),
    # LoRA
    "max_lora_rank": (8, 64),
    "max_loaded_loras": (4, 16),
}

#: flags the whole-catalogue draw leaves out, by the reason no sane value can be typed here
SKIPPED_BY_REASON: dict[str, tuple[str, ...]] = {
    "the checkpoint: always the oracle's fixture folder (as_launched), a draft one drawn with speculative decoding": (
        "model_path", "speculative_draft_model_path"),
    "names a file or folder: none exists on the oracle's machine (its guard refuses any path outside the fixture "
    "checkpoint), and SGLang would fail on the missing file, not in its launch resolution": (
        "tokenizer_path", "quantization_param_path", "modelopt_checkpoint_restore_path",
        "modelopt_checkpoint_save_path", "modelopt_export_path", "rl_quant_profile", "ssl_keyfile", "ssl_certfile",
        "ssl_ca_certs", "ssl_keyfile_password", "chat_template", "completion_template", "file_storage_path",
        "crash_dump_folder", "export_metrics_to_file_dir", "speculative_token_map",
        "speculative_dspark_sps_table_path", "speculative_dspark_confidence_sts_path", "spec_trace_dir",
        "speculative_ngram_external_corpus_path", "speculative_adaptive_config", "lora_paths", "lmcache_config_file",
        "flexkv_config_file", "kt_weight_path", "pdmux_config_path", "download_dir", "decrypted_config_file",
        "decrypted_draft_config_file", "debug_tensor_dump_output_folder", "debug_tensor_dump_input_file",
        "debug_tensor_dump_layers", "msprobe_dump_config", "ple_offload_dir", "config", "uno_lora_path",
        "weight_cache_socket", "model_checksum", "numa_node"),
    "a JSON or YAML configuration of a subsystem, whose schema no value here is known to satisfy": (
        "model_loader_extra_config", "cuda_graph_config", "kv_events_config", "hisparse_config", "deepep_config",
        "hicache_storage_backend_extra_config", "radix_eviction_policy_config", "sidecar_args", "mm_process_config",
        "unified_cache_external_linker_config", "modelexpress_config", "watermark_config", "dllm_algorithm_config",
        "remote_instance_weight_loader_send_weights_group_ports"),
    "an address, URL or endpoint of another service, or a network device of the machine": (
        "sidecar", "tool_server", "load_publish_endpoint", "otlp_traces_endpoint", "decoupled_spec_bind_endpoint",
        "decoupled_spec_connect_endpoints", "decoupled_spec_rank", "decoupled_spec_role",
        "remote_instance_weight_loader_seed_instance_ip", "remote_instance_weight_loader_seed_instance_service_port",
        "encoder_urls", "encoder_register_urls", "mooncake_ib_device", "disaggregation_ib_device",
        "forward_pass_metrics_ipc_name"),
    "names Python code or a plugin registered at run time (none is registered offline)": (
        "custom_weight_loader", "forward_hooks", "radix_cache_backend", "warmups", "hf_chat_template_name",
        "dllm_algorithm", "flashinfer_autotune_skip_ops", "offload_mode"),
    "KTransformers' CPU experts: every option needs --kt-weight-path, a folder of CPU expert weights": (
        "kt_method", "kt_cpuinfer", "kt_threadpool_count", "kt_num_gpu_experts", "kt_max_deferred_experts_per_token"),
}
SKIPPED: dict[str, str] = {dest: why for why, dests in SKIPPED_BY_REASON.items() for dest in dests}

#: words of a float option's name that make it a fraction of something (drawn from 0.3, 0.5, 0.8)
_FRACTION_WORDS = ("fraction", "ratio", "threshold", "utilization", "watermark", "conservativeness")


def flag_values(flag: CatalogueFlag) -> tuple | None:
    """The values the whole-catalogue draw types for one flag, or None when its type gives none (a string
    without choices, JSON, a list): such a flag needs an entry in VALUES or SKIPPED."""
    if flag.dest in VALUES:
        return VALUES[flag.dest]
    if flag.kind in ("true", "false"):
        return (flag.kind == "true",)
    if flag.kind == "bool_optional":  # unset means "SGLang decides": both spellings are real
        return (True, False) if flag.default is None else (not flag.default,)
    if flag.kind == "store_const":
        return (flag.const,)
    if flag.choices:
        others = tuple(c for c in flag.choices if c != flag.default) or flag.choices
        return tuple([c] for c in others) if flag.nargs in ("+", "*") else others
    if flag.nargs is not None:
        return None
    if flag.type in ("int", "int_suffix"):
        return _ints(flag)
    if flag.type == "float":
        return _floats(flag)
    return None


def _ints(flag: CatalogueFlag) -> tuple | None:
    """Sizes around the default, by powers of two (half, double, four times); small counts when unset."""
    d = flag.default
    if "port" in flag.dest.split("_"):
        return (d + 1, d + 100) if isinstance(d, int) else None
    if isinstance(d, int) and not isinstance(d, bool):
        if d > 0:
            return tuple(sorted({max(1, d // 2), d * 2, d * 4} - {d}))
        return (1, 2, 4, 8) if d == 0 else (1, 4, 16)  # -1: "no limit" or "auto"
    return (1, 2, 4, 8)


def _floats(flag: CatalogueFlag) -> tuple:
    """Fractions for a fraction, else half and double the default (a timeout's minutes when unset)."""
    d = flag.default
    if any(word in flag.dest for word in _FRACTION_WORDS):
        return tuple(v for v in (0.3, 0.5, 0.8) if v != d)
    if isinstance(d, (int, float)) and d > 0:
        return (d / 2, d * 2)
    return (60.0, 600.0) if "timeout" in flag.dest else (0.5, 1.0, 2.0)


def catalogue_draws(catalogue=None) -> dict[str, tuple]:
    """Every flag the whole-catalogue draw may type (by ServerArgs field, sorted) -> its values."""
    catalogue = catalogue or flag_catalogue()
    draws = {}
    for dest in sorted(catalogue.by_dest):
        values = None if dest in SKIPPED else flag_values(catalogue.by_dest[dest])
        if values is not None:
            draws[dest] = values
    return draws


def unclassified_flags(catalogue=None) -> list[str]:
    """Flags with no drawable value that SKIPPED does not explain (a new flag of a catalogue update):
    each needs a VALUES or a SKIPPED entry."""
    catalogue = catalogue or flag_catalogue()
    return sorted(d for d, f in catalogue.by_dest.items() if d not in SKIPPED and flag_values(f) is None)


def _draw_catalogue(rng: random.Random, args: dict[str, Any], draws: dict[str, tuple]) -> None:
    """Add a few flags of the whole catalogue that the launch has not set yet, each with one of its values
    (a list or object value is copied: requests never share one)."""
    count = rng.choices(range(len(CATALOGUE_COUNT_WEIGHTS)), weights=CATALOGUE_COUNT_WEIGHTS)[0]
    free = [dest for dest in draws if dest not in args]
    for dest in rng.sample(free, min(count, len(free))):
        args[dest] = json.loads(json.dumps(rng.choice(draws[dest])))


# ---------------------------------------------------------------------------------------------
# Model fixtures
# ---------------------------------------------------------------------------------------------

#: prints the oracle's model fixtures (full_pipeline.MODELS, MODEL_FILES) as JSON; run in the oracle's Python,
#: since importing full_pipeline imports SGLang (the resolver project never imports the oracle)
_ORACLE_MODELS = ("import json, sys; sys.path.insert(0, sys.argv[1]); import full_pipeline as fp; "
                  "json.dump({'models': fp.MODELS, 'files': fp.MODEL_FILES}, sys.stdout, sort_keys=True)")


@functools.lru_cache(maxsize=4)
def _oracle_models(python: str, oracle_dir: str) -> str:
    proc = subprocess.run([python, "-B", "-c", _ORACLE_MODELS, oracle_dir], capture_output=True, text=True,
                          check=False, cwd=os.path.dirname(oracle_dir))
    if proc.returncode != 0:
        raise SystemExit(f"cannot read the oracle's model fixtures from {oracle_dir}/full_pipeline.py "
                         f"(exit {proc.returncode}): {proc.stderr.strip()[-2000:]}")
    return proc.stdout


def model_fixtures(oracle_python: str | None = None, oracle_dir: str | None = None) -> list[Fixture]:
    """Every model fixture a launch may name, sorted: the resolver's catalogue (less ORACLE_CANNOT_RUN) and the
    oracle's own ``full_pipeline.MODELS`` (named ``oracle:<key>``), each with its checkpoint files."""
    python = oracle_python or default_oracle_python()
    if not python:
        raise SystemExit("the oracle's model fixtures need its Python: give --oracle-python "
                         "(or set SGLANG_ORACLE_PYTHON); see the oracle's README for its venv")
    oracle = json.loads(_oracle_models(python, os.path.abspath(oracle_dir or default_oracle_dir())))
    ours = [Fixture(m.id, dict(m.config), dict(getattr(m, "files", None) or {}))
            for m in model_catalogue() if m.id not in ORACLE_CANNOT_RUN]
    theirs = [Fixture(f"oracle:{key}", config, dict(oracle["files"].get(key) or {}))
              for key, config in oracle["models"].items() if config is not None]
    return sorted(ours, key=lambda f: f.name) + sorted(theirs, key=lambda f: f.name)


def launches(seed: int, count: int, fixtures: list[Fixture] | None = None) -> list[dict[str, Any]]:
    """``count`` launches drawn from ``seed`` (ids ``s<seed>-<n>``), the same on every machine with the same
    oracle (its model fixtures are read from it unless ``fixtures`` are given)."""
    rng = random.Random(seed)
    models = fixtures if fixtures is not None else model_fixtures()
    catalogue = flag_catalogue()
    draws = catalogue_draws(catalogue)
    return [{"id": f"s{seed}-{n}", **launch(rng, models, catalogue, draws)} for n in range(count)]


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
    """Hold the lock of this run's fixture folder (other oracle runs on it wait; see ORACLE_LOCK)."""
    with open(ORACLE_LOCK, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


#: runs ask.py or full_pipeline.py in the oracle's Python with ORACLE_FIXTURE as its fixture folder.  The oracle
#: reads $SGLANG_ORACLE_FIXTURE only after generate.py has scrubbed SGLANG_* from the environment, and starts
#: its worker processes with an environment of its own, so by itself it always writes /tmp/sglang-oracle-fixture.
#: The driver points the parent at the folder (the grids' draft path is made there) and hands the variable to
#: each worker in its machine's environment, which the worker puts back after the scrub and before it reads
#: the variable; a case still starts from the oracle's fixed environment plus the request's own ``env``.
_ORACLE_DRIVER = r"""
import json, sys
oracle_dir, root, what = sys.argv[1:4]
sys.path.insert(0, oracle_dir)
import full_pipeline as fp
if root != fp.FIXTURE_ROOT:
    fp.FIXTURE_ROOT, fp.MODEL_DIR, fp.DRAFT_DIR = root, root + "/model", root + "/draft"
    fp._FIXTURE_MARK = root + "/.sglang-oracle-fixture"
    _signature = fp.machine_signature

    def machine_signature(request):
        machine = json.loads(_signature(request))
        machine["env"] = {**machine["env"], "SGLANG_ORACLE_FIXTURE": root}
        return fp.canonical(machine)

    fp.machine_signature = machine_signature
if what == "grids":
    sys.exit(fp.main(sys.argv[4:]))
import ask
sys.exit(ask.main(sys.argv[4:]))
"""


def run_oracle(python: str, oracle_dir: str, what: str, argv: list[str]) -> subprocess.CompletedProcess:
    """``ask.py argv`` (what="ask") or ``full_pipeline.py argv`` (what="grids") in the oracle's Python, writing
    its checkpoints to ORACLE_FIXTURE, under its lock."""
    oracle_dir = os.path.abspath(oracle_dir)
    with oracle_lock():
        return subprocess.run([python, "-B", "-c", _ORACLE_DRIVER, oracle_dir, ORACLE_FIXTURE, what, *argv],
                              cwd=os.path.dirname(oracle_dir), capture_output=True, text=True, check=False)


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
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as tmp:
            tmp.writelines(json.dumps(r) + "\n" for r in todo)
        try:
            proc = run_oracle(python, oracle_dir, "ask", [tmp.name])
        finally:
            os.unlink(tmp.name)
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


def _resolver_engine() -> Engine:
    return get_engine()


#: packages the oracle's venv lacks that SGLang's resolution asks for, told to the resolver as the machine's facts
#: (the oracle installs no mooncake: SGLang then turns the TransferEngine seed service off)
ORACLE_PACKAGES = {"mooncake": False}


def _resolve_one(engine: Engine, request: dict) -> tuple[str, dict]:
    launched = as_launched(request)
    launched["installed"] = {**ORACLE_PACKAGES, **(launched.get("installed") or {})}
    return request["id"], resolve_line(engine, json.dumps(launched), fixes=False)


def ask_resolver(requests: list[dict], engine: Engine, jobs: int = 1) -> dict[str, dict]:
    """The resolver's result per request id, as ``resolve --batch --no-fixes`` gives it; ``jobs`` > 1 resolves
    on that many processes (each with the shipped rules), for the grids' thousands of requests."""
    if jobs <= 1:
        return dict(_resolve_one(engine, r) for r in requests)
    from resolver.jobs import run_ordered

    return dict(run_ordered(_resolver_engine, (), _resolve_one, requests, jobs, chunk=64))


# ---------------------------------------------------------------------------------------------
# Comparison
# ---------------------------------------------------------------------------------------------

#: modules of the oracle's environment (stubbed transformers): an error raised there is not SGLang's answer
ORACLE_STUBS = ("sglang.srt.utils.hf_transformers_patches",)
#: values SGLang 0.5.23's CLI does not offer (the resolver refuses them as input errors)
NOT_OFFERED = ("'cutlass_mla'", "'float16'")
#: what the oracle records for the seed SGLang draws at random when none is typed
RANDOM_MARK = "<random>"


def _template(message: str) -> str:
    """An error message with its numbers and quoted values blanked, to group one kind of refusal."""
    message = re.sub(r"'[^']*'|\"[^\"]*\"|\[[^\]]*\]", "…", message.splitlines()[0] if message else "")
    return re.sub(r"\d+(\.\d+)?", "N", message)[:160]


#: options SGLang reports nested: the decode graph's largest batch is cuda_graph_config.decode.max_bs, and
#: every other leaf rules/cuda_graph_config.yaml decides per phase is cuda_graph_config_<phase>_<leaf>
GRAPH_LEAVES = ("backend", "max_bs", "bs", "tc_compiler", "max_seq_len", "max_context_size", "full_prefill_max_req",
                "full_prefill_prefix_chunk_tokens")
NESTED = {"cuda_graph_max_bs_decode": ("cuda_graph_config", "decode", "max_bs"),
          **{f"cuda_graph_config_{phase}_{leaf}": ("cuda_graph_config", phase, leaf)
             for phase in ("decode", "prefill") for leaf in GRAPH_LEAVES
             if (phase, leaf) != ("decode", "max_bs")}}


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
    "decode": {"default": lambda m: _decode_batches(m, False), "speculative": lambda m: _decode_batches(m, True),
               "unpadded": lambda m: list(range(1, m + 1))},
    "prefill": {"default": _prefill_buckets,
                "aligned8": lambda m: sorted({(b + 7) // 8 * 8 for b in _prefill_buckets(m)})},
}


def _batch_list_name(phase: str, batches: Any, max_bs: Any, typed: Any = None) -> Any:
    """A phase's batch list named by the generator that makes it from the phase's max_bs, or as the list the
    launch typed (``typed``: "typed", or "typed_aligned8" rounded up to multiples of 8); the list itself when
    none of these makes it, so it shows as a difference."""
    if isinstance(typed, list) and isinstance(batches, list):
        if batches == typed:
            return "typed"
        if all(isinstance(b, int) for b in typed) and batches == sorted({(b + 7) // 8 * 8 for b in typed}):
            return "typed_aligned8"
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
        typed = request["args"].get(f"cuda_graph_bs_{NESTED[field][1]}")
        return _batch_list_name(NESTED[field][1], value, phase.get("max_bs"), typed) if isinstance(value, list) \
            else value
    if field in answer["values"]:
        return answer["values"][field]
    return request["args"].get(field, defaults.get(field))



#: the classes of a launch, in the order reported; a launch has exactly one (see the module doc)
CLASSES = ("agree", "divergence", "not-offered", "harness", "named-not-checked", "silent-miss", "extra-refusal",
           "value-differs", "field-not-reported")
#: classes that leave nothing to mend: an answer SGLang gives too, a documented departure, no verdict, or a
#: refusal the resolver said it does not check
PASSING = ("agree", "divergence", "not-offered", "harness", "named-not-checked")
#: kinds of finding that fail a run (exit status 1) and that tests/test_sglang_differential.py lists as open
FAILING = ("silent-miss", "extra-refusal", "value-differs", "field-not-reported")


@dataclass
class Verdict:
    """One launch's class, and every finding in it: kind (``<category>: <function, field or rules>``) -> what
    to show for it (SGLang's message, or SGLang's value and ours)."""

    cls: str
    findings: dict[str, str] = dc_field(default_factory=dict)


def category(kind: str) -> str:
    """``silent-miss`` of ``silent-miss: sglang.srt.arg_groups.parallel_hook:handle_data_parallelism``."""
    return kind.split(": ", 1)[0]


def _check_name(where: Any) -> tuple[str, str]:
    """(module, function) of a check, however it is spelled: the oracle's ``raised_in``
    (``sglang.srt.arg_groups.parallel_hook:handle_elastic_ep``) or a ``not_checked`` entry's ``check``
    (``srt/arg_groups/parallel_hook.py:handle_elastic_ep``, or a shorter ``parallel_hook:...``): the module
    dotted, without ``.py`` and without SGLang's package prefix."""
    module, _, function = (where if isinstance(where, str) else "").partition(":")
    module = module.removesuffix(".py").replace("/", ".")
    for prefix in ("sglang.", "srt.", "arg_groups."):
        module = module.removeprefix(prefix)
    return module, function


def same_check(check: Any, raised_in: str) -> bool:
    """Whether a ``not_checked`` entry's ``check`` (module:function) names the function SGLang raised in: the
    same function, and the same module up to SGLang's package prefix."""
    (m1, f1), (m2, f2) = _check_name(check), _check_name(raised_in)
    return bool(f1) and f1 == f2 and (m1 == m2 or m1.endswith("." + m2) or m2.endswith("." + m1))


@dataclass(frozen=True)
class _Context:
    defaults: dict[str, Any]  # ServerArgs field -> SGLang's default (the flag catalogue)
    aliases: dict[str, dict[str, Any]]  # option -> the deprecated spellings SGLang keeps -> the resolver's name


def _context(engine: Engine) -> _Context:
    options = engine.compiled.pack.options
    return _Context({dest: a.default for dest, a in flag_catalogue().by_dest.items()},
                    {name: dict(o.value_aliases or {}) for name, o in options.items()})


#: the resolver's flat names of what SGLang reports nested in ``cuda_graph_config``, by their path there
_NESTED_BY_PATH: dict[tuple[str, ...], str] = {path[1:]: name for name, path in NESTED.items()}


def _leaves(value: dict, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for key, item in value.items():
        if isinstance(item, dict):
            yield from _leaves(item, (*path, key))
        else:
            yield (*path, key)


def _shown(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 120 else text[:117] + "..."


def judge(request: dict, answer: dict, result: dict, ctx: _Context) -> Verdict:
    """The class of one launch and its findings (see the module doc)."""
    if "harness_error" in answer:
        return Verdict("harness")
    sg = answer["sglang"]
    if sg["status"] == "error" and sg.get("raised_in", "").startswith(ORACLE_STUBS):
        return Verdict("harness")  # the oracle's stand-in for transformers failed: no verdict of SGLang's
    if result["status"] == "error":
        error = result.get("error", "")
        if "invalid value" in error and any(v in error for v in NOT_OFFERED):
            return Verdict("not-offered")
        if sg["status"] == "error" and not result.get("internal"):
            return Verdict("agree")  # both refuse the launch (here as bad input)
        what = "internal error" if result.get("internal") else "input error"
        return Verdict("extra-refusal", {f"extra-refusal: {what}: {_template(error)}": error})
    if sg["status"] == "error":
        if result["status"] == "conflict":
            return Verdict("agree")
        where = sg.get("raised_in") or "?"
        message = f"{sg['type']}: {sg['message']}"
        if any(same_check(c.get("check"), where) for c in result.get("not_checked") or () if isinstance(c, dict)):
            return Verdict("named-not-checked", {f"named-not-checked: {where}": message})
        return Verdict("silent-miss", {f"silent-miss: {where}": message})
    if result["status"] == "conflict":
        others = [c for c in result["conflicts"] if c["rule"]["id"] not in DIVERGENCE_RULES]
        if not others:
            return Verdict("divergence")
        rules = " + ".join(sorted({c["rule"]["id"] for c in others}))
        return Verdict("extra-refusal", {f"extra-refusal: {rules}": others[0]["message"]})
    return _judge_values(request, sg, result, ctx)


def _judge_values(request: dict, sg: dict, result: dict, ctx: _Context) -> Verdict:
    """Both resolve: every field SGLang declares, every field the resolver reports and the environment."""
    ours, declared = result["values"], sg["values"]
    request = as_launched(request)  # what SGLang was given: its model_path is the fixture folder
    not_decided = {e.get("field") for e in result.get("not_decided") or () if isinstance(e, dict)}
    findings: dict[str, str] = {}
    # what SGLang declares that the resolver does not report (cuda_graph_config leaf by leaf: the resolver
    # reports some of its leaves under flat names, NESTED)
    for name, value in declared.items():
        if name == "cuda_graph_config" and isinstance(value, dict):
            for path in _leaves(value):
                if _NESTED_BY_PATH.get(path) not in ours:
                    dotted = ".".join((name, *path))
                    findings[f"field-not-reported: {dotted}"] = f"sglang: {_shown(_dig(value, path))}"
        elif name not in ours:
            if value == RANDOM_MARK and name in not_decided:
                findings[f"not-decided: {name}"] = "SGLang draws it at start-up; the resolver names it not decided"
            else:
                findings[f"field-not-reported: {name}"] = f"sglang: {_shown(value)}"
    # every value the resolver reports against SGLang's final one (declared, else typed, else its default)
    differ: dict[str, tuple[Any, Any]] = {}
    for name in sorted(ours):
        theirs = _spelled(sglang_value(sg, request, name, ctx.defaults), ctx.aliases.get(name, {}))
        if theirs == RANDOM_MARK and ours[name] is None and name in not_decided:
            findings[f"not-decided: {name}"] = "SGLang draws it at start-up; the resolver names it not decided"
        elif ours[name] != theirs:
            differ[name] = (theirs, ours[name])
    explained = bool(differ) and _skipped_for_kernel(result, sorted(differ), sg, request, ctx.defaults)
    if not explained:
        for name, (theirs, mine) in differ.items():
            findings[f"value-differs: {name}"] = f"(sglang, ours): ({_shown(theirs)}, {_shown(mine)})"
        # the environment SGLang's processes get: what the request brought, with what the resolution set on top
        # (a variable the resolution removed is None there)
        expected = {**(request.get("env") or {}), **sg.get("env", {})}
        env = result.get("env") or {}
        for name in sorted(set(expected) | set(env)):
            if expected.get(name) != env.get(name):
                findings[f"value-differs: env.{name}"] = (f"(sglang, ours): ({_shown(expected.get(name))}, "
                                                          f"{_shown(env.get(name))})")
    cats = {category(k) for k in findings}
    cls = ("value-differs" if "value-differs" in cats else "field-not-reported" if "field-not-reported" in cats
           else "divergence" if explained else "agree")
    return Verdict(cls, findings)


def _dig(value: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def compare(requests: list[dict], answers: dict[str, dict], results: dict[str, dict],
            engine: Engine) -> dict[str, Verdict]:
    """Each launch's verdict, by request id (see the module doc)."""
    ctx = _context(engine)
    return {r["id"]: judge(r, answers[r["id"]], results[r["id"]], ctx) for r in requests}


def classes_of(verdicts: dict[str, Verdict]) -> dict[str, list[str]]:
    """Request ids by class."""
    out: dict[str, list[str]] = collections.defaultdict(list)
    for rid, v in verdicts.items():
        out[v.cls].append(rid)
    return dict(out)


def kinds_of(verdicts: dict[str, Verdict], categories: Iterable[str] | None = None) -> dict[str, list[str]]:
    """Request ids by kind of finding (of the given categories, else all), in the requests' order."""
    wanted = set(categories) if categories is not None else None
    out: dict[str, list[str]] = collections.defaultdict(list)
    for rid, v in verdicts.items():
        for kind in v.findings:
            if wanted is None or category(kind) in wanted:
                out[kind].append(rid)
    return dict(out)


def open_gaps(verdicts: dict[str, Verdict]) -> dict[str, int]:
    """Every failing kind of finding -> the launches that have it (what tests/test_sglang_differential.py lists)."""
    return {kind: len(ids) for kind, ids in sorted(kinds_of(verdicts, FAILING).items())}



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
    """Trial ids by class: ``accepted`` (both resolve), ``harness``, or what went wrong with the fix (SGLang
    refusing a fixed launch by a check the resolver names in ``not_checked`` is told apart)."""
    classes: dict[str, list[str]] = collections.defaultdict(list)
    for t in trials:
        answer, result = answers[t["id"]], results[t["id"]]
        sg = answer.get("sglang", {})
        if "harness_error" in answer or sg.get("raised_in", "").startswith(ORACLE_STUBS):
            kind = "harness"
        elif result["status"] != "resolved":
            kind = f"the fix does not resolve here: {result['status']}"
        elif sg["status"] == "error" and any(same_check(c.get("check"), sg.get("raised_in", ""))
                                             for c in result.get("not_checked") or () if isinstance(c, dict)):
            kind = f"SGLang refuses the fix by a check named not checked: {sg.get('raised_in')}"
        elif sg["status"] == "error":  # by the refusing function, as silent misses are counted
            kind = f"SGLang refuses the fix: {sg.get('raised_in')}"
        else:
            kind = "accepted"
        classes[kind].append(t["id"])
    return dict(classes)



#: the report's sections: a category of finding, its title, and how many examples each of its kinds shows
#: at most (an unreported field looks the same in every launch: one example says it)
SECTIONS = (("silent-miss", "SGLang refuses, the resolver resolves and does not name the check: by SGLang's "
             "refusing function", None),
            ("named-not-checked", "SGLang refuses, the resolver resolves and names the check in not_checked", None),
            ("extra-refusal", "the resolver refuses, SGLang resolves (not a documented divergence): by rules", None),
            ("value-differs", "values that differ: by field (env.NAME: an environment variable)", None),
            ("field-not-reported", "fields SGLang declares that the resolver does not report", 1),
            ("not-decided", "fields SGLang draws at start-up that the resolver names as not decided", 1))


def report(verdicts: dict[str, Verdict], requests: list[dict], show: int, out=sys.stdout) -> int:
    """Print the classes, then every kind of finding, commonest first, with up to ``show`` examples each;
    the number of launches with a failing finding."""
    by_id = {r["id"]: r for r in requests}
    total = len(verdicts)
    classes = classes_of(verdicts)
    for name in CLASSES:
        n = len(classes.get(name, ()))
        print(f"{name:<20} {n:>6}  {100 * n / max(total, 1):5.1f}%", file=out)
    failing = sum(any(category(k) in FAILING for k in v.findings) for v in verdicts.values())
    print(f"{'(failing findings)':<20} {failing:>6}  of {total} launches", file=out)
    kinds = kinds_of(verdicts)
    for cat, title, cap in SECTIONS:
        mine = sorted(((k, ids) for k, ids in kinds.items() if category(k) == cat), key=lambda kv: (-len(kv[1]), kv[0]))
        if not mine:
            continue
        print(f"\n{title}: {sum(len(ids) for _, ids in mine)} findings, {len(mine)} kinds", file=out)
        for kind, ids in mine:
            print(f"{len(ids):>6}  {kind.split(': ', 1)[1]}", file=out)
            for rid in ids[:show if cap is None else min(show, cap)]:
                r = by_id[rid]
                print(f"          {rid}: {r['platform']} {r['model_name']} {json.dumps(r['args'], sort_keys=True)}",
                      file=out)
                print(f"            {verdicts[rid].findings[kind][:400]}", file=out)
    return failing


def format_open_gaps(verdicts: dict[str, Verdict]) -> str:
    """open_gaps() as the Python dict literal tests/test_sglang_differential.py keeps (OPEN_GAPS)."""
    lines = [f"    {kind!r}: {n}," for kind, n in open_gaps(verdicts).items()]
    return "OPEN_GAPS: dict[str, int] = {\n" + "\n".join(lines) + "\n}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=20261201, help="random seed of the launches (default: %(default)s)")
    ap.add_argument("--count", type=int, default=2000, help="how many launches (default: %(default)s)")
    ap.add_argument("--oracle-python", default=default_oracle_python(),
                    help="the Python of the oracle's venv (default: $SGLANG_ORACLE_PYTHON, else ../.oracle-venv)")
    ap.add_argument("--oracle-dir", default=default_oracle_dir(),
                    help="the oracle folder holding ask.py and full_pipeline.py "
                         "(default: $SGLANG_ORACLE_DIR or ../shared/oracle)")
    ap.add_argument("--cache", help="a JSONL file of oracle answers kept between runs (keyed by request)")
    ap.add_argument("--show", type=int, default=3, help="examples shown per kind of finding")
    ap.add_argument("--jobs", type=int, default=1, help="processes resolving the launches (default: %(default)s)")
    ap.add_argument("--fixes", type=int, default=0, metavar="N",
                    help="also apply every fix listed for every N-th conflicted launch and ask SGLang about each")
    ap.add_argument("--write", help="write every launch with both answers, its class and findings to this JSONL file")
    ap.add_argument("--open-gaps", action="store_true",
                    help="also print the failing kinds with their counts as the test's OPEN_GAPS literal")
    a = ap.parse_args(argv)
    if not a.oracle_python:
        ap.error("give --oracle-python (or set SGLANG_ORACLE_PYTHON): see the oracle's README for its venv")
    if a.count < 1:
        ap.error("--count must be at least 1")
    if not os.path.isfile(os.path.join(a.oracle_dir, "ask.py")):
        ap.error(f"no ask.py in {a.oracle_dir}: give --oracle-dir (or set SGLANG_ORACLE_DIR)")
    requests = launches(a.seed, a.count, model_fixtures(a.oracle_python, a.oracle_dir))
    print(f"seed {a.seed}: {len(requests)} launches; asking SGLang 0.5.23 (oracle) ...", file=sys.stderr)
    answers = ask_oracle(requests, a.oracle_python, a.oracle_dir, a.cache)
    print("asking the resolver ...", file=sys.stderr)
    engine = get_engine()
    results = ask_resolver(requests, engine, a.jobs)
    verdicts = compare(requests, answers, results, engine)
    if a.write:
        write_verdicts(a.write, requests, answers, results, verdicts)
    failed = report(verdicts, requests, a.show)
    if a.open_gaps:
        print("\n" + format_open_gaps(verdicts))
    if a.fixes > 0:
        failed += _report_fixes(requests, results, engine, a)
    return 1 if failed else 0


def write_verdicts(path: str, requests: list[dict], answers: dict, results: dict, verdicts: dict[str, Verdict]) -> None:
    """Every launch with both answers, its class and findings, one JSON line each."""
    with open(path, "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps({"request": r, "sglang": answers[r["id"]], "resolver": results[r["id"]],
                                  "class": verdicts[r["id"]].cls, "findings": verdicts[r["id"]].findings}) + "\n"
                      for r in requests)


def _report_fixes(requests: list[dict], results: dict, engine: Engine, a: argparse.Namespace) -> int:
    """Apply the fixes of every ``a.fixes``-th conflicted launch, ask SGLang, print what it refuses; how many."""
    trials = fix_trials(requests, results, engine, a.fixes)
    print(f"\nchecking {len(trials)} fixes with SGLang ...", file=sys.stderr)
    fix_answers = ask_oracle([{k: v for k, v in t.items() if k != "fix"} for t in trials],
                             a.oracle_python, a.oracle_dir, a.cache)
    fix_classes = check_fixes(trials, fix_answers, ask_resolver(trials, engine, a.jobs))
    by_id = {t["id"]: t for t in trials}
    messages = {tid: answer.get("sglang", {}).get("message", "") for tid, answer in fix_answers.items()}
    print(f"\nfixes: {len(fix_classes.get('accepted', ()))} accepted by SGLang, "
          f"{len(fix_classes.get('harness', ()))} the oracle could not run")
    failed = 0
    for kind, ids in sorted(fix_classes.items(), key=lambda kv: -len(kv[1])):
        if kind in ("accepted", "harness"):
            continue
        failed += len(ids)
        print(f"\n{len(ids):>5} x {kind}")
        for tid in ids[:a.show]:
            t = by_id[tid]
            print(f"      {tid}: {t['platform']} {t['model_name']} fix {t['fix']['description']!r} -> "
                  f"{json.dumps(t['args'], sort_keys=True)}")
            if messages.get(tid):
                print(f"        sglang: {messages[tid][:300]}")
    return failed


if __name__ == "__main__":
    sys.exit(main())
