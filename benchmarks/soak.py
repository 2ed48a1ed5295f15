"""Soak: resolve many requests in one process and watch its memory (it must stay flat).

    python benchmarks/soak.py                 # 100,000 resolutions (about 10 minutes)
    python benchmarks/soak.py --count 5000    # a shorter run

Prints the resident set size at intervals and the growth after warm-up.  Each resolution's
facts are retracted from the matcher's one sid at its end (engine.py); a leak of facts or of
sessions per resolution would show here as steady growth.  tests/test_load.py runs a short variant.
"""
from __future__ import annotations

import argparse
import itertools
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from resolver.api import get_engine, resolve_request  # noqa: E402

REQUESTS = [
    ("h100", "DeepseekV32ForCausalLM", {"kv_cache_dtype": "fp8_e4m3", "enable_hisparse": True,
                                        "disable_radix_cache": True}),
    ("b200", "LlamaForCausalLM", {}),
    ("rtx5090", "GlmMoeDsaForCausalLM", {}),
    ("mi300x", "DeepseekV3ForCausalLM", {"page_size": 64}),
    ("h100", "DeepseekV32ForCausalLM", {"dsa_decode_backend": "trtllm"}),  # a conflict (no fix search: see below)
]


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def soak(count: int, every: int, out=sys.stdout) -> tuple[float, float]:
    """Resolve ``count`` requests; return (RSS after warm-up, RSS at the end) in MiB."""
    engine = get_engine()
    warm = None
    for i, (platform, arch, args) in zip(range(1, count + 1), itertools.cycle(REQUESTS)):
        resolve_request(engine, platform=platform, model_arch=arch, args=args, fixes=False)
        if i == min(1000, count // 5):
            warm = rss_mb()
        if out is not None and i % every == 0:
            out.write(f"{i:>8} resolutions  rss {rss_mb():7.1f} MiB\n")
    return warm or rss_mb(), rss_mb()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--count", type=int, default=100_000)
    p.add_argument("--every", type=int, default=10_000)
    ns = p.parse_args()
    warm, end = soak(ns.count, ns.every)
    print(f"after warm-up {warm:.1f} MiB, at the end {end:.1f} MiB: growth {end - warm:+.1f} MiB over "
          f"{ns.count} resolutions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
