"""The cross-node check (resolver/crossnode.py, ``resolve cross-node``, ``resolve_cross_node``).

The worked example of docs/cross-node.md (DeepSeek-V3, prefill on B200, decode on H200) was asked of
the oracle (SGLang 0.5.23 on CPU): the prefill's page size is 64 (trtllm_mla), the decode's 1 (fa3);
a typed --page-size 1 on the B200 prefill still becomes 64, a typed 64 on the H200 decode is kept.
``test_the_worked_example_is_sglangs_answer`` asks it again when the oracle is available.
"""
from __future__ import annotations

import copy
import io
import json
import os
import re
import tempfile

import pytest

from resolver import resolve_cross_node
from resolver.cli import main
from resolver.crossnode import CHECKS

from .conftest import CATALOGUE
from .oracle import ORACLE, oracle_python

DSV3 = "deepseek-ai/DeepSeek-V3"


def role(platform, mode=None, model="deepseek-v3", **args):
    if mode is not None:
        args["disaggregation_mode"] = mode
    return {"platform": platform, "model_path": model, "args": args}


def pd(prefill_platform="b200", decode_platform="h200", prefill=None, decode=None, model="deepseek-v3"):
    return {"prefill": role(prefill_platform, "prefill", model, **{"tp_size": 8, **(prefill or {})}),
            "decode": role(decode_platform, "decode", model, **{"tp_size": 8, **(decode or {})})}


def run(argv):
    out, err = io.StringIO(), io.StringIO()
    code = main(["cross-node", *argv], out, err)
    return code, out.getvalue(), err.getvalue()


def checks(result):
    return sorted(m.check for m in result.mismatches)


# -- agreeing ------------------------------------------------------------------------------------------------------

def test_an_agreeing_pd_pair_exits_0():
    flags = "--model-path deepseek-v3 --tp 8"
    code, out, err = run(["--role", f"prefill=--platform b200 {flags} --disaggregation-mode prefill",
                          "--role", f"decode=--platform b200 {flags} --disaggregation-mode decode"])
    assert code == 0, out + err
    assert "result: the roles agree" in out and not err


def test_mla_prefill_and_decode_may_use_different_tp_sizes():
    # SGLang 0.5.23 _resolve_rank_mapping: MLA KV is replicated across attention TP, any multiple pairs
    result = resolve_cross_node(pd("b200", "b200", decode={"tp_size": 16}))
    assert result.status == "agree", [m.message for m in result.mismatches]
    assert result.compared["decode"]["attn_tp_size"] == 16 and result.compared["prefill"]["attn_tp_size"] == 8


def test_the_transfer_backend_defaults_to_mooncake():
    result = resolve_cross_node(pd("b200", "b200", decode={"disaggregation_transfer_backend": "mooncake"}))
    assert result.status == "agree"
    assert result.compared["prefill"]["disaggregation_transfer_backend"] == "mooncake"


def test_typed_bfloat16_and_auto_on_a_bfloat16_checkpoint_agree():
    result = resolve_cross_node(pd("b200", "b200", prefill={"dtype": "bfloat16"}, model="llama-3.1-8b"))
    assert result.status == "agree"


# -- the worked example --------------------------------------------------------------------------------------------

def test_the_worked_example_page_size_mismatch_and_its_checked_fix():
    result = resolve_cross_node(pd())
    assert result.status == "mismatch" and checks(result) == ["page-size"]
    (m,) = result.mismatches
    by_role = {v.role: v for v in m.values}
    assert (by_role["prefill"].value, by_role["decode"].value) == (64, 1)
    assert by_role["prefill"].source == "adjustment" and by_role["prefill"].rule["id"] == "adjust.page.trtllm-mla"
    assert by_role["decode"].source == "fallback"
    assert [(c.role, c.set) for f in m.fixes for c in f.changes] == [("decode", {"page_size": 64})]
    # the reverse is refused, and why: the B200's trtllm_mla turns a typed 1 back into 64
    (dropped,) = m.not_offered
    assert dropped["description"].startswith("prefill: --page-size 1") and "adjust.page.trtllm-mla" in dropped["reason"]


GOLDEN = """\
PD layout, 2 roles:
  prefill  sm100 (--platform b200), prefill: resolved
  decode   sm90 (--platform h200), decode: resolved

mismatch [page-size]: the KV page size differs: prefill 64, decode 1
  prefill  64  (adjustment: 1 adjusted by adjust.page.trtllm-mla (rules/mla.yaml:N))
  decode   1  (fallback: SGLang's default, option.page_size (rules/options.yaml:N))
  why: python/sglang/srt/disaggregation/common/conn.py CommonKVManager.try_ensure_parallel_info: raises 'Page size \
mismatch ... Both servers must use the same --page-size value'
  fixes (each checked: the changed role resolves again and the mismatch is gone):
    1. decode: --page-size 64
  not offered: prefill: --page-size 1 (as decode): the mismatch remains: prefill then has page_size 64 (adjustment: 1 \
adjusted by adjust.page.trtllm-mla (rules/mla.yaml:N))

checked: pd-modes, kv-cache-dtype, page-size, transfer-backend, model-architecture, model-layers, kv-layout, \
model-dtype, attn-tp-ratio, attn-tp-equal, pp-size, decode-attn-cp, decode-dcp
result: 1 mismatch
"""


def test_the_worked_example_text_is_the_documented_one():
    code, out, err = run(["--role", ("prefill=--platform b200 --model-path deepseek-ai/DeepSeek-V3 --tp 8 "
                                    "--disaggregation-mode prefill"),
                          "--role", ("decode=--platform h200 --model-path deepseek-ai/DeepSeek-V3 --tp 8 "
                                    "--disaggregation-mode decode")])
    assert code == 1 and not err
    assert re.sub(r"\.yaml:\d+", ".yaml:N", out) == GOLDEN  # rule lines move as rule files grow
    with open(os.path.join(os.path.dirname(__file__), "..", "docs", "cross-node.md"), encoding="utf-8") as fh:
        shown = re.sub(r"\.yaml:\d+", ".yaml:N", fh.read())
    assert GOLDEN in shown, "docs/cross-node.md shows another output: paste the command's output"


def test_the_worked_example_fix_applied_agrees():
    result = resolve_cross_node(pd(decode={"page_size": 64}))
    assert result.status == "agree"


# -- mismatches, and every listed fix applied by hand ----------------------------------------------------------------

def apply(roles, fix):
    """A fix's changes applied to the roles as a user would: drop ``unset``, add ``set``, copy a model."""
    roles = copy.deepcopy(roles)
    for c in fix["changes"]:
        req = roles[c["role"]]
        req["args"] = {k: v for k, v in req["args"].items() if k not in c["unset"]}
        req["args"].update(c["set"])
        if c["model_from"]:
            src = roles[c["model_from"]]
            for key in ("model_path", "model", "model_arch"):
                req.pop(key, None)
                if key in src:
                    req[key] = src[key]
    return roles


MISMATCHED = {
    "page-size": pd(),
    "kv-cache-dtype": pd("b200", "b200", decode={"kv_cache_dtype": "fp8_e4m3"}),
    "transfer-backend": pd("b200", "b200", decode={"disaggregation_transfer_backend": "nixl"}),
    "model-layers": pd("b200", "b200", model="llama-3.1-8b") | {"decode": role("b200", "decode", "llama-3.1-70b")},
    "model-architecture": pd("b200", "b200") | {"decode": role("b200", "decode", "llama-3.1-8b")},
    "model-dtype": pd("b200", "b200", prefill={"dtype": "float16"}, model="llama-3.1-8b"),
    "attn-tp-ratio": pd("b200", "b200", prefill={"tp_size": 3}, decode={"tp_size": 2}, model="llama-3.1-8b"),
    "attn-tp-equal": pd("b200", "b200", prefill={"tp_size": 4, "kv_cache_dtype": "mxfp8", "page_size": 64},
                        decode={"tp_size": 2, "kv_cache_dtype": "mxfp8", "page_size": 64}, model="llama-3.1-8b"),
    "pp-size": pd("b200", "b200", decode={"pp_size": 2}, model="llama-3.1-8b"),
    "decode-attn-cp": pd("b200", "b200", decode={"attn_cp_size": 2}, model="llama-3.1-8b"),
    "pd-modes": {"prefill": role("b200", "prefill"), "other": role("b200")},
    "nodes-node-rank": {"n0": role("b200", None, tp_size=16, nnodes=2, node_rank=0),
                        "n1": role("b200", None, tp_size=16, nnodes=2, node_rank=0)},
    "nodes-parallel": {"n0": role("b200", None, tp_size=16, nnodes=2, node_rank=0),
                       "n1": role("b200", None, tp_size=8, nnodes=2, node_rank=1)},
    "nodes-dist-init-addr": {"n0": role("b200", None, tp_size=16, nnodes=2, node_rank=0, dist_init_addr="a:1"),
                             "n1": role("b200", None, tp_size=16, nnodes=2, node_rank=1, dist_init_addr="b:1")},
    "nodes-model": {"n0": role("b200", None, tp_size=16, nnodes=2, node_rank=0),
                    "n1": role("h200", None, tp_size=16, nnodes=2, node_rank=1)},
}


@pytest.mark.parametrize("check", sorted(MISMATCHED))
def test_each_mismatch_is_found_and_every_listed_fix_mends_it(check):
    roles = MISMATCHED[check]
    result = resolve_cross_node(roles).to_dict()
    assert result["status"] == "mismatch"
    found = [m for m in result["mismatches"] if m["check"] == check]
    assert found, [m["check"] for m in result["mismatches"]]
    for m in found:
        assert m["fixes"], m
        for fix in m["fixes"]:
            after = resolve_cross_node(apply(roles, fix))
            assert after.status != "conflict", (fix, after.conflicting)
            still = [x for x in after.mismatches if x.check == check and x.field == m["field"]
                     and {v.role for v in x.values} & {v["role"] for v in m["values"]}]
            assert not still, (fix, still[0].message)


def test_a_non_mla_pair_with_different_tp_sizes_is_a_notice_not_a_mismatch():
    result = resolve_cross_node(pd("b200", "b200", prefill={"tp_size": 4}, decode={"tp_size": 2}, model="llama-3.1-8b"))
    assert result.status == "agree"
    assert [n.code for n in result.notices] == ["pd-tp-performance"]


def test_only_the_architecture_is_reported_for_another_model():
    assert checks(resolve_cross_node(MISMATCHED["model-architecture"])) == ["model-architecture"]


def test_a_missing_node_is_a_notice():
    result = resolve_cross_node({"n0": role("b200", None, tp_size=16, nnodes=2, node_rank=0)})
    assert result.layout == "multi-node" and result.status == "agree"
    assert [n.code for n in result.notices] == ["nodes-missing"]


# -- a role that conflicts alone -----------------------------------------------------------------------------------

def test_a_role_that_conflicts_is_reported_per_role_and_nothing_is_compared():
    seed = {"kv_cache_dtype": "fp8_e4m3", "enable_hisparse": True, "disable_radix_cache": True,
            "dsa_decode_backend": "tilelang"}
    roles = {"prefill": role("b200", "prefill", None), "decode": role("h100", "decode", None, **seed)}
    for r in roles.values():
        del r["model_path"]
        r["model_arch"] = "DeepseekV32ForCausalLM"
    result = resolve_cross_node(roles)
    assert result.status == "conflict" and result.conflicting == ("decode",) and not result.mismatches
    data = result.to_dict()
    assert data["roles"]["decode"]["status"] == "conflict" and data["roles"]["decode"]["conflicts"][0]["fixes"]
    assert "conflicts" not in data["roles"]["prefill"]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(roles, fh)
    try:
        code, out, _err = run([fh.name])
    finally:
        os.unlink(fh.name)
    assert code == 1 and "role decode conflicts" in out and "conflict.hisparse.decode.cuda-fp8" in out


# -- bad input -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, phrase", [
    (["--role", "p=--platform b200 --bogus"], "role 'p': unknown flag '--bogus'"),
    (["--role", "p=--platform b999"], "role 'p': unknown platform 'b999'"),
    (["--role", "p=--platform b200 --format json"], "--format is an option of the whole command"),
    (["--role", "p=--platform 'b200"], "cannot split its flags"),
    (["--role", "--platform b200"], "--role expects NAME='FLAGS'"),
    (["--role", "p=--platform b200", "--role", "p=--platform h200"], "role names must be distinct"),
    (["x.json", "--role", "p=--platform b200"], "not both"),
    ([], "not neither"),
    (["/nonexistent/roles.json"], "cannot read /nonexistent/roles.json"),
    (["--no-such-option"], "unrecognized arguments"),
])
def test_bad_input_exits_2_without_a_traceback(argv, phrase):
    code, out, err = run(argv)
    assert code == 2 and phrase in err and "Traceback" not in err and not out, err


@pytest.mark.parametrize("content, phrase", [
    ("[1, 2]", "must hold a JSON object of role name -> request"),
    ("{", "is not valid JSON"),
    ('{"p": {"args": {}}}', "role 'p': the request has no 'platform'"),
    ('{"p": {"platform": "b200", "args": []}}', "role 'p': 'args' must be an object"),
    ('{"p": {"platform": "b200", "colour": 1}}', "role 'p': unknown request key(s) ['colour']"),
    ('{"p": {"platform": "b200", "args": {"kv_cache_dtype": "fp9"}}}', "role 'p':"),
    ('{"p": "--platform b200"}', "role 'p': a request must be a JSON object"),
])
def test_a_bad_roles_file_exits_2(content, phrase):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        fh.write(content)
    try:
        code, _out, err = run([fh.name])
    finally:
        os.unlink(fh.name)
    assert code == 2 and phrase in err and "Traceback" not in err, err


def test_the_api_refuses_a_non_mapping():
    from resolver import InputError

    with pytest.raises(InputError):
        resolve_cross_node([("p", role("b200"))])  # type: ignore[arg-type]


# -- JSON ----------------------------------------------------------------------------------------------------------

def test_the_json_shape():
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(pd(), fh)
    try:
        code, out, err = run([fh.name, "--format", "json"])
    finally:
        os.unlink(fh.name)
    assert code == 1 and not err
    data = json.loads(out)
    assert set(data) == {"status", "layout", "roles", "mismatches", "notices", "checked"}
    assert (data["status"], data["layout"]) == ("mismatch", "pd")
    assert set(data["roles"]["decode"]) == {"status", "platform", "platform_source", "disaggregation_mode", "warnings",
                                            "values"}
    assert data["roles"]["decode"]["values"]["page_size"] == 1
    (m,) = data["mismatches"]
    assert set(m) == {"check", "field", "what", "message", "evidence", "values", "fixes", "not_offered"}
    assert set(m["values"][0]) == {"role", "value", "source", "origin", "rule"}
    assert set(m["fixes"][0]) == {"description", "changes", "effects", "also_breaks"}
    assert m["fixes"][0]["changes"] == [{"role": "decode", "set": {"page_size": 64}, "unset": [], "model_from": None,
                                         "argv": ["--page-size", "64"]}]
    assert {c["check"] for c in data["checked"]} <= set(CHECKS)
    assert all(c["evidence"].startswith("python/sglang/srt/") for c in data["checked"])


def test_no_fixes_lists_the_mismatch_without_fixes():
    code, out, _ = run(["--no-fixes", "--format", "json", "--role", ("p=--platform b200 --model-path deepseek-v3 "
                        "--disaggregation-mode prefill"), "--role", ("d=--platform h200 --model-path deepseek-v3 "
                        "--disaggregation-mode decode")])
    data = json.loads(out)
    assert code == 1 and data["mismatches"][0]["fixes"] == [] and data["mismatches"][0]["not_offered"] == []


# -- against SGLang ------------------------------------------------------------------------------------------------

def test_the_worked_example_is_sglangs_answer():
    """SGLang 0.5.23 (the oracle) resolves the worked example's roles, and its fix, to the page sizes shown."""
    from tools.sglang_diff import ask_oracle, sglang_value

    python = oracle_python()
    model = CATALOGUE[DSV3]
    cases = {"prefill": ("sm100", 180, {"disaggregation_mode": "prefill"}, 64),
             "decode": ("sm90", 141, {"disaggregation_mode": "decode"}, 1),
             "prefill-typed-1": ("sm100", 180, {"disaggregation_mode": "prefill", "page_size": 1}, 64),
             "decode-fixed": ("sm90", 141, {"disaggregation_mode": "decode", "page_size": 64}, 64)}
    requests = [{"id": k, "platform": p, "model": model, "args": {"tp_size": 8, **a},
                 "platform_overrides": {"gpu_memory_gb": mem}} for k, (p, mem, a, _) in cases.items()]
    answers = {rid: a["sglang"] for rid, a in ask_oracle(requests, python, ORACLE).items()}
    for name, (_p, _m, args, page) in cases.items():
        assert answers[name]["status"] == "resolved", answers[name]
        assert sglang_value(answers[name], {"args": args}, "page_size", {}) == page, name
    roles = {"prefill": {"platform": "b200", "model": model, "args": {"tp_size": 8, "disaggregation_mode": "prefill"}},
             "decode": {"platform": "h200", "model": model, "args": {"tp_size": 8, "disaggregation_mode": "decode"}}}
    result = resolve_cross_node(roles)
    assert {v.role: v.value for v in result.mismatches[0].values} == {"prefill": 64, "decode": 1}
