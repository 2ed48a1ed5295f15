"""Measure the resolver's costs, as ratios against baselines measured in the same run.

    python benchmarks/bench.py            # full run (about a minute; packs up to x16)
    python benchmarks/bench.py --smoke    # CI smoke run: few iterations, figures only
    python benchmarks/bench.py --sglang 200   # also: warm resolve() against SGLang's own resolution

Nothing here asserts a time: figures are printed for docs/performance.md.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tools"))

import resolver.engine as engine_module  # noqa: E402
from resolver.core import Engine, _load_and_compile, get_engine, resolve_request  # noqa: E402
from resolver.engine import ReferenceMatcher  # noqa: E402
from resolver.resolution import run  # noqa: E402

ARCH = "DeepseekV32ForCausalLM"
PLAIN = {"kv_cache_dtype": "fp8_e4m3", "enable_hisparse": True, "disable_radix_cache": True}
SEED = dict(PLAIN, dsa_decode_backend="tilelang")


def timed(fn, n, clock=time.perf_counter):
    out = []
    for _ in range(n):
        t = clock()
        fn()
        out.append(clock() - t)
    out.sort()
    return out[len(out) // 2], out[min(len(out) - 1, int(len(out) * 0.99))]


def engine_calls(engine, request) -> list[tuple[int, list[dict]]]:
    """The durable-rules calls of one resolution: (ruleset handle, facts), as the matcher makes them."""
    calls, real = [], engine_module._fire

    def record(native, handle, facts):
        calls.append((handle, [{k: v for k, v in json.loads(f).items() if k != "sid"} for f in facts]))
        return real(native, handle, facts)

    engine_module._fire = record
    try:
        run(engine.compiled, engine.durable, request)
    finally:
        engine_module._fire = real
    return calls


def floor_runner(engine, request):
    """A bare durable-rules session: the same facts asserted into the same rulesets of the native engine,
    the same matches taken, nothing decided."""
    calls = engine_calls(engine, request)
    native, counter = engine.durable._native, [10**9]
    handles = sorted({handle for handle, _ in calls})

    def once():
        counter[0] += 1
        sid = str(counter[0])
        opened = set()
        try:
            for handle, facts in calls:
                batch = [dict(f, sid=sid) for f in facts if f.get("id") != "open"]
                if handle not in opened:
                    # as the matcher does (resolver/engine.py): the sink takes one fact on a sid's first call
                    # into a part, so an action runs there; delete_state corrupts the heap of a sid that holds
                    # facts but never ran one (a part where no rule fires for this launch)
                    opened.add(handle)
                    batch.insert(0, {"id": "open", "sid": sid, "t": "val", "o": "", "s": 1})
                engine_module._fire(native, handle, [json.dumps(f, ensure_ascii=False) for f in batch])
        finally:
            for handle in handles:
                native.delete_state(handle, sid)
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
    per_file = 4 * 1000  # 1,000 groups: a rule file is at most 1 MiB
    for start in range(2, len(lines), per_file):
        with open(os.path.join(directory, f"zz_pad_{start // per_file}.yaml"), "w") as fh:
            fh.write("\n".join(lines[:2] + lines[start:start + per_file]) + "\n")
    return directory


def padded_engine(copies: int) -> Engine:
    """An engine for ``padded_pack(copies)``, loaded and compiled here (the pack cache is bypassed:
    the build is timed, and throwaway packs would evict the user's cached ones)."""
    directory = padded_pack(copies)
    try:
        pack, compiled = _load_and_compile(directory)
    finally:
        shutil.rmtree(directory)
    return Engine(pack, compiled, ReferenceMatcher(compiled))


def scaling_rows(copies: tuple[int, ...], n: int) -> list[tuple]:
    """(copies, rules, parts, facts asserted, rules fired, load+compile s, p50 s) per padded pack.

    Timed in CPU time of this thread: the cores are shared, and another process running on this
    one doubles wall-clock times at random (seen: x1 3.9 ms, then 8.3 ms, in one process), which
    makes ratios between packs timed at different moments meaningless."""
    rows = []
    for c in copies:  # one pack of x16 would be past durable-rules 2.0.28's limits: the compiler splits it
        t = time.perf_counter()
        e = padded_engine(c)
        build = time.perf_counter() - t
        req = resolve_request(e, platform="h100", args=PLAIN, model_arch=ARCH).request
        facts = sum(len(batch) for _, batch in engine_calls(e, req))
        fired = len(run(e.compiled, e.reference, req).fired)
        timed(lambda e=e, r=req: run(e.compiled, e.durable, r), 5)  # warm
        p50, _ = timed(lambda e=e, r=req: run(e.compiled, e.durable, r), n, time.thread_time)
        rows.append((c, len(e.compiled.branches), len(e.compiled.parts), facts, fired, build, p50))
        e.durable.close()  # its rulesets' C memory: the next pack is timed without it
    return rows


def sglang_paired(count: int, repeat: int = 5) -> list[tuple[str, float, float, float]] | None:
    """(launch id, SGLang's resolution, our warm resolve_request(), our batch line) in seconds, medians of
    ``repeat`` runs each, for ``count`` random launches of the differential test (tools/sglang_diff.py;
    the same seed as CI).

    Both sides run in the oracle's interpreter (benchmarks/sglang_baseline.py), back to back for each
    run, so that a busy machine slows both alike.  None when the oracle is not installed (docs/parity.md
    says how)."""
    from sglang_diff import as_launched, launches, oracle_lock

    oracle = os.environ.get("SGLANG_ORACLE_DIR") or os.path.join(os.path.dirname(ROOT), "shared", "oracle")
    python = (os.environ.get("SGLANG_ORACLE_PYTHON")
              or os.path.join(os.path.dirname(ROOT), ".oracle-venv", "bin", "python"))
    if not (os.path.isfile(python) and os.path.isdir(oracle)):
        return None
    requests = {r["id"]: r for r in launches(20261201, count)}
    machines: dict[str, list] = {}
    for rid, r in requests.items():
        machine = {"platform": r["platform"], "platform_overrides": r.get("platform_overrides", {})}
        key = json.dumps([machine, r.get("env", {})], sort_keys=True)
        machines.setdefault(key, []).append([rid, {k: v for k, v in r.items() if k != "id"}])
    timings: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory() as scratch, oracle_lock():
        for n, (key, cases) in enumerate(sorted(machines.items())):
            machine, env = json.loads(key)
            spec, out = os.path.join(scratch, f"spec{n}.json"), os.path.join(scratch, f"out{n}.json")
            lines = {rid: json.dumps(as_launched(requests[rid])) for rid, _ in cases}
            with open(spec, "w", encoding="utf-8") as fh:
                json.dump({"machine": machine, "env": env, "cases": cases, "repeat": repeat,
                           "ours": {"root": ROOT, "lines": lines}}, fh)
            subprocess.run([python, "-B", os.path.join(ROOT, "benchmarks", "sglang_baseline.py"), oracle, spec, out],
                           cwd=os.path.dirname(oracle), check=True, capture_output=True,
                           env={**os.environ, **env, "PYTHONHASHSEED": "0"})
            with open(out, encoding="utf-8") as fh:
                timings.update(json.load(fh))
    return [(rid, statistics.median(t["sglang"]), statistics.median(t["resolve"]), statistics.median(t["line"]))
            for rid, t in sorted(timings.items())]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--smoke", action="store_true", help="few iterations (CI)")
    ap.add_argument("--sglang", type=int, default=0, metavar="N",
                    help="also time N random launches against SGLang's own resolution (needs the oracle)")
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
    scaling = scaling_rows((1, 4) if a.smoke else (1, 2, 4, 10, 16), max(10, n // 5))
    py = sys.executable
    base_cli = cli_seconds([py, "-c", "import yaml, durable.engine"], n_cli)
    cli = cli_seconds([py, "-m", "resolver", "--platform", "h100", "--model-arch", ARCH], n_cli)
    seed_cli = cli_seconds([py, "-m", "resolver", "--platform", "h100", "--model-arch", ARCH,
                            "--kv-cache-dtype", "fp8_e4m3", "--enable-hisparse", "--disable-radix-cache",
                            "--dsa-decode-backend", "tilelang"], n_cli)
    ms = lambda s: f"{s * 1000:.2f} ms"  # noqa: E731
    rows = [
        ("resolve() warm, resolved request (p50 / p99)", f"{ms(resolve_p50)} / {ms(resolve_p99)}",
         resolve_p50 / floor_p50),
        ("engine run only, durable-rules (p50 / p99)", f"{ms(run_p50)} / {ms(run_p99)}", run_p50 / floor_p50),
        ("floor: bare durable-rules session, same facts and firings (p50 / p99)", f"{ms(floor_p50)} / {ms(floor_p99)}",
         1.0),
        ("same run on the plain-Python reference matcher (p50)", ms(ref_p50), ref_p50 / floor_p50),
        ("conflict with checked fixes, the seed case (p50)", ms(seed_p50), seed_p50 / resolve_p50),
        ("CLI, process start to output, resolved", ms(cli), cli / base_cli),
        ("CLI, seed conflict with fixes", ms(seed_cli), seed_cli / base_cli),
        ("baseline: python -c 'import yaml, durable.engine'", ms(base_cli), 1.0),
        ("batch throughput, durable-rules, resolutions/s on one core", f"{durable_rps:.0f}/s",
         durable_rps / reference_rps),
        ("batch throughput, plain-Python evaluation of the same compiled rules", f"{reference_rps:.0f}/s", 1.0),
    ]
    base_p50 = scaling[0][-1]
    rows += [(f"engine run, pack x{c}: {rules} rules in {parts} part{'s' * (parts > 1)} (CPU p50)", ms(p50),
              p50 / base_p50)
             for c, rules, parts, _, _, _, p50 in scaling]
    print(f"launch-resolver benchmark ({'smoke' if a.smoke else 'full'}; n={n}, cli n={n_cli}; "
          f"Python {sys.version.split()[0]})")
    print(f"{'measure':<72} {'time':>22}  ratio")
    for name, value, ratio in rows:
        print(f"{name:<72} {value:>22}  {ratio:5.2f}x")
    print("ratios: engine rows against the floor; the conflict row against a resolved request; CLI rows against the "
          "import baseline; throughput against the plain-Python evaluation; pack rows against the shipped pack (x1)")
    print()
    print("scaling: CPU time per resolution against the shipped pack (x1); work = facts asserted + rules fired")
    print(f"{'pack':<5} {'rules':>6} {'parts':>5} {'facts':>6} {'fired':>6} {'load+compile':>12} {'p50':>10} "
          f"{'ratio':>6} {'work ratio':>10} {'us per work':>11}")
    base_work = scaling[0][3] + scaling[0][4]
    for c, rules, parts, facts, fired, build, p50 in scaling:
        print(f"x{c:<4} {rules:>6} {parts:>5} {facts:>6} {fired:>6} {build:>11.2f}s {ms(p50):>10} "
              f"{p50 / base_p50:>5.2f}x {(facts + fired) / base_work:>9.2f}x {p50 * 1e6 / (facts + fired):>11.1f}")
    if a.sglang:
        print()
        print_sglang_rows(a.sglang)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def _quantile(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def print_sglang_rows(count: int) -> None:
    paired = sglang_paired(count)
    if paired is None:
        print("SGLang comparison skipped: the oracle is not installed (docs/parity.md)")
        return
    print(f"against SGLang 0.5.23's own resolution (resolve_once + check_server_args), {len(paired)} random launches "
          "of the differential test, both sides in one process, paired run by run (medians of 5 runs):")
    ms = _ms
    print(f"  SGLang p50 {ms(statistics.median(t for _, t, _, _ in paired))}")
    for label, column in (("warm resolve_request()", 2), ("resolve --batch --no-fixes line", 3)):
        ratios = sorted(row[column] / row[1] for row in paired)
        quart = functools.partial(_quantile, ratios)
        total = sum(row[column] for row in paired) / sum(row[1] for row in paired)
        print(f"  {label}: p50 {ms(statistics.median(row[column] for row in paired))}; ratio to SGLang per launch: "
              f"p25 {quart(0.25):.2f}x, p50 {quart(0.5):.2f}x, p75 {quart(0.75):.2f}x; total {total:.2f}x")


if __name__ == "__main__":
    main()
