"""A cache of loaded and compiled rule packs across processes, so the command line (and every
server launch) does not parse, validate and compile the same YAML again.

The key is the rules directory, the working directory (rule locations are shown relative to
it), each rule file's path, modification time, size and content hash, and the source of the
modules that decide what a pack becomes (a change to the loader or compiler invalidates every
entry).  Entries are pickles written atomically under ``$LAUNCH_RESOLVER_CACHE`` (default
``$XDG_CACHE_HOME/launch-resolver``, else ``~/.cache/launch-resolver``);
``LAUNCH_RESOLVER_CACHE=off`` disables the cache.

Unpickling runs code, so an entry is read only from a directory and a file that this user owns
and nobody else can write (the directory is created 0700); a rule file can never choose what
is unpickled, and neither can another user.  Any problem with the cache (unwritable, foreign,
corrupt, stale, of the wrong shape) falls back to loading the files.
"""
from __future__ import annotations

import contextlib
import glob
import hashlib
import os
import pickle
import tempfile
from typing import Callable

__all__ = ["cached_pack", "cache_dir"]

_FORMAT = 2
_CODE = ("loader.py", "compiler.py", "conditions.py", "rules.py", "platforms.py", "model.py", "installed.py",
         "schema/rules.schema.json")


def cache_dir() -> str | None:
    configured = os.environ.get("LAUNCH_RESOLVER_CACHE")
    if configured is not None:
        return None if configured.lower() in ("", "0", "off", "no", "false") else configured
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "launch-resolver")


def _key(directory: str) -> str:
    h = hashlib.sha256(f"{_FORMAT}\0{directory}\0{os.getcwd()}".encode())
    here = os.path.dirname(os.path.abspath(__file__))
    for path in [*(os.path.join(here, c) for c in _CODE), *sorted(glob.glob(os.path.join(directory, "*.yaml")))]:
        st = os.stat(path)
        h.update(f"\0{path}\0{st.st_mtime_ns}\0{st.st_size}\0".encode())
        with open(path, "rb") as fh:
            h.update(hashlib.sha256(fh.read()).digest())  # mtimes can lie (checkouts, copies)
    return h.hexdigest()


def _private(path: str) -> bool:
    """Owned by this user and writable by nobody else (so nobody else chose its content)."""
    st = os.stat(path)
    return st.st_uid == os.getuid() and not st.st_mode & 0o022


def _load(path: str):
    from .compiler import CompiledPack
    from .rules import RulePack

    if not (_private(os.path.dirname(path)) and _private(path)):
        return None
    with open(path, "rb") as fh:
        entry = pickle.load(fh)
    ok = isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[0], RulePack) \
        and isinstance(entry[1], CompiledPack)
    return entry if ok else None


def _store(where: str, path: str, entry) -> None:
    os.makedirs(where, mode=0o700, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=where, suffix=".tmp")  # created 0600
    try:
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(entry, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)  # atomic: a concurrent reader sees the old entry or the whole new one
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def cached_pack(directory: str, build: Callable[[], tuple]) -> tuple:
    """(pack, compiled) for ``directory``: from the cache when fresh, else ``build()`` and store it."""
    where = cache_dir()
    if where is None:
        return build()
    try:
        path = os.path.join(where, _key(directory) + ".pickle")
    except OSError:
        return build()  # a file vanished while hashing: let the loader report it
    try:
        entry = _load(path)
        if entry is not None:
            return entry
    except Exception:  # noqa: BLE001 - a corrupt or foreign entry is rebuilt, never fatal
        pass
    built = build()
    try:
        if _key(directory) == os.path.basename(path)[:-len(".pickle")]:  # unchanged while it was built
            _store(where, path, built)
    except (OSError, pickle.PicklingError):
        pass  # a read-only home is no reason to fail a launch
    return built
