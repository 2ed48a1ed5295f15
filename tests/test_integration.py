"""The argparse integration and the example launcher that embeds it."""
import argparse
import logging
import os
import re
import subprocess
import sys

import pytest

from resolver import ConflictError
from resolver.api import get_engine
from resolver.integrations.argparse import add_resolver_arguments, resolve_namespace

from .conftest import ROOT, SEED_ARGS

LAUNCHER = os.path.join(ROOT, "examples", "launch_server.py")
LLAMA = os.path.join(ROOT, "tests", "fixtures", "llama-config.json")
DSV32 = {"architectures": ["DeepseekV32ForCausalLM"], "index_topk": 2048, "kv_lora_rank": 512}


def _launch(*argv):
    return subprocess.run([sys.executable, LAUNCHER, *argv], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "NO_COLOR": "1"})


def test_the_example_launcher_starts_with_resolved_values():
    run = _launch("--model-path", LLAMA, "--platform", "h100", "--kv-cache-dtype", "fp8_e5m2")
    assert run.returncode == 0, run.stderr
    assert "attention_backend=triton kv_cache_dtype=fp8_e5m2" in run.stdout
    assert "INFO resolver: attention_backend = triton (adjustment rule adjust.attention.fa3-fp8-e5m2" in run.stderr


def test_the_example_launcher_refuses_a_conflict_with_the_full_report():
    run = _launch("--model-path", LLAMA, "--platform", "b200", "--attention-backend", "fa3")
    assert run.returncode == 1 and "starting server" not in run.stdout
    assert "The fa3 attention kernel cannot run on sm100" in run.stderr and "to fix, any one of:" in run.stderr


def test_help_shows_each_resolver_flag_once():
    run = _launch("--help")
    assert run.returncode == 0
    for opt in get_engine().pack.options.values():
        declared = re.findall(rf"^  {re.escape(opt.flag)}\b", run.stdout, re.M)  # argparse's option lines
        assert len(declared) == 1, (opt.flag, declared)


def _parser_with_own_kv_flag():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kv-cache-dtype", dest="kv_dtype", default="fp8_e4m3")  # a launcher default of its own
    add_resolver_arguments(parser)
    return parser


def test_an_existing_flag_is_reused_and_its_default_is_not_a_user_choice(caplog):
    parser = _parser_with_own_kv_flag()
    ns = parser.parse_args(["--platform", "h100"])
    with caplog.at_level(logging.INFO, logger="resolver"):
        res = resolve_namespace(parser, ns, model=DSV32)
    assert res.derivations["kv_cache_dtype"].source != "user"  # fp8_e4m3 was the launcher's default, not typed
    assert ns.kv_dtype == res.values["kv_cache_dtype"] and ns.dsa_decode_backend == res.values["dsa_decode_backend"]
    decided = [r.getMessage().split(" = ")[0] for r in caplog.records]
    assert "dsa_decode_backend" in decided and len(decided) == len(set(decided))  # each decision logged once


def test_a_typed_value_on_a_reused_flag_counts_and_a_conflict_raises():
    parser = _parser_with_own_kv_flag()
    argv = ["--platform", "h100", "--kv-cache-dtype", "bfloat16", "--enable-hisparse", "--disable-radix-cache",
            "--dsa-decode-backend", "flashmla_kv"]
    ns = parser.parse_args(argv)
    with pytest.raises(ConflictError) as info:
        resolve_namespace(parser, ns, model=DSV32)
    assert info.value.resolution.derivations["kv_cache_dtype"].source == "user"
    assert {c.rule.id for c in info.value.conflicts} == {"conflict.hisparse.decode.cuda-bf16"}


def test_the_seed_case_through_the_integration_is_the_command_lines_conflict():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kv-cache-dtype", default="auto")
    add_resolver_arguments(parser)
    argv = ["--platform", "h100"] + [a for k, v in SEED_ARGS.items()
                                     for a in ([f"--{k.replace('_', '-')}"] + ([] if v is True else [str(v)]))]
    with pytest.raises(ConflictError) as info:
        resolve_namespace(parser, parser.parse_args(argv), model=DSV32)
    assert {c.rule.id for c in info.value.conflicts} == {"conflict.hisparse.decode.cuda-fp8",
                                                         "conflict.dsa.tilelang-fp8.hisparse"}


def test_importing_the_integration_sets_up_no_logging():
    code = ("import logging, resolver.integrations.argparse; "
            "assert not logging.getLogger('resolver').handlers and not logging.getLogger().handlers")
    assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == 0
