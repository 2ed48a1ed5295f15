"""Pasting a real SGLang launch: every flag, SGLang's abbreviations, models as operators name
them, nothing unchecked hidden, a launch line out, and the oracle's request format in a batch."""
import json
import shlex

import pytest

from resolver import resolve
from resolver.cli import main

from .test_cli import _cli

FIRST = ["--platform", "h200", "--model-path", "deepseek-ai/DeepSeek-V3.2", "--tp", "8", "--dp", "8",
         "--enable-dp-attention", "--moe-a2a-backend", "deepep", "--trust-remote-code"]


def test_the_pasted_launch_resolves_and_lists_what_is_not_checked():
    code, out, err = _cli(FIRST)
    assert code in (0, 1) and err == "", err
    assert "not checked (no rule reads them; passed through unchanged): --trust-remote-code" in out
    code, out, _ = _cli(FIRST + ["--format", "json"])
    doc = json.loads(out)
    assert doc["values"]["tp_size"] == 8
    assert doc["unchecked"] == ["trust_remote_code"]
    assert doc["values"]["moe_a2a_backend"] == "deepep" and doc["values"]["moe_runner_backend"] == "auto"
    # SGLang 0.5.23 reads --dp 8 --enable-dp-attention as attention-DP 8 with one replica
    assert doc["values"]["attn_dp_size"] == 8 and doc["values"]["dp_size"] == 1
    assert {"code": "deprecated", "message": "--enable-dp-attention is deprecated in SGLang 0.5.23; use "
            "--attn-dp-size <dp-size>"} in doc["warnings"]
    assert doc["model"]["architecture"] == "DeepseekV32ForCausalLM" and doc["model"]["index_topk"] == 2048


@pytest.mark.parametrize("typed, field, value", [
    (["--tp", "4"], "tp_size", 4), (["--tensor-parallel-size", "4"], "tp_size", 4), (["--ep", "8"], "ep_size", 8),
    (["--mem-frac", "0.8"], "mem_fraction_static", 0.8), (["--context-length", "128k"], "context_length", 128000),
    (["--no-enable-tf32-matmul"], "enable_tf32_matmul", False), (["--cuda-graph-bs-decode", "1", "2"],
                                                                  "cuda_graph_bs_decode", [1, 2]),
])
def test_sglang_spellings_and_types(typed, field, value):
    code, out, err = _cli(["--platform", "h100", "--model-arch", "LlamaForCausalLM", *typed, "--format", "json"])
    assert code == 0, err
    assert json.loads(out)["values"][field] == value


@pytest.mark.parametrize("argv, needle", [
    (["--quantization", "fp9"], "--quantization: invalid value 'fp9'. Did you mean 'fp8'?"),
    (["--tp", "eight"], "--tp-size: expected an integer"),
    (["--dp-siz", "2", "--tp-sizes", "2"], "unknown flag '--tp-sizes'. Did you mean --tp-size?"),
    (["--enable-dp", "x"], "ambiguous flag '--enable-dp'"),
])
def test_bad_sglang_flags_are_input_errors(argv, needle):
    code, _, err = _cli(["--platform", "h100", "--model-arch", "LlamaForCausalLM", *argv])
    assert code == 2 and needle in err, err


def test_models_by_catalogue_id_alias_and_representative_architecture():
    by_id = resolve({"model_path": "deepseek-ai/DeepSeek-V3"}, platform="b200")
    by_alias = resolve({"model_path": "deepseek-v3"}, platform="b200")
    by_arch = resolve({}, platform="b200", model_arch="DeepseekV3ForCausalLM")
    # DeepSeek-V3 is dense MLA, not DSA: no dsa backend, no 64-token DSA pages
    for res in (by_id, by_alias, by_arch):
        assert res.values["attention_backend"] != "dsa" and res.values["dsa_decode_backend"] is None
    # SGLang copies the model path as typed into these fields: they differ as the paths do
    path = {"model_path": None, "tokenizer_path": None, "served_model_name": None}
    assert {**by_id.values, **path} == {**by_alias.values, **path} == {**by_arch.values, **path}
    v32 = resolve({}, platform="b200", model_arch="DeepseekV32ForCausalLM")
    assert v32.values["attention_backend"] == "dsa"


def test_a_model_in_the_local_hugging_face_cache(tmp_path, monkeypatch):
    snapshot = tmp_path / "hub" / "models--acme--tiny-llama" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "num_key_value_heads": 8}))
    (tmp_path / "hub" / "models--acme--tiny-llama" / "refs").mkdir()
    (tmp_path / "hub" / "models--acme--tiny-llama" / "refs" / "main").write_text("abc123")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    code, out, err = _cli(["--platform", "h100", "--model-path", "acme/tiny-llama", "--format", "json",
                           "--explain"])
    assert code == 0, err
    origin = json.loads(out)["model"]["origins"]["model.architecture"]
    assert "Hugging Face cache" in origin and "abc123" in origin


def test_an_unknown_model_id_says_what_would_work(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    code, _, err = _cli(["--platform", "h100", "--model-path", "acme/does-not-exist"])
    assert code == 2
    assert "not a local path" in err and "Hugging Face cache" in err and "catalogue" in err


def test_an_unknown_architecture_is_a_warning_with_a_code():
    res = resolve({}, platform="h100", model_arch="NoSuchModelForCausalLM")
    assert [w.code for w in res.warnings] == ["unknown-architecture"]
    assert "NoSuchModelForCausalLM" in res.explain()


def test_values_carry_sglangs_own_defaults():
    res = resolve({}, platform="h100", model_arch="LlamaForCausalLM")
    assert res.values["prefill_kv_cache_dequant_dtype"] == "auto"
    assert res.values["disaggregation_decode_host_receive_threshold"] == 1.0


def test_format_args_is_a_launch_line_that_resolves_to_the_same_values():
    code, line, err = _cli(FIRST + ["--format", "args"])
    assert code == 0 and err == ""
    argv = shlex.split(line)
    assert argv[:3] == ["python", "-m", "sglang.launch_server"]
    code, out, _ = _cli(["--platform", "h200", *argv[3:], "--format", "json"])
    again = json.loads(out)
    _, out, _ = _cli(FIRST + ["--format", "json"])
    assert code == 0 and again["values"] == json.loads(out)["values"]


def test_format_args_on_a_conflict_prints_no_command():
    from .conftest import SEED_ARGV

    code, out, err = _cli(SEED_ARGV + ["--format", "args"])
    assert code == 1 and out == "" and "conflict" in err


def test_each_fix_carries_the_whole_command_line():
    from .conftest import SEED_ARGV

    _, out, _ = _cli(SEED_ARGV + ["--format", "json"])
    for conflict in json.loads(out)["conflicts"]:
        for fix in conflict["fixes"]:
            # the typed flags less what the fix removes, plus what it sets
            assert set(fix["argv"]) <= set(fix["full_argv"])
            assert "--disable-radix-cache" in fix["full_argv"]


def test_a_request_in_the_oracles_format_is_a_batch_request():
    request = {
        "id": "recipes-x", "platform": "sm90", "model_name": "llama31_8b", "recipe": "llama-eagle3",
        "model": {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_key_value_heads": 8},
        "args": {"tp_size": 2, "mem_fraction_static": 0.6, "speculative_algorithm": "EAGLE3",
                 "speculative_num_steps": 5, "speculative_eagle_topk": 8, "speculative_num_draft_tokens": 32},
        "draft_model_name": "eagle3_llama", "draft_model": {"architectures": ["LlamaForCausalLMEagle3"]},
        "model_files": {"hf_quant_config.json": {}},
        "platform_overrides": {"gpu_memory_gb": 141, "has_flashinfer": False, "nvidia_driver_version": "580"},
        "env": {"SGLANG_USE_AITER": "0"},
    }
    code, out, err = _cli(["--batch", "-"], stdin=json.dumps(request) + "\n")
    result = json.loads(out)
    assert result["status"] in ("resolved", "conflict"), result
    assert result["values"]["mem_fraction_static"] == 0.6
    # has_flashinfer is the installed fact the rules already read
    assert result["model"]["architecture"] == "LlamaForCausalLM" and code in (0, 1)


def test_main_is_importable_for_the_launch_pipeline():
    assert callable(main)
