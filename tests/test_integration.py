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
                          check=False, env={**os.environ, "NO_COLOR": "1"})


def test_the_example_launcher_starts_with_resolved_values():
    run = _launch("--model-path", LLAMA, "--platform", "h100", "--kv-cache-dtype", "fp8_e5m2")
    assert run.returncode == 0, run.stderr
    # page_size: no rule decided (the option's default), written into the flag the integration added
    assert "attention_backend=triton kv_cache_dtype=fp8_e5m2 page_size=1" in run.stdout
    assert "INFO resolver: attention_backend = triton (adjustment rule adjust.attention.fa3-fp8-e5m2" in run.stderr


def test_the_example_launcher_refuses_a_conflict_with_the_full_report():
    run = _launch("--model-path", LLAMA, "--platform", "b200", "--attention-backend", "fa3")
    assert run.returncode == 1 and "starting server" not in run.stdout
    assert "The fa3 attention kernel cannot run on sm100" in run.stderr and "to fix, any one of:" in run.stderr


def test_help_shows_each_resolver_flag_once():
    run = _launch("--help")
    assert run.returncode == 0
    for opt in get_engine().pack.options.values():
        if opt.env or opt.no_cli:  # environment variables and derived fields are no flags of the launcher
            continue
        # argparse's option lines (a flag may be a prefix of another: --speculative-adaptive(-config))
        declared = re.findall(rf"^  {re.escape(opt.flag)}(?![\w-])", run.stdout, re.MULTILINE)
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
    parsed = dict(vars(ns))
    with pytest.raises(ConflictError) as info:
        resolve_namespace(parser, ns, model=DSV32)
    assert vars(ns) == parsed  # nothing written on a conflict
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
    assert subprocess.run([sys.executable, "-c", code], check=False, timeout=60).returncode == 0


def _sglang_shaped_parser():
    """Flags declared the way SGLang's parser declares them: defaults of its own, None for unset."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--disaggregation-decode-host-receive-threshold", type=float, default=1.0)
    parser.add_argument("--prefill-kv-cache-dequant-dtype", default="auto")
    parser.add_argument("--page-size", type=int, default=None)
    parser.add_argument("--attention-backend", default=None)
    parser.add_argument("--kv-cache-dtype", default="auto")
    # a launcher default the resolution has no value for
    parser.add_argument("--dsa-decode-backend", default="flashmla_kv")
    add_resolver_arguments(parser)
    return parser


def test_only_decisions_are_written_and_a_launchers_defaults_survive():
    parser = _sglang_shaped_parser()
    ns = parser.parse_args(["--platform", "h100"])
    res = resolve_namespace(parser, ns, model=LLAMA)
    assert ns.attention_backend == res.values["attention_backend"] == "fa3"  # a default rule decided it
    assert res.derivations["page_size"].source == "fallback" and res.values["page_size"] == 1
    assert ns.page_size is None  # the launcher's "unset" stays: it applies its own default
    assert res.values["dsa_decode_backend"] is None and ns.dsa_decode_backend == "flashmla_kv"  # never None
    assert ns.disaggregation_decode_host_receive_threshold == 1.0 and ns.prefill_kv_cache_dequant_dtype == "auto"


def test_none_is_never_written_over_a_launchers_default_even_when_the_rules_declare_none(rules_dir):
    # the original bug: an option declared without a default resolved to None and was written over 1.0
    rules = rules_dir({"options.yaml": """\
        schema: resolver/1
        doc: One option with no declared default.
        rules:
          - id: option.disaggregation_decode_host_receive_threshold
            kind: option
            doc: Host receive threshold of a decode server.
            name: disaggregation_decode_host_receive_threshold
            flag: --disaggregation-decode-host-receive-threshold
            type: float
            help: Host receive threshold.
        """})
    parser = argparse.ArgumentParser()
    parser.add_argument("--disaggregation-decode-host-receive-threshold", type=float, default=1.0)
    add_resolver_arguments(parser, rules=rules)
    ns = parser.parse_args(["--platform", "h100"])
    res = resolve_namespace(parser, ns, model=LLAMA, rules=rules)
    assert res.values["disaggregation_decode_host_receive_threshold"] is None
    assert ns.disaggregation_decode_host_receive_threshold == 1.0


@pytest.mark.parametrize("argv, model", [
    (["--platform", "h100"], LLAMA),
    (["--platform", "h100", "--kv-cache-dtype", "fp8_e5m2", "--attention-backend", "fa3"], LLAMA),  # adjusted
    (["--platform", "h100", "--page-size", "1", "--attention-backend", "nsa"], DSV32),  # adjusted, respelled
    (["--platform", "b200"], DSV32),
])
def test_the_written_back_namespace_resolves_to_itself(argv, model):
    for parser in (_sglang_shaped_parser(), _parser_with_own_kv_flag()):
        ns = parser.parse_args(argv)
        res = resolve_namespace(parser, ns, model=model)
        again = argparse.Namespace(**vars(ns))
        res2 = resolve_namespace(parser, again, model=model)
        assert vars(again) == vars(ns) and res2.values == res.values, (argv, parser)


def test_a_typed_deprecated_spelling_is_written_as_the_resolution_reads_it():
    parser = _sglang_shaped_parser()
    ns = parser.parse_args(["--platform", "h100", "--attention-backend", "nsa", "--page-size", "1"])
    resolve_namespace(parser, ns, model=DSV32)
    assert ns.attention_backend == "dsa" and ns.page_size == 64  # SGLang forces 64-token pages for DSA on CUDA


def test_the_model_is_read_from_the_launchers_model_path_when_none_is_given():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model-path")
    add_resolver_arguments(parser)
    ns = parser.parse_args(["--platform", "h200", "--model-path", "deepseek-ai/DeepSeek-V3.2"])  # catalogued
    res = resolve_namespace(parser, ns)
    assert ns.attention_backend == res.values["attention_backend"] == "dsa"
    assert ns.model_path == "deepseek-ai/DeepSeek-V3.2"  # read, never rewritten
