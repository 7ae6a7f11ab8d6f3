"""The one JSON Schema check (turnwire.model.json_schema): what it changes in jsonschema so a
hostile schema or value cannot make it slow or reach the network, JSON Schema's equality in
uniqueItems, and its two callers (tool arguments, structured outputs) agreeing."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from turnwire import OutputSchema, OutputValidationError
from turnwire.client._arguments import ArgumentChecker
from turnwire.model.json_schema import JsonSchema, Violation
from turnwire.model.structured import StructuredOutput

BACKTRACKS = "^(a+)+$"  # Python's `re` takes time exponential in the length of "aaa...a!"


def _found(schema: Any, value: Any) -> list[Violation]:
    verdict = JsonSchema(schema).check(value)
    assert verdict.unusable is None
    return list(verdict.violations)


def _why(schema: Any, value: Any = None) -> str:
    verdict = JsonSchema(schema).check(value)
    assert verdict.unusable is not None and verdict.violations == ()
    return verdict.unusable


# ------------------------------------------------------------------------ uniqueItems


@pytest.mark.parametrize(
    ("items", "unique"),
    [
        ([1, 1.0], False),
        ([True, 1], True),
        ([False, 0], True),
        ([None, False], True),
        (["1", 1], True),
        ([{"a": 1, "b": 2}, {"b": 2, "a": 1}], False),
        ([{"a": True}, {"a": 1}], True),
        ([[1, {"b": 2.0}], [1.0, {"b": 2}]], False),
        ([[True], [1]], True),
        ([[], {}], True),
        ([-0.0, 0], False),
        ([0.1, 0.25], True),
        ([2**70, float(2**70)], False),
        ([2**53 + 1, float(2**53)], True),
    ],
)
def test_unique_items_follows_json_schema_equality(items, unique):
    found = _found({"uniqueItems": True}, items)
    assert (found == []) is unique
    # jsonschema's own (quadratic) check agrees.
    assert jsonschema.Draft202012Validator({"uniqueItems": True}).is_valid(items) is unique


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.sampled_from([0.0, -0.0, 1.0, 2.5, 1e300])
    | st.sampled_from(["", "a", "1"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=2)
    ),
    max_leaves=8,
)


def _json_equal(a: Any, b: Any) -> bool:
    """JSON Schema's equality, written out plainly (the reference of the random test): a
    boolean equals only a boolean, numbers equal by value (1 and 1.0, 0 and -0.0), arrays item
    by item, objects key by key in any order."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(_json_equal, a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _unique(items: list[Any]) -> bool:
    return not any(
        _json_equal(items[i], items[j]) for i in range(len(items)) for j in range(i + 1, len(items))
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_JSON, max_size=6))
@example([[False, False, 0], [False, False, False], [False, False, 0]])
def test_unique_items_agrees_with_json_schema_equality_on_random_arrays(items):
    """Against a plain pairwise check of JSON Schema's equality, not jsonschema's uniqueItems:
    that sorts the items and compares neighbours only, so it calls the example unique (items
    0 and 2 are equal; item 1, equal to both under Python's ``False == 0``, sorts between
    them)."""
    ours = _found({"uniqueItems": True}, items) == []
    assert ours is _unique(items)


def test_a_large_array_is_checked_for_unique_items_with_the_right_verdict():
    items = [{"id": i, "tags": [i, str(i)], "ok": i % 2 == 0} for i in range(20_000)]
    schema = JsonSchema({"type": "array", "uniqueItems": True})
    assert schema.check(items).violations == ()
    # The same object as item 3, written with its keys in another order and 3 as 3.0.
    twin = {"ok": False, "tags": [3.0, "3"], "id": 3}
    (found,) = schema.check([*items, twin]).violations
    assert (found.keyword, found.path) == ("uniqueItems", ())
    assert found.message == "items 3 and 20000 are equal"


def test_numbers_that_share_a_hash_stay_distinct():
    # Every one of these ints hashes to 0 in Python; each item is still its own.
    items = [k * (2**61 - 1) for k in range(1, 3_000)]
    assert _found({"uniqueItems": True}, items) == []
    assert _found({"uniqueItems": True}, [*items, items[7]])


# ------------------------------------------------------------------------ regular expressions


def test_a_backtracking_pattern_runs_on_re2_everywhere_a_regex_is_used():
    text = "a" * 64 + "!"
    assert [v.keyword for v in _found({"pattern": BACKTRACKS}, text)] == ["pattern"]
    assert _found({"pattern": BACKTRACKS}, "a" * 64) == []
    keyed = JsonSchema(
        {"patternProperties": {BACKTRACKS: {"type": "integer"}}, "additionalProperties": False}
    )
    (found,) = keyed.check({"a" * 64: 1, text: 2}).violations
    assert (found.keyword, found.names) == ("additionalProperties", (text,))
    (found,) = keyed.check({"a" * 64: "x"}).violations
    assert (found.keyword, found.path) == ("type", ("a" * 64,))
    names = JsonSchema({"propertyNames": {"pattern": BACKTRACKS}})
    assert [v.keyword for v in names.check({text: 1}).violations] == ["pattern"]
    evaluated = JsonSchema(
        {"patternProperties": {BACKTRACKS: True}, "unevaluatedProperties": False}
    )
    assert [v.names for v in evaluated.check({"a": 1, text: 2}).violations] == [(text,)]


def test_a_pattern_re2_cannot_read_checks_nothing():
    assert JsonSchema({"pattern": "(?=a)b"}).check("c").violations == ()
    lookahead = JsonSchema({"patternProperties": {"(?=x)": True}, "additionalProperties": False})
    assert lookahead.check({"anything": 1}).violations == ()


def test_format_is_not_checked_in_the_value_or_the_schema():
    assert _found({"format": "date"}, "not a date") == []
    # `\p{L}` is RE2 (and not Python's `re`): a valid schema, checked by RE2.
    letters = JsonSchema({"pattern": r"^\p{L}+$"})
    assert letters.check("été").violations == () and letters.check("3").violations


# ------------------------------------------------------------------------ numbers


@pytest.mark.parametrize(
    ("value", "step", "whole"),
    [(19.99, 0.01, True), (0.3, 0.1, True), (19.999, 0.01, False), (7, 2, False), (6, 1.5, True)],
)
def test_multiple_of_divides_the_decimals_as_written(value, step, whole):
    assert (_found({"multipleOf": step}, value) == []) is whole


# ------------------------------------------------------------------------ hostile schemas


def _nested_unevaluated(levels: int) -> dict:
    node: dict = {"type": "object", "properties": {"a": True}}
    for _ in range(levels):
        node = {"allOf": [node], "unevaluatedProperties": False}
    return node


def test_unevaluated_properties_are_counted_against_the_budget():
    # jsonschema took time exponential in the nesting (14 levels: 10 s).
    assert "over 10000 references" in _why(_nested_unevaluated(40), {"a": 1})
    shallow = JsonSchema(_nested_unevaluated(4))
    assert shallow.check({"a": 1}).violations == ()
    found = shallow.check({"a": 1, "b": 2}).violations
    assert found and all("b" in v.names for v in found)
    # The verdicts of jsonschema's own implementation.
    reference = jsonschema.Draft202012Validator(_nested_unevaluated(4))
    assert reference.is_valid({"a": 1}) and not reference.is_valid({"a": 1, "b": 2})


def test_unevaluated_items_keep_their_verdict():
    schema = JsonSchema({"prefixItems": [{"type": "integer"}], "unevaluatedItems": False})
    assert schema.check([1]).violations == ()
    (found,) = schema.check([1, "x", "y"]).violations
    assert (found.keyword, found.names) == ("unevaluatedItems", (1, 2))


def test_the_schema_itself_is_checked_in_linear_time():
    # jsonschema's check_schema compared these pairwise: a minute for 64 KiB.
    why = _why({"type": [{"a": i} for i in range(8_000)]})
    assert why.startswith("it is not a valid schema (at $.type")


def test_a_remote_ref_is_never_fetched(monkeypatch):
    fetched: list[object] = []
    monkeypatch.setattr(urllib.request, "urlopen", lambda *a, **k: fetched.append(a))
    why = _why({"$ref": "https://example.com/schema.json"}, 1)
    assert "cannot be evaluated" in why and fetched == []


@pytest.mark.parametrize(
    "schema",
    [
        {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "properties": {"x": {"$ref": "#"}},
            "pattern": BACKTRACKS,
        },
        {
            "properties": {
                "x": {"$schema": "http://json-schema.org/draft-07/schema#", "pattern": BACKTRACKS}
            }
        },
    ],
)
def test_a_schema_naming_another_version_is_read_as_2020_12(schema):
    (found,) = JsonSchema(schema).check({"x": "a" * 64 + "!"}).violations
    assert (found.keyword, found.path) == ("pattern", ("x",))


@pytest.mark.parametrize(
    ("schema", "why"),
    [
        ({"$ref": "#"}, "recurses without end"),
        ({"allOf": [{"$ref": "#"}], "unevaluatedProperties": False}, "recurses without end"),
        (
            {
                "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
                "$ref": "#/$defs/a",
            },
            "recurses without end",
        ),
        (
            {"properties": {"x": {"$ref": "#/properties/y/minimum"}, "y": {"minimum": 3}}},
            "not a schema",
        ),
        (
            {
                "$defs": {
                    "d": {
                        "const": {
                            "$schema": "http://json-schema.org/draft-07/schema#",
                            "pattern": BACKTRACKS,
                        }
                    }
                },
                "properties": {"x": {"$ref": "#/$defs/d/const"}},
            },
            "another JSON Schema version",
        ),
    ],
)
def test_a_schema_that_cannot_check_says_why(schema, why):
    assert why in _why(schema, {"x": "a" * 64 + "!"})


def test_a_recursive_schema_checks_a_deep_value():
    tree = {
        "$defs": {"n": {"anyOf": [{"type": "integer"}, {"items": {"$ref": "#/$defs/n"}}]}},
        "$ref": "#/$defs/n",
    }
    value: Any = 1
    for _ in range(60):
        value = [value, 2]
    assert JsonSchema(tree).check(value).violations == ()


def test_the_most_telling_violation_comes_first():
    schema = {
        "type": "object",
        "properties": {"number": {"type": "string"}, "items": {"type": "array"}},
        "required": ["number", "items"],
    }
    found = JsonSchema(schema).check({"number": 7}).violations
    assert [(v.keyword, v.path) for v in found] == [("required", ()), ("type", ("number",))]
    assert found[0].names == ("items",)


# ------------------------------------------------------------------------ the two callers

OBJECT = {
    "type": "object",
    "properties": {
        "code": {"type": "string", "pattern": BACKTRACKS},
        "ids": {"type": "array", "uniqueItems": True},
        "price": {"type": "number", "multipleOf": 0.01, "minimum": 0},
        "kind": {"enum": ["a", "b"]},
        "node": {"$ref": "#/$defs/node"},
    },
    "patternProperties": {"^x-": {"type": "integer"}},
    "additionalProperties": False,
    "required": ["code"],
    "$defs": {
        "node": {
            "type": "object",
            "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
            "additionalProperties": False,
        }
    },
}
DIFFERENTIAL = [
    (OBJECT, {"code": "aaa"}, True),
    (OBJECT, {"code": "a" * 30 + "!"}, False),
    (OBJECT, {}, False),
    (OBJECT, {"code": "a", "ids": [1, 1.0]}, False),
    (OBJECT, {"code": "a", "ids": [1, True]}, True),
    (OBJECT, {"code": "a", "ids": [{"a": 1, "b": 2}, {"b": 2, "a": 1}]}, False),
    (OBJECT, {"code": "a", "price": 19.99}, True),
    (OBJECT, {"code": "a", "price": 19.999}, False),
    (OBJECT, {"code": "a", "price": -1}, False),
    (OBJECT, {"code": "a", "kind": "c"}, False),
    (OBJECT, {"code": "a", "x-count": 3}, True),
    (OBJECT, {"code": "a", "x-count": "3"}, False),
    (OBJECT, {"code": "a", "other": 1}, False),
    (OBJECT, {"code": "a", "node": {"children": [{"children": []}]}}, True),
    (OBJECT, {"code": "a", "node": {"children": [{"children": [], "z": 1}]}}, False),
    ({"type": "object", "properties": {"n": {"type": "integer"}}}, {"n": 1.0}, True),
    ({"type": "object", "properties": {"n": {"type": "integer"}}}, {"n": True}, False),
    ({"type": "object", "properties": {"n": {"const": 1}}}, {"n": 1.0}, True),
    ({"type": "object", "properties": {"n": {"const": 1}}}, {"n": True}, False),
    (
        {"type": "object", "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
        {"a": 1, "b": 2},
        False,
    ),
    ({"type": "object", "unevaluatedProperties": False, "properties": {"a": True}}, {"a": 1}, True),
    ({"type": "object", "format": "date"}, {}, True),
]


def _tool_accepts(schema: dict, value: Any) -> bool:
    return ArgumentChecker().check("tool", schema, value) is None


def _answer_accepts(schema: dict, value: Any) -> bool:
    output = StructuredOutput(OutputSchema(schema=schema, strict=False))
    try:
        output.parse(json.dumps(value))
    except OutputValidationError:
        return False
    return True


@pytest.mark.parametrize(("schema", "value", "valid"), DIFFERENTIAL)
def test_tool_arguments_and_structured_outputs_give_the_same_verdict(schema, value, valid):
    assert _tool_accepts(schema, value) is valid
    assert _answer_accepts(schema, value) is valid


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from([schema for schema, _, _ in DIFFERENTIAL]),
    st.dictionaries(st.sampled_from(["code", "ids", "price", "kind", "n", "a", "x-1"]), _JSON),
)
def test_the_two_callers_agree_on_random_values(schema, value):
    assert _tool_accepts(schema, value) is _answer_accepts(schema, value)


def _enum_schema(i: int) -> dict[str, Any]:
    """A schema of its own per ``i`` (thread data: a tenant's enum of account ids)."""
    return {"type": "object", "properties": {"account": {"enum": [f"acct-{i}"]}}}


def test_a_long_lived_checker_keeps_only_the_schemas_used_last():
    from turnwire.client import _arguments

    checker = ArgumentChecker()
    kept_first = _enum_schema(0)
    for i in range(3 * _arguments.MAX_KEPT_SCHEMAS):
        assert checker.check("pick", _enum_schema(i), {"account": f"acct-{i}"}) is None
        # the first schema stays in use, so it stays kept: it is recent each time
        assert checker.check("pick", kept_first, {"account": "acct-0"}) is None
    assert len(checker._schemas) == _arguments.MAX_KEPT_SCHEMAS
    assert all(isinstance(key, bytes) and len(key) == 16 for key in checker._schemas)
    first = _arguments._schema_key(json.dumps(kept_first, sort_keys=True, separators=(",", ":")))
    assert first in checker._schemas
    # an evicted schema is compiled again when it comes back, with the same verdict
    error = checker.check("pick", _enum_schema(1), {"account": "acct-2"})
    assert error is not None and "$.account" in error


def test_the_warnings_remembered_are_bounded_and_keep_no_schema_text(caplog):
    from turnwire.client import _arguments

    checker = ArgumentChecker()
    big = "x" * _arguments.MAX_SCHEMA_BYTES
    with caplog.at_level("WARNING", logger="turnwire"):
        for i in range(_arguments.MAX_WARNED + 50):
            schema = {"type": "object", "description": f"{i}{big}"}  # over the limit
            assert checker.check(f"tool{i}", schema, {"a": 1}) is None
        assert checker.check("tool0", {"type": "object", "description": f"0{big}"}, {}) is None
    assert len(checker._warned) == _arguments.MAX_WARNED
    assert all(len(key) == 16 for _, key in checker._warned)
    unchecked = [r for r in caplog.records if getattr(r, "kind", "") == "tool-schema-unchecked"]
    # one warning per tool and schema; tool0's came back after it was forgotten: once more
    assert len(unchecked) == _arguments.MAX_WARNED + 50 + 1
