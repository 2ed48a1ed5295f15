"""Run compiled rules: the durable-rules matcher, and a plain-Python reference matcher.

Both implement one small protocol used by :mod:`resolver.resolution`::

    with matcher.session() as s:
        firings = s.assert_facts([fact, ...])   # -> [(branch key, {name: value}), ...]

:class:`DurableMatcher` is the engine: every resolution's matching runs through
durable-rules' Rete network, one ruleset per part of the compiled pack (each within the
engine's limits: resolver/compiler.py), each fact asserted only into the parts that read
it.  durable-rules' ``Host`` builds the rulesets; each resolution then talks to its native
engine (``durable_rules_engine``) directly: assert a batch, then take the matches it holds
one by one.  durable-rules' own Python loop around those two calls would run each match
through an action callback, parse and re-serialise the session state for every firing, and
keep none of it: it cost as much as the matching itself.  How it stays clear of 2.0.28's
pitfalls (P1-P16 in docs/evidence.md): a quiet ``Host`` subclass with no background
threads (P1); one sid per matcher, each resolution's facts retracted at its end, and the sid
deleted from every part when anything fails (P2, :meth:`DurableMatcher.session`); no Python
action ever runs, so none can fail unseen (P6, P8); the rulesets are copied per host (P12); a
lock per host (P15); the fact count of each part is checked after each resolution and after
its retraction (P16); the 3.12 ``utcfromtimestamp`` warning is filtered for ``durable.engine``
only (P11).

:class:`ReferenceMatcher` evaluates the same compiled branches in Python.  It screens fix
candidates quickly and is the oracle of the differential tests (tests/test_differential.py
holds the two to the same firings on every launch it draws).  A process that resolves once
(the command line on one launch: :meth:`Engine.one_shot`) matches on it alone: building
durable-rules' rulesets would cost it more than the resolution.  Every long-lived engine (the
API, batch, a server's launch pipeline) resolves and re-checks every listed fix on durable-rules.
"""
from __future__ import annotations

import itertools
import json
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Literal

from .compiler import SINK, CompiledPack, fact_bucket, fact_keys, part_ruleset
from .conditions import Atom, compiled_test
from .engine_values import fact_value
from .errors import EngineError, InputError, UnsupportedPythonError
from .rules import RulePack
from .terminal import signals_deferred

__all__ = ["DurableMatcher", "Engine", "Firing", "ReferenceMatcher"]

Firing = tuple[str, dict[str, Any]]

warnings.filterwarnings("ignore", message=r"datetime\.datetime\.utcfromtimestamp", category=DeprecationWarning,
                        module="durable.engine")

_IMPORT_ERROR: ImportError | None = None
try:
    from durable import engine as _durable_engine
except ImportError as _exc:  # pragma: no cover - depends on the interpreter
    _durable_engine = None
    _IMPORT_ERROR = _exc


def _engine_module():
    if _durable_engine is None:  # pragma: no cover - depends on the interpreter
        raise UnsupportedPythonError(
            f"durable-rules 2.0.28 cannot be imported on Python {sys.version.split()[0]} ({_IMPORT_ERROR}); "
            "launch-resolver supports Python 3.11 and 3.12"
        )
    return _durable_engine


#: facts as the engine reads them (one encoder: json.dumps with an option builds a new one per call)
_encode = json.JSONEncoder(ensure_ascii=False).encode


def _array(texts: list[str]) -> str:
    return "[" + ",".join(texts) + "]"


def _fact_text(texts: dict[tuple, str], fact: dict, sid: str, bucket: int) -> str:
    """The JSON the engine gets for ``fact`` on ``sid``, with its bucket.  Most facts are the same from one
    resolution to the next (a fact's id names it and its round), so their texts are kept by id and value:
    encoding them was a tenth of the engine calls' cost."""
    key = (fact.get("id"), fact.get("v"), fact.get("n"), sid)
    text = texts.get(key)
    if text is None:
        text = _encode(dict(fact, sid=sid, b=bucket))
        if key[0] is not None and len(text) <= 1000:  # an id names one fact; long typed strings are not kept
            if len(texts) > 100_000:
                texts.clear()
            texts[key] = text
    return text


def _stored(native, handle: int, sid: str) -> int:
    """How many facts the engine holds for ``sid`` in one ruleset.  It hands back the facts' JSON as they
    were asserted, one ``"id"`` key each; inside a string a quote is escaped, so the key is counted, not
    parsed (parsing it twice per resolution cost more than the check is worth)."""
    return native.get_facts(handle, sid).count('"id":')


def _facts_of(matched: dict) -> dict[str, Any]:
    # facts carry type-tagged values (engine_values.py): the actions read them back as plain values
    return {f["o"]: fact_value(f) for f in matched.values() if isinstance(f, dict) and "o" in f}


def _no_action(c) -> None:  # pragma: no cover - matches are taken from the native engine, never run as actions
    pass


def _quiet_host(mod):
    """A durable-rules Host with no dispatcher or timer threads (P1).  Every rule names an action (its
    branch key) that is never run: :func:`_fire` reads the matches itself."""

    class QuietHost(mod.Host):  # type: ignore[name-defined]  # the module is passed in: durable.engine
        def _run(self):  # Host.__init__ ends by starting the timer chains here
            pass

        def get_action(self, name):  # called once per rule by set_rulesets
            return _no_action

    return QuietHost()


class _UnreadableMatch(EngineError):
    """A match the engine handed out that could not be read back; the session names its rule."""

    def __init__(self, key: str, error: Exception):
        super().__init__(f"a match of {key} could not be read: {error!r}")
        self.key, self.error = key, error


def _fire(native, handle: int, facts: list[str]) -> list[Firing]:
    """Assert ``facts`` (each a fact's JSON text) into one ruleset and take every match they complete, in
    the engine's order.

    What durable-rules' ``Host.assert_facts`` does, less the per-match action machinery: the native
    engine queues each match on the session's state, ``start_action_for_state`` hands out the first
    and ``complete_and_start_action`` retires it and hands out the next."""
    try:
        code, state = native.assert_facts(handle, _array(facts))
        if code in (1, 2):  # durable-rules' MessageNotHandled / MessageObserved
            raise EngineError(f"durable-rules refused a fact (code {code})")
        first = native.start_action_for_state(handle, state if code == 0 else 0)
        out: list[Firing] = []
        message = first[1] if first else None
        while message:
            for key, matched in json.loads(message).items():
                if key != SINK:
                    try:
                        out.append((key, _facts_of(matched)))
                    except Exception as exc:  # noqa: BLE001 - named with its rule by the session
                        raise _UnreadableMatch(key, exc) from exc
            message = native.complete_and_start_action(handle, state)
    except EngineError:
        raise
    except Exception as exc:
        raise EngineError(f"durable-rules refused a fact: {exc}") from exc
    return out


def _tests_on(b, name: str) -> tuple[Atom, ...]:
    """The constant tests ``b`` makes of the fact ``name`` (an adjustment's tests of its own option are on
    its ``adj`` fact, which fact_keys names instead of a "val" one)."""
    tests = tuple(a for a in b.atoms if a.op != "join" and a.name == name)
    if any(a.op == "join" and name in (a.name, a.value) for a in b.atoms):
        tests += (Atom(name, "ne", None, False),)  # a joined fact needs a value: a null one is refused
    return tests


class DurableMatcher:
    """One durable-rules host holding one compiled pack: a ruleset per part."""

    def __init__(self, compiled: CompiledPack):
        mod = _engine_module()
        self.compiled = compiled
        self._lock = threading.Lock()
        self._sids = itertools.count(1)
        self._native = mod.durable_rules_engine
        self._sid = str(next(self._sids))  # the sid every resolution uses, until one fails (session())
        self._opened: set[int] = set()  # the parts where that sid's state exists
        self._rulesets = tuple(f"pack{i}" for i in range(len(compiled.parts)))
        # fact -> the parts with a branch that reads it: a fact no branch of a part reads would only
        # feed that part's sink, and a fact no branch reads at all is not asserted
        route: dict[tuple, list[int]] = {}
        for i, part in enumerate(compiled.parts):
            for key in part:
                for f in fact_keys(compiled.branches[key]):
                    parts = route.setdefault(f, [])
                    if parts[-1:] != [i]:
                        parts.append(i)
        self._route = {f: tuple(parts) for f, parts in route.items()}
        self._buckets = {name: fact_bucket(name) for _, name in route}  # every pattern tests its fact's bucket
        self._texts: dict[tuple, str] = {}  # (fact id, value, number, sid) -> the fact's JSON: _fact_text
        # fact -> (branch key, its part, its tests of the fact) of each branch that reads it
        readers: dict[tuple, list[tuple[str, int, tuple[Atom, ...]]]] = {}
        for i, part in enumerate(compiled.parts):
            for key in part:
                b = compiled.branches[key]
                for f in fact_keys(b):
                    readers.setdefault(f, []).append((key, i, _tests_on(b, f[1])))
        self._readers = {f: tuple(r) for f, r in readers.items()}
        # memos by the engine's own spelling of a value (type-tagged: 1 and true differ): _screen
        self._passing: dict[tuple, frozenset[str]] = {}  # (part, fact key, value) -> branches whose tests hold
        self._failing: dict[tuple, frozenset[str]] = {}  # (value fact key, value) -> branches whose tests fail
        self._host = _quiet_host(mod)
        # set_rulesets mutates its argument (P12); the ruleset is plain JSON, and a JSON round
        # trip copies it several times faster than deepcopy (it is on every launch's path)
        rulesets = {name: part_ruleset(compiled.ruleset, part) for name, part in zip(self._rulesets, compiled.parts,
                                                                                     strict=True)}
        with signals_deferred():  # never left halfway: see session()
            self._host.set_rulesets(json.loads(json.dumps(rulesets)))
        self._handles = tuple(self._host.get_ruleset(name)._handle for name in self._rulesets)

    def _screen(self, key: tuple, fact: dict) -> None:
        """Memoise, for one value of the fact ``key``, the branches of each part whose tests of it hold and
        (for a value fact) every branch whose tests of it fail."""
        v = fact.get("v")
        if len(self._passing) > 100_000:  # typed values are unbounded: keep the memos small
            self._passing.clear()
            self._failing.clear()
        values = {fact["o"]: fact_value(fact)}
        passing: dict[int, set[str]] = {i: set() for i in self._route[key]}
        failing: set[str] = set()
        for branch, part, tests in self._readers[key]:
            if all(a.holds(values) for a in tests):
                passing[part].add(branch)
            else:
                failing.add(branch)
        for part, branches in passing.items():
            self._passing[(part, key, v)] = frozenset(branches)
        if key[0] == "val":  # an adjustment's own fact changes from round to round: it rules nothing out
            self._failing[(key, v)] = frozenset(failing)

    def close(self) -> None:
        """Delete the host's rulesets from durable-rules, freeing their C memory (idempotent).

        durable-rules 2.0.28 has no unload call: this undoes what ``set_rulesets`` registered.
        A resolution on a closed matcher fails with :class:`EngineError`.
        """
        mod = _engine_module()
        with self._lock, signals_deferred():  # never under a running resolution, never cut halfway
            host = self._host
            for name in list(host._ruleset_directory):
                ruleset = host._ruleset_directory.pop(name)
                host._ruleset_list.remove(ruleset)
                mod.durable_rules_engine.delete_ruleset(ruleset._handle)

    @contextmanager
    def session(self) -> Iterator[_DurableSession]:
        """One resolution on the matcher's sid, which it leaves as it found it.

        Creating a sid's state costs durable-rules about as much as a tenth of a resolution (it
        grows with the ruleset), and deleting it again a little more, so one sid serves every
        resolution of this matcher (the lock makes them one at a time): each resolution's facts
        are retracted at its end, the fact count checked before and after (P16).  A resolution
        that fails, or a retraction that leaves anything behind, deletes the sid from every part
        (P2) and the next resolution starts on a fresh one.

        SIGINT and SIGTERM are held until the sid is clean again (:func:`signals_deferred`): a
        KeyboardInterrupt inside the engine calls leaves its C state half-updated, and a later
        ``delete_state`` segfaults.  One hold per resolution rather than per engine call (a
        resolution makes some 20): it adds about 10-15 us.
        """
        with self._lock, signals_deferred():
            session = _DurableSession(self, self._sid)
            clean = False
            try:
                yield session
                session.check_count()
                clean = self._retract(session)
            finally:
                if not clean:
                    self._discard()

    def _retract(self, session: _DurableSession) -> bool:
        """Take the resolution's facts back out; whether only each part's sink fact is left."""
        try:
            for i, sent in session.sent.items():
                code, state = self._native.retract_facts(self._handles[i], _array(sent))
                # a retraction fires nothing (no rule tests for an absent fact, P5): a match would be a defect
                if code not in (0, 3) or self._native.start_action_for_state(self._handles[i],
                                                                             state if code == 0 else 0):
                    return False
                if _stored(self._native, self._handles[i], self._sid) != 1:
                    return False
        except Exception:  # noqa: BLE001 - the sid is discarded instead
            return False
        return True

    def _discard(self) -> None:
        """Delete the sid from every part it reached (P2); the next resolution opens a fresh one."""
        for i in sorted(self._opened):
            try:
                self._native.delete_state(self._handles[i], self._sid)
            except Exception:  # noqa: BLE001, S110 - a sid with no facts has no state to delete
                pass
        self._opened.clear()
        self._sid = str(next(self._sids))


class _DurableSession:
    def __init__(self, matcher: DurableMatcher, sid: str):
        self.m, self.sid = matcher, sid
        self.sent: dict[int, list[str]] = {}  # part -> the facts of this resolution asserted into it (JSON)
        # branches that can no longer match: a value fact they read, asserted so far, fails their tests
        self.dead: set[str] = set()

    def assert_facts(self, facts: list[dict]) -> list[Firing]:
        """Assert ``facts`` into each part with a branch that could still match them; the matches they complete.

        A part is sent a fact only if some branch of it could still match: the branch's tests of the fact
        hold, and no value fact it reads that is already known (asserted, or in this batch) failed its
        tests.  Value facts are asserted once and never change, so such a branch is dead for the rest of
        the resolution.  durable-rules would refuse a fact no pattern lets through (P7), and a fact that
        can never complete a match costs the engine as much as one that does (three in four facts,
        before this screen).  Which branches a value passes and fails is memoised per value, so the
        screen is set arithmetic."""
        if not facts:
            return []
        m, dead = self.m, self.dead
        route, passing, failing, buckets, sid = m._route, m._passing, m._failing, m._buckets, self.sid
        for f in facts:
            if f["t"] == "val":
                key = ("val", f["o"])
                if key in route:
                    memo = (key, f.get("v"))
                    ruled_out = failing.get(memo)
                    if ruled_out is None:
                        m._screen(key, f)
                        ruled_out = failing[memo]
                    dead.update(ruled_out)
        texts = m._texts
        batches: dict[int, list[str]] = {}
        for f in facts:
            key = (f["t"], f["o"])  # as compiler.fact_keys names the facts a branch matches: ("val" | "adj", name)
            parts = route.get(key)
            if parts is None:
                continue
            v = f.get("v")
            payload = None  # the engine only serialises it: one copy serves every part
            for i in parts:
                alive = passing.get((i, key, v))
                if alive is None:
                    m._screen(key, f)
                    alive = passing[(i, key, v)]
                if alive and not alive <= dead:
                    if payload is None:
                        payload = _fact_text(texts, f, sid, buckets[key[1]])
                    batches.setdefault(i, []).append(payload)
        out: list[Firing] = []
        for i in sorted(batches):  # parts in a fixed order: the same facts always make the same calls
            self.sent.setdefault(i, []).extend(batches[i])
            if i not in self.m._opened:
                # delete_state corrupts the heap for a sid that holds facts but never ran an action
                # (reproduced: 2.0.28, a waiting partial match and no firing): the first call into a
                # part with a new sid also gives the sink one fact, so one match is always taken; that
                # fact stays while the sid serves
                self.m._opened.add(i)
                batches[i].insert(0, _encode({"id": "open", "sid": self.sid, "t": "val", "o": "", "s": 1}))
            try:
                out += _fire(self.m._native, self.m._handles[i], batches[i])
            except _UnreadableMatch as exc:
                rule = self.m.compiled.branches[exc.key].rule
                raise EngineError(f"a match of rule {rule.ref} could not be read: {exc.error!r}") from exc.error
        return out

    def check_count(self) -> None:
        # sid and fact ids are 32-bit hashes compared by hash only (P16): a merge would lose facts
        for i, sent in self.sent.items():
            stored = _stored(self.m._native, self.m._handles[i], self.sid)
            if stored != len(sent) + 1:  # and the sink's fact
                raise EngineError(f"durable-rules holds {stored - 1} facts for this resolution in "
                                  f"{self.m._rulesets[i]}, {len(sent)} were asserted")


class ReferenceMatcher:
    """The same compiled branches, matched in plain Python (fast; the oracle for tests).

    Like a Rete network it indexes each branch by the facts it reads, so a branch is tested
    once, when the last of its facts arrives.
    """

    def __init__(self, compiled: CompiledPack):
        self.compiled = compiled
        self.needs: dict[str, int] = {}  # branch -> how many facts it matches
        self.by_fact: dict[tuple, list[str]] = {}
        # branch -> its tests (conditions.compiled_test) and the names it reads, worked out when it is first
        # tested (a resolution tests a few hundred of the pack's branches)
        self.tests: dict[str, tuple[Test, tuple[str, ...]]] = {}
        for key, b in compiled.branches.items():
            facts = fact_keys(b)
            self.needs[key] = len(facts)
            for f in facts:
                self.by_fact.setdefault(f, []).append(key)

    @contextmanager
    def session(self) -> Iterator[_ReferenceSession]:
        yield _ReferenceSession(self)


class _ReferenceSession:
    def __init__(self, matcher: ReferenceMatcher):
        self.m = matcher
        self.branches = matcher.compiled.branches
        self.missing = dict(matcher.needs)
        self.vals: dict[str, Any] = {}
        self.seen: set[tuple] = set()

    def assert_facts(self, facts: list[dict]) -> list[Firing]:
        ready: list[tuple[str, tuple[str, Any] | None]] = []  # branch key, the adj fact it matched (None: val)
        for f in facts:
            if f["t"] == "val":
                self.vals[f["o"]] = fact_value(f)
                fact_key: tuple = ("val", f["o"])
                own = None
            else:
                fact_key = ("adj", f["o"])
                own = (f["o"], fact_value(f))
                if fact_key in self.seen:  # the same step again with a new value (a later round of resolution._adjust)
                    ready.extend((key, own) for key in self.m.by_fact.get(fact_key, ()) if self.missing[key] == 0)
                    continue
                self.seen.add(fact_key)
            for key in self.m.by_fact.get(fact_key, ()):
                self.missing[key] -= 1
                if self.missing[key] == 0:
                    ready.append((key, own))
        out: list[Firing] = []
        values, tests = self.vals, self.m.tests
        for key, own in ready:
            found = tests.get(key)
            if found is None:
                atoms = self.branches[key].atoms
                found = tests[key] = (_conjunction(tuple(compiled_test(a) for a in atoms)),
                                      tuple(dict.fromkeys(n for a in atoms for n in a.names())))
            holds, names = found
            if own is None:
                if holds(values):
                    out.append((key, {n: values.get(n) for n in names}))
                continue
            # an adjustment's step reads its option's current value (the adj fact) in place of the option's
            # value fact: put it there for this branch only
            option, current = own
            before = values.get(option, _ABSENT)
            values[option] = current
            try:
                if holds(values):
                    read = {n: values.get(n) for n in names}
                    read.setdefault(option, current)
                    out.append((key, read))
            finally:
                if before is _ABSENT:
                    del values[option]
                else:
                    values[option] = before
        return out


_ABSENT = object()

Test = Callable[[dict[str, Any]], bool]


def _conjunction(tests: tuple[Test, ...]) -> Test:
    """One closure for a branch's tests (most have one to three), in place of a generator per branch tested:
    with conditions.compiled_test's set lookups it took a brief screening run from 7.7 ms to 4.6 ms (the seed
    case, one process, docs/performance.md)."""
    if len(tests) == 1:
        return tests[0]
    if len(tests) == 2:
        a, b = tests
        return lambda values: a(values) and b(values)
    if len(tests) == 3:
        a, b, c = tests
        return lambda values: a(values) and b(values) and c(values)
    return lambda values: all(t(values) for t in tests)


@dataclass
class Engine:
    """A compiled rule pack with its two matchers, and the one its resolutions run on (:attr:`matcher`)."""

    pack: RulePack
    compiled: CompiledPack
    reference: ReferenceMatcher
    #: what resolutions, fix checks and what-ifs match on: durable-rules, or (a one-shot call: :meth:`one_shot`) the
    #: reference matcher, which fires exactly the same branches (the differential tests hold them to it)
    matching: Literal["durable", "reference"] = "durable"
    #: the durable-rules matcher once built (0 or 1 of it): a list, shared by :meth:`one_shot`'s copies, that a
    #: finaliser can hold without holding the engine (resolver/core.py frees its rulesets)
    built: list[DurableMatcher] = field(default_factory=list, repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def durable(self) -> DurableMatcher:
        """The durable-rules matcher, built on first use: building its rulesets costs a one-shot call about as
        much as the resolution itself."""
        if not self.built:
            with self._lock:
                if not self.built:
                    self.built.append(DurableMatcher(self.compiled))
        return self.built[0]

    @property
    def matcher(self) -> DurableMatcher | ReferenceMatcher:
        return self.reference if self.matching == "reference" else self.durable

    def one_shot(self) -> Engine:
        """This engine for a process that resolves once (the command line on one launch): it matches in Python,
        and durable-rules' rulesets are never built; the same pack, caches and answers."""
        return replace(self, matching="reference")

    @cached_property
    def architectures(self) -> dict[str, str]:
        """Architecture names the rules know, by lower-case spelling (for "did you mean")."""
        names = {c for a in self.pack.atoms.get("model.architecture", ())
                 for c in (a.value if a.op in ("in", "notin") else (a.value,)) if isinstance(c, str)}
        return {n.lower(): n for n in names}

    @cached_property
    def env_options(self) -> tuple[str, ...]:
        """The options that are environment variables, in the pack's order."""
        return tuple(n for n, o in self.pack.options.items() if o.env)

    @cached_property
    def opaque_options(self) -> tuple[str, ...]:
        """The options whose values are JSON a caller may change (handed out as copies)."""
        return tuple(n for n, o in self.pack.options.items() if o.opaque and not o.env)

    @cached_property
    def undecidable_options(self) -> tuple[tuple[str, str], ...]:
        """(option, why SGLang's value cannot be known here) for the fields SGLang fills in at start-up."""
        return tuple((n, o.not_decided) for n, o in self.pack.options.items() if o.not_decided)

    def check_architecture(self, facts: dict) -> None:
        arch = facts.get("model.architecture", (None, ""))[0]
        if isinstance(arch, str):
            known = self.architectures.get(arch.lower())
            if known is not None and known != arch:
                raise InputError(f"unknown model architecture '{arch}'. Did you mean '{known}'? "
                                 "(names are case-sensitive)")
