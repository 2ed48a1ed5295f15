"""PD disaggregation (rules/pd.yaml), HiCache (rules/hicache.yaml) and the serving defaults every launch
gets (rules/serving_defaults.yaml) against SGLang 0.5.23.

Every expected value below is SGLang 0.5.23's own answer for the same request (the oracle, docs/parity.md:
``{"platform": P, "model": <the catalogued config>, "args": A}`` given to ``oracle/ask.py``), recorded when
the rules were written; ``test_the_table_is_sglangs_answer`` asks the oracle again when it is installed.
A value SGLang does not declare is what was typed, else SGLang's default.
"""

import pytest

from resolver import ConflictError, resolve
from resolver.api import get_engine, resolve_request
from resolver.catalogue import catalogue as flag_catalogue

from .conftest import CATALOGUE
from .oracle import ORACLE, oracle_python

LLAMA = CATALOGUE["meta-llama/Llama-3.1-8B-Instruct"]
QWEN3 = CATALOGUE["Qwen/Qwen3-8B"]
QWEN_MOE = CATALOGUE["Qwen/Qwen3-30B-A3B"]
DSV3 = CATALOGUE["deepseek-ai/DeepSeek-V3"]
DSV32 = CATALOGUE["deepseek-ai/DeepSeek-V3.2"]

DECODE = {"disaggregation_mode": "decode"}
HICACHE = {"enable_hierarchical_cache": True}
PREFILL_COMPLETE = {"disaggregation_decode_allocation_policy": "prefill_complete"}

#: the serving defaults of a plain launch on an NVIDIA GPU with FlashInfer
PLAIN = {"sampling_backend": "flashinfer", "grammar_backend": "xgrammar", "load_balance_method": "round_robin",
         "prefill_decode_interval": 0, "boundary_reduction": "rs+rsv", "hicache_ratio": 2.0}

#: (case id, platform, model config, typed args, {field: SGLang's final value})
CASES = [
    # serving defaults
    ("plain", "sm90", LLAMA, {}, PLAIN),
    ("rocm-samples-with-pytorch", "gfx942", LLAMA, {}, {**PLAIN, "sampling_backend": "pytorch"}),
    ("rocm-typed-flashinfer-kept", "gfx942", LLAMA, {"sampling_backend": "flashinfer"},
     {"sampling_backend": "flashinfer"}),
    ("deterministic-pytorch", "sm90", LLAMA, {"enable_deterministic_inference": True, "sampling_backend": "flashinfer"},
     {"sampling_backend": "pytorch"}),
    ("deterministic-keeps-ascend", "sm90", LLAMA, {"enable_deterministic_inference": True,
                                                   "sampling_backend": "ascend"},
     {"sampling_backend": "ascend"}),
    ("typed-serving", "sm90", LLAMA, {"grammar_backend": "none", "load_balance_method": "total_tokens",
                                      "sampling_backend": "pytorch", "prefill_decode_interval": 5},
     {"grammar_backend": "none", "load_balance_method": "total_tokens", "sampling_backend": "pytorch",
      "prefill_decode_interval": 5}),
    ("qwen3-dense-all-reduce", "sm90", QWEN3, {}, {"boundary_reduction": "ar"}),
    ("qwen3-moe-rs-rsv", "sm90", QWEN_MOE, {}, {"boundary_reduction": "rs+rsv"}),
    ("typed-boundary", "sm90", LLAMA, {"boundary_reduction": "ar"}, {"boundary_reduction": "ar"}),
    ("prefill-follows-bootstrap-room", "sm90", LLAMA, {"disaggregation_mode": "prefill", "load_balance_method": "auto"},
     {"load_balance_method": "follow_bootstrap_room"}),
    ("prefill-typed-balance", "sm90", LLAMA, {"disaggregation_mode": "prefill",
                                              "load_balance_method": "total_requests"},
     {"load_balance_method": "total_requests"}),
    # PD
    ("decode", "sm90", LLAMA, DECODE,
     {"disable_radix_cache": True, "disaggregation_decode_extra_slots": 0, "hicache_ratio": None,
      "load_balance_method": "round_robin", "disaggregation_transfer_backend": "mooncake"}),
    ("mooncake-tcp", "sm90", LLAMA, {**DECODE, "disaggregation_transfer_backend": "mooncake_tcp"},
     {"disaggregation_transfer_backend": "mooncake"}),
    ("decode-fake-transfer", "sm90", LLAMA, {**DECODE, "disaggregation_transfer_backend": "fake"},
     {"disaggregation_transfer_backend": "fake", "disable_radix_cache": True}),
    ("decode-small-batch", "sm90", LLAMA, {**DECODE, "max_running_requests": 16},
     {"disaggregation_decode_extra_slots": 32}),
    ("decode-large-batch", "sm90", LLAMA, {**DECODE, "max_running_requests": 64},
     {"disaggregation_decode_extra_slots": 0}),
    ("decode-batch-per-attn-dp", "sm90", LLAMA, {**DECODE, "max_running_requests": 64, "tp_size": 8, "attn_dp_size": 4},
     {"disaggregation_decode_extra_slots": 32}),
    ("decode-fewer-than-workers", "sm90", LLAMA, {**DECODE, "max_running_requests": 3, "tp_size": 8,
                                                  "attn_dp_size": 4},
     {"disaggregation_decode_extra_slots": 2}),
    ("decode-deprecated-dp-attention", "sm90", LLAMA, {**DECODE, "max_running_requests": 128, "tp_size": 8,
                                                       "dp_size": 8, "enable_dp_attention": True},
     {"disaggregation_decode_extra_slots": 32}),
    ("decode-typed-extra-slots", "sm90", LLAMA, {**DECODE, "disaggregation_decode_extra_slots": 5},
     {"disaggregation_decode_extra_slots": 5}),
    ("decode-host-receive", "sm90", LLAMA, {**DECODE, "disaggregation_decode_host_receive_threshold": 0.5},
     {"disaggregation_decode_retraction_backup": "host_pool", "hicache_mem_layout": "layer_first"}),
    ("decode-host-receive-over-none", "sm90", LLAMA,
     {**DECODE, "disaggregation_decode_host_receive_threshold": 0.5, "disaggregation_decode_retraction_backup": "none"},
     {"disaggregation_decode_retraction_backup": "host_pool"}),
    ("decode-host-pool-direct-io", "sm90", LLAMA, {**DECODE, "hicache_io_backend": "direct"},
     {"hicache_mem_layout": "page_first_direct", "hicache_io_backend": "direct"}),
    ("decode-cpu-tensor-no-host-pool", "sm90", LLAMA,
     {**DECODE, "hicache_io_backend": "direct", "disaggregation_decode_retraction_backup": "cpu_tensor"},
     {"hicache_mem_layout": "page_first"}),
    ("decode-radix-cache-hicache", "sm90", LLAMA, {**DECODE, **HICACHE,
                                                   "disaggregation_decode_enable_radix_cache": True},
     {"disable_radix_cache": False, "hicache_ratio": None}),
    ("decode-offload", "sm90", LLAMA,
     {**DECODE, "disaggregation_decode_enable_offload_kvcache": True, "hicache_storage_backend": "mooncake",
      "hicache_mem_layout": "layer_first", "disaggregation_decode_retraction_backup": "cpu_tensor"},
     {"hicache_mem_layout": "page_first"}),
    ("prefill-complete-prefill", "sm90", LLAMA, {**PREFILL_COMPLETE, "disaggregation_mode": "prefill"},
     {"optimistic_prefill_attempts": 1}),
    ("prefill-complete-over-typed-zero", "sm90", LLAMA,
     {**PREFILL_COMPLETE, "disaggregation_mode": "prefill", "optimistic_prefill_attempts": 0},
     {"optimistic_prefill_attempts": 1}),
    ("prefill-complete-typed-attempts", "sm90", LLAMA,
     {**PREFILL_COMPLETE, "disaggregation_mode": "prefill", "optimistic_prefill_attempts": 3},
     {"optimistic_prefill_attempts": 3}),
    ("prefill-complete-mooncake-tcp", "sm90", LLAMA,
     {**PREFILL_COMPLETE, "disaggregation_mode": "prefill", "disaggregation_transfer_backend": "mooncake_tcp"},
     {"disaggregation_transfer_backend": "mooncake", "optimistic_prefill_attempts": 1}),
    ("prefill-complete-l2-write-back", "sm90", LLAMA,
     {**PREFILL_COMPLETE, **HICACHE, "disaggregation_mode": "prefill", "hicache_write_policy": "write_back"},
     {"optimistic_prefill_attempts": 1}),
    ("prefill-complete-decode", "sm90", LLAMA, {**PREFILL_COMPLETE, **DECODE}, {"optimistic_prefill_attempts": 0}),
    ("optimistic-prefill-l3-cache", "sm90", LLAMA,
     {**HICACHE, "disaggregation_mode": "prefill", "optimistic_prefill_attempts": 2, "hicache_storage_backend": "file"},
     {"optimistic_prefill_attempts": 0}),
    ("optimistic-prefill-l3-buffer-only", "sm90", LLAMA,
     {**HICACHE, "disaggregation_mode": "prefill", "optimistic_prefill_attempts": 2, "hicache_storage_backend": "file",
      "hicache_host_memory_mode": "buffer_only", "hicache_write_policy": "write_back"},
     {"optimistic_prefill_attempts": 2, "hicache_write_policy": "write_through"}),
    ("optimistic-prefill-pp", "sm90", LLAMA,
     {"disaggregation_mode": "prefill", "optimistic_prefill_attempts": 2, "pp_size": 2},
     {"optimistic_prefill_attempts": 0}),
    ("optimistic-prefill-selective", "sm90", LLAMA,
     {**HICACHE, "disaggregation_mode": "prefill", "optimistic_prefill_attempts": 2,
      "hicache_write_policy": "write_through_selective"},
     {"optimistic_prefill_attempts": 0}),
    ("optimistic-without-pd", "sm90", LLAMA,
     {**HICACHE, "optimistic_prefill_attempts": 2, "hicache_write_policy": "write_through_selective"},
     {"optimistic_prefill_attempts": 2}),
    ("decode-radix-cache-deterministic-flashinfer", "sm90", LLAMA,
     {**DECODE, "disaggregation_decode_enable_radix_cache": True, "enable_deterministic_inference": True,
      "attention_backend": "flashinfer"},
     {"disable_radix_cache": True, "sampling_backend": "pytorch"}),
    ("decode-radix-cache-deterministic-triton", "sm90", LLAMA,
     {**DECODE, "disaggregation_decode_enable_radix_cache": True, "enable_deterministic_inference": True,
      "attention_backend": "triton"},
     {"disable_radix_cache": False}),
    # HiCache
    ("hicache", "sm90", LLAMA, HICACHE,
     {"hicache_ratio": 2.0, "hicache_mem_layout": "page_first", "hicache_io_backend": "kernel",
      "hicache_write_policy": "write_through", "page_size": 1, "attention_backend": "fa3"}),
    ("hicache-direct-io", "sm90", LLAMA, {**HICACHE, "hicache_io_backend": "direct"},
     {"hicache_mem_layout": "page_first_direct", "hicache_io_backend": "direct"}),
    ("hicache-page-first-direct", "sm90", LLAMA, {**HICACHE, "hicache_mem_layout": "page_first_direct"},
     {"hicache_mem_layout": "page_first_direct", "hicache_io_backend": "direct"}),
    ("hicache-pfd-kernel-ascend", "sm90", LLAMA,
     {**HICACHE, "hicache_mem_layout": "page_first_direct", "hicache_io_backend": "kernel_ascend"},
     {"hicache_mem_layout": "page_first_direct", "hicache_io_backend": "kernel_ascend"}),
    ("hicache-mooncake-layer-first", "sm90", LLAMA,
     {**HICACHE, "hicache_storage_backend": "mooncake", "hicache_mem_layout": "layer_first"},
     {"hicache_mem_layout": "page_first"}),
    ("hicache-mooncake-layer-first-direct", "sm90", LLAMA,
     {**HICACHE, "hicache_storage_backend": "mooncake", "hicache_mem_layout": "layer_first",
      "hicache_io_backend": "direct"},
     {"hicache_mem_layout": "page_first_direct", "hicache_io_backend": "direct"}),
    ("hicache-memcache-kernel-ascend", "sm90", LLAMA,
     {**HICACHE, "hicache_storage_backend": "npu_memcache", "hicache_mem_layout": "layer_first",
      "hicache_io_backend": "kernel_ascend"},
     {"hicache_mem_layout": "layer_first"}),
    ("hicache-mooncake-dcp-keeps-layout", "sm90", DSV3,
     {**HICACHE, "dcp_size": 2, "tp_size": 8, "hicache_storage_backend": "mooncake",
      "hicache_mem_layout": "layer_first"},
     {"hicache_mem_layout": "layer_first"}),
    ("hicache-dcp-mla", "sm90", DSV3, {**HICACHE, "dcp_size": 2, "tp_size": 8}, {"hicache_ratio": 2.0}),
    ("hicache-buffer-only", "sm90", LLAMA,
     {**HICACHE, "hicache_host_memory_mode": "buffer_only", "hicache_storage_backend": "file",
      "hicache_write_policy": "write_back"},
     {"hicache_ratio": 1.2, "hicache_write_policy": "write_through"}),
    ("hicache-typed-ratio", "sm90", LLAMA, {**HICACHE, "hicache_ratio": 3.0}, {"hicache_ratio": 3.0}),
    ("hicache-typed-size", "sm90", LLAMA, {**HICACHE, "hicache_size": 100}, {"hicache_ratio": 2.0}),
    ("lmcache", "sm90", LLAMA, {"enable_lmcache": True}, {"enable_lmcache": True, "disable_radix_cache": False}),
    ("ratio-without-hicache", "sm90", LLAMA, {"hicache_ratio": 1.5}, {"hicache_ratio": 1.5}),
    ("buffer-only-without-hicache", "sm90", LLAMA, {"hicache_host_memory_mode": "buffer_only"},
     {"hicache_ratio": 1.2}),
]

#: (case id, platform, model config, typed args, the rule, a phrase of SGLang's refusal)
REFUSED = [
    ("prefill-fake", "sm90", LLAMA, {"disaggregation_mode": "prefill", "disaggregation_transfer_backend": "fake"},
     "conflict.pd.prefill-fake-transfer", "Prefill server does not support 'fake'"),
    ("decode-radix-fake", "sm90", LLAMA,
     {**DECODE, "disaggregation_transfer_backend": "fake", "disaggregation_decode_enable_radix_cache": True},
     "conflict.pd.decode-radix-cache-fake-transfer", "incompatible with --disaggregation-transfer-backend fake"),
    ("threshold-range", "sm90", LLAMA, {"disaggregation_decode_host_receive_threshold": 1.5},
     "conflict.pd.host-receive-threshold-range", "must be between 0 and 1"),
    ("host-receive-cpu-tensor", "sm90", LLAMA,
     {**DECODE, "disaggregation_decode_host_receive_threshold": 0.5,
      "disaggregation_decode_retraction_backup": "cpu_tensor"},
     "conflict.pd.host-receive-cpu-tensor", "requires host_pool retraction"),
    ("host-pool-not-decode", "sm90", LLAMA, {"disaggregation_decode_retraction_backup": "host_pool"},
     "conflict.pd.host-pool-not-decode", "only supported on a PD decode server"),
    ("host-receive-on-prefill", "sm90", LLAMA,
     {"disaggregation_mode": "prefill", "disaggregation_decode_host_receive_threshold": 0.5},
     "conflict.pd.host-pool-not-decode", "only supported on a PD decode server"),
    ("host-pool-dcp", "sm90", LLAMA,
     {**DECODE, "disaggregation_decode_retraction_backup": "host_pool", "dcp_size": 2, "tp_size": 2},
     "conflict.pd.host-pool-dcp", "does not support --dcp-size > 1"),
    ("offload-not-decode", "sm90", LLAMA, {"disaggregation_decode_enable_offload_kvcache": True},
     "conflict.pd.offload-not-decode", "only supported for decode side"),
    ("offload-no-storage", "sm90", LLAMA, {**DECODE, "disaggregation_decode_enable_offload_kvcache": True},
     "conflict.pd.offload-needs-storage", "only supported when hicache-storage-backend is provided"),
    ("offload-host-pool", "sm90", LLAMA,
     {**DECODE, "disaggregation_decode_enable_offload_kvcache": True, "hicache_storage_backend": "file",
      "disaggregation_decode_retraction_backup": "host_pool"},
     "conflict.pd.offload-host-pool", "both build a decode host pool"),
    ("prefill-complete-aggregated", "sm90", LLAMA, PREFILL_COMPLETE,
     "conflict.pd.prefill-complete-aggregated", "does not yet support aggregated serving"),
    ("prefill-complete-nixl", "sm90", LLAMA,
     {**PREFILL_COMPLETE, "disaggregation_mode": "prefill", "disaggregation_transfer_backend": "nixl"},
     "conflict.pd.prefill-complete-transfer", "transfer backends other than Mooncake"),
    ("prefill-complete-tp", "sm90", LLAMA, {**PREFILL_COMPLETE, "disaggregation_mode": "prefill", "tp_size": 2},
     "conflict.pd.prefill-complete-attention-tp", "attention tensor parallelism greater than one"),
    ("prefill-complete-attn-dp", "sm90", LLAMA,
     {**PREFILL_COMPLETE, "disaggregation_mode": "prefill", "tp_size": 8, "attn_dp_size": 8},
     "conflict.pd.prefill-complete-attention-tp", "attention tensor parallelism greater than one"),
    ("prefill-complete-pp", "sm90", LLAMA, {**PREFILL_COMPLETE, **DECODE, "pp_size": 2},
     "conflict.pd.prefill-complete-parallel", "pipeline or attention context parallelism"),
    ("prefill-complete-prefill-hicache", "sm90", LLAMA, {**PREFILL_COMPLETE, **HICACHE,
                                                         "disaggregation_mode": "prefill"},
     "conflict.pd.prefill-complete-prefill-hicache", "prefill HiCache other than L2 write_back"),
    ("prefill-complete-decode-radix", "sm90", LLAMA,
     {**PREFILL_COMPLETE, **DECODE, "disaggregation_decode_enable_radix_cache": True},
     "conflict.pd.prefill-complete-decode-cache", "decode radix cache or decode HiCache"),
    ("prefill-complete-host-receive", "sm90", LLAMA,
     {**PREFILL_COMPLETE, **DECODE, "disaggregation_decode_host_receive_threshold": 0.5},
     "conflict.pd.prefill-complete-host-receive", "decode host KV buffering"),
    ("prefill-complete-no-optimistic", "sm90", LLAMA,
     {**PREFILL_COMPLETE, "disaggregation_mode": "prefill", "optimistic_prefill_attempts": -1},
     "conflict.pd.prefill-complete-needs-optimistic", "requires optimistic prefill"),
    ("buffer-only-no-storage", "sm90", LLAMA, {**HICACHE, "hicache_host_memory_mode": "buffer_only"},
     "conflict.hicache.buffer-only-needs-storage", "buffer_only requires a storage backend"),
    ("decode-buffer-only-no-storage", "sm90", LLAMA, {**DECODE, "hicache_host_memory_mode": "buffer_only"},
     "conflict.hicache.buffer-only-needs-storage", "buffer_only requires a storage backend"),
    ("decode-buffer-only", "sm90", LLAMA,
     {**DECODE, "hicache_host_memory_mode": "buffer_only", "hicache_storage_backend": "file"},
     "conflict.hicache.buffer-only-decode", "not supported on decode instances"),
    ("hicache-radix-off", "sm90", LLAMA, {**HICACHE, "disable_radix_cache": True},
     "conflict.hicache.radix-cache-off", "mutually exclusive"),
    ("hicache-on-decode", "sm90", LLAMA, {**HICACHE, **DECODE},
     "conflict.hicache.radix-cache-off", "mutually exclusive"),
    ("host-receive-mooncake-storage", "sm90", LLAMA,
     {**DECODE, "disaggregation_decode_host_receive_threshold": 0.5, "hicache_storage_backend": "mooncake"},
     "conflict.hicache.host-receive-storage-layout", "cannot share the layer_first decode host pool"),
    ("hicache-dcp-mha", "sm90", QWEN3, {**HICACHE, "dcp_size": 2, "tp_size": 2},
     "conflict.hicache.dcp-mha", "only supported for MLA models"),
    ("hicache-dcp-eagle", "sm90", DSV3, {**HICACHE, "dcp_size": 2, "tp_size": 8, "speculative_algorithm": "EAGLE"},
     "conflict.hicache.dcp-speculative", "only supports DSPARK speculative decoding"),
    ("hicache-dcp-buffer-only", "sm90", DSV3,
     {**HICACHE, "dcp_size": 2, "tp_size": 8, "hicache_storage_backend": "file",
      "hicache_host_memory_mode": "buffer_only"},
     "conflict.hicache.dcp-buffer-only", "does not support buffer_only host memory"),
    ("hicache-native-nvfp4", "sm100", LLAMA, {**HICACHE, "kv_cache_dtype": "nvfp4"},
     "conflict.hicache.nvfp4-sm100-native", "does not yet support hierarchical KV cache or LMCache"),
    ("lmcache-native-nvfp4", "sm100", LLAMA, {"enable_lmcache": True, "kv_cache_dtype": "nvfp4"},
     "conflict.hicache.nvfp4-sm100-native", "does not yet support hierarchical KV cache or LMCache"),
    ("hicache-dsa-dcp", "sm100", DSV32, {**HICACHE, "dcp_size": 2, "tp_size": 8},
     "conflict.hicache.dsa-dcp", "DSA DCP does not support HiSparse or HiCache"),
    ("lmcache-hicache", "sm90", LLAMA, {**HICACHE, "enable_lmcache": True},
     "conflict.lmcache.hicache", "mutually exclusive"),
    ("lmcache-deterministic-radix-off", "sm90", LLAMA,
     {"enable_lmcache": True, "enable_deterministic_inference": True, "attention_backend": "flashinfer"},
     "conflict.lmcache.radix-cache-off", "requires radix cache to be enabled"),
    ("lmcache-ngram", "sm90", LLAMA, {"enable_lmcache": True, "speculative_algorithm": "NGRAM"},
     "conflict.lmcache.speculative", "does not yet support speculative decoding"),
    ("lmcache-attn-dp", "sm90", LLAMA, {"enable_lmcache": True, "tp_size": 2, "attn_dp_size": 2},
     "conflict.lmcache.attention-dp", "does not yet support DP attention"),
    ("lmcache-dcp", "sm90", DSV3, {"enable_lmcache": True, "tp_size": 8, "dcp_size": 2},
     "conflict.lmcache.dcp", "no DCP-aware index translation"),
    ("lmcache-buffer-only", "sm90", LLAMA, {"enable_lmcache": True, "hicache_host_memory_mode": "buffer_only"},
     "conflict.lmcache.buffer-only", "HiCache-only mode"),
    ("lmcache-pd", "sm90", LLAMA, {"enable_lmcache": True, "disaggregation_mode": "prefill"},
     "conflict.lmcache.pd", "colocated prefill/decode scheduling only"),
    ("negative-interval", "sm90", LLAMA, {"prefill_decode_interval": -1},
     "conflict.serving.prefill-decode-interval-negative", "must be non-negative"),
]


@pytest.mark.parametrize("case, platform, model, args, expected", CASES, ids=[c[0] for c in CASES])
def test_values_are_sglangs(case, platform, model, args, expected):
    got = resolve(args, platform=platform, model=model).values
    assert {f: got[f] for f in expected} == expected


@pytest.mark.parametrize("case, platform, model, args, rule, phrase", REFUSED, ids=[c[0] for c in REFUSED])
def test_refused_as_sglang_refuses(case, platform, model, args, rule, phrase):
    with pytest.raises(ConflictError) as info:
        resolve(args, platform=platform, model=model)
    conflicts = info.value.resolution.conflicts
    assert rule in {c.rule.id for c in conflicts}
    assert phrase in next(c.message for c in conflicts if c.rule.id == rule)


def test_every_fix_resolves():
    """Each refusal lists at least one fix, and every fix listed resolves (SGLang accepting them is what the
    differential test checks)."""
    for case, platform, model, args, rule, _phrase in REFUSED:
        res = resolve_request(get_engine(), platform=platform, model=dict(model), args=args, fixes=True)
        fixes = [f for c in res.conflicts if c.rule.id == rule for f in c.fixes]
        assert fixes, case
        for fix in fixes:
            fixed = {k: v for k, v in args.items() if k not in fix.unset} | dict(fix.set)
            assert not resolve(fixed, platform=platform, model=model).conflicts, (case, fix)


def test_a_typed_value_sglang_overrides_is_a_warning():
    res = resolve({"enable_deterministic_inference": True, "sampling_backend": "flashinfer"}, platform="sm90",
                  model=LLAMA)
    assert res.values["sampling_backend"] == "pytorch"
    assert any("adjust.serving.sampling-deterministic" in w.message for w in res.warnings)


def test_the_table_is_sglangs_answer():
    """Ask SGLang 0.5.23 (the oracle) the whole table again: every value and every refusal."""
    from tools.sglang_diff import ask_oracle, sglang_value

    python = oracle_python()
    requests = [{"id": c[0], "platform": c[1], "model": c[2], "args": c[3]} for c in CASES + REFUSED]
    answers = {rid: a["sglang"] for rid, a in ask_oracle(requests, python, ORACLE).items()}
    defaults = {dest: a.default for dest, a in flag_catalogue().by_dest.items()}
    for case, _platform, _model, args, expected in CASES:
        got = {f: sglang_value(answers[case], {"args": args}, f, defaults) for f in expected}
        assert answers[case]["status"] == "resolved" and got == expected, (case, got)
    for case, _platform, _model, _args, _rule, phrase in REFUSED:
        assert answers[case]["status"] == "error" and phrase in answers[case]["message"], (case, answers[case])


def test_the_launch_line_leaves_sglang_what_it_works_out_itself():
    """Given --hicache-ratio, SGLang turns --hicache-host-memory-fraction off; given the target's boundary
    reduction, it stops resolving a separate draft's own; given mooncake instead of mooncake_tcp, it does
    not set MC_FORCE_TCP=1. The resolved values are SGLang's, the launch line leaves them unset."""
    from resolver.launch_line import launch_argv

    res = resolve({**DECODE, "disaggregation_transfer_backend": "mooncake_tcp"}, platform="sm90", model=QWEN3)
    assert res.values["disaggregation_transfer_backend"] == "mooncake" and not res.warnings
    argv = launch_argv(res)
    assert argv[argv.index("--disaggregation-transfer-backend") + 1] == "mooncake_tcp"
    res = resolve(HICACHE, platform="sm90", model=QWEN3)
    assert (res.values["hicache_ratio"], res.values["boundary_reduction"]) == (2.0, "ar")
    assert not {"--hicache-ratio", "--boundary-reduction"} & set(launch_argv(res))
    res = resolve({**HICACHE, "hicache_ratio": 3.0, "boundary_reduction": "rs"}, platform="sm90", model=QWEN3)
    argv = launch_argv(res)
    assert argv[argv.index("--hicache-ratio") + 1] == "3.0" and argv[argv.index("--boundary-reduction") + 1] == "rs"
