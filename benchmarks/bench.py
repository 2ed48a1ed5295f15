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
    # as an installed package runs: byte-code cached (pip compiles it at install; some sandboxes
    # set PYTHONDONTWRITEBYTECODE, which would charge every run for compiling the sources), and
    # the compiled-pack cache warm (the first run after an install or a rule change fills it)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run(argv, capture_output=True, check=False, env=env)
    times = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run(argv, capture_output=True, check=False, env=env)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def throughput(engine, matcher, requests) -> float:
    """Resolutions per second on one core (fixes off: the outcome only)."""
    prepared = [resolve_request(engine, platform=p, model_arch=a, args=args, fixes=False).request
                for p, a, args in requests]
    t = time.perf_counter()
    for req in prepared:
        run(engine.compiled, matcher, req)
    return len(prepared) / (time.perf_counter() - t)


BATCH = [(p, a, args) for p in ("h100", "b200", "rtx5090", "mi300x", "a100")
         for a in (ARCH, "LlamaForCausalLM", "DeepseekV3ForCausalLM", "GlmMoeDsaForCausalLM")
         for args in ({}, {"kv_cache_dtype": "fp8_e4m3"}, PLAIN, {"attention_backend": "triton"})]


def padded_pack(copies: int) -> str:
    """The shipped rules plus synthetic rule groups, so the compiled pack has about ``copies`` times
    as many rules (each group: one option, two defaults and a conflict, each with its own pattern)."""
    import shutil
    import tempfile

    from resolver.loader import default_rules_dir

    base = len(get_engine().compiled.ruleset)
    groups = max(0, (base * copies - base) // 3)
    directory = tempfile.mkdtemp(prefix=f"pack-x{copies}-")
    for name in os.listdir(default_rules_dir()):
        shutil.copy(os.path.join(default_rules_dir(), name), directory)
    facts = ("model.kv_lora_rank", "model.index_topk", "model.qk_rope_head_dim", "model.num_key_value_heads")
    lines = ["schema: resolver/1", "rules:"]
    for i in range(groups):
        fact, const = facts[i % len(facts)], 100000 + i  # distinct constants: no shared patterns
        lines += [f"  - {{id: option.pad_{i}, kind: option, doc: pad, name: pad_{i}, type: choice, "
                  f"choices: [a, b], help: pad}}",
                  f"  - {{id: default.pad_{i}.a, kind: default, doc: pad, when: '{fact} != {const}', "
                  f"set: {{pad_{i}: a}}, priority: 1}}",
                  f"  - {{id: default.pad_{i}.b, kind: default, doc: pad, when: '{fact} == {const}', "
                  f"set: {{pad_{i}: b}}, priority: 2}}",
                  f"  - {{id: conflict.pad_{i}, kind: conflict, doc: pad, when: 'pad_{i} == \"b\" and {fact} == "
                  f"{const + 1}', message: pad}}"]
    with open(os.path.join(directory, "zz_pad.yaml"), "w") as fh:
        fh.write("\n".join(lines) + "\n")
    return directory


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
    durable_rps = throughput(engine, engine.durable, BATCH * (1 if a.smoke else 5))
    reference_rps = throughput(engine, engine.reference, BATCH * (1 if a.smoke else 5))
    scaling = []
    # x16 is past durable-rules 2.0.28's limits (distinct facts, tests per fact): the compiler refuses it
    for copies in ((1, 4) if a.smoke else (1, 2, 4)):
        padded = get_engine(padded_pack(copies)) if copies > 1 else engine
        preq = resolve_request(padded, platform="h100", args=PLAIN, model_arch=ARCH).request
        p50, _ = timed(lambda e=padded, r=preq: run(e.compiled, e.durable, r), max(10, n // 5))
        facts = len(run(padded.compiled, padded.reference, preq).facts)
        scaling.append((copies, len(padded.compiled.ruleset), facts, p50))
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
        ("batch throughput, durable-rules, resolutions/s on one core", f"{durable_rps:.0f}/s",
         durable_rps / reference_rps),
        ("batch throughput, plain-Python evaluation of the same compiled rules", f"{reference_rps:.0f}/s", 1.0),
    ]
    base_p50 = scaling[0][3]
    rows += [(f"engine run, pack x{c}: {rules} compiled rules, {facts} facts (p50)", ms(p50), p50 / base_p50)
             for c, rules, facts, p50 in scaling]
    print(f"launch-resolver benchmark ({'smoke' if a.smoke else 'full'}; n={n}, cli n={n_cli}; Python {sys.version.split()[0]})")
    print(f"{'measure':<72} {'time':>22}  ratio")
    for name, value, ratio in rows:
        print(f"{name:<72} {value:>22}  {ratio:5.2f}x")
    print("ratios: engine rows against the floor; the conflict row against a resolved request; CLI rows against the "
          "import baseline; throughput against the plain-Python evaluation; pack rows against the shipped pack (x1)")


if __name__ == "__main__":
    main()
