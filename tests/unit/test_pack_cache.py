"""The cross-process cache of compiled rule packs: used when fresh, rebuilt when anything changes."""
import os
import shutil

from resolver.api import _load_and_compile
from resolver.loader import default_rules_dir
from resolver.pack_cache import cache_dir, cached_pack


def _counting(directory):
    calls = []

    def build():
        calls.append(1)
        return _load_and_compile(directory)

    return calls, build


def test_a_fresh_entry_is_used_and_any_change_rebuilds(tmp_path, monkeypatch):
    monkeypatch.setenv("LAUNCH_RESOLVER_CACHE", str(tmp_path / "cache"))
    rules = tmp_path / "rules"
    shutil.copytree(default_rules_dir(), rules)
    calls, build = _counting(str(rules))
    first = cached_pack(str(rules), build)
    second = cached_pack(str(rules), build)
    assert len(calls) == 1 and second[0].options.keys() == first[0].options.keys()
    assert second[1].ruleset == first[1].ruleset
    # same size, same mtime, different content: still rebuilt (the key hashes the content)
    path = rules / "kernels.yaml"
    stat = path.stat()
    path.write_text(path.read_text().replace("R13 (medium", "R13 (MEDIUM"))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    cached_pack(str(rules), build)
    assert len(calls) == 2


def test_a_corrupt_entry_is_rebuilt_and_off_means_off(tmp_path, monkeypatch):
    monkeypatch.setenv("LAUNCH_RESOLVER_CACHE", str(tmp_path))
    calls, build = _counting(default_rules_dir())
    cached_pack(default_rules_dir(), build)
    (entry,) = [p for p in tmp_path.iterdir() if p.suffix == ".pickle"]
    entry.write_bytes(b"not a pickle")
    cached_pack(default_rules_dir(), build)
    assert len(calls) == 2
    monkeypatch.setenv("LAUNCH_RESOLVER_CACHE", "off")
    assert cache_dir() is None
    cached_pack(default_rules_dir(), build)
    cached_pack(default_rules_dir(), build)
    assert len(calls) == 4


def test_an_unwritable_cache_does_not_fail_a_launch(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("LAUNCH_RESOLVER_CACHE", str(blocker / "sub"))  # a path under a file
    calls, build = _counting(default_rules_dir())
    assert cached_pack(default_rules_dir(), build)[0].options


def test_a_foreign_or_misshapen_entry_is_never_used(tmp_path, monkeypatch):
    import pickle

    from resolver.pack_cache import _key

    cache = tmp_path / "cache"
    monkeypatch.setenv("LAUNCH_RESOLVER_CACHE", str(cache))
    calls, build = _counting(default_rules_dir())
    cached_pack(default_rules_dir(), build)
    assert oct(cache.stat().st_mode & 0o777) == "0o700"
    entry = cache / (_key(default_rules_dir()) + ".pickle")
    entry.write_bytes(pickle.dumps(42))  # the right name, the wrong shape
    assert cached_pack(default_rules_dir(), build)[0].options and len(calls) == 2
    entry.chmod(0o666)  # writable by others: whoever could write it may have chosen its content
    cached_pack(default_rules_dir(), build)
    assert len(calls) == 3
