"""SGLang 0.5.23's own resolution time per launch: the baseline of ``bench.py --sglang``.

Run by bench.py with the oracle's interpreter (a test tool beside the project, docs/parity.md;
the project never imports it)::

    ORACLE_PYTHON benchmarks/sglang_baseline.py ORACLE_DIR SPEC.json OUT.json

SPEC is one oracle worker's spec (one machine: ``{"machine", "env", "cases": [[id, request], ...]}``)
plus ``"repeat"`` and ``"ours"``: the resolver's checkout and each request's batch line.  OUT gets
``{id: {"sglang": [seconds, ...], "resolve": [...], "line": [...]}}``, run by run:

- ``sglang``: the time SGLang spends in ``ServerArgs.resolve_once()`` and ``check_server_args()``,
  its whole launch resolution, and nothing of the oracle's own work (writing the fixture
  checkpoint, reading the answer back);
- ``resolve``: the resolver's warm ``resolve_request()`` on the same launch (the Python API's
  resolution, as ``resolve()`` runs it, with no fix search);
- ``line``: ``resolve --batch --no-fixes`` on the same launch: the JSON line read, resolved and its
  JSON answer built.

Each run times the three back to back in this one process, so a busy machine slows all three
alike: the ratios are paired run by run.  The first run of a request is a warm-up and is not
reported.  The resolver needs only durable-rules, PyYAML and jsonschema, which the oracle's
interpreter has.
"""
from __future__ import annotations

import json
import os
import sys
import time


def main(oracle_dir: str, spec_path: str, out_path: str) -> int:
    # the oracle's module boots its machine (the platform SGLang sees at import) from its argv
    sys.argv = [os.path.join(oracle_dir, "full_pipeline.py"), "--worker", spec_path, os.devnull]
    sys.path.insert(0, oracle_dir)
    import full_pipeline as fp  # only in the oracle's interpreter

    with open(spec_path, encoding="utf-8") as fh:
        spec = json.load(fh)
    fp.setup_machine_patches()
    spent = [0.0]

    def timed(method):
        def run(self, *args, **kwargs):
            start = time.perf_counter()
            try:
                return method(self, *args, **kwargs)
            finally:
                spent[0] += time.perf_counter() - start
        return run

    sys.path.insert(0, spec["ours"]["root"])
    from resolver.core import get_engine, resolve
    from resolver.tools.batch import launch_request, resolve_line

    engine = get_engine()
    lines = spec["ours"]["lines"]

    def ours(line: str) -> tuple[float, float]:
        launch = launch_request(json.loads(line))
        start = time.perf_counter()
        resolve(engine, launch, fixes=False)
        middle = time.perf_counter()
        resolve_line(engine, line, fixes=False)
        return middle - start, time.perf_counter() - middle

    fp.ServerArgs.resolve_once = timed(fp.ServerArgs.resolve_once)
    fp.ServerArgs.check_server_args = timed(fp.ServerArgs.check_server_args)
    out: dict[str, dict[str, list[float]]] = {}
    for key, request in spec["cases"]:
        times: dict[str, list[float]] = {"sglang": [], "resolve": [], "line": []}
        for _ in range(1 + spec["repeat"]):
            spent[0] = 0.0
            try:
                fp._run_one(request)
            except Exception:  # noqa: BLE001 - a harness failure: no time for this request
                break
            times["sglang"].append(spent[0])
            resolved, line = ours(lines[key])
            times["resolve"].append(resolved)
            times["line"].append(line)
        if len(times["sglang"]) == 1 + spec["repeat"]:
            out[key] = {side: runs[1:] for side, runs in times.items()}
    with open(out_path, "w", encoding="utf-8") as fh:
        json.dump(out, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
