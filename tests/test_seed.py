"""The seed case of the contract, end to end, in text and JSON."""
import io
import json
import re

import pytest

from resolver import ConflictError, resolve
from resolver.cli import main

from .conftest import SEED_ARGS, SEED_ARGV

ARCH = "DeepseekV32ForCausalLM"


def _cli(argv):
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, out, err)
    return code, out.getvalue(), err.getvalue()


def _apply(args, fix):
    new = {k: v for k, v in args.items() if k not in fix["unset"]}
    new.update(fix["set"])
    return new


def test_seed_exits_1_and_reports_every_conflict_in_json():
    code, out, _ = _cli(SEED_ARGV + ["--format", "json"])
    assert code == 1
    doc = json.loads(out)
    assert doc["status"] == "conflict"
    by_rule = {c["rule"]["id"]: c for c in doc["conflicts"]}
    assert set(by_rule) == {"conflict.hisparse.decode.cuda-fp8", "conflict.dsa.tilelang-fp8.hisparse"}
    main_conflict = doc["conflicts"][0]
    assert main_conflict["rule"]["id"] == "conflict.hisparse.decode.cuda-fp8"
    # SGLang's allowed set less flashinfer_sparse_mla, which cannot run here (divergence D2)
    assert main_conflict["allowed"] == ["flashmla_kv"]
    assert main_conflict["message"].startswith(
        "HiSparse supports DSA decode backend(s) ['flashmla_kv'] on this platform with --kv-cache-dtype=fp8_e4m3, "
        "but got --dsa-decode-backend=tilelang.")
    assert "omit the option to let the resolver pick" in main_conflict["message"]
    assert main_conflict["rule"]["file"] == "rules/hisparse.yaml" and main_conflict["rule"]["line"] > 0
    assert {f["name"] for f in main_conflict["facts"]} >= {"dsa_decode_backend", "kv_cache_dtype", "enable_hisparse"}
    origins = {f["name"]: f["origin"] for f in main_conflict["facts"]}
    assert "--dsa-decode-backend tilelang" in origins["dsa_decode_backend"]


def test_seed_fixes_cover_omit_allowed_and_the_smallest_other_change():
    _, out, _ = _cli(SEED_ARGV + ["--format", "json"])
    fixes = json.loads(out)["conflicts"][0]["fixes"]
    first = fixes[0]
    assert first["unset"] == ["dsa_decode_backend"] and "flashmla_kv" in first["description"]
    # the allowed value flashmla_kv is what omitting picks: one configuration, listed once, as the omission
    assert not [f for f in fixes if f["set"].get("dsa_decode_backend") == "flashmla_kv"], fixes
    keep = [f for f in fixes if f["description"].startswith("Keep --dsa-decode-backend tilelang")]
    assert keep, fixes
    assert all("enable_hisparse" in f["unset"] or f["set"].get("enable_hisparse") is False for f in keep)
    sizes = [len(f["set"]) + len(f["unset"]) for f in fixes]
    assert sizes == sorted(sizes)


def test_every_seed_fix_resolves_when_applied():
    _, out, _ = _cli(SEED_ARGV + ["--format", "json"])
    for conflict in json.loads(out)["conflicts"]:
        assert conflict["fixes"]
        for fix in conflict["fixes"]:
            res = resolve(_apply(SEED_ARGS, fix), platform="h100", model_arch=ARCH)
            assert res.ok


def test_seed_text_output():
    code, out, _ = _cli(SEED_ARGV)
    assert code == 1
    assert "2 conflicts" in out  # the second folded under the first ("also: [2] ..."), still reported
    assert "HiSparse supports DSA decode backend(s) ['flashmla_kv']" in out
    assert "CUDA TileLang FP8 KV does not support HiSparse" in out
    assert "1. Omit --dsa-decode-backend" in out
    assert "remove --dsa-decode-backend" in out and "add --dsa-decode-backend flashmla_kv" not in out


def test_without_the_bad_flag_flashmla_kv_is_picked_and_explained():
    argv = [a for a in SEED_ARGV if a not in ("--dsa-decode-backend", "tilelang")]
    code, out, _ = _cli(argv + ["--explain", "--verbose"])
    assert code == 0
    assert re.search(r"\n  dsa_decode_backend += flashmla_kv ", out)
    assert "decided by: default rule default.dsa.backends.hisparse-fp8 (rules/dsa.yaml:" in out
    assert "├─ enable_hisparse    = true             user: set by the user (--enable-hisparse)" in out
    code, out, _ = _cli(argv + ["--format", "json", "--explain"])
    d = json.loads(out)["derivations"]["dsa_decode_backend"]
    assert d["value"] == "flashmla_kv" and d["source"] == "default"
    assert d["rule"]["id"] == "default.dsa.backends.hisparse-fp8" and d["rule"]["file"] == "rules/dsa.yaml"
    assert {f["name"] for f in d["facts"]} == {"enable_hisparse", "kv_cache_dtype", "model.dsa_resolved"}
    assert [c["outcome"] for c in d["candidates"]] == ["shadowed"] * len(d["candidates"]) and d["candidates"]


def test_api_raises_conflict_error_as_value_error():
    with pytest.raises(ValueError) as info:
        resolve(SEED_ARGS, platform="sm90", model={"architectures": [ARCH], "index_topk": 2048})
    err = info.value
    assert isinstance(err, ConflictError) and len(err.conflicts) == 2
    assert "conflict.hisparse.decode.cuda-fp8" in str(err)


def test_api_resolves_the_contract_example():
    res = resolve({"kv_cache_dtype": "fp8_e4m3", "enable_hisparse": True, "disable_radix_cache": True},
                  platform="sm90", model={"architectures": [ARCH], "index_topk": 2048})
    assert res.values["dsa_decode_backend"] == "flashmla_kv"
    assert "dsa_decode_backend = flashmla_kv" in res.explain()
    assert res.to_dict()["values"]["page_size"] == 64
