"""Speculative decoding (rules/speculative.yaml) against SGLang 0.5.23 itself.

Every expected value here was confirmed with the oracle (SGLang 0.5.23's own resolution run on
CPU, docs/parity.md): ``tests/data/speculative-oracle.json`` holds 710 oracle answers (a sample of
the oracle's ``spec`` grid plus hand-written requests for the checks the grid does not reach),
built by ``tools/speculative_oracle_cases.py``.  The named tests below pick some of those answers
by case id and assert the behaviour on both sides (SGLang's answer and ours), so that a regression
reads as a behaviour, not a row.
"""
import collections
import json
import os
import re

import pytest

from resolver.api import get_engine, resolve_request

from .conftest import ROOT

DATA = os.path.join(ROOT, "tests", "data", "speculative-oracle.json")
with open(DATA, encoding="utf-8") as _fh:
    ORACLE = json.load(_fh)
MODELS, DRAFTS = ORACLE["models"], ORACLE["drafts"]
LLAMA = MODELS["llama31_8b"]

#: SGLang's error (message start) -> the rule that refuses it here
REFUSED_BY = {
    "": "conflict.spec.eagle.partial-params",  # the empty AssertionError of _handle_eagle_family
    "'>' not supported between": "conflict.spec.eagle.steps-without-topk",
    "DFLASH speculative decoding requires": "conflict.spec.dflash.draft-path",
    "speculative_eagle_topk(": "conflict.spec.ngram.page-tree",
    "speculative_eagle_topk > 1 with page_size": "conflict.spec.eagle.page-tree",
    "trtllm_mha backend only supports topk": "conflict.spec.eagle.trtllm-mha-topk",
    "--speculative-use-rejection-sampling requires": "conflict.spec.rejection-sampling.topk",
    "--speculative-use-rejection-sampling is only": "conflict.spec.rejection-sampling.algorithm",
    "--speculative-use-rejection-sampling is incompatible": "conflict.spec.rejection-sampling.thresholds",
    "--speculative-num-steps=": "conflict.spec.adaptive-steps",
    "Both --speculative-num-draft-tokens": "conflict.spec.dflash.block-size-mismatch",
    "DFLASH requires --speculative-dflash-block-size": "conflict.spec.dflash.block-size-positive",
    "--speculative-draft-window-size must be >=": "conflict.spec.dflash.window-size",
    "--speculative-draft-window-size must be positive": "conflict.spec.window-size-positive",
    "--speculative-draft-sink-size must be": "conflict.spec.sink-size-non-negative",
    "--speculative-draft-sink-size requires": "conflict.spec.sink-needs-window",
    "Currently DFLASH speculative decoding only supports pp_size": "conflict.spec.dflash.pp",
    "DFLASH with dp attention requires": "conflict.spec.dflash.dp-lm-head",
    "--speculative-use-block-verification only": "conflict.spec.block-verification.algorithm",
    "--disaggregation-decode-enable-radix-cache is incompatible": "conflict.spec.pd-decode-radix-cache",
    "Pipeline parallelism currently only supports EAGLE": "conflict.spec.pp.algorithm",
    "PP + speculative decoding (MTP)": "conflict.spec.pp.prefill-only",
    "--speculative-ngram-external-sam-budget must be positive": "conflict.spec.ngram.sam-budget-positive",
    "speculative_ngram_external_sam_budget must be less": "conflict.spec.ngram.sam-budget-max",
    "--speculative-ngram-external-corpus-max-tokens": "conflict.spec.ngram.corpus-max-tokens-positive",
    "Currently ngram speculative decoding does not support dp": "conflict.spec.ngram.attn-dp",
    "Currently standalone speculative decoding does not support dp": "conflict.spec.standalone.attn-dp",
    "Speculative decoding is currently not supported with Flex": "conflict.attention.flex-speculative",
}


def resolve(platform, model, args):
    return resolve_request(get_engine(), platform=platform, model=model, args=args, fixes=False)


def _draft_of(case):
    """The draft config the oracle was given (its draft folder is rewritten by every oracle run: never read)."""
    return DRAFTS[case["draft"]] if case.get("draft") else {}


def rules_of(res):
    return {c.rule.id for c in res.conflicts}


# --- every oracle case ----------------------------------------------------------------------
def _refused_by(message):
    if message == "":
        return REFUSED_BY[""]
    return next((rule for start, rule in REFUSED_BY.items() if start and message.startswith(start)), None)


def _compare(case, res):
    sg = case["sglang"]
    rules = rules_of(res)
    if sg["status"] == "error":
        if not res.conflicts:
            return f"SGLang refused ({sg['message'][:80]!r}) but we resolved"
        rule = _refused_by(sg["message"])
        if rule is not None and rule not in rules:
            return f"refused without {rule}: {sorted(rules)}"
        return None  # an error of another step (trtllm platform, quantization, ...): refused, by its own rule
    if res.conflicts:
        # the kernel adapters refuse kernels that cannot run where SGLang does not check (docs/divergences.md, K)
        return None if all(r.startswith("conflict.kernel.") for r in rules) else f"we refused: {sorted(rules)}"
    diff = {f: (v, res.values.get(f)) for f, v in sg["values"].items()
            if not (f == "attention_backend" and v is None) and res.values.get(f) != v}
    return f"values differ (sglang, ours): {diff}" if diff else None


def test_every_oracle_case():
    problems, outcomes = collections.Counter(), collections.Counter()
    examples = {}
    for case in ORACLE["cases"]:
        model = MODELS[case["model"]]
        res = resolve_request(get_engine(), platform=case["platform"], model=model, args=case["args"], fixes=False,
                              draft_model=_draft_of(case))
        why = _compare(case, res)
        outcomes[(case["sglang"]["status"], "conflict" if res.conflicts else "resolved")] += 1
        if why:
            key = re.sub(r"\d+", "N", why)[:200]
            problems[key] += 1
            examples.setdefault(key, case["id"])
    assert not problems, "\n".join(f"{n} x {why} (e.g. {examples[why]})" for why, n in problems.most_common(10))
    assert len(ORACLE["cases"]) == 710
    assert outcomes[("resolved", "resolved")] > 400 and outcomes[("error", "conflict")] > 200


# --- named behaviours, each pinned to its oracle answer ---------------------------------------
CASES = {c["id"]: c for c in ORACLE["cases"]}
SPEC = ("speculative_algorithm", "speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens")


def run(case_id):
    """The oracle case and our resolution of its request."""
    case = CASES[case_id]
    res = resolve_request(get_engine(), platform=case["platform"], model=MODELS[case["model"]], args=case["args"],
                          fixes=False, draft_model=_draft_of(case))
    return case["sglang"], res


def check(case_id, **expected):
    """``expected`` holds for SGLang (the oracle's answer) and for us."""
    sg, res = run(case_id)
    assert sg["status"] == "resolved"
    assert not res.conflicts, rules_of(res)
    for field, value in expected.items():
        assert (sg["values"][field], res.values[field]) == (value, value), field


def spec(case_id, algorithm, steps, topk, tokens):
    check(case_id, **dict(zip(SPEC, (algorithm, steps, topk, tokens), strict=True)))


@pytest.mark.parametrize("case_id, expected", [
    ("c0325-auto", ("EAGLE3", 5, 4, 8)),       # Llama target: the automatic (5, 4, 8) tree
    ("c0333-auto", ("EAGLE3", 5, 4, 8)),
    ("c0326-auto", ("STANDALONE", 3, 1, 4)),   # STANDALONE: always (3, 1, 4)
    ("c0323-auto", ("EAGLE3", 3, 1, 4)),       # other targets: (3, 1, 4)
    ("c0324-auto", ("EAGLE", 3, 1, 4)),        # NEXTN is EAGLE
    ("c0178-chain", ("EAGLE", 7, 1, 8)),       # a linear chain verifies steps + 1 tokens, whatever was typed
    ("c0179-chain", ("EAGLE", 20, 1, 21)),
    ("c0181-chain", ("EAGLE", 12, 1, 13)),
    ("c0182-tree-no-tokens", ("EAGLE", 4, 2, None)),  # a typed tree keeps its (unset) draft tokens
    ("c0120-adaptive", ("EAGLE", 3, 1, 4)),    # adaptive: the middle of candidate steps [0, 1, 3, 5, 7], top-k 1
    ("c0129-adaptive", ("EAGLE", 0, 1, 1)),
    ("c0141-adaptive", ("EAGLE", 5, 4, 8)),    # adaptive off under attention DP: the automatic tree
    ("c0176-adaptive-off", ("DFLASH", 1, 1, 16)),  # DFLASH: one step, top-k 1, a block of 16
    ("c0072-ngram", ("NGRAM", 1, 10, 12)),     # NGRAM: steps = draft tokens // breadth, top-k = breadth
    ("c0042-ngram", ("NGRAM", 5, 3, 17)),
    ("c0082-ngram", ("NGRAM", 0, 16, 1)),
    ("c0096-ngram-x", ("NGRAM", 2, 10, 12)),   # typed steps stay
    ("c0116-ngram-x", ("NGRAM", 12, 1, 12)),
])
def test_parameters(case_id, expected):
    spec(case_id, *expected)


def test_ngram_breadth_overrides_a_typed_topk():
    typed = [c for c in ORACLE["cases"] if c["id"].endswith("-ngram") and c["args"].get("speculative_eagle_topk") == 4
             and c["sglang"]["status"] == "resolved"]
    assert len(typed) > 20
    for case in typed:
        check(case["id"], speculative_eagle_topk=case["args"]["speculative_ngram_max_bfs_breadth"])


def test_what_speculation_changes_elsewhere():
    check("c0098-ngram-x", enable_mixed_chunk=False, max_running_requests=48)  # NGRAM turns mixed chunks off
    check("c0273-sa-mixed", enable_mixed_chunk=False)                            # so does STANDALONE
    check("c0274-e-mixed", enable_mixed_chunk=True)                              # EAGLE keeps them
    check("c0317-mrr", max_running_requests=128)                                 # a typed cap stays
    check("c0298-nextn", speculative_use_rejection_sampling=True)   # ROCm: rejection sampling for EAGLE chains
    check("c0280-nextn", speculative_use_rejection_sampling=False)  # not on CUDA
    check("c0331-auto", speculative_use_rejection_sampling=False)   # not for EAGLE3
    check("c0174-adaptive-off", speculative_adaptive=False)         # adaptive is for EAGLE / EAGLE3 only
    assert resolve("sm90", LLAMA, {}).values["max_running_requests"] is None


@pytest.mark.parametrize("case_id, backend, page", [
    ("c0236-dflash", "fa4", 64),          # trtllm_mha attention on SM100: a non-causal draft falls back to fa4
    ("c0237-dflash", "flashinfer", 64),   # ... elsewhere to flashinfer
    ("c0227-dflash", "flashinfer", 64),   # a typed trtllm_mha draft sizes the pages first, then falls back
    ("c0188-dflash", "fa4", 64),
])
def test_dflash_draft_backend(case_id, backend, page):
    check(case_id, speculative_draft_attention_backend=backend, page_size=page)


def test_attention_default_reads_the_typed_topk():
    # SGLang picks the attention backend before its speculative step: EAGLE3 on Llama with nothing typed becomes a
    # (5, 4, 8) tree, but Hopper still runs fa3 (the top-k was unset when it chose)
    check("c0325-auto", attention_backend="fa3", speculative_eagle_topk=4)


# --- checks ---------------------------------------------------------------------------------
def test_every_refusal_template_is_exercised():
    """Each SGLang refusal of this step that the fixture holds comes with its rule (test_every_oracle_case)."""
    seen = {_refused_by(c["sglang"]["message"]) for c in ORACLE["cases"] if c["sglang"]["status"] == "error"}
    assert set(REFUSED_BY.values()) <= seen


def test_adaptive_falls_back_then_asserts():
    # _maybe_disable_adaptive: a typed tree turns adaptive off, and then the partial parameters assert
    sg, res = run("c0132-adaptive")
    assert sg["status"] == "error" and sg["message"] == "" and sg["type"] == "AssertionError"
    assert res.values["speculative_adaptive"] is False
    assert rules_of(res) == {"conflict.spec.eagle.partial-params"}
    assert [f.unset for c in resolve_request(get_engine(), platform="sm90", model=LLAMA,
                                             args=CASES["c0132-adaptive"]["args"]).conflicts for f in c.fixes]


# --- beyond any table: SGLang computes these (compute rules), so no bound on the numbers ------
# Each expected value was asked of the oracle (SGLang 0.5.23) on sm90 with the llama31_8b config:
# NGRAM 64 draft tokens at breadth 1 -> 64 steps; 45 tokens at breadth 20 (top-k 3 typed) -> 2
# steps, top-k 20; a corpus budget of 40 with 40 draft tokens is refused ("... - 1 (39)"), 39 passes.
@pytest.mark.parametrize("args, expected", [
    ({"speculative_num_draft_tokens": 64, "speculative_ngram_max_bfs_breadth": 1}, (64, 1)),
    ({"speculative_num_draft_tokens": 45, "speculative_ngram_max_bfs_breadth": 20, "speculative_eagle_topk": 3},
     (2, 20)),
])
def test_ngram_steps_and_topk_are_computed_for_any_numbers(args, expected):
    res = resolve_request(get_engine(), platform="sm90", model=LLAMA, fixes=False,
                          args={"speculative_algorithm": "NGRAM", **args})
    assert not res.conflicts, rules_of(res)
    assert (res.values["speculative_num_steps"], res.values["speculative_eagle_topk"]) == expected
    assert res.derivations["speculative_num_steps"].facts[0].name == "spec.ngram_steps"


@pytest.mark.parametrize("budget, refused", [(40, True), (39, False)])
def test_ngram_corpus_budget_is_compared_with_the_draft_tokens(budget, refused):
    res = resolve_request(get_engine(), platform="sm90", model=LLAMA, fixes=False, args={
        "speculative_algorithm": "NGRAM", "speculative_num_draft_tokens": 40,
        "speculative_ngram_external_corpus_path": "/tmp/c.txt", "speculative_ngram_external_sam_budget": budget})
    assert ("conflict.spec.ngram.sam-budget-max" in rules_of(res)) == refused


def test_a_long_chain_verifies_steps_plus_one_tokens():
    # the rule SGLang applies in _handle_eagle_family (oracle cases c0178/c0179 pin it at 7 and 20 steps)
    res = resolve_request(get_engine(), platform="sm90", model=LLAMA, fixes=False, args={
        "speculative_algorithm": "EAGLE", "speculative_draft_model_path": "/drafts/eagle",
        "speculative_num_steps": 40, "speculative_eagle_topk": 1, "speculative_num_draft_tokens": 8})
    assert res.values["speculative_num_draft_tokens"] == 41
    (adj,) = res.derivations["speculative_num_draft_tokens"].adjustments
    assert (adj.old, adj.new, adj.rule.id) == (8, 41, "adjust.spec.tokens.chain")


# --- the draft checkpoint's config (resolver/draft.py) -----------------------------------------
# Each case was asked of the oracle (SGLang 0.5.23) with the Qwen3 target of the oracle fixture and
# the DFlash draft of tools/sglang_diff.py DRAFTS, varied as named: its block size, is_causal, and a
# block size nested in dflash_config; and a Gemma 4 assistant draft with the Llama target.
QWEN3 = next(m for m in MODELS.values() if m["architectures"][0].startswith("Qwen3"))
DFLASH_DRAFT = {"architectures": ["DFlashDraftModel"], "model_type": "qwen3", "hidden_size": 4096,
                "num_hidden_layers": 1, "num_attention_heads": 32, "num_key_value_heads": 8,
                "intermediate_size": 12288, "vocab_size": 151936, "rope_theta": 1000000, "block_size": 16,
                "torch_dtype": "bfloat16"}


@pytest.mark.parametrize("draft, platform, args, expected", [
    ({"block_size": 8}, "sm90", {}, (8, "fa3")),
    ({"block_size": 8}, "sm100", {"attention_backend": "trtllm_mha"}, (8, "fa4")),     # not causal: falls back
    ({"is_causal": True}, "sm100", {}, (16, "trtllm_mha")),                            # causal: keeps trtllm_mha
    ({"is_causal": True}, "sm90", {"speculative_draft_attention_backend": "trtllm_mha"}, (16, "trtllm_mha")),
    ({"block_size": None, "dflash_config": {"block_size": 4}}, "sm90", {"attention_backend": "trtllm_mha"},
     (4, "flashinfer")),
])
def test_the_dflash_draft_config_sets_the_block_and_the_draft_backend(draft, platform, args, expected):
    config = {k: v for k, v in {**DFLASH_DRAFT, **draft}.items() if v is not None}
    res = resolve_request(get_engine(), platform=platform, model=QWEN3, draft_model=config, fixes=False, args={
        "speculative_algorithm": "DFLASH", "speculative_draft_model_path": "/drafts/dflash", **args})
    assert not res.conflicts, rules_of(res)
    assert (res.values["speculative_num_draft_tokens"], res.values["speculative_draft_attention_backend"]) == expected


def test_an_unread_draft_config_gives_sglangs_fallback():
    res = resolve_request(get_engine(), platform="sm100", model=QWEN3, fixes=False, args={
        "speculative_algorithm": "DFLASH", "speculative_draft_model_path": "/no/such/draft"})
    assert (res.values["speculative_num_draft_tokens"],
            res.values["speculative_draft_attention_backend"]) == (16, "fa4")
    assert "not read" in res.outcome.facts["draft.block_size"].origin.where


def test_a_gemma4_assistant_draft_refuses_eagle3_and_is_not_resolved_silently_as_eagle():
    gemma = {"architectures": ["Gemma4AssistantForCausalLM"], "model_type": "llama"}
    args = {"speculative_draft_model_path": "/drafts/gemma4-assistant"}
    refused = resolve_request(get_engine(), platform="sm90", model=LLAMA, draft_model=gemma,
                              args={**args, "speculative_algorithm": "EAGLE3"})
    assert rules_of(refused) == {"conflict.spec.gemma4-assistant-eagle3"}
    assert any(f.set == {"speculative_algorithm": "EAGLE"} for c in refused.conflicts for f in c.fixes)
    promoted = resolve_request(get_engine(), platform="sm90", model=LLAMA, draft_model=gemma, fixes=False,
                               args={**args, "speculative_algorithm": "NEXTN"})
    assert any(n.code == "not-modelled" and "FROZEN_KV_MTP" in n.message for n in promoted.warnings)
