"""Property tests over the option space (hypothesis)."""
import os
import random
import shutil

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from resolver import ResolverError
from resolver.adapters.registry import registry
from resolver.api import get_engine, resolve_request
from resolver.fixes import _configuration, _of_another_family
from resolver.launch_line import launch_values
from resolver.loader import default_rules_dir
from resolver.resolution import run

PLATFORMS = ["sm80", "sm86", "sm89", "sm90", "sm100", "sm103", "sm120", "sm121", "gfx942", "gfx950"]
DSV32 = {"architectures": ["DeepseekV32ForCausalLM"], "index_topk": 2048, "kv_lora_rank": 512}
MODELS = [
    DSV32,
    {"architectures": ["GlmMoeDsaForCausalLM"], "index_topk": 2048, "kv_lora_rank": 512},
    {"architectures": ["HYV4ForCausalLM"], "index_topk": 2048, "kv_lora_rank": 512, "learnable_sink": True},
    {"architectures": ["DeepseekV3ForCausalLM"], "kv_lora_rank": 512},
    {"architectures": ["LlamaForCausalLM"], "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128},
]
DSA_BACKENDS = ["flashmla_sparse", "flashmla_kv", "flashinfer_sparse_mla", "fa3", "tilelang", "triton", "aiter",
                "trtllm", "flashmla_auto", "flashmla_sparse_q8"]
VALUES = {
    "kv_cache_dtype": ["auto", "bf16", "bfloat16", "fp8_e4m3", "fp8_e5m2", "mxfp8", "nvfp4", "fp4_mx_block16"],
    "dsa_prefill_backend": DSA_BACKENDS,
    "dsa_decode_backend": DSA_BACKENDS,
    "enable_hisparse": [True, False],
    "disable_radix_cache": [True, False],
    "enable_mixed_chunk": [True, False],
    "page_size": [1, 16, 32, 64, 128],
    "attention_backend": ["dsa", "flashmla", "trtllm_mla", "fa3", "fa4", "triton", "flashinfer", "trtllm_mha",
                          "cutedsl_mla", "tokenspeed_mla", "aiter", "hpc_ops", "flex_attention"],
    "prefill_attention_backend": ["fa3", "fa4", "flashinfer", "trtllm_mha", "cutedsl_mla", "triton"],
    "decode_attention_backend": ["fa3", "fa4", "flashinfer", "trtllm_mha", "trtllm_mla", "triton"],
    "enable_deterministic_inference": [True, False],
    "prefill_kv_cache_dequant_dtype": ["fp8_e4m3", "nvfp4"],
    "speculative_draft_attention_backend": ["trtllm_mha", "fa3"],
    "tp_size": [1, 2],
    "dcp_size": [1, 2],
    "speculative_algorithm": ["EAGLE", "NEXTN"],
    "speculative_eagle_topk": [1, 4],
    "speculative_adaptive": [True, False],
}
OPTION_VALUES = {k: st.sampled_from(v) for k, v in VALUES.items()}
args_strategy = st.dictionaries(st.sampled_from(sorted(OPTION_VALUES)), st.just(None), max_size=6).flatmap(
    lambda d: st.fixed_dictionaries({k: OPTION_VALUES[k] for k in d}))
requests = st.tuples(st.sampled_from(PLATFORMS), st.sampled_from(range(len(MODELS))), args_strategy,
                     st.sampled_from([None, {"flashinfer": False}]))
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _resolve(engine, platform, model, args, fixes=True, installed=None):
    return resolve_request(engine, platform=platform, args=args, model=MODELS[model], fixes=fixes, installed=installed)


@SETTINGS
@given(requests)
def test_every_listed_fix_resolves(request):
    engine = get_engine()
    platform, model, args, installed = request
    res = _resolve(engine, platform, model, args, installed=installed)
    for conflict in res.conflicts:
        for fix in conflict.fixes:
            fixed = {k: v for k, v in args.items() if k not in fix.unset}
            fixed.update(fix.set)
            assert _resolve(engine, platform, model, fixed, fixes=False, installed=installed).ok, (args, fix)


@SETTINGS
@given(requests)
def test_fixes_differ_keep_to_the_family_say_what_else_changes_and_grow(request):
    """No two fixes of a conflict resolve alike, none picks a value of another device family, each
    one's ``also`` is what it changes besides what it sets or omits, and the smallest come first."""
    engine = get_engine()
    platform, model, args, installed = request
    res = _resolve(engine, platform, model, args, installed=installed)
    vendor = res.request.platform.vendor
    for conflict in res.conflicts:
        seen = []
        sizes = [len(f.set) + len(f.unset) for f in conflict.fixes]
        assert sizes == sorted(sizes), conflict.fixes
        for fix in conflict.fixes:
            assert not [v for v in fix.set.values() if isinstance(v, str) and _of_another_family(registry(), v, vendor)]
            fixed = {k: v for k, v in args.items() if k not in fix.unset}
            fixed.update(fix.set)
            out = _resolve(engine, platform, model, fixed, fixes=False, installed=installed)
            same = _configuration(engine.compiled, out.outcome)
            assert same not in seen, (args, fix)
            seen.append(same)
            for name, old, new in fix.also:
                assert name not in fix.set and name not in fix.unset
                assert (res.values[name], out.values[name]) == (old, new), (args, fix)


@SETTINGS
@given(requests)
def test_resolving_the_resolved_values_changes_nothing(request):
    engine = get_engine()
    platform, model, args, installed = request
    res = _resolve(engine, platform, model, args, fixes=False, installed=installed)
    if res.ok:
        # what the resolved launch line types (--format args): typing SGLang's default where it was left
        # untyped can change SGLang's answer (a typed --hicache-ratio turns the host-memory sizing off)
        again = _resolve(engine, platform, model, launch_values(res), fixes=False, installed=installed)
        assert again.ok and again.values == res.values


@SETTINGS
@given(requests, st.randoms(use_true_random=False))
def test_fact_order_never_changes_the_result(request, rnd):
    engine = get_engine()
    platform, model, args, installed = request
    base = _resolve(engine, platform, model, args, fixes=False, installed=installed)

    def shuffle(batch):
        batch = list(batch)
        rnd.shuffle(batch)
        return batch

    shuffled = run(engine.compiled, engine.durable, base.request, shuffle=shuffle)
    assert shuffled == base.outcome


@SETTINGS
@given(requests)
def test_durable_rules_and_the_reference_matcher_agree(request):
    engine = get_engine()
    platform, model, args, installed = request
    req = _resolve(engine, platform, model, args, fixes=False, installed=installed).request
    assert run(engine.compiled, engine.durable, req) == run(engine.compiled, engine.reference, req)


def test_rule_file_order_never_changes_the_result(tmp_path):
    """The same rules under other file names (so loaded in another order) resolve alike."""
    src = default_rules_dir()
    names = sorted(os.listdir(src))
    shuffled = names[::-1]
    dst = tmp_path / "rules"
    dst.mkdir()
    for i, name in enumerate(shuffled):
        shutil.copy(os.path.join(src, name), dst / f"{i:02d}-{name}")
    a, b = get_engine(), get_engine(str(dst))
    rnd = random.Random(7)
    for _ in range(40):
        platform, model = rnd.choice(PLATFORMS), rnd.randrange(len(MODELS))
        args = {k: rnd.choice(VALUES[k]) for k in rnd.sample(sorted(VALUES), 3)}
        ra, rb = _resolve(a, platform, model, args), _resolve(b, platform, model, args)
        assert ra.values == rb.values
        assert [c.rule.id for c in ra.conflicts] == [c.rule.id for c in rb.conflicts]
        fixes_a, fixes_b = ([[f.to_dict() for f in c.fixes] for c in r.conflicts] for r in (ra, rb))
        assert fixes_a == fixes_b


junk = st.one_of(st.none(), st.booleans(), st.integers(-5, 300), st.floats(allow_nan=True), st.text(max_size=12),
                 st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.one_of(st.sampled_from(sorted(OPTION_VALUES)), st.text(max_size=10)), junk, max_size=4),
       st.one_of(st.sampled_from(PLATFORMS), st.text(max_size=8)),
       st.one_of(st.sampled_from(MODELS),
                 st.dictionaries(st.sampled_from(["architectures", "index_topk", "learnable_sink"]), junk)))
def test_no_input_raises_anything_but_a_resolver_error(args, platform, model):
    try:
        resolve_request(get_engine(), platform=platform, args=args, model=model, fixes=False)
    except ResolverError as exc:
        assert str(exc)
