"""A cache of loaded and compiled rule packs across processes, so the command line (and every
server launch) does not parse, validate and compile the same YAML again.

An entry is DATA: a JSON document that is only parsed and turned back into the pack's
dataclasses by the explicit functions below (never pickle, marshal or eval), so nothing in the
cache directory can make a process run code.  Each entry carries the key it was built for: a
hash of the format version, the package's location, the rules directory's absolute path, every
rule file's path and content, and the source of the modules that decide what a pack becomes.  Not
the working directory: an entry holds a rule file's absolute path, shown relative to the working
directory of the process that reads it (the shipped pack is cited as rules/NAME everywhere), so a
first call from a new directory reads the entry the last one wrote.  An entry whose key differs from the one
computed from the files now is ignored and rebuilt.

An entry is also checked for integrity before anything in it is used: its first line holds a
SHA-256 digest of the rest bound to its key, so a changed byte (a disk error, a truncated
write, an edit) makes it a bad entry, which is dropped and rebuilt.  It holds no engine JSON:
the durable-rules ruleset is emitted again from the rules by the compiler, every constant
is checked as a fresh compile checks it, and an entry the engine still refuses is dropped and
the pack rebuilt from its files (``cached_pack``'s ``use``).

Entries live under ``$LAUNCH_RESOLVER_CACHE`` (default ``$XDG_CACHE_HOME/launch-resolver``,
else ``$HOME/.cache/launch-resolver``); ``LAUNCH_RESOLVER_CACHE=off`` disables the cache.  The
directory is used only if nobody but root and this user can change it or any directory or
link on the way to it; it is opened once (no symlink) and every entry is opened relative to
that descriptor, without following links, and checked on the opened file (regular, owned by
this user, writable by nobody else).  Otherwise, or with a relative path or an empty HOME,
packs are not cached and one line on the "resolver" logger says why and how to fix it.  Any
other problem (unwritable, corrupt, stale, of the wrong shape) falls back to loading the files.
At most ``_MAX_ENTRIES`` entries (``_MAX_BYTES`` in all) are kept; the least recently used go.
"""
from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import os
import re
import stat
import time
from collections.abc import Callable
from typing import Any, TypeVar, overload

from .compiler import _ANCHOR, CompiledBranch, CompiledPack
from .conditions import Atom, Condition
from .errors import InputError
from .expressions import parse_expression
from .loader import cited_path, is_shipped, rule_files
from .numbers import engine_value
from .rules import Adjust, Compute, Conflict, Default, Fact, FixHint, Option, RulePack, RuleRef
from .safe_io import MAX_RULE_FILE_BYTES, read_text

__all__ = ["cache_dir", "cached_pack", "from_data", "to_data"]

# 2 was a pickle, 3 had one ruleset (no parts), 4 no computed values, 5 no env options, 6 no no_cli nor
# value_alias_note, 7 no fixes_omit_only nor fixes_skip, 8 no digest and a stored ruleset, 9 no not_decided;
# entries of other formats are never read
_FORMAT = 11
_CODE = ("loader.py", "compiler.py", "conditions.py", "rules.py", "platforms.py", "model.py", "installed.py",
         "numbers.py", "engine_values.py", "pack_cache.py", "schema/rules.schema.json")
_MAX_ENTRIES = 8  # one per rules directory and version in use; the shipped pack's entry is ~0.2 MB
_MAX_BYTES = 32 << 20
_MAX_ENTRY = 8 << 20  # a bigger file is not an entry this code wrote
_STALE_TMP = 3600  # seconds: a temporary file this old was left by a killed writer
_ENTRY = re.compile(r"[0-9a-f]{64}\.json")
_OFF = ("", "0", "off", "no", "false")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO planted under an entry's name must not block the open
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC

T = TypeVar("T")

_log = logging.getLogger("resolver")
_noted = False


def _note(why: str) -> None:
    """Say once per process why packs are not cached (stderr by default; stdout stays clean)."""
    global _noted
    if not _noted:
        _noted = True
        _log.warning("launch-resolver: compiled rule packs are not cached: %s; set LAUNCH_RESOLVER_CACHE to a "
                     "private directory (or to off)", why)


def _configured() -> tuple[str | None, str | None]:
    """(cache directory, None), (None, why it cannot be used), or (None, None) when turned off."""
    configured = os.environ.get("LAUNCH_RESOLVER_CACHE")
    if configured is not None:
        if configured.strip().lower() in _OFF:
            return None, None
        if not os.path.isabs(configured):
            return None, f"LAUNCH_RESOLVER_CACHE={configured!r} is not an absolute path"
        return configured, None
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        if not os.path.isabs(xdg):  # relative to whatever directory the process was started in
            return None, f"XDG_CACHE_HOME={xdg!r} is not an absolute path"
        return os.path.join(xdg, "launch-resolver"), None
    home = os.environ.get("HOME")
    if home is not None and not os.path.isabs(home):  # HOME='' would put the cache in ./.cache or /.cache
        return None, f"HOME={home!r} is not an absolute path"
    return os.path.join(os.path.expanduser("~"), ".cache", "launch-resolver"), None


def cache_dir() -> str | None:
    """The configured cache directory, or None when caching is off or the setting is unusable."""
    return _configured()[0]


def _untrusted(path: str, st: os.stat_result) -> str | None:
    """Why others could change ``path`` (owned by someone else, or writable by others, not sticky)."""
    if st.st_uid not in (0, os.getuid()):
        return f"{path} is owned by another user (uid {st.st_uid})"
    if stat.S_ISLNK(st.st_mode):
        return None  # a link's own mode means nothing; who may replace it is its directory's business
    if st.st_mode & 0o022 and not (stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_ISVTX):
        return f"{path} can be written by other users"
    return None


def _physical(path: str) -> tuple[str, str | None]:
    """Resolve ``path`` (absolute) one component at a time: (physical path, why it is unsafe or None).

    Every directory read and every symbolic link followed on the way must be changeable only by
    root or this user; then nobody else can redirect the path between this check and its use.
    Components that do not exist yet are returned as they are (they are created 0700).
    """
    current = "/"
    why = _untrusted("/", os.lstat("/"))
    parts = path.split("/")
    hops = 0
    while parts and why is None:
        name = parts.pop(0)
        if name in ("", "."):
            continue
        if name == "..":
            current = os.path.dirname(current)
            continue
        step = os.path.join(current, name)
        try:
            st = os.lstat(step)
        except FileNotFoundError:
            return os.path.normpath(os.path.join(step, *parts)), None
        why = _untrusted(step, st)
        if stat.S_ISLNK(st.st_mode) and why is None:
            hops += 1
            if hops > 40:
                return step, f"{step}: too many symbolic links"
            target = os.readlink(step)
            parts = target.split("/") + parts
            current = "/" if target.startswith("/") else current
        else:
            current = step
    return current, why


def _open_dir() -> int | None:
    """A descriptor of the cache directory (created if missing), or None when there is none to use."""
    where, problem = _configured()
    if where is None:
        if problem:
            _note(problem)
        return None
    try:
        where, problem = _physical(where)
        if problem is None:
            os.makedirs(where, mode=0o700, exist_ok=True)
            fd = os.open(where, _DIR_FLAGS)  # the last component may not be a link: checked below, not swapped
            st = os.fstat(fd)
            if st.st_uid != os.getuid() or st.st_mode & 0o022:
                os.close(fd)
                problem = f"{where} is not private (owned by uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):o})"
    except OSError:
        return None  # unwritable, not a directory, ...: no reason to fail a launch, nor to nag
    if problem is not None:
        _note(problem)
        return None
    return fd


def _key(directory: str) -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    directory = os.path.abspath(directory)
    h = hashlib.sha256(f"launch-resolver pack {_FORMAT}\0{here}\0{directory}".encode())
    for path in [*(os.path.join(here, c) for c in _CODE), *rule_files(directory)]:
        # bounded, regular files only: a rule file swapped for a FIFO or /dev/zero must not hang this
        content = read_text(path, MAX_RULE_FILE_BYTES).encode("utf-8")
        h.update(f"\0{path}\0{len(content)}\0".encode())
        h.update(hashlib.sha256(content).digest())
    return h.hexdigest()


# --- the pack as JSON data: one explicit function per type, both ways -----------------------------
# Dataclasses become positional lists in field order; tuples become lists and are turned back.

_SEQ = ("in", "notin")  # an Atom's value is a tuple for these operators
_OPS = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "join", *_SEQ})


def _ref(r: RuleRef) -> list:
    return [r.id, r.file, r.line]


def _atom(a: Atom) -> list:
    return [a.name, a.op, list(a.value) if a.op in _SEQ else a.value, a.none_ok]


def _atom_of(d: list) -> Atom:
    name, op, value, none_ok = d
    if op not in _OPS or not isinstance(name, str) or not isinstance(none_ok, bool):
        raise ValueError("not an atom")
    if op == "join":
        if not isinstance(value, str):
            raise ValueError("not an atom")
        return Atom(name, op, value, none_ok)
    # every constant becomes part of the engine JSON: checked as the compiler checks a rule's constants
    for v in value if op in _SEQ else (value,):
        engine_value(v, "a constant of a cached pack")
    return Atom(name, op, tuple(value) if op in _SEQ else value, none_ok)


def _cond(c: Condition) -> list:
    return [c.source, [[_atom(a) for a in b] for b in c.branches]]


def _cond_of(d: list) -> Condition:
    return Condition(d[0], tuple(tuple(_atom_of(a) for a in b) for b in d[1]))


def _pack_data(p: RulePack) -> dict[str, Any]:
    return {
        "directory": p.directory,
        "options": [[_ref(o.ref), o.doc, o.name, o.flag, o.type, o.help, list(o.choices), list(o.aliases),
                     o.value_aliases, list(o.unset_values), o.default, o.minimum, o.kernel_role, o.env, o.no_cli,
                     o.value_alias_note, o.fixes_omit_only, list(o.fixes_skip), o.not_decided]
                    for o in p.options.values()],
        "facts": [[_ref(f.ref), f.doc, f.name, _cond(f.when)] for f in p.facts.values()],
        "computes": [[_ref(c.ref), c.doc, c.name, c.value.source] for c in p.computes.values()],
        "defaults": [[_ref(d.ref), d.doc, _cond(d.when), d.set, d.priority] for d in p.defaults],
        "adjusts": [[_ref(a.ref), a.doc, _cond(a.when), a.option, a.value, a.order, a.message, a.normalize]
                    for a in p.adjusts],
        "conflicts": [[_ref(c.ref), c.doc, _cond(c.when), c.message, c.option, list(c.allowed), c.evidence,
                       [[h.description, h.set, list(h.unset)] for h in c.hints], c.remedy] for c in p.conflicts],
        "levels": [list(level) for level in p.levels],
    }


def _pack_of(d: dict[str, Any]) -> RulePack:
    # a rule file is cited as the loader cites it from this process's working directory, which need
    # not be the one the entry was written from (the key leaves it out)
    directory = d["directory"]
    shipped = is_shipped(directory)
    cited: dict[str, str] = {}

    def _ref_of(r: list) -> RuleRef:
        rid, file, line = r
        if file not in cited:
            cited[file] = cited_path(os.path.join(directory, os.path.basename(file)), shipped)
        return RuleRef(rid, cited[file], line)

    options = {}
    for (ref, doc, name, flag, typ, help_, choices, aliases, value_aliases, unset, default, minimum, role, env, no_cli,
         alias_note, omit_only, skip, not_decided) in d["options"]:
        options[name] = Option(_ref_of(ref), doc, name, flag, typ, help_, tuple(choices), tuple(aliases),
                               dict(value_aliases), tuple(unset), default, minimum, role, env, no_cli, alias_note,
                               omit_only, tuple(skip), not_decided)
    facts = {name: Fact(_ref_of(ref), doc, name, _cond_of(when)) for ref, doc, name, when in d["facts"]}
    computes = {name: Compute(_ref_of(ref), doc, name, parse_expression(source))
                for ref, doc, name, source in d["computes"]}
    defaults = tuple(Default(_ref_of(ref), doc, _cond_of(when), dict(set_), priority)
                     for ref, doc, when, set_, priority in d["defaults"])
    adjusts = tuple(Adjust(_ref_of(ref), doc, _cond_of(when), option, value, order, message, normalize)
                    for ref, doc, when, option, value, order, message, normalize in d["adjusts"])
    conflicts = tuple(Conflict(_ref_of(ref), doc, _cond_of(when), message, option, tuple(allowed), evidence,
                               tuple(FixHint(desc, dict(set_), tuple(unset)) for desc, set_, unset in hints), remedy)
                      for ref, doc, when, message, option, allowed, evidence, hints, remedy in d["conflicts"])
    levels = tuple(tuple(level) for level in d["levels"])
    return RulePack(directory, options, facts, defaults, adjusts, conflicts, levels, computes)


def _compiled_data(c: CompiledPack) -> dict[str, Any]:
    # a branch is named by its rule's id and the index of its DNF branch: its rule and atoms are
    # the pack's own objects again when read back (a branch with no atoms gets the compiler's anchor)
    return {
        "branches": [[b.key, b.rule.ref.id, int(b.key.rsplit("#", 1)[1]), b.adj_step] for b in c.branches.values()],
        "adjust_steps": {o: [a.ref.id for a in steps] for o, steps in c.adjust_steps.items()},
        "reads": sorted(c.reads),
        "parts": [list(part) for part in c.parts],
    }


def _compiled_of(pack: RulePack, d: dict[str, Any]) -> CompiledPack:
    branches = {}
    for key, rid, index, step in d["branches"]:
        rule = pack.rule(rid)
        branches[key] = CompiledBranch(key, rule, rule.when.branches[index] or (_ANCHOR,), step)
    steps = {o: tuple(pack.rule(rid) for rid in ids) for o, ids in d["adjust_steps"].items()}
    parts = tuple(tuple(part) for part in d["parts"])
    if sorted(k for part in parts for k in part) != sorted(branches):
        raise ValueError("inconsistent entry")  # every branch in exactly one part, or it would never fire
    # the engine gets only JSON the compiler emits from the rules (CompiledPack.ruleset), never JSON read from the cache
    return CompiledPack(pack, branches, steps, frozenset(d["reads"]), parts)


def to_data(pack: RulePack, compiled: CompiledPack) -> dict[str, Any]:
    """The pack and its compiled form as plain JSON data (see :func:`from_data`)."""
    return {"pack": _pack_data(pack), "compiled": _compiled_data(compiled)}


def from_data(data: dict[str, Any]) -> tuple[RulePack, CompiledPack]:
    """The (pack, compiled) that :func:`to_data` described; raises on data of another shape."""
    pack = _pack_of(data["pack"])
    compiled = _compiled_of(pack, data["compiled"])
    if compiled.pack is not pack:
        raise ValueError("inconsistent entry")
    return pack, compiled


def _digest(key: str, body: bytes) -> str:
    """The integrity check of an entry's body, bound to its key (an entry moved to another key fails it)."""
    return hashlib.sha256(key.encode() + b"\0" + body).hexdigest()


def _encode(key: str, built: tuple[RulePack, CompiledPack]) -> bytes | None:
    """The entry for ``built``: a header line (format, key, digest) and the body; None unless reading the
    body back gives exactly ``built`` again."""
    text = json.dumps(to_data(*built), separators=(",", ":"), allow_nan=False)
    again = from_data(json.loads(text))
    # equal dataclasses, and the same JSON (so the same order of options, rules and ruleset keys)
    if again != built or json.dumps(to_data(*again), separators=(",", ":")) != text:
        return None
    body = text.encode()
    header = json.dumps({"format": _FORMAT, "key": key, "digest": _digest(key, body)}, separators=(",", ":"))
    return header.encode() + b"\n" + body


class _BadEntry(Exception):
    """An entry that fails its integrity check or does not read back as a pack: dropped, then rebuilt."""


# --- entries on disk, always relative to the checked directory descriptor ----------------------


def _read(dfd: int, name: str, key: str) -> tuple[RulePack, CompiledPack] | None:
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dfd)  # a symbolic link fails here (ELOOP)
    except OSError:
        return None
    try:
        st = os.fstat(fd)  # the file opened, not whatever the name points to by now
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022 or st.st_size > _MAX_ENTRY:
            return None
        chunks: list[bytes] = []
        while chunk := os.read(fd, _MAX_ENTRY + 1 - sum(map(len, chunks))):
            chunks.append(chunk)
        if os.utime in os.supports_fd:
            with contextlib.suppress(OSError):
                os.utime(fd)  # most recently used: evicted last
    finally:
        os.close(fd)
    head, _, body = b"".join(chunks).partition(b"\n")
    try:
        header = json.loads(head)
    except ValueError:
        raise _BadEntry from None
    if not isinstance(header, dict) or header.get("format") != _FORMAT or header.get("key") != key:
        return None  # another format, or built from other files (copied or renamed here): replaced when rebuilt
    if not hmac.compare_digest(str(header.get("digest")), _digest(key, body)):
        raise _BadEntry
    try:
        return from_data(json.loads(body))
    except Exception:  # noqa: BLE001 - any shape the code cannot read back (it wrote it: older code's bug)
        raise _BadEntry from None


def _write(dfd: int, name: str, content: bytes) -> None:
    tmp = f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dfd)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(content)
        # atomic: a concurrent reader sees the old entry or the whole new one
        os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dfd)
        raise


def _evict(dfd: int, keep: str) -> None:
    """Keep the most recently used entries within the bounds; remove old pickles and stale temporaries."""
    entries: list[tuple[float, int, str]] = []
    now = time.time()
    for name in os.listdir(dfd):
        try:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except OSError:
            continue
        if _ENTRY.fullmatch(name):
            entries.append((st.st_mtime if name != keep else float("inf"), st.st_size, name))
        elif name.endswith(".pickle") or (name.endswith(".tmp") and now - st.st_mtime > _STALE_TMP):
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=dfd)  # .pickle: the old format, never to be read again
    total = 0
    for i, (_, size, name) in enumerate(sorted(entries, reverse=True)):
        total += size
        if name != keep and (i >= _MAX_ENTRIES or total > _MAX_BYTES):
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=dfd)


Built = tuple[RulePack, CompiledPack]


def _as_is(built: Built) -> Built:
    return built


@overload
def cached_pack(directory: str, build: Callable[[], Built]) -> Built: ...


@overload
def cached_pack(directory: str, build: Callable[[], Built], use: Callable[[Built], T]) -> T: ...


def cached_pack(directory: str, build: Callable[[], Built], use: Callable[[Built], Any] = _as_is) -> Any:
    """``use((pack, compiled))`` for ``directory``'s pack (by default the pair itself): from the cache when
    fresh, else ``build()`` and store it.  An entry that is bad, or that ``use`` (the engine taking the
    ruleset) fails on, is dropped and the pack built from its files; what ``use`` raises on a fresh
    build goes to the caller."""
    dfd = _open_dir()
    if dfd is None:
        return use(build())
    try:
        try:
            key = _key(directory)
        except (OSError, InputError):
            return use(build())  # a file vanished or is unreadable: let the loader report it
        name = key + ".json"
        try:
            entry = _read(dfd, name, key)
        except Exception:  # noqa: BLE001 - a corrupt or misshapen entry is rebuilt, never fatal
            entry = None
            _drop(dfd, name)
        if entry is not None:
            try:
                return use(entry)
            except Exception:  # noqa: BLE001 - what the engine refuses from the cache, it is given from the files
                _drop(dfd, name)
        built = build()
        try:
            if _key(directory) == key:  # unchanged while it was built (the loader read these same files)
                content = _encode(key, built)
                if content is not None:
                    _write(dfd, name, content)
                    _evict(dfd, name)
        except (OSError, InputError, ValueError, TypeError, KeyError):
            pass  # a read-only home, or a pack JSON cannot hold exactly, is no reason to fail a launch
        return use(built)
    finally:
        os.close(dfd)


def _drop(dfd: int, name: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(name, dir_fd=dfd)
