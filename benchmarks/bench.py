"""Measure the resolver's costs, as ratios against baselines measured in the same run.

    python benchmarks/bench.py            # full run (a few seconds)
    python benchmarks/bench.py --smoke    # CI smoke run: few iterations, figures only

Nothing here asserts a time: figures are printed for docs/performance.md.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from resolver.api import get_engine, resolve_request  # noqa: E402
from resolver.resolution import run  # noqa: E402

ARCH = "DeepseekV32ForCausalLM"
PLAIN = {"kv_cache_dtype": "fp8_e4m3", "enable_hisparse": True, "disable_radix_cache": True}
SEED = dict(PLAIN, dsa_decode_backend="tilelang")


def timed(fn, n):
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    out.sort()
    return out[len(out) // 2], out[min(len(out) - 1, int(len(out) * 0.99))]


class _Recorder:
    """Wraps a matcher's session to capture the fact batches of one real resolution."""

    def __init__(self, matcher):
        self.matcher, self.batches = matcher, []

    def session(self):
        rec = self

        class _S:
            def __enter__(self):
                self.cm = rec.matcher.session()
                self.s = self.cm.__enter__()
                return self

            def __exit__(self, *exc):
                return self.cm.__exit__(*exc)

            def assert_facts(self, facts):
                rec.batches.append([dict(f) for f in facts])
                return self.s.assert_facts(facts)

        return _S()


def floor_runner(engine, request):
    """A bare durable-rules session asserting the same facts and firing the same rules."""
    rec = _Recorder(engine.durable)
    run(engine.compiled, rec, request)
    host, counter = engine.durable._host, [10**9]
    engine.durable._trace = []

    def once():
        counter[0] += 1
        sid = str(counter[0])
        try:
            for batch in rec.batches:
                host.assert_facts("pack", [dict(f, sid=sid) for f in batch])
        finally:
            host.delete_state("pack", sid)
            engine.durable._trace.clear()
    return once


def cli_seconds(argv, n):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run(argv, capture_output=True, check=False)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--smoke", action="store_true", help="few iterations (CI)")
    a = ap.parse_args()
    n, n_cli = (30, 2) if a.smoke else (500, 7)
    engine = get_engine()
    req = resolve_request(engine, platform="h100", args=PLAIN, model_arch=ARCH).request
    resolve_p50, resolve_p99 = timed(lambda: resolve_request(engine, platform="h100", args=PLAIN, model_arch=ARCH), n)
    run_p50, run_p99 = timed(lambda: run(engine.compiled, engine.durable, req), n)
    ref_p50, _ = timed(lambda: run(engine.compiled, engine.reference, req), n)
    floor_p50, floor_p99 = timed(floor_runner(engine, req), n)
    seed_p50, _ = timed(lambda: resolve_request(engine, platform="h100", args=SEED, model_arch=ARCH), max(5, n // 20))
    py = sys.executable
    base_cli = cli_seconds([py, "-c", "import yaml, durable.engine"], n_cli)
    cli = cli_seconds([py, "-m", "resolver", "--platform", "h100", "--model-arch", ARCH], n_cli)
    seed_cli = cli_seconds([py, "-m", "resolver", "--platform", "h100", "--model-arch", ARCH,
                            "--kv-cache-dtype", "fp8_e4m3", "--enable-hisparse", "--disable-radix-cache",
                            "--dsa-decode-backend", "tilelang"], n_cli)
    ms = lambda s: f"{s * 1000:.2f} ms"  # noqa: E731
    rows = [
        ("resolve() warm, resolved request (p50 / p99)", f"{ms(resolve_p50)} / {ms(resolve_p99)}", resolve_p50 / floor_p50),
        ("engine run only, durable-rules (p50 / p99)", f"{ms(run_p50)} / {ms(run_p99)}", run_p50 / floor_p50),
        ("floor: bare durable-rules session, same facts and firings (p50 / p99)", f"{ms(floor_p50)} / {ms(floor_p99)}", 1.0),
        ("same run on the plain-Python reference matcher (p50)", ms(ref_p50), ref_p50 / floor_p50),
        ("conflict with checked fixes, the seed case (p50)", ms(seed_p50), seed_p50 / resolve_p50),
        ("CLI, process start to output, resolved", ms(cli), cli / base_cli),
        ("CLI, seed conflict with fixes", ms(seed_cli), seed_cli / base_cli),
        ("baseline: python -c 'import yaml, durable.engine'", ms(base_cli), 1.0),
    ]
    print(f"launch-resolver benchmark ({'smoke' if a.smoke else 'full'}; n={n}, cli n={n_cli}; Python {sys.version.split()[0]})")
    print(f"{'measure':<72} {'time':>22}  ratio")
    for name, value, ratio in rows:
        print(f"{name:<72} {value:>22}  {ratio:5.2f}x")
    print("ratios: engine rows against the floor; the conflict row against a resolved request; CLI rows against the import baseline")


if __name__ == "__main__":
    main()
