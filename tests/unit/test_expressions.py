"""The value: language of compute rules: arithmetic, comparisons, null propagation, refusals."""
import pytest

from resolver.conditions import ConditionError
from resolver.expressions import parse_expression


@pytest.mark.parametrize("text, values, expected", [
    ("a + 1", {"a": 40}, 41),
    ("coalesce(a, 12) // b", {"b": 5}, 2),
    ("coalesce(a, 12) // b", {"a": 64, "b": 1}, 64),
    ("a > b - 1", {"a": 40, "b": 40}, True),
    ("a > b - 1", {"a": 39, "b": 40}, False),
    ("a != b", {"a": 4, "b": 4}, False),
    ("a != b", {"a": True, "b": 1}, True),  # a boolean is not a number, as in when:
    ("-a * 2", {"a": 3}, -6),
    ("not (a < 2) and b", {"a": 3, "b": True}, True),
    ("a * 1.5 + b / 8 * 1024", {"a": 8192, "b": 1}, 12416.0),   # float constants, true division
    ("round((a - b) / a, 3)", {"a": 81920, "b": 13904}, 0.83),   # SGLang's memory fraction of an H100
    ("round(a, 3) * 0.85", {"a": 0.86654}, 0.73695),            # rounded, then scaled (SGLang on an MI300X)
    ("min(a, b, 4)", {"a": 9, "b": 6}, 4),
    ("max(a, 2048)", {"a": 1024}, 2048),
    ("max(a // 8, -1)", {"a": -9}, -1),
    ("8 if a < 20 else 48 if b < 4 else 160", {"a": 32, "b": 8}, 160),
    ("8 if a < 20 else 48 if b < 4 else 160", {"a": 32, "b": 2}, 48),
    ("8 if a < 20 else 48 if b < 4 else 160", {"a": 16}, 8),     # the branch not taken may be null
    ("coalesce(largest(bs), 512)", {"bs": [1, 2, 4, 32, 8]}, 32),  # a json option's list, read as a list
    ("coalesce(largest(bs), 512)", {}, 512),
    ("count(bs) * 8", {"bs": [4, 8, 16, 32]}, 32),
])
def test_values(text, values, expected):
    assert parse_expression(text).evaluate(values) == expected


@pytest.mark.parametrize("text, values", [
    ("a + 1", {}),                  # an unset operand
    ("a < b", {"a": 1}),            # a comparison with null
    ("a // b", {"a": 1, "b": 0}),   # no number
    ("a + 1", {"a": "x"}),          # not a number
    ("a + 1", {"a": True}),
    ("a and b", {"a": True}),
    ("a / b", {"a": 1, "b": 0}),
    ("min(a, 4)", {}),              # min, max and round of null
    ("max(a, 4)", {"a": True}),
    ("round(a, 3)", {}),
    ("round(a, b)", {"a": 1.25, "b": 0.5}),   # digits must be whole
    ("1 if a else 2", {}),          # a conditional on null
    ("largest(a)", {"a": []}),      # largest of no list, an empty one or one not all numbers
    ("largest(a)", {"a": 4}),
    ("largest(a)", {"a": [1, True]}),
    ("largest(a)", {"a": [1, "2"]}),
    ("count(a)", {"a": "four"}),
])
def test_null_propagates(text, values):
    assert parse_expression(text).evaluate(values) is None


def test_names_are_listed_in_order():
    assert parse_expression("coalesce(user.x, 12) // y.z + x").names == ("user.x", "y.z", "x")


def test_a_name_read_only_by_largest_is_a_list_name():
    assert parse_expression("coalesce(largest(bs), m) + 1").lists == ("bs",)
    assert parse_expression("largest(bs) + bs").lists == ()  # read as an operand too: the loader refuses it


@pytest.mark.parametrize("text", ["a ** 2", "f(a)", "a.b()", "[a]", "1 < a < 3", "a @ 2",
                                  "coalesce()", "'x' + 1e999", "min(a)", "max()", "round(a)",
                                  "round(a, 1, 2)", "min(a, b=1)", "abs(a)", "1 if a else 1e999",
                                  "largest()", "largest(a, b)", "largest(a + 1)", "largest(3)", "count(a, b)"])
def test_refused(text):
    with pytest.raises(ConditionError):
        parse_expression(text)


def test_equality_is_by_source():
    assert parse_expression("a + 1") == parse_expression("a  +  1")
