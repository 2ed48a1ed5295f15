"""The SGLang flag table: made from SGLang's catalogue by tools/sync_flags.py, read as SGLang reads flags."""
from __future__ import annotations

import importlib.util
import json
import os

import pytest

from resolver.catalogue import catalogue
from resolver.errors import InputError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCE = os.path.join(os.path.dirname(ROOT), "shared", "reference", "sglang-0.5.23-flags.json")


def _sync_module():
    spec = importlib.util.spec_from_file_location("sync_flags", os.path.join(ROOT, "tools", "sync_flags.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not os.path.exists(SOURCE), reason="SGLang's flag catalogue is not beside the checkout")
def test_shipped_table_is_what_the_script_makes_of_sglangs_catalogue():
    with open(SOURCE, encoding="utf-8") as fh:
        made = _sync_module().table(json.load(fh))
    with open(os.path.join(ROOT, "resolver", "data", "sglang_flags.json"), encoding="utf-8") as fh:
        shipped = json.load(fh)
    assert made == shipped, "re-run: python tools/sync_flags.py SGLANG_FLAGS.json > resolver/data/sglang_flags.json"


def test_every_sglang_flag_and_alias_is_known():
    c = catalogue()
    assert len(c.actions) == 531
    assert len(c.by_flag) == 559
    assert c.by_flag["--tensor-parallel-size"].dest == "tp_size"
    assert c.by_flag["--model"].dest == "model_path"
    assert c.by_flag["--ep"].dest == "ep_size"


@pytest.mark.parametrize("typed, flag", [
    ("--tp", "--tp-size"), ("--dp", "--dp-size"), ("--ep", "--ep"), ("--mem", "--mem-fraction-static"),
    ("--moe-a2a", "--moe-a2a-backend"), ("--model", "--model"),
])
def test_unique_prefixes_expand_as_argparse_does(typed, flag):
    assert catalogue().expand(typed) == flag


def test_ambiguous_and_unknown_prefixes():
    hits = catalogue().expand("--kv")
    assert isinstance(hits, list) and "--kv-cache-dtype" in hits and len(hits) > 1
    assert catalogue().expand("--no-such-flag-anywhere") is None


@pytest.mark.parametrize("dest, raw, typed", [
    ("tp_size", "8", 8), ("mem_fraction_static", "0.8", 0.8), ("context_length", "128k", 128000),
    ("context_length", "1Ki", 1024), ("enable_tf32_matmul", "false", False), ("quantization", "fp8", "fp8"),
    ("json_model_override_args", '{"a": 1}', '{"a": 1}'), ("radix_eviction_policy_config", '{"a": 1}', {"a": 1}),
    ("cuda_graph_bs_decode", ["1", "2"], [1, 2]), ("quantization_param_path", "None", None),
])
def test_values_typed_as_sglang_types_them(dest, raw, typed):
    assert catalogue().coerce(dest, raw) == typed


@pytest.mark.parametrize("dest, raw", [
    ("tp_size", "eight"), ("quantization", "fp9"), ("context_length", "1.5Ki"), ("enable_tf32_matmul", "maybe"),
    ("tp_size", True),
])
def test_bad_values_are_input_errors(dest, raw):
    with pytest.raises(InputError):
        catalogue().coerce(dest, raw)


def test_rule_options_agree_with_sglangs_flags():
    """Each option the rules declare is SGLang's field, flag and default (page_size: SGLang's
    default is None and its pipeline always decides it, as the rules do)."""
    from resolver.loader import load_rules

    c = catalogue()
    for name, opt in load_rules().options.items():
        if opt.env:  # an environment variable, not a flag (tests/test_env.py)
            continue
        if opt.no_cli:  # a field SGLang declares with no flag (Arg(no_cli=True)): not in its parser
            assert name not in c.by_dest and not opt.flag, name
            continue
        assert name in c.by_dest, name
        assert opt.flag in c.by_dest[name].flags, (name, opt.flag)
        # a json option's default is what SGLang declares when it is not typed ({} or []), not argparse's None
        if name != "page_size" and not opt.opaque:
            assert opt.default == c.default(name), (name, opt.default, c.default(name))


def test_options_no_rule_reads_come_from_the_catalogue():
    from resolver.api import get_engine

    engine = get_engine()
    # an option a rule decides (a default or an adjustment sets it) is the rules' too
    decided = {n for d in engine.pack.defaults for n in d.set} | {a.option for a in engine.pack.adjusts}
    # a computed value reads its names outside the engine (resolver/expressions.py)
    computed = {n for c in engine.pack.computes.values() for n in c.value.names}
    # a json option no rule may read, a field SGLang decides at start-up, one it declares without a flag, and one its
    # pipeline writes (resolver/data/sglang_checks.json derived_fields) are declared to be reported (issue 24)
    with open(os.path.join(ROOT, "resolver", "data", "sglang_checks.json"), encoding="utf-8") as fh:
        derived = set(json.load(fh)["derived_fields"])
    reported = {n for n, o in engine.pack.options.items() if o.opaque or o.not_decided or o.no_cli} | derived
    unread = [n for n in engine.pack.options
              if not {n, f"user.{n}", f"typed.{n}"} & (engine.compiled.reads | computed)
              and n not in decided | reported]
    assert unread == [], f"declare in rules/ only what a rule reads or decides: {unread}"
