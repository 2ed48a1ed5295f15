#!/usr/bin/env python3
"""SGLang 0.5.23's whole-pipeline grids against the resolver: the oracle's ``full_pipeline.py``, all groups.

    python benchmarks/full_pipeline_parity.py [--groups spec moe ...] [--scratch DIR] [--reuse FILE]
                                              [--jobs 2] [--show 2] [--write FILE]

The oracle's grids (groups spec, moe, parallel, pd_hicache, quant_kv, recipes: about 11,600 cases,
three minutes of CPU) are hand-made by SGLang's own test author, independently of the resolver's
rules; tools/sglang_diff.py's random launches are the other half of the picture.  This runs
``full_pipeline.py`` in the oracle's Python, writing its output and summary to a scratch folder
(never the oracle's own out/ folder or summary document) and its checkpoints to
$SGLANG_ORACLE_FIXTURE (the default folder otherwise, under its lock); resolves the same requests
here; classes every case as tools/sglang_diff.py does (agree, divergence, named-not-checked,
silent-miss, extra-refusal, value-differs, field-not-reported, ...); and prints a table by group,
then every kind of finding, commonest first, with examples.  ``--reuse FILE`` compares an earlier
run's output again (written with the same fixture folder) without running the oracle.  The exit
status is 1 when a failing finding is left.  Not part of the test suite: it takes six to eight
minutes on 2 cores (docs/parity.md).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, ROOT)

from resolver.api import get_engine  # noqa: E402
from tools import sglang_diff as diff  # noqa: E402

GROUPS = ("spec", "moe", "parallel", "pd_hicache", "quant_kv", "recipes")


def run_grids(python: str, oracle_dir: str, scratch: str, groups: list[str] | None) -> str:
    """Run full_pipeline.py into ``scratch``; the path of its JSONL output."""
    out, summary = os.path.join(scratch, "full.jsonl"), os.path.join(scratch, "summary.txt")
    argv = ["--out", out, "--summary", summary, *(["--groups", *groups] if groups else [])]
    proc = diff.run_oracle(python, oracle_dir, "grids", argv)
    if not os.path.exists(out):
        raise SystemExit(f"full_pipeline.py wrote no output (exit {proc.returncode}): {proc.stderr.strip()[-3000:]}")
    if proc.returncode != 0:  # harness failures are left out of the output; the run goes on without them
        print(f"full_pipeline.py exited {proc.returncode}: {proc.stderr.strip()[-1500:]}", file=sys.stderr)
    return out


def read_cases(path: str) -> tuple[list[dict], dict[str, dict], dict[str, str]]:
    """The requests (with their case ids), SGLang's answers and each case's group, from full_pipeline's output."""
    requests, answers, groups = [], {}, {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            case = json.loads(line)
            requests.append({"id": case["id"], **case["request"]})
            answers[case["id"]] = {"id": case["id"], "sglang": case["sglang"]}
            groups[case["id"]] = case["group"]
    # SGLang copies its model_path into tokenizer_path: an output written with another fixture folder would
    # compare every path and every draft checkpoint against the wrong folder
    for a in answers.values():
        seen = a["sglang"].get("values", {}).get("tokenizer_path")
        if seen is not None:
            if seen != diff.ORACLE_MODEL_DIR:
                raise SystemExit(f"{path} was written with the fixture folder {os.path.dirname(seen)}, this run's is "
                                 f"{diff.ORACLE_FIXTURE}: set SGLANG_ORACLE_FIXTURE to the same folder")
            break
    return requests, answers, groups


def table(verdicts: dict[str, diff.Verdict], groups: dict[str, str]) -> str:
    """Cases by group and class, as a Markdown table."""
    names = [g for g in GROUPS if g in set(groups.values())] + sorted(set(groups.values()) - set(GROUPS))
    head = "| group | cases | " + " | ".join(diff.CLASSES) + " |"
    rows = [head, "|" + "---|" * (len(diff.CLASSES) + 2)]
    for group in [*names, None]:
        mine = [v for rid, v in verdicts.items() if group is None or groups[rid] == group]
        counts = [sum(v.cls == c for v in mine) for c in diff.CLASSES]
        label = "**total**" if group is None else group
        rows.append(f"| {label} | {len(mine)} | " + " | ".join(str(n) for n in counts) + " |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--oracle-python", default=diff.default_oracle_python(),
                    help="the Python of the oracle's venv (default: $SGLANG_ORACLE_PYTHON, else ../.oracle-venv)")
    ap.add_argument("--oracle-dir", default=diff.default_oracle_dir(),
                    help="the oracle folder holding full_pipeline.py (default: $SGLANG_ORACLE_DIR or ../shared/oracle)")
    ap.add_argument("--groups", nargs="*", choices=GROUPS, help="only these groups (default: all)")
    ap.add_argument("--scratch", help="where full_pipeline.py writes its output and summary (default: a new "
                                      "temporary folder, kept and named at the end)")
    ap.add_argument("--reuse", metavar="FILE", help="compare this earlier full_pipeline.py output; do not run it")
    ap.add_argument("--jobs", type=int, default=2, help="processes resolving the cases (default: %(default)s)")
    ap.add_argument("--show", type=int, default=2, help="examples shown per kind of finding")
    ap.add_argument("--write", help="write every case with both answers, its class and findings to this JSONL file")
    a = ap.parse_args(argv)
    started = time.time()
    if a.reuse:
        path = a.reuse
    else:
        if not a.oracle_python:
            ap.error("give --oracle-python (or set SGLANG_ORACLE_PYTHON): see the oracle's README for its venv")
        scratch = a.scratch or tempfile.mkdtemp(prefix="full-pipeline-parity-")
        os.makedirs(scratch, exist_ok=True)
        print(f"running the oracle's grids into {scratch} ...", file=sys.stderr)
        path = run_grids(a.oracle_python, a.oracle_dir, scratch, a.groups)
    requests, answers, groups = read_cases(path)
    oracle_done = time.time()
    print(f"{len(requests)} cases from {path}; asking the resolver ...", file=sys.stderr)
    engine = get_engine()
    results = diff.ask_resolver(requests, engine, a.jobs)
    verdicts = diff.compare(requests, answers, results, engine)
    if a.write:
        diff.write_verdicts(a.write, requests, answers, results, verdicts)
    print(table(verdicts, groups) + "\n")
    failing = diff.report(verdicts, requests, a.show)
    print(f"\n{len(requests)} cases; oracle {oracle_done - started:.0f} s, resolver and comparison "
          f"{time.time() - oracle_done:.0f} s", file=sys.stderr)
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
