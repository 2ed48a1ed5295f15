"""The compiled-pack cache cannot be made to run code or to change an answer.

Entries are JSON data bound to the files that built them; they are opened relative to a checked
directory descriptor, never through a link, and only when this user alone could have written
them; a directory others could change is not used at all (one note on stderr says so).
"""
import json
import logging
import os
import pickle
import shutil
import signal
import subprocess
import sys
import textwrap

import pytest

from resolver import pack_cache
from resolver.core import _load_and_compile
from resolver.pack_cache import _key, cache_dir, cached_pack

from .conftest import ROOT

PACK = """
schema: resolver/1
rules:
  - id: option.b
    kind: option
    doc: Backend.
    name: b
    type: choice
    choices: [x, y, z]
    help: Backend.
  - id: default.b.hopper
    kind: default
    doc: Hopper picks y.
    when: platform.major == 9
    set: {b: y}
    priority: 20
  - id: default.b.any
    kind: default
    doc: Anything picks x.
    set: {b: x}
    priority: 10
"""
OTHER = PACK.replace("set: {b: y}", "set: {b: z}")  # another answer on Hopper

as_root = pytest.mark.skipif(os.getuid() != 0, reason="giving a file to another user needs root")


class _RunsCode:
    """Unpickling this creates the marker file: proof that a pickle was loaded."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return open, (self.marker, "w")


@pytest.fixture
def packs(tmp_path):
    made = {}
    for name, text in (("rules", PACK), ("other", OTHER)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "a.yaml").write_text(text)
        made[name] = str(tmp_path / name)
    return made


@pytest.fixture
def note(monkeypatch, caplog):
    """The notes logged by the cache in this test (the once-per-process flag is reset)."""
    monkeypatch.setattr(pack_cache, "_noted", False)
    caplog.set_level(logging.WARNING, logger="resolver")
    return lambda: [r.getMessage() for r in caplog.records if r.name == "resolver"]


def _counting(directory):
    calls = []

    def build():
        calls.append(1)
        return _load_and_compile(directory)

    return calls, build


def _hopper_value(built):
    (default,) = [d for d in built[0].defaults if d.ref.id == "default.b.hopper"]
    return default.set["b"]


def _payloads(marker):
    """Entry contents whose loading by pickle or by an unsafe YAML loader would create ``marker``."""
    live = pickle.dumps(_RunsCode(marker))
    pickle.loads(live).close()  # the payload is live: loading it does create the marker
    assert os.path.exists(marker)
    os.unlink(marker)
    return [live, f"!!python/object/apply:os.system ['touch {marker}']\n".encode()]


def test_a_planted_entry_that_would_run_code_is_never_run_and_is_rebuilt(tmp_path, monkeypatch, packs):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    monkeypatch.setenv("LAUNCH_RESOLVER_CACHE", str(cache))
    marker = tmp_path / "ran"
    key = _key(packs["rules"])
    for payload in _payloads(marker):
        for name in (key + ".json", key + ".pickle"):
            (cache / name).write_bytes(payload)
        calls, build = _counting(packs["rules"])
        assert _hopper_value(cached_pack(packs["rules"], build)) == "y" and calls == [1]
        assert not marker.exists()
        assert json.loads((cache / (key + ".json")).read_bytes().split(b"\n")[0])["key"] == key  # rebuilt as data
        assert not (cache / (key + ".pickle")).exists()  # the old format is removed, never read


def test_a_symlinked_entry_is_not_followed(tmp_path, monkeypatch, packs):
    elsewhere, cache = tmp_path / "elsewhere", tmp_path / "cache"
    monkeypatch.setenv("LAUNCH_RESOLVER_CACHE", str(elsewhere))
    cached_pack(packs["rules"], _counting(packs["rules"])[1])
    name = _key(packs["rules"]) + ".json"
    target = elsewhere / name
    before = target.read_bytes()
    cache.mkdir(mode=0o700)
    (cache / name).symlink_to(target)  # a good entry, but through a link
    monkeypatch.setenv("LAUNCH_RESOLVER_CACHE", str(cache))
    calls, build = _counting(packs["rules"])
    cached_pack(packs["rules"], build)
    assert calls == [1]  # not read through the link
    assert not (cache / name).is_symlink() and (cache / name).is_file()  # replaced, not written through
    assert target.read_bytes() == before


def test_a_fifo_entry_does_not_block(tmp_path, monkeypatch, packs):
    monkeypatch.setenv("LAUNCH_RESOLVER_CACHE", str(tmp_path))
    fifo = tmp_path / (_key(packs["rules"]) + ".json")
    os.mkfifo(fifo, 0o600)
    previous = signal.signal(signal.SIGALRM, lambda *_: pytest.fail("opening a FIFO entry blocked"))
    signal.alarm(20)
    try:
        calls, build = _counting(packs["rules"])
        cached_pack(packs["rules"], build)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert calls == [1] and fifo.is_file()


def test_an_entry_built_from_another_pack_is_refused(tmp_path, monkeypatch, packs):
    cache = tmp_path / "cache"
    monkeypatch.setenv("LAUNCH_RESOLVER_CACHE", str(cache))
    for name in ("rules", "other"):
        cached_pack(packs[name], _counting(packs[name])[1])
    mine, theirs = (cache / (_key(packs[n]) + ".json") for n in ("rules", "other"))
    shutil.copyfile(theirs, mine)  # a valid entry, under this pack's name
    calls, build = _counting(packs["rules"])
    assert _hopper_value(cached_pack(packs["rules"], build)) == "y" and calls == [1]
    assert cached_pack(packs["rules"], build) == _load_and_compile(packs["rules"]) and calls == [1]


@pytest.mark.parametrize("layout", ["dir-0777", "dir-0770", "parent-0777", "parent-0775", "parent-sticky-0777"])
def test_a_directory_others_can_write_is_refused_with_a_note(tmp_path, monkeypatch, packs, note, layout):
    parent = tmp_path / "shared"
    parent.mkdir()
    cache = parent / "cache"
    if layout.startswith("dir-"):
        cache.mkdir()
        cache.chmod(int(layout[4:], 8))
    else:
        parent.chmod(int(layout.rsplit("-", 1)[1], 8) | (0o1000 if "sticky" in layout else 0))
    monkeypatch.setenv("LAUNCH_RESOLVER_CACHE", str(cache))
    calls, build = _counting(packs["rules"])
    cached_pack(packs["rules"], build)
    cached_pack(packs["rules"], build)
    if layout == "parent-sticky-0777":  # like /tmp: others cannot move or replace what is ours
        assert calls == [1] and not note()
        return
    assert calls == [1, 1] and not (cache.exists() and any(cache.iterdir()))
    (message,) = note()  # once per process
    assert "not cached" in message and "LAUNCH_RESOLVER_CACHE" in message and str(tmp_path) in message
    assert "\n" not in message


def test_a_link_on_the_way_counts_only_where_it_lives(tmp_path, monkeypatch, packs, note):
    private, shared = tmp_path / "private", tmp_path / "shared"
    private.mkdir(mode=0o700)
    shared.mkdir()
    shared.chmod(0o777)
    (tmp_path / "mine").symlink_to(private)
    (shared / "theirs").symlink_to(private)  # anybody could point this elsewhere
    monkeypatch.setenv("LAUNCH_RESOLVER_CACHE", str(tmp_path / "mine" / "cache"))
    cached_pack(packs["rules"], _counting(packs["rules"])[1])
    assert (private / "cache" / (_key(packs["rules"]) + ".json")).is_file() and not note()
    monkeypatch.setenv("LAUNCH_RESOLVER_CACHE", str(shared / "theirs" / "cache"))
    calls, build = _counting(packs["rules"])
    cached_pack(packs["rules"], build)
    assert calls == [1] and "can be written by other users" in note()[0]


@as_root
def test_a_directory_or_entry_of_another_user_is_refused(tmp_path, monkeypatch, packs, note):
    nobody = 65534
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o755)
    os.chown(theirs, nobody, nobody)
    monkeypatch.setenv("LAUNCH_RESOLVER_CACHE", str(theirs / "cache"))
    calls, build = _counting(packs["rules"])
    cached_pack(packs["rules"], build)
    assert calls == [1] and "owned by another user" in note()[0]
    cache = tmp_path / "cache"
    monkeypatch.setenv("LAUNCH_RESOLVER_CACHE", str(cache))
    cached_pack(packs["rules"], build)
    os.chown(cache / (_key(packs["rules"]) + ".json"), nobody, nobody)
    cached_pack(packs["rules"], build)
    assert calls == [1, 1, 1]


@pytest.mark.parametrize("env", [{"LAUNCH_RESOLVER_CACHE": "rel/cache"}, {"XDG_CACHE_HOME": "rel"}, {"HOME": ""},
                                 {"HOME": "relhome"}])
def test_relative_settings_and_an_empty_home_give_no_cache(tmp_path, monkeypatch, packs, note, env):
    monkeypatch.chdir(tmp_path)
    for name in ("LAUNCH_RESOLVER_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    before = sorted(os.listdir(tmp_path))
    assert cache_dir() is None
    calls, build = _counting(packs["rules"])
    cached_pack(packs["rules"], build)
    cached_pack(packs["rules"], build)
    assert calls == [1, 1] and sorted(os.listdir(tmp_path)) == before
    (message,) = note()
    assert "not an absolute path" in message and "LAUNCH_RESOLVER_CACHE" in message


def test_the_cli_says_it_once_on_stderr_and_keeps_stdout_clean(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    argv = [sys.executable, "-m", "resolver", "--platform", "h100", "--model-arch", "LlamaForCausalLM"]
    runs = {}
    for setting in ("off", str(shared / "cache")):
        env = dict(os.environ, LAUNCH_RESOLVER_CACHE=setting)
        runs[setting] = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True,
                                       timeout=120, check=False)
    off, refused = runs.values()
    assert refused.returncode == off.returncode == 0 and refused.stdout == off.stdout
    extra = refused.stderr.splitlines()[len(off.stderr.splitlines()):]
    assert len(extra) == 1 and "LAUNCH_RESOLVER_CACHE" in extra[0] and refused.stderr.startswith(off.stderr)


_SWAPPER = textwrap.dedent("""
    import os, shutil, sys, time
    cache, variants, seconds = sys.argv[1], sys.argv[2:-1], float(sys.argv[-1])
    base, deadline, n = os.path.dirname(cache), time.monotonic() + seconds, 0

    def move(src, dst):
        try:
            os.rename(src, dst)
            return True
        except OSError:
            return False

    while time.monotonic() < deadline:
        n += 1
        planted, aside = os.path.join(base, f"planted{n}"), os.path.join(base, f"aside{n}")
        shutil.copytree(variants[n % len(variants)], planted, symlinks=True)
        move(cache, aside)  # the real directory out ...
        if not move(planted, cache):  # (a resolver re-created it meanwhile: push that aside too)
            move(cache, os.path.join(base, f"junk{n}"))
            move(planted, cache)
        time.sleep(0.003)  # ... the planted one in, for a while ...
        move(cache, planted)
        if not move(aside, cache):  # ... and back
            move(cache, os.path.join(base, f"junk{n}b"))
            move(aside, cache)
        shutil.rmtree(planted, ignore_errors=True)
        time.sleep(0.001)
    print(n)
""")

_BUILD = textwrap.dedent("""
    import sys
    from resolver.core import _load_and_compile
    from resolver.pack_cache import cached_pack
    cached_pack(sys.argv[1], lambda: _load_and_compile(sys.argv[1]))
""")

_RESOLVER = textwrap.dedent("""
    import json, sys, time
    from resolver import core
    from resolver.api import get_engine, resolve_request
    rules, want, deadline = sys.argv[1], sys.argv[2], time.monotonic() + float(sys.argv[3])
    builds, build = [], core._load_and_compile
    core._load_and_compile = lambda d: builds.append(1) or build(d)
    n = wrong = 0
    while time.monotonic() < deadline:
        core._ENGINES.clear()  # every round goes to the cache directory again
        wrong += resolve_request(get_engine(rules), platform="h100").values["b"] != want
        n += 1
    print(json.dumps({"n": n, "wrong": wrong, "builds": len(builds)}))
""")


def test_swapping_the_cache_directory_during_resolutions_changes_nothing(tmp_path, monkeypatch, packs):
    """One process keeps renaming planted directories in and out; another resolves meanwhile."""
    seconds = 2.5
    monkeypatch.chdir(tmp_path)  # where the processes run: a relative path means the same here
    cache, marker = tmp_path / "cache", tmp_path / "ran"
    key = _key(packs["rules"])
    name = key + ".json"
    env = dict(os.environ, LAUNCH_RESOLVER_CACHE=str(tmp_path / "theirs"))
    # the other pack's entry, made by a process like the resolver's (same working directory)
    subprocess.run([sys.executable, "-c", _BUILD, packs["other"]], env=env, cwd=str(tmp_path), check=True, timeout=60)
    theirs = tmp_path / "theirs" / os.listdir(tmp_path / "theirs")[0]
    variants = []
    for i, payload in enumerate([theirs.read_bytes(), *_payloads(marker)]):
        v = tmp_path / f"variant{i}"
        v.mkdir(mode=0o700)
        (v / name).write_bytes(payload)
        (v / (key + ".pickle")).write_bytes(_payloads(marker)[0])
        variants.append(str(v))
    v = tmp_path / "variant-link"
    v.mkdir(mode=0o700)
    (v / name).symlink_to(theirs)
    variants.append(str(v))
    env["LAUNCH_RESOLVER_CACHE"] = str(cache)
    swapper = subprocess.Popen([sys.executable, "-c", _SWAPPER, str(cache), *variants, str(seconds)], env=env,
                               cwd=str(tmp_path), stdout=subprocess.PIPE, text=True)
    try:
        resolver = subprocess.run([sys.executable, "-c", _RESOLVER, packs["rules"], "y", str(seconds)], env=env,
                                  cwd=str(tmp_path), capture_output=True, text=True, timeout=120, check=False)
    finally:
        swaps = int(swapper.communicate(timeout=120)[0])
    assert resolver.returncode == 0, resolver.stderr
    result = json.loads(resolver.stdout)
    assert result["wrong"] == 0 and result["n"] >= 10 and swaps >= 10, (result, swaps)
    assert result["builds"] >= 1  # planted directories were met: their entries were refused, the pack rebuilt
    assert not marker.exists()


def _entry(cache, directory):
    return cache / (_key(directory) + ".json")


def test_every_changed_byte_of_an_entry_is_caught_and_the_entry_rebuilt(tmp_path, monkeypatch, packs):
    """Issue 23 D: a one-byte change anywhere (a disk error, a truncated write, an edit) fails the digest
    bound to the key, or the header: the entry is never used, and the next run writes a good one."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("LAUNCH_RESOLVER_CACHE", str(cache))
    cached_pack(packs["rules"], _counting(packs["rules"])[1])
    entry = _entry(cache, packs["rules"])
    good = entry.read_bytes()
    head = good.index(b"\n")
    # every byte of the header, and bytes spread over the body (the body is ~3 KB: every 7th)
    for at in [*range(head + 1), *range(head + 1, len(good), 7)]:
        bad = bytearray(good)
        bad[at] = (bad[at] + 1) % 256 if bad[at] != ord("\n") else ord(" ")
        entry.write_bytes(bytes(bad))
        calls, build = _counting(packs["rules"])
        assert _hopper_value(cached_pack(packs["rules"], build)) == "y" and calls == [1], at
        assert entry.read_bytes() == good, at  # dropped and written again from the files


def test_an_entry_whose_digest_was_forged_still_passes_the_compilers_checks(tmp_path, monkeypatch, packs):
    """A constant the engine cannot hold (1e-05: error 204 in create_ruleset) in an entry with a matching
    digest is refused as a fresh compile refuses it; the ruleset itself is never read from an entry."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("LAUNCH_RESOLVER_CACHE", str(cache))
    cached_pack(packs["rules"], _counting(packs["rules"])[1])
    entry = _entry(cache, packs["rules"])
    header, body = entry.read_bytes().split(b"\n", 1)
    data = json.loads(body)
    assert "ruleset" not in data["compiled"]
    text = json.dumps(data).replace('"platform.major", "eq", 9,', '"platform.major", "eq", 1e-05,')
    assert text != json.dumps(data)
    key = json.loads(header)["key"]
    forged = json.dumps({"format": pack_cache._FORMAT, "key": key,
                         "digest": pack_cache._digest(key, text.encode())}).encode()
    entry.write_bytes(forged + b"\n" + text.encode())
    calls, build = _counting(packs["rules"])
    assert _hopper_value(cached_pack(packs["rules"], build)) == "y" and calls == [1]


def test_an_entry_the_engine_refuses_is_dropped_and_rebuilt(tmp_path, monkeypatch, packs):
    cache = tmp_path / "cache"
    monkeypatch.setenv("LAUNCH_RESOLVER_CACHE", str(cache))
    cached_pack(packs["rules"], _counting(packs["rules"])[1])
    taken = []

    def engine(built):  # refuses what came from the cache (as create_ruleset would refuse bad JSON)
        if not taken:
            taken.append("cached")
            raise RuntimeError("Could not create ruleset, error code: 202")
        taken.append("fresh")
        return built

    calls, build = _counting(packs["rules"])
    assert _hopper_value(cached_pack(packs["rules"], build, engine)) == "y"
    assert taken == ["cached", "fresh"] and calls == [1]
    calls, build = _counting(packs["rules"])
    cached_pack(packs["rules"], build)
    assert calls == []  # the entry written from the files is used again


@pytest.mark.parametrize("name", ["rules[1]", "rules*", "rules?", "a[b]c"])
def test_a_rules_path_with_glob_characters_is_hashed_by_its_own_files(tmp_path, monkeypatch, name):
    """Issue 23 E: ``[``, ``*`` and ``?`` in a --rules path are characters, not a pattern: an edited rule
    file changes the key (and the in-process engine), so the old answer is not kept."""
    from resolver.api import get_engine, resolve

    monkeypatch.setenv("LAUNCH_RESOLVER_CACHE", str(tmp_path / "cache"))
    directory = tmp_path / name
    directory.mkdir()
    (directory / "a.yaml").write_text(PACK)
    before = _key(str(directory))
    assert resolve({}, platform="h100", rules=str(directory)).values["b"] == "y"
    (directory / "a.yaml").write_text(OTHER)
    os.utime(directory / "a.yaml", ns=(1, 1))  # a new mtime the engine cache sees, whatever the clock
    assert _key(str(directory)) != before
    assert get_engine(str(directory)).pack.defaults[0].set["b"] == "z"
    assert resolve({}, platform="h100", rules=str(directory)).values["b"] == "z"
