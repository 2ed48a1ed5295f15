"""Fixes an operator would take (resolver/fixes.py; docs/explain.md, "Which fixes, in which order").

The table is the operator transcripts of issue 13: each case with the fixes the resolver lists, in
order, per conflict, and SGLang 0.5.23's answer to each fix applied (the oracle on CPU, docs/parity.md):
every one resolves there, with the values written beside it.  ``test_the_table_is_sglangs_answer`` asks
the oracle again when it is installed.
"""
from __future__ import annotations

from dataclasses import replace

import pytest

from resolver import fixes
from resolver.adapters.registry import registry
from resolver.api import get_engine, resolve_request
from resolver.resolution import run

from .conftest import CATALOGUE
from .oracle import ORACLE, oracle_python

DSV32, DSV3 = "deepseek-ai/DeepSeek-V3.2", "deepseek-ai/DeepSeek-V3"
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
FA3_TO_TRITON = (("attention_backend", "fa3", "triton"),)

# (platform, model, typed args, strict) -> per conflict: [(set, unset, also, SGLang's values under the fix)]
CASES = [
    # no ascend (Huawei NPU) nor intel_xpu; keeping deterministic inference comes before giving it up
    ("sm90", DSV32, {"enable_deterministic_inference": True}, False, {
        "conflict.deterministic.absorbed-mla": [
            ({"attention_backend": "fa3"}, (), (), {"attention_backend": "fa3"}),
            ({"attention_backend": "triton"}, (), (), {"attention_backend": "triton"}),
            ({}, ("enable_deterministic_inference",), (), {"attention_backend": "dsa"})],
        "conflict.deterministic.backend": [
            ({"attention_backend": "fa3"}, (), (), {"attention_backend": "fa3"}),
            ({"attention_backend": "triton"}, (), (), {"attention_backend": "triton"}),
            ({}, ("enable_deterministic_inference",), (), {"attention_backend": "dsa"})]}),
    # omitting --kv-cache-dtype picks bfloat16: "use bfloat16" is the same fix, not listed
    ("sm90", DSV32, {"kv_cache_dtype": "mxfp8"}, False, {
        "conflict.dsa.kv.dtype": [
            ({}, ("kv_cache_dtype",), (), {"kv_cache_dtype": "bfloat16"}),
            ({"kv_cache_dtype": "fp8_e4m3"}, (),
             (("dsa_prefill_backend", "flashmla_sparse", "flashmla_kv"), ("dsa_decode_backend", "fa3", "flashmla_kv")),
             {"kv_cache_dtype": "fp8_e4m3"})],
        "conflict.kv.mxfp8-blackwell": [
            ({}, ("kv_cache_dtype",), (), {"kv_cache_dtype": "bfloat16"}),
            ({"kv_cache_dtype": "fp8_e4m3"}, (),
             (("dsa_prefill_backend", "flashmla_sparse", "flashmla_kv"), ("dsa_decode_backend", "fa3", "flashmla_kv")),
             {"kv_cache_dtype": "fp8_e4m3"})]}),
    # fp8_e4m3 keeps FA3; fp8_e5m2 makes SGLang rewrite fa3 to triton, so it comes last and says so
    ("sm90", LLAMA, {"kv_cache_dtype": "mxfp8"}, False, {
        "conflict.kv.mxfp8-blackwell": [
            ({}, ("kv_cache_dtype",), (), {"attention_backend": "fa3"}),
            ({"kv_cache_dtype": "fp8_e4m3"}, (), (), {"attention_backend": "fa3"}),
            ({"kv_cache_dtype": "bf16"}, (), (), {"attention_backend": "fa3"}),
            ({"kv_cache_dtype": "fp8_e5m2"}, (), FA3_TO_TRITON, {"attention_backend": "triton"})]}),
    # SGLang's message recommends fp4_mx_block16, which conflicts on sm90 too: no fix sets it
    ("sm90", LLAMA, {"kv_cache_dtype": "nvfp4"}, False, {
        "conflict.kv.nvfp4-platform": [
            ({}, ("kv_cache_dtype",), (), {"attention_backend": "fa3"}),
            ({"kv_cache_dtype": "fp8_e4m3"}, (), (), {"attention_backend": "fa3"}),
            ({"kv_cache_dtype": "bf16"}, (), (), {"attention_backend": "fa3"}),
            ({"kv_cache_dtype": "fp8_e5m2"}, (), FA3_TO_TRITON, {"attention_backend": "triton"})]}),
    # --strict: flashinfer (then trtllm_mha, triton: SGLang's default order here) keeps page size 16
    ("sm100", DSV3, {"page_size": 16}, True, {
        "adjust.page.trtllm-mla": [
            ({"attention_backend": "flashinfer"}, (), (("cuda_graph_config_prefill_backend", "disabled", "breakable"),),
             {"attention_backend": "flashinfer", "page_size": 16}),
            ({"attention_backend": "trtllm_mha"}, (), (("cuda_graph_config_prefill_backend", "disabled", "breakable"),),
             {"attention_backend": "trtllm_mha", "page_size": 16}),
            ({"attention_backend": "triton"}, (), (("cuda_graph_config_prefill_backend", "disabled", "breakable"),),
             {"attention_backend": "triton", "page_size": 16}),
            ({}, ("page_size",), (), {"attention_backend": "trtllm_mla", "page_size": 64})]}),
    # ROCm: nothing CUDA-only; the decode-backend conflict follows from nvfp4 and is mended with it
    ("gfx942", LLAMA, {"kv_cache_dtype": "nvfp4"}, False, {
        "conflict.kv.kv4-cuda-only": [
            ({}, ("kv_cache_dtype",), (), {"kv_cache_dtype": "auto"}),
            ({"kv_cache_dtype": "fp8_e5m2"}, (), (), {"kv_cache_dtype": "fp8_e5m2"}),
            ({"kv_cache_dtype": "fp8_e4m3"}, (), (), {"kv_cache_dtype": "fp8_e4m3"}),
            ({"kv_cache_dtype": "bf16"}, (), (), {"kv_cache_dtype": "bf16"})],
        "conflict.trtllm-mha.decode-platform": []}),
]


def _resolve(platform, model, args, strict, **kw):
    return resolve_request(get_engine(), platform=platform, model=dict(CATALOGUE[model]), args=dict(args),
                           strict=strict, **kw)


def _listed(res):
    return {c.rule.id: [(f.set, f.unset, f.also) for f in c.fixes] for c in res.conflicts}


@pytest.mark.parametrize("platform, model, args, strict, expected", CASES)
def test_the_fixes_and_their_order(platform, model, args, strict, expected):
    res = _resolve(platform, model, args, strict)
    assert _listed(res) == {rule: [(s, u, a) for s, u, a, _ in fx] for rule, fx in expected.items()}


@pytest.mark.parametrize("platform, model, args, strict, expected", CASES)
def test_no_two_fixes_mean_the_same(platform, model, args, strict, expected):
    for conflict in _resolve(platform, model, args, strict).conflicts:
        seen = []
        for fix in conflict.fixes:
            typed = {k: v for k, v in args.items() if k not in fix.unset} | fix.set
            values = _resolve(platform, model, typed, False, fixes=False).values
            values["kv_cache_dtype"] = {"bf16": "bfloat16"}.get(values["kv_cache_dtype"], values["kv_cache_dtype"])
            assert values not in seen, (conflict.rule.id, fix)
            seen.append(values)


def test_a_fix_says_what_else_it_changes():
    (conflict,) = _resolve("sm90", LLAMA, {"kv_cache_dtype": "mxfp8"}, False).conflicts
    by_value = {f.set.get("kv_cache_dtype"): f for f in conflict.fixes}
    assert by_value["fp8_e5m2"].also == FA3_TO_TRITON and by_value["fp8_e4m3"].also == ()
    assert by_value["fp8_e5m2"].to_dict()["also"] == [{"option": "attention_backend", "from": "fa3", "to": "triton"}]
    # the values nvfp4 itself brought (its prefill backend, page size) are the conflict's, not listed
    (conflict,) = _resolve("sm90", LLAMA, {"kv_cache_dtype": "nvfp4"}, False).conflicts
    assert {n for f in conflict.fixes for n, _, _ in f.also} == {"attention_backend"}


def test_without_strict_the_page_size_is_adjusted_not_refused():
    res = _resolve("sm100", DSV3, {"page_size": 16}, False)
    assert not res.conflicts and res.values["page_size"] == 64 and res.values["attention_backend"] == "trtllm_mla"


def test_backends_of_another_device_family():
    kernels = registry()
    for value in ("ascend", "intel_xpu", "intel_amx", "ascend_tp", "ascend_fuseep", "kernel_ascend", "aiter"):
        assert fixes._of_another_family(kernels, value, "nvidia"), value
    for value in ("ascend", "intel_xpu", "ascend_tp", "fa3", "flashinfer", "trtllm_mha", "flashinfer_trtllm",
                  "experimental_sgl_trtllm", "flashmla_kv", "cutlass"):
        assert fixes._of_another_family(kernels, value, "amd"), value
    for value, vendor in (("fa3", "nvidia"), ("triton", "nvidia"), ("triton", "amd"), ("aiter", "amd"),
                          ("lora_triton", "amd"), ("wave", "amd"), ("torch_native", "amd"), ("deepep", "nvidia")):
        assert not fixes._of_another_family(kernels, value, vendor), (value, vendor)


def test_no_fix_offers_a_backend_of_another_family_even_where_no_rule_refuses_it(monkeypatch):
    """With no kernel registry (every verdict unknown) nothing refuses ascend on an H100: only the
    device-family check keeps it out of the fixes and the allowed line."""
    engine = get_engine()
    res = _resolve("sm90", DSV32, {"enable_deterministic_inference": True}, False)
    request = replace(res.request, kernels=None)
    outcome = run(engine.compiled, engine.durable, request)

    def offered():
        reports = fixes.attach_fixes(engine, request, outcome)
        return ({v for r in reports for f in r.fixes for v in f.set.values()}
                | {v for r in reports for v in r.allowed or ()})

    assert not offered() & {"ascend", "intel_xpu"}
    monkeypatch.setattr(fixes, "_foreign", lambda *a: False)
    assert offered() & {"ascend", "intel_xpu"}  # the check is what keeps them out


def test_the_search_never_sets_the_quantization(monkeypatch):
    """SGLang checks --quantization against the checkpoint (an fp8 DeepSeek-V3 refuses awq); no rule
    does, so the search may omit it but never sets another method."""
    monkeypatch.setattr(fixes, "_MAX_SEARCH_FIXES", 100)
    args = {"quantization": "modelopt_fp4", "moe_a2a_backend": "megamoe", "tp_size": 8, "ep_size": 8}

    def searched():
        res = _resolve("sm100", DSV3, args, False, fixes=False)
        engine = get_engine()
        trial = fixes._Trial(engine, res.request)
        (report,) = res.outcome.conflicts
        rule = engine.pack.rule(report.rule.id)
        return fixes._search(trial, engine.pack, rule, report, res.outcome)

    assert not [s for s, _ in searched() if "quantization" in s]
    _let_fixes_set(monkeypatch, "quantization")
    assert [s for s, _ in searched() if "quantization" in s]  # what the rule keeps out


def _let_fixes_set(monkeypatch, name: str) -> None:
    """The shipped pack with ``fixes_omit_only`` lifted from option ``name``, for this test only."""
    options = get_engine().pack.options
    monkeypatch.setitem(options, name, replace(options[name], fixes_omit_only=False))


def test_no_fix_proposes_what_sglang_checks_beyond_the_rules():
    # the MoE runner of a DeepSeek-V3 on ROCm that cannot run there: triton, not a LoRA runner
    # (SGLang: "--moe-runner-backend lora_cutedsl requires --enable-lora") nor a CUDA-only one
    res = _resolve("gfx942", DSV3, {"moe_runner_backend": "flashinfer_trtllm_routed", "quantization": "unquant"}, False)
    proposed = {f.set.get("moe_runner_backend") for c in res.conflicts for f in c.fixes} - {None}
    lora = set(get_engine().pack.options["moe_runner_backend"].fixes_skip)  # rules/moe.yaml
    assert proposed and not proposed & (lora | {"experimental_sgl_trtllm", "triton_kernel"})


def test_the_ranking_is_deterministic():
    for platform, model, args, strict, _ in CASES:
        first = [[f.to_dict() for f in c.fixes] for c in _resolve(platform, model, args, strict).conflicts]
        assert first == [[f.to_dict() for f in c.fixes] for c in _resolve(platform, model, args, strict).conflicts]


def test_the_table_is_sglangs_answer():
    """Apply every fix of the table and ask SGLang 0.5.23 (the oracle): it resolves, with the values written."""
    python = oracle_python()
    from tools.sglang_diff import ask_oracle

    requests, expected = [], {}
    for n, (platform, model, args, _, by_rule) in enumerate(CASES):
        for rule, listed in by_rule.items():
            for k, (set_, unset, _, values) in enumerate(listed):
                typed = {**{a: v for a, v in args.items() if a not in unset}, **set_}
                rid = f"c{n}-{rule}-{k}"
                requests.append({"id": rid, "platform": platform, "model": CATALOGUE[model], "args": typed})
                expected[rid] = (typed, values)
    answers = {rid: a["sglang"] for rid, a in ask_oracle(requests, python, ORACLE).items()}
    for rid, (typed, values) in expected.items():
        got = answers[rid]
        assert got["status"] == "resolved", (rid, got)
        seen = {k: got["values"].get(k, typed.get(k)) for k in values}
        assert seen == values, (rid, seen)


def test_no_fix_replaces_a_typed_backend_behind_the_users_back(monkeypatch):
    """Setting the prefill backend to the decode side's makes that pair the attention backend, over a typed
    --attention-backend: the fix would not keep the backend it seems to keep, and SGLang checks the typed one
    first (deterministic inference refuses a typed torch_native before the pair replaces it)."""
    args = {"attention_backend": "flex_attention", "kv_cache_dtype": "nvfp4", "tp_size": 1, "ep_size": 4}

    def prefill_fixes():
        res = _resolve("sm100", "Qwen/Qwen3-30B-A3B", args, False)
        return {f.set.get("prefill_attention_backend") for c in res.conflicts for f in c.fixes} - {None}

    assert prefill_fixes() == {"flashinfer"}
    monkeypatch.setattr(fixes, "_overrides", lambda *a: False)
    assert "trtllm_mha" in prefill_fixes()  # it resolves, replacing flex_attention: what the check keeps out


def test_the_search_never_switches_the_speculative_algorithm(monkeypatch):
    """DFLASH with pipeline parallelism: the fixes drop pp or speculation; they do not switch to DSPARK (or
    EAGLE), whose checks against the DFlash draft checkpoint SGLang makes and the rules do not encode."""
    from tools.sglang_diff import DRAFTS

    args = {"speculative_algorithm": "DFLASH", "pp_size": 2, "speculative_draft_model_path": "/draft",
            "disaggregation_mode": "prefill"}

    def listed():
        res = resolve_request(get_engine(), platform="sm90", model=dict(CATALOGUE["Qwen/Qwen3-8B"]), args=dict(args),
                              draft_model=DRAFTS["DFLASH"])
        return [(f.set, f.unset) for c in res.conflicts for f in c.fixes]

    assert listed() == [({}, ("pp_size",)), ({}, ("speculative_algorithm",))]
    _let_fixes_set(monkeypatch, "speculative_algorithm")
    assert ({"speculative_algorithm": "DSPARK"}, ()) in listed()  # what the rule keeps out
