"""Kernel adapters: what each kernel family can run, as facts the rules use (kernels.md R1-R17)."""
import io
import json
import sys
import textwrap

import pytest

from resolver import ConflictError, resolve
from resolver.adapters import registry, reload_registry
from resolver.adapters.base import AdapterError, Claim, KernelAdapter, validate
from resolver.cli import main

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
    message = conflicts["conflict.kernel.dsa-decode.none-runs"].message
    assert message.startswith(f"No DSA decode kernel runs on {find(platform)} for this model")
    assert "trtllm" in message and "Unsupported architecture" in message  # the evidence is cited
    _fixes_resolve(conflicts, args, platform, DSV32)
    assert any(f.set.get("dsa_decode_backend") == "tilelang" for f in conflicts["conflict.kernel.dsa-decode.none-runs"].fixes)


def find(alias):
    from resolver.platforms import find_platform

    return find_platform(alias).name


def test_r1_explicit_trtllm_on_sm120_is_refused_with_evidence():
    conflicts = _conflicts({"dsa_decode_backend": "trtllm", "dsa_prefill_backend": "trtllm"}, "rtx5090", DSV32)
    c = conflicts["conflict.kernel.dsa-decode.cannot-run"]
    assert "S9" in c.message and "B7" in c.message and "[adapter flashinfer-trtllm, built-in; strong]" in c.message


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


def test_r8_deterministic_mla_on_sm8x_is_refused_and_fixed():
    args = {"enable_deterministic_inference": True}
    conflicts = _conflicts(args, "a100", DSV3)
    assert "conflict.kernel.fa3-mla-sm8x" in conflicts
    _fixes_resolve(conflicts, args, "a100", DSV3)


@pytest.mark.parametrize("platform", ["a100", "b200", "rtx5090", "mi300x"])
def test_r9_flashmla_off_sm90_is_refused(platform):
    conflicts = _conflicts({"attention_backend": "flashmla"}, platform, DSV3)
    assert "Dense decode MLA is only supported on SM90a" in conflicts["conflict.kernel.attention.cannot-run"].message or \
        "CUDA only" in conflicts["conflict.kernel.attention.cannot-run"].message
    assert resolve({"attention_backend": "flashmla"}, platform="h100", model=DSV3).ok


def test_r12_flashmla_auto_as_decode_is_refused():
    conflicts = _conflicts({"dsa_decode_backend": "flashmla_auto"}, "h100", DSV32)
    assert "Unsupported dsa_impl" in conflicts["conflict.kernel.dsa-decode.cannot-run"].message
    assert resolve({"dsa_prefill_backend": "flashmla_auto"}, platform="h100", model=DSV32).ok


def test_r13_r14_r15_r17():
    assert "conflict.kernel.mxfp8-sm12x" in _conflicts({"kv_cache_dtype": "mxfp8", "attention_backend": "triton"}, "rtx5090", LLAMA)
    assert "conflict.kernel.fa3-fp8-sm8x" in _conflicts({"attention_backend": "fa3", "kv_cache_dtype": "fp8_e4m3"}, "a100", LLAMA)
    nope = dict(GLM, qk_rope_head_dim=0)
    args = {"dsa_prefill_backend": "tilelang", "dsa_decode_backend": "tilelang", "kv_cache_dtype": "bfloat16"}
    assert "conflict.kernel.tilelang-bf16-sm12x-nope" in _conflicts(args, "rtx5090", nope)
    assert "conflict.kernel.flashmla-fp8-e5m2" in _conflicts({"attention_backend": "flashmla", "kv_cache_dtype": "fp8_e5m2"}, "h100", DSV3)


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
        validate(KernelAdapter("y", "y", None, (Claim("dsa_decode", ("trtllm",), "supported", ("sm75",), "e"),)), "test")
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
        "[resolver.kernels]\nsm120 = sm120_trtllm_gen:ADAPTER\nbroken = sm120_trtllm_gen:BROKEN\nmissing = no_such_module:X\n")
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


def test_check_installed_counts_this_machines_packages(monkeypatch):
    from resolver.adapters.base import Probe
    from resolver.adapters.registry import Registry

    real = Registry.probes

    def fake_probes(self):
        out = real(self)
        out.update({"flashinfer-trtllm": Probe(False, None, "module flashinfer not found"),
                    "flashmla": Probe(True, "1.0.0", "module flash_mla found")})
        return out

    monkeypatch.setattr(Registry, "probes", fake_probes)
    # a named target: the local packages do not count unless asked
    assert resolve({}, platform="b200", model=DSV32).values["dsa_decode_backend"] == "trtllm"
    res = resolve({}, platform="b200", model=DSV32, check_installed=True)
    assert res.values["dsa_decode_backend"] == "flashmla_kv"  # trtllm skipped: FlashInfer is not installed here
    skipped = [c for c in res.derivations["dsa_decode_backend"].candidates if c.outcome == "skipped"]
    assert skipped and "not installed here" in skipped[0].why
    assert res.outcome.facts["installed.flashinfer"].value is False
    assert "probed on this machine" in res.outcome.facts["installed.flashinfer"].origin
