"""The cross-process cache of compiled rule packs: used when fresh, rebuilt when anything changes,
exact (a pack read back equals a freshly loaded one), bounded on disk and in the process."""
import gc
import json
import os
import shutil
import weakref

import pytest

from resolver import core, pack_cache
from resolver.core import _load_and_compile, get_engine, resolve_request
from resolver.errors import EngineError
from resolver.loader import default_rules_dir
from resolver.pack_cache import _key, cache_dir, cached_pack, from_data, to_data

from ..conftest import SEED_ARGS

# a small pack touching every field kind: joins, null in lists, floats, aliases, from:, fixes
SMALL = """
schema: resolver/1
rules:
  - id: option.b
    kind: option
    doc: Backend.
    name: b
    type: choice
    choices: [x, y, z]
    value_aliases: {old_x: x}
    aliases: [--backend]
    unset_values: [auto, null]
    help: Backend.
  - id: option.c
    kind: option
    doc: Copy.
    name: c
    type: choice
    choices: [x, y, z]
    help: Copy.
  - id: option.r
    kind: option
    doc: Ratio.
    name: r
    type: float
    default: 0.5
    minimum: 0.25
    help: Ratio.
  - id: fact.same
    kind: fact
    doc: b and c agree.
    name: same
    when: b == c
  - id: default.b.hopper
    kind: default
    doc: Hopper picks y.
    when: platform.major == 9 or platform.major in [10, 12]
    set: {b: y}
    priority: 20
  - id: default.b.any
    kind: default
    doc: Anything picks x.
    set: {b: x}
    priority: 10
  - id: default.c
    kind: default
    doc: c follows b.
    set: {c: {from: b}}
    priority: 10
  - id: adjust.r
    kind: adjust
    doc: y halves r.
    when: b == "y" and r > 0.3
    option: r
    value: 0.3
    order: 1
    normalize: true
    message: y wants {new} (was {old}).
  - id: conflict.z
    kind: conflict
    doc: z needs Hopper.
    when: platform.major != 9 and same
    option: b
    allowed: [x, y, null]
    message: "{option} must be one of {allowed}."
    evidence: a test
    fixes:
      - description: use x
        set: {b: x}
        unset: [c]
"""


def _counting(directory):
    calls = []

    def build():
        calls.append(1)
        return _load_and_compile(directory)

    return calls, build


def _entries(where):
    return sorted(p.name for p in where.iterdir() if p.suffix == ".json")


def test_a_fresh_entry_is_used_and_any_change_rebuilds(tmp_path, monkeypatch):
    monkeypatch.setenv("LAUNCH_RESOLVER_CACHE", str(tmp_path / "cache"))
    rules = tmp_path / "rules"
    shutil.copytree(default_rules_dir(), rules)
    calls, build = _counting(str(rules))
    first = cached_pack(str(rules), build)
    second = cached_pack(str(rules), build)
    assert len(calls) == 1 and second == first
    # same size, same mtime, different content: still rebuilt (the key hashes the content)
    path = rules / "kernels.yaml"
    stat = path.stat()
    path.write_text(path.read_text().replace("R13 (medium", "R13 (MEDIUM"))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    cached_pack(str(rules), build)
    assert len(calls) == 2


def test_a_pack_read_back_equals_a_freshly_loaded_one(tmp_path, monkeypatch):
    monkeypatch.setenv("LAUNCH_RESOLVER_CACHE", str(tmp_path / "cache"))
    small = tmp_path / "small"
    small.mkdir()
    (small / "a.yaml").write_text(SMALL)
    for directory in (default_rules_dir(), str(small)):
        calls, build = _counting(directory)
        cached_pack(directory, build)
        pack, compiled = cached_pack(directory, build)  # from the entry
        fresh_pack, fresh_compiled = _load_and_compile(directory)
        assert len(calls) == 1
        assert pack == fresh_pack and compiled == fresh_compiled
        assert compiled.pack is pack and all(b.rule is pack.rule(b.rule.ref.id) for b in compiled.branches.values())
        # the same order everywhere (dict equality would not see it): options, facts, ruleset
        assert to_data(pack, compiled) == json.loads(json.dumps(to_data(fresh_pack, fresh_compiled)))
        assert list(compiled.ruleset) == list(fresh_compiled.ruleset)


def test_an_entry_serves_every_working_directory_with_its_own_citations(tmp_path, monkeypatch):
    """The key leaves the working directory out: a first call from a new directory reads the entry,
    and a rule is cited from where the reader runs, as a fresh load there cites it."""
    monkeypatch.setenv("LAUNCH_RESOLVER_CACHE", str(tmp_path / "cache"))
    small = tmp_path / "packs" / "small"
    small.mkdir(parents=True)
    (small / "a.yaml").write_text(SMALL)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    calls, build = _counting(str(small))
    cited = {}
    for where in (tmp_path / "packs", elsewhere, small):
        monkeypatch.chdir(where)
        pack, _ = cached_pack(str(small), build)
        assert pack == _load_and_compile(str(small))[0]  # equal to a fresh load here, citations and all
        cited[where.name] = pack.rule("conflict.z").ref.file
    assert len(calls) == 1
    assert cited == {"packs": os.path.join("small", "a.yaml"), "elsewhere": str(small / "a.yaml"), "small": "a.yaml"}


def test_resolutions_from_a_cached_pack_are_the_same(tmp_path, monkeypatch):
    directory = default_rules_dir()
    fresh = core.Engine(*(built := _load_and_compile(directory)), core.ReferenceMatcher(built[1]))
    pack, compiled = from_data(json.loads(pack_cache._encode("k" * 64, built).split(b"\n", 1)[1]))
    cached = core.Engine(pack, compiled, core.ReferenceMatcher(compiled))
    for platform in ("h100", "a100", "b200", "mi300x"):
        for arch in ("LlamaForCausalLM", "DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM"):
            for args in ({}, {"kv_cache_dtype": "fp8_e4m3"}, SEED_ARGS):
                a, b = (resolve_request(e, platform=platform, model_arch=arch, args=args, fixes=False)
                        for e in (fresh, cached))
                assert a.to_dict() == b.to_dict(), (platform, arch, args)


def test_a_corrupt_entry_is_rebuilt_and_off_means_off(tmp_path, monkeypatch):
    monkeypatch.setenv("LAUNCH_RESOLVER_CACHE", str(tmp_path))
    calls, build = _counting(default_rules_dir())
    cached_pack(default_rules_dir(), build)
    (entry,) = [p for p in tmp_path.iterdir() if p.suffix == ".json"]
    for junk in (b"not json", b'{"format": 3}', b"[1, 2]", entry.read_bytes()[:1000]):
        entry.write_bytes(junk)
        cached_pack(default_rules_dir(), build)
    assert len(calls) == 5
    monkeypatch.setenv("LAUNCH_RESOLVER_CACHE", "off")
    assert cache_dir() is None
    cached_pack(default_rules_dir(), build)
    cached_pack(default_rules_dir(), build)
    assert len(calls) == 7


def test_an_unwritable_cache_does_not_fail_a_launch(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("LAUNCH_RESOLVER_CACHE", str(blocker / "sub"))  # a path under a file
    calls, build = _counting(default_rules_dir())
    assert cached_pack(default_rules_dir(), build)[0].options and calls == [1]


def test_a_misshapen_or_writable_entry_is_never_used(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("LAUNCH_RESOLVER_CACHE", str(cache))
    calls, build = _counting(default_rules_dir())
    cached_pack(default_rules_dir(), build)
    assert oct(cache.stat().st_mode & 0o777) == "0o700"
    key = _key(default_rules_dir())
    entry = cache / (key + ".json")
    assert entry.stat().st_mode & 0o777 == 0o600
    good = entry.read_bytes()
    # the right key, the wrong shape
    entry.write_text(json.dumps({"format": pack_cache._FORMAT, "key": key, "pack": 42, "compiled": {}}))
    assert cached_pack(default_rules_dir(), build)[0].options and len(calls) == 2
    entry.write_bytes(good)
    entry.chmod(0o666)  # writable by others: whoever could write it may have chosen its content
    cached_pack(default_rules_dir(), build)
    assert len(calls) == 3


def _small_dirs(tmp_path, n):
    out = []
    for i in range(n):
        d = tmp_path / f"rules{i}"
        d.mkdir()
        (d / "a.yaml").write_text(SMALL.replace("priority: 20", f"priority: {20 + i}"))
        out.append(str(d))
    return out


def test_the_disk_cache_keeps_the_most_recently_used_entries(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("LAUNCH_RESOLVER_CACHE", str(cache))
    monkeypatch.setattr(pack_cache, "_MAX_ENTRIES", 3)
    dirs = _small_dirs(tmp_path, 5)
    names = [_key(d) + ".json" for d in dirs]
    for i, d in enumerate(dirs[:3]):
        cached_pack(d, _counting(d)[1])
        os.utime(cache / names[i], (1000 + i, 1000 + i))  # explicit ages: file times can be coarse
    calls, build = _counting(dirs[0])
    cached_pack(dirs[0], build)  # a hit makes dirs[0] the most recently used
    assert not calls
    (cache / ("0" * 64 + ".pickle")).write_bytes(b"old format")
    (cache / ".old.tmp").write_bytes(b"")
    os.utime(cache / ".old.tmp", (1, 1))
    (cache / ".fresh.tmp").write_bytes(b"")  # another process may be writing it
    cached_pack(dirs[3], _counting(dirs[3])[1])
    assert _entries(cache) == sorted([names[0], names[2], names[3]])
    assert sorted(p.name for p in cache.iterdir() if p.suffix != ".json") == [".fresh.tmp"]
    # and a byte cap: room for about two entries
    monkeypatch.setattr(pack_cache, "_MAX_BYTES", 2 * (cache / names[3]).stat().st_size + 100)
    cached_pack(dirs[4], _counting(dirs[4])[1])
    assert len(_entries(cache)) == 2 and names[4] in _entries(cache)


def test_the_process_keeps_a_few_engines_and_frees_the_others(rules_dir, tmp_path):
    dirs = _small_dirs(tmp_path, 20)
    refs, matchers = [], []
    for d in dirs:
        engine = get_engine(d)
        assert resolve_request(engine, platform="h100").values["b"] == "y"
        refs.append(weakref.ref(engine))
        matchers.append(engine.durable)
    del engine
    get_engine(dirs[-1])  # frees whatever was evicted since the last call
    gc.collect()
    alive = [r() is not None for r in refs]
    assert len(core._ENGINES) <= core._MAX_ENGINES and sum(alive) <= core._MAX_ENGINES
    assert alive[-core._MAX_ENGINES:] == [True] * core._MAX_ENGINES
    for matcher, live in zip(matchers, alive, strict=True):
        assert bool(matcher._host._ruleset_directory) == live  # the evicted ones' rulesets are deleted
    # a closed matcher refuses to run, it does not crash
    with pytest.raises(EngineError), matchers[0].session() as s:
        s.assert_facts([{"t": "val", "o": "platform.name", "v": "sm90"}])
    matchers[0].close()  # idempotent


def test_an_evicted_engine_still_in_use_keeps_working(tmp_path):
    dirs = _small_dirs(tmp_path, core._MAX_ENGINES + 2)
    held = get_engine(dirs[0])
    for d in dirs[1:]:
        get_engine(d)
    assert all(k[0] != dirs[0] for k in core._ENGINES)  # evicted, but held here: not freed
    assert resolve_request(held, platform="h100").values["b"] == "y"
    matcher = held.durable
    del held
    get_engine(dirs[-1])
    assert not matcher._host._ruleset_directory  # freed once nobody held it
