"""Values the differential found the resolver reporting otherwise than SGLang 0.5.23, or not at all (issue 24):
the cuda_graph_config leaves besides backend, max_bs and bs, the MXFP8 and online-NVFP4 MoE runners, the prefill
graph under attention context parallelism, Waterfill's all-to-all, the hybrid-Mamba and linear-attention fields,
the gRPC port, the image processor, the hidden-state return mode and the environment SGLang mirrors flags into.

Every row was asked of the oracle (SGLang 0.5.23 on CPU, docs/parity.md) with the catalogue config;
``test_the_table_is_sglangs_answer`` asks it again when the oracle is installed.  A field is a resolver option,
``env.NAME`` for an environment variable, or a dotted ``cuda_graph_config`` leaf (SGLang's nesting), which the
resolver reports under the flat name ``cuda_graph_config_<phase>_<leaf>``.
"""
from __future__ import annotations

from typing import Any

import pytest

from resolver.api import get_engine, resolve_request
from resolver.catalogue import catalogue
from tools.sglang_diff import ORACLE_DRAFT_DIR, as_launched, sglang_value

from .conftest import CATALOGUE
from .oracle import ORACLE, oracle_python

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
QWEN3_MOE = "Qwen/Qwen3-30B-A3B"
QWEN3_NEXT = "Qwen/Qwen3-Next-80B-A3B-Instruct"
QWEN3 = "Qwen/Qwen3-8B"
GLM45 = "zai-org/GLM-4.5"

#: every leaf SGLang keeps per phase besides backend, max_bs and bs, with its value on a launch that types none
UNTYPED_LEAVES = {f"cuda_graph_config.{phase}.{leaf}": ("eager" if leaf == "tc_compiler" else None)
                  for phase in ("decode", "prefill")
                  for leaf in ("tc_compiler", "max_seq_len", "max_context_size", "full_prefill_max_req",
                               "full_prefill_prefix_chunk_tokens")}

# (platform, model, args, env, {field: SGLang's value})
CASES: list[tuple[str, str, dict[str, Any], dict[str, str], dict[str, Any]]] = [
    # --- cuda_graph_config: the leaves every launch has, and the two prefill ones flags set -----------------
    ("sm90", LLAMA, {}, {}, UNTYPED_LEAVES),
    ("sm90", LLAMA, {"cuda_graph_max_seq_len_prefill": 4096, "cuda_graph_prefill_max_context": 5000,
                     "page_size": 64}, {},
     {"cuda_graph_config.prefill.max_seq_len": 4096, "cuda_graph_config.prefill.max_context_size": 5056,
      "cuda_graph_config.decode.max_seq_len": None, "cuda_graph_config.decode.max_context_size": None}),
    # --disable-cuda-graph-padding captures every decode batch size
    ("sm90", LLAMA, {"disable_cuda_graph_padding": True, "cuda_graph_max_bs_decode": 16}, {},
     {"cuda_graph_config_decode_bs": "unpadded"}),
    # a typed --cuda-graph-bs-prefill list is what SGLang captures (locked: attention DP does not list it again)
    ("sm90", LLAMA, {"cuda_graph_bs_prefill": [4, 8, 16, 32]}, {}, {"cuda_graph_config_prefill_bs": "typed"}),
    ("sm90", QWEN3, {"cuda_graph_bs_prefill": [8, 64, 256], "tp_size": 4, "attn_dp_size": 2}, {},
     {"cuda_graph_config_prefill_bs": "typed"}),
    # its bucket count sizes the prefill graphs' memory (8 MiB a bucket)
    ("sm90", LLAMA, {"cuda_graph_bs_prefill": [4, 8, 16, 32]}, {},
     {"cuda_graph_config_prefill_bs": "typed", "mem_fraction_static": 0.836}),
    # a typed --cuda-graph-bs-decode list is captured, and its largest batch is the decode graph's, over a typed
    # --cuda-graph-max-bs-decode too; the static memory is sized with it
    ("gfx942", QWEN3_MOE, {"cuda_graph_bs_decode": [1, 2, 4, 8, 16, 32]}, {},
     {"cuda_graph_config_decode_bs": "typed", "cuda_graph_max_bs_decode": 32, "mem_fraction_static": 0.74035}),
    ("sm90", LLAMA, {"cuda_graph_bs_decode": [1, 2, 4, 8, 16, 32, 48], "cuda_graph_max_bs_decode": 128}, {},
     {"cuda_graph_config_decode_bs": "typed", "cuda_graph_max_bs_decode": 48, "mem_fraction_static": 0.835}),
    # --- attention context parallelism without a supported prefill-CP graph: no prefill graph --------------
    ("sm90", QWEN3, {"attn_cp_size": 2, "tp_size": 2}, {},
     {"cuda_graph_config_prefill_backend": "disabled", "mem_fraction_static": 0.834}),
    # --- MXFP8 and online NVFP4 pick their MoE runner (overrides.py _moe_runner_backend_quant_constraints) ----
    ("sm100", QWEN3_MOE, {"quantization": "mxfp8", "tp_size": 8}, {},
     {"moe_runner_backend": "flashinfer_trtllm", "speculative_moe_runner_backend": "flashinfer_trtllm",
      "disable_shared_experts_fusion": True}),
    ("sm100", QWEN3_MOE, {"quantization": "mxfp8", "tp_size": 8, "moe_runner_backend": "triton"}, {},
     {"moe_runner_backend": "flashinfer_trtllm"}),
    ("sm100", QWEN3_MOE, {"quantization": "mxfp8", "tp_size": 8, "moe_runner_backend": "cutlass"}, {},
     {"moe_runner_backend": "cutlass"}),
    ("gfx950", QWEN3_MOE, {"quantization": "mxfp8", "tp_size": 8}, {},
     {"moe_runner_backend": "triton", "disable_shared_experts_fusion": False}),
    ("sm100", LLAMA, {"quantization": "nvfp4_online"}, {}, {"moe_runner_backend": "flashinfer_trtllm"}),
    # --- Waterfill runs the DeepEP all-to-all over the TP group, with fused shared experts --------------------
    ("sm90", QWEN3_MOE, {"enable_waterfill": True, "tp_size": 8}, {},
     {"moe_a2a_backend": "deepep", "ep_size": 8, "enforce_shared_experts_fusion": True}),
    # --- hybrid Mamba and linear attention ---------------------------------------------------------------
    ("sm90", QWEN3_NEXT, {"tp_size": 4}, {},
     {"mamba_radix_cache_strategy": "extra_buffer", "uses_mamba_radix_cache": True,
      "linear_attn_decode_backend": None}),
    # deterministic inference turns the radix cache off after the model overrides (which keep the Mamba cache), but a
    # PD decode server turned it off before them
    ("sm120", QWEN3_NEXT, {"tp_size": 4, "enable_deterministic_inference": True}, {},
     {"uses_mamba_radix_cache": True, "mamba_radix_cache_strategy": "extra_buffer", "disable_radix_cache": True}),
    ("sm120", QWEN3_NEXT, {"tp_size": 4, "enable_deterministic_inference": True, "disaggregation_mode": "decode"}, {},
     {"uses_mamba_radix_cache": False, "mamba_radix_cache_strategy": "auto", "disable_radix_cache": True}),
    ("sm90", QWEN3_NEXT, {"tp_size": 4, "disable_radix_cache": True}, {},
     {"mamba_radix_cache_strategy": "auto", "uses_mamba_radix_cache": False}),
    ("sm100", LLAMA, {"mamba_ssm_dtype": "bfloat16"}, {},
     {"linear_attn_decode_backend": "flashinfer", "mamba_ssm_dtype": "bfloat16",
      "env.SGLANG_MAMBA_SSM_DTYPE": "bfloat16"}),
    ("sm90", LLAMA, {"mamba_ssm_dtype": "float16"}, {}, {"env.SGLANG_MAMBA_SSM_DTYPE": "float16"}),
    ("sm90", LLAMA, {"enable_linear_replayssm_spec": True}, {},
     {"mamba_ssm_dtype": "float32", "env.SGLANG_MAMBA_SSM_DTYPE": "float32"}),
    # --- serving fields SGLang fills in ---------------------------------------------------------------------
    ("sm90", LLAMA, {"smg_grpc_mode": True}, {}, {"grpc_port": 40000, "smg_grpc_mode": True}),
    ("sm90", LLAMA, {"grpc_mode": True, "port": 31000}, {}, {"grpc_port": 41000, "smg_grpc_mode": True}),
    ("sm90", LLAMA, {"disable_fast_image_processor": True}, {}, {"image_processor_backend": "pil"}),
    ("sm90", LLAMA, {"return_hidden_states_mode": "last"}, {},
     {"enable_return_hidden_states": True, "return_hidden_states_mode": "last"}),
    ("sm90", LLAMA, {"enable_return_hidden_states": True}, {}, {"return_hidden_states_mode": "full"}),
    ("sm90", LLAMA, {"debug_cuda_graph": True}, {}, {"env.SGLANG_USE_BREAKABLE_CUDA_GRAPH": "1"}),
    ("sm90", LLAMA, {"mm_feature_transport": "cuda_ipc"}, {}, {"mm_feature_transport": "cuda_ipc"}),
    # --- DWDP forces its layout (parallel_hook.py handle_dwdp), typed values too ----------------------------
    ("sm86", GLM45, {"dwdp_size": 4, "tp_size": 4, "page_size": 16}, {},
     {"attn_dp_size": 4, "ep_size": 4, "enable_dp_lm_head": True, "moe_dense_tp_size": 1, "disable_cuda_graph": True,
      "cuda_graph_config_decode_backend": "disabled", "chunked_prefill_size": 1024, "schedule_conservativeness": 0.3,
      "mem_fraction_static": 0.815, "env.SGLANG_SCHEDULER_SKIP_ALL_GATHER": "True", "env.NCCL_GRAPH_REGISTER": None}),
    ("sm90", GLM45, {"dwdp_size": 8, "tp_size": 8, "attn_dp_size": 2, "moe_a2a_backend": "deepep"}, {},
     {"attn_dp_size": 8, "ep_size": 8, "moe_a2a_backend": "none", "moe_dp_size": 1}),
    # --- the auxiliary hidden-state capture: the algorithm names the convention and is reset (no draft) --------
    ("sm90", QWEN3, {"enable_return_aux_hidden_states": True, "speculative_algorithm": "EAGLE3"}, {},
     {"speculative_algorithm": None, "aux_hidden_state_capture": "eagle3", "return_hidden_states_mode": "full",
      "mem_fraction_static": 0.83}),
    ("sm90", QWEN3, {"enable_return_aux_hidden_states": True, "speculative_algorithm": "DFLASH",
                     "return_aux_hidden_state_layer_ids": [1, 2]}, {},
     {"speculative_algorithm": None, "aux_hidden_state_capture": "dflash"}),
    ("sm100", QWEN3, {"enable_return_aux_hidden_states": True, "speculative_algorithm": "DSPARK",
                      "return_aux_hidden_state_layer_ids": [3], "tp_size": 2}, {},
     {"speculative_algorithm": None, "aux_hidden_state_capture": "dspark", "mem_fraction_static": 0.854}),
    # --- deterministic inference turned on by --rl-on-policy-target comes after the model hook that keeps
    # FlashInfer's all-reduce fusion off for a typed --enable-deterministic-inference ----------------------
    ("sm90", LLAMA, {"rl_on_policy_target": "fsdp", "disable_cuda_graph": True}, {},
     {"enable_deterministic_inference": True, "enforce_disable_flashinfer_allreduce_fusion": False}),
    ("sm90", LLAMA, {"enable_deterministic_inference": True, "disable_cuda_graph": True}, {},
     {"enable_deterministic_inference": True, "enforce_disable_flashinfer_allreduce_fusion": True}),
]

#: (platform, model, args): launches SGLang refuses, which the resolver refuses too
REFUSED: list[tuple[str, str, dict[str, Any]]] = [
    ("sm90", LLAMA, {"cuda_graph_prefill_max_context": 200000}),  # past the model's 131,072-token context
    ("sm90", LLAMA, {"disable_fast_image_processor": True, "image_processor_backend": "torchvision"}),
    ("sm90", QWEN3, {"mamba_radix_cache_strategy": "extra_buffer_lazy"}),
    ("sm100", QWEN3_NEXT, {"tp_size": 4, "linear_attn_backend": "flashinfer"}),
    ("sm90", QWEN3_NEXT, {"tp_size": 4, "linear_attn_decode_backend": "flashkda"}),
    ("sm90", QWEN3, {"enable_return_aux_hidden_states": True}),
    # the multimodal feature pools: CUDA only, CUDA VMM without PP, CUDA IPC on one node
    ("gfx942", LLAMA, {"mm_feature_transport": "cuda_ipc"}),
    ("gfx942", LLAMA, {"mm_feature_transport": "cuda_vmm"}),
    ("sm90", LLAMA, {"mm_feature_transport": "cuda_vmm", "pp_size": 2}),
    ("sm90", LLAMA, {"mm_feature_transport": "cuda_ipc", "nnodes": 2, "tp_size": 16}),
    # the AMD monokernel on an NVIDIA GPU (on ROCm it depends on the plugin installed: not encoded)
    ("sm90", LLAMA, {"enable_amd_monokernel": True}),
    ("sm100", LLAMA, {"enable_amd_monokernel": True}),
    ("sm90", QWEN3, {"enable_return_aux_hidden_states": True, "speculative_algorithm": "EAGLE"}),
    ("sm90", QWEN3, {"enable_return_aux_hidden_states": True, "speculative_algorithm": "EAGLE3", "pp_size": 2}),
    ("sm90", QWEN3, {"enable_return_aux_hidden_states": True, "speculative_algorithm": "EAGLE3",
                     "speculative_draft_model_path": ORACLE_DRAFT_DIR}),
]


def _flat(field: str) -> str:
    """The resolver's name of a field: a cuda_graph_config leaf flattened, anything else as it is."""
    if field.startswith("cuda_graph_config."):
        return "cuda_graph_config_" + field.removeprefix("cuda_graph_config.").replace(".", "_")
    return field


def _ours(res: Any, field: str) -> Any:
    if field.startswith("env."):
        return res.env.get(field.removeprefix("env."))
    return res.values[_flat(field)]


@pytest.mark.parametrize("platform, model, args, env, expected", CASES)
def test_value(platform, model, args, env, expected):
    res = resolve_request(get_engine(), platform=platform, model=dict(CATALOGUE[model]), args=dict(args), env=env,
                          fixes=False)
    assert not res.conflicts, [c.message for c in res.conflicts]
    assert {f: _ours(res, f) for f in expected} == expected


@pytest.mark.parametrize("platform, model, args", REFUSED)
def test_refused(platform, model, args):
    res = resolve_request(get_engine(), platform=platform, model=dict(CATALOGUE[model]), args=dict(args),
                          fixes=False)
    assert res.conflicts


def test_an_unsupported_mxfp8_runner_is_replaced_with_a_warning():
    res = resolve_request(get_engine(), platform="sm100", model=dict(CATALOGUE[QWEN3_MOE]),
                          args={"quantization": "mxfp8", "tp_size": 8, "moe_runner_backend": "triton"}, fixes=False)
    assert any("mxfp8" in str(w) and "triton" in str(w) for w in res.warnings)


def test_the_transfer_engine_seed_service_follows_mooncake_and_the_memory_saver():
    """SGLang keeps --remote-instance-weight-loader-start-seed-via-transfer-engine only where mooncake.engine imports
    and the memory saver is off; the oracle's venv has no mooncake, so SGLang answers false for both launches."""
    seed = {"remote_instance_weight_loader_start_seed_via_transfer_engine": True}
    saver = {**seed, "enable_memory_saver": True}

    def ours(args, installed=None):
        return resolve_request(get_engine(), platform="sm90", model=dict(CATALOGUE[LLAMA]), args=dict(args),
                               installed=installed, fixes=False).values[
            "remote_instance_weight_loader_start_seed_via_transfer_engine"]

    assert ours(seed) is True and ours(seed, {"mooncake": True}) is True  # assumed installed, or told so
    assert ours(seed, {"mooncake": False}) is False and ours(saver, {"mooncake": True}) is False
    python = oracle_python()
    from tools.sglang_diff import ask_oracle

    requests = [_request(900 + n, "sm90", LLAMA, args) for n, args in enumerate((seed, saver))]
    for r in requests:
        got = ask_oracle([r], python, ORACLE)[r["id"]]["sglang"]
        assert got["status"] == "resolved" and _sglang(got, r, "remote_instance_weight_loader_start_seed_via_"
                                                       "transfer_engine") is ours(r["args"], {"mooncake": False})


def _sglang(answer: dict, request: dict, field: str) -> Any:
    """SGLang's value of a field of the table: what a step declared, else what was typed, else SGLang's default (a
    cuda_graph_config leaf dug out of its nesting; the decode batch list named "unpadded" when it is every size up
    to the phase's max_bs)."""
    values = answer["values"]
    if field.startswith("env."):
        return {**(request.get("env") or {}), **answer.get("env", {})}.get(field.removeprefix("env."))
    if field.startswith("cuda_graph_config."):
        value: Any = values["cuda_graph_config"]
        for key in field.split(".")[1:]:
            value = value[key]
        return value
    if field == "cuda_graph_config_decode_bs":
        decode = values["cuda_graph_config"]["decode"]
        if decode["bs"] == list(range(1, decode["max_bs"] + 1)):
            return "unpadded"
    defaults = {dest: flag.default for dest, flag in catalogue().by_dest.items()}
    return sglang_value(answer, as_launched(request), field, defaults)


def _request(n: int, platform: str, model: str, args: dict, env: dict | None = None) -> dict:
    return {"id": f"v{n}", "platform": platform, "model": CATALOGUE[model], "args": args, "env": env or {}}


def test_the_table_is_sglangs_answer():
    """Ask SGLang 0.5.23 (the oracle) the table again, and the refused launches."""
    python = oracle_python()
    from tools.sglang_diff import ask_oracle

    requests = [_request(n, p, m, a, e) for n, (p, m, a, e, _) in enumerate(CASES)]
    refused = [_request(len(CASES) + n, p, m, a) for n, (p, m, a) in enumerate(REFUSED)]
    answers = {rid: a["sglang"] for rid, a in ask_oracle(requests + refused, python, ORACLE).items()}
    for r, (*_, expected) in zip(requests, CASES, strict=True):
        got = answers[r["id"]]
        assert got["status"] == "resolved", (r["args"], got)
        assert {f: _sglang(got, r, f) for f in expected} == expected, r["args"]
    for r in refused:
        assert answers[r["id"]]["status"] == "error", r["args"]
