"""Bad input never crashes, and what durable-rules cannot hold never reaches it (review findings)."""
import io
import json

import pytest

from resolver import ConflictError, InputError, ResolverError, resolve
from resolver.cli import main

from .conftest import SEED_ARGV

DSV32 = "DeepseekV32ForCausalLM"


def _cli(argv):
    out, err = io.StringIO(), io.StringIO()
    return main(argv, out, err), out.getvalue(), err.getvalue()


@pytest.mark.parametrize("value", ["0.00001", "1e16", "inf", "nan", "-inf"])
def test_numbers_the_engine_would_drop_are_input_errors(value):
    code, _, err = _cli(["--platform", "h100", "--model-arch", DSV32,
                         "--disaggregation-decode-host-receive-threshold", value])
    assert code == 2 and "--disaggregation-decode-host-receive-threshold" in err and "Traceback" not in err


def test_ordinary_decimals_resolve():
    # decode host receive exists on a PD decode server only (SGLang refuses it elsewhere: rules/pd.yaml)
    res = resolve({"disaggregation_mode": "decode", "disaggregation_decode_host_receive_threshold": 0.25},
                  platform="h100", model_arch=DSV32)
    assert res.values["disaggregation_decode_host_receive_threshold"] == 0.25


@pytest.mark.parametrize("config", [{"architectures": [DSV32], "index_topk": float("inf")},
                                    {"architectures": [DSV32], "index_topk": 1e300},
                                    {"architectures": [DSV32], "index_topk": 10**30}])
def test_model_numbers_are_checked(config):
    with pytest.raises(InputError, match="index_topk"):
        resolve({}, platform="h100", model=config)


@pytest.mark.parametrize("args", [{"page_size": float("inf")}, {"page_size": 10**400},
                                  {"disaggregation_decode_host_receive_threshold": 10**400}, {1: "x"}, "abc",
                                  ["page_size"]])
def test_api_raises_only_resolver_errors(args):
    with pytest.raises(ResolverError):
        resolve(args, platform="h100", model_arch=DSV32)


def test_explain_of_an_unknown_option():
    res = resolve({}, platform="h100", model_arch=DSV32)
    with pytest.raises(InputError):
        res.explain("bogus")
    code, _, err = _cli(["--platform", "h100", "--model-arch", DSV32, "--format", "json", "--explain", "bogus"])
    assert code == 2 and "no such option" in err


def test_wrong_case_architecture_says_did_you_mean():
    code, _, err = _cli(["--platform", "h100", "--model-arch", "deepseekv32forcausallm"])
    assert code == 2 and "Did you mean 'DeepseekV32ForCausalLM'" in err


def test_batch_survives_bad_types_and_bytes(tmp_path):
    f = tmp_path / "r.jsonl"
    good = json.dumps({"id": "ok", "platform": "h100", "model_arch": DSV32}).encode()
    f.write_bytes(b"\n".join([
        good,
        json.dumps({"id": "s", "platform": "h100", "args": "abc"}).encode(),
        json.dumps({"id": "m", "platform": "h100", "model": "/etc/passwd"}).encode(),
        json.dumps({"id": "big", "platform": "h100", "args": {"page_size": 1e400}}).encode().replace(b"Infinity",
                                                                                                     b"1e400"),
        b'{"id": "bytes", "platform": "h1\xff00"}',
        good,
    ]) + b"\n")
    code, out, err = _cli(["--batch", str(f)])
    results = [json.loads(line) for line in out.splitlines()]
    assert [r["status"] for r in results] == ["resolved", "error", "error", "error", "error", "resolved"]
    assert "'args' must be an object" in results[1]["error"] and "'model' must be an object" in results[2]["error"]
    assert code == 2 and "Traceback" not in err


def test_internal_errors_exit_3_with_their_traceback(monkeypatch):
    import resolver.cli as cli

    monkeypatch.setattr(cli, "_single", lambda *a: 1 / 0)
    code, _, err = _cli(["--platform", "h100"])
    assert code == 3 and "ZeroDivisionError" in err and "internal error" in err


def test_fixes_never_hide_a_flag_to_remove():
    """A fix that turns a typed flag off says so in `unset`, never as `set: false` with nothing to type."""
    _, out, _ = _cli(SEED_ARGV + ["--format", "json"])
    for conflict in json.loads(out)["conflicts"]:
        for fix in conflict["fixes"]:
            assert False not in fix["set"].values(), fix
    keep = [f for f in json.loads(out)["conflicts"][0]["fixes"] if f["description"].startswith("Keep")]
    assert keep and all(f["unset"] == ["enable_hisparse"] for f in keep)


def test_or_rules_report_every_option_they_read_and_get_fixes():
    with pytest.raises(ConflictError) as info:
        resolve({"dsa_prefill_backend": "triton", "dsa_decode_backend": "triton"}, platform="h100", model_arch=DSV32)
    (conflict,) = info.value.conflicts
    assert set(conflict.options) == {"dsa_prefill_backend", "dsa_decode_backend"}
    assert any(set(f.unset) == {"dsa_prefill_backend", "dsa_decode_backend"} for f in conflict.fixes)


def test_dsa_index_kpool_hyv4_and_deepseek_v4():
    kpool = {"architectures": [DSV32], "index_topk": 2048, "index_kpool": 2}
    assert resolve({}, platform="h100", model=kpool).values["page_size"] == 128
    with pytest.raises(ConflictError, match="index_kpool=2"):
        resolve({"dcp_size": 2}, platform="b200", model=kpool)
    hyv4 = {"architectures": ["HYV4ForCausalLM"], "index_topk": 2048, "learnable_sink": True}
    with pytest.raises(ConflictError, match="not supported for HYV4"):
        resolve({"enable_prefill_cp": True}, platform="b200", model=hyv4)
    assert resolve({}, platform="b200", model_arch="DeepseekV4ForCausalLM").values["kv_cache_dtype"] == "fp8_e4m3"
    with pytest.raises(ConflictError, match="not supported for DeepseekV4ForCausalLM"):
        resolve({"kv_cache_dtype": "fp8_e5m2"}, platform="b200", model_arch="DeepseekV4ForCausalLM")


def test_a_fix_whose_completion_adds_nothing_is_described_without_an_also():
    """A fix for one conflict, completed with the other conflicts' repairs, may need nothing more
    (its completion sets the same values): it crashed the fix search with an IndexError."""
    from resolver.api import get_engine, resolve_request

    from .conftest import CATALOGUE

    res = resolve_request(get_engine(), platform="sm90", model=dict(CATALOGUE["zai-org/GLM-5"]), args={
        "attention_backend": "ascend", "tp_size": 4, "dsa_decode_backend": "flashmla_kv",
        "speculative_algorithm": "NEXTN", "speculative_num_steps": 2, "speculative_eagle_topk": 2,
        "speculative_num_draft_tokens": 16, "dp_size": 4, "enable_dp_attention": True})
    assert res.conflicts and all(c.fixes for c in res.conflicts)
    assert not any(f.description.endswith("also ") for c in res.conflicts for f in c.fixes)
