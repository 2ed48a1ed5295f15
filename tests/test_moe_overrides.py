"""The MoE runner, quantization, TF32 and shared-expert fusion settings (rules/moe.yaml, and the section
"MoE runner, quantization, TF32" of rules/model_overrides.yaml).

Every expected value below is SGLang 0.5.23's own answer for the same request (the oracle, docs/parity.md:
``{"platform": P, "model": <the config below>, "args": A}`` given to ``oracle/ask.py``), recorded when the
rules were written; ``test_the_table_is_sglangs_answer`` asks the oracle again when it is installed.
A value SGLang does not declare is what was typed, else SGLang's default.
"""
import argparse
import io
import json
import os

import pytest

from resolver import ConflictError, resolve
from resolver.cli import main
from resolver.model import model_facts

from .conftest import CATALOGUE, ROOT
from .oracle import ORACLE, oracle_python

GLM = CATALOGUE["zai-org/GLM-4.7"]
MINIMAX = CATALOGUE["MiniMaxAI/MiniMax-M2"]
DSV3 = CATALOGUE["deepseek-ai/DeepSeek-V3"]
QWEN_MOE = CATALOGUE["Qwen/Qwen3-30B-A3B"]
GPT_OSS = CATALOGUE["openai/gpt-oss-20b"]
LLAMA = CATALOGUE["meta-llama/Llama-3.1-8B-Instruct"]
# the catalogued V4 config plus the two fields the oracle's model class needs (the resolver reads neither)
DSV4 = {**CATALOGUE["deepseek-ai/DeepSeek-V4-Flash"], "compress_ratios": [0] * 43,
        "rope_scaling": {"type": "yarn", "factor": 16, "original_max_position_embeddings": 65536, "beta_fast": 32,
                         "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0}}

FP8 = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": [128, 128]}
NVFP4 = {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16}
MODELOPT_FP8 = {"quant_method": "modelopt", "quant_algo": "FP8"}
W4A16 = {"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION",
         "quantized_layers": {"model.layers.0.mlp.experts": {"quant_algo": "W4A16_NVFP4"},
                              "model.layers.0.self_attn.qkv_proj": {"quant_algo": "FP8"}}}
KIMI_INT4 = {"quant_method": "compressed-tensors", "format": "pack-quantized", "ignore": ["lm_head"],
             "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
                 "num_bits": 4, "group_size": 32, "strategy": "group", "type": "int", "symmetric": True,
                 "dynamic": False}}}}
V4_NVFP4_MOE = {**DSV4["quantization_config"], "quant_algo": "MIXED_PRECISION", "moe_quant_algo": "NVFP4",
                "group_size": 16}


def quant(base, qc):
    return {**base, "quantization_config": qc}


def unquantised(base):
    return {k: v for k, v in base.items() if k != "quantization_config"}


def arch(name, base=LLAMA, **fields):
    return {**base, "architectures": [name], **fields}


FIELDS = ("quantization", "moe_runner_backend", "enable_tf32_matmul", "disable_shared_experts_fusion",
          "speculative_moe_runner_backend", "speculative_draft_model_quantization")


def expect(q=None, runner="auto", tf32=None, fusion=False, spec=None, draft=None):
    """SGLang's final values of FIELDS (the draft's runner is the target's unless given)."""
    return dict(zip(FIELDS, (q, runner, tf32, fusion, spec or runner, draft), strict=True))


TRTLLM = dict(runner="flashinfer_trtllm", fusion=True)

#: (case id, platform, model config, typed args, SGLang's final values)
CASES = [
    # GLM-4 MoE: TF32 everywhere (over a typed --no-enable-tf32-matmul), TRT-LLM MoE on SM100
    ("glm-sm90", "sm90", GLM, {}, expect(tf32=True)),
    ("glm-sm100", "sm100", GLM, {}, expect(tf32=True, **TRTLLM)),
    ("glm-sm103", "sm103", GLM, {}, expect(tf32=True, **TRTLLM)),
    ("glm-sm120", "sm120", GLM, {}, expect(tf32=True)),
    ("glm-no-tf32", "sm100", GLM, {"enable_tf32_matmul": False}, expect(tf32=True, **TRTLLM)),
    ("glm-auto-typed", "sm100", GLM, {"moe_runner_backend": "auto"}, expect(tf32=True, **TRTLLM)),
    ("glm-triton", "sm100", GLM, {"moe_runner_backend": "triton"}, expect(tf32=True, runner="triton")),
    ("glm-deepep", "sm100", GLM, {"moe_a2a_backend": "deepep"}, expect(tf32=True)),
    ("glm-spec-runner", "sm100", GLM, {"speculative_moe_runner_backend": "triton"},
     expect(tf32=True, spec="triton", **TRTLLM)),
    ("glm-eagle-draft-unquant", "sm100", GLM,
     {"speculative_algorithm": "EAGLE", "speculative_draft_model_quantization": "unquant"},
     expect(tf32=True, **TRTLLM)),
    ("glm-fp8-sm100", "sm100", quant(GLM, FP8), {}, expect(q="fp8", tf32=True)),
    ("glm-fp8-sm90", "sm90", quant(GLM, FP8), {}, expect(tf32=True)),
    ("glm-fp8-unquant", "sm100", quant(GLM, FP8), {"quantization": "unquant"}, expect(tf32=True, **TRTLLM)),
    ("glm-fp8-typed", "sm100", GLM, {"quantization": "fp8"}, expect(q="fp8", tf32=True, draft="fp8")),
    ("glm-nvfp4-sm100", "sm100", quant(GLM, NVFP4), {}, expect(q="modelopt_fp4", tf32=True, **TRTLLM)),
    ("glm-modelopt-fp8-sm100", "sm100", quant(GLM, MODELOPT_FP8), {}, expect(q="modelopt_fp8", tf32=True)),
    ("glm-nvfp4-sm120", "sm120", quant(GLM, NVFP4), {}, expect(tf32=True)),
    ("glm-nvfp4-sm120-typed", "sm120", quant(GLM, NVFP4), {"quantization": "modelopt_fp4"},
     expect(q="modelopt_fp4", tf32=True, runner="flashinfer_cutlass", draft="modelopt_fp4")),
    # MiniMax-M2: TF32 always; NVFP4 weights on SM100 run the routed TRT-LLM MoE (quantization left unset)
    ("minimax-sm90", "sm90", MINIMAX, {}, expect(tf32=True)),
    ("minimax-no-tf32", "sm100", MINIMAX, {"enable_tf32_matmul": False}, expect(tf32=True)),
    ("minimax-unquant", "sm100", MINIMAX, {"quantization": "unquant"}, expect(tf32=True)),
    ("minimax-nvfp4-sm100", "sm100", quant(MINIMAX, NVFP4), {},
     expect(tf32=True, runner="flashinfer_trtllm_routed", fusion=True)),
    ("minimax-nvfp4-sm120", "sm120", quant(MINIMAX, NVFP4), {}, expect(tf32=True)),
    ("minimax-fp8-as-nvfp4", "sm100", MINIMAX, {"quantization": "modelopt_fp4"},
     expect(q="modelopt_fp4", tf32=True, runner="flashinfer_trtllm_routed", fusion=True, draft="modelopt_fp4")),
    # the DeepSeek family's SM100 pass: the checkpoint's quantization, then TRT-LLM MoE
    ("dsv3-sm100", "sm100", DSV3, {}, expect(q="fp8", **TRTLLM)),
    ("dsv3-sm90", "sm90", DSV3, {}, expect()),
    ("dsv3-unquant", "sm100", DSV3, {"quantization": "unquant"}, expect(**TRTLLM)),
    ("dsv3-typed-fp8", "sm100", DSV3, {"quantization": "fp8"}, expect(q="fp8", draft="fp8", **TRTLLM)),
    ("dsv3-typed-nvfp4", "sm100", DSV3, {"quantization": "modelopt_fp4"},
     expect(q="modelopt_fp4", draft="modelopt_fp4", **TRTLLM)),
    ("dsv3-typed-nvfp4-sm120", "sm120", DSV3, {"quantization": "modelopt_fp4"},
     expect(q="modelopt_fp4", runner="flashinfer_cutlass", draft="modelopt_fp4")),
    ("dsv3-no-quant-config", "sm100", unquantised(DSV3), {}, expect(**TRTLLM)),
    ("dsv3-nvfp4-sm100", "sm100", quant(DSV3, NVFP4), {}, expect(q="modelopt_fp4", **TRTLLM)),
    ("dsv3-nvfp4-sm120", "sm120", quant(DSV3, NVFP4), {}, expect()),
    ("kimi-int4-sm100", "sm100", quant(DSV3, KIMI_INT4), {}, expect(q="compressed-tensors", **TRTLLM)),
    ("dsv32-sm100", "sm100", CATALOGUE["deepseek-ai/DeepSeek-V3.2"], {}, expect(q="fp8", **TRTLLM)),
    ("glm5-sm100", "sm100", CATALOGUE["zai-org/GLM-5"], {}, expect(**TRTLLM)),
    ("kimi-k2-sm100", "sm100", CATALOGUE["moonshotai/Kimi-K2-Instruct"], {}, expect(q="fp8", **TRTLLM)),
    # the Qwen3 MoE family on SM100
    ("qwen-moe-sm100", "sm100", QWEN_MOE, {}, expect(**TRTLLM)),
    ("qwen-moe-typed-fp8", "sm100", QWEN_MOE, {"quantization": "fp8"}, expect(q="fp8", draft="fp8", **TRTLLM)),
    ("qwen-moe-deepep", "sm100", QWEN_MOE, {"moe_a2a_backend": "deepep"}, expect()),
    ("qwen-moe-nvfp4-sm100", "sm100", quant(QWEN_MOE, NVFP4), {}, expect(q="modelopt_fp4", **TRTLLM)),
    ("qwen-moe-nvfp4-sm120", "sm120", quant(QWEN_MOE, NVFP4), {}, expect()),
    ("qwen-moe-w4a16", "sm100", quant(QWEN_MOE, W4A16), {}, expect(q="modelopt_mixed", runner="marlin")),
    ("qwen-moe-w4a16-marlin", "sm100", quant(QWEN_MOE, W4A16), {"moe_runner_backend": "marlin"},
     expect(q="modelopt_mixed", runner="marlin")),
    # gpt-oss: FlashInfer's MXFP4 MoE on SM100 and SM12x (triton_kernels taken as absent elsewhere)
    ("gpt-oss-sm90", "sm90", GPT_OSS, {}, expect()),
    ("gpt-oss-sm100", "sm100", GPT_OSS, {}, expect(runner="flashinfer_mxfp4")),
    ("gpt-oss-sm120", "sm120", GPT_OSS, {}, expect(runner="flashinfer_mxfp4")),
    ("gpt-oss-sm121", "sm121", GPT_OSS, {}, expect(runner="flashinfer_mxfp4")),
    ("gpt-oss-gfx950", "gfx950", GPT_OSS, {}, expect()),
    ("gpt-oss-unquant", "sm100", GPT_OSS, {"quantization": "unquant"}, expect(runner="flashinfer_mxfp4")),
    # generic: NVFP4 on SM12x, typed runners and their fusion, the draft model's quantization
    ("llama-nvfp4-sm120", "sm120", LLAMA, {"quantization": "modelopt_fp4"},
     expect(q="modelopt_fp4", runner="flashinfer_cutlass", draft="modelopt_fp4")),
    ("llama-nvfp4-sm121", "sm121", LLAMA, {"quantization": "modelopt_fp4"},
     expect(q="modelopt_fp4", runner="flashinfer_cutlass", draft="modelopt_fp4")),
    ("llama-trtllm-sm90", "sm90", LLAMA, {"moe_runner_backend": "flashinfer_trtllm"}, expect(**TRTLLM)),
    ("llama-routed-fp8", "sm100", LLAMA, {"moe_runner_backend": "flashinfer_trtllm_routed", "quantization": "fp8"},
     expect(q="fp8", runner="flashinfer_trtllm_routed", fusion=True, draft="fp8")),
    ("llama-triton-kernel", "sm90", LLAMA, {"moe_runner_backend": "triton_kernel"}, expect(runner="triton_kernel")),
    ("llama-unquant-draft-fp8", "sm90", LLAMA,
     {"quantization": "unquant", "speculative_draft_model_quantization": "fp8"}, expect(draft="fp8")),
    ("llama-rocm-awq", "gfx942", LLAMA, {"quantization": "awq"}, expect(q="awq", draft="awq")),
    # models outside the catalogue (a Llama or DeepSeek config under their architecture)
    ("muse-spark", "sm90", arch("MuseSparkForConditionalGeneration"), {}, expect(tf32=True)),
    ("muse-spark-no-tf32", "sm90", arch("MuseSparkForConditionalGeneration"), {"enable_tf32_matmul": False},
     expect(tf32=False)),
    ("interns2-mobius", "sm90", arch("InternS2MobiusForConditionalGeneration"), {}, expect(runner="triton_kernel")),
    ("gigachat35", "sm90", arch("GigaChat35ForCausalLM", DSV3), {}, expect(fusion=True)),
    ("beam-nvfp4", "sm100", arch("BeamForCausalLM", layer_types=["full_attention"] * 32, quantization_config=NVFP4), {},
     expect(**TRTLLM)),
    ("gemma4-nvfp4", "sm100", arch("Gemma4ForCausalLM", model_type="gemma4", quantization_config=NVFP4), {},
     expect(q="modelopt_fp4", **TRTLLM)),
    ("gemma4-nvfp4-unquant", "sm100", arch("Gemma4ForCausalLM", model_type="gemma4", quantization_config=NVFP4),
     {"quantization": "unquant"}, expect(q="modelopt_fp4", **TRTLLM)),
    ("dsv4-sm90", "sm90", DSV4, {}, expect(runner="flashinfer_mxfp4")),
    ("dsv4-sm100", "sm100", DSV4, {}, expect(runner="flashinfer_mxfp4")),
    ("dsv4-sm120", "sm120", DSV4, {}, expect(runner="flashinfer_mxfp4")),
    ("dsv4-sm80", "sm80", DSV4, {}, expect()),
    # on SM90 too SGLang picks flashinfer_trtllm_routed, whose kernel is SM100-only: the resolver skips it
    # (a divergence, tests/test_moe_kernels.py)
    ("dsv4-nvfp4-moe", "sm100", quant(DSV4, V4_NVFP4_MOE), {}, expect(runner="flashinfer_trtllm_routed", fusion=True)),
    ("dsv4-fp8-experts", "sm100", quant(DSV4, {**DSV4["quantization_config"], "routed_experts_quant_method": "fp8"}),
     {}, expect()),
]

#: (case id, platform, model config, typed args, a phrase of SGLang's refusal)
REFUSED = [
    ("dsv3-cutlass-fp8", "sm100", DSV3, {"moe_runner_backend": "flashinfer_cutlass"}, "FlashInfer Cutlass MOE"),
    ("llama-cutedsl-bf16", "sm100", LLAMA, {"moe_runner_backend": "flashinfer_cutedsl"}, "FlashInfer CuteDSL MOE"),
    ("llama-trtllm-awq", "sm100", LLAMA, {"moe_runner_backend": "flashinfer_trtllm", "quantization": "awq"},
     "FlashInfer TRTLLM MOE"),
    ("llama-routed-awq", "sm100", LLAMA, {"moe_runner_backend": "flashinfer_trtllm_routed", "quantization": "awq"},
     "FlashInfer TRTLLM routed MOE"),
    ("llama-cutedsl-mooncake", "sm100", LLAMA,
     {"moe_runner_backend": "flashinfer_cutedsl", "quantization": "modelopt_fp4", "moe_a2a_backend": "mooncake"},
     "flashinfer_cutedsl supports moe_a2a_backend"),
    ("qwen-moe-w4a16-triton", "sm100", quant(QWEN_MOE, W4A16), {"moe_runner_backend": "triton"},
     "W4A16_NVFP4 MoE layers require"),
    ("llama-spec-lora", "sm90", LLAMA,
     {"speculative_algorithm": "NGRAM", "speculative_moe_runner_backend": "lora_triton"},
     "the LoRA MoE runner serves adapter traffic"),
    ("glm-rocm-nvfp4", "gfx942", GLM, {"quantization": "modelopt_fp4"}, "not supported in ROCm"),
    ("dsv3-rocm-nvfp4-eagle", "gfx942", DSV3, {"quantization": "modelopt_fp4", "speculative_algorithm": "EAGLE"},
     "not supported in ROCm"),
    ("llama-rocm-w8a8-int8", "gfx942", LLAMA, {"quantization": "w8a8_int8"}, "not supported in ROCm"),
]


def values(platform, model, **args):
    return resolve(args, platform=platform, model=model).values


@pytest.mark.parametrize("case, platform, model, args, expected", CASES, ids=[c[0] for c in CASES])
def test_values_are_sglangs(case, platform, model, args, expected):
    got = values(platform, model, **args)
    assert {f: got[f] for f in FIELDS} == expected


@pytest.mark.parametrize("case, platform, model, args, phrase", REFUSED, ids=[c[0] for c in REFUSED])
def test_refused_as_sglang_refuses(case, platform, model, args, phrase):
    with pytest.raises(ConflictError) as info:
        resolve(args, platform=platform, model=model)
    assert phrase in " ".join(c.message for c in info.value.resolution.conflicts)


def test_the_table_is_sglangs_answer():
    """Ask SGLang 0.5.23 (the oracle) the whole table again: every value and every refusal."""
    from tools.sglang_diff import ask_oracle, sglang_value

    python = oracle_python()
    requests = [{"id": c[0], "platform": c[1], "model": c[2], "args": c[3]} for c in CASES + REFUSED]
    answers = {rid: a["sglang"] for rid, a in ask_oracle(requests, python, ORACLE).items()}
    defaults = {"moe_runner_backend": "auto", "disable_shared_experts_fusion": False}
    for case, _platform, _model, args, expected in CASES:
        got = {f: sglang_value(answers[case], {"args": args}, f, defaults) for f in FIELDS}
        assert answers[case]["status"] == "resolved" and got == expected, (case, got)
    for case, _platform, _model, _args, phrase in REFUSED:
        assert answers[case]["status"] == "error" and phrase in answers[case]["message"], (case, answers[case])


def test_a_typed_value_sglang_overrides_is_a_warning():
    res = resolve({"enable_tf32_matmul": False}, platform="sm100", model=GLM)
    assert res.values["enable_tf32_matmul"] is True
    assert any("adjust.override.glm4-moe.tf32" in w.message for w in res.warnings)
    # "unquant" is SGLang's spelling of "unset": no warning
    res = resolve({"quantization": "unquant"}, platform="sm100", model=quant(GLM, FP8))
    assert res.values["quantization"] is None and not res.warnings


@pytest.mark.parametrize("config, method, algo", [
    (NVFP4, "modelopt_fp4", "NVFP4"),
    (MODELOPT_FP8, "modelopt_fp8", "FP8"),
    (W4A16, "modelopt_mixed", "MIXED_PRECISION"),
    ({"quant_algo": "MIXED_PRECISION"}, "w4afp8", "MIXED_PRECISION"),
    ({"quant_algo": "NVFP4"}, "modelopt_fp4", "NVFP4"),  # no quant_method: still ModelOpt
    ({"quantization": {"quant_algo": "NVFP4"}, "quant_method": "modelopt"}, "modelopt_fp4", "NVFP4"),
    ({"quant_method": "modelopt", "quant_algo": "INT8_SQ"}, "modelopt", "INT8_SQ"),  # an algorithm SGLang does not name
    (FP8, "fp8", None),
])
def test_a_modelopt_checkpoint_is_named_by_its_algorithm(config, method, algo):
    facts = model_facts(quant(LLAMA, config))
    assert facts["model.quant_method"][0] == method
    assert facts.get("model.quant_algo", (None,))[0] == algo


def test_quantization_facts_of_other_shapes_stay_unknown():
    facts = model_facts(quant(LLAMA, {"quant_method": ["fp8"], "config_groups": [1], "quantized_layers": "x"}))
    assert "model.quant_method" not in facts and facts["model.int4_group32"][0] is False
    assert model_facts(quant(DSV3, KIMI_INT4))["model.int4_group32"][0] is True


def _cli(argv):
    out, err = io.StringIO(), io.StringIO()
    return main(argv, out, err), out.getvalue(), err.getvalue()


def test_the_command_line_takes_both_tf32_flags():
    code, out, _ = _cli(["--platform", "h100", "--model-path", "meta-llama/Llama-3.1-8B-Instruct",
                         "--no-enable-tf32-matmul", "--format", "args"])
    assert code == 0 and "--no-enable-tf32-matmul" in out.split()
    code, out, _ = _cli(["--platform", "h100", "--model-path", "meta-llama/Llama-3.1-8B-Instruct",
                         "--enable-tf32-matmul", "--format", "json"])
    assert code == 0 and json.loads(out)["values"]["enable_tf32_matmul"] is True


def test_the_launch_line_leaves_the_checkpoints_quantization_to_sglang():
    """Typed, a quantization SGLang takes from the checkpoint would also quantize the draft model."""
    code, out, _ = _cli(["--platform", "b200", "--model-path", "deepseek-ai/DeepSeek-V3", "--format", "args"])
    argv = out.split()
    assert code == 0 and "--quantization" not in argv
    assert argv[argv.index("--moe-runner-backend") + 1] == "flashinfer_trtllm"


def test_argparse_integration_adds_the_no_flag_and_writes_back():
    from resolver.integrations.argparse import add_resolver_arguments, resolve_namespace

    parser = argparse.ArgumentParser()
    parser.add_argument("--model-path")
    add_resolver_arguments(parser)
    ns = parser.parse_args(["--model-path", "zai-org/GLM-4.7", "--platform", "b200", "--no-enable-tf32-matmul"])
    assert ns.enable_tf32_matmul is False
    resolve_namespace(parser, ns)
    assert (ns.enable_tf32_matmul, ns.moe_runner_backend, ns.disable_shared_experts_fusion) == (
        True, "flashinfer_trtllm", True)
    ns = parser.parse_args(["--model-path", "deepseek-ai/DeepSeek-V3", "--platform", "b200"])
    res = resolve_namespace(parser, ns)
    assert res.values["quantization"] == "fp8" and ns.quantization is None  # SGLang takes it from the checkpoint


def test_the_rules_cite_sglang():
    with open(os.path.join(ROOT, "rules", "moe.yaml"), encoding="utf-8") as fh:
        text = fh.read()
    assert text.count("evidence: sglang 0.5.23 srt/") >= text.count("  - id: ")
