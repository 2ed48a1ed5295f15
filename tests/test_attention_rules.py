"""The attention rule pack: SGLang 0.5.23's own tests, and one test per error template these options reach
in SGLang 0.5.23's attention-backend checks (arg_groups/overrides.py, its backend passes;
arg_groups/attention_hook.py) and KV-cache checks (arg_groups/kv_cache_hook.py)."""
import pytest

from resolver import ConflictError, resolve
from resolver.api import get_engine, resolve_request

LLAMA = {"architectures": ["LlamaForCausalLM"], "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128}
DSV3 = {"architectures": ["DeepseekV3ForCausalLM"], "kv_lora_rank": 512, "num_key_value_heads": 128}
EAGLE = {"speculative_algorithm": "EAGLE", "speculative_num_steps": 3, "speculative_num_draft_tokens": 4}


def backend(platform, model=LLAMA, **args):
    res = resolve_request(get_engine(), platform=platform, args=args, model=model, fixes=False)
    # SGLang picks the attention backend before its speculative step; the step then refuses EAGLE with
    # --speculative-num-steps but no top-k (a TypeError, oracle spec grid), which does not change the pick
    assert {c.rule.id for c in res.conflicts} <= {"conflict.spec.eagle.steps-without-topk"}
    if "speculative_num_steps" in args and "speculative_eagle_topk" not in args:
        assert res.conflicts
    return res.values["attention_backend"]


# --- SGLang's test/registered/unit/server_args/test_hopper_eagle_attention_backend.py, checked against
# 0.5.23 (the default backend: get_default_attn_backend, docs/evidence.md S41) ---------------------------
@pytest.mark.parametrize("args, expected", [
    ({}, "fa3"),
    ({**EAGLE, "speculative_eagle_topk": 1}, "fa3"),
    ({**EAGLE, "speculative_eagle_topk": 4}, "flashinfer"),
    (EAGLE, "fa3"),  # topk None: 0.5.23 gives fa3 (the upstream test at 255d22ad expects flashinfer)
    ({**EAGLE, "speculative_eagle_topk": 1, "page_size": 64}, "flashinfer"),
])
def test_hopper_eagle_default(args, expected):
    assert backend("h100", **args) == expected


@pytest.mark.parametrize("platform, args, expected", [
    ("b200", {}, "trtllm_mha"),
    ("b200", {**EAGLE, "speculative_eagle_topk": 1}, "trtllm_mha"),
    ("b200", EAGLE, "flashinfer"),  # SM100 also needs the top-k set
    ("b200", {**EAGLE, "speculative_eagle_topk": 4}, "flashinfer"),
    ("rtx5090", {}, "flashinfer"),
    ("mi300x", {**EAGLE, "speculative_eagle_topk": 4}, "aiter"),
])
def test_measured_default_table(platform, args, expected):
    assert backend(platform, **args) == expected


def test_no_flashinfer_falls_back_to_triton():
    res = resolve({}, platform="a100", model=LLAMA, installed={"flashinfer": False})
    assert res.values["attention_backend"] == "triton"
    assert resolve({}, platform="a100", model=LLAMA).values["attention_backend"] == "flashinfer"


def test_mla_defaults():
    assert backend("h100", DSV3) == "fa3"
    assert backend("b200", DSV3) == "trtllm_mla"  # DeepSeek V3 (MLA, non-DSA) on SM100, nothing typed
    assert backend("b200", DSV3, prefill_attention_backend="fa4") == "flashinfer"
    assert backend("rtx5090", DSV3) == "triton"
    assert backend("mi300x", DSV3) == "aiter"  # 128 KV heads per rank
    assert resolve({"tp_size": 2}, platform="mi300x", model=DSV3).values["attention_backend"] == "triton"


# --- TestFa4PageSizeAutoForce ---------------------------------------------------------------
@pytest.mark.parametrize("side", ["attention_backend", "prefill_attention_backend"])
def test_fa4_page_size_on_sm100(side):
    res = resolve({side: "fa4", "page_size": 1}, platform="b200", model=LLAMA)
    assert res.values["page_size"] == 128
    assert res.request.args["page_size"] == 1  # what the user typed is kept as typed
    assert any("changed to 128" in w.message for w in res.warnings)


def test_fa4_page_size_not_forced_for_tree_speculation_or_mla():
    assert resolve({"attention_backend": "fa4", **EAGLE, "speculative_eagle_topk": 4}, platform="b200",
                   model=LLAMA).values["page_size"] == 1
    assert resolve({"prefill_attention_backend": "fa4"}, platform="b200", model=DSV3).values["page_size"] == 1


def test_dcp_test_deepseek_v3_without_index_topk_is_trtllm_mla():
    assert backend("b300", DSV3) == "trtllm_mla"


# --- page snaps ---------------------------------------------------------------------------
@pytest.mark.parametrize("args, page", [
    ({"attention_backend": "trtllm_mla", "page_size": 16}, 64),
    ({"attention_backend": "trtllm_mla", "page_size": 128}, 64),
    ({"attention_backend": "trtllm_mla", "page_size": 32}, 32),
    ({"attention_backend": "cutedsl_mla", "page_size": 1}, 64),
])
def test_mla_page_snaps(args, page):
    assert resolve(args, platform="b200", model=DSV3).values["page_size"] == page


def test_trtllm_mha_and_hpc_ops_page_snaps():
    def page(args, platform):
        return resolve(args, platform=platform, model=LLAMA).values["page_size"]

    assert page({"attention_backend": "trtllm_mha", "page_size": 256}, "b200") == 64
    assert page({"speculative_draft_attention_backend": "trtllm_mha"}, "a100") == 64
    assert page({"attention_backend": "hpc_ops", "page_size": 32}, "h100") == 64


def test_fa3_with_fp8_e5m2_becomes_triton_and_says_so():
    res = resolve({"attention_backend": "fa3", "kv_cache_dtype": "fp8_e5m2"}, platform="h100", model=LLAMA)
    assert res.values["attention_backend"] == "triton"
    assert res.derivations["attention_backend"].source == "adjustment"
    assert any("FlashAttention 3 only supports fp8_e4m3" in w.message for w in res.warnings)


def test_deprecated_tokenspeed_mla():
    res = resolve({"attention_backend": "tokenspeed_mla", "kv_cache_dtype": "bf16"}, platform="b200", model=DSV3)
    assert res.values["attention_backend"] == "cutedsl_mla" and res.values["kv_cache_dtype"] == "fp8_e4m3"
    assert res.values["prefill_attention_backend"] == "trtllm_mla"
    res = resolve({"prefill_attention_backend": "tokenspeed_mla"}, platform="b200", model=DSV3)
    assert res.values["prefill_attention_backend"] == "trtllm_mla"


def test_strict_turns_adjustments_into_conflicts_with_fixes():
    with pytest.raises(ConflictError) as info:
        resolve({"attention_backend": "fa4", "page_size": 1}, platform="b200", model=LLAMA, strict=True)
    (conflict,) = info.value.conflicts
    assert conflict.rule.id == "adjust.page.fa4-sm100" and conflict.allowed == (128,)
    # typing 128 and omitting the option (the resolver then picks 128) resolve alike: one fix, the omission
    assert [(f.set, f.unset) for f in conflict.fixes] == [({}, ("page_size",))]
    assert resolve({"attention_backend": "fa4", "page_size": 128}, platform="b200", model=LLAMA, strict=True).ok


# --- one test per error template of the attention-backend and KV-cache checks ------------------------
TEMPLATES = [
    ("conflict.mla.trtllm-mla.blackwell-only", "h100", DSV3, {"attention_backend": "trtllm_mla"},
     "TRTLLM MLA backend is only supported on Blackwell GPUs (SM100/SM12x)"),
    ("conflict.mla.trtllm-mla.kv-dtype", "b200", DSV3, {"attention_backend": "trtllm_mla",
                                                        "kv_cache_dtype": "bfloat16"},
     "TensorRT-LLM MLA backend only supports kv-cache-dtype of fp8_e4m3, bf16, or auto"),
    ("conflict.mla.cutedsl.prefill", "b200", DSV3, {"prefill_attention_backend": "cutedsl_mla"},
     "CuteDSL MLA only supports decoding for now"),
    ("conflict.mla.cutedsl.blackwell-only", "rtx5090", DSV3, {"attention_backend": "cutedsl_mla"},
     "CuteDSL MLA backend is only supported on Blackwell GPUs (SM100)"),
    ("conflict.mla.cutedsl.kv-dtype", "b200", DSV3, {"attention_backend": "cutedsl_mla", "kv_cache_dtype": "fp8_e5m2"},
     "CuteDSL MLA backend only supports kv-cache-dtype of fp8_e4m3, bf16, or auto"),
    ("conflict.trtllm-mha.prefill-platform", "a100", LLAMA, {"prefill_attention_backend": "trtllm_mha"},
     "TRTLLM MHA backend for prefill requires Hopper (SM90), Blackwell (SM100), or SM120 GPUs"),
    ("conflict.trtllm-mha.sm120-fp8-prefill", "rtx5090", LLAMA, {"attention_backend": "trtllm_mha",
                                                                 "kv_cache_dtype": "fp8_e4m3"},
     "TRTLLM FMHAv2 prefill on SM120 does not support an fp8_e4m3 KV cache"),
    ("conflict.trtllm-mha.decode-platform", "mi300x", LLAMA, {"decode_attention_backend": "trtllm_mha"},
     "TRTLLM MHA backend for decode is only supported on Hopper (SM90), Blackwell (SM100) and SM120 GPUs"),
    ("conflict.trtllm-mha.prefill-cp", "h100", LLAMA, {"attention_backend": "trtllm_mha", "enable_prefill_cp": True},
     "Prefill context parallelism with the TRTLLM MHA prefill backend requires SM100"),
    ("conflict.mla.intel-xpu-prefill", "h100", DSV3, {"attention_backend": "intel_xpu"},
     "intel_xpu backend is only supported on decode for MLA models"),
    ("conflict.deterministic.backend", "h100", LLAMA, {"enable_deterministic_inference": True,
                                                       "attention_backend": "aiter"},
     "attention backends are supported for deterministic inference"),
    ("conflict.deterministic.absorbed-mla", "h100", DSV3, {"enable_deterministic_inference": True,
                                                           "attention_backend": "flashinfer"},
     "supported for deterministic inference with absorbed-MLA models"),
    ("conflict.attention.flex-speculative", "h100", LLAMA, {"attention_backend": "flex_attention", **EAGLE},
     "Speculative decoding is currently not supported with the flex_attention backend"),
    ("conflict.kv.mxfp8-blackwell", "h100", LLAMA, {"kv_cache_dtype": "mxfp8"},
     "--kv-cache-dtype mxfp8 requires an SM100+ (Blackwell) GPU"),
    ("conflict.kv.kv4-cuda-only", "mi300x", LLAMA, {"kv_cache_dtype": "fp4_mx_block16", "attention_backend": "triton"},
     "is not tested on non-CUDA platforms"),
    ("conflict.kv.nvfp4-platform", "h100", LLAMA, {"kv_cache_dtype": "nvfp4"},
     "--kv-cache-dtype=nvfp4 requires Blackwell SM100 or SM120"),
    ("conflict.kv.kv4-fa4-mha-decode", "b200", LLAMA, {"kv_cache_dtype": "fp4_mx_block16", "attention_backend": "fa4"},
     "KV4 FA4 MHA expects the decode attention backend to be one of"),
    ("conflict.kv.kv4-fa4-mla-decode", "b200", DSV3, {"kv_cache_dtype": "fp4_mx_block16",
                                                      "prefill_attention_backend": "fa4",
                                                      "decode_attention_backend": "triton"},
     "KV4 FA4 MLA expects the decode attention backend to be one of"),
    ("conflict.kv.kv4-mla", "h100", DSV3, {"kv_cache_dtype": "fp4_mx_block16"},
     "KV4 MLA expects the attention backend"),
    ("conflict.kv.kv4-mha", "a100", LLAMA, {"kv_cache_dtype": "fp4_mx_block16"},
     "KV4 MHA expects the attention backend"),
    ("conflict.prefill-only.fa-prefill", "h100", LLAMA, {"prefill_only_disable_kv_cache": True, "is_embedding": True,
                                                         "attention_backend": "triton"},
     "--prefill-only-disable-kv-cache currently requires the FA prefill backend (fa3/fa4)"),
]


@pytest.mark.parametrize("rule, platform, model, args, text", TEMPLATES, ids=[t[0] for t in TEMPLATES])
def test_error_template(rule, platform, model, args, text):
    with pytest.raises(ConflictError) as info:
        resolve(args, platform=platform, model=model)
    by_rule = {c.rule.id: c for c in info.value.conflicts}
    assert rule in by_rule, sorted(by_rule)
    assert text in by_rule[rule].message
    for fix in by_rule[rule].fixes:  # every fix listed resolves
        fixed = {k: v for k, v in args.items() if k not in fix.unset}
        fixed.update(fix.set)
        assert resolve(fixed, platform=platform, model=model).ok


# --- NVFP4: native prefill and the NVFP4 decode agree, so the attention backend is trtllm_mha ------
# Asked of the oracle (SGLang 0.5.23) with the GLM-4.7, Llama 3.1 8B and Qwen3 8B catalogue configs on
# sm100/sm90/sm120: 126 launches agreed after these rules; GLM-4.7 with EAGLE3 on sm100 was the case
# found by the differential sweep (SGLang trtllm_mha, the resolver flashinfer before).
@pytest.mark.parametrize("args, expected", [
    ({}, "trtllm_mha"),
    ({**EAGLE, "speculative_eagle_topk": 1}, "trtllm_mha"),           # speculation would pick flashinfer
    ({"attention_backend": "flashinfer"}, "flashinfer"),              # FP8 workspace prefill: sides differ
    ({"attention_backend": "flashinfer", "prefill_attention_backend": "trtllm_mha"}, "trtllm_mha"),
    ({"attention_backend": "flashinfer", "prefill_kv_cache_dequant_dtype": "nvfp4"}, "trtllm_mha"),
    ({"prefill_kv_cache_dequant_dtype": "fp8_e4m3"}, "trtllm_mha"),    # sides differ: the usual default
])
def test_nvfp4_native_prefill_sets_the_attention_backend(args, expected):
    res = resolve_request(get_engine(), platform="b200", args={"kv_cache_dtype": "nvfp4", **args}, model=LLAMA,
                          fixes=False)
    assert not res.conflicts, [c.rule.id for c in res.conflicts]
    assert res.values["attention_backend"] == expected
