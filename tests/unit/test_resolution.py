"""The decision pass on small packs: priorities, ties, user values, chained adjustments."""
import pytest

from resolver.api import get_engine, resolve_request
from resolver.errors import AmbiguousDefaultError

PACK = """
schema: resolver/1
rules:
  - id: option.b
    kind: option
    doc: Backend.
    name: b
    type: choice
    choices: [x, y, z]
    help: Backend.
  - id: option.p
    kind: option
    doc: Page.
    name: p
    type: int
    default: 1
    help: Page.
  - id: default.b.hopper
    kind: default
    doc: Hopper picks y.
    when: platform.major == 9
    set: {b: y}
    priority: 20
  - id: default.b.any
    kind: default
    doc: Anything picks x.
    set: {b: x}
    priority: 10
  - id: adjust.p.first
    kind: adjust
    doc: y wants 64.
    when: b == "y" and p != 64
    option: p
    value: 64
    order: 1
    message: y wants {new} (was {old}).
  - id: adjust.p.second
    kind: adjust
    doc: Sees the value the first left.
    when: p == 64 and platform.vendor == "nvidia"
    option: p
    value: 128
    order: 2
    message: then 128.
"""


def test_priority_user_value_and_chained_adjustments(rules_dir):
    engine = get_engine(rules_dir({"a.yaml": PACK}))
    res = resolve_request(engine, platform="h100")
    assert res.values == {"b": "y", "p": 128}
    d = res.derivations["p"]
    assert [(a.rule.id, a.old, a.new) for a in d.adjustments] == [("adjust.p.first", 1, 64),
                                                                  ("adjust.p.second", 64, 128)]
    assert d.adjustments[0].message == "y wants 64 (was 1)."
    assert res.warnings == ()  # the user did not type p
    assert [c.rule.id for c in res.derivations["b"].candidates] == ["default.b.any"]
    res = resolve_request(engine, platform="a100", args={"p": 64})
    assert res.values == {"b": "x", "p": 128} and len(res.warnings) == 1
    res = resolve_request(engine, platform="h100", args={"b": "z"})
    assert res.values["b"] == "z" and res.derivations["b"].source == "user"
    assert res.derivations["b"].candidates[0].outcome == "overridden-by-user"


def test_equal_priorities_that_disagree_name_both_rules(rules_dir):
    engine = get_engine(rules_dir({"a.yaml": PACK.replace("priority: 10", "priority: 20")}))
    with pytest.raises(AmbiguousDefaultError,
                       match=r"default.b.any .* and default.b.hopper|default.b.hopper .* and default.b.any"):
        resolve_request(engine, platform="h100")
    assert resolve_request(engine, platform="b200").values["b"] == "x"  # only one holds there


GIVEN_PACK = """
schema: resolver/1
rules:
  - id: option.ids
    kind: option
    doc: A list.
    name: ids
    flag: --ids
    type: json
    help: A list no engine fact holds.
  - id: option.capture
    kind: option
    doc: A switch.
    name: capture
    flag: --capture
    type: bool
    default: false
    help: A switch.
  - id: conflict.ids-without-capture
    kind: conflict
    doc: The list needs the switch.
    when: given.ids and not capture
    message: --ids needs --capture.
"""


@pytest.mark.parametrize("args, conflicts", [
    ({}, []), ({"ids": [1, 2]}, ["conflict.ids-without-capture"]), ({"ids": [1, 2], "capture": True}, []),
    ({"capture": True}, []), ({"ids": None}, []),
])
def test_a_rule_reads_whether_a_json_option_is_given(rules_dir, args, conflicts):
    """given.<option>: true when a value is typed, false otherwise (the list itself never reaches the engine)."""
    res = resolve_request(get_engine(rules_dir({"a.yaml": GIVEN_PACK})), platform="h100", args=args)
    assert [c.rule.id for c in res.conflicts] == conflicts
    assert res.outcome.facts["given.ids"].value is (args.get("ids") is not None)
    assert res.values["ids"] == args.get("ids")


def test_a_rule_may_not_read_a_json_options_value(rules_dir):
    from resolver.errors import RuleFileErrors

    with pytest.raises(RuleFileErrors, match="user.ids"):
        get_engine(rules_dir({"a.yaml": GIVEN_PACK.replace("when: given.ids and", "when: user.ids != null and")}))


def test_a_value_reads_a_json_options_list_only_through_largest(rules_dir):
    pack = GIVEN_PACK + """
  - id: compute.biggest
    kind: compute
    doc: The largest id.
    name: biggest
    value: coalesce(largest(ids), 0)
  - id: conflict.too-big
    kind: conflict
    doc: Ids up to 4.
    when: biggest > 4
    message: an id above 4.
"""
    engine = get_engine(rules_dir({"a.yaml": pack}))
    big = resolve_request(engine, platform="h100", args={"ids": [1, 9, 3], "capture": True})
    assert [c.rule.id for c in big.conflicts] == ["conflict.too-big"] and big.outcome.facts["biggest"].value == 9
    assert not resolve_request(engine, platform="h100", args={"ids": [1, 2], "capture": True}).conflicts


@pytest.mark.parametrize("value, problem", [
    ("ids + 1", "the json option 'ids' is read only as a list, largest(ids)"),
    ("largest(ids) + ids", "the json option 'ids' is read only as a list"),
    ("largest(capture)", "largest() and count() read a json option's list, and 'capture' is none"),
    ("count(capture) + 1", "read a json option's list, and 'capture' is none"),
])
def test_a_json_option_is_no_operand(rules_dir, value, problem):
    from resolver.errors import RuleFileErrors

    pack = GIVEN_PACK + f"""
  - id: compute.bad
    kind: compute
    doc: Reads a list wrong.
    name: bad
    value: {value}
"""
    with pytest.raises(RuleFileErrors, match=problem.replace("(", r"\(").replace(")", r"\)")):
        get_engine(rules_dir({"a.yaml": pack}))
