"""Round-trip real SGLang 0.5.23 command lines through the argparse integration and SGLang itself.

Run by tests/test_sglang_roundtrip.py with the oracle's Python (a venv holding sglang==0.5.23
and the resolver's dependencies; the resolver itself is imported from this checkout):

    $SGLANG_ORACLE_PYTHON -B tests/sglang_roundtrip_helper.py --oracle ../shared/oracle --out report.json

One process holds SGLang's real parser (``ServerArgs.add_cli_args``) with the integration attached,
and the resolver.  For each command line it parses, resolves the namespace (the written-back
namespace is resolved a second time: it must not change), and then has the oracle run SGLang's
own whole resolution (``full_pipeline.run_plan``: one worker process per machine) twice: on the
namespace as parsed (the control) and on the written-back one.  The report (JSON) says, per
case, what was written, what SGLang answered both times, and every field where the resolver's
value is not SGLang's final value.  The oracle writes fixture checkpoints under
/tmp/sglang-oracle-fixture: run one oracle process at a time.
"""
from __future__ import annotations

import argparse
import copy
import json
import logging
import os
import sys
import tempfile
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: (id, resolver platform, oracle machine, model fixture, flags after --model-path, draft fixture);
#: the machine is the oracle's platform plus its overrides (an H200 is sm90 with 141 GB)
Machine = tuple[str, str, dict[str, Any]]
H100: Machine = ("h100", "sm90", {})
H200: Machine = ("h200", "sm90", {"gpu_memory_gb": 141})
B200: Machine = ("b200", "sm100", {})
MI300X: Machine = ("mi300x", "gfx942", {})
MTP = ("--speculative-algorithm EAGLE --speculative-num-steps 3 --speculative-eagle-topk 1 "
       "--speculative-num-draft-tokens 4")
CASES: list[tuple[str, Machine, str, str, str | None]] = [
    ("seed-dsv32-hisparse-tilelang", H100, "deepseek_v32_fp8",
     "--kv-cache-dtype fp8_e4m3 --enable-hisparse --disable-radix-cache --dsa-decode-backend tilelang", None),
    ("dsv32-h200-tp8", H200, "deepseek_v32_fp8", "--tp 8", None),
    ("dsv32-h200-dp-attn", H200, "deepseek_v32_fp8", "--tp 8 --dp 8 --enable-dp-attention", None),
    # issue 12's launch: DeepEP all-to-all and FP8 weights over attention DP
    ("dsv32-h200-dp-attn-deepep", H200, "deepseek_v32_fp8",
     "--tp 8 --dp 8 --enable-dp-attention --moe-a2a-backend deepep --quantization fp8", None),
    ("dsv32-h200-mtp", H200, "deepseek_v32_fp8", f"--tp 8 {MTP}", None),
    ("dsv32-h200-hisparse", H200, "deepseek_v32_fp8", "--tp 8 --enable-hisparse --disable-radix-cache", None),
    ("dsv32-b200-fp8kv", B200, "deepseek_v32_fp8", "--tp 8 --kv-cache-dtype fp8_e4m3", None),
    ("dsv32-h200-pd-decode-threshold", H200, "deepseek_v32_fp8",
     ("--tp 8 --disaggregation-mode decode --disaggregation-transfer-backend mooncake "
      "--disaggregation-decode-host-receive-threshold 0.5"), None),
    ("dsv32-h200-page1-nsa", H200, "deepseek_v32_fp8", "--tp 8 --page-size 1 --attention-backend nsa", None),
    ("dsv32-h200-hisparse-radix", H200, "deepseek_v32_fp8", "--tp 8 --enable-hisparse", None),
    ("dsv32-mi300x-tp8", MI300X, "deepseek_v32_fp8", "--tp 8", None),
    ("dsv3-h200-tp8", H200, "deepseek_v3_fp8", "--tp 8 --trust-remote-code", None),
    ("dsv3-h200-dp-attn-mtp", H200, "deepseek_v3_fp8", f"--tp 8 --dp 8 --enable-dp-attention {MTP}", None),
    ("dsv3-b200-tp8", B200, "deepseek_v3_fp8", "--tp 8", None),
    ("dsv3-mi300x-tp8", MI300X, "deepseek_v3_fp8", "--tp 8 --trust-remote-code", None),
    ("dsv3-h200-pd-decode", H200, "deepseek_v3_fp8", "--tp 8 --disaggregation-mode decode", None),
    ("dsv3-h200-pd-decode-radix", H200, "deepseek_v3_fp8",
     "--tp 8 --disaggregation-mode decode --disaggregation-decode-enable-radix-cache", None),
    ("dsv3-h200-pd-prefill", H200, "deepseek_v3_fp8", "--tp 8 --disaggregation-mode prefill", None),
    ("dsr1-fp4-b200-nvfp4kv", B200, "deepseek_r1_nvfp4", "--tp 8 --kv-cache-dtype nvfp4", None),
    ("glm5-b200-fp8kv", B200, "glm5", "--tp 8 --kv-cache-dtype fp8_e4m3", None),
    ("glm5-h200-mtp", H200, "glm5", f"--tp 8 {MTP}", None),
    ("kimi-k2-h200-tp8", H200, "kimi_k2", "--tp 8 --trust-remote-code", None),
    ("gptoss-h100-tp1", H100, "gpt_oss_120b", "", None),
    ("gptoss-h100-tp8", H100, "gpt_oss_120b", "--tp 8", None),
    ("gptoss-b200-tp4", B200, "gpt_oss_120b", "--tp 4", None),
    ("llama-h100", H100, "llama31_8b", "", None),
    ("llama-h100-fa3-e5m2", H100, "llama31_8b", "--attention-backend fa3 --kv-cache-dtype fp8_e5m2", None),
    ("llama-h100-eagle", H100, "llama31_8b",
     ("--speculative-algorithm EAGLE --speculative-num-steps 3 --speculative-eagle-topk 4 "
      "--speculative-num-draft-tokens 16"), "eagle_llama"),
    ("llama-h100-pd-decode", H100, "llama31_8b", "--disaggregation-mode decode", None),
    ("llama-b200-nvfp4kv", B200, "llama31_8b", "--kv-cache-dtype nvfp4", None),
    ("llama-b200-fa3", B200, "llama31_8b", "--attention-backend fa3", None),
    ("llama-b200-page16", B200, "llama31_8b", "--page-size 16", None),
    ("llama-h100-deterministic", H100, "llama31_8b", "--enable-deterministic-inference", None),
    ("qwen3-dense-h100-tp2", H100, "qwen3_dense", "--tp 2 --enable-mixed-chunk", None),
    ("qwen3-moe-b200-dp-attn", B200, "qwen3_moe", "--tp 8 --dp 8 --enable-dp-attention", None),
    # the MoE runner and quantization (rules/moe.yaml): a quantization taken from the checkpoint, "unquant",
    # a typed runner, both TF32 spellings
    ("qwen3-moe-nvfp4-b200", B200, "qwen3_moe_nvfp4", "--tp 4", None),
    ("dsv3-b200-unquant-no-tf32", B200, "deepseek_v3_fp8", "--tp 8 --quantization unquant --no-enable-tf32-matmul",
     None),
    ("qwen3-moe-fp8-b200-triton", B200, "qwen3_moe_fp8", "--tp 8 --moe-runner-backend triton", None),
    ("llama-b200-nvfp4-tf32", B200, "llama31_8b", "--quantization modelopt_fp4 --enable-tf32-matmul", None),
]


def _load(oracle: str):
    """SGLang (under the oracle's stubs), then the resolver from this checkout."""
    sys.path.insert(0, oracle)
    # imports SGLang with torch stubbed, and scrubs SGLANG_* from the environment
    import full_pipeline as fp  # type: ignore[import-not-found]

    sys.path.insert(0, ROOT)
    return fp


def _checkpoint(fp, models: str, model: str) -> str:
    """The fixture's config.json (and files beside it) in a directory, for the resolver to read."""
    path = os.path.join(models, model)
    if not os.path.isdir(path):
        os.makedirs(path)
        for name, content in {"config.json": fp.MODELS[model], **fp.MODEL_FILES.get(model, {})}.items():
            with open(os.path.join(path, name), "w", encoding="utf-8") as fh:
                json.dump(content, fh)
    return path


def _resolve(parser: argparse.ArgumentParser, ns: argparse.Namespace, names: list[str]) -> dict[str, Any]:
    """Resolve ``ns`` in place as a launcher would; the case's part of the report."""
    from resolver.errors import ConflictError
    from resolver.integrations.argparse import resolve_namespace

    parsed = copy.deepcopy(vars(ns))
    try:
        res = resolve_namespace(parser, ns)  # the model: --model-path, as SGLang reads it
    except ConflictError as exc:
        return {"status": "conflict", "conflict_rules": sorted({c.rule.id for c in exc.conflicts})}
    again = argparse.Namespace(**copy.deepcopy(vars(ns)))
    res2 = resolve_namespace(parser, again)
    return {"status": "resolved",
            "values": {n: res.values[n] for n in names},
            "sources": {n: res.derivations[n].source for n in names},
            "wrote": {k: v for k, v in vars(ns).items() if parsed.get(k) != v},
            "roundtrip_changes": {k: [v, vars(again)[k]] for k, v in vars(ns).items() if vars(again)[k] != v},
            "roundtrip_value_changes": {n: [res.values[n], res2.values[n]] for n in names
                                        if res.values[n] != res2.values[n]}}


def _sglang_answer(answer: dict[str, Any], args: dict[str, Any], dests: list[str]) -> dict[str, Any]:
    if answer["status"] != "resolved":
        return {k: answer[k] for k in ("status", "type", "message", "raised_in")}
    from tools.sglang_diff import sglang_value

    # a field no step declared keeps its input (the namespace's value); one SGLang keeps nested
    # (the decode graph's max_bs in cuda_graph_config) is read there, as the differential test reads it
    return {"status": "resolved", "final": {d: sglang_value(answer, {"args": args}, d, {}) for d in dests},
            "declared_by": {d: answer["declared_by"][d] for d in dests if d in answer["declared_by"]}}


def main(argv: list[str] | None = None) -> int:
    cli = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    cli.add_argument("--oracle", default=os.path.join(os.path.dirname(ROOT), "shared", "oracle"))
    cli.add_argument("--out", required=True)
    opts = cli.parse_args(argv)
    started = time.monotonic()
    fp = _load(os.path.abspath(opts.oracle))
    from sglang.srt.server_args import ServerArgs  # type: ignore[import-not-found]

    from resolver.api import get_engine
    from resolver.integrations.argparse import add_resolver_arguments

    logging.disable(logging.CRITICAL)  # SGLang's and the resolver's INFO lines are not the report
    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    add_resolver_arguments(parser)
    # option -> its namespace field (SGLang's dest; every rule option is an SGLang flag)
    dest_of = {n: parser._option_string_actions[o.flag].dest for n, o in get_engine().pack.options.items()
               if not o.env and not o.no_cli and not o.not_decided}  # environment variables, fields with no
    # flag (never written back) and fields SGLang draws at start-up (random_seed) are compared by the differential
    names, dests = sorted(dest_of), sorted(dest_of.values())

    cases, items, sent = [], [], {}
    with tempfile.TemporaryDirectory(prefix="sglang-roundtrip-models-") as models:
        for cid, (alias, platform, overrides), model, flags, draft in CASES:
            local = _checkpoint(fp, models, model)
            line = ["--model-path", local, "--platform", alias, *flags.split()]
            if draft:
                line += ["--speculative-draft-model-path", fp.DRAFT_DIR]
            ns = parser.parse_args(line)
            parsed = copy.deepcopy(vars(ns))
            case = {"id": cid, "argv": line[2:], "platform": alias, "model": model, **_resolve(parser, ns, names)}
            # SGLang copies model_path into other fields (an MTP draft is the target): in the oracle the
            # model is its fixture folder, so the checkpoint's local path reads as that folder
            if "values" in case:
                case["values"] = {n: fp.MODEL_DIR if v == local else v for n, v in case["values"].items()}
            cases.append(case)
            request = {"platform": platform, "model": fp.MODELS[model], "platform_overrides": overrides}
            if model in fp.MODEL_FILES:
                request["model_files"] = fp.MODEL_FILES[model]
            if draft:
                request["draft_model"] = fp.DRAFT_MODELS[draft]
            namespaces = {"control": parsed, **({"written": vars(ns)} if case["status"] == "resolved" else {})}
            for label, values in namespaces.items():
                # every ServerArgs field, as from_cli_args builds them (the oracle gives model_path: its fixture)
                args = json.loads(json.dumps({f: fp.MODEL_DIR if values[f] == local else values[f]
                                              for f in sorted(fp._FIELD_NAMES) if f in values and f != "model_path"}))
                items.append((f"{cid}/{label}", {**request, "args": args}))
                sent[f"{cid}/{label}"] = args

    results, harness, violations, _, _ = fp.run_plan(items, progress=False)
    for case in cases:
        sglang = case["sglang"] = {label: _sglang_answer(results[key], sent[key], dests)
                                   for label in ("control", "written")
                                   if (key := f"{case['id']}/{label}") in results}  # else: in "harness"
        written, control = sglang.get("written"), sglang.get("control")
        if written and written["status"] == "resolved":
            # the resolver's value against SGLang's final value on the written-back namespace
            case["value_diffs"] = {n: {"resolver": case["values"][n], "sglang": written["final"][d],
                                       "sglang_declared_by": written["declared_by"].get(d)}
                                   for n, d in dest_of.items() if case["values"][n] != written["final"][d]}
            if control and control["status"] == "resolved":
                case["writeback_changed_sglang"] = {d: [control["final"][d], written["final"][d]] for d in dests
                                                    if control["final"][d] != written["final"][d]}
    report = {"cases": cases, "harness": harness, "violations": violations,
              "seconds": round(time.monotonic() - started, 1)}
    with open(opts.out, "w", encoding="utf-8") as fh:
        json.dump(report, fh, indent=1, sort_keys=True)
    return 1 if harness or violations else 0


if __name__ == "__main__":
    sys.exit(main())
