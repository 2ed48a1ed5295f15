"""Rule files: the shipped pack loads; every problem of a broken pack is reported at file:line."""
import os
import re

import pytest

from resolver.errors import RuleFileErrors
from resolver.loader import default_rules_dir, load_rules

GOOD = """
schema: resolver/1
rules:
  - id: option.a
    kind: option
    doc: An option.
    name: a
    type: choice
    choices: [x, y]
    help: Option a.
  - id: option.b
    kind: option
    doc: Another.
    name: b
    type: bool
    default: false
    help: Option b.
  - id: default.a.y
    kind: default
    doc: b makes a y.
    when: b
    set: {a: y}
    priority: 10
"""


def test_shipped_rules_load_and_every_rule_has_a_location_and_doc():
    pack = load_rules()
    refs = pack.all_refs()
    assert len(refs) > 50
    for ref in refs:
        assert ref.file.startswith("rules/") and ref.line > 0
        assert pack.rule(ref.id).doc.strip()


def test_dependency_levels_put_inputs_first():
    pack = load_rules()
    order = pack.order
    assert order.index("kv_cache_dtype") < order.index("dsa_decode_backend")
    assert order.index("model.dsa") < order.index("model.dsa_resolved") < order.index("kv_cache_dtype")


def test_good_pack(rules_dir):
    pack = load_rules(rules_dir({"a.yaml": GOOD}))
    assert set(pack.options) == {"a", "b"} and pack.order.index("b") < pack.order.index("a")


def _line(text, needle, nth=1):
    """1-based line of the nth line of ``text`` containing ``needle`` (rule files are written as-is)."""
    hits = [i + 1 for i, line in enumerate(text.splitlines()) if needle in line]
    return hits[nth - 1]


def _problems(directory):
    with pytest.raises(RuleFileErrors) as info:
        load_rules(directory)
    return info.value


def test_all_errors_are_collected_with_file_and_line(rules_dir):
    bad = GOOD + """
  - id: default.a.y
    kind: default
    doc: Duplicate id.
    when: b
    set: {a: y}
    priority: 5
  - id: conflict.typo
    kind: conflict
    doc: Uses an unknown name.
    when: bb and a == "x"
    message: oops {nope}
  - id: default.bad-value
    kind: default
    doc: Sets a value that is not a choice.
    set: {a: zz}
    priority: 1
"""
    err = _problems(rules_dir({"a.yaml": bad}))
    text = str(err)
    assert re.search(rf"rules/a.yaml:{_line(bad, 'id: default.a.y', 2)}: duplicate rule id 'default.a.y'", text)
    assert "unknown fact or option 'bb'" in text and "did you mean 'b'" in text
    assert "placeholder '{nope}'" in text
    assert "'zz' is not a value of a" in text
    assert len(err.problems) == 4


def test_bad_when_gets_a_caret_under_the_problem(rules_dir):
    bad = GOOD.replace("when: b\n", "when: b and a < 'x'\n")
    err = _problems(rules_dir({"a.yaml": bad}))
    lines = str(err).splitlines()
    i = next(i for i, line in enumerate(lines) if "needs a number" in line)
    assert re.search(rf"rules/a.yaml:{_line(bad, 'when: b and')}: ", lines[i])
    source, caret = lines[i + 1], lines[i + 2]
    assert source.strip() == "when: b and a < 'x'"
    assert source[caret.index("^")] == "'"


def test_schema_errors_name_the_line(rules_dir):
    bad = GOOD.replace("    priority: 10", "    priority: high\n    colour: red")
    err = _problems(rules_dir({"a.yaml": bad}))
    text = str(err)
    assert "'high' is not of type 'integer'" in text
    assert "colour" in text
    assert all(p.line > 0 for p in err.problems)


def test_yaml_syntax_error_and_non_mapping(rules_dir):
    err = _problems(rules_dir({"a.yaml": "schema: [", "b.yaml": "- just a list"}))
    assert sorted(os.path.basename(p.path) for p in err.problems) == ["a.yaml", "b.yaml"]


def test_dependency_cycle_names_the_rules(rules_dir):
    cyc = GOOD.replace("when: b\n    set: {a: y}", "when: b\n    set: {a: y}") + """
  - id: default.b.from-a
    kind: default
    doc: a decides b, b decides a.
    when: a == "y"
    set: {b: true}
    priority: 1
"""
    err = _problems(rules_dir({"a.yaml": cyc}))
    assert "dependency cycle" in str(err)
    assert "default.a.y" in str(err) and "default.b.from-a" in str(err)


def test_unsafe_join_refused_at_its_line(rules_dir):
    bad = GOOD.replace("when: b\n", "when: a != b\n")
    err = _problems(rules_dir({"a.yaml": bad}))
    assert "only '=='" in str(err) and f"rules/a.yaml:{_line(bad, 'a != b')}:" in str(err)


def test_yaml_tags_cannot_run_code(rules_dir):
    evil = "schema: resolver/1\nrules: !!python/object/apply:os.system ['echo pwned']\n"
    err = _problems(rules_dir({"a.yaml": evil}))
    assert "YAML error" in str(err)


def test_missing_directory(tmp_path):
    err = _problems(str(tmp_path / "nowhere"))
    assert "does not exist" in str(err)


def test_default_rules_dir_holds_the_shipped_files():
    assert os.path.exists(os.path.join(default_rules_dir(), "dsa.yaml"))


def test_compute_rules_are_checked_and_ordered(rules_dir):
    good = GOOD + """
  - id: option.n
    kind: option
    doc: A number.
    name: n
    type: int
    help: n.
  - id: option.m
    kind: option
    doc: Another number.
    name: m
    type: int
    help: m.
  - id: compute.n-plus
    kind: compute
    doc: m + 1.
    name: n_plus
    value: m + 1
  - id: adjust.n
    kind: adjust
    doc: copies.
    when: n_plus > 3
    option: n
    value: {from: n_plus}
    order: 1
    message: n becomes {new}.
"""
    pack = load_rules(rules_dir({"a.yaml": good}))
    assert pack.order.index("m") < pack.order.index("n_plus") < pack.order.index("n")
    bad = GOOD + """
  - id: compute.bad-name
    kind: compute
    doc: reads a typo.
    name: c1
    value: bb + 1
  - id: compute.bad-syntax
    kind: compute
    doc: not arithmetic.
    name: c2
    value: b ** 2
  - id: compute.clash
    kind: compute
    doc: an option's name.
    name: a
    value: "1"
  - id: adjust.bad-from
    kind: adjust
    doc: copies a typo.
    option: a
    value: {from: zz}
    order: 1
    message: m.
  - id: adjust.bad-expr
    kind: adjust
    doc: computes from a typo.
    option: a
    value: {expr: a // qq}
    order: 2
    message: m.
"""
    text = str(_problems(rules_dir({"a.yaml": bad})))
    assert "unknown fact or option 'bb' in 'value'" in text and "did you mean 'b'" in text
    assert "unsupported expression 'b ** 2'" in text
    assert "compute 'a' reuses the name of an option" in text
    assert "'from' names unknown option or fact 'zz'" in text
    assert "unknown fact or option 'qq' in 'value.expr'" in text


def test_a_field_with_no_flag_takes_no_flag_and_no_fix_changes_it(rules_dir):
    """``no_cli: true`` (a ServerArgs field SGLang derives, Arg(no_cli=True)) has no flag; a fix cannot touch it,
    and a value alias note may only name {flag}, {value} and {new}."""
    good = GOOD + """
  - id: option.derived
    kind: option
    doc: Derived.
    name: derived
    no_cli: true
    type: bool
    default: false
    help: Derived by rules only.
"""
    pack = load_rules(rules_dir({"a.yaml": good}))
    assert pack.options["derived"].no_cli and pack.options["derived"].flag == ""
    bad = good.replace("    no_cli: true\n", "    no_cli: true\n    flag: --derived\n") + """
  - id: conflict.x
    kind: conflict
    doc: A conflict.
    when: b
    message: No.
    fixes:
      - description: Change the derived field.
        set: {derived: true}
  - id: option.c
    kind: option
    doc: Aliased.
    name: c
    type: choice
    choices: [p, q]
    value_aliases: {old: p}
    value_alias_note: "{flag} {value} means {nope}"
    help: Option c.
"""
    text = "\n".join(str(p) for p in _problems(rules_dir({"a.yaml": bad})).problems)
    assert "has no_cli: it takes no flag" in text
    assert "a fix cannot change 'derived'" in text
    assert "value_alias_note may only use" in text and "nope" in text
