"""Typed provenance (issue 13): fact names are taken apart in one place, every fact's origin is data, and the
renderers are the only code that turns an origin into words."""
from __future__ import annotations

import ast
import os

import pytest

from resolver import resolve
from resolver.cli import main
from resolver.provenance import FactName, Origin, fact_name, kernel_fact, kernel_why_fact, typed_fact, user_fact
from resolver.wording import origin_text

from .conftest import ROOT

DSV32 = "DeepseekV32ForCausalLM"


@pytest.mark.parametrize("name, parts", [
    (user_fact("page_size"), FactName("user", "page_size")),
    (typed_fact("kv_cache_dtype"), FactName("typed", "kv_cache_dtype")),
    (kernel_fact("dsa_decode_backend"), FactName("kernel", "dsa_decode_backend")),
    (kernel_why_fact("dsa_decode_backend"), FactName("kernel_why", "dsa_decode_backend")),
    ("model.mla", FactName("model")),
    ("platform.vendor", FactName("platform")),
    ("installed.flashinfer", FactName("installed")),
    ("draft.architecture", FactName("draft")),
    ("page_size", FactName("other")),
])
def test_a_fact_name_is_taken_apart_in_one_place(name, parts):
    assert fact_name(name) == parts


def test_every_fact_of_a_resolution_has_a_typed_origin():
    res = resolve({"kv_cache_dtype": "fp8_e4m3"}, platform="h100", model_arch=DSV32, installed={"flashinfer": False})
    facts = res.outcome.facts
    assert all(isinstance(f.origin, Origin) for f in facts.values())
    assert facts["platform.vendor"].origin == Origin("platform", "flag", "sm90 (--platform h100)")
    assert facts[user_fact("kv_cache_dtype")].origin == Origin("flag", where="--kv-cache-dtype fp8_e4m3")
    assert facts[user_fact("page_size")].origin.kind == "not-typed"
    assert facts["installed.flashinfer"].origin.how == "given"
    assert facts["installed.flash_mla"].origin.how == "assumed"
    assert facts["model.architecture"].origin.field == "architectures[0]"
    assert facts["model.index_kpool"].origin.how == "absent"
    decided = facts["dsa_decode_backend"].origin
    assert decided.kind == "rule" and decided.how == "default" and decided.rule.file.startswith("rules/")
    verdict = facts[kernel_fact("dsa_decode_backend")].origin
    assert verdict.kind == "kernel" and verdict.adapter == "flashmla"
    # what JSON and text say is the renderer's wording of that data
    assert res.to_dict()["facts"]["platform.vendor"] == {"name": "platform.vendor", "value": "nvidia",
                                                         "source": "platform", "origin": "sm90 (--platform h100)"}
    assert origin_text(verdict) == "kernel adapter flashmla"


def test_a_model_field_absent_without_a_config_says_so():
    res = resolve({}, platform="h100", model_arch="SomeNewForCausalLM")
    assert origin_text(res.outcome.facts["model.index_kpool"].origin) == "--model-arch alone gives no index_kpool"


def test_a_typed_value_a_rule_normalised_is_not_labelled_as_set_by_you(capsys):
    import io

    out, err = io.StringIO(), io.StringIO()
    main(["--platform", "h100", "--model-arch", "LlamaForCausalLM", "--enable-dp-attention"], out, err)
    line = next(x for x in out.getvalue().splitlines() if x.strip().startswith("enable_dp_attention"))
    assert "false" in line and "you set true; normalised by adjust.parallel.enable-dp-attention-off" in line
    out = io.StringIO()
    main(["--platform", "h100", "--model-arch", "LlamaForCausalLM", "--page-size", "64"], out, err)
    assert "(set by you)" in next(x for x in out.getvalue().splitlines() if x.strip().startswith("page_size"))


_PREFIXES = ("user.", "typed.", "kernel.", "_why", "detected", ": ")


def _sentence_parsing(path: str) -> list[str]:
    """Calls that take apart a fact name or a sentence by hand: name.startswith("user."), why.split(": ")..."""
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read(), path)
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("startswith", "endswith", "split", "removesuffix", "removeprefix")):
            for arg in node.args:
                consts = [arg] if isinstance(arg, ast.Constant) else list(getattr(arg, "elts", ()))
                if any(isinstance(c, ast.Constant) and isinstance(c.value, str) and c.value in _PREFIXES
                       for c in consts):
                    found.append(f"{os.path.basename(path)}:{node.lineno} {ast.unparse(node)}")
    return found


def test_no_module_parses_a_fact_name_or_a_sentence_by_hand():
    package = os.path.join(ROOT, "resolver")
    found = []
    for folder, _, files in os.walk(package):
        for f in files:
            if f.endswith(".py") and f != "provenance.py":
                found += _sentence_parsing(os.path.join(folder, f))
    assert found == []


def test_the_check_finds_a_hand_parsed_name(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text('def f(name, why):\n    return name.startswith(("user.", "typed.")), why.split(": ", 1)\n')
    assert len(_sentence_parsing(str(bad))) == 2
