"""Kernel adapters: what each kernel family can run, as facts the rules use (docs/kernels.md; the
configurations SGLang 0.5.23 picks or accepts that its kernels cannot run are R1-R17 in docs/evidence.md)."""
import io
import json
import sys
import textwrap

import pytest

from resolver import ConflictError, resolve
from resolver.adapters import registry, reload_registry
from resolver.adapters.base import AdapterError, Claim, KernelAdapter, validate
from resolver.cli import main


def _said(conflict) -> str:
    """A conflict's headline with the kernel evidence it keeps out of it (ConflictReport.details)."""
    return " ".join([conflict.message, *(text for _, text in conflict.details)])


DSV32 = {"architectures": ["DeepseekV32ForCausalLM"], "index_topk": 2048, "kv_lora_rank": 512, "qk_rope_head_dim": 64}
GLM = {"architectures": ["GlmMoeDsaForCausalLM"], "index_topk": 2048, "kv_lora_rank": 512, "qk_rope_head_dim": 64}
GLM53 = {"architectures": ["Glm5NextForConditionalGeneration"], "index_topk": 2048, "kv_lora_rank": 512}
DSV3 = {"architectures": ["DeepseekV3ForCausalLM"], "kv_lora_rank": 512, "num_key_value_heads": 128}
LLAMA = {"architectures": ["LlamaForCausalLM"], "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128}


def _conflicts(args, platform, model):
    with pytest.raises(ConflictError) as info:
        resolve(args, platform=platform, model=model)
    return {c.rule.id: c for c in info.value.conflicts}


def _fixes_resolve(conflicts, args, platform, model):
    for c in conflicts.values():
        for fix in c.fixes:
            fixed = {k: v for k, v in args.items() if k not in fix.unset}
            fixed.update(fix.set)
            assert resolve(fixed, platform=platform, model=model).ok, fix


@pytest.mark.parametrize("platform", ["rtx5090", "sm121"])
@pytest.mark.parametrize("args", [{}, {"kv_cache_dtype": "fp8_e4m3"}, {"kv_cache_dtype": "bfloat16"}])
def test_r1_r2_dsa_on_sm12x_never_gets_trtllm_or_flashmla(platform, args):
    conflicts = _conflicts(args, platform, DSV32)
    assert "conflict.kernel.dsa-decode.none-runs" in conflicts
    message = _said(conflicts["conflict.kernel.dsa-decode.none-runs"])
    assert message.startswith(f"No DSA decode kernel runs on {find(platform)} for this model")
    assert "trtllm" in message and "Unsupported architecture" in message  # the evidence is cited
    _fixes_resolve(conflicts, args, platform, DSV32)
    assert any(f.set.get("dsa_decode_backend") == "tilelang"
               for f in conflicts["conflict.kernel.dsa-decode.none-runs"].fixes)


def find(alias):
    from resolver.platforms import find_platform

    return find_platform(alias).name


def test_r1_explicit_trtllm_on_sm120_is_refused_with_evidence():
    conflicts = _conflicts({"dsa_decode_backend": "trtllm", "dsa_prefill_backend": "trtllm"}, "rtx5090", DSV32)
    c = conflicts["conflict.kernel.dsa-decode.cannot-run"]
    assert "S9" in _said(c) and "B7" in _said(c) and "[adapter flashinfer-trtllm, built-in; strong]" in _said(c)


def test_glm_fp8_on_sm12x_stays_runnable():
    res = resolve({}, platform="rtx5090", model=GLM)
    assert res.values["dsa_decode_backend"] == res.values["dsa_prefill_backend"] == "flashinfer_sparse_mla"


def test_r3_glm53_on_sm120_is_not_given_trtllm():
    conflicts = _conflicts({}, "rtx5090", GLM53)
    assert "conflict.kernel.dsa-decode.none-runs" in conflicts


@pytest.mark.parametrize("platform", ["a100", "a10", "l40s"])
def test_r5_dsa_on_sm8x_is_refused(platform):
    conflicts = _conflicts({}, platform, DSV32)
    assert {"conflict.kernel.dsa-prefill.none-runs", "conflict.kernel.dsa-decode.none-runs"} <= set(conflicts)


def test_r6_hisparse_on_sm120_non_glm_is_refused():
    conflicts = _conflicts({"enable_hisparse": True, "disable_radix_cache": True}, "rtx5090", DSV32)
    assert "conflict.kernel.dsa-decode.none-runs" in conflicts


def test_r8_deterministic_mla_on_sm8x_avoids_fa3():
    args = {"enable_deterministic_inference": True}
    res = resolve(args, platform="a100", model=DSV3)
    # SGLang picks fa3, whose registry then refuses MLA on SM8x: the default is skipped with the evidence,
    # and the next candidate (triton, which deterministic inference accepts) is taken
    assert res.values["attention_backend"] == "triton"
    skipped = [c for c in res.derivations["attention_backend"].candidates if c.outcome == "skipped"]
    assert [c.value for c in skipped] == ["fa3"] and "R8" in skipped[0].why
    assert "skipped (its kernel cannot run on sm80: R8" in res.explain("attention_backend")
    # the same request on Hopper keeps SGLang's pick
    assert resolve(args, platform="h100", model=DSV3).values["attention_backend"] == "fa3"


@pytest.mark.parametrize("platform", ["a100", "b200", "rtx5090", "mi300x"])
def test_r9_flashmla_off_sm90_is_refused(platform):
    conflicts = _conflicts({"attention_backend": "flashmla"}, platform, DSV3)
    message = _said(conflicts["conflict.kernel.attention.cannot-run"])
    assert "Dense decode MLA is only supported on SM90a" in message or "CUDA only" in message
    assert resolve({"attention_backend": "flashmla"}, platform="h100", model=DSV3).ok


def test_r12_flashmla_auto_as_decode_is_refused():
    conflicts = _conflicts({"dsa_decode_backend": "flashmla_auto"}, "h100", DSV32)
    assert "Unsupported dsa_impl" in _said(conflicts["conflict.kernel.dsa-decode.cannot-run"])
    assert resolve({"dsa_prefill_backend": "flashmla_auto"}, platform="h100", model=DSV32).ok


def test_r13_mxfp8_on_sm12x_is_refused_once():
    triton = _conflicts({"kv_cache_dtype": "mxfp8", "attention_backend": "triton"}, "rtx5090", LLAMA)
    assert "conflict.kernel.mxfp8-sm12x" in triton
    # with fa4 named, FA4's own adapter says it; the kv rule stays quiet (one cause, one conflict)
    conflicts = _conflicts({"kv_cache_dtype": "mxfp8", "attention_backend": "fa4"}, "rtx5090", LLAMA)
    assert set(conflicts) == {"conflict.kernel.attention.cannot-run"}
    assert "R13" in _said(conflicts["conflict.kernel.attention.cannot-run"])
    assert resolve({"kv_cache_dtype": "mxfp8", "attention_backend": "fa4"}, platform="b200", model=LLAMA).ok


def test_r14_fa3_fp8_on_sm8x_is_refused_by_the_kv_narrowed_claim():
    args = {"attention_backend": "fa3", "kv_cache_dtype": "fp8_e4m3"}
    c = _conflicts(args, "a100", LLAMA)["conflict.kernel.attention.cannot-run"]
    assert "R14" in _said(c) and "(KV fp8_e4m3)" in _said(c)
    assert resolve({"attention_backend": "fa3", "kv_cache_dtype": "bfloat16"}, platform="a100", model=LLAMA).ok
    assert resolve({"attention_backend": "fa3", "kv_cache_dtype": "fp8_e4m3"}, platform="h100", model=LLAMA).ok


def test_r15_tilelang_nope_on_sm12x():
    nope = dict(GLM, qk_rope_head_dim=0)
    args = {"dsa_prefill_backend": "tilelang", "dsa_decode_backend": "tilelang", "kv_cache_dtype": "bfloat16"}
    assert "conflict.kernel.tilelang-bf16-sm12x-nope" in _conflicts(args, "rtx5090", nope)


def test_r17_flashmla_e5m2():
    args = {"attention_backend": "flashmla", "kv_cache_dtype": "fp8_e5m2"}
    llama_like_mla = {"architectures": ["MiniCPM3ForCausalLM"], "kv_lora_rank": 256}
    c = _conflicts(args, "h100", llama_like_mla)["conflict.kernel.attention.cannot-run"]
    assert "R17" in _said(c) and "medium" in _said(c)


def test_r4_r7_r10_on_sm110_reached_through_its_capability():
    from resolver.platforms import platform_from_capability

    sm110 = platform_from_capability("11.0")
    assert sm110.name == "sm110"
    # R4: DSA on SM110 gets trtllm / flashmla_sparse from SGLang; no kernel runs there
    conflicts = _conflicts({}, sm110, DSV32)
    assert {"conflict.kernel.dsa-prefill.none-runs", "conflict.kernel.dsa-decode.none-runs"} <= set(conflicts)
    assert "R4" in _said(conflicts["conflict.kernel.dsa-decode.none-runs"])
    # R7: deterministic inference picks fa3, which has no SM11x code: skipped, the next candidate taken
    res = resolve({"enable_deterministic_inference": True}, platform=sm110, model=LLAMA)
    assert res.values["attention_backend"] == "flashinfer"
    assert [c.value for c in res.derivations["attention_backend"].candidates if c.outcome == "skipped"] == ["fa3"]
    # R10: trtllm_mla is let through by is_blackwell, and XQA MLA then refuses SM110
    mla = {"architectures": ["DeepseekV3ForCausalLM"], "kv_lora_rank": 512, "num_key_value_heads": 128}
    c = _conflicts({"attention_backend": "trtllm_mla"}, sm110, mla)["conflict.kernel.attention.cannot-run"]
    assert "R10" in _said(c) and "XQA MLA requires SM120a" in _said(c)
    # not a named platform: the contract's names stay as they are
    err = io.StringIO()
    assert main(["--platform", "sm110", "--model-arch", "LlamaForCausalLM"], io.StringIO(), err) == 2


def test_unknown_cells_are_neither_refused_nor_preferred():
    # R11 (trtllm_mla prefill on SM12x) and R16 (fa3 on ROCm) are weak: unknown, not refused
    assert resolve({"attention_backend": "trtllm_mla"}, platform="rtx5090", model=DSV3).ok
    assert resolve({"attention_backend": "fa3"}, platform="mi300x", model=LLAMA).ok
    # tilelang on SM12x with RoPE is unknown: the user may pick it
    assert resolve({"dsa_prefill_backend": "tilelang", "dsa_decode_backend": "tilelang", "kv_cache_dtype": "bfloat16"},
                   platform="rtx5090", model=DSV32).ok


@pytest.mark.parametrize("platform, kv, expected", [
    ("h100", "bfloat16", ("flashmla_sparse", "fa3")), ("h100", "fp8_e4m3", ("flashmla_kv", "flashmla_kv")),
    ("b200", "bfloat16", ("flashmla_sparse", "trtllm")), ("b200", "fp8_e4m3", ("trtllm", "trtllm")),
    ("mi300x", "bfloat16", ("triton", "triton")),
])
def test_runnable_defaults_are_unchanged_from_sglang(platform, kv, expected):
    res = resolve({"kv_cache_dtype": kv}, platform=platform, model=DSV32)
    assert (res.values["dsa_prefill_backend"], res.values["dsa_decode_backend"]) == expected


def test_adapters_are_validated():
    bad = KernelAdapter("x", "x", None, (Claim("dsa_decode", ("trtllm",), "maybe", ("sm90",), "e"),))
    with pytest.raises(AdapterError, match="kernel adapter 'x'.*status"):
        validate(bad, "test")
    with pytest.raises(AdapterError, match="unknown platform"):
        validate(KernelAdapter("y", "y", None, (Claim("dsa_decode", ("trtllm",), "supported", ("sm75",), "e"),)),
                 "test")
    with pytest.raises(AdapterError, match="not a KernelAdapter"):
        validate(object(), "test")


@pytest.fixture
def third_party(tmp_path, monkeypatch):
    """A tiny installed kernel package whose adapter (entry point resolver.kernels) reports an SM120 build."""
    (tmp_path / "sm120_trtllm_gen.py").write_text(textwrap.dedent('''
        from resolver.adapters import Claim, KernelAdapter, Probe
        ADAPTER = KernelAdapter(
            name="trtllm-gen-sm120", family="a trtllm-gen build with SM120 kernels", package="sm120-trtllm-gen",
            claims=(Claim("dsa_decode", ("trtllm",), "supported", ("sm120", "sm121"), "vendor build notes v1"),
                    Claim("dsa_prefill", ("trtllm",), "supported", ("sm120", "sm121"), "vendor build notes v1")),
            probe=lambda: Probe(True, "1.0", "test"))
        BROKEN = KernelAdapter(name="broken", family="b", package=None,
            claims=(Claim("no_such_role", ("x",), "supported", ("sm90",), "e"),))
    '''))
    dist = tmp_path / "sm120_trtllm_gen-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: sm120-trtllm-gen\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[resolver.kernels]\nsm120 = sm120_trtllm_gen:ADAPTER\nbroken = sm120_trtllm_gen:BROKEN\n"
        "missing = no_such_module:X\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    reload_registry()
    yield
    monkeypatch.undo()
    sys.modules.pop("sm120_trtllm_gen", None)
    reload_registry()


def test_a_third_party_adapter_changes_what_resolves(third_party):
    reg = registry()
    assert {a.name for a in reg.adapters} >= {"flashmla", "trtllm-gen-sm120"}
    assert len(reg.errors) == 2 and any("broken" in str(e) and "unknown role" in str(e) for e in reg.errors)
    res = resolve({}, platform="rtx5090", model=DSV32)
    assert res.values["dsa_decode_backend"] == "trtllm"
    assert "entry point sm120" in res.explain("dsa_decode_backend")
    out = io.StringIO()
    assert main(["kernels", "--format", "json"], out, io.StringIO()) == 0
    doc = json.loads(out.getvalue())
    mine = next(a for a in doc["adapters"] if a["name"] == "trtllm-gen-sm120")
    assert mine["source"].startswith("entry point sm120") and mine["installed"] is True and mine["version"] == "1.0"
    assert len(doc["errors"]) == 2


def test_kernels_subcommand_text():
    out = io.StringIO()
    assert main(["kernels"], out, io.StringIO()) == 0
    text = out.getvalue()
    assert "flashinfer-trtllm (built-in)" in text and "unsupported on sm80" in text and "unknown" in text


def test_check_installed_counts_this_machines_packages(monkeypatch, request):
    from resolver.adapters.base import Probe
    from resolver.adapters.registry import Registry

    real = Registry.probes

    def fake_probes(self):
        out = real(self)
        out.update({"flashinfer-trtllm": Probe(False, None, "module flashinfer not found"),
                    "flashmla": Probe(True, "1.0.0", "module flash_mla found")})
        return out

    monkeypatch.setattr(Registry, "probes", fake_probes)
    reload_registry()  # probes are cached per registry: an earlier test may have probed the real machine
    request.addfinalizer(reload_registry)  # and these fake probes must not outlive this test
    # a named target: the local packages do not count unless asked
    assert resolve({}, platform="b200", model=DSV32).values["dsa_decode_backend"] == "trtllm"
    res = resolve({}, platform="b200", model=DSV32, check_installed=True)
    assert res.values["dsa_decode_backend"] == "flashmla_kv"  # trtllm skipped: FlashInfer is not installed here
    skipped = [c for c in res.derivations["dsa_decode_backend"].candidates if c.outcome == "skipped"]
    assert skipped and "not installed here" in skipped[0].why
    assert res.outcome.facts["installed.flashinfer"].value is False
    origin = res.outcome.facts["installed.flashinfer"].origin
    assert origin.how == "probed" and "probed on this machine" in origin.where


# --- the adapters and the rules agree ----------------------------------------------------------------

MLA_MODEL, MHA_MODEL = DSV3, LLAMA


def _target(name):
    """A platform by name, including those the contract does not name (sm110: --compute-capability 11.0)."""
    from resolver.platforms import ALL_PLATFORMS

    return next(p for p in ALL_PLATFORMS if p.name == name)


def _models_for(claim):
    if claim.role.startswith("dsa"):
        return [DSV32]
    return {True: [MLA_MODEL], False: [MHA_MODEL], None: [MHA_MODEL, MLA_MODEL]}[claim.mla]


def _claim_cases(status):
    from resolver.adapters.base import ROLES

    for adapter in registry().adapters:
        for claim in adapter.claims:
            if claim.status != status:
                continue
            for backend in claim.backends:
                for platform in claim.platforms:
                    for model in _models_for(claim):
                        for kv in claim.kv_dtypes or (None,):
                            args = {ROLES[claim.role]: backend, **({"kv_cache_dtype": kv} if kv else {})}
                            yield pytest.param(args, platform, model,
                                               id=f"{adapter.name}-{backend}-{claim.role}-{platform}"
                                                  f"-{kv or 'any'}-{model['architectures'][0]}")


@pytest.mark.parametrize("args, platform, model", list(_claim_cases("refused")))
def test_what_an_adapter_says_sglang_refuses_the_rules_refuse(args, platform, model):
    """A "refused" claim (Nr in docs/kernel-matrix.md: SGLang 0.5.23's own resolution refuses or rewrites it,
    docs/kernels.md, "What an adapter declares") must be backed by one of SGLang's own rules:
    a conflict from a rule outside rules/kernels.yaml, or a rewrite of the value."""
    option, backend = next(iter(args.items()))
    try:
        res = resolve(args, platform=_target(platform), model=model)
    except ConflictError as exc:
        assert any(not c.rule.file.endswith("kernels.yaml") for c in exc.conflicts), [c.rule.id for c in exc.conflicts]
    else:
        assert res.values[option] != backend, f"{backend} accepted on {platform}"


@pytest.mark.parametrize("args, platform, model", list(_claim_cases("supported"))[::7])
def test_a_supported_claim_is_never_refused_by_a_kernel_rule(args, platform, model):
    """Kernel facts never refuse a Y cell of docs/kernel-matrix.md (a "supported" claim, docs/kernels.md,
    "What an adapter declares"): whatever else happens, no conflict.kernel.*
    rule fires on the option the claim is about (a sample of every 7th case keeps this fast)."""
    option = next(iter(args))
    try:
        resolve(args, platform=_target(platform), model=model)
    except ConflictError as exc:
        kernel = [c.rule.id for c in exc.conflicts if c.rule.id.startswith("conflict.kernel.") and option in c.options]
        assert not [k for k in kernel if "cannot-run" in k], kernel


def _page_cases():
    from resolver.adapters.base import ROLES

    for adapter in registry().adapters:
        for lim in adapter.limits:
            if lim.kind != "page_sizes":
                continue
            for backend in lim.backends:
                claim = next((c for c in adapter.claims if backend in c.backends and c.status == "supported"), None)
                if claim is None or claim.role.startswith("dsa"):
                    continue
                yield pytest.param(ROLES[claim.role], backend, claim.platforms[0], lim.values, id=f"{backend}")


@pytest.mark.parametrize("option, backend, platform, pages", list(_page_cases()))
@pytest.mark.parametrize("asked", [None, 1, 16, 48, 256])
def test_the_page_sizes_an_adapter_declares_are_the_ones_the_rules_produce(option, backend, platform, pages, asked):
    """Whatever page size is asked for, where the backend resolves, the page size is one its adapter declares."""
    args = {option: backend, **({"page_size": asked} if asked else {})}
    for model in (MHA_MODEL, MLA_MODEL):
        try:
            res = resolve(args, platform=_target(platform), model=model)
        except ConflictError:
            continue
        if res.values[option] == backend:
            assert res.values["page_size"] in pages, (model["architectures"], res.values["page_size"])


@pytest.mark.parametrize("args, platform, model, rule, evidence", [
    ({"attention_backend": "hpc_ops"}, "b200", LLAMA, "conflict.kernel.attention.cannot-run", "S23"),
    ({"attention_backend": "aiter"}, "h100", LLAMA, "conflict.kernel.attention.cannot-run", "U8"),
    ({"attention_backend": "intel_xpu"}, "h100", LLAMA, "conflict.kernel.attention.cannot-run", "U9"),
    ({"attention_backend": "fa3"}, "b200", LLAMA, "conflict.kernel.attention.cannot-run", "B3"),
    ({"attention_backend": "fa4", "kv_cache_dtype": "fp8_e4m3"}, "h100", LLAMA,
     "conflict.kernel.attention.cannot-run", "S17"),
    ({"attention_backend": "flashinfer"}, "mi300x", LLAMA, "conflict.kernel.attention.cannot-run", "B13"),
    ({"dsa_prefill_backend": "triton_sparse_mla"}, "mi300x", DSV32, "conflict.kernel.dsa-prefill.cannot-run", "S11"),
    ({"speculative_algorithm": "EAGLE", "speculative_draft_attention_backend": "fa3"}, "b200", LLAMA,
     "conflict.kernel.draft-attention.cannot-run", "B3"),
])
def test_each_family_refuses_what_its_kernels_cannot_run(args, platform, model, rule, evidence):
    c = _conflicts(args, platform, model)[rule]
    assert evidence in _said(c) and "[adapter " in _said(c)


def test_decode_only_refusal_is_reported_once_and_on_the_decode_option():
    conflicts = _conflicts({"attention_backend": "triton", "decode_attention_backend": "flashmla"}, "b200", DSV3)
    assert "conflict.kernel.decode-attention.cannot-run" in conflicts
    assert "conflict.kernel.attention.cannot-run" not in conflicts
    # when --attention-backend itself cannot run, prefill and decode (inheriting it) are not reported again
    conflicts = _conflicts({"attention_backend": "flashmla"}, "b200", DSV3)
    assert "conflict.kernel.decode-attention.cannot-run" not in conflicts


def test_kernels_subcommand_filters_by_backend_and_shows_limits():
    out = io.StringIO()
    assert main(["kernels", "trtllm_mla"], out, io.StringIO()) == 0
    text = out.getvalue()
    assert text.startswith("flashinfer-trtllm (built-in)") and "page sizes: 32, 64" in text and "trtllm_mha" not in text
    assert "refused by SGLang's own checks on sm80" in text
    err = io.StringIO()
    assert main(["kernels", "trtllm_ml"], io.StringIO(), err) == 2
    assert "did you mean 'trtllm_mla'" in err.getvalue()
    out = io.StringIO()
    assert main(["kernels", "fa3", "--format", "json"], out, io.StringIO()) == 0
    (fa3,) = json.loads(out.getvalue())["adapters"]
    assert fa3["compiled_backends"] == ["fa3"] and {"kind": "head_dims"}.items() <= fa3["limits"][1].items()
    assert any(c["kv_dtypes"] == ["fp8_e4m3"] and c["status"] == "unsupported" for c in fa3["claims"])


def test_when_no_small_change_helps_start_over_with_the_kernel_hint():
    """DSA on SM121 with HiSparse and two refused backends: no one- or two-flag change resolves it, so the
    fix omits what the conflicts read and applies the no-kernel conflict's own hint; it resolves."""
    args = {"enable_hisparse": True, "disable_radix_cache": True, "dsa_prefill_backend": "tilelang",
            "dsa_decode_backend": "flashinfer_sparse_mla"}
    conflicts = _conflicts(args, "sm121", DSV32)
    fixes = [f for c in conflicts.values() for f in c.fixes]
    assert fixes and fixes[0].description.startswith("Omit --enable-hisparse; then: Use the TileLang DSA kernels")
    _fixes_resolve(conflicts, args, "sm121", DSV32)
