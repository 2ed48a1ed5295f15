"""The when: language: parsing to DNF, exact negation, null semantics, errors with columns."""
import pytest

from resolver.conditions import Atom, ConditionError, compiled_test, parse_condition


def test_and_or_not_normalise_to_dnf():
    c = parse_condition('a and (b or not c) and x in ["p", "q"]')
    assert len(c.branches) == 2
    assert c.holds({"a": True, "b": True, "c": True, "x": "p"})
    assert c.holds({"a": True, "b": False, "c": False, "x": "q"})
    assert not c.holds({"a": True, "b": False, "c": True, "x": "p"})
    assert not c.holds({"a": True, "b": True, "x": "z"})


def test_negation_is_exact_including_null():
    values = [None, 1, 5, 9, "s", True, False]
    for text in ["n < 5", "n == 5", "n != 5", "n in [1, 5]", "n not in [1, null]", "n >= 9", "n == null", "n"]:
        pos, neg = parse_condition(text), parse_condition(f"not ({text})")
        for v in values:
            assert pos.holds({"n": v}) != neg.holds({"n": v}), (text, v)


def test_null_rules():
    assert parse_condition("x != 'a'").holds({"x": None})
    assert not parse_condition("x == 'a'").holds({"x": None})
    assert not parse_condition("x < 3").holds({"x": None})
    assert parse_condition("x == null").holds({})
    assert parse_condition("x not in ['a']").holds({"x": None})


def test_booleans_do_not_equal_numbers():
    assert not parse_condition("x == 1").holds({"x": True})
    assert parse_condition("x").holds({"x": True})


def test_constant_on_the_left_is_mirrored():
    assert parse_condition("10 <= platform.major").branches == ((Atom("platform.major", "ge", 10, False),),)


@pytest.mark.parametrize("text, fragment, column", [
    ("a and", "invalid syntax", None),
    ("a != b", "only '=='", 0),
    ("x < 'text'", "needs a number", 4),
    ("x + 1", "unsupported expression", 0),
    ("1 < x < 3", "chained", 0),
    ("x in y", "list of constants", 5),
    ("x == y.z()", "expected a constant", None),
])
def test_errors_carry_a_message_and_column(text, fragment, column):
    with pytest.raises(ConditionError) as info:
        parse_condition(text)
    assert fragment in info.value.message
    if column is not None:
        assert info.value.column == column


def test_equality_join_allowed_but_not_its_negation():
    c = parse_condition("a == b")
    assert c.branches[0][0].op == "join"
    assert c.holds({"a": "x", "b": "x"}) and not c.holds({"a": None, "b": None})
    with pytest.raises(ConditionError):
        parse_condition("not (a == b)")


def test_names_and_constants():
    c = parse_condition('kv in ["a", "b"] and platform.major >= 10')
    assert c.names() == ("kv", "platform.major")
    assert c.constants("kv") == {"a", "b"}


def test_a_boolean_never_joins_a_number():
    c = parse_condition("a == b")
    assert not c.holds({"a": True, "b": 1}) and not c.holds({"a": 0, "b": False})
    assert c.holds({"a": 1, "b": 1.0}) and c.holds({"a": True, "b": True})


@pytest.mark.parametrize("text, fragment, column", [
    ("x < 1e-7", "1e-07 is outside what the resolver handles", 4),
    ("x == 1e999", "expected a finite number", 5),
    ("x > -1e999", "expected a finite number", 4),
    ("x in [1, 9007199254740993]", "too large", 9),
    ('x == "\\ud800"', "not valid UTF-8", 5),
])
def test_constants_the_engine_cannot_hold_are_refused(text, fragment, column):
    with pytest.raises(ConditionError) as info:
        parse_condition(text)
    assert fragment in info.value.message and info.value.column == column


def test_constants_the_engine_holds_are_kept():
    assert parse_condition("x < 1e-4").branches[0][0].value == 0.0001  # written without an exponent: 0.0001
    assert parse_condition("x == 9007199254740992").branches[0][0].value == 2**53
    assert parse_condition('x == "名前 😀"').branches[0][0].value == "名前 😀"


_VALUES = (None, True, False, 0, 1, 2, -1, 1.0, 0.5, 2.5, "", "1", "true", "a", "b", "fp8_e4m3", float("nan"), ["a"],
           {"a": 1})
_CONSTANTS = (True, False, 0, 1, 2, 1.0, 0.5, "1", "true", "a", "fp8_e4m3")


@pytest.mark.parametrize("op", ["eq", "ne", "lt", "le", "gt", "ge", "in", "notin", "join"])
def test_compiled_test_answers_as_holds(op):
    """compiled_test (the reference matcher's closure) gives Atom.holds' answer for every pairing of
    fact value and constant, null and both none_ok settings included."""
    if op in ("in", "notin"):
        constants: tuple = (("a", "b"), (1, True), (0, 0.5, "1"), (False,), (2, 2.0))
    elif op == "join":
        constants = ("other",)
    elif op in ("lt", "le", "gt", "ge"):  # an ordered test compares with a number (the parser's rule)
        constants = (0, 1, 2, 1.0, 0.5, -1)
    else:
        constants = _CONSTANTS
    checked = 0
    for c in constants:
        for none_ok in (False, True):
            atom = Atom("x", op, c, none_ok)
            for v in _VALUES:
                for w in (_VALUES if op == "join" else (None,)):
                    values = {"x": v, "other": w}
                    assert compiled_test(atom)(values) == atom.holds(values), (atom, v, w)
                    checked += 1
            assert compiled_test(atom)({}) == atom.holds({})
    assert checked > 100
