"""Tool arguments checked against the declared JSON Schema (Draft 2020-12) before a handler runs."""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import UTC, datetime

import pytest

from turnwire.client._arguments import MAX_SCHEMA_BYTES, ArgumentChecker
from turnwire.client.tools import ToolExecutor
from turnwire.model.records import Thread, Tool, ToolCall

WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "days": {"type": "integer", "minimum": 1},
        "unit": {"enum": ["C", "F"]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "code": {"type": "string", "pattern": "^(a+)+$"},
        "when": {"type": "string", "format": "date"},
    },
    "required": ["city"],
    "additionalProperties": False,
}
PREFIX = "Tool arguments do not match the parameters of weather: "


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"city": 1}, "$.city: expected string"),
        ({}, "$.city: required, but missing"),
        ({"city": "Paris", "days": 0}, "$.days: expected a number at least 1"),
        ({"city": "Paris", "unit": "K"}, '$.unit: expected one of ["C", "F"]'),
        ({"city": "Paris", "tags": ["a", 2]}, "$.tags[1]: expected string"),
        ({"city": "Paris", "country": "FR"}, "$: unexpected field country"),
    ],
)
def test_a_mismatch_names_the_field(args, expected):
    text = ArgumentChecker().check("weather", WEATHER, args)
    assert text is not None and text.startswith(PREFIX + expected)


def test_matching_arguments_pass_and_formats_are_not_checked():
    args = {"city": "Paris", "days": 2, "unit": "C", "when": "not a date"}
    assert ArgumentChecker().check("weather", WEATHER, args) is None


def test_no_schema_checks_nothing():
    assert ArgumentChecker().check("weather", None, {"anything": 1}) is None


def test_a_catastrophic_pattern_is_matched_in_linear_time_by_re2():
    # Python's `re` takes exponential time on this input; RE2 answers at once.
    text = ArgumentChecker().check("weather", WEATHER, {"city": "x", "code": "a" * 5000 + "!"})
    assert text is not None and "$.code: does not match the pattern" in text


def _fanning_out(levels: int) -> dict:
    """Each definition refers twice to the next: 2**levels checks for one small schema."""
    defs = {f"d{i}": {"anyOf": [{"$ref": f"#/$defs/d{i + 1}"}] * 2} for i in range(levels)}
    defs[f"d{levels}"] = {"type": "string"}
    return {"$defs": defs, "$ref": "#/$defs/d0"}


@pytest.mark.parametrize(
    ("schema", "why"),
    [
        ({"type": "objekt"}, "not a valid schema"),
        ({"$ref": "#"}, "recurses without end"),
        ({"$ref": "https://example.invalid/schema.json"}, "cannot be evaluated"),
        (_fanning_out(40), "over 10000 references"),
        (
            {"type": "object", "description": "x" * MAX_SCHEMA_BYTES},
            f"over {MAX_SCHEMA_BYTES} bytes",
        ),
    ],
)
def test_a_schema_that_cannot_check_runs_the_call_unchecked_with_one_warning(schema, why, caplog):
    checker = ArgumentChecker()
    with caplog.at_level(logging.WARNING, logger="turnwire"):
        assert checker.check("weather", schema, {"city": 1}) is None
        assert checker.check("weather", schema, {"city": 2}) is None
    warnings = [r for r in caplog.records if getattr(r, "kind", None) == "tool-schema-unchecked"]
    assert len(warnings) == 1 and why in warnings[0].getMessage()


def test_the_executor_answers_a_mismatch_without_running_the_handler():
    ran: list[object] = []
    tool = Tool(name="weather", parameters=WEATHER)
    thread = Thread(tools=(tool,))
    executor = ToolExecutor(
        inline_max_bytes=1000, handlers={"weather": lambda **kw: ran.append(kw)}
    )
    call = ToolCall(
        id="call_1", tool="weather", args={"city": 7}, created_at=datetime(2026, 1, 1, tzinfo=UTC)
    )
    done = asyncio.run(executor.execute(call, thread))
    assert ran == []
    assert done.is_error and done.result is not None
    assert done.result.text is not None and done.result.text.startswith(
        PREFIX + "$.city: expected string"
    )


IDS = {
    "type": "object",
    "properties": {"ids": {"type": "array", "items": {"type": "object"}, "uniqueItems": True}},
}


def test_unique_items_over_large_arguments_give_the_right_verdict():
    # 77 KB of distinct objects held the loop 46.7 s when uniqueItems compared them pairwise.
    ids = [{"id": i, "n": [i]} for i in range(7_000)]
    assert len(json.dumps(ids)) > 77_000
    checker = ArgumentChecker()
    assert checker.check("weather", IDS, {"ids": ids}) is None
    twin = {"n": [4.0], "id": 4}  # item 4, its keys in another order, 4 written as 4.0
    text = checker.check("weather", IDS, {"ids": [*ids, twin]})
    assert text is not None
    assert "$.ids: uniqueItems: items 4 and 7000 are equal" in text


def _nested_unevaluated(levels: int) -> dict:
    node: dict = {"type": "object", "properties": {"city": {"type": "string"}}}
    for _ in range(levels):
        node = {"allOf": [node], "unevaluatedProperties": False}
    return node


@pytest.mark.parametrize(
    ("schema", "why"),
    [
        # jsonschema's own check_schema compared these pairwise.
        ({"type": [{"a": i} for i in range(5_000)]}, "not a valid schema"),
        # jsonschema's unevaluatedProperties took time exponential in the nesting.
        (_nested_unevaluated(40), "over 10000 references"),
    ],
)
def test_a_schema_that_would_take_long_to_check_runs_the_call_unchecked(schema, why, caplog):
    assert len(json.dumps(schema, separators=(",", ":"))) < MAX_SCHEMA_BYTES
    with caplog.at_level(logging.WARNING, logger="turnwire"):
        assert ArgumentChecker().check("weather", schema, {"city": "Paris"}) is None
    warnings = [r for r in caplog.records if getattr(r, "kind", None) == "tool-schema-unchecked"]
    assert len(warnings) == 1 and why in warnings[0].getMessage()
