"""Fields SGLang 0.5.23 declares with no flag (rules/derived.yaml): the draft's boundary reduction and the
hybrid-Mamba radix cache switch, options with ``no_cli: true``.

Every case was asked of the oracle (SGLang 0.5.23 on CPU, docs/parity.md) on sm90 with the catalogue config
and, where given, the differential's draft checkpoint (tools/sglang_diff.py DRAFTS);
``test_the_table_is_sglangs_answer`` asks it again when it is installed.
"""

import pytest

from resolver.api import get_engine, resolve_request
from resolver.catalogue import catalogue
from resolver.errors import InputError
from resolver.launch_line import launch_argv
from tools.sglang_diff import DRAFTS, ORACLE_DRAFT_DIR

from .conftest import CATALOGUE
from .oracle import ORACLE, oracle_python

MODELS = {"llama": "meta-llama/Llama-3.1-8B-Instruct", "qwen3": "Qwen/Qwen3-8B",
          "next": "Qwen/Qwen3-Next-80B-A3B-Instruct"}
DRAFT = {"speculative_draft_model_path": ORACLE_DRAFT_DIR}

# (model, draft, args) -> SGLang's (boundary_reduction, speculative_boundary_reduction, uses_mamba_radix_cache)
CASES = [
    ("llama", None, {}, ("rs+rsv", "rs+rsv", False)),
    ("qwen3", None, {}, ("ar", "ar", False)),
    # a separate draft picks its own reduction: the DFlash draft is a qwen3 model (ar), the Llama heads are not
    ("llama", "DFLASH", {"speculative_algorithm": "DFLASH", **DRAFT}, ("rs+rsv", "ar", False)),
    ("qwen3", "EAGLE", {"speculative_algorithm": "EAGLE", **DRAFT}, ("ar", "rs+rsv", False)),
    ("qwen3", "STANDALONE", {"speculative_algorithm": "STANDALONE", **DRAFT}, ("ar", "rs+rsv", False)),
    # a typed reduction is the draft's too
    ("llama", "DFLASH", {"speculative_algorithm": "DFLASH", "boundary_reduction": "rs", **DRAFT}, ("rs", "rs", False)),
    # NGRAM has no draft checkpoint: the target's
    ("qwen3", None, {"speculative_algorithm": "NGRAM"}, ("ar", "ar", False)),
    # Qwen3-Next runs the hybrid-Mamba radix cache, unless the radix cache is off
    ("next", None, {}, ("rs+rsv", "rs+rsv", True)),
    ("next", None, {"disable_radix_cache": True}, ("rs+rsv", "rs+rsv", False)),
]


def _resolve(model, draft, args):
    return resolve_request(get_engine(), platform="sm90", model=dict(CATALOGUE[MODELS[model]]), args=args,
                           draft_model=DRAFTS[draft] if draft else None, fixes=False)


@pytest.mark.parametrize("model, draft, args, expected", CASES)
def test_derived_fields(model, draft, args, expected):
    res = _resolve(model, draft, args)
    assert not res.conflicts
    got = tuple(res.values[n]
                for n in ("boundary_reduction", "speculative_boundary_reduction", "uses_mamba_radix_cache"))
    assert got == expected


@pytest.mark.parametrize("name, value", [("speculative_boundary_reduction", "ar"), ("uses_mamba_radix_cache", True)])
def test_a_field_without_a_flag_cannot_be_typed(name, value):
    with pytest.raises(InputError, match="no flag"):
        resolve_request(get_engine(), platform="sm90", model=dict(CATALOGUE[MODELS["next"]]), args={name: value})


def test_the_write_back_never_spells_a_field_without_a_flag():
    res = _resolve("llama", "DFLASH", {"speculative_algorithm": "DFLASH", **DRAFT})
    assert res.values["speculative_boundary_reduction"] == "ar"
    argv = launch_argv(res)
    assert not any("boundary-reduction" in a for a in argv), argv
    # every flag of a hybrid-Mamba launch line is one SGLang's parser has
    flags = {f for entry in catalogue().by_dest.values() for f in entry.flags}
    argv = launch_argv(_resolve("next", None, {}))
    assert argv and all(a in flags for a in argv if a.startswith("--")), argv


def test_the_table_is_sglangs_answer():
    """Ask SGLang 0.5.23 (the oracle) the table again."""
    python = oracle_python()
    from tools.sglang_diff import ask_oracle

    requests = []
    for n, (model, draft, args, _) in enumerate(CASES):
        r = {"id": f"d{n}", "platform": "sm90", "model": CATALOGUE[MODELS[model]], "args": args}
        if draft:
            r["draft_model"] = DRAFTS[draft]
        requests.append(r)
    answers = {rid: a["sglang"] for rid, a in ask_oracle(requests, python, ORACLE).items()}
    for n, (model, draft, args, expected) in enumerate(CASES):
        got = answers[f"d{n}"]
        assert got["status"] == "resolved", (model, args, got)
        values = got["values"]
        assert (values["boundary_reduction"], values["speculative_boundary_reduction"],
                values["uses_mamba_radix_cache"]) == expected, (model, draft, args)
