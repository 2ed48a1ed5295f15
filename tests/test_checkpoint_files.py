"""Checkpoint files besides config.json that SGLang's resolution reads (issue 24): ModelOpt's
``hf_quant_config.json`` names a checkpoint's quantization when config.json has none, wherever the
checkpoint comes from: a local folder, the Hugging Face cache, the catalogue, or a batch or API
request's ``model_files`` (the oracle's request format)."""
from __future__ import annotations

import copy
import io
import json
import os
import sys

import pytest

from resolver import InputError, resolve
from resolver.cli import main
from resolver.model import model_facts

from .conftest import CATALOGUE

HF_QUANT = {"producer": {"name": "modelopt", "version": "0.23.0"},
            "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8", "group_size": 16}}
#: DeepSeek-R1's config.json without its quantization_config, as ModelOpt exports it
R1_CONFIG = {k: v for k, v in CATALOGUE["deepseek-ai/DeepSeek-R1"].items() if k != "quantization_config"}


def _quant_method(res) -> object:
    return res.request.model.get("model.quant_method", (None,))[0]


def _checkpoint(folder, config=R1_CONFIG, quant=HF_QUANT):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    if quant is not None:
        (folder / "hf_quant_config.json").write_text(json.dumps(quant))
    return folder


def test_the_hf_quant_config_beside_config_json_names_the_quantization():
    facts = model_facts(R1_CONFIG, files={"hf_quant_config.json": HF_QUANT})
    value, origin = facts["model.quant_method"]
    assert value == "modelopt_fp4" and "hf_quant_config.json" in str(origin.where)
    assert facts["model.quant_algo"][0] == "NVFP4"
    assert "model.quant_method" not in model_facts(R1_CONFIG)


def test_config_json_comes_first_then_its_compression_config_as_sglang_reads_them():
    with_config = {**R1_CONFIG, "quantization_config": {"quant_method": "fp8"}}
    assert model_facts(with_config, files={"hf_quant_config.json": HF_QUANT})["model.quant_method"][0] == "fp8"
    compressed = {**R1_CONFIG, "compression_config": {"quant_method": "compressed-tensors"}}
    facts = model_facts(compressed, files={"hf_quant_config.json": HF_QUANT})
    assert facts["model.quant_method"][0] == "compressed-tensors"


@pytest.mark.parametrize("how", ["model-path folder", "model-config folder", "model-config file"])
def test_a_local_checkpoint_folder_is_read_whole(tmp_path, how):
    folder = _checkpoint(tmp_path / "ckpt")
    flag, path = {"model-path folder": ("--model-path", folder), "model-config folder": ("--model-config", folder),
                  "model-config file": ("--model-config", folder / "config.json")}[how]
    out, err = io.StringIO(), io.StringIO()
    # on ROCm SGLang refuses a ModelOpt FP4 checkpoint: only the hf_quant_config.json says it is one
    code = main(["--platform", "mi300x", flag, str(path), "--tp", "8", "--format", "json"], out, err)
    doc = json.loads(out.getvalue())
    assert code == 1 and "modelopt_fp4 quantization is currently not supported in ROCm" in json.dumps(doc["conflicts"])
    os.unlink(folder / "hf_quant_config.json")
    out = io.StringIO()
    assert main(["--platform", "mi300x", flag, str(path), "--tp", "8", "--format", "json"], out, err) == 0


def test_the_hugging_face_cache_snapshot_is_read_whole(tmp_path, monkeypatch):
    snapshot = tmp_path / "hub" / "models--acme--R1-FP4" / "snapshots" / ("c" * 40)
    _checkpoint(snapshot)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    res = resolve({"tp_size": 8, "model_path": "acme/R1-FP4"}, platform="b200")
    assert _quant_method(res) == "modelopt_fp4"


def test_the_catalogue_carries_the_files_a_checkpoint_ships():
    res = resolve({"tp_size": 8, "model_path": "nvidia/DeepSeek-R1-FP4"}, platform="b200")
    assert _quant_method(res) == "modelopt_fp4"
    from resolver.model_source import find_model

    assert find_model("deepseek-r1-fp4").files["hf_quant_config.json"]["quantization"]["quant_algo"] == "NVFP4"


def test_a_batch_line_and_the_api_take_model_files():
    line = {"id": "fp4", "platform": "gfx942", "model": R1_CONFIG, "args": {"tp_size": 8},
            "model_files": {"hf_quant_config.json": HF_QUANT, "tokenizer.json": {"ignored": True}}}
    out, err = io.StringIO(), io.StringIO()
    saved, sys.stdin = sys.stdin, io.StringIO(json.dumps(line) + "\n")
    try:
        code = main(["--batch", "-"], out, err)
    finally:
        sys.stdin = saved
    result = json.loads(out.getvalue())
    assert code == 1 and result["status"] == "conflict", result
    res = resolve({"tp_size": 8}, platform="b200", model=copy.deepcopy(R1_CONFIG),
                  model_files={"hf_quant_config.json": HF_QUANT})
    assert _quant_method(res) == "modelopt_fp4"


@pytest.mark.parametrize("files", [[1], {"hf_quant_config.json": "NVFP4"}, {1: {}}])
def test_model_files_of_the_wrong_shape_are_bad_input(files):
    with pytest.raises(InputError, match="model_files must map checkpoint file names"):
        resolve({}, platform="b200", model=copy.deepcopy(R1_CONFIG), model_files=files)


def test_an_unreadable_hf_quant_config_is_bad_input(tmp_path):
    folder = _checkpoint(tmp_path / "ckpt", quant=None)
    (folder / "hf_quant_config.json").mkdir()
    out, err = io.StringIO(), io.StringIO()
    assert main(["--platform", "b200", "--model-path", str(folder)], out, err) == 2
    assert "hf_quant_config.json" in err.getvalue() and "Traceback" not in err.getvalue()
