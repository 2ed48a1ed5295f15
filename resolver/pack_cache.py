"""A cache of loaded and compiled rule packs across processes, so the command line (and every
server launch) does not parse, validate and compile the same YAML again.

The key is the rules directory, each rule file's path, modification time, size and content
hash, and the resolver's own version and source files (a change to the loader or compiler
invalidates every entry).  Entries are pickles written atomically under
``$LAUNCH_RESOLVER_CACHE`` (default ``$XDG_CACHE_HOME/launch-resolver``, else
``~/.cache/launch-resolver``); ``LAUNCH_RESOLVER_CACHE=off`` disables the cache.  Only this
module writes those files, from packs it has just loaded and checked; a rule file can never
choose what is unpickled.  Any problem with the cache (unwritable, corrupt, stale) falls back
to loading the files.
"""
from __future__ import annotations

import glob
import hashlib
import os
import pickle
import tempfile
from typing import Callable

__all__ = ["cached_pack", "cache_dir"]

_FORMAT = 1
_CODE = ("loader.py", "compiler.py", "conditions.py", "rules.py", "schema/rules.schema.json")


def cache_dir() -> str | None:
    configured = os.environ.get("LAUNCH_RESOLVER_CACHE")
    if configured is not None:
        return None if configured.lower() in ("", "0", "off", "no", "false") else configured
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "launch-resolver")


def _key(directory: str) -> str:
    h = hashlib.sha256(f"{_FORMAT}\0{directory}".encode())
    here = os.path.dirname(os.path.abspath(__file__))
    for path in [*(os.path.join(here, c) for c in _CODE), *sorted(glob.glob(os.path.join(directory, "*.yaml")))]:
        st = os.stat(path)
        h.update(f"\0{path}\0{st.st_mtime_ns}\0{st.st_size}\0".encode())
        with open(path, "rb") as fh:
            h.update(hashlib.sha256(fh.read()).digest())  # mtimes can lie (checkouts, copies)
    return h.hexdigest()


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
        with open(path, "rb") as fh:
            return pickle.load(fh)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
        pass
    built = build()
    try:
        os.makedirs(where, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=where, suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(built, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)  # atomic: a concurrent reader sees the old entry or the whole new one
    except OSError:
        pass  # a read-only home is no reason to fail a launch
    return built
