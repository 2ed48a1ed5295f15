"""Run compiled rules: the durable-rules matcher, and a plain-Python reference matcher.

Both implement one small protocol used by :mod:`resolver.resolution`::

    with matcher.session() as s:
        firings = s.assert_facts([fact, ...])   # -> [(branch key, {name: value}), ...]

:class:`DurableMatcher` is the engine: every resolution's matching runs through
durable-rules' Rete network.  How it stays clear of 2.0.28's pitfalls (reference
``durable-rules.md``): a quiet ``Host`` subclass with no background threads (P1); one fresh
sid per resolution, deleted in ``finally`` (P2); actions bound by name, one parameter (P8);
an action's exception is kept and re-raised, and the returned state is checked after every
call (P6); the ruleset is deep-copied per host (P12); a lock per host (P15); the fact count
is checked after each resolution (P16); the 3.12 ``utcfromtimestamp`` warning is filtered
for ``durable.engine`` only (P11).

:class:`ReferenceMatcher` evaluates the same compiled branches in Python.  It screens fix
candidates quickly and is the oracle of the differential tests; it never decides a result
on its own (every listed fix is re-checked by durable-rules).
"""
from __future__ import annotations

import copy
import itertools
import sys
import threading
import warnings
from contextlib import contextmanager
from typing import Any, Iterator

from .compiler import SINK, CompiledPack
from .errors import EngineError, UnsupportedPythonError

__all__ = ["DurableMatcher", "ReferenceMatcher", "Firing"]

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
    return {f["o"]: f.get("v") for f in matched.values() if isinstance(f, dict) and "o" in f}


class DurableMatcher:
    """One durable-rules host holding one compiled pack."""

    _RULESET = "pack"

    def __init__(self, compiled: CompiledPack):
        mod = _engine_module()
        self.compiled = compiled
        self._lock = threading.Lock()
        self._sids = itertools.count(1)
        self._trace: list[Firing] | None = None
        self._errors: list[BaseException] = []
        actions = {key: self._action(key) for key in compiled.branches}
        actions[SINK] = lambda c: None

        matcher = self

        class _QuietHost(mod.Host):
            """No dispatcher or timer threads (P1); actions looked up by name (3.3)."""

            def __init__(self):
                super().__init__()

            def _run(self):
                pass

            def get_action(self, name):
                return actions[name]

        self._host = _QuietHost()
        # set_rulesets mutates its argument (P12)
        self._host.set_rulesets({self._RULESET: copy.deepcopy(compiled.ruleset)})
        del matcher

    def _action(self, key: str):
        def action(c):  # exactly one parameter (P8)
            try:
                self._trace.append((key, _facts_of(c._m)))
            except BaseException as exc:  # noqa: BLE001 - re-raised by the caller (P6)
                self._errors.append((key, exc))
        return action

    @contextmanager
    def session(self) -> Iterator["_DurableSession"]:
        with self._lock:
            sid = str(next(self._sids))
            self._trace, self._errors = [], []
            session = _DurableSession(self, sid)
            try:
                yield session
                session.check_count()
            finally:
                try:
                    self._host.delete_state(self._RULESET, sid)
                except Exception:  # noqa: BLE001 - a sid with no facts has no state to delete
                    pass
                self._trace = None


class _DurableSession:
    def __init__(self, matcher: DurableMatcher, sid: str):
        self.m, self.sid, self.asserted = matcher, sid, 0

    def assert_facts(self, facts: list[dict]) -> list[Firing]:
        if not facts:
            return []
        start = len(self.m._trace)
        payload = [dict(f, sid=self.sid) for f in facts]
        try:
            state = self.m._host.assert_facts(self.m._RULESET, payload)
        except Exception as exc:  # noqa: BLE001 - engine errors become EngineError
            raise EngineError(f"durable-rules refused a fact: {exc}") from exc
        self.asserted += len(facts)
        if self.m._errors:
            key, exc = self.m._errors[0]
            rule = self.m.compiled.branches[key].rule
            raise EngineError(f"the action of rule {rule.ref} failed: {exc!r}") from exc
        if isinstance(state, dict) and "exception" in state:
            raise EngineError(f"durable-rules reported an exception in a rule action: {state['exception']}")
        return self.m._trace[start:]

    def check_count(self) -> None:
        # sid and fact ids are 32-bit hashes compared by hash only (P16): a merge would lose facts
        stored = self.m._host.get_facts(self.m._RULESET, self.sid)
        if len(stored) != self.asserted:
            raise EngineError(f"durable-rules holds {len(stored)} facts for this resolution, {self.asserted} were asserted")


class ReferenceMatcher:
    """The same compiled branches, matched in plain Python (fast; the oracle for tests)."""

    def __init__(self, compiled: CompiledPack):
        self.compiled = compiled

    @contextmanager
    def session(self) -> Iterator["_ReferenceSession"]:
        yield _ReferenceSession(self.compiled)


class _ReferenceSession:
    def __init__(self, compiled: CompiledPack):
        self.branches = list(compiled.branches.values())
        self.fired: set[str] = set()
        self.vals: dict[str, Any] = {}
        self.adj: dict[tuple[str, int], Any] = {}

    def assert_facts(self, facts: list[dict]) -> list[Firing]:
        for f in facts:
            if f["t"] == "val":
                self.vals[f["o"]] = f.get("v")
            else:
                self.adj[(f["o"], f["k"])] = f.get("v")
        out: list[Firing] = []
        for b in self.branches:
            if b.key in self.fired:
                continue
            values = self.vals
            if b.adj_step is not None:
                option = b.rule.option
                if (option, b.adj_step) not in self.adj:
                    continue
                values = dict(self.vals)
                values[option] = self.adj[(option, b.adj_step)]
                names = [n for a in b.atoms for n in a.names() if n != option]
            else:
                names = [n for a in b.atoms for n in a.names()]
            if all(n in self.vals for n in names) and all(a.holds(values) for a in b.atoms):
                self.fired.add(b.key)
                read = {n: values.get(n) for a in b.atoms for n in a.names()}
                if b.adj_step is not None:
                    read.setdefault(b.rule.option, values.get(b.rule.option))
                out.append((b.key, read))
        return out
