"""SGLang 0.5.23's per-model overrides (rules/model_overrides.yaml).

Every expected value here is what SGLang 0.5.23's own resolution answered for the same launch
(the oracle: SGLang 0.5.23's own resolution run on a CPU, docs/parity.md), recorded when
the rules were written.  Cases where the resolver departs on purpose (a kernel that cannot run on
the platform, docs/divergences.md "K") are left out.
"""
import pytest

from resolver import ConflictError, resolve

from .conftest import CATALOGUE

LLAMA = CATALOGUE["meta-llama/Llama-3.1-8B-Instruct"]
GPT_OSS = CATALOGUE["openai/gpt-oss-120b"]
LLAMA4 = CATALOGUE["meta-llama/Llama-4-Scout-17B-16E-Instruct"]
QWEN3_NEXT = CATALOGUE["Qwen/Qwen3-Next-80B-A3B-Instruct"]
QWEN3_VL = CATALOGUE["Qwen/Qwen3-VL-8B-Instruct"]
DSV4 = CATALOGUE["deepseek-ai/DeepSeek-V4-Flash"]
GPT_OSS_BACKENDS = "['triton', 'trtllm_mha', 'fa3', 'fa4', 'ascend', 'intel_amx', 'intel_xpu', 'aiter']"


def arch(name, base=LLAMA, **fields):
    return {**base, "architectures": [name], **fields}


def values(platform, model, **args):
    return resolve(args, platform=platform, model=model).values


def refused(platform, model, **args):
    with pytest.raises(ConflictError) as info:
        resolve(args, platform=platform, model=model)
    return " ".join(c.message for c in info.value.resolution.conflicts)


# --- every catalogued model, launched with nothing typed (SGLang 0.5.23's answers) -----------------
CATALOGUE_DEFAULTS = [
    ('deepseek-ai/DeepSeek-V3', 'sm90',
     {'attention_backend': 'fa3', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('deepseek-ai/DeepSeek-V3', 'sm100',
     {'attention_backend': 'trtllm_mla', 'page_size': 64, 'kv_cache_dtype': 'auto'}),
    ('deepseek-ai/DeepSeek-V3', 'sm120',
     {'attention_backend': 'triton', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('deepseek-ai/DeepSeek-R1', 'sm90',
     {'attention_backend': 'fa3', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('deepseek-ai/DeepSeek-R1', 'sm100',
     {'attention_backend': 'trtllm_mla', 'page_size': 64, 'kv_cache_dtype': 'auto'}),
    ('deepseek-ai/DeepSeek-R1', 'sm120',
     {'attention_backend': 'triton', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('deepseek-ai/DeepSeek-V3.1', 'sm90',
     {'attention_backend': 'fa3', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('deepseek-ai/DeepSeek-V3.1', 'sm100',
     {'attention_backend': 'trtllm_mla', 'page_size': 64, 'kv_cache_dtype': 'auto'}),
    ('deepseek-ai/DeepSeek-V3.1', 'sm120',
     {'attention_backend': 'triton', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('deepseek-ai/DeepSeek-V3.2', 'sm90',
     {'attention_backend': 'dsa', 'page_size': 64, 'kv_cache_dtype': 'bfloat16',
      'dsa_prefill_backend': 'flashmla_sparse', 'dsa_decode_backend': 'fa3'}),
    ('deepseek-ai/DeepSeek-V3.2', 'sm100',
     {'attention_backend': 'dsa', 'page_size': 64, 'kv_cache_dtype': 'fp8_e4m3', 'dsa_prefill_backend': 'trtllm',
      'dsa_decode_backend': 'trtllm'}),
    ('deepseek-ai/DeepSeek-Coder-V2-Lite-Base', 'sm90',
     {'attention_backend': 'fa3', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('deepseek-ai/DeepSeek-Coder-V2-Lite-Base', 'sm100',
     {'attention_backend': 'flashinfer', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('deepseek-ai/DeepSeek-Coder-V2-Lite-Base', 'sm120',
     {'attention_backend': 'triton', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('moonshotai/Kimi-K2-Instruct', 'sm90',
     {'attention_backend': 'fa3', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('moonshotai/Kimi-K2-Instruct', 'sm100',
     {'attention_backend': 'trtllm_mla', 'page_size': 64, 'kv_cache_dtype': 'auto'}),
    ('moonshotai/Kimi-K2-Instruct', 'sm120',
     {'attention_backend': 'triton', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('moonshotai/Kimi-K2.5', 'sm90',
     {'attention_backend': 'fa3', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('moonshotai/Kimi-K2.5', 'sm100',
     {'attention_backend': 'trtllm_mla', 'page_size': 64, 'kv_cache_dtype': 'auto'}),
    ('moonshotai/Kimi-K2.5', 'sm120',
     {'attention_backend': 'triton', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('moonshotai/Kimi-Linear-48B-A3B-Instruct', 'sm90',
     {'attention_backend': 'fa3', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('moonshotai/Kimi-Linear-48B-A3B-Instruct', 'sm100',
     {'attention_backend': 'flashinfer', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('moonshotai/Kimi-Linear-48B-A3B-Instruct', 'sm120',
     {'attention_backend': 'triton', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('zai-org/GLM-4.5', 'sm90',
     {'attention_backend': 'fa3', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('zai-org/GLM-4.5', 'sm100',
     {'attention_backend': 'trtllm_mha', 'page_size': 64, 'kv_cache_dtype': 'auto'}),
    ('zai-org/GLM-4.5', 'sm120',
     {'attention_backend': 'flashinfer', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('zai-org/GLM-4.6', 'sm90',
     {'attention_backend': 'fa3', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('zai-org/GLM-4.6', 'sm100',
     {'attention_backend': 'trtllm_mha', 'page_size': 64, 'kv_cache_dtype': 'auto'}),
    ('zai-org/GLM-4.6', 'sm120',
     {'attention_backend': 'flashinfer', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('zai-org/GLM-4.7', 'sm90',
     {'attention_backend': 'fa3', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('zai-org/GLM-4.7', 'sm100',
     {'attention_backend': 'trtllm_mha', 'page_size': 64, 'kv_cache_dtype': 'auto'}),
    ('zai-org/GLM-4.7', 'sm120',
     {'attention_backend': 'flashinfer', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('zai-org/GLM-4.7-Flash', 'sm90',
     {'attention_backend': 'fa3', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('zai-org/GLM-4.7-Flash', 'sm100',
     {'attention_backend': 'flashinfer', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('zai-org/GLM-4.7-Flash', 'sm120',
     {'attention_backend': 'triton', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('zai-org/GLM-5', 'sm90',
     {'attention_backend': 'dsa', 'page_size': 64, 'kv_cache_dtype': 'bfloat16',
      'dsa_prefill_backend': 'flashmla_sparse', 'dsa_decode_backend': 'fa3'}),
    ('zai-org/GLM-5', 'sm100',
     {'attention_backend': 'dsa', 'page_size': 64, 'kv_cache_dtype': 'fp8_e4m3', 'dsa_prefill_backend': 'trtllm',
      'dsa_decode_backend': 'trtllm'}),
    ('zai-org/GLM-5', 'sm120',
     {'attention_backend': 'dsa', 'page_size': 64, 'kv_cache_dtype': 'fp8_e4m3',
      'dsa_prefill_backend': 'flashinfer_sparse_mla', 'dsa_decode_backend': 'flashinfer_sparse_mla'}),
    ('Qwen/Qwen3-8B', 'sm90',
     {'attention_backend': 'fa3', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('Qwen/Qwen3-8B', 'sm100',
     {'attention_backend': 'trtllm_mha', 'page_size': 64, 'kv_cache_dtype': 'auto'}),
    ('Qwen/Qwen3-8B', 'sm120',
     {'attention_backend': 'flashinfer', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('Qwen/Qwen3-32B', 'sm90',
     {'attention_backend': 'fa3', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('Qwen/Qwen3-32B', 'sm100',
     {'attention_backend': 'trtllm_mha', 'page_size': 64, 'kv_cache_dtype': 'auto'}),
    ('Qwen/Qwen3-32B', 'sm120',
     {'attention_backend': 'flashinfer', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('Qwen/Qwen3-30B-A3B', 'sm90',
     {'attention_backend': 'fa3', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('Qwen/Qwen3-30B-A3B', 'sm100',
     {'attention_backend': 'trtllm_mha', 'page_size': 64, 'kv_cache_dtype': 'auto'}),
    ('Qwen/Qwen3-30B-A3B', 'sm120',
     {'attention_backend': 'flashinfer', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('Qwen/Qwen3-235B-A22B', 'sm90',
     {'attention_backend': 'fa3', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('Qwen/Qwen3-235B-A22B', 'sm100',
     {'attention_backend': 'trtllm_mha', 'page_size': 64, 'kv_cache_dtype': 'auto'}),
    ('Qwen/Qwen3-235B-A22B', 'sm120',
     {'attention_backend': 'flashinfer', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('Qwen/Qwen3-Next-80B-A3B-Instruct', 'sm90',
     {'attention_backend': 'fa3', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('Qwen/Qwen3-Next-80B-A3B-Instruct', 'sm120',
     {'attention_backend': 'flashinfer', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('Qwen/Qwen3-VL-8B-Instruct', 'sm90',
     {'attention_backend': 'fa3', 'decode_attention_backend': 'flashinfer', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('Qwen/Qwen3-VL-8B-Instruct', 'sm100',
     {'attention_backend': 'trtllm_mha', 'page_size': 64, 'kv_cache_dtype': 'auto'}),
    ('Qwen/Qwen3-VL-8B-Instruct', 'sm120',
     {'attention_backend': 'flashinfer', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('Qwen/Qwen3-VL-235B-A22B-Instruct', 'sm90',
     {'attention_backend': 'fa3', 'decode_attention_backend': 'flashinfer', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('Qwen/Qwen3-VL-235B-A22B-Instruct', 'sm100',
     {'attention_backend': 'trtllm_mha', 'page_size': 64, 'kv_cache_dtype': 'auto'}),
    ('Qwen/Qwen3-VL-235B-A22B-Instruct', 'sm120',
     {'attention_backend': 'flashinfer', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('openai/gpt-oss-20b', 'sm90',
     {'attention_backend': 'fa3', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('openai/gpt-oss-20b', 'sm100',
     {'attention_backend': 'trtllm_mha', 'page_size': 64, 'kv_cache_dtype': 'auto'}),
    ('openai/gpt-oss-20b', 'sm120',
     {'attention_backend': 'triton', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('openai/gpt-oss-120b', 'sm90',
     {'attention_backend': 'fa3', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('openai/gpt-oss-120b', 'sm100',
     {'attention_backend': 'trtllm_mha', 'page_size': 64, 'kv_cache_dtype': 'auto'}),
    ('openai/gpt-oss-120b', 'sm120',
     {'attention_backend': 'triton', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('meta-llama/Llama-3.1-8B-Instruct', 'sm90',
     {'attention_backend': 'fa3', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('meta-llama/Llama-3.1-8B-Instruct', 'sm100',
     {'attention_backend': 'trtllm_mha', 'page_size': 64, 'kv_cache_dtype': 'auto'}),
    ('meta-llama/Llama-3.1-8B-Instruct', 'sm120',
     {'attention_backend': 'flashinfer', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('meta-llama/Llama-3.1-70B-Instruct', 'sm90',
     {'attention_backend': 'fa3', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('meta-llama/Llama-3.1-70B-Instruct', 'sm100',
     {'attention_backend': 'trtllm_mha', 'page_size': 64, 'kv_cache_dtype': 'auto'}),
    ('meta-llama/Llama-3.1-70B-Instruct', 'sm120',
     {'attention_backend': 'flashinfer', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('meta-llama/Llama-3.3-70B-Instruct', 'sm90',
     {'attention_backend': 'fa3', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('meta-llama/Llama-3.3-70B-Instruct', 'sm100',
     {'attention_backend': 'trtllm_mha', 'page_size': 64, 'kv_cache_dtype': 'auto'}),
    ('meta-llama/Llama-3.3-70B-Instruct', 'sm120',
     {'attention_backend': 'flashinfer', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('meta-llama/Llama-4-Scout-17B-16E-Instruct', 'sm90',
     {'attention_backend': 'fa3', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('meta-llama/Llama-4-Scout-17B-16E-Instruct', 'sm100',
     {'attention_backend': 'trtllm_mha', 'page_size': 64, 'kv_cache_dtype': 'auto'}),
    ('meta-llama/Llama-4-Scout-17B-16E-Instruct', 'sm120',
     {'attention_backend': 'triton', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('meta-llama/Llama-4-Maverick-17B-128E-Instruct', 'sm90',
     {'attention_backend': 'fa3', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('meta-llama/Llama-4-Maverick-17B-128E-Instruct', 'sm100',
     {'attention_backend': 'trtllm_mha', 'page_size': 64, 'kv_cache_dtype': 'auto'}),
    ('meta-llama/Llama-4-Maverick-17B-128E-Instruct', 'sm120',
     {'attention_backend': 'triton', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('mistralai/Mistral-7B-Instruct-v0.3', 'sm90',
     {'attention_backend': 'fa3', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('mistralai/Mistral-7B-Instruct-v0.3', 'sm100',
     {'attention_backend': 'trtllm_mha', 'page_size': 64, 'kv_cache_dtype': 'auto'}),
    ('mistralai/Mistral-7B-Instruct-v0.3', 'sm120',
     {'attention_backend': 'flashinfer', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('mistralai/Mixtral-8x7B-Instruct-v0.1', 'sm90',
     {'attention_backend': 'fa3', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('mistralai/Mixtral-8x7B-Instruct-v0.1', 'sm100',
     {'attention_backend': 'trtllm_mha', 'page_size': 64, 'kv_cache_dtype': 'auto'}),
    ('mistralai/Mixtral-8x7B-Instruct-v0.1', 'sm120',
     {'attention_backend': 'flashinfer', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('google/gemma-3-27b-it', 'sm90',
     {'attention_backend': 'fa3', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('google/gemma-3-27b-it', 'sm100',
     {'attention_backend': 'trtllm_mha', 'page_size': 64, 'kv_cache_dtype': 'auto'}),
    ('google/gemma-3-27b-it', 'sm120',
     {'attention_backend': 'flashinfer', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('MiniMaxAI/MiniMax-M2', 'sm90',
     {'attention_backend': 'fa3', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('MiniMaxAI/MiniMax-M2', 'sm100',
     {'attention_backend': 'trtllm_mha', 'page_size': 64, 'kv_cache_dtype': 'auto'}),
    ('MiniMaxAI/MiniMax-M2', 'sm120',
     {'attention_backend': 'flashinfer', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('meituan-longcat/LongCat-Flash-Chat', 'sm90',
     {'attention_backend': 'fa3', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('meituan-longcat/LongCat-Flash-Chat', 'sm100',
     {'attention_backend': 'trtllm_mla', 'page_size': 64, 'kv_cache_dtype': 'auto'}),
    ('meituan-longcat/LongCat-Flash-Chat', 'sm120',
     {'attention_backend': 'triton', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('openbmb/MiniCPM3-4B', 'sm90',
     {'attention_backend': 'fa3', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('openbmb/MiniCPM3-4B', 'sm100',
     {'attention_backend': 'flashinfer', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
    ('openbmb/MiniCPM3-4B', 'sm120',
     {'attention_backend': 'triton', 'page_size': 1, 'kv_cache_dtype': 'auto'}),
]


@pytest.mark.parametrize("model_id, platform, expected", CATALOGUE_DEFAULTS,
                         ids=[f"{m}@{p}" for m, p, _ in CATALOGUE_DEFAULTS])
def test_catalogue_default_launch(model_id, platform, expected):
    got = values(platform, CATALOGUE[model_id])
    assert {k: got[k] for k in expected} == expected


# --- gpt-oss ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("platform, expected", [
    ("sm90", "fa3"), ("sm100", "trtllm_mha"), ("sm103", "trtllm_mha"), ("sm120", "triton"), ("sm80", "triton")])
def test_gpt_oss_default_backend(platform, expected):
    assert values(platform, GPT_OSS)["attention_backend"] == expected


def test_gpt_oss_sm100_pages():
    assert values("sm100", GPT_OSS)["page_size"] == 64
    assert values("sm100", GPT_OSS, page_size=16)["page_size"] == 16


@pytest.mark.parametrize("backend", ["flashinfer", "torch_native", "flex_attention", "trtllm_mla", "flashmla", "dsa"])
def test_gpt_oss_refuses_backend(backend):
    assert "GptOssForCausalLM requires one of " + GPT_OSS_BACKENDS in refused("sm90", GPT_OSS,
                                                                              attention_backend=backend)


@pytest.mark.parametrize("args", [
    {"prefill_attention_backend": "triton"}, {"decode_attention_backend": "fa3"},
    {"prefill_attention_backend": "flashinfer", "decode_attention_backend": "flashinfer"},
    {"attention_backend": "triton", "prefill_attention_backend": "flashinfer"}])
def test_gpt_oss_refuses_sides(args):
    assert "GptOssForCausalLM requires one of" in refused("sm90", GPT_OSS, **args)


def test_gpt_oss_accepts_sides():
    got = values("sm90", GPT_OSS, prefill_attention_backend="fa3", decode_attention_backend="triton")
    assert (got["attention_backend"], got["prefill_attention_backend"], got["decode_attention_backend"]) == \
        ("fa3", "fa3", "triton")
    assert values("sm90", GPT_OSS, prefill_attention_backend="triton",
                  decode_attention_backend="triton")["attention_backend"] == "triton"
    assert values("sm90", GPT_OSS, attention_backend="fa4")["attention_backend"] == "fa4"


def test_gpt_oss_with_other_rules():
    assert values("sm90", GPT_OSS, kv_cache_dtype="fp8_e5m2")["attention_backend"] == "triton"  # fa3 has no e5m2
    assert values("sm90", GPT_OSS, enable_deterministic_inference=True)["attention_backend"] == "fa3"
    # the override picks trtllm_mha before deterministic inference looks: SGLang refuses it
    assert "deterministic inference" in refused("sm100", GPT_OSS, enable_deterministic_inference=True)


# --- Llama 4 ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("platform, expected", [
    ("sm90", "fa3"), ("sm100", "trtllm_mha"), ("sm120", "triton"), ("sm80", "triton"), ("gfx942", "aiter")])
def test_llama4_default_backend(platform, expected):
    assert values(platform, LLAMA4)["attention_backend"] == expected


@pytest.mark.parametrize("backend", ["flashinfer", "fa4", "torch_native", "flex_attention", "trtllm_mla"])
def test_llama4_refuses_backend(backend):
    assert ("fa3, aiter, triton, ascend, trtllm_mha or intel_xpu is required for Llama4 model but got "
            + backend) in refused("sm120", LLAMA4, attention_backend=backend)


def test_llama4_sides():
    # a typed side leaves --attention-backend to the override; agreeing typed sides replace it
    got = values("sm100", LLAMA4, prefill_attention_backend="triton")
    assert (got["attention_backend"], got["page_size"]) == ("trtllm_mha", 64)
    got = values("sm100", LLAMA4, prefill_attention_backend="flashinfer", decode_attention_backend="flashinfer")
    assert (got["attention_backend"], got["page_size"]) == ("flashinfer", 1)
    assert values("sm120", LLAMA4, enable_deterministic_inference=True)["attention_backend"] == "triton"
    assert "'trtllm_mha'" in refused("sm100", LLAMA4, enable_deterministic_inference=True,
                                     prefill_attention_backend="triton", decode_attention_backend="triton")


def test_deterministic_agreeing_sides_keep_radix_decision():
    got = values("sm100", LLAMA, enable_deterministic_inference=True,
                 prefill_attention_backend="triton", decode_attention_backend="triton")
    assert (got["attention_backend"], got["disable_radix_cache"]) == ("triton", True)


# --- Qwen3-Next / Qwen3.5 hybrid (SM100), Qwen3-VL (Hopper) ---------------------------------------
@pytest.mark.parametrize("args, expected", [
    ({}, ("trtllm_mha", 64)),
    ({"page_size": 16}, ("trtllm_mha", 64)),
    ({"attention_backend": "flashinfer"}, ("flashinfer", 1)),
    ({"attention_backend": "trtllm_mha"}, ("trtllm_mha", 64)),
    ({"prefill_attention_backend": "triton", "decode_attention_backend": "triton"}, ("triton", 64)),
])
def test_qwen3_next_sm100(args, expected):
    got = values("sm100", QWEN3_NEXT, disable_radix_cache=True, **args)
    assert (got["attention_backend"], got["page_size"]) == expected


def test_qwen3_next_elsewhere_uses_the_platform_table():
    assert values("sm90", QWEN3_NEXT)["attention_backend"] == "fa3"
    assert values("sm120", QWEN3_NEXT)["attention_backend"] == "flashinfer"


def test_qwen3_vl_hopper_decodes_with_flashinfer():
    got = values("sm90", QWEN3_VL)
    assert (got["attention_backend"], got["decode_attention_backend"]) == ("fa3", "flashinfer")
    assert values("sm90", QWEN3_VL, attention_backend="triton")["decode_attention_backend"] is None
    got = values("sm90", QWEN3_VL, prefill_attention_backend="triton")
    assert (got["prefill_attention_backend"], got["decode_attention_backend"]) == ("triton", "flashinfer")
    assert values("sm100", QWEN3_VL)["decode_attention_backend"] is None


# --- DeepSeek V4 ------------------------------------------------------------------------------------
@pytest.mark.parametrize("args, expected", [
    ({}, ("dsv4", 256)),
    ({"attention_backend": "triton"}, ("dsv4", 256)),
    ({"page_size": 64}, ("dsv4", 256)),
    ({"prefill_attention_backend": "triton"}, ("dsv4", 256)),
])
def test_deepseek_v4(args, expected):
    got = values("sm100", DSV4, **args)
    assert (got["attention_backend"], got["page_size"]) == expected


# --- the rest ---------------------------------------------------------------------------------------
GEMMA4 = arch("Gemma4ForConditionalGeneration", model_type="gemma4")
MINIMAX_M3 = arch("MiniMaxM3SparseForCausalLM", CATALOGUE["MiniMaxAI/MiniMax-M2"], model_type="minimax_m3")
OLMO2 = arch("Olmo2ForCausalLM", model_type="olmo2")
LFM2 = arch("Lfm2ForCausalLM", model_type="lfm2")
KIMI_K3 = arch("KimiK3ForConditionalGeneration", CATALOGUE["moonshotai/Kimi-K2-Instruct"], model_type="kimi_k3")


@pytest.mark.parametrize("model, platform, expected", [
    (GEMMA4, "sm90", ("triton", None, 1)), (GEMMA4, "sm100", ("trtllm_mha", None, 64)),
    (GEMMA4, "sm120", ("triton", None, 1)),
    (MINIMAX_M3, "sm90", ("fa3", None, 128)), (MINIMAX_M3, "sm100", ("fa4", None, 128)),
    (MINIMAX_M3, "sm120", ("flashinfer", None, 1)), (MINIMAX_M3, "gfx942", ("triton", None, 1)),
    (OLMO2, "sm90", ("fa3", None, 1)), (OLMO2, "sm100", ("trtllm_mha", None, 64)),
    (OLMO2, "gfx942", ("triton", None, 1)),
    (LFM2, "sm100", ("flashinfer", None, 1)), (LFM2, "sm90", ("fa3", None, 1)),
    (arch("FalconH1ForCausalLM"), "sm100", ("triton", None, 1)),
    (arch("MiniCPMV4_6ForConditionalGeneration"), "sm100", ("triton", None, 1)),
    (arch("GraniteMoeHybridForCausalLM", layer_types=["mamba", "attention"] * 16), "sm100", ("flashinfer", None, 1)),
    (arch("NemotronHForCausalLM"), "sm100", ("trtllm_mha", None, 64)),
    (arch("NemotronHForCausalLM"), "sm120", ("flashinfer", None, 1)),
    (arch("MossVLForConditionalGeneration"), "sm90", ("fa3", "flashinfer", 1)),
    (arch("IQuestQ1ForCausalLM"), "sm90", ("fa3", None, 1)),
    (arch("EmbeddingGemma2Model", model_type="gemma2"), "sm90", ("triton", None, 1)),
    (KIMI_K3, "sm100", ("trtllm_mla", "trtllm_mla", 64)), (KIMI_K3, "sm90", ("fa3", None, 1)),
])
def test_other_defaults(model, platform, expected):
    got = values(platform, model)
    assert (got["attention_backend"], got["prefill_attention_backend"], got["page_size"]) == expected


def test_minimax_m3_fp8_kv_runs_trtllm_mha():
    got = values("sm100", MINIMAX_M3, kv_cache_dtype="fp8_e4m3")
    assert (got["attention_backend"], got["page_size"]) == ("trtllm_mha", 128)
    assert values("sm100", MINIMAX_M3, attention_backend="trtllm_mha")["page_size"] == 128
    assert values("sm100", MINIMAX_M3, page_size=64)["page_size"] == 128  # fa4 on SM100 runs 128-token pages


def test_other_checks():
    assert "Gemma4 only supports" in refused("sm90", GEMMA4, attention_backend="fa3")
    assert "Gemma4 only supports" in refused("sm90", GEMMA4, decode_attention_backend="fa3")
    assert "FlashInfer backend can significantly degrade" in refused("sm90", OLMO2, attention_backend="flashinfer")
    assert "does not support triton attention backend" in refused("sm90", LFM2, attention_backend="triton")
    assert "requires flashinfer prefill" in refused("sm90", arch("MossVLForConditionalGeneration"),
                                                    attention_backend="fa3")
    assert "requires FA3 attention" in refused("sm90", arch("IQuestQ1ForCausalLM"), attention_backend="triton")
    assert "does not support context parallelism" in refused("sm90", arch("IQuestQ1ForCausalLM"),
                                                             dcp_size=2, tp_size=2)
    assert "Kimi-K3 DCP must be 'cutedsl_mla' or 'aiter'" in refused("sm100", KIMI_K3, dcp_size=2, tp_size=2,
                                                                     decode_attention_backend="triton")


def test_embedding_gemma2_radix_off():
    assert values("sm90", arch("EmbeddingGemma2Model", model_type="gemma2"),
                  disable_radix_cache=False)["disable_radix_cache"] is True


def test_muse_spark_fp8_kv():
    assert values("sm90", arch("MuseSparkForConditionalGeneration"))["kv_cache_dtype"] == "fp8_e4m3"


def test_dsa_dcp_defaults_trtllm():
    got = values("sm100", CATALOGUE["deepseek-ai/DeepSeek-V3.2"], dcp_size=2, tp_size=2)
    assert (got["dsa_prefill_backend"], got["dsa_decode_backend"]) == ("trtllm", "trtllm")
    assert "DSA DCP does not support HiSparse" in refused("sm100", CATALOGUE["deepseek-ai/DeepSeek-V3.2"],
                                                          dcp_size=2, tp_size=2, enable_hisparse=True)


def test_gpt_oss_mxfp4_runs_bfloat16_even_over_a_typed_dtype():
    # SGLang 0.5.23: dtype bfloat16 declared by _gpt_oss_overrides, with --dtype float16 typed too
    assert values("sm90", GPT_OSS)["dtype"] == "bfloat16"
    assert values("sm90", GPT_OSS, dtype="float16")["dtype"] == "bfloat16"
    assert values("sm90", LLAMA)["dtype"] == "auto"


# --- all-reduce fusion: asked of the oracle (SGLang 0.5.23) for GLM-5, DeepSeek V3.2 and Llama 3.1
# on gfx942, gfx950 and sm90 with tp 8 and each variation below (54 launches, all agreeing) -----------
FUSION = ("enforce_disable_flashinfer_allreduce_fusion", "enable_aiter_allreduce_fusion",
          "disable_aiter_allreduce_fusion_in_prefill")


@pytest.mark.parametrize("model, platform, args, expected", [
    # GLM-5 on ROCm fuses AITER's all-reduce into decode
    ("zai-org/GLM-5", "gfx942", {}, (False, True, True)),
    ("zai-org/GLM-5", "gfx950", {"attn_dp_size": 8}, (False, False, False)),  # not with attention DP
    ("zai-org/GLM-5", "gfx942", {"nnodes": 2}, (False, False, False)),        # nor across nodes
    ("zai-org/GLM-5", "sm90", {}, (False, False, False)),
    ("meta-llama/Llama-3.1-8B-Instruct", "sm90", {"enable_deterministic_inference": True}, (True, False, False)),
    ("meta-llama/Llama-3.1-8B-Instruct", "gfx942", {"enable_deterministic_inference": True,
                                                   "enable_aiter_allreduce_fusion": True}, (True, False, False)),
])
def test_all_reduce_fusion(model, platform, args, expected):
    v = values(platform, CATALOGUE[model], tp_size=8, **args)
    assert tuple(v[k] for k in FUSION) == expected
