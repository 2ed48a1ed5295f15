"""Models as operators name them: local paths, the Hugging Face cache, the shipped catalogue."""
from __future__ import annotations

import json
import os
import re

import pytest

from resolver.errors import InputError
from resolver.model import model_facts
from resolver.model_source import catalogue, find_model, hub_cache_dir, representative
from resolver.provenance import Origin

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMIT_A = "a" * 40
COMMIT_B = "b" * 40


@pytest.fixture(autouse=True)
def empty_cache(tmp_path, monkeypatch):
    """Every test starts with an empty cache of its own: the machine's real cache never leaks in."""
    cache = tmp_path / "empty-hub"
    cache.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.delenv("HF_HOME", raising=False)
    return cache


def cache_model(cache, repo_id: str, snapshots: dict[str, dict], ref: str | None = None):
    """Lay out a repo as huggingface_hub does: blobs/, snapshots/<commit>/config.json -> blob, refs/main."""
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    (repo / "blobs").mkdir(parents=True)
    for i, (commit, config) in enumerate(snapshots.items()):
        blob = repo / "blobs" / f"blob{i}"
        blob.write_text(json.dumps(config))
        snap = repo / "snapshots" / commit
        snap.mkdir(parents=True)
        (snap / "config.json").symlink_to(os.path.relpath(blob, snap))
    if ref is not None:
        (repo / "refs").mkdir()
        (repo / "refs" / "main").write_text(ref)
    return repo


# --- local paths -----------------------------------------------------------------------------

def test_a_directory_holding_config_json(tmp_path):
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))
    src = find_model(str(tmp_path / "ckpt"))
    assert (src.origin, src.where, src.canonical_id) == ("path", str(tmp_path / "ckpt" / "config.json"), None)
    assert src.config["architectures"] == ["LlamaForCausalLM"]


def test_a_config_json_path_of_any_name(tmp_path):
    (tmp_path / "my-model.json").write_text(json.dumps({"architectures": ["Qwen3ForCausalLM"]}))
    src = find_model(str(tmp_path / "my-model.json"))
    assert src.origin == "path" and src.config["architectures"] == ["Qwen3ForCausalLM"]


def test_a_missing_path_says_so_instead_of_searching_the_hub(tmp_path):
    with pytest.raises(InputError, match="no such file or directory"):
        find_model(str(tmp_path / "nowhere"))
    with pytest.raises(InputError, match="no such file or directory"):
        find_model("./nowhere/config.json")


@pytest.mark.parametrize("content, message", [("[1, 2]", "JSON object"), ("{nope", "not valid JSON")])
def test_a_bad_config_file_is_an_input_error(tmp_path, content, message):
    (tmp_path / "config.json").write_text(content)
    with pytest.raises(InputError, match=message):
        find_model(str(tmp_path))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_refused_unread(tmp_path):
    os.mkfifo(tmp_path / "config.json")
    with pytest.raises(InputError, match="not a regular file"):
        find_model(str(tmp_path))


def test_a_directory_without_config_json(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        find_model(str(tmp_path))


# --- the Hugging Face cache ------------------------------------------------------------------

def test_hub_cache_dir_follows_huggingface_hub():
    assert hub_cache_dir({"HF_HUB_CACHE": "/c/hub", "HF_HOME": "/h"}) == "/c/hub"
    assert hub_cache_dir({"HF_HOME": "/h"}) == os.path.join("/h", "hub")
    assert hub_cache_dir({"XDG_CACHE_HOME": "/x"}) == os.path.join("/x", "huggingface", "hub")
    assert hub_cache_dir({}) == os.path.expanduser(os.path.join("~", ".cache", "huggingface", "hub"))


def test_refs_main_names_the_snapshot(tmp_path, monkeypatch):
    cache = tmp_path / "hub"
    cache_model(cache, "acme/Tiny", {COMMIT_A: {"architectures": ["Old"]}, COMMIT_B: {"architectures": ["Main"]}},
                ref=COMMIT_B + "\n")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    src = find_model("acme/Tiny")
    assert (src.origin, src.canonical_id, src.config["architectures"]) == ("hf-cache", "acme/Tiny", ["Main"])
    assert src.where == str(cache / "models--acme--Tiny" / "snapshots" / COMMIT_B / "config.json")


@pytest.mark.parametrize("ref", [None, "not-a-commit", "c" * 40])  # absent, garbage, names a missing snapshot
def test_without_a_usable_ref_the_newest_snapshot_with_a_config_is_read(tmp_path, monkeypatch, ref):
    cache = tmp_path / "home" / "hub"
    repo = cache_model(cache, "acme/Tiny", {COMMIT_A: {"architectures": ["Newest"]},
                                            COMMIT_B: {"architectures": ["Older"]}}, ref=ref)
    (repo / "snapshots" / ("d" * 40)).mkdir()  # a snapshot without config.json is skipped
    os.utime(repo / "blobs" / "blob0", (2_000_000_000, 2_000_000_000))
    os.utime(repo / "blobs" / "blob1", (1_000_000_000, 1_000_000_000))
    monkeypatch.delenv("HF_HUB_CACHE")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))  # the cache is $HF_HOME/hub
    assert find_model("acme/Tiny").config["architectures"] == ["Newest"]


def test_a_cached_checkpoint_beats_the_catalogue_and_aliases_reach_it(empty_cache):
    cache_model(empty_cache, "deepseek-ai/DeepSeek-V3", {COMMIT_A: {"architectures": ["DeepseekV3ForCausalLM"],
                                                                    "quantization_config": {"quant_method": "awq"}}},
                ref=COMMIT_A)
    for name in ("deepseek-ai/DeepSeek-V3", "deepseek-v3", "DEEPSEEK-AI/deepseek-v3"):
        src = find_model(name)
        assert src.origin == "hf-cache" and src.config["quantization_config"] == {"quant_method": "awq"}, name


def test_a_repo_without_any_snapshot_config_is_not_found(empty_cache):
    (empty_cache / "models--acme--Empty" / "snapshots" / COMMIT_A).mkdir(parents=True)
    with pytest.raises(InputError, match="is not in the Hugging Face cache"):
        find_model("acme/Empty")


# --- the catalogue ---------------------------------------------------------------------------

REQUIRED = ["deepseek-ai/DeepSeek-V3", "deepseek-ai/DeepSeek-R1", "deepseek-ai/DeepSeek-V3.1",
            "deepseek-ai/DeepSeek-V3.2", "moonshotai/Kimi-K2-Instruct", "zai-org/GLM-4.5", "zai-org/GLM-4.6",
            "zai-org/GLM-5", "Qwen/Qwen3-8B", "Qwen/Qwen3-32B", "Qwen/Qwen3-30B-A3B", "Qwen/Qwen3-235B-A22B",
            "Qwen/Qwen3-Next-80B-A3B-Instruct",
            "openai/gpt-oss-20b", "openai/gpt-oss-120b", "meta-llama/Llama-3.1-8B-Instruct",
            "meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Llama-3.3-70B-Instruct",
            "meta-llama/Llama-4-Scout-17B-16E-Instruct", "meta-llama/Llama-4-Maverick-17B-128E-Instruct",
            "mistralai/Mistral-7B-Instruct-v0.3", "mistralai/Mixtral-8x7B-Instruct-v0.1", "google/gemma-3-27b-it",
            "MiniMaxAI/MiniMax-M2", "Qwen/Qwen3-VL-8B-Instruct"]


def test_the_catalogue_holds_the_popular_models():
    ids = [e.id for e in catalogue()]
    assert len(ids) >= 25 and not set(REQUIRED) - set(ids)
    names = [n.lower() for e in catalogue() for n in (e.id, *e.aliases)]
    assert len(names) == len(set(names)), "an id or alias names two models"


@pytest.mark.parametrize("entry", catalogue(), ids=lambda e: e.id)
def test_every_entry_reads_as_model_facts_and_cites_its_config_json(entry):
    assert entry.source == f"https://huggingface.co/{entry.id}/blob/main/config.json"
    assert all(a == a.lower() for a in entry.aliases)
    facts = model_facts(dict(entry.config))
    assert facts["model.architecture"] == (entry.architecture,
                                           Origin("model", where="config.json", field="architectures[0]"))
    assert re.fullmatch(r"[A-Z]\w+", entry.architecture)


@pytest.mark.parametrize("name, canonical", [("deepseek-ai/DeepSeek-V3.2", "deepseek-ai/DeepSeek-V3.2"),
                                             ("deepseek-v3.2", "deepseek-ai/DeepSeek-V3.2"),
                                             ("GPT-OSS-120B", "openai/gpt-oss-120b"),
                                             ("qwen/qwen3-8b", "Qwen/Qwen3-8B"),
                                             ("kimi-k2", "moonshotai/Kimi-K2-Instruct")])
def test_catalogue_ids_and_aliases_any_case(name, canonical):
    src = find_model(name)
    assert (src.origin, src.canonical_id) == ("catalogue", canonical)
    assert src.where == f"https://huggingface.co/{canonical}/blob/main/config.json"


def test_catalogue_configs_are_copies():
    find_model("deepseek-v3.2").config["index_topk"] = 1
    assert find_model("deepseek-v3.2").config["index_topk"] == 2048
    catalogue()[0].config["architectures"].append("X")
    assert catalogue()[0].config["architectures"] == [catalogue()[0].architecture]


def test_catalogue_values_that_decide_attention():
    v3, v32, glm5 = (find_model(n).config for n in ("deepseek-v3", "deepseek-v3.2", "glm-5"))
    assert "index_topk" not in v3 and v3["quantization_config"]["weight_block_size"] == [128, 128]
    assert (v32["index_topk"], v32["index_n_heads"], v32["index_head_dim"]) == (2048, 64, 128)
    assert glm5["architectures"] == ["GlmMoeDsaForCausalLM"] and glm5["index_topk"] == 2048
    oss = find_model("gpt-oss-120b").config
    assert oss["quantization_config"]["quant_method"] == "mxfp4" and oss["sliding_window"] == 128
    assert len(oss["layer_types"]) == oss["num_hidden_layers"] == 36
    scout = find_model("llama-4-scout").config
    assert model_facts(scout)["model.num_attention_heads"] == (40, Origin("model", where="config.json",
                                                                          field="text_config.num_attention_heads"))


# --- representatives for --model-arch --------------------------------------------------------

def test_representatives():
    v3 = representative("DeepseekV3ForCausalLM")
    assert v3 is not None and v3.canonical_id == "deepseek-ai/DeepSeek-V3"
    assert "model.index_topk" not in model_facts(v3.config)  # a dense-MLA DeepSeek V3, not a DSA model
    assert representative("DeepseekV32ForCausalLM").config["index_topk"] == 2048
    assert representative("GptOssForCausalLM").canonical_id == "openai/gpt-oss-120b"
    assert representative("LlamaForCausalLM").canonical_id == "meta-llama/Llama-3.1-8B-Instruct"
    assert representative("NoSuchForCausalLM") is None
    assert representative("llamaforcausallm") is None  # architecture names are case-sensitive, as in SGLang


def test_every_catalogue_architecture_has_a_representative_of_that_architecture():
    for arch in {e.architecture for e in catalogue()}:
        rep = representative(arch)
        assert rep is not None, arch
        assert rep.config["architectures"][0] == arch


def test_rule_architectures_with_a_real_catalogue_model_have_a_representative():
    named = set()
    for name in os.listdir(os.path.join(ROOT, "rules")):
        with open(os.path.join(ROOT, "rules", name), encoding="utf-8") as fh:
            named |= set(re.findall(r'"([A-Z][A-Za-z0-9_]*(?:ForCausalLM|ForConditionalGeneration)[A-Za-z0-9_]*)"',
                                    fh.read()))
    have = {e.architecture for e in catalogue()}
    assert {"DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM", "GlmMoeDsaForCausalLM"} <= named & have
    assert all(representative(a) is not None for a in named & have)


# --- not found -------------------------------------------------------------------------------

def test_an_unknown_id_says_how_to_make_it_work(empty_cache):
    with pytest.raises(InputError) as err:
        find_model("deepseek-ai/DeepSeek-V33", what="model_path")
    text = str(err.value)
    assert text.startswith("model_path: 'deepseek-ai/DeepSeek-V33' is not a local path")
    assert str(empty_cache) in text and "directory holding config.json" in text
    assert "huggingface-cli download deepseek-ai/DeepSeek-V33" in text and "$HF_HOME/hub" in text
    assert "Did you mean 'deepseek-ai/DeepSeek-V3'" in text


def test_a_misspelled_alias_gets_a_did_you_mean():
    with pytest.raises(InputError, match="Did you mean 'gpt-oss-120b'"):
        find_model("gpt-oss-12b")


@pytest.mark.parametrize("name", ["", "   ", None, 3])
def test_no_name_is_an_input_error(name):
    with pytest.raises(InputError):
        find_model(name)
