"""Shared fixtures: the shipped engine, and small rule packs written into temporary folders."""
from __future__ import annotations

import os
import shutil
import tempfile
import textwrap

import pytest
from hypothesis import settings

# the property and fuzz tests draw the same examples on every run, so a run's verdict never depends
# on chance (a failure is found again by the next run); HYPOTHESIS_PROFILE=explore draws afresh
settings.register_profile("fixed", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fixed"))

# compiled rule packs are cached across processes: the tests (and the processes they start) use
# a cache of their own, never the user's
os.environ["LAUNCH_RESOLVER_CACHE"] = tempfile.mkdtemp(prefix="launch-resolver-cache-")

# imported only now, after the cache setting above, so nothing of the resolver's can run before it
from resolver.api import get_engine  # noqa: E402
from resolver.loader import default_rules_dir  # noqa: E402
from resolver.model_source import catalogue  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: the shipped model catalogue's configs by Hugging Face id (the tests' real config.json files)
CATALOGUE = {e.id: e.config for e in catalogue()}

PUBLIC_DATA = os.path.join(ROOT, "tests", "data", "sglang-0.5.23-public.jsonl")


@pytest.fixture(autouse=True)
def _no_columns(monkeypatch):
    """An explicit COLUMNS wraps the text output, even in a pipe; pytest-xdist's workers run with COLUMNS=80.
    Every test starts without it (a test about wrapping sets its own), so output never depends on the runner."""
    monkeypatch.delenv("COLUMNS", raising=False)


@pytest.fixture(scope="session")
def engine():
    return get_engine()


@pytest.fixture
def rules_dir(tmp_path):
    """Write rule files (name -> YAML text) into a fresh directory; returns its path."""

    def make(files: dict[str, str], with_shipped_options: bool = False) -> str:
        d = tmp_path / "rules"
        d.mkdir(exist_ok=True)
        if with_shipped_options:
            shutil.copy(os.path.join(default_rules_dir(), "options.yaml"), d / "options.yaml")
        for name, text in files.items():
            (d / name).write_text(textwrap.dedent(text))
        return str(d)

    return make


SEED_ARGV = ["--platform", "h100", "--model-arch", "DeepseekV32ForCausalLM", "--kv-cache-dtype", "fp8_e4m3",
             "--enable-hisparse", "--disable-radix-cache", "--dsa-decode-backend", "tilelang"]
SEED_ARGS = {"kv_cache_dtype": "fp8_e4m3", "enable_hisparse": True, "disable_radix_cache": True,
             "dsa_decode_backend": "tilelang"}


@pytest.fixture
def plugins(tmp_path, monkeypatch):
    """Install fake plugins: ``install({module: source}, "name = module:ATTR\\n...")`` writes the modules
    and a distribution whose entry points (group resolver.kernels) name them, then reloads the adapters.
    The adapters are loaded afresh first too: what a test compares against must not be a registry another
    test left behind (with its probes' answers)."""
    import sys

    from resolver.adapters import reload_registry

    reload_registry()
    modules: list[str] = []

    def install(sources: dict[str, str], entry_points: str) -> None:
        for name, text in sources.items():
            (tmp_path / f"{name}.py").write_text(textwrap.dedent(text))
            modules.append(name)
        dist = tmp_path / "fake_plugins-1.0.dist-info"
        dist.mkdir(exist_ok=True)
        (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-plugins\nVersion: 1.0\n")
        (dist / "entry_points.txt").write_text("[resolver.kernels]\n" + textwrap.dedent(entry_points))
        monkeypatch.syspath_prepend(str(tmp_path))
        reload_registry()

    yield install
    monkeypatch.undo()
    for name in modules:
        sys.modules.pop(name, None)
    reload_registry()


#: the test files that take longest, longest first (measured with --durations on 2 cores; from two minutes of CPU
#: down to about ten seconds each), collected before the rest: the test command hands whole files to its workers
#: in collection order (--no-loadscope-reorder, pyproject.toml), and a long file handed out last leaves the other
#: worker idle while it runs
LONG_FILES = ("test_lint_sweep.py", "test_sglang_differential.py", "test_parity.py", "test_declared_fields.py",
              "test_properties.py", "test_pack_cache.py", "test_jobs.py", "test_lint.py", "test_load.py",
              "test_missed_checks.py", "test_memory.py", "test_engine.py", "test_moe_kernels.py", "test_matrix.py",
              "test_moe_a2a.py", "test_adversarial_retest.py", "test_sglang_roundtrip.py", "test_env.py",
              "test_diff.py", "test_pd_hicache.py", "test_moe_overrides.py", "test_split.py", "test_speculative.py",
              "test_engine_limits.py", "test_value_parity.py", "test_detect.py")


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(LONG_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order
