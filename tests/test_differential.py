"""Differential test: on randomly generated rule packs and inputs, durable-rules and an independent
plain-Python evaluation of the same compiled rules fire the same rules and decide the same values.

The generated packs use what durable-rules 2.0.28 is known to get wrong or crash on when misused
(its pitfalls, P1-P16 in docs/evidence.md): many rules on one fact, ordered tests next to equality tests,
null handling through negation, joins of two facts, in-lists.  If the compiler emitted a pattern the
engine mis-evaluates, the two would disagree here.
"""
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from resolver.api import Engine
from resolver.compiler import compile_pack
from resolver.engine import ReferenceMatcher
from resolver.errors import AmbiguousDefaultError, RuleFileErrors
from resolver.loader import load_rules
from resolver.model import model_facts
from resolver.platforms import PLATFORMS
from resolver.resolution import Request, run

CHOICES = ("a", "b", "c")
OPTIONS = {"mode": "choice", "style": "choice", "turbo": "bool", "size": "int"}


def _atom(draw, names):
    name = draw(st.sampled_from(names))
    kind = OPTIONS.get(name, "platform")
    if name == "platform.major":
        op = draw(st.sampled_from(["==", "!=", "<", ">=", "in"]))
        value = draw(st.sampled_from([8, 9, 10, 12]))
        return f"{name} in [{value}, 9]" if op == "in" else f"{name} {op} {value}"
    if kind == "bool":
        return draw(st.sampled_from([name, f"not {name}"]))
    if kind == "int":
        op = draw(st.sampled_from(["==", "!=", "<", ">", "<=", ">="]))
        return f"{name} {op} {draw(st.sampled_from([1, 16, 64]))}"
    op = draw(st.sampled_from(["==", "!=", "in", "not in", "==null"]))
    if op == "==null":
        return f"{name} == null"
    if op in ("in", "not in"):
        values = draw(st.lists(st.sampled_from(CHOICES), min_size=1, max_size=2, unique=True))
        return f"{name} {op} [{', '.join(repr(v) for v in values)}]".replace("'", '"')
    return f'{name} {op} "{draw(st.sampled_from(CHOICES))}"'


@st.composite
def conditions(draw, names):
    atoms = [_atom(draw, names) for _ in range(draw(st.integers(1, 3)))]
    joiners = [draw(st.sampled_from([" and ", " or "])) for _ in atoms[1:]]
    text = atoms[0] + "".join(j + a for j, a in zip(joiners, atoms[1:], strict=True))
    return f"not ({text})" if draw(st.booleans()) and len(atoms) == 1 else text


@st.composite
def packs(draw):
    inputs = ["platform.major", "turbo", "size"]
    rules = []
    for option, kind in OPTIONS.items():
        extra = "\n    choices: [a, b, c]" if kind == "choice" else ""
        rules.append(f"  - id: option.{option}\n    kind: option\n    doc: d\n    name: {option}\n"
                     f"    type: {kind}\n    help: h{extra}")
    # defaults for mode then style, reading inputs and (for style) mode: a dependency chain
    priority = 1
    for target, readable in (("mode", inputs), ("style", inputs + ["mode"])):
        for i in range(draw(st.integers(0, 3))):
            priority += 1  # distinct priorities: equal ones that disagree are an error by design
            when = draw(conditions(readable))
            rules.append(f"  - id: default.{target}.{i}\n    kind: default\n    doc: d\n    when: '{when}'\n"
                         f"    set: {{{target}: {draw(st.sampled_from(CHOICES))}}}\n    priority: {priority}")
    if draw(st.booleans()):
        rules.append("  - id: default.style.from-mode\n    kind: default\n    doc: d\n    when: turbo\n"
                     "    set: {style: {from: mode}}\n    priority: 100")
    for i in range(draw(st.integers(1, 4))):
        when = draw(conditions(inputs + ["mode", "style"]))
        if draw(st.booleans()):
            when = f"({when}) or mode == style"  # a join of two facts (equality only)
        rules.append(f"  - id: conflict.c{i}\n    kind: conflict\n    doc: d\n    when: '{when}'\n    message: m{i}")
    return "schema: resolver/1\nrules:\n" + "\n".join(rules) + "\n"


args_strategy = st.fixed_dictionaries({}, optional={
    "mode": st.sampled_from(CHOICES), "style": st.sampled_from(CHOICES), "turbo": st.just(True),
    "size": st.sampled_from([1, 16, 64, 128])})


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(packs(), st.lists(st.tuples(st.sampled_from(PLATFORMS), args_strategy), min_size=1, max_size=4))
def test_durable_rules_agrees_with_plain_python_on_random_packs(tmp_path_factory, text, requests):
    directory = tmp_path_factory.mktemp("pack")
    (directory / "pack.yaml").write_text(text)
    try:
        pack = load_rules(str(directory))
        compiled = compile_pack(pack)
    except RuleFileErrors as exc:  # e.g. a dependency cycle the generator made: reported, not crashed
        assert exc.problems
        return
    engine = Engine(pack, compiled, ReferenceMatcher(compiled))
    for platform, args in requests:
        request = Request(platform, "test", model_facts(arch=None), dict(args))
        outcomes = []
        for matcher in (engine.durable, engine.reference):
            try:
                outcomes.append(run(compiled, matcher, request))
            except AmbiguousDefaultError as exc:
                outcomes.append(type(exc))
        durable, reference = outcomes
        assert durable == reference, (text, platform.name, args)
    assert os.path.isdir(directory)
