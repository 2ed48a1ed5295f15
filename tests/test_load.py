"""Under load: many threads give the same results as one; memory stays flat over many resolutions."""
import importlib.util
import os
from concurrent.futures import ThreadPoolExecutor

from resolver.api import get_engine, resolve_request
from resolver.platforms import PLATFORMS

from .conftest import ROOT

ARCHS = ["DeepseekV32ForCausalLM", "LlamaForCausalLM", "DeepseekV3ForCausalLM", "GlmMoeDsaForCausalLM"]
ARGS = [{}, {"kv_cache_dtype": "fp8_e4m3"}, {"enable_hisparse": True, "disable_radix_cache": True},
        {"attention_backend": "triton"}, {"dsa_decode_backend": "trtllm"}]
REQUESTS = [(p.name, arch, args) for p in PLATFORMS for arch in ARCHS for args in ARGS]


def _outcome(req):
    platform, arch, args = req
    res = resolve_request(get_engine(), platform=platform, model_arch=arch, args=args, fixes=False)
    return res.values, tuple(c.rule.id for c in res.conflicts), res.outcome.fired


def test_many_threads_give_the_same_results_as_one():
    one = [_outcome(r) for r in REQUESTS]
    with ThreadPoolExecutor(max_workers=8) as pool:
        many = list(pool.map(_outcome, REQUESTS * 2))
    assert many == one + one
    assert _outcome(REQUESTS[0]) == one[0]  # the engine stays usable after the storm


def _soak_module():
    spec = importlib.util.spec_from_file_location("soak", os.path.join(ROOT, "benchmarks", "soak.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_memory_stays_flat_over_many_resolutions():
    """A short soak (benchmarks/soak.py runs 100,000 by hand): after warm-up, the resident set
    does not grow by more than a couple of MiB over 1,200 resolutions."""
    warm, end = _soak_module().soak(1200, every=10**9, out=None)
    assert end - warm < 2.0, (warm, end)
