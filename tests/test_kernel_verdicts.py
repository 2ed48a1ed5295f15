"""Kernel verdicts are visible and gateable: other device families are refused on GPUs, an absent
package takes its kernels with it, every chosen backend carries its verdict, unknown is a warning
and, when the request asks for known kernels only, a conflict."""
import io
from dataclasses import replace

import pytest

from resolver import ConflictError, resolve
from resolver.adapters import reload_registry
from resolver.api import get_engine, resolve_request
from resolver.cli import main
from resolver.fixes import attach_fixes
from resolver.resolution import run
from resolver.verdicts import KERNEL_UNKNOWN

LLAMA = {"architectures": ["LlamaForCausalLM"], "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128}
DSV3 = {"architectures": ["DeepseekV3ForCausalLM"], "kv_lora_rank": 512, "num_key_value_heads": 128}
DSV32 = {"architectures": ["DeepseekV32ForCausalLM"], "index_topk": 2048, "kv_lora_rank": 512, "qk_rope_head_dim": 64}
GLM = {"architectures": ["GlmMoeDsaForCausalLM"], "index_topk": 2048, "kv_lora_rank": 512, "qk_rope_head_dim": 64}
#: FlashInfer's kernels (the flashinfer-python row of docs/kernels.md, "Installed or not"): the option, the
#: backend, a model and platform where it otherwise runs
FLASHINFER_KERNELS = [
    ("attention_backend", "trtllm_mha", LLAMA, "b200", {}),
    ("attention_backend", "trtllm_mla", DSV3, "b200", {}),
    ("attention_backend", "flashinfer", LLAMA, "b200", {}),
    ("attention_backend", "cutedsl_mla", DSV3, "b200", {}),
    ("dsa_prefill_backend", "trtllm", DSV32, "b200", {"kv_cache_dtype": "fp8_e4m3"}),
    ("dsa_decode_backend", "trtllm", DSV32, "b200", {"kv_cache_dtype": "fp8_e4m3"}),
    ("dsa_decode_backend", "flashinfer_sparse_mla", GLM, "rtx5090", {"kv_cache_dtype": "fp8_e4m3"}),
]


def _said(conflict) -> str:
    """A conflict's headline with the kernel evidence it keeps out of it (ConflictReport.details)."""
    return " ".join([conflict.message, *(text for _, text in conflict.details)])


def test_the_kernel_evidence_stays_out_of_the_headline():
    c = _conflicts({"dsa_decode_backend": "flashmla_kv"}, "a100", GLM)["conflict.kernel.dsa-decode.cannot-run"]
    assert "built-in; strong" not in c.message and "kernel adapter flashmla, see --explain" in c.message
    assert dict(c.details)["kernel.dsa_decode_backend_why"].endswith("[adapter flashmla, built-in; strong]")


def test_an_unknown_verdict_on_an_untyped_backend_names_the_rule_that_picked_it():
    res = resolve({"kv_cache_dtype": "nvfp4"}, platform="sm120", model=LLAMA)
    said = [w.message for w in tuple(w for w in res.warnings if w.code == KERNEL_UNKNOWN)]
    assert said, "no kernel-unknown warning to check"
    for message in said:
        assert not message.startswith("--"), message  # never a flag the user did not type
        assert "(picked by " in message.split(":", 1)[0]


def _conflicts(args, platform, model, **kw):
    with pytest.raises(ConflictError) as info:
        resolve(args, platform=platform, model=model, **kw)
    return {c.rule.id: c for c in info.value.conflicts}


def _gated(args, platform, model):
    """The request with require_known_kernels set (what --require-known-kernels asks), resolved with fixes."""
    engine = get_engine()
    request = replace(resolve_request(engine, args=args, platform=platform, model=model, fixes=False).request,
                      require_known_kernels=True)
    outcome = run(engine.compiled, engine.durable, request)
    return {c.rule.id: c for c in attach_fixes(engine, request, outcome)}, outcome


# --- 1. other device families on CUDA and ROCm ---------------------------------------------------------

@pytest.mark.parametrize("platform", ["h100", "b200", "mi300x"])
@pytest.mark.parametrize("backend, evidence", [("ascend", "torch_npu"), ("intel_amx", "decode_attention_cpu")])
@pytest.mark.parametrize("model", [LLAMA, DSV3], ids=["mha", "mla"])
def test_other_device_backends_cannot_run_on_gpus(platform, backend, evidence, model):
    c = _conflicts({"attention_backend": backend}, platform, model)["conflict.kernel.attention.cannot-run"]
    assert c.message.startswith(f"The {backend} attention kernel cannot run on ")
    assert evidence in _said(c) and f"[adapter {backend.replace('_', '-')}, built-in; strong]" in _said(c)


@pytest.mark.parametrize("option, rule", [
    ("prefill_attention_backend", "conflict.kernel.prefill-attention.cannot-run"),
    ("decode_attention_backend", "conflict.kernel.decode-attention.cannot-run"),
])
def test_other_device_backends_are_refused_per_phase_too(option, rule):
    assert rule in _conflicts({"attention_backend": "triton", option: "ascend"}, "h100", LLAMA)


def test_ascend_as_draft_backend_is_refused():
    args = {"speculative_algorithm": "EAGLE", "speculative_draft_attention_backend": "ascend"}
    assert "torch_npu" in _said(_conflicts(args, "h100", LLAMA)["conflict.kernel.draft-attention.cannot-run"])


def test_npu_and_mps_are_not_values_sglang_offers():
    # the device families' backends are the values above; "npu" and "mps" are input errors, not conflicts
    for value in ("npu", "mps"):
        err = io.StringIO()
        assert main(["--platform", "h100", "--model-arch", "LlamaForCausalLM", "--attention-backend", value],
                    io.StringIO(), err) == 2


def test_wave_is_refused_on_cuda_and_unknown_on_rocm():
    c = _conflicts({"attention_backend": "wave"}, "h100", LLAMA)["conflict.kernel.attention.cannot-run"]
    assert "AMDGPU only" in _said(c) and "medium" in _said(c)
    res = resolve({"attention_backend": "wave"}, platform="mi300x", model=LLAMA)
    assert res.kernels["attention_backend"]["status"] == "unknown"


# --- 2. an absent package takes its kernels with it -----------------------------------------------------

@pytest.mark.parametrize("spelling", ["flashinfer", "flashinfer-python", "FlashInfer_Python"])
def test_flashinfer_absent_on_b200_never_picks_its_kernels(spelling):
    installed = {spelling: False}
    mha = resolve({}, platform="b200", model=LLAMA, installed=installed)
    assert mha.values["attention_backend"] == "triton"  # not trtllm_mha
    skipped = {c.value: c.why for c in mha.derivations["attention_backend"].candidates if c.outcome == "skipped"}
    assert "package flashinfer-python is not installed on the target (--installed " in skipped["trtllm_mha"]
    assert resolve({}, platform="b200", model=DSV3, installed=installed).values["attention_backend"] == "triton"
    # DSA: trtllm is skipped; with a bf16 cache SGLang's other decode candidate (fa3) cannot run on SM100
    # either, so that is a conflict naming both causes, not a backend SGLang would never pick
    fp8 = resolve({"kv_cache_dtype": "fp8_e4m3"}, platform="b200", model=DSV32, installed=installed)
    assert (fp8.values["dsa_prefill_backend"], fp8.values["dsa_decode_backend"]) == ("flashmla_kv", "flashmla_kv")
    bf16 = _conflicts({"kv_cache_dtype": "bfloat16"}, "b200", DSV32, installed=installed)
    assert "trtllm - package flashinfer-python is not installed" in _said(bf16["conflict.kernel.dsa-decode.none-runs"])


def test_flashinfer_absent_on_rtx5090_never_picks_flashinfer_sparse_mla():
    # GLM DSA with fp8 on SM12x defaults to flashinfer_sparse_mla; without FlashInfer nothing else decodes it
    assert resolve({}, platform="rtx5090", model=GLM).values["dsa_decode_backend"] == "flashinfer_sparse_mla"
    conflicts = _conflicts({}, "rtx5090", GLM, installed={"flashinfer": False})
    assert "flashinfer_sparse_mla - package flashinfer-python is not installed on the target (--installed " \
        "flashinfer=no)" in _said(conflicts["conflict.kernel.dsa-decode.none-runs"])


@pytest.mark.parametrize("option, backend, model, platform, extra", FLASHINFER_KERNELS)
def test_flashinfer_kernels_typed_without_flashinfer_are_refused(option, backend, model, platform, extra):
    args = {option: backend, **extra}
    assert resolve(args, platform=platform, model=model).ok  # runnable with FlashInfer
    for spelling in ("flashinfer", "flashinfer-python"):
        conflicts = _conflicts(args, platform, model, installed={spelling: False})
        refusal = [c for c in conflicts.values() if c.rule.id.endswith(".cannot-run") and option in c.options]
        assert refusal, sorted(conflicts)
        assert (f"package flashinfer-python is not installed on the target (--installed {spelling}=no) "
                f"[adapter ") in _said(refusal[0])


def test_every_adapter_package_counts_not_only_flashinfer():
    args = {"dsa_prefill_backend": "flashmla_sparse", "dsa_decode_backend": "flashmla_sparse"}
    assert resolve(args, platform="h100", model=DSV32).ok
    for spelling in ("sgl-flash-mla", "flash_mla", "flashmla"):
        conflicts = _conflicts(args, "h100", DSV32, installed={spelling: False})
        assert "package sgl-flash-mla is not installed" in _said(conflicts["conflict.kernel.dsa-decode.cannot-run"])
    # a backend with no claim on the platform (unknown) cannot run without its package either
    tile = {"dsa_prefill_backend": "tilelang", "dsa_decode_backend": "tilelang", "kv_cache_dtype": "bfloat16"}
    assert resolve(tile, platform="b200", model=DSV32).ok
    assert "conflict.kernel.dsa-decode.cannot-run" in _conflicts(tile, "b200", DSV32, installed={"tilelang": False})
    # FA3 ships in sglang-kernel
    assert "conflict.kernel.attention.cannot-run" in _conflicts({"attention_backend": "fa3"}, "h100", LLAMA,
                                                                installed={"sgl-kernel": False})


def test_a_package_marked_present_changes_nothing():
    assert resolve({}, platform="b200", model=LLAMA, installed={"flashinfer": True}).values["attention_backend"] == \
        "trtllm_mha"


def test_unknown_package_is_an_input_error_with_did_you_mean():
    err = io.StringIO()
    assert main(["--platform", "b200", "--model-arch", "LlamaForCausalLM", "--installed", "flashinfr=no"],
                io.StringIO(), err) == 2
    assert "unknown kernel package 'flashinfr'" in err.getvalue() and "Did you mean 'flashinfer'" in err.getvalue()
    assert "flashinfer-python" in err.getvalue()  # the known names are listed
    err = io.StringIO()
    assert main(["--platform", "h100", "--model-arch", "LlamaForCausalLM", "--installed", "flash-attn=no"],
                io.StringIO(), err) == 2
    assert "sglang-kernel" in err.getvalue()  # where SGLang's FA3 really ships


def test_two_spellings_of_one_package_must_agree():
    from resolver.errors import InputError

    with pytest.raises(InputError, match="disagree"):
        resolve({}, platform="b200", model=LLAMA, installed={"flashinfer": False, "flashinfer-python": True})


def test_a_package_probed_absent_counts_under_check_installed(monkeypatch, request):
    from resolver.adapters.base import Probe
    from resolver.adapters.registry import Registry

    real = Registry.probes

    def fake_probes(self):
        out = real(self)
        out["tilelang"] = Probe(False, None, "module tilelang not found")
        return out

    monkeypatch.setattr(Registry, "probes", fake_probes)
    reload_registry()
    request.addfinalizer(reload_registry)
    tile = {"dsa_prefill_backend": "tilelang", "dsa_decode_backend": "tilelang", "kv_cache_dtype": "bfloat16"}
    assert resolve(tile, platform="b200", model=DSV32).ok  # a named target: this machine does not count
    with pytest.raises(ConflictError) as info:
        resolve(tile, platform="b200", model=DSV32, check_installed=True)
    message = next(_said(c) for c in info.value.conflicts if c.rule.id == "conflict.kernel.dsa-decode.cannot-run")
    assert "package tilelang is not installed on the target (probed on this machine" in message


# --- 3. verdicts as data, unknown as a warning, and the gate ---------------------------------------------

def test_every_chosen_backend_carries_its_verdict():
    res = resolve({}, platform="b200", model=DSV32)
    verdicts = res.kernels
    # unset ones: none; the DeepSeek family's MoE runner on SM100 is FlashInfer's TRT-LLM MoE
    assert set(verdicts) == {"attention_backend", "dsa_prefill_backend", "dsa_decode_backend", "moe_runner_backend"}
    assert verdicts["moe_runner_backend"]["status"] == "supported"
    assert verdicts["moe_runner_backend"]["adapter"] == "moe-flashinfer-trtllm"
    assert verdicts["dsa_decode_backend"] == {
        "backend": "trtllm", "role": "dsa_decode", "status": "supported", "adapter": "flashinfer-trtllm",
        "why": res.outcome.facts["kernel.dsa_decode_backend_why"].value}
    assert "B7" in verdicts["dsa_decode_backend"]["why"]
    # dsa runs the DSA backends' kernels: its verdict is theirs, not "unknown"
    assert verdicts["attention_backend"]["status"] == "delegated"
    assert verdicts["attention_backend"]["adapter"] == "dsa-dispatch"
    assert tuple(w for w in res.warnings if w.code == KERNEL_UNKNOWN) == ()


def test_verdicts_of_a_refused_and_an_all_skipped_option():
    engine = get_engine()
    refused = resolve_request(engine, args={"attention_backend": "ascend"}, platform="h100", model=LLAMA, fixes=False)
    v = refused.kernels["attention_backend"]
    assert (v["backend"], v["status"], v["adapter"]) == ("ascend", "unsupported", "ascend")
    none = resolve_request(engine, args={}, platform="rtx5090", model=DSV32, fixes=False)
    v = none.kernels["dsa_decode_backend"]
    assert v["backend"] is None and v["status"] == "none" and v["adapter"] is None and "trtllm" in v["why"]


@pytest.mark.parametrize("args, platform, option", [
    ({"attention_backend": "wave"}, "mi300x", "attention_backend"),  # no adapter declares wave on ROCm
    ({"attention_backend": "flex_attention"}, "h100", "attention_backend"),  # limits only, no claims
    ({"attention_backend": "triton", "decode_attention_backend": "flex_attention"}, "h100", "decode_attention_backend"),
])
def test_an_unknown_verdict_is_a_warning(args, platform, option):
    res = resolve(args, platform=platform, model=LLAMA)
    assert res.ok and res.kernels[option]["status"] == "unknown"
    (warning,) = tuple(w for w in res.warnings if w.code == KERNEL_UNKNOWN)
    assert warning.code == KERNEL_UNKNOWN == "kernel-unknown"
    flag = res.engine.pack.options[option].flag
    assert warning.message.startswith(f"{flag} {args[option]}: whether this kernel runs on ")
    assert res.request.platform.name in warning.message


@pytest.mark.parametrize("args, platform, model, rule", [
    ({"attention_backend": "wave"}, "mi300x", LLAMA, "conflict.kernel.attention.unknown"),
    ({"attention_backend": "flex_attention"}, "h100", LLAMA, "conflict.kernel.attention.unknown"),
    ({"attention_backend": "triton", "decode_attention_backend": "flex_attention"}, "h100", LLAMA,
     "conflict.kernel.decode-attention.unknown"),
    ({"attention_backend": "triton", "prefill_attention_backend": "flex_attention"}, "h100", LLAMA,
     "conflict.kernel.prefill-attention.unknown"),
    ({"dsa_prefill_backend": "tilelang", "dsa_decode_backend": "tilelang", "kv_cache_dtype": "bfloat16"}, "rtx5090",
     DSV32, "conflict.kernel.dsa-decode.unknown"),
])
def test_with_the_gate_an_unknown_verdict_is_a_conflict_with_fixes(args, platform, model, rule):
    assert resolve(args, platform=platform, model=model).ok  # without the gate: a warning only
    conflicts, _ = _gated(args, platform, model)
    assert rule in conflicts
    assert conflicts[rule].message.startswith("--require-known-kernels: whether the ")
    assert "is unknown (" in conflicts[rule].message
    if "decode" not in rule or "dsa" not in rule:  # for TileLang on SM12x no other DSA kernel is known to run
        assert conflicts[rule].fixes


def test_the_gate_passes_known_kernels_and_unset_options():
    for args, platform, model in (({}, "h100", LLAMA), ({}, "b200", DSV32), ({}, "mi300x", LLAMA),
                                  ({"attention_backend": "fa3"}, "h100", DSV3)):
        conflicts, outcome = _gated(args, platform, model)
        assert not conflicts, (platform, sorted(conflicts))
        assert outcome.facts["request.require_known_kernels"].value is True


def test_the_gate_is_reported_once_when_attention_and_its_phases_are_unknown():
    conflicts, _ = _gated({"attention_backend": "flex_attention", "decode_attention_backend": "flex_attention"},
                          "h100", LLAMA)
    assert [r for r in conflicts if r.endswith(".unknown")] == ["conflict.kernel.attention.unknown"]
