"""SGLang's memory-driven defaults (rules/memory.yaml) and the platform memory they read.

Every expected value was asked of the oracle (SGLang 0.5.23 on CPU, docs/parity.md) with the
Llama 3.1 8B catalogue config: the platform, ``platform_overrides.gpu_memory_gb`` where given, and
the typed arguments shown.
"""
import io
import json

import pytest

from resolver.api import get_engine, resolve_request
from resolver.batch import resolve_line
from resolver.cli import main
from resolver.errors import InputError
from resolver.platforms import find_platform

from .conftest import CATALOGUE

LLAMA = CATALOGUE["meta-llama/Llama-3.1-8B-Instruct"]


@pytest.mark.parametrize("platform, memory, expected", [
    ("sm90", None, 8192), ("sm90", 141, 8192), ("sm120", 32, 4096), ("sm80", 40, 4096), ("gfx942", None, 16384),
    ("sm90", 16, 2048),
])
def test_the_chunk_size_follows_the_gpu_memory(platform, memory, expected):
    res = resolve_request(get_engine(), platform=platform, model=dict(LLAMA), gpu_memory_gb=memory, fixes=False)
    assert res.values["chunked_prefill_size"] == expected


@pytest.mark.parametrize("args, refused", [
    ({"chunked_prefill_size": 1000, "page_size": 64}, True),
    ({"chunked_prefill_size": 1000, "page_size": 64, "disaggregation_mode": "decode"}, False),
    ({"chunked_prefill_size": -1, "page_size": 64}, False),
])
def test_a_chunk_holds_whole_pages(args, refused):
    res = resolve_request(get_engine(), platform="sm90", model=dict(LLAMA), args=args)
    assert ("conflict.memory.chunk-page" in {c.rule.id for c in res.conflicts}) == refused
    if refused:
        (conflict,) = res.conflicts
        assert any(f.unset == ("chunked_prefill_size",) for f in conflict.fixes)


def test_an_alias_names_its_cards_memory():
    assert (find_platform("h100").gpu_memory_gb, find_platform("h200").gpu_memory_gb) == (80, 141)
    assert (find_platform("b200").gpu_memory_gb, find_platform("mi300x").gpu_memory_gb) == (180, 192)
    assert find_platform("h200").name == "sm90"


def test_the_memory_can_be_given_on_the_command_line_and_in_a_batch_line():
    out = io.StringIO()
    assert main(["--platform", "h100", "--gpu-memory-gb", "32", "--model-arch", "LlamaForCausalLM", "--format", "json"],
                out, io.StringIO()) == 0
    assert json.loads(out.getvalue())["values"]["chunked_prefill_size"] == 4096
    line = json.dumps({"platform": "sm90", "model": LLAMA, "platform_overrides": {"gpu_memory_gb": 16}})
    assert resolve_line(get_engine(), line, fixes=False)["values"]["chunked_prefill_size"] == 2048


@pytest.mark.parametrize("bad", [0, -4, True, "80", 1e9])
def test_a_bad_memory_size_is_an_input_error(bad):
    with pytest.raises(InputError):
        resolve_request(get_engine(), platform="sm90", model_arch="LlamaForCausalLM", gpu_memory_gb=bad)


@pytest.mark.parametrize("args, expected", [
    ({"attn_dp_size": 8, "tp_size": 8}, 1024),                                 # 8192 for the card, per rank
    ({"attn_dp_size": 4, "tp_size": 8, "chunked_prefill_size": 4096}, 1024),    # a typed size too, with a warning
    ({"dp_size": 8, "enable_dp_attention": True, "tp_size": 8}, 1024),         # the deprecated spelling
])
def test_attention_dp_divides_the_chunk_among_its_ranks(args, expected):
    # tests/test_sglang_roundtrip.py checks the same against SGLang's parser and resolution (DeepSeek V3.2 on h200)
    res = resolve_request(get_engine(), platform="h200", model=dict(LLAMA), args=args, fixes=False)
    assert res.values["chunked_prefill_size"] == expected
    (step,) = res.derivations["chunked_prefill_size"].adjustments
    assert step.rule.id == "adjust.memory.chunk-per-attention-dp-rank"
    assert ("chunked prefill size is adjusted" in " ".join(w.message for w in res.warnings)) == ("chunked_prefill_size" in args)
