"""Structured outputs: ``text.format`` with a JSON Schema, and the answer parsed against it.

A schema comes from one of three places, the first that is set winning:

1. the Python argument ``output_type=`` of :func:`turnwire.run`, :func:`turnwire.run_thread`,
   :meth:`turnwire.Client.run` and :func:`turnwire.render` (``--output-schema FILE`` on the
   command line): a :class:`msgspec.Struct` class, a JSON Schema ``dict``, or an
   :class:`OutputSchema`;
2. the thread file's ``output_schema``;
3. the configuration's ``request.output_schema``.

The chosen schema replaces ``request.text.format`` in the body (``request.text.verbosity`` is
kept): ``"text": {"format": {"type": "json_schema", "name": ..., "schema": ..., "strict":
true}}``. With none of them set the body is what it always was, and a ``request.text.format``
of type ``json_schema`` written by hand is still parsed (plain JSON, checked against its
schema).

Strict mode (``strict: true``, the default) takes a subset of JSON Schema: every object says
``additionalProperties: false`` and lists every property in ``required``; the root is an
object; only the keywords of :data:`STRICT_KEYWORDS` appear. A Struct's schema
(:func:`msgspec.json.schema`) is made strict here: the root ``$ref`` is inlined, objects are
closed, every field is required (an optional field stays nullable when its type allows
``None``), ``default`` and ``discriminator`` are dropped, and the validation keywords strict
mode lacks (``minLength``, ``maxLength``, ``uniqueItems``...) are left out of what is sent
(the Struct still checks them when the answer is decoded). What cannot be said in strict mode
(a ``dict[str, X]`` field, a tuple) fails with :class:`~turnwire.errors.OutputSchemaError`.
A JSON Schema given as a ``dict`` (or in a thread file or configuration) is checked, never
rewritten: a violation names its place (``$.properties.items: ...``).

The final assistant message of the run is parsed into ``RunResult.parsed``: a Struct
instance for a Struct, plain JSON otherwise. A refusal is not an error: ``parsed`` stays
``None`` and ``RunResult.refusal`` holds its text. A mismatch raises
:class:`~turnwire.errors.OutputValidationError` after the turn is recorded (see there).
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Annotated, Any

import msgspec

from turnwire.errors import OutputSchemaError, OutputValidationError, validation_location

if TYPE_CHECKING:
    from turnwire.config.settings import RequestSettings

__all__ = [
    "STRICT_KEYWORDS",
    "OutputSchema",
    "StructuredOutput",
    "requested_output",
    "schema_name",
    "strict_problems",
    "strict_schema",
    "structured_output",
    "validate_json",
]

SchemaName = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9_-]{1,64}(?!\n)$")]
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}(?!\n)$")

STRICT_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "anyOf",
        "$ref",
        "$defs",
        "definitions",
        "title",
        "description",
        "pattern",
        "format",
        "multipleOf",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minItems",
        "maxItems",
    }
)
"""The JSON Schema keywords strict mode accepts."""

STRICT_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
"""The string ``format`` values strict mode accepts."""

_TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})

# Dropped from a Struct's schema: annotations the API refuses, and validation keywords strict
# mode lacks, which the Struct checks again when the answer is decoded.
_STRUCT_DROPPED = frozenset(
    {
        "default",
        "discriminator",
        "examples",
        "minLength",
        "maxLength",
        "uniqueItems",
        "minProperties",
        "maxProperties",
        "contentEncoding",
    }
)


class OutputSchema(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True
):
    """A JSON Schema the answer must follow (``text.format`` of type ``json_schema``).

    Under ``strict`` the schema is checked against the strict subset when the value is built
    (a thread file or configuration naming its ``$.path``).

    :ivar name: the format's name (1 to 64 letters, digits, ``_`` or ``-``).
    :ivar schema: the JSON Schema; its root is an object.
    :ivar strict: strict schema adherence (the API then takes only a subset of JSON Schema).
    :ivar description: what the format is for, as the model reads it.
    """

    name: SchemaName = "output"
    schema: dict[str, Any]
    strict: bool = True
    description: str | None = None

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(f"name: {self.name!r} must be 1 to 64 letters, digits, `_` or `-`")
        if self.strict:
            problems = strict_problems(self.schema)
            if problems:
                raise ValueError(f"schema: {_first(problems)}")

    def text_format(self) -> dict[str, Any]:
        """The ``text.format`` value of the request body."""
        value: dict[str, Any] = {"type": "json_schema", "name": self.name}
        if self.description is not None:
            value["description"] = self.description
        value["schema"] = self.schema
        value["strict"] = self.strict
        return value


# ------------------------------------------------------------------------------ the checks


def _first(problems: list[tuple[str, str]]) -> str:
    where, problem = problems[0]
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"{where}: {problem}{more}; fix the schema or set strict: false"


def _at(path: str, key: str) -> str:
    return f"{path}.{key}" if re.fullmatch(r"[A-Za-z_$][A-Za-z0-9_$]*", key) else f"{path}[{key!r}]"


def _resolve(root: Mapping[str, Any], ref: str) -> Any:
    """The schema ``ref`` names (``#``, ``#/$defs/Name``...), or ``None``."""
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        return None
    node: Any = root
    for raw in ref[2:].split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def strict_problems(schema: Any) -> list[tuple[str, str]]:
    """Where ``schema`` leaves the strict subset: ``(path, problem)`` pairs, in schema order.

    The path is a JSON path into the schema itself (``$.properties.items.items``).
    """
    problems: list[tuple[str, str]] = []
    if not isinstance(schema, Mapping):
        return [("$", "the schema must be a JSON object")]
    if schema.get("type") != "object" or "anyOf" in schema:
        problems.append(("$", "the root must be `type: object` (not a union, not another type)"))
    _walk(schema, "$", schema, problems)
    return problems


def _walk(node: Any, path: str, root: Mapping[str, Any], problems: list[tuple[str, str]]) -> None:
    if not isinstance(node, Mapping):
        problems.append((path, "a schema here must be a JSON object"))
        return
    for key in node:
        if key not in STRICT_KEYWORDS:
            problems.append((path, f"`{key}` is not supported under strict"))
    ref = node.get("$ref")
    if ref is not None:
        if not isinstance(ref, str) or not isinstance(_resolve(root, ref), Mapping):
            problems.append((path, f"$ref {ref!r} does not name a schema of this document"))
        extra = sorted(set(node) - {"$ref"})
        if extra:
            problems.append((path, f"a $ref takes no other keyword under strict ({extra[0]})"))
    types = node.get("type")
    listed = types if isinstance(types, list) else [types] if types is not None else []
    for name in listed:
        if name not in _TYPES:
            problems.append((_at(path, "type"), f"unknown type {name!r}"))
    fmt = node.get("format")
    if fmt is not None and fmt not in STRICT_FORMATS:
        problems.append((_at(path, "format"), f"format {fmt!r} is not supported under strict"))
    properties = node.get("properties")
    if "object" in listed or properties is not None:
        if node.get("additionalProperties") is not False:
            problems.append((path, "an object needs `additionalProperties: false` under strict"))
        if properties is None:
            properties = {}
        if not isinstance(properties, Mapping):
            problems.append((_at(path, "properties"), "must be a JSON object"))
            properties = {}
        required = node.get("required", [])
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            problems.append((_at(path, "required"), "must be a list of property names"))
            required = []
        missing = [name for name in properties if name not in required]
        if missing:
            problems.append(
                (
                    path,
                    "every property must be listed in `required` under strict (missing: "
                    f"{', '.join(missing)}); make an optional one nullable instead",
                )
            )
        unknown = [name for name in required if name not in properties]
        if unknown:
            problems.append((_at(path, "required"), f"names no property: {', '.join(unknown)}"))
        for name, value in properties.items():
            _walk(value, _at(_at(path, "properties"), str(name)), root, problems)
    items = node.get("items")
    if items is not None:
        _walk(items, _at(path, "items"), root, problems)
    any_of = node.get("anyOf")
    if any_of is not None:
        if not isinstance(any_of, list) or not any_of:
            problems.append((_at(path, "anyOf"), "must be a non-empty list of schemas"))
        else:
            for index, option in enumerate(any_of):
                _walk(option, f"{_at(path, 'anyOf')}[{index}]", root, problems)
    if "enum" in node and not isinstance(node["enum"], list):
        problems.append((_at(path, "enum"), "must be a list"))
    for defs_key in ("$defs", "definitions"):
        defs = node.get(defs_key)
        if defs is None:
            continue
        if not isinstance(defs, Mapping):
            problems.append((_at(path, defs_key), "must be a JSON object"))
            continue
        for name, value in defs.items():
            _walk(value, _at(_at(path, defs_key), str(name)), root, problems)


# ------------------------------------------------------------------------------ Structs


def strict_schema(struct: type) -> dict[str, Any]:
    """The strict JSON Schema of a :class:`msgspec.Struct` class (see the module docstring).

    :raises OutputSchemaError: the Struct holds a type strict mode cannot express.
    """
    try:
        raw = msgspec.json.schema(struct)
    except (TypeError, ValueError) as err:
        raise OutputSchemaError(f"{struct.__name__}: no JSON Schema: {err}", path="$") from err
    defs: dict[str, Any] = raw.get("$defs", {})
    root: dict[str, Any] = dict(raw)
    root.pop("$defs", None)
    ref = root.pop("$ref", None)
    if isinstance(ref, str):
        root = {**copy.deepcopy(_resolve({"$defs": defs}, ref) or {}), **root}
    problems: list[tuple[str, str]] = []
    made = _strict(root, "$", defs, problems)
    if defs:
        made["$defs"] = {
            name: _strict(value, f"$.$defs.{name}", defs, problems) for name, value in defs.items()
        }
        referenced = set(_refs(made))
        made["$defs"] = {n: v for n, v in made["$defs"].items() if f"#/$defs/{n}" in referenced}
        if not made["$defs"]:
            del made["$defs"]
    problems += strict_problems(made)
    if problems:
        where, problem = problems[0]
        raise OutputSchemaError(
            f"{struct.__name__}: its schema cannot be strict at {where}: {problem}", path=where
        )
    return made


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, Mapping):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def _strict(
    node: Any, path: str, defs: Mapping[str, Any], problems: list[tuple[str, str]]
) -> dict[str, Any]:
    """A copy of one node of a Struct's schema, made strict."""
    if not isinstance(node, Mapping):
        problems.append((path, "a schema here must be a JSON object"))
        return {}
    made = {key: value for key, value in node.items() if key not in _STRUCT_DROPPED}
    fmt = made.get("format")
    if fmt is not None and fmt not in STRICT_FORMATS:
        del made["format"]  # decimal and the like: the Struct checks the string itself
    ref = made.get("$ref")
    if ref is not None and len(made) > 1:
        # A $ref takes no other keyword under strict: the target is inlined, the node's own
        # keywords (a description) kept over it.
        target = _resolve({"$defs": defs}, ref)
        if isinstance(target, Mapping):
            rest = {key: value for key, value in made.items() if key != "$ref"}
            return _strict({**copy.deepcopy(dict(target)), **rest}, path, defs, problems)
    if "prefixItems" in made:
        problems.append((path, "a tuple (prefixItems) has no strict form; use a list or a Struct"))
        made.pop("prefixItems")
        made.pop("items", None)
    additional = made.get("additionalProperties")
    free = made.get("type") == "object" and "properties" not in made
    if free or (additional is not None and additional is not False):
        problems.append(
            (path, "a mapping with free keys (dict[str, ...]) has no strict form; use a Struct")
        )
    enum = made.get("enum")
    if isinstance(enum, list) and enum and "type" not in made:
        # A Literal, an Enum or a tag: said with its type too, as strict schemas usually are.
        kinds = sorted({_type_of(option) for option in enum})
        if all(kind in _TYPES for kind in kinds):
            made["type"] = kinds[0] if len(kinds) == 1 else kinds
    if made.get("type") == "object" or "properties" in made:
        made["additionalProperties"] = False
        properties = made.get("properties", {})
        made["properties"] = {
            name: _strict(value, _at(_at(path, "properties"), name), defs, problems)
            for name, value in properties.items()
        }
        made["required"] = list(properties)
    items = made.get("items")
    if isinstance(items, Mapping):
        made["items"] = _strict(items, _at(path, "items"), defs, problems)
    any_of = made.get("anyOf")
    if isinstance(any_of, list):
        made["anyOf"] = [
            _strict(option, f"{_at(path, 'anyOf')}[{i}]", defs, problems)
            for i, option in enumerate(any_of)
        ]
    return made


# ------------------------------------------------------------------------------ validation


class _Mismatch(Exception):
    def __init__(self, path: str, detail: str) -> None:
        super().__init__(f"{path}: {detail}")
        self.path = path
        self.detail = detail


def _type_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _is(value: Any, name: str) -> bool:
    kind = _type_of(value)
    if name == "number":
        return kind in ("integer", "number")
    if name == "integer":
        return kind == "integer" or (kind == "number" and float(value).is_integer())
    return kind == name


def _same(a: Any, b: Any) -> bool:
    """JSON equality (``true`` is not ``1``)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def _key(path: str, key: str) -> str:
    return f"{path}.{key}" if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key) else f"{path}[{key!r}]"


def validate_json(value: Any, schema: Mapping[str, Any]) -> tuple[str, str] | None:
    """The first place where the JSON ``value`` breaks ``schema``, as ``(path, detail)``
    (``("$.items[2].price", "expected number, got string")``), or ``None`` when it matches.

    The keywords checked: ``type`` (a name or a list), ``properties``, ``required``,
    ``additionalProperties``, ``items``, ``enum``, ``const``, ``anyOf``, ``oneOf``, ``allOf``,
    ``$ref`` (into the same document), ``minimum``, ``maximum``, ``exclusiveMinimum``,
    ``exclusiveMaximum``, ``multipleOf``, ``minItems``, ``maxItems``, ``minLength``,
    ``maxLength`` and ``pattern``; any other keyword is not checked.
    """
    try:
        _check(value, schema, "$", schema, 0)
    except _Mismatch as err:
        return err.path, err.detail
    return None


def _check(value: Any, node: Any, path: str, root: Mapping[str, Any], hops: int) -> None:
    if node is True or node is None:
        return
    if node is False:
        raise _Mismatch(path, "no value is allowed here")
    if not isinstance(node, Mapping):
        return
    ref = node.get("$ref")
    if isinstance(ref, str):
        if hops > 64:
            raise _Mismatch(path, "the schema's $ref chain does not end")
        target = _resolve(root, ref)
        if target is not None:
            _check(value, target, path, root, hops + 1)
    types = node.get("type")
    if types is not None:
        listed = types if isinstance(types, list) else [types]
        if not any(_is(value, str(name)) for name in listed):
            wanted = " or ".join(str(name) for name in listed)
            raise _Mismatch(path, f"expected {wanted}, got {_type_of(value)}")
    if "const" in node and not _same(value, node["const"]):
        raise _Mismatch(path, f"expected {node['const']!r}, got {value!r}")
    enum = node.get("enum")
    if isinstance(enum, list) and not any(_same(value, option) for option in enum):
        shown = ", ".join(repr(option) for option in enum[:8])
        raise _Mismatch(path, f"expected one of {shown}, got {value!r}")
    for option in node.get("allOf") or ():
        _check(value, option, path, root, hops)
    any_of = node.get("anyOf")
    if isinstance(any_of, list) and any_of:
        _check_alternatives(value, any_of, path, root, hops, exactly_one=False)
    one_of = node.get("oneOf")
    if isinstance(one_of, list) and one_of:
        _check_alternatives(value, one_of, path, root, hops, exactly_one=True)
    if isinstance(value, dict):
        _check_object(value, node, path, root)
    elif isinstance(value, list):
        _check_array(value, node, path, root)
    elif isinstance(value, str):
        _check_string(value, node, path)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        _check_number(value, node, path)


def _check_alternatives(
    value: Any,
    options: list[Any],
    path: str,
    root: Mapping[str, Any],
    hops: int,
    *,
    exactly_one: bool,
) -> None:
    failures: list[_Mismatch] = []
    for option in options:
        try:
            _check(value, option, path, root, hops)
        except _Mismatch as err:
            failures.append(err)
    passed = len(options) - len(failures)
    if exactly_one and passed > 1:
        raise _Mismatch(path, f"matches {passed} of the oneOf alternatives, not exactly one")
    if passed:
        return
    # The alternative that got furthest into the value says most (a nullable field's object).
    deeper = [err for err in failures if err.path != path]
    if deeper:
        raise max(deeper, key=lambda err: len(err.path))
    raise _Mismatch(path, f"matches none of the {len(options)} alternatives ({failures[0].detail})")


def _check_object(value: dict[str, Any], node: Mapping[str, Any], path: str, root: Any) -> None:
    properties = node.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    for name in node.get("required") or ():
        if name not in value:
            raise _Mismatch(path, f"missing required property `{name}`")
    additional = node.get("additionalProperties", True)
    for name, item in value.items():
        where = _key(path, name)
        if name in properties:
            _check(item, properties[name], where, root, 0)
        elif additional is False:
            raise _Mismatch(path, f"unexpected property `{name}`")
        elif isinstance(additional, Mapping):
            _check(item, additional, where, root, 0)


def _check_array(value: list[Any], node: Mapping[str, Any], path: str, root: Any) -> None:
    low, high = node.get("minItems"), node.get("maxItems")
    if isinstance(low, int) and len(value) < low:
        raise _Mismatch(path, f"expected at least {low} items, got {len(value)}")
    if isinstance(high, int) and len(value) > high:
        raise _Mismatch(path, f"expected at most {high} items, got {len(value)}")
    items = node.get("items")
    if items is not None:
        for index, item in enumerate(value):
            _check(item, items, f"{path}[{index}]", root, 0)


def _check_string(value: str, node: Mapping[str, Any], path: str) -> None:
    low, high = node.get("minLength"), node.get("maxLength")
    if isinstance(low, int) and len(value) < low:
        raise _Mismatch(path, f"expected at least {low} characters, got {len(value)}")
    if isinstance(high, int) and len(value) > high:
        raise _Mismatch(path, f"expected at most {high} characters, got {len(value)}")
    pattern = node.get("pattern")
    if isinstance(pattern, str):
        try:
            found = re.search(pattern, value)
        except re.error:
            return  # a pattern Python cannot read is not checked
        if found is None:
            raise _Mismatch(path, f"does not match the pattern {pattern!r}")


_BOUNDS = (
    ("minimum", "at least"),
    ("maximum", "at most"),
    ("exclusiveMinimum", "more than"),
    ("exclusiveMaximum", "less than"),
)


def _check_number(value: float, node: Mapping[str, Any], path: str) -> None:
    for keyword, words in _BOUNDS:
        bound = node.get(keyword)
        if not isinstance(bound, int | float) or isinstance(bound, bool):
            continue
        holds = {
            "minimum": value >= bound,
            "maximum": value <= bound,
            "exclusiveMinimum": value > bound,
            "exclusiveMaximum": value < bound,
        }[keyword]
        if not holds:
            raise _Mismatch(path, f"expected {words} {bound}, got {value}")
    step = node.get("multipleOf")
    if isinstance(step, int | float) and step > 0:
        ratio = value / step
        if not math.isclose(ratio, round(ratio), rel_tol=0, abs_tol=1e-9):
            raise _Mismatch(path, f"expected a multiple of {step}, got {value}")


# ------------------------------------------------------------------------------ a run's output


class StructuredOutput:
    """What a run asks for and how its answer is read: the schema, and the Struct to decode
    into (``None``: plain JSON, checked against the schema)."""

    __slots__ = ("schema", "struct")

    def __init__(self, schema: OutputSchema, struct: type | None = None) -> None:
        self.schema = schema
        self.struct = struct

    def __repr__(self) -> str:
        return f"StructuredOutput({self.schema.name!r}, struct={self.struct!r})"

    def parse(self, text: str) -> Any:
        """The answer's text decoded.

        :raises OutputValidationError: not JSON, or not of the schema (naming the path).
        """
        if self.struct is not None:
            try:
                return msgspec.json.decode(text, type=self.struct)
            except msgspec.ValidationError as err:
                path, detail = validation_location(err)
                raise self._invalid(text, path, detail) from err
            except msgspec.DecodeError as err:
                raise self._invalid(text, "$", f"not JSON: {err}") from err
        try:
            value = msgspec.json.decode(text)
        except msgspec.DecodeError as err:
            raise self._invalid(text, "$", f"not JSON: {err}") from err
        mismatch = validate_json(value, self.schema.schema)
        if mismatch is not None:
            raise self._invalid(text, *mismatch)
        return value

    def _invalid(self, text: str, path: str, detail: str) -> OutputValidationError:
        return OutputValidationError(
            f"the answer does not match the output schema {self.schema.name!r} at {path}: "
            f"{detail}; the turn is recorded, the raw text is on the error's `text`",
            path=path,
            text=text,
            schema_name=self.schema.name,
        )


def _is_struct(value: Any) -> bool:
    return isinstance(value, type) and issubclass(value, msgspec.Struct)


def schema_name(title: Any) -> str:
    """``title`` as a format name: other characters become ``_``, at most 64 (else ``output``)."""
    cleaned = re.sub(r"[^A-Za-z0-9_-]", "_", str(title))[:64]
    return cleaned or "output"


def structured_output(output_type: Any) -> StructuredOutput | None:
    """What ``output_type`` asks for: a :class:`msgspec.Struct` class (its strict schema, named
    after the class), a JSON Schema ``dict`` (strict; named after its ``title``, else
    ``output``), an :class:`OutputSchema`, a :class:`StructuredOutput`, or ``None`` (nothing).

    :raises OutputSchemaError: anything else, or a schema strict mode cannot take.
    """
    if output_type is None or isinstance(output_type, StructuredOutput):
        return output_type
    if isinstance(output_type, OutputSchema):
        return StructuredOutput(output_type)
    if _is_struct(output_type):
        schema = strict_schema(output_type)
        return StructuredOutput(
            OutputSchema(name=schema_name(output_type.__name__), schema=schema), output_type
        )
    if isinstance(output_type, Mapping):
        schema = copy.deepcopy(dict(output_type))
        problems = strict_problems(schema)
        if problems:
            raise OutputSchemaError(f"output_type: {_first(problems)}", path=problems[0][0])
        name = schema_name(output_type.get("title", "output"))
        return StructuredOutput(OutputSchema(name=name, schema=schema))
    raise OutputSchemaError(
        f"output_type must be a msgspec.Struct class, a JSON Schema dict or an OutputSchema, "
        f"not {type(output_type).__name__}",
        path="$",
    )


def requested_output(
    argument: StructuredOutput | None, thread_schema: OutputSchema | None, request: RequestSettings
) -> StructuredOutput | None:
    """The schema a run asks for: the argument, else the thread's, else the configuration's
    ``request.output_schema``, else a ``request.text.format`` of type ``json_schema`` (parsed,
    never rewritten), else ``None``."""
    if argument is not None:
        return argument
    chosen = thread_schema or request.output_schema
    if chosen is not None:
        return StructuredOutput(chosen)
    fmt = request.text.format if request.text is not None else None
    if fmt and fmt.get("type") == "json_schema" and isinstance(fmt.get("schema"), dict):
        name = fmt.get("name")
        return StructuredOutput(
            OutputSchema(
                name=name if isinstance(name, str) and _NAME.match(name) else "output",
                schema=fmt["schema"],
                strict=False,  # only read here: what is sent stays as configured
            )
        )
    return None
