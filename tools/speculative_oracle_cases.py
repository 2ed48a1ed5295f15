"""Build tests/data/speculative-oracle.json: speculative-decoding cases answered by the SGLang 0.5.23 oracle.

Test tool only (it needs the oracle's output; the resolver never imports it).  Two sources:

* the oracle's ``spec`` grid (``full_pipeline.py --groups spec``), sampled per algorithm, model and
  outcome;
* hand-written requests for the checks and parameters the grid does not reach (NGRAM arithmetic,
  adaptive speculation, DFLASH block/window/draft backend, rejection sampling, PP, PD, ...).

Usage (from /work/shared, one oracle process at a time)::

    flock /tmp/oracle.lock $SGLVENV/bin/python -B oracle/full_pipeline.py --groups spec --out /tmp/spec.jsonl
    python tools/speculative_oracle_cases.py requests /tmp/spec.jsonl > /tmp/spec-custom.jsonl
    flock /tmp/oracle.lock $SGLVENV/bin/python -B oracle/ask.py /tmp/spec-custom.jsonl > /tmp/spec-custom-ans.jsonl
    python tools/speculative_oracle_cases.py fixture /tmp/spec.jsonl /tmp/spec-custom.jsonl \\
        /tmp/spec-custom-ans.jsonl > tests/data/speculative-oracle.json
"""
from __future__ import annotations

import collections
import itertools
import json
import os
import re
import sys

#: the fields compared (SGLang's effective value: declared by a step, else typed, else its default)
FIELDS = ("speculative_algorithm", "speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens",
          "speculative_draft_attention_backend", "max_running_requests", "enable_mixed_chunk",
          "disable_overlap_schedule", "speculative_adaptive", "speculative_use_rejection_sampling",
          "speculative_draft_model_revision", "attention_backend", "page_size")
DRAFT_DIR = "/tmp/sglang-oracle-fixture/draft"
FLAGS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "resolver", "data",
                     "sglang_flags.json")


def _grid(path):
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def custom_requests(grid) -> list[dict]:
    models, drafts = {}, {}
    for case in grid:
        r = case["request"]
        models.setdefault(r["model_name"], r["model"])
        if "draft_model" in r:
            drafts.setdefault(r["draft_model_name"], r["draft_model"])
    out: list[dict] = []

    def req(platform, model, args, draft=None, tag=""):
        r = {"id": f"c{len(out):04d}-{tag}", "platform": platform, "model_name": model, "model": models[model],
             "args": dict(args)}
        if draft:
            r["draft_model_name"], r["draft_model"] = draft, drafts[draft]
            r["args"]["speculative_draft_model_path"] = DRAFT_DIR
        out.append(r)

    L, Q = "llama31_8b", "qwen3_dense"
    S3 = {"speculative_num_steps": 3, "speculative_eagle_topk": 1, "speculative_num_draft_tokens": 4}
    # NGRAM: steps = draft tokens // breadth, top-k = breadth (over a typed top-k)
    for b, d, topk in itertools.product([1, 2, 3, 5, 10, 16], [None, 1, 5, 8, 12, 17, 32, 64], [None, 4]):
        a = {"speculative_algorithm": "NGRAM", "speculative_ngram_max_bfs_breadth": b}
        if d is not None:
            a["speculative_num_draft_tokens"] = d
        if topk is not None:
            a["speculative_eagle_topk"] = topk
        req("sm90", L, a, tag="ngram")
    corpus = {"speculative_ngram_external_corpus_path": "/tmp/corpus.txt"}
    for extra in [{"speculative_num_steps": 2}, {"enable_mixed_chunk": True}, corpus,
                  {**corpus, "speculative_ngram_external_sam_budget": 4},
                  {**corpus, "speculative_ngram_external_sam_budget": 12},
                  {**corpus, "speculative_ngram_external_sam_budget": 11},
                  {**corpus, "speculative_ngram_external_sam_budget": 4,
                   "speculative_ngram_external_corpus_max_tokens": 0},
                  {"attn_dp_size": 2, "tp_size": 2}, {"page_size": 16, "attention_backend": "flashinfer"},
                  {"page_size": 16, "attention_backend": "fa3"},
                  {"page_size": 16, "attention_backend": "fa3", "speculative_ngram_max_bfs_breadth": 1},
                  {"speculative_use_rejection_sampling": True}]:
        for plat in ["sm90", "gfx942"]:
            req(plat, L, {"speculative_algorithm": "NGRAM", **extra}, tag="ngram-x")
    # adaptive speculation
    for model, draft in [(L, "eagle_llama"), (Q, "eagle3_llama")]:
        algo = "EAGLE" if model == L else "EAGLE3"
        for extra in [{}, {"speculative_num_steps": 5, "speculative_eagle_topk": 1},
                      {"speculative_num_steps": 4, "speculative_eagle_topk": 1},
                      {"speculative_num_steps": 0, "speculative_eagle_topk": 1}, {"speculative_eagle_topk": 4},
                      {"speculative_eagle_topk": 1}, {"speculative_num_steps": 7}, {"attn_dp_size": 2, "tp_size": 2},
                      {"speculative_num_steps": 4, "speculative_eagle_topk": 4, "speculative_num_draft_tokens": 8}]:
            for plat in ["sm90", "sm100", "gfx942"]:
                req(plat, model, {"speculative_algorithm": algo, "speculative_adaptive": True, **extra}, draft=draft,
                    tag="adaptive")
    for algo, draft in [("NGRAM", None), ("STANDALONE", "llama32_1b"), ("DFLASH", "dflash_qwen3")]:
        req("sm90", Q if algo == "DFLASH" else L, {"speculative_algorithm": algo, "speculative_adaptive": True},
            draft=draft, tag="adaptive-off")
    req("sm90", L, {"speculative_adaptive": True}, tag="adaptive-nospec")
    # linear chains: draft tokens = steps + 1
    for steps, tokens in [(7, 2), (20, 3), (2, 3), (12, None)]:
        a = {"speculative_algorithm": "EAGLE", "speculative_num_steps": steps, "speculative_eagle_topk": 1}
        if tokens:
            a["speculative_num_draft_tokens"] = tokens
        req("sm90", L, a, draft="eagle_llama", tag="chain")
    req("sm90", L, {"speculative_algorithm": "EAGLE", "speculative_num_steps": 4, "speculative_eagle_topk": 2},
        draft="eagle_llama", tag="tree-no-tokens")
    # DFLASH
    for extra in [{"speculative_dflash_block_size": 8},
                  {"speculative_dflash_block_size": 8, "speculative_num_draft_tokens": 8},
                  {"speculative_dflash_block_size": 8, "speculative_num_draft_tokens": 16},
                  {"speculative_dflash_block_size": 0}, {"speculative_draft_window_size": 8},
                  {"speculative_draft_window_size": 32},
                  {"speculative_draft_window_size": 8, "speculative_dflash_block_size": 4},
                  {"pp_size": 2}, {"attn_dp_size": 2, "tp_size": 2},
                  {"attn_dp_size": 2, "tp_size": 2, "enable_dp_lm_head": True},
                  {"speculative_num_steps": 3, "speculative_eagle_topk": 4},
                  {"speculative_draft_attention_backend": "trtllm_mha"}, {"speculative_draft_attention_backend": "fa4"},
                  {"attention_backend": "trtllm_mha"}, {"attention_backend": "fa3"},
                  {"prefill_attention_backend": "triton", "decode_attention_backend": "flashinfer"},
                  {"prefill_attention_backend": "trtllm_mha"}, {"attention_backend": "flex_attention"},
                  {"enable_mixed_chunk": True}, {"speculative_use_block_verification": True},
                  {"max_running_requests": 7}, {"speculative_num_draft_tokens": 5}]:
        for plat in ["sm90", "sm100", "sm120", "gfx942"]:
            req(plat, Q, {"speculative_algorithm": "DFLASH", **extra}, draft="dflash_qwen3", tag="dflash")
    # STANDALONE, rejection sampling, thresholds, block verification, draft window
    for plat in ["sm90", "gfx942"]:
        req(plat, L, {"speculative_algorithm": "STANDALONE", "speculative_use_rejection_sampling": True},
            draft="llama32_1b", tag="sa-rs")
        req(plat, L, {"speculative_algorithm": "STANDALONE", "attn_dp_size": 2, "tp_size": 2},
            draft="llama32_1b", tag="sa-dp")
        req(plat, L, {"speculative_algorithm": "STANDALONE", "enable_mixed_chunk": True},
            draft="llama32_1b", tag="sa-mixed")
        req(plat, L, {"speculative_algorithm": "EAGLE", "enable_mixed_chunk": True, **S3},
            draft="eagle_llama", tag="e-mixed")
        req(plat, L, {"speculative_algorithm": "EAGLE", "speculative_use_rejection_sampling": True,
                      "speculative_accept_threshold_single": 0.5, **S3}, draft="eagle_llama", tag="rs-thr")
        req(plat, L, {"speculative_algorithm": "EAGLE", "speculative_accept_threshold_acc": 0.5, **S3},
            draft="eagle_llama", tag="thr")
        req(plat, L, {"speculative_algorithm": "EAGLE", "speculative_token_map": "/tmp/map.pt", **S3},
            draft="eagle_llama", tag="tokmap")
        req(plat, L, {"speculative_algorithm": "EAGLE", "enable_deterministic_inference": True, **S3},
            draft="eagle_llama", tag="det")
        req(plat, L, {"speculative_algorithm": "EAGLE3", **S3}, draft="eagle3_llama", tag="e3")
        req(plat, "deepseek_v3_fp8", {"speculative_algorithm": "NEXTN", **S3}, tag="nextn")
        req(plat, L, {"speculative_algorithm": "EAGLE", "speculative_use_block_verification": True, **S3},
            draft="eagle_llama", tag="bv")
        req(plat, L, {"speculative_algorithm": "NGRAM", "speculative_use_block_verification": True}, tag="bv-ngram")
        req(plat, L, {"speculative_use_block_verification": True}, tag="bv-none")
        req(plat, L, {"speculative_algorithm": "EAGLE", "speculative_draft_window_size": 0, **S3},
            draft="eagle_llama", tag="win0")
        req(plat, L, {"speculative_algorithm": "EAGLE", "speculative_draft_window_size": 64,
                      "speculative_draft_sink_size": -1, **S3}, draft="eagle_llama", tag="sink-neg")
        req(plat, L, {"speculative_algorithm": "EAGLE", "speculative_draft_sink_size": 4, **S3},
            draft="eagle_llama", tag="sink-nowin")
        req(plat, L, {"speculative_algorithm": "EAGLE", "speculative_draft_window_size": 64,
                      "speculative_draft_sink_size": 4, **S3}, draft="eagle_llama", tag="win-ok")
        req(plat, L, {"speculative_draft_sink_size": 4}, tag="sink-nospec")
    # PD decode server with its radix cache
    for algo, draft in [("NGRAM", None), ("EAGLE", "eagle_llama"), ("STANDALONE", "llama32_1b")]:
        a = {"speculative_algorithm": algo, "disaggregation_mode": "decode",
             "disaggregation_decode_enable_radix_cache": True}
        if algo != "NGRAM":
            a.update(S3)
        req("sm90", L, a, draft=draft, tag="pd-radix")
    req("sm90", Q, {"speculative_algorithm": "DFLASH", "disaggregation_mode": "decode",
                    "disaggregation_decode_enable_radix_cache": True}, draft="dflash_qwen3", tag="pd-radix")
    # pipeline parallelism
    for algo, draft, mode in [("EAGLE3", "eagle3_llama", None), ("EAGLE", "eagle_llama", None),
                              ("EAGLE", "eagle_llama", "prefill"), ("NGRAM", None, None),
                              ("STANDALONE", "llama32_1b", None)]:
        a = {"speculative_algorithm": algo, "pp_size": 2}
        if algo != "NGRAM":
            a.update(S3)
        if mode:
            a["disaggregation_mode"] = mode
        req("sm90", L, a, draft=draft, tag="pp")
    req("sm90", "deepseek_v3_fp8", {"speculative_algorithm": "EAGLE", "pp_size": 2, **S3}, tag="pp-ds")
    req("sm90", L, {"speculative_algorithm": "EAGLE", "max_running_requests": 128, **S3},
        draft="eagle_llama", tag="mrr")
    req("sm90", L, {"speculative_algorithm": "EAGLE", "speculative_draft_model_revision": "v2", **S3},
        draft="eagle_llama", tag="rev")
    # split prefill/decode backends with a draft tree on 16-token pages
    for pre, dec in [("trtllm_mha", "fa3"), ("fa3", "trtllm_mha"), ("flashinfer", "fa3"), ("triton", "flashinfer")]:
        req("sm90", L, {"speculative_algorithm": "EAGLE", "speculative_num_steps": 3, "speculative_eagle_topk": 4,
                        "speculative_num_draft_tokens": 8, "prefill_attention_backend": pre,
                        "decode_attention_backend": dec, "page_size": 16}, draft="eagle_llama", tag="split")
    # automatic parameters per architecture
    for plat in ["sm90", "sm100", "gfx942", "sm120"]:
        req(plat, "qwen3_moe", {"speculative_algorithm": "EAGLE3"}, draft="eagle3_llama", tag="auto")
        req(plat, "deepseek_v3_fp8", {"speculative_algorithm": "NEXTN"}, tag="auto")
        req(plat, L, {"speculative_algorithm": "EAGLE3"}, draft="eagle3_llama", tag="auto")
        req(plat, L, {"speculative_algorithm": "STANDALONE"}, draft="llama32_1b", tag="auto")
    return out


def _template(case) -> str:
    sg = case["sglang"]
    return "resolved" if sg["status"] == "resolved" else re.sub(r"\d+", "<n>", sg["message"])[:60] or sg["type"]


def _expected(request, sg, defaults) -> dict:
    if sg["status"] != "resolved":
        return {"status": "error", "type": sg["type"], "message": sg["message"]}
    args = request["args"]
    return {"status": "resolved",
            "values": {f: sg["values"].get(f, args.get(f, defaults.get(f))) for f in FIELDS}}


def fixture(grid, custom_requests_, answers) -> dict:
    with open(FLAGS, encoding="utf-8") as fh:
        defaults = {f["dest"]: f.get("default") for f in json.load(fh)["flags"]}
    models, drafts, cases = {}, {}, []

    def add(cid, request, sg):
        models[request["model_name"]] = request["model"]
        if "draft_model" in request:
            drafts[request["draft_model_name"]] = request["draft_model"]
        cases.append({"id": cid, "platform": request["platform"], "model": request["model_name"],
                      "draft": request.get("draft_model_name"), "args": request["args"],
                      "sglang": _expected(request, sg, defaults)})

    # the grid, sampled: every 8th case of each (algorithm, model, outcome) stratum, at least one
    strata = collections.defaultdict(list)
    for case in grid:
        r = case["request"]
        strata[(r["args"].get("speculative_algorithm"), r["model_name"], _template(case))].append(case)
    for key in sorted(strata, key=str):
        for case in sorted(strata[key], key=lambda c: c["id"])[::8]:
            add(case["id"], case["request"], case["sglang"])
    by_id = {a["id"]: a for a in answers}
    for request in custom_requests_:
        answer = by_id[request["id"]]
        if "harness_error" not in answer:
            add(request["id"], request, answer["sglang"])
    return {"sglang_version": "0.5.23", "fields": list(FIELDS), "models": models, "drafts": drafts,
            "draft_path": DRAFT_DIR, "cases": cases}


def main(argv):
    if argv[:1] == ["requests"]:
        for r in custom_requests(_grid(argv[1])):
            sys.stdout.write(json.dumps(r) + "\n")
    elif argv[:1] == ["fixture"]:
        grid = _grid(argv[1])
        with open(argv[2], encoding="utf-8") as fh:
            reqs = [json.loads(line) for line in fh]
        with open(argv[3], encoding="utf-8") as fh:
            answers = [json.loads(line) for line in fh]
        json.dump(fixture(grid, reqs, answers), sys.stdout, indent=None, separators=(",", ":"), sort_keys=True)
        sys.stdout.write("\n")
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
