"""Load a rules directory into a checked :class:`~resolver.rules.RulePack`.

Every problem is collected and reported together at file:line (with a caret under a bad
``when:``), as :class:`~resolver.errors.RuleFileErrors`.  Files are read with a safe YAML
loader: a rule pack is data and can never make the resolver import or run anything.
"""
from __future__ import annotations

import functools
import glob
import json
import os
import re
import string
from importlib import resources
from typing import Any

import yaml

from .conditions import Atom, Condition, ConditionError, parse_condition
from .draft import DRAFT_FACTS
from .errors import InputError, RuleFileErrors, RuleFileProblem
from .expressions import Expression, parse_expression
from .model import MODEL_FACTS
from .numbers import engine_value
from .packages import INSTALLED_FACTS
from .platforms import PLATFORM_FACTS
from .provenance import fact_name, kernel_fact, kernel_why_fact
from .rules import (
    KERNEL_CONTEXT,
    ROLE_CONTEXT,
    Adjust,
    Compute,
    Conflict,
    Default,
    Fact,
    FixHint,
    Option,
    RulePack,
    RuleRef,
)
from .safe_io import MAX_RULE_FILE_BYTES, UnreadableFile, absolute_path, checked_path, file_problem, read_text

__all__ = ["REQUIRE_KNOWN_KERNELS", "check_rule_files", "default_rules_dir", "load_rules", "rule_files"]

@functools.lru_cache(maxsize=1)
def _validator():
    # jsonschema costs ~50 ms to import: only when files are actually read (a cached pack skips it)
    import jsonschema

    schema = json.loads(resources.files("resolver").joinpath("schema/rules.schema.json").read_text())
    base = jsonschema.Draft202012Validator

    def required(validator, properties, instance, schema):
        # jsonschema's own check, one property at a time, with the missing one kept on the error as data
        # (_schema_code reads it: missing-doc and missing-message are lint checks of their own)
        for prop in properties:
            for error in base.VALIDATORS["required"](validator, [prop], instance, schema):
                error.missing = prop
                yield error

    return jsonschema.validators.extend(base, {"required": required})(schema)

#: what the request itself asks of the resolution, as an input fact the rules read (resolution.run asserts it)
REQUIRE_KNOWN_KERNELS = "request.require_known_kernels"  # --require-known-kernels (rules/kernels.yaml)
_INPUT_FACTS = (set(PLATFORM_FACTS) | set(MODEL_FACTS) | set(DRAFT_FACTS) | set(INSTALLED_FACTS)
                | {REQUIRE_KNOWN_KERNELS})


def default_rules_dir() -> str:
    """The shipped rules: ``rules/`` beside the package (source tree), else the installed copy."""
    here = os.path.dirname(os.path.abspath(__file__))
    for candidate in (os.path.join(os.path.dirname(here), "rules"), os.path.join(here, "_rules")):
        if rule_files(candidate):
            return candidate
    return os.path.join(os.path.dirname(here), "rules")


class _Mapping(dict):
    """A YAML mapping that remembers the line and column of itself and of each value."""

    line: int = 0
    positions: dict[str, tuple[int, int]]


# libyaml's parser when PyYAML has it (10x faster); the constructors stay the safe ones
class _LineLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]  # chosen at import
    def construct_mapping(self, node, deep=False):
        out = _Mapping(super().construct_mapping(node, deep=True))
        out.line = node.start_mark.line + 1
        out.positions = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=True)
            style = getattr(value_node, "style", None)
            # a plain or quoted scalar's text starts at its mark; '>' / '|' blocks on the next line
            line, col = value_node.start_mark.line + 1, value_node.start_mark.column
            if style in (">", "|"):
                line, col = line + 1, None
            elif style in ('"', "'"):
                col += 1
            out.positions[str(key)] = (line, col)
        return out


_LineLoader.add_constructor("tag:yaml.org,2002:map", lambda loader, node: loader.construct_mapping(node, deep=True))

#: digits of a YAML integer (Python refuses over 4,300 with a bare ValueError; real values have few)
MAX_INT_DIGITS = 100


def _construct_int(loader: _LineLoader, node: yaml.ScalarNode) -> int:
    digits = sum(ch.isdigit() for ch in node.value)  # checked before int() does quadratic work or raises
    if digits > MAX_INT_DIGITS:
        raise yaml.constructor.ConstructorError(None, None, f"an integer of {digits} digits (the limit is "
                                                f"{MAX_INT_DIGITS})", node.start_mark)
    return yaml.SafeLoader.construct_yaml_int(loader, node)


_LineLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)


#: YAML nodes of one rule file, and of the whole pack, once aliases are expanded.  The schema check
#: and the builder walk the expanded tree, so a "billion laughs" file (aliases of aliases) would run
#: for hours.  The shipped pack has 14,500 nodes (under 2,000 a file); benchmarks/bench.py pads it
#: to 16 times its compiled rules (230,000 nodes), and the shipped rules are expected to grow about
#: tenfold.  Loading costs about 50 microseconds a node (most of it the schema check), so a pack at
#: the cap takes some 20 s to load and compile; past the cap it is refused within a second or two.
MAX_YAML_NODES = 100_000
MAX_PACK_NODES = 400_000
#: characters of the scalars of the whole pack, aliases expanded: an alias of a long string in every
#: rule is text the checks read again and again (the shipped pack has 354,000; x16 1.7 million)
MAX_PACK_CHARS = 8 * 2**20
#: nesting of the YAML itself: building deeper data would overflow Python's stack (the shipped files
#: are 7 levels deep)
MAX_YAML_DEPTH = 32
#: ``*.yaml`` files in a rules directory and their bytes (the shipped pack: 30 files, 430 KB; x16 2.2 MB)
MAX_PACK_FILES = 256
MAX_PACK_BYTES = 6 * 2**20


class _TooBig(Exception):
    pass


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return list(node.value) if isinstance(node, yaml.SequenceNode) else []


class _Budget:
    """What the files of one pack may still expand to (nodes and characters), spent file by file."""

    def __init__(self) -> None:
        self.nodes, self.chars = MAX_PACK_NODES, MAX_PACK_CHARS

    def spend(self, root: yaml.Node) -> None:
        """Count ``root`` with each alias as a full copy and take it from the budget; _TooBig when the
        file or the pack would go past a cap, or the YAML nests past MAX_YAML_DEPTH.

        Iterative and memoized: linear in the distinct nodes, however the aliases multiply.
        """
        nodes_cap = min(MAX_YAML_NODES, self.nodes)
        scalar = yaml.ScalarNode
        sizes: dict[int, tuple[int, int, int]] = {}  # collection -> (nodes, characters, depth), expanded
        on_path: set[int] = set()
        stack: list[tuple[yaml.Node, list[yaml.Node] | None]] = [(root, None)]
        while stack:
            node, children = stack.pop()
            if isinstance(node, scalar):  # only the root can be one here: scalars are counted by their parent
                sizes[id(node)] = (1, len(node.value), 1)
            elif children is not None:  # all children counted: count the node
                on_path.discard(id(node))
                nodes, chars, depth = 1, 0, 0
                for child in children:
                    if isinstance(child, scalar):
                        nodes, chars, depth = nodes + 1, chars + len(child.value), max(depth, 1)
                    else:
                        n, c, d = sizes[id(child)]
                        nodes, chars, depth = nodes + n, chars + c, max(depth, d)
                sizes[id(node)] = (nodes, chars, depth + 1)
                if depth + 1 > MAX_YAML_DEPTH:  # an alias of a deep node inside a deep node
                    raise _TooBig(f"the YAML nests more than {MAX_YAML_DEPTH} levels deep")
                if nodes > nodes_cap or chars > self.chars:
                    self._refuse(nodes)
            elif id(node) in on_path:
                raise _TooBig("a YAML alias refers to a node that contains it (a recursive structure)")
            elif id(node) not in sizes:
                if len(on_path) >= MAX_YAML_DEPTH:
                    raise _TooBig(f"the YAML nests more than {MAX_YAML_DEPTH} levels deep")
                children = _children(node)
                on_path.add(id(node))
                stack.append((node, children))
                stack.extend((c, None) for c in children if not isinstance(c, scalar) and id(c) not in sizes)
        nodes, chars, _ = sizes[id(root)]
        self.nodes -= nodes
        self.chars -= chars

    def _refuse(self, nodes: int) -> None:
        if nodes > MAX_YAML_NODES:
            raise _TooBig(f"the file expands to more than {MAX_YAML_NODES} YAML nodes (counting each alias "
                          "as a copy); a rule file may not be larger")
        what = f"{MAX_PACK_NODES} YAML nodes" if nodes > self.nodes else f"{MAX_PACK_CHARS // 2**20} MiB of text"
        raise _TooBig(f"with this file the rule files expand to more than {what} (counting each alias as a copy); "
                      "a rule pack may not be larger")


def _parse_yaml(text: str, budget: _Budget | None = None) -> Any:
    """``yaml.load`` with the safe loader, refusing a document whose aliases expand past the caps."""
    loader = _LineLoader(text)
    try:
        try:
            node = loader.get_single_node()
        except RecursionError:  # the pure-Python parser (no libyaml) on very deep nesting
            raise _TooBig(f"the YAML nests more than {MAX_YAML_DEPTH} levels deep") from None
        if node is None:
            return None
        (budget or _Budget()).spend(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def check_rule_files(rules: object) -> None:
    """Refuse a bad rules path before anything opens the files (the pack cache hashes them first).

    A path with a NUL byte is an InputError; a ``*.yaml`` that is no regular file (a FIFO would
    block the reader, a link to ``/dev/zero`` would never end) or is over the size cap is a
    RuleFileErrors, found with ``stat`` alone.  ``load_rules`` checks again on what it opens.
    """
    if rules is None:
        return
    directory = absolute_path(checked_path(rules, "--rules"), "--rules")
    paths = rule_files(directory)
    problems = []
    for path in paths[:MAX_PACK_FILES + 1]:
        problem = file_problem(path, MAX_RULE_FILE_BYTES)
        if problem is not None and problem != "no such file":  # a dangling link: load_rules says so
            problems.append(RuleFileProblem(_display_path(path), 0, f"cannot read: {problem}", code="schema"))
    problem = _pack_problem(paths, sum(_size(path) for path in paths[:MAX_PACK_FILES + 1]))
    if problem is not None:
        problems.append(RuleFileProblem(_display_path(directory), 0, problem, code="schema"))
    if problems:
        raise RuleFileErrors(problems)


def rule_files(directory: str) -> list[str]:
    """The rule files of ``directory``, sorted (``[``, ``*`` or ``?`` in its path are its own characters)."""
    return sorted(glob.glob(os.path.join(glob.escape(directory), "*.yaml")))


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except (OSError, ValueError):
        return 0


def _pack_problem(paths: list[str], size: int) -> str | None:
    """Why a pack of these files, ``size`` bytes in all, is too big to load in seconds (None if it is not)."""
    if len(paths) > MAX_PACK_FILES:
        return f"{len(paths)} rule files (*.yaml); a rule pack may have at most {MAX_PACK_FILES}"
    if size > MAX_PACK_BYTES:
        return f"the rule files hold {size} bytes together; a rule pack may hold at most {MAX_PACK_BYTES // 2**20} MiB"
    return None


def load_rules(directory: str | None = None) -> RulePack:
    """Load and check every ``*.yaml`` file of ``directory`` (default: the shipped rules)."""
    directory = absolute_path(directory or default_rules_dir(), "--rules")
    problems: list[RuleFileProblem] = []
    if not os.path.isdir(directory):
        problems.append(RuleFileProblem(directory, 0, "the rules directory does not exist", code="schema"))
        raise RuleFileErrors(problems)
    paths = rule_files(directory)
    if not paths:
        problems.append(RuleFileProblem(directory, 0, "no *.yaml rule files in this directory", code="schema"))
        raise RuleFileErrors(problems)
    shipped = is_shipped(directory)
    too_many = _pack_problem(paths, 0)
    if too_many is not None:
        raise RuleFileErrors([RuleFileProblem(_display_path(directory), 0, too_many, code="schema")])
    documents, over_cap = _read_documents(directory, paths, shipped, problems)
    if over_cap:
        raise RuleFileErrors(problems)  # over a cap: nothing more is checked (that is where the time would go)
    entries: list[tuple[str, _Mapping, list[str]]] = []
    for rel, text, data in documents:
        lines = text.splitlines()
        if not isinstance(data, dict):
            problems.append(RuleFileProblem(rel, 1, "a rule file is a mapping with 'schema' and 'rules'"))
            continue
        schema_errors = sorted(_validator().iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
        bad_rules: set[int] = set()
        for err in schema_errors:
            path_ = list(err.absolute_path)
            problems.append(RuleFileProblem(rel, _line_of(data, path_), _schema_message(err), code=_schema_code(err)))
            if len(path_) >= 2 and path_[0] == "rules" and isinstance(path_[1], int):
                bad_rules.add(path_[1])
        if schema_errors and not isinstance(data.get("rules"), list):
            continue
        for i, rule in enumerate(data.get("rules") or []):
            if i not in bad_rules and isinstance(rule, _Mapping):
                entries.append((rel, rule, lines))
    pack = _build(directory, entries, problems)
    if problems:
        raise RuleFileErrors(problems)
    return pack


def _read_documents(directory: str, paths: list[str], shipped: bool,
                    problems: list[RuleFileProblem]) -> tuple[list[tuple[str, str, Any]], bool]:
    """Every rule file read and parsed, as (file as cited, text, data), within the caps on bytes and on
    what the YAML expands to; what cannot be read or parsed is a problem instead.  The flag says
    whether a cap was reached (the pack is then refused without further checks)."""
    documents: list[tuple[str, str, Any]] = []
    over_cap = False
    budget, read = _Budget(), 0  # what the files read so far expanded to, and their bytes
    for path in paths:
        rel = cited_path(path, shipped)
        try:
            # a regular file under the size cap: a FIFO or /dev/zero is refused unread
            text = read_text(path, MAX_RULE_FILE_BYTES)
        except UnreadableFile as exc:
            problems.append(RuleFileProblem(rel, 0, f"cannot read: {exc.reason}", code="schema"))
            continue
        read += len(text.encode("utf-8"))  # bytes, as the cap says (the text is already decoded)
        too_big = _pack_problem(paths, read)
        if too_big is not None:  # the files grew since get_engine's check, or it was not made (docgen, lint)
            problems.append(RuleFileProblem(_display_path(directory), 0, too_big, code="schema"))
            return documents, True
        try:
            documents.append((rel, text, _parse_yaml(text, budget)))
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            problems.append(RuleFileProblem(rel, (mark.line + 1) if mark else 0,
                                            f"YAML error: {getattr(exc, 'problem', exc)}", code="syntax"))
        except _TooBig as exc:
            problems.append(RuleFileProblem(rel, 0, str(exc), code="schema"))
            over_cap = True
    return documents, over_cap


def cited_path(path: str, shipped: bool) -> str:
    """A rule file's ``path`` as its rules are cited: the shipped pack as rules/NAME wherever it is
    installed, any other relative to the working directory when inside it."""
    return os.path.join("rules", os.path.basename(path)) if shipped else _display_path(path)


def is_shipped(directory: str) -> bool:
    """Whether the absolute ``directory`` is the shipped rules."""
    return directory == os.path.abspath(default_rules_dir())


def _unreadable(expression: Expression, known: set[str], options: dict[str, Option]) -> list[str]:
    """The names ``expression`` may not read: unknown ones, a json option read other than as a list (largest(),
    count(): its value is a list or an object, never an operand), and a list call of anything else."""
    def readable(n: str) -> bool:
        if n in options and options[n].opaque:
            return n in expression.lists  # a json option: only as a list
        return n in known and n not in expression.lists  # anything else: never as a list

    return [n for n in expression.names if not readable(n)]


def _why_unreadable(name: str, where: str, known: set[str], options: dict[str, Option]) -> str:
    if name in options and options[name].opaque:
        return f"the json option '{name}' is read only as a list, largest({name}) or count({name}), in '{where}'"
    if name in known:
        return f"largest() and count() read a json option's list, and '{name}' is none (in '{where}')"
    return f"unknown fact or option '{name}' in '{where}'{_did_you_mean(name, known)}"


def _display_path(path: str) -> str:
    """``path`` as a rule location is cited: relative to the working directory when inside it."""
    try:
        rel = os.path.relpath(path)
    except OSError:  # the working directory was deleted: there is nothing to be relative to
        return path
    return path if rel.startswith("..") else rel


def _line_of(data: Any, path: list) -> int:
    line = getattr(data, "line", 1)
    node = data
    for key in path:
        if isinstance(node, _Mapping) and str(key) in node.positions:
            line = node.positions[str(key)][0]
        try:
            node = node[key]
        except (KeyError, IndexError, TypeError):
            break
        line = getattr(node, "line", line)
    return line


def _schema_code(err) -> str:
    """missing-doc and missing-message are lint checks of their own; every other shape error is schema."""
    missing = getattr(err, "missing", None)  # set by _validator's required check
    return f"missing-{missing}" if err.validator == "required" and missing in ("doc", "message") else "schema"


def _schema_message(err) -> str:
    where = ".".join(str(p) for p in err.absolute_path) or "file"
    if err.validator == "additionalProperties":
        return f"{where}: {err.message} (check the spelling; see docs/rule-format.md)"
    if err.validator == "required":
        return f"{where}: {err.message}"
    return f"{where}: {err.message}"


class _Builder:
    def __init__(self, problems: list[RuleFileProblem]):
        self.problems = problems

    def problem(self, file: str, line: int, message: str, column: int | None = None, source: str | None = None,
                code: str = "schema"):
        self.problems.append(RuleFileProblem(file, line, message, column, source, code))

    def condition(self, file: str, rule: _Mapping, key: str, lines: list[str]) -> Condition | None:
        text = rule.get(key)
        try:
            return parse_condition(text)
        except ConditionError as exc:
            line, col = rule.positions.get(key, (rule.line, None))
            source = lines[line - 1].rstrip() if 0 < line <= len(lines) else None
            if col is None or source is None or len(str(text).split("\n")) > 1 or "\n" in source:
                # a folded block: show the logical expression itself with the caret under it
                self.problem(file, line, f"rule {rule.get('id')}: {exc.message}", exc.column,
                             " ".join(str(text).split()), exc.code)
            else:
                self.problem(file, line, f"rule {rule.get('id')}: {exc.message}", col + exc.column, source, exc.code)
            return None

    def expression(self, file: str, rule: _Mapping, lines: list[str]) -> Expression | None:
        text = rule["value"]
        try:
            return parse_expression(text)
        except ConditionError as exc:
            line, _ = rule.positions.get("value", (rule.line, None))
            self.problem(file, line, f"rule {rule.get('id')}: {exc.message}", exc.column, " ".join(str(text).split()),
                         exc.code)
            return None


def _build(directory: str, entries, problems: list[RuleFileProblem]) -> RulePack:
    b = _Builder(problems)
    seen: dict[str, RuleRef] = {}
    options: dict[str, Option] = {}
    facts: dict[str, Fact] = {}
    computes: dict[str, Compute] = {}
    defaults: list[Default] = []
    adjusts: list[Adjust] = []
    conflicts: list[Conflict] = []
    pending: list[tuple[RuleRef, Any, Condition | None, _Mapping]] = []
    for file, rule, lines in entries:
        ref = RuleRef(rule["id"], file, rule.line)
        if ref.id in seen:
            first = seen[ref.id]
            b.problem(file, ref.line, f"duplicate rule id '{ref.id}' (first at {first.file}:{first.line})",
                      code="duplicate")
            continue
        seen[ref.id] = ref
        kind, doc = rule["kind"], " ".join(rule["doc"].split())
        if kind in ("option", "env"):
            opt = _option(b, ref, doc, rule) if kind == "option" else _env(ref, doc, rule)
            if opt.name in options:
                b.problem(file, ref.line, f"option '{opt.name}' is declared twice (also {options[opt.name].ref})",
                          code="duplicate")
            options[opt.name] = opt
            continue
        if kind == "compute":
            value = b.expression(file, rule, lines)
            if value is not None:
                computes[rule["name"]] = Compute(ref, doc, rule["name"], value)
            continue
        when = b.condition(file, rule, "when", lines)
        pending.append((ref, doc, when, rule))
    for ref, doc, when, rule in pending:
        if when is not None and rule["kind"] == "fact":
            facts[rule["name"]] = Fact(ref, doc, rule["name"], when)
    # user.<option>: the value the user typed, before any rule (null when not typed);
    # typed.<option>: the same, in the spelling typed (before a deprecated value is mapped);
    # given.<option>: whether the user typed a value at all (what a rule may read of a json option)
    typed = {f"{prefix}.{o}" for o in options for prefix in ("user", "typed", "given")}
    # a json option's value never reaches the engine: no rule may read it, under any of its names
    opaque = {name for o, opt in options.items() if opt.opaque for name in (o, f"user.{o}", f"typed.{o}")}
    known = (set(options) | set(facts) | set(computes) | _INPUT_FACTS | typed | _kernel_facts(options)) - opaque
    for c in computes.values():
        if c.name in options or c.name in facts or c.name in _INPUT_FACTS:
            b.problem(c.ref.file, c.ref.line, f"compute '{c.name}' reuses the name of an option or fact",
                      code="duplicate")
        for name in _unreadable(c.value, known, options):
            b.problem(c.ref.file, c.ref.line, f"rule {c.ref.id}: {_why_unreadable(name, 'value', known, options)}",
                      code="unknown-name")
    for ref, doc, when, rule in pending:
        if when is None:
            continue
        kind = rule["kind"]
        for name in when.names():
            if name not in known:
                b.problem(ref.file, rule.positions.get("when", (ref.line, 0))[0],
                          f"rule {ref.id}: unknown fact or option '{name}' in 'when'{_did_you_mean(name, known)}",
                          code="unknown-name")
        if kind == "fact":
            if rule["name"] in options or rule["name"] in _INPUT_FACTS or rule["name"] in computes:
                b.problem(ref.file, ref.line, f"fact '{rule['name']}' reuses the name of an option or input fact",
                          code="duplicate")
        elif kind == "default":
            for name, value in rule["set"].items():
                if isinstance(value, dict):  # {from: other}: copy another option's or fact's value
                    if value["from"] not in known:
                        b.problem(ref.file, ref.line,
                                  f"rule {ref.id}: 'from' names unknown option or fact '{value['from']}'",
                                  code="unknown-name")
                    if name not in options or options[name].opaque:
                        b.problem(ref.file, ref.line, f"rule {ref.id}: 'set' names unknown option '{name}'",
                                  code="unknown-name")
                    continue
                _check_value(b, ref, options, name, value, "set")
            defaults.append(Default(ref, doc, when, dict(rule["set"]), rule["priority"]))
        elif kind == "adjust":
            if isinstance(rule["value"], dict) and "expr" in rule["value"]:  # {expr: ...}: worked out from the value
                try:
                    expression = parse_expression(rule["value"]["expr"])
                except ConditionError as exc:
                    b.problem(ref.file, ref.line, f"rule {ref.id}: {exc.message} (in 'value.expr')", code=exc.code)
                    continue
                for name in _unreadable(expression, known, options):
                    b.problem(ref.file, ref.line,
                              f"rule {ref.id}: {_why_unreadable(name, 'value.expr', known, options)}",
                              code="unknown-name")
            elif isinstance(rule["value"], dict):  # {from: other}
                if rule["value"]["from"] not in known:
                    b.problem(ref.file, ref.line, f"rule {ref.id}: 'from' names unknown option or fact "
                                                  f"'{rule['value']['from']}'", code="unknown-name")
                if rule["option"] not in options or options[rule["option"]].opaque:
                    b.problem(ref.file, ref.line, f"rule {ref.id}: 'option' names unknown option '{rule['option']}'",
                              code="unknown-name")
            else:
                _check_value(b, ref, options, rule["option"], rule["value"], "option")
            adjusts.append(Adjust(ref, doc, when, rule["option"], rule["value"], rule["order"],
                                  " ".join(rule["message"].split()), bool(rule.get("normalize", False))))
        elif kind == "conflict":
            conflicts.append(_conflict(b, ref, doc, when, rule, options, known))
    for conflict in conflicts:
        _check_template(b, conflict.ref, conflict.message, known | {"allowed", "option"})
    for a in adjusts:
        _check_template(b, a.ref, a.message, known | {"old", "new"})
    _check_flags(b, options)
    levels = _dependency_levels(b, options, facts, computes, defaults, adjusts)
    return RulePack(directory, options, facts, tuple(defaults), tuple(adjusts), tuple(conflicts), levels, computes)


def _kernel_facts(options: dict[str, Option]) -> set[str]:
    """kernel.<option> (supported/unsupported/unknown/none) and kernel.<option>_why, per kernel option."""
    return {f(o) for o, opt in options.items() if opt.kernel_role for f in (kernel_fact, kernel_why_fact)}


def kernel_option(name: str) -> str | None:
    """The option a ``kernel.*`` fact describes (it is decided with that option)."""
    parts = fact_name(name)
    return parts.option if parts.family in ("kernel", "kernel_why") else None


def _option(b: _Builder, ref: RuleRef, doc: str, rule: _Mapping) -> Option:
    name, typ = rule["name"], rule["type"]
    choices = tuple(rule.get("choices", ()))
    if typ == "choice" and not choices:
        b.problem(ref.file, ref.line, f"option '{name}' of type choice needs 'choices'")
    value_aliases = dict(rule.get("value_aliases", {}))
    for old, new in value_aliases.items():
        if choices and new not in choices:
            b.problem(ref.file, ref.line,
                      f"option '{name}': value alias '{old}' points to '{new}', which is not a choice",
                      code="unknown-value")
    note = rule.get("value_alias_note")
    try:
        fields = set(template_fields(note or ""))
    except ValueError as exc:
        b.problem(ref.file, ref.line, f"option '{name}': bad value_alias_note: {exc}")
        fields = set()
    if fields - {"flag", "value", "new"}:
        extra = ", ".join(sorted(fields - {"flag", "value", "new"}))
        b.problem(ref.file, ref.line,
                  f"option '{name}': value_alias_note may only use {{flag}}, {{value}} and {{new}}, not {extra}")
    no_cli = bool(rule.get("no_cli", False))
    if no_cli and ("flag" in rule or "aliases" in rule):
        b.problem(ref.file, ref.line, f"option '{name}' has no_cli: it takes no flag nor aliases")
    flag = "" if no_cli else rule.get("flag", "--" + name.replace("_", "-"))
    skip = tuple(rule.get("fixes_skip", ()))
    for value in skip:
        if choices and value not in choices:
            b.problem(ref.file, ref.line, f"option '{name}': fixes_skip names '{value}', which is not a choice",
                      code="unknown-value")
    default = rule.get("default")
    if typ == "json":
        for key in ("choices", "value_aliases", "unset_values", "minimum", "kernel_role", "fixes_skip"):
            if key in rule:
                b.problem(ref.file, ref.line, f"option '{name}' of type json takes no '{key}'")
    elif isinstance(default, (dict, list)):
        b.problem(ref.file, ref.line, f"option '{name}': only a json option has an object or list default")
    not_decided = " ".join(rule["not_decided"].split()) if "not_decided" in rule else None
    return Option(ref, doc, name, flag, typ, " ".join(rule["help"].split()),
                  choices, tuple(rule.get("aliases", ())), value_aliases, tuple(rule.get("unset_values", ())),
                  default, rule.get("minimum"), rule.get("kernel_role"), no_cli=no_cli,
                  value_alias_note=" ".join(rule["value_alias_note"].split()) if "value_alias_note" in rule else None,
                  fixes_omit_only=bool(rule.get("fixes_omit_only", False)), fixes_skip=skip, not_decided=not_decided)


#: the resolver's own command-line flags (resolver/cli.py, build_parser): no option may take one
#: (tests/test_adversarial_packs.py checks this list against the parser)
RESOLVER_FLAGS = frozenset({
    "-h", "--help", "--platform", "--compute-capability", "--gpu-memory-gb", "--vendor", "--model-config",
    "--model-arch", "--check-installed", "--gpus-per-node", "--env", "--installed", "--explain", "--format", "--color",
    "--require-known-kernels", "--require-all-checks", "--strict", "--rules", "--batch", "--jobs", "--no-fixes",
    "--verbose", "--why-not",
})


#: the attribute each of the resolver's own flags is stored in (an option of that name would share it)
_RESOLVER_DESTS = {f.lstrip("-").replace("-", "_"): f for f in RESOLVER_FLAGS if f.startswith("--")}


def _check_flags(b: _Builder, options: dict[str, Option]) -> None:
    """Every flag and alias of the pack names one option only: not a flag of the resolver itself, not
    another option's, not an SGLang flag of another field (the command line accepts every SGLang flag),
    and not twice in one option.  argparse would otherwise fail on the first clash when the command
    line is built, with an internal error."""
    # ~10 ms, once per process; a cached pack is not checked again
    from .catalogue import catalogue

    by_flag, by_dest = catalogue().by_flag, catalogue().by_dest
    owner: dict[str, Option] = {}
    # an option whose flag is SGLang's for its own field claims it first: the other one is the culprit
    def rightful(o: Option) -> bool:
        return o.name in by_dest and o.flag in by_dest[o.name].flags

    for opt in sorted(options.values(), key=lambda o: (not rightful(o), o.ref.file, o.ref.line)):
        if opt.env:
            continue
        if opt.name in _RESOLVER_DESTS:  # argparse would store both in one attribute
            b.problem(opt.ref.file, opt.ref.line, f"option '{opt.name}': the name is the resolver's own "
                                                  f"{_RESOLVER_DESTS[opt.name]}; choose another", code="duplicate")
        if opt.no_cli:
            continue
        sglang = by_dest[opt.name].flags if opt.name in by_dest else ()
        seen: set[str] = set()
        for flag in (opt.flag, *opt.aliases):
            where = "flag" if flag == opt.flag and not seen else "alias"
            if flag in seen:
                b.problem(opt.ref.file, opt.ref.line, f"option '{opt.name}': {flag} is given twice (flag and aliases)",
                          code="duplicate")
                continue
            seen.add(flag)
            if flag in RESOLVER_FLAGS:
                b.problem(opt.ref.file, opt.ref.line, f"option '{opt.name}': its {where} {flag} is a flag of the "
                                                      "resolver itself (resolve --help); choose another",
                                                      code="duplicate")
            elif flag in owner:
                b.problem(opt.ref.file, opt.ref.line, f"option '{opt.name}': its {where} {flag} already belongs "
                                                      f"to option '{owner[flag].name}' ({_at(owner[flag])})",
                                                      code="duplicate")
            elif flag in by_flag and by_flag[flag].dest != opt.name:
                b.problem(opt.ref.file, opt.ref.line, f"option '{opt.name}': its {where} {flag} is SGLang's flag "
                                                      f"for {by_flag[flag].dest}; choose another", code="duplicate")
            owner.setdefault(flag, opt)
        for flag in sglang:  # SGLang's other spellings of the same field (the parser adds them too)
            if flag not in seen and flag in owner and owner[flag] is not opt:
                b.problem(opt.ref.file, opt.ref.line, f"option '{opt.name}': SGLang's flag {flag} for it already "
                                                      f"belongs to option '{owner[flag].name}' ({_at(owner[flag])})",
                                                      code="duplicate")
            owner.setdefault(flag, opt)


def _at(opt: Option) -> str:
    return f"{opt.ref.file}:{opt.ref.line}"


def _env(ref: RuleRef, doc: str, rule: _Mapping) -> Option:
    """An environment variable SGLang sets: an option whose values are the variable's text."""
    name = rule["name"]
    return Option(ref, doc, name, name, "str", " ".join(rule["help"].split()), default=rule.get("default"), env=True)


def _check_value(b: _Builder, ref: RuleRef, options: dict[str, Option], name: str, value: Any, key: str) -> None:
    opt = options.get(name)
    if opt is None:
        b.problem(ref.file, ref.line,
                  f"rule {ref.id}: '{key}' names unknown option '{name}'{_did_you_mean(name, set(options))}",
                  code="unknown-name")
    elif opt.opaque:
        b.problem(ref.file, ref.line, f"rule {ref.id}: '{key}' names the json option '{name}', which no rule decides "
                                      "(its value is the typed one or its declared default)", code="unknown-name")
    elif opt.choices and value is not None and value not in opt.choices:
        b.problem(ref.file, ref.line,
                  f"rule {ref.id}: '{value}' is not a value of {name} (choices: {', '.join(opt.choices)})",
                  code="unknown-value")
    else:
        try:  # a value the engine cannot hold (nan, inf, 1e-07): refused here, not when a fix or conflict uses it
            engine_value(value, f"rule {ref.id}: value" if key == "option" else f"rule {ref.id}: {key} {name}")
        except InputError as exc:
            b.problem(ref.file, ref.line, str(exc), code="engine-safety")


def _conflict(b, ref, doc, when, rule, options, known) -> Conflict:
    option, allowed = rule.get("option"), tuple(rule.get("allowed", ()))
    if option is not None:
        if option not in options:
            b.problem(ref.file, ref.line, f"rule {ref.id}: 'option' names unknown option '{option}'",
                      code="unknown-name")
        else:
            for v in allowed:
                _check_value(b, ref, options, option, v, "allowed")
            # "option is set and not in allowed", conjoined to every branch of the context
            restrict = Atom(option, "notin", allowed + (None,), False)
            when = Condition(f"({when.source}) and {restrict}", tuple(br + (restrict,) for br in when.branches))
    hints = []
    for h in rule.get("fixes", ()):
        for n in [*h.get("set", {}), *h.get("unset", ())]:
            if n in options and options[n].no_cli:
                b.problem(ref.file, ref.line, f"rule {ref.id}: a fix cannot change '{n}', which has no flag (no_cli)")
        for n, v in h.get("set", {}).items():
            _check_value(b, ref, options, n, v, "fixes.set")
        for n in h.get("unset", ()):
            if n not in options:
                b.problem(ref.file, ref.line, f"rule {ref.id}: fix unsets unknown option '{n}'", code="unknown-name")
        hints.append(FixHint(h["description"], dict(h.get("set", {})), tuple(h.get("unset", ()))))
    remedy = " ".join(rule["remedy"].split()) if "remedy" in rule else None
    return Conflict(ref, doc, when, " ".join(rule["message"].split()), option, allowed, rule.get("evidence"),
                    tuple(hints), remedy)


#: the widest a placeholder may pad or cut its value: ``{x:999999999}`` would build a 1 GB message
MAX_TEMPLATE_WIDTH = 200
#: what a placeholder may say after its name: ``!r``/``!s``/``!a`` and a string format of
#: fill/alignment, width and precision (messages spell every value as text)
_SPEC = re.compile(r"(?:.?[<>^])?(?P<width>\d+)?(?:\.(?P<precision>\d+))?s?", re.DOTALL)


def template_fields(template: str) -> list[str]:
    """The placeholder names of a message template; ValueError (with the reason) when a placeholder
    could fail or blow up when the message is rendered: a conversion other than r/s/a, a format
    other than alignment, width and precision (up to MAX_TEMPLATE_WIDTH), a nested placeholder."""
    fields = []
    for _, name, spec, conversion in string.Formatter().parse(template):  # its own ValueError on bad braces
        if name is None:
            continue
        where = f"'{{{name}}}'"
        if conversion not in (None, "r", "s", "a"):
            raise ValueError(f"{where} has the conversion '!{conversion}'; only !r, !s and !a exist")
        match = _SPEC.fullmatch(spec or "")
        if match is None:
            raise ValueError(f"{where} has the format '{spec}'; a message may only align a value, give a width "
                             f"and a precision (e.g. '{{{name}:>12.4}}')")
        for part in ("width", "precision"):
            number = match.group(part)
            if number is not None and (len(number) > 4 or int(number) > MAX_TEMPLATE_WIDTH):
                raise ValueError(f"{where} has a {part} of {number}; the limit is {MAX_TEMPLATE_WIDTH}")
        fields.append(name)
    return fields


def _check_template(b: _Builder, ref: RuleRef, template: str, known: set[str]) -> None:
    try:
        fields = template_fields(template)
    except ValueError as exc:
        b.problem(ref.file, ref.line, f"rule {ref.id}: bad message template: {exc}")
        return
    for f in fields:
        if f not in known:
            b.problem(ref.file, ref.line, f"rule {ref.id}: message placeholder '{{{f}}}' names no fact or option",
                      code="unknown-name")


def _dependency_levels(b: _Builder, options, facts, computes, defaults, adjusts) -> tuple[tuple[str, ...], ...]:
    """Options, derived facts and computed values in levels: each comes after everything its rules read."""
    nodes = set(options) | set(facts) | set(computes)
    deps: dict[str, dict[str, RuleRef]] = {n: {} for n in nodes}  # node -> {dependency: rule creating the edge}

    def real(n: str) -> str:  # a kernel fact is decided with its option
        return kernel_option(n) or n

    for f in facts.values():
        for n in map(real, f.when.names()):
            if n in nodes:
                deps[f.name].setdefault(n, f.ref)
    for c in computes.values():
        for n in map(real, c.value.names):
            if n in nodes:
                deps[c.name].setdefault(n, c.ref)
    for d in defaults:
        for target, value in d.set.items():
            reads = list(d.when.names()) + ([value["from"]] if isinstance(value, dict) else [])
            for n in map(real, reads):
                if n in nodes and target in deps:
                    deps[target].setdefault(n, d.ref)
    for a in adjusts:
        reads = list(a.when.names()) + _value_reads(a)
        for n in map(real, reads):
            if n in nodes and n != a.option and a.option in deps:
                deps[a.option].setdefault(n, a.ref)
    for o in options.values():
        if o.kernel_role:  # its kernel facts read the KV dtype and the model kind (the MoE runner's, the quantization)
            for n in KERNEL_CONTEXT + ROLE_CONTEXT.get(o.kernel_role, ()):
                if n in nodes and n != o.name:
                    deps[o.name].setdefault(n, o.ref)
    order: list[tuple[str, ...]] = []
    done: set[str] = set()
    remaining = set(nodes)
    while remaining:
        ready = sorted(n for n in remaining if all(d in done for d in deps[n]))
        if not ready:
            cycle = _find_cycle(deps, remaining)
            rules = sorted({str(deps[a][b_]) for a, b_ in zip(cycle, cycle[1:] + cycle[:1], strict=True)})
            ref = deps[cycle[0]][cycle[1 % len(cycle)]]
            loop = " -> ".join(cycle + cycle[:1])
            b.problem(ref.file, ref.line, f"dependency cycle between options: {loop}; rules: {'; '.join(rules)}",
                      code="cycle")
            return tuple(order + [tuple(sorted(remaining))])
        order.append(tuple(ready))
        done.update(ready)
        remaining.difference_update(ready)
    return _engine_stages(order, deps, computes)


def _engine_stages(order: list[tuple[str, ...]], deps: dict[str, dict[str, RuleRef]],
                   computes) -> tuple[tuple[str, ...], ...]:
    """The dependency levels regrouped by engine round: what a resolution decides between two engine calls.

    An option or a derived fact is decided from the rules that fired, so it comes one round after every
    name it reads; a computed value is worked out in Python from values already decided, so it joins the
    round of the latest name it reads (after that round's options are adjusted).  A round lists its
    options and facts first (their order free), then its computed values in dependency order.  The chain
    from the page size through the prefill graph's buckets and reserve to the memory fraction is 18
    levels deep but 12 rounds: each round saved is an engine call per part."""
    stage: dict[str, int] = {}
    depth: dict[str, int] = {}
    for i, level in enumerate(order):
        for n in level:
            depth[n] = i
            if n in computes:
                stage[n] = max((stage[d] for d in deps[n]), default=0)
            else:
                stage[n] = max((stage[d] + 1 for d in deps[n]), default=0)
    rounds: dict[int, list[str]] = {}
    for n in sorted(stage, key=lambda n: (n in computes, depth[n], n)):
        rounds.setdefault(stage[n], []).append(n)
    return tuple(tuple(rounds[k]) for k in sorted(rounds))


def _value_reads(a: Adjust) -> list[str]:
    """What an adjustment's value reads besides its own option: the name it copies, or its expression's names."""
    if not isinstance(a.value, dict):
        return []
    if "expr" in a.value:
        return [n for n in parse_expression(a.value["expr"]).names if n != a.option]
    return [a.value["from"]]


def _find_cycle(deps, remaining) -> list[str]:
    start = min(remaining)
    path, node = [], start
    while node not in path:
        path.append(node)
        node = min(d for d in deps[node] if d in remaining)
    return path[path.index(node):]


def _did_you_mean(name: str, known: set[str]) -> str:
    import difflib

    close = difflib.get_close_matches(name, sorted(known), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""
