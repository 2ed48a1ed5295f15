"""Run compiled rules: the durable-rules matcher, and a plain-Python reference matcher.

Both implement one small protocol used by :mod:`resolver.resolution`::

    with matcher.session() as s:
        firings = s.assert_facts([fact, ...])   # -> [(branch key, {name: value}), ...]

:class:`DurableMatcher` is the engine: every resolution's matching runs through
durable-rules' Rete network, one ruleset per part of the compiled pack (each within the
engine's limits: resolver/compiler.py), each fact asserted only into the parts that read
it.  How it stays clear of 2.0.28's pitfalls (reference ``durable-rules.md``): a quiet
``Host`` subclass with no background threads (P1); one fresh sid per resolution, deleted in
``finally`` from every part (P2); actions bound by name, one parameter (P8); an action's
exception is kept and re-raised, and the returned state is checked after every call (P6);
the rulesets are copied per host (P12); a lock per host (P15); the fact count of each part
is checked after each resolution (P16); the 3.12 ``utcfromtimestamp`` warning is filtered
for ``durable.engine`` only (P11).

:class:`ReferenceMatcher` evaluates the same compiled branches in Python.  It screens fix
candidates quickly and is the oracle of the differential tests; it never decides a result
on its own (every listed fix is re-checked by durable-rules).
"""
from __future__ import annotations

import itertools
import json
import sys
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .compiler import SINK, CompiledPack, fact_keys, part_ruleset
from .conditions import Atom
from .engine_values import fact_value
from .errors import EngineError, UnsupportedPythonError
from .terminal import signals_deferred

__all__ = ["DurableMatcher", "Firing", "ReferenceMatcher"]

Firing = tuple[str, dict[str, Any]]

warnings.filterwarnings("ignore", message=r"datetime\.datetime\.utcfromtimestamp", category=DeprecationWarning,
                        module="durable.engine")

try:
    from durable import engine as _durable_engine
except ImportError as _exc:  # pragma: no cover - depends on the interpreter
    _durable_engine = None
    _IMPORT_ERROR = _exc
else:
    _IMPORT_ERROR = None


def _engine_module():
    if _durable_engine is None:  # pragma: no cover - depends on the interpreter
        raise UnsupportedPythonError(
            f"durable-rules 2.0.28 cannot be imported on Python {sys.version.split()[0]} ({_IMPORT_ERROR}); "
            "launch-resolver supports Python 3.11 and 3.12"
        )
    return _durable_engine


def _facts_of(matched: dict) -> dict[str, Any]:
    # facts carry type-tagged values (engine_values.py): the actions read them back as plain values
    return {f["o"]: fact_value(f) for f in matched.values() if isinstance(f, dict) and "o" in f}


def _quiet_host(mod, actions: dict):
    """A durable-rules Host with no dispatcher or timer threads (P1), actions bound by name (3.3)."""

    class QuietHost(mod.Host):
        def _run(self):  # Host.__init__ ends by starting the timer chains here
            pass

        def get_action(self, name):  # called once per rule by set_rulesets
            return actions[name]

    return QuietHost()


def _fact_key(fact: dict) -> tuple:
    """The key :func:`resolver.compiler.fact_keys` gives the facts a branch matches."""
    return ("val", fact["o"]) if fact["t"] == "val" else ("adj", fact["o"])


def _screens(compiled: CompiledPack, part: tuple[str, ...]) -> dict[tuple, tuple[tuple[Atom, ...], ...] | None]:
    """Per engine fact of one part: the constant tests of each pattern on it, or None when some
    pattern has none (every such fact is taken).  A fact that no pattern's tests let through can
    never take part in a match (facts are never changed or retracted), and durable-rules would
    refuse it (P7), or make its sink fire for it: such a fact is not asserted into that part."""
    out: dict[tuple, list[tuple[Atom, ...]] | None] = {}
    for key in part:
        b = compiled.branches[key]
        for f in fact_keys(b):
            name = f[1]
            # an adjustment's tests of its own option are on its "adj" fact (fact_keys names no "val" one)
            tests = tuple(a for a in b.atoms if a.op != "join" and a.name == name)
            if any(a.op == "join" and name in (a.name, a.value) for a in b.atoms):
                tests += (Atom(name, "ne", None, False),)  # a joined fact needs a value: a null one is refused
            if not tests:
                out[f] = None
            elif out.get(f, ()) is not None:
                out.setdefault(f, []).append(tests)  # type: ignore[union-attr]
    return {f: (tuple(p) if p is not None else None) for f, p in out.items()}


def _lets_through(patterns: tuple[tuple[Atom, ...], ...], fact: dict) -> bool:
    """Whether some pattern's constant tests hold for ``fact`` (the engine's own semantics: conditions.Atom)."""
    values = {fact["o"]: fact_value(fact)}
    return any(all(a.holds(values) for a in tests) for tests in patterns)


class DurableMatcher:
    """One durable-rules host holding one compiled pack: a ruleset per part."""

    def __init__(self, compiled: CompiledPack):
        mod = _engine_module()
        self.compiled = compiled
        self._lock = threading.Lock()
        self._sids = itertools.count(1)
        self._trace: list[Firing] | None = None
        self._errors: list[tuple[str, BaseException]] = []
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
        self._screens = tuple(_screens(compiled, part) for part in compiled.parts)
        self._verdicts: dict[tuple, bool] = {}  # (part, fact key, engine value) -> taken by a branch
        actions = {key: self._action(key) for key in compiled.branches}
        actions[SINK] = lambda c: None
        self._host = _quiet_host(mod, actions)
        # set_rulesets mutates its argument (P12); the ruleset is plain JSON, and a JSON round
        # trip copies it several times faster than deepcopy (it is on every launch's path)
        rulesets = {name: part_ruleset(compiled.ruleset, part) for name, part in zip(self._rulesets, compiled.parts,
                                                                                     strict=True)}
        with signals_deferred():  # never left halfway: see session()
            self._host.set_rulesets(json.loads(json.dumps(rulesets)))

    def _taken(self, part: int, key: tuple, fact: dict) -> bool:
        """Whether some branch of ``part`` lets ``fact`` through its tests (else it is not asserted).  Memoised by
        the engine's own spelling of the value (type-tagged, so 1 and true differ): the same values recur."""
        memo = (part, key, fact.get("v"))
        taken = self._verdicts.get(memo)
        if taken is None:
            patterns = self._screens[part].get(key)
            taken = patterns is None or _lets_through(patterns, fact)
            if len(self._verdicts) > 100_000:  # typed values are unbounded: keep the memo small
                self._verdicts.clear()
            self._verdicts[memo] = taken
        return taken

    def _action(self, key: str):
        def action(c):  # exactly one parameter (P8)
            try:
                self._trace.append((key, _facts_of(c._m)))
            except BaseException as exc:  # noqa: BLE001 - the engine would swallow it (P6): re-raised after its call
                self._errors.append((key, exc))
        return action

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
        """One resolution on a fresh sid, deleted at the end from every part it reached (P2).

        SIGINT and SIGTERM are held until the sid is deleted (:func:`signals_deferred`): a
        KeyboardInterrupt inside durable-rules' Python glue leaves its C state half-updated,
        and a later ``delete_state`` segfaults.  One hold per resolution rather than per engine
        call (a resolution makes some 25): it adds about 10-15 us to a 2.5 ms resolution.
        """
        with self._lock, signals_deferred():
            sid = str(next(self._sids))
            self._trace, self._errors = [], []
            session = _DurableSession(self, sid)
            try:
                yield session
                session.check_count()
            finally:
                for name in session.touched():
                    try:
                        self._host.delete_state(name, sid)
                    except Exception:  # noqa: BLE001, S110 - a sid with no facts has no state to delete
                        pass
                self._trace = None


class _DurableSession:
    def __init__(self, matcher: DurableMatcher, sid: str):
        self.m, self.sid = matcher, sid
        self.asserted: dict[str, int] = {}  # ruleset -> facts asserted into it (from the first attempt on)

    def touched(self) -> list[str]:
        return list(self.asserted)

    def assert_facts(self, facts: list[dict]) -> list[Firing]:
        if not facts:
            return []
        start = len(self.m._trace)
        batches: dict[int, list[dict]] = {}
        for f in facts:
            key = _fact_key(f)
            payload = dict(f, sid=self.sid)  # the engine only serialises it: one copy serves most parts
            for i in self.m._route.get(key, ()):
                if self.m._taken(i, key, f):  # else no branch of the part can ever match it: not asserted
                    batches.setdefault(i, []).append(payload)
        for i in sorted(batches):  # parts in a fixed order: the same facts always make the same calls
            name = self.m._rulesets[i]
            if name not in self.asserted:
                # delete_state corrupts the heap for a sid that holds facts but never ran an action
                # (reproduced: 2.0.28, a waiting partial match and no firing): the first call of a
                # session into a part also gives the sink one fact, so one action always runs
                self.asserted[name] = 0
                batches[i].insert(0, {"id": "open", "sid": self.sid, "t": "val", "o": "", "s": 1})
            try:
                state = self.m._host.assert_facts(name, batches[i])
            except Exception as exc:
                raise EngineError(f"durable-rules refused a fact: {exc}") from exc
            self.asserted[name] += len(batches[i])
            self._check(state)
        return self.m._trace[start:]

    def _check(self, state: Any) -> None:
        if self.m._errors:
            key, error = self.m._errors[0]
            if not isinstance(error, Exception):  # KeyboardInterrupt, SystemExit: not a rule's failure
                raise error
            rule = self.m.compiled.branches[key].rule
            raise EngineError(f"the action of rule {rule.ref} failed: {error!r}") from error
        if isinstance(state, dict) and "exception" in state:
            raise EngineError(f"durable-rules reported an exception in a rule action: {state['exception']}")

    def check_count(self) -> None:
        # sid and fact ids are 32-bit hashes compared by hash only (P16): a merge would lose facts
        for name, asserted in self.asserted.items():
            stored = self.m._host.get_facts(name, self.sid)
            if len(stored) != asserted:
                raise EngineError(f"durable-rules holds {len(stored)} facts for this resolution in {name}, "
                                  f"{asserted} were asserted")


class ReferenceMatcher:
    """The same compiled branches, matched in plain Python (fast; the oracle for tests).

    Like a Rete network it indexes each branch by the facts it reads, so a branch is tested
    once, when the last of its facts arrives.
    """

    def __init__(self, compiled: CompiledPack):
        self.compiled = compiled
        self.needs: dict[str, int] = {}  # branch -> how many facts it matches
        self.by_fact: dict[tuple, list[str]] = {}
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
        ready: list[tuple[str, dict]] = []
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
        for key, own in ready:
            b = self.branches[key]
            values = self.vals
            if own is not None:
                values = dict(self.vals)
                values[own[0]] = own[1]
            if all(a.holds(values) for a in b.atoms):
                read = {n: values.get(n) for a in b.atoms for n in a.names()}
                if own is not None:
                    read.setdefault(own[0], own[1])
                out.append((key, read))
        return out
