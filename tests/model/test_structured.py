"""Structured outputs without a server: the strict transformation of a Struct's schema, the
strict check of a schema dict, the answer's check (turnwire.model.json_schema's, read as
`$.path` and a detail), and the thread file and configuration fields."""

from __future__ import annotations

import enum
import json
from pathlib import Path
from typing import Annotated, Literal

import msgspec
import pytest

import turnwire
from turnwire import ConfigError, OutputSchema, ThreadFileError
from turnwire.errors import OutputSchemaError
from turnwire.model.structured import (
    StructuredOutput,
    strict_problems,
    strict_schema,
    structured_output,
    validate_json,
)

from ..conftest import REPO_EXAMPLES, make_container, render_body, thread, user


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Price(msgspec.Struct):
    amount: Annotated[float, msgspec.Meta(ge=0)]
    currency: Literal["EUR", "USD"] = "EUR"


class Line(msgspec.Struct, tag="line"):
    name: Annotated[str, msgspec.Meta(min_length=1, max_length=40)]
    price: Annotated[Price, msgspec.Meta(description="What one costs.")]
    color: Color = Color.RED
    note: str | None = None


class Discount(msgspec.Struct, tag="discount"):
    percent: int


class Node(msgspec.Struct):
    label: str
    children: list[Node] = []


class Order(msgspec.Struct, rename="camel"):
    """An order."""

    order_id: str
    entries: list[Line | Discount]
    tree: Node
    tags: Annotated[list[str], msgspec.Meta(min_length=1)] = []


def _objects(node: object, path: str = "$"):
    if isinstance(node, dict):
        if node.get("type") == "object" or "properties" in node:
            yield path, node
        for key, value in node.items():
            yield from _objects(value, f"{path}.{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _objects(value, f"{path}[{index}]")


def _keys(node: object):
    if isinstance(node, dict):
        for key, value in node.items():
            yield key
            if key not in ("properties", "$defs"):
                yield from _keys(value)
            else:
                for inner in value.values():
                    yield from _keys(inner)
    elif isinstance(node, list):
        for value in node:
            yield from _keys(value)


def test_a_nested_struct_becomes_a_strict_schema():
    schema = strict_schema(Order)
    assert strict_problems(schema) == []
    # The root is the Struct itself, not a $ref.
    assert schema["type"] == "object" and "$ref" not in schema
    assert schema["description"] == "An order."
    assert schema["required"] == ["orderId", "entries", "tree", "tags"]
    for path, node in _objects(schema):
        assert node["additionalProperties"] is False, path
        assert node["required"] == list(node["properties"]), path
    keys = set(_keys(schema))
    assert not keys & {"default", "discriminator", "minLength", "maxLength"}
    # Kept: the validation keywords strict mode takes.
    assert schema["properties"]["tags"]["minItems"] == 1
    # A recursive Struct stays a $ref into $defs; the root's own definition is gone.
    assert schema["$defs"]["Node"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert "Order" not in schema["$defs"]
    # A $ref with a description is inlined (a $ref takes no sibling under strict).
    price = schema["$defs"]["Line"]["properties"]["price"]
    assert price["description"] == "What one costs." and price["type"] == "object"
    # An optional field is required and nullable.
    note = schema["$defs"]["Line"]["properties"]["note"]
    assert note == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    # A tagged union keeps its tags as enums; an enum says its type.
    entries = schema["properties"]["entries"]["items"]["anyOf"]
    assert {"$ref": "#/$defs/Discount"} in entries
    assert schema["$defs"]["Discount"]["properties"]["type"] == {
        "enum": ["discount"],
        "type": "string",
    }
    assert schema["$defs"]["Color"] == {"title": "Color", "enum": ["blue", "red"], "type": "string"}


def test_the_strict_schema_decodes_what_it_describes():
    order = Order(
        order_id="o1",
        entries=[Line(name="tea", price=Price(amount=2), note=None), Discount(percent=5)],
        tree=Node(label="a", children=[Node(label="b")]),
        tags=["x"],
    )
    text = msgspec.json.encode(order).decode()
    value = json.loads(text)
    # Everything required: the encoder writes defaults too.
    assert validate_json(value, strict_schema(Order)) is None
    assert structured_output(Order).parse(text) == order


class WithMapping(msgspec.Struct):
    counts: dict[str, int]


class WithTuple(msgspec.Struct):
    pair: tuple[int, str]


class WithAnyMapping(msgspec.Struct):
    extra: dict


class Empty(msgspec.Struct):
    pass


@pytest.mark.parametrize(
    ("struct", "where", "words"),
    [
        (WithMapping, "$.properties.counts", "dict[str, ...]"),
        (WithTuple, "$.properties.pair", "tuple"),
        (WithAnyMapping, "$.properties.extra", "dict[str, ...]"),
    ],
)
def test_what_strict_mode_cannot_say_is_refused_clearly(struct, where, words):
    with pytest.raises(OutputSchemaError) as caught:
        strict_schema(struct)
    assert caught.value.path == where
    assert words in str(caught.value) and struct.__name__ in str(caught.value)


def test_an_empty_struct_is_an_empty_closed_object():
    assert strict_schema(Empty) == {
        "title": "Empty",
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    }


def test_a_non_struct_type_is_refused():
    with pytest.raises(OutputSchemaError, match=r"msgspec\.Struct class"):
        structured_output(list)


@pytest.mark.parametrize(
    ("schema", "where", "words"),
    [
        ({"type": "array", "items": {"type": "string"}}, "$", "root must be `type: object`"),
        ({"type": "object", "properties": {}}, "$", "additionalProperties: false"),
        (
            {
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "additionalProperties": False,
            },
            "$",
            "missing: a",
        ),
        (
            {
                "type": "object",
                "properties": {"a": {"type": "string", "minLength": 2}},
                "required": ["a"],
                "additionalProperties": False,
            },
            "$.properties.a",
            "`minLength` is not supported",
        ),
        (
            {
                "type": "object",
                "properties": {"a": {"$ref": "#/$defs/missing"}},
                "required": ["a"],
                "additionalProperties": False,
            },
            "$.properties.a",
            "does not name a schema",
        ),
        (
            {
                "type": "object",
                "properties": {"a": {"type": "string", "format": "decimal"}},
                "required": ["a"],
                "additionalProperties": False,
            },
            "$.properties.a.format",
            "format 'decimal'",
        ),
        (
            # `{}` (any value) and `{"description": ...}` alone: the API asks for a type
            {
                "type": "object",
                "properties": {"a": {"description": "anything"}},
                "required": ["a"],
                "additionalProperties": False,
            },
            "$.properties.a",
            "a schema needs a `type` under strict",
        ),
        (
            {
                "type": "object",
                "properties": {"a": {"type": "array"}},
                "required": ["a"],
                "additionalProperties": False,
            },
            "$.properties.a",
            "an array needs `items` under strict",
        ),
    ],
)
def test_a_schema_dict_is_checked_not_rewritten(schema, where, words):
    problems = strict_problems(schema)
    assert problems and problems[0][0] == where and words in problems[0][1]
    with pytest.raises(OutputSchemaError, match="strict: false"):
        structured_output(schema)
    # Not strict: sent as it is.
    loose = OutputSchema(schema=schema, strict=False)
    assert loose.text_format()["schema"] == schema


def test_a_recursive_schema_dict_with_defs_is_strict():
    schema = {
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/node"}},
        "required": ["root"],
        "additionalProperties": False,
        "$defs": {
            "node": {
                "type": "object",
                "properties": {
                    "label": {"type": ["string", "null"]},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
                },
                "required": ["label", "children"],
                "additionalProperties": False,
            }
        },
    }
    assert strict_problems(schema) == []
    good = {"root": {"label": None, "children": [{"label": "b", "children": []}]}}
    assert validate_json(good, schema) is None
    bad = {"root": {"label": "a", "children": [{"label": 3, "children": []}]}}
    assert validate_json(bad, schema) == (
        "$.root.children[0].label",
        "expected string or null, got integer",
    )


@pytest.mark.parametrize(
    ("value", "schema", "found"),
    [
        (1, {"type": "integer"}, None),
        (1.0, {"type": "integer"}, None),
        (1.5, {"type": "integer"}, ("$", "expected integer, got number")),
        (True, {"type": "integer"}, ("$", "expected integer, got boolean")),
        (True, {"enum": [1]}, ("$", "expected one of 1, got True")),
        ("b", {"const": "a"}, ("$", "expected 'a', got 'b'")),
        (
            {"a": 1, "b": 2},
            {"additionalProperties": False, "properties": {"a": {}}},
            ("$", "unexpected property `b`"),
        ),
        ([1, 2, 3], {"maxItems": 2}, ("$", "expected at most 2 items, got 3")),
        (-1, {"minimum": 0}, ("$", "expected at least 0, got -1")),
        ("ab", {"pattern": "^a$"}, ("$", "does not match the pattern '^a$'")),
        (
            {"x": {"y": "no"}},
            {
                "properties": {
                    "x": {"anyOf": [{"type": "null"}, {"properties": {"y": {"type": "integer"}}}]}
                }
            },
            ("$.x.y", "expected integer, got string"),
        ),
        (
            {"odd key": 1},
            {"properties": {"odd key": {"type": "string"}}},
            ("$['odd key']", "expected string, got integer"),
        ),
    ],
)
def test_the_validator(value, schema, found):
    assert validate_json(value, schema) == found


# ------------------------------------------------------------------------ the thread file

STRICT = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}


def test_a_thread_file_holds_an_output_schema_and_renders_it():
    loaded = thread(model="gpt-5", output_schema={"name": "a", "schema": STRICT}, messages=[user()])
    assert loaded.output_schema == OutputSchema(name="a", schema=STRICT)
    body = render_body(loaded)
    assert body["text"] == {
        "format": {"type": "json_schema", "name": "a", "schema": STRICT, "strict": True}
    }
    dumped = json.loads(turnwire.dump_thread(loaded))
    assert dumped["output_schema"] == {"name": "a", "schema": STRICT}  # strict: the default


def test_a_bad_output_schema_in_a_thread_file_names_its_place():
    with pytest.raises(ThreadFileError) as caught:
        thread(output_schema={"schema": {"type": "object", "properties": {}}})
    assert caught.value.path == "$.output_schema.schema"
    assert "additionalProperties: false" in str(caught.value)
    with pytest.raises(ThreadFileError) as caught:
        thread(output_schema={"name": "has space", "schema": STRICT})
    assert caught.value.path.startswith("$.output_schema.name")


def test_old_thread_files_load_and_dump_unchanged(tmp_path: Path):
    examples = sorted(REPO_EXAMPLES.rglob("*.yaml"))
    threads = [p for p in examples if p.read_text().lstrip().startswith(("version:", "#"))]
    checked = 0
    for path in threads:
        try:
            loaded = turnwire.load_thread(path)
        except turnwire.ThreadFileError:
            continue  # not a thread file
        assert loaded.output_schema is None
        assert "output_schema" not in json.loads(turnwire.dump_thread(loaded))
        checked += 1
    assert checked
    plain = thread(model="gpt-5", messages=[user()])
    assert "text" not in render_body(plain)


# ------------------------------------------------------------------------ configuration


def test_the_configuration_holds_an_output_schema_checked_when_loaded():
    settings = turnwire.load_settings(overrides={"request": {"output_schema": {"schema": STRICT}}})
    assert settings.request.output_schema == OutputSchema(schema=STRICT)
    with pytest.raises(ConfigError) as caught:
        turnwire.load_settings(
            overrides={"request": {"output_schema": {"schema": {"type": "string"}}}}
        )
    assert caught.value.path == "$.request.output_schema.schema"
    assert "root must be `type: object`" in str(caught.value)


def test_render_takes_output_schema_too():
    loaded = thread(model="gpt-5", messages=[user()])
    rendered = turnwire.render(loaded, container=make_container(), output_schema=Price)
    fmt = rendered.json["text"]["format"]
    assert fmt["name"] == "Price" and fmt["schema"] == strict_schema(Price)


# ------------------------------------------------------------------------ the check's limits

CODE = {
    "type": "object",
    "properties": {
        "code": {"type": "string", "pattern": "^(a+)+$"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["code", "tags"],
    "additionalProperties": False,
}


def test_a_backtracking_pattern_in_the_schema_checks_an_answer_at_once():
    # A 24-character answer took 3.6 s under Python's `re`; RE2's time is linear in the text.
    output = structured_output(CODE)
    bad = json.dumps({"code": "a" * 64 + "!", "tags": []})
    with pytest.raises(turnwire.OutputValidationError) as caught:
        output.parse(bad)
    assert caught.value.path == "$.code"
    assert "does not match the pattern '^(a+)+$'" in str(caught.value)
    assert output.parse(json.dumps({"code": "a" * 64, "tags": []})) == {
        "code": "a" * 64,
        "tags": [],
    }


def test_unique_items_in_an_answer_follow_json_equality():
    schema = {"type": "object", "properties": {"tags": {"uniqueItems": True}}}
    assert validate_json({"tags": [1, True, {"a": 1, "b": 2}]}, schema) is None
    assert validate_json({"tags": [{"a": 1, "b": 2}, 1, {"b": 2, "a": 1.0}]}, schema) == (
        "$.tags",
        "expected unique items: items 0 and 2 are equal",
    )


def test_a_long_answer_to_a_recursive_schema_gets_a_reference_budget_to_match():
    schema = {
        "type": "object",
        "properties": {"all": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
        "$defs": {
            "node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}},
        },
    }
    chain: dict = {}
    for _ in range(40):
        chain = {"next": chain}
    answer = {"all": [chain] * 300}  # 12,300 references followed: more than MAX_REFS alone
    output = StructuredOutput(OutputSchema(schema=schema, strict=False))
    assert output.parse(json.dumps(answer)) == answer
    # validate_json keeps MAX_REFS unless told otherwise.
    assert "over 10000 references" in validate_json(answer, schema)[1]
    assert validate_json(answer, schema, max_refs=20_000) is None


def test_a_schema_that_cannot_check_an_answer_fails_it_saying_why():
    output = StructuredOutput(OutputSchema(schema={"$ref": "#"}, strict=False))
    with pytest.raises(turnwire.OutputValidationError) as caught:
        output.parse("{}")
    assert caught.value.path == "$"
    assert "the schema cannot check it: its $ref chain recurses without end" in str(caught.value)
    assert validate_json({}, {"type": "objekt"}) == (
        "$",
        "the schema cannot check it: it is not a valid schema (at $.type: 'objekt' is not "
        "valid under any of the given schemas)",
    )


@pytest.mark.parametrize(
    ("schema", "where"),
    [
        ({"type": {}, "properties": {}}, "$.type"),
        ({"type": [[]]}, "$.type"),
        ({"type": ["object", {}]}, "$.type"),
        (
            {"type": "object", "properties": {"a": {"type": "string", "format": {}}}},
            "$.properties.a.format",
        ),
    ],
    ids=["object", "list", "union", "format"],
)
def test_a_type_or_format_that_is_not_a_name_is_a_problem_not_a_type_error(schema, where):
    problems = strict_problems(schema)
    assert where in [path for path, _ in problems]
    with pytest.raises(ValueError, match="strict: false"):
        OutputSchema(schema=schema, strict=True)
