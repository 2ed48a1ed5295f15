"""The MoE kernel adapters (resolver/adapters/moe.py) and what follows from them (rules/moe_kernels.yaml).

SGLang 0.5.23 never asks whether a MoE kernel exists for the GPU: every conflict here is a divergence
(docs/divergences.md, section K).  ``SGLANG`` records SGLang's own answer for each request (the oracle,
docs/parity.md: ``{"platform": P, "model": M, "args": A}`` given to ``oracle/ask.py``): it resolves the
launches the resolver refuses, picks the defaults the resolver skips, and accepts the fixes the resolver
lists; ``test_sglang_answers_as_recorded`` asks the oracle again when it is installed.
"""
import json
import re

import pytest

from resolver import ConflictError, resolve
from resolver.adapters import registry
from resolver.adapters.base import AdapterError, Claim, KernelAdapter, validate
from resolver.adapters.moe import ADAPTERS

from .oracle import ORACLE, oracle_python
from .test_moe_overrides import (
    DSV3,
    DSV4,
    GPT_OSS,
    NVFP4,
    QWEN_MOE,
    V4_NVFP4_MOE,
    quant,
    unquantised,
)


def _said(conflict) -> str:
    """A conflict's headline with the kernel evidence it keeps out of it (ConflictReport.details)."""
    return " ".join([conflict.message, *(text for _, text in conflict.details)])


DSV4_NVFP4 = quant(DSV4, V4_NVFP4_MOE)
QWEN_NVFP4 = quant(QWEN_MOE, NVFP4)
QWEN_BF16 = unquantised(QWEN_MOE)
PPLX = {"moe_a2a_backend": "pplx", "attn_dp_size": 8, "tp_size": 8, "chunked_prefill_size": 128}
CUTEDSL = {"moe_runner_backend": "flashinfer_cutedsl", "quantization": "modelopt_fp4"}

#: (runner, platform, weights as SGLang ends with them (None: unquantized), the adapters' verdict)
CLAIMS = [
    ("deep_gemm", "sm90", "fp8", "supported"),
    ("deep_gemm", "sm100", "fp8", "supported"),
    ("deep_gemm", "sm80", "fp8", "unsupported"),
    ("deep_gemm", "sm89", None, "unsupported"),
    ("deep_gemm", "gfx942", "fp8", "unsupported"),
    ("deep_gemm", "sm120", "fp8", "unknown"),  # SGLang probes an SM120 DeepGEMM build (MK2)
    ("deep_gemm", "sm103", "fp8", "unknown"),
    ("flashinfer_trtllm", "sm100", "fp8", "supported"),
    ("flashinfer_trtllm", "sm103", None, "supported"),
    ("flashinfer_trtllm", "sm90", "fp8", "unsupported"),
    ("flashinfer_trtllm", "sm110", "modelopt_fp4", "unsupported"),
    ("flashinfer_trtllm_routed", "sm120", "modelopt_fp4", "unsupported"),
    ("flashinfer_trtllm_routed", "gfx950", None, "unsupported"),
    ("flashinfer_cutlass", "sm120", "modelopt_fp4", "supported"),
    ("flashinfer_cutlass", "sm110", "modelopt_fp4", "supported"),
    ("flashinfer_cutlass", "sm90", None, "supported"),
    ("flashinfer_cutlass", "sm90", "modelopt_fp4", "unknown"),  # an SM90 module with FP4 mixed GEMMs only
    ("flashinfer_cutlass", "sm80", None, "unknown"),  # no SM80 module, but no check either
    ("flashinfer_cutlass", "gfx942", None, "unsupported"),
    ("flashinfer_mxfp4", "sm90", "mxfp4", "supported"),
    ("flashinfer_mxfp4", "sm121", "mxfp4", "supported"),
    ("flashinfer_mxfp4", "sm86", "mxfp4", "unsupported"),
    ("flashinfer_mxfp4", "sm110", "mxfp4", "unsupported"),
    ("flashinfer_mxfp4", "sm80", "fp8", "unknown"),  # a claim about MXFP4 weights says nothing of FP8 ones
    ("flashinfer_cutedsl", "sm100", "modelopt_fp4", "supported"),
    ("flashinfer_cutedsl", "sm90", "modelopt_fp4", "unsupported"),
    ("flashinfer_cutedsl", "sm110", "modelopt_fp4", "unsupported"),
    ("flashinfer_cutedsl", "sm120", "modelopt_fp4", "unknown"),
    ("cutlass", "sm90", "fp8", "supported"),
    ("cutlass", "sm86", "fp8", "unsupported"),
    ("cutlass", "sm120", "mxfp8", "unsupported"),
    ("cutlass", "sm100", "mxfp8", "supported"),
    ("cutlass", "sm80", "modelopt_fp4", "unknown"),
    ("marlin", "sm80", "gptq", "supported"),
    ("marlin", "sm89", "mxfp4", "unsupported"),
    ("marlin", "sm90", "mxfp4", "supported"),
    ("marlin", "sm100", "modelopt_mixed", "unknown"),
    ("triton", "sm80", None, "supported"),
    ("triton", "gfx950", None, "supported"),
    ("triton", "sm80", "fp8", "unknown"),
    ("triton_kernel", "sm90", "mxfp4", "supported"),
    ("triton_kernel", "sm80", "mxfp4", "unknown"),
    ("aiter", "gfx942", "fp8", "supported"),
    ("aiter", "sm90", None, "unsupported"),
    ("hpc_ops", "sm90", "fp8", "supported"),
    ("hpc_ops", "sm100", "fp8", "unsupported"),
    ("intel_xpu", "sm90", None, "unsupported"),
    ("humming", "sm90", None, "unknown"),
    ("auto", "sm80", None, "unknown"),
]


@pytest.mark.parametrize("runner, platform, weights, status", CLAIMS,
                         ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in CLAIMS])
def test_claims(runner, platform, weights, status):
    verdict = registry().verdict("moe", runner, platform, quantization=weights)
    assert verdict.status == status, verdict.why
    if status != "unknown":
        assert re.search(r"MK\d+", verdict.why) and "[adapter moe-" in verdict.why


#: (case, platform, model, args, SGLang 0.5.23's answer: ("resolved", its MoE runner) or ("error", a phrase))
SGLANG = [
    ("trtllm-sm90", "sm90", DSV3, {"moe_runner_backend": "flashinfer_trtllm"}, ("resolved", "flashinfer_trtllm")),
    ("trtllm-routed-sm120", "sm120", DSV3, {"moe_runner_backend": "flashinfer_trtllm_routed"},
     ("resolved", "flashinfer_trtllm_routed")),
    ("deep-gemm-sm80", "sm80", DSV3, {"moe_runner_backend": "deep_gemm"}, ("resolved", "deep_gemm")),
    ("deep-gemm-gfx942", "gfx942", DSV3, {"moe_runner_backend": "deep_gemm"}, ("resolved", "deep_gemm")),
    ("cutlass-fp8-sm86", "sm86", DSV3, {"moe_runner_backend": "cutlass"}, ("resolved", "cutlass")),
    ("mxfp4-sm80", "sm80", GPT_OSS, {"moe_runner_backend": "flashinfer_mxfp4"}, ("resolved", "flashinfer_mxfp4")),
    ("marlin-mxfp4-sm89", "sm89", GPT_OSS, {"moe_runner_backend": "marlin"}, ("resolved", "marlin")),
    ("cutedsl-sm90", "sm90", QWEN_NVFP4, CUTEDSL, ("resolved", "flashinfer_cutedsl")),
    ("fi-cutlass-gfx950", "gfx950", QWEN_BF16, {"moe_runner_backend": "flashinfer_cutlass"},
     ("resolved", "flashinfer_cutlass")),
    ("aiter-sm90", "sm90", QWEN_MOE, {"moe_runner_backend": "aiter"}, ("resolved", "aiter")),
    ("hpc-ops-sm100", "sm100", QWEN_MOE, {"moe_runner_backend": "hpc_ops"}, ("resolved", "hpc_ops")),
    ("intel-xpu-sm90", "sm90", QWEN_MOE, {"moe_runner_backend": "intel_xpu"}, ("resolved", "intel_xpu")),
    ("dsv4-nvfp4-sm90", "sm90", DSV4_NVFP4, {}, ("resolved", "flashinfer_trtllm_routed")),
    ("dsv4-nvfp4-sm100", "sm100", DSV4_NVFP4, {}, ("resolved", "flashinfer_trtllm_routed")),
    ("pplx-sm80", "sm80", DSV3, PPLX, ("resolved", "deep_gemm")),
    ("pplx-sm90", "sm90", DSV3, PPLX, ("resolved", "deep_gemm")),
    # unknown cells: resolved as SGLang resolves them
    ("cutedsl-sm120", "sm120", QWEN_NVFP4, CUTEDSL, ("resolved", "flashinfer_cutedsl")),
    ("deep-gemm-sm120", "sm120", DSV3, {"moe_runner_backend": "deep_gemm"}, ("resolved", "deep_gemm")),
    ("fi-cutlass-sm80", "sm80", QWEN_BF16, {"moe_runner_backend": "flashinfer_cutlass"},
     ("resolved", "flashinfer_cutlass")),
    # the fixes the resolver lists (let SGLang pick; no all-to-all backend)
    ("trtllm-sm90-fix", "sm90", DSV3, {}, ("resolved", "auto")),
    ("pplx-sm80-fix", "sm80", DSV3, {k: v for k, v in PPLX.items() if k != "moe_a2a_backend"}, ("resolved", "auto")),
]
_CASE = {c[0]: c for c in SGLANG}

#: one refused launch per kernel family: (case in SGLANG, the evidence id its conflict cites)
REFUSED = [
    ("trtllm-sm90", "MK3"), ("trtllm-routed-sm120", "MK3"), ("deep-gemm-sm80", "MK1"), ("deep-gemm-gfx942", "MK1"),
    ("cutlass-fp8-sm86", "MK7"), ("mxfp4-sm80", "MK5"), ("marlin-mxfp4-sm89", "MK8"), ("cutedsl-sm90", "MK6"),
    ("fi-cutlass-gfx950", "MK4"), ("aiter-sm90", "MK10"), ("hpc-ops-sm100", "MK11"), ("intel-xpu-sm90", "MK12"),
]


def _conflicts(case):
    _, platform, model, args, _ = _CASE[case]
    with pytest.raises(ConflictError) as info:
        resolve(args, platform=platform, model=model)
    return {c.rule.id: c for c in info.value.conflicts}


@pytest.mark.parametrize("case, evidence", REFUSED, ids=[c[0] for c in REFUSED])
def test_a_runner_that_cannot_run_is_refused_and_its_fix_resolves(case, evidence):
    _, platform, model, args, sglang = _CASE[case]
    assert sglang[0] == "resolved"  # SGLang accepts it: a divergence
    conflicts = _conflicts(case)
    assert set(conflicts) == {"conflict.kernel.moe.cannot-run"}
    c = conflicts["conflict.kernel.moe.cannot-run"]
    assert _said(c).startswith(f"The {args['moe_runner_backend']} MoE kernel cannot run on {platform}")
    assert evidence in _said(c) and "[adapter moe-" in _said(c)
    for fix in c.fixes:
        fixed = {k: v for k, v in args.items() if k not in fix.unset}
        fixed.update(fix.set)
        res = resolve(fixed, platform=platform, model=model)
        assert res.ok and res.kernels.get("moe_runner_backend", {}).get("status") != "unsupported"
    assert c.fixes[0].unset == ("moe_runner_backend",)  # first: let SGLang pick (auto)


@pytest.mark.parametrize("case", ["cutedsl-sm120", "deep-gemm-sm120", "fi-cutlass-sm80"])
def test_unknown_is_not_refused(case):
    _, platform, model, args, (status, runner) = _CASE[case]
    res = resolve(args, platform=platform, model=model)
    assert status == "resolved" and res.values["moe_runner_backend"] == runner
    assert res.kernels["moe_runner_backend"]["status"] == "unknown"
    assert any(w.code == "kernel-unknown" and "--moe-runner-backend" in w.message for w in res.warnings)


def test_auto_is_no_kernel_and_gets_no_warning():
    res = resolve({}, platform="sm80", model=DSV3)
    assert res.values["moe_runner_backend"] == "auto"
    assert "moe_runner_backend" not in res.kernels
    assert not any("--moe-runner-backend" in w.message for w in res.warnings)


def test_a_default_whose_kernel_cannot_run_is_skipped_for_auto():
    """DeepSeek-V4 NVFP4: SGLang picks flashinfer_trtllm_routed on every GPU; its kernel is SM100-only."""
    res = resolve({}, platform="sm90", model=DSV4_NVFP4)
    assert res.values["moe_runner_backend"] == "auto" and res.values["disable_shared_experts_fusion"] is False
    skipped = [c for c in res.derivations["moe_runner_backend"].candidates if c.outcome == "skipped"]
    assert [c.value for c in skipped] == [_CASE["dsv4-nvfp4-sm90"][4][1]]  # SGLang's pick, with the evidence
    assert "its kernel cannot run on sm90" in skipped[0].why and "MK3" in skipped[0].why
    on_sm100 = resolve({}, platform="sm100", model=DSV4_NVFP4)  # where it runs, SGLang's pick stands
    assert on_sm100.values["moe_runner_backend"] == _CASE["dsv4-nvfp4-sm100"][4][1]


def test_a_default_of_an_absent_package_is_skipped():
    res = resolve({}, platform="sm100", model=DSV3, installed={"flashinfer": False})
    assert res.values["moe_runner_backend"] == "auto"
    assert resolve({}, platform="sm100", model=DSV3).values["moe_runner_backend"] == "flashinfer_trtllm"
    with pytest.raises(ConflictError) as info:
        resolve({"moe_runner_backend": "deep_gemm"}, platform="sm90", model=DSV3, installed={"sgl-deep-gemm": False})
    assert "package sgl-deep-gemm is not installed" in _said(info.value.conflicts[0])


def test_pplx_where_deep_gemm_cannot_run():
    conflicts = _conflicts("pplx-sm80")
    assert set(conflicts) == {"conflict.kernel.moe.pplx-deep-gemm"}  # not SGLang's pplx-runner check as well
    c = conflicts["conflict.kernel.moe.pplx-deep-gemm"]
    assert "MK1" in _said(c) and "sm80" in _said(c)
    _, platform, model, args, _ = _CASE["pplx-sm80"]
    # omitting the all-to-all is one fix (SGLang's answer to it is the recorded case); the ranking puts the
    # all-to-all backends that change nothing else before it
    omitted = [{k: v for k, v in args.items() if k not in f.unset} for f in c.fixes if not f.set]
    assert _CASE["pplx-sm80-fix"][3] in omitted
    for fix in c.fixes:
        fixed = {k: v for k, v in args.items() if k not in fix.unset}
        fixed.update(fix.set)
        assert resolve(fixed, platform=platform, model=model).ok, fix
    typed = resolve(PPLX, platform="sm90", model=DSV3)  # where DeepGEMM runs, SGLang's pick stands
    assert typed.values["moe_runner_backend"] == _CASE["pplx-sm90"][4][1]
    with pytest.raises(ConflictError) as info:  # a typed deep_gemm on sm80: one conflict, the all-to-all's
        resolve({**PPLX, "moe_runner_backend": "deep_gemm"}, platform="sm80", model=DSV3)
    assert {c.rule.id for c in info.value.conflicts} == {"conflict.kernel.moe.pplx-deep-gemm"}


def test_claims_are_narrowed_by_the_weights_sglang_ends_with():
    # DeepSeek-V3's checkpoint is FP8: cutlass cannot run it on sm86; --quantization unquant keeps the FP8
    # checkpoint's method (SGLang's ModelConfig), so it stays refused
    assert _conflicts("cutlass-fp8-sm86")
    with pytest.raises(ConflictError):
        resolve({"moe_runner_backend": "cutlass", "quantization": "unquant"}, platform="sm86", model=DSV3)
    # unquantized weights: no claim of cutlass applies, unknown and not refused
    res = resolve({"moe_runner_backend": "cutlass"}, platform="sm86", model=unquantised(DSV3))
    assert res.kernels["moe_runner_backend"]["status"] == "unknown"


def test_a_quantization_qualifier_is_validated():
    def adapter(q):
        return KernelAdapter("q", "f", None, (Claim("moe", ("k",), "supported", ("sm90",), "e", quantizations=q),))

    assert validate(adapter(("fp8", "unquantized")), "test")
    for bad in ((), ("",), ["fp8"], ("fp8\n",)):
        with pytest.raises(AdapterError, match="quantizations"):
            validate(adapter(bad), "test")
    claim = adapter(("unquantized",)).claims[0]
    assert claim.applies(None, None, None) and not claim.applies(None, None, "fp8")
    assert claim.scope() == "weights unquantized" and claim.specificity == 1


def test_every_evidence_id_is_documented_with_a_public_link():
    """Issue 13: each MK id an adapter cites resolves to a documented source (resolver/data/evidence.yaml, which
    docs/evidence.md is generated from), with a public link and a strength."""
    from resolver.evidence import catalogue as evidence

    documented = {i: e for i, e in evidence().items() if i.startswith("MK")}
    cited = {i for a in ADAPTERS for c in a.claims for i in re.findall(r"MK\d+", c.evidence)}
    assert cited and cited <= set(documented), sorted(cited - set(documented))
    for mk, entry in documented.items():
        assert entry.links and all(u.startswith("https://") for u in entry.links), mk
        assert entry.strength in ("strong", "medium"), mk
    assert {a.name for a in ADAPTERS} <= {a.name for a in registry().adapters}


def test_sglang_answers_as_recorded():
    """Ask SGLang 0.5.23 (the oracle) every case again: it resolves what the resolver refuses or skips."""
    from tools.sglang_diff import ask_oracle, sglang_value

    python = oracle_python()
    requests = [{"id": c[0], "platform": c[1], "model": c[2], "args": c[3]} for c in SGLANG]
    answers = {rid: a["sglang"] for rid, a in ask_oracle(requests, python, ORACLE).items()}
    for case, _platform, _model, args, (status, runner) in SGLANG:
        got = answers[case]
        assert got["status"] == status, (case, json.dumps(got)[:500])
        assert sglang_value(got, {"args": args}, "moe_runner_backend", {"moe_runner_backend": "auto"}) == runner, case


def test_a_dense_model_runs_no_moe_kernel():
    """Llama has no routed experts: its MoE runner is never built, so SGLang's acceptance stands."""
    from .test_moe_overrides import LLAMA

    res = resolve({"moe_runner_backend": "flashinfer_trtllm"}, platform="sm90", model=LLAMA)
    assert res.ok and res.kernels["moe_runner_backend"]["status"] == "unsupported"  # reported, not refused


def test_require_known_kernels_refuses_an_unknown_runner_not_auto():
    _, platform, model, args, _ = _CASE["deep-gemm-sm120"]
    with pytest.raises(ConflictError) as info:
        resolve(args, platform=platform, model=model, require_known_kernels=True)
    c = {x.rule.id: x for x in info.value.conflicts}["conflict.kernel.moe.unknown"]
    assert "--require-known-kernels" in _said(c) and "deep_gemm" in _said(c)
    fixed = {k: v for k, v in args.items() if k not in c.fixes[0].unset}
    assert resolve(fixed, platform=platform, model=model, require_known_kernels=True).ok  # auto: no kernel of its own
    assert resolve({"moe_runner_backend": "deep_gemm"}, platform="sm90", model=DSV3, require_known_kernels=True).ok
