"""Structured outputs: ``text.format`` with a JSON Schema, and the answer parsed against it.

A schema comes from one of three places, the first that is set winning:

1. the Python argument ``output_schema=`` of :func:`turnwire.run`, :func:`turnwire.run_thread`,
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
object; every schema says its ``type`` (or is an ``anyOf``, a ``$ref``, an ``enum`` or a
``const``: ``{}``, any value, has no strict form) and every array its ``items``; only the
keywords of :data:`STRICT_KEYWORDS` appear. A Struct's schema (:func:`msgspec.json.schema`)
is made strict here: the root ``$ref`` is inlined, objects are
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
import re
import warnings
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Annotated, Any

import msgspec

from turnwire.errors import OutputSchemaError, OutputValidationError, validation_location

if TYPE_CHECKING:
    from turnwire.config.settings import RequestSettings
    from turnwire.model.json_schema import JsonSchema, Violation

__all__ = [
    "STRICT_KEYWORDS",
    "OutputSchema",
    "StructuredOutput",
    "inline_root",
    "output_schema_argument",
    "requested_output",
    "schema_name",
    "strict_form",
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
    if not any(key in node for key in ("type", "anyOf", "$ref", "enum", "const")):
        # `{}` (any value, an untyped `Any`) has no strict form: the API asks for a type.
        problems.append((path, "a schema needs a `type` under strict (or anyOf, $ref, enum)"))
    for name in listed:
        if not isinstance(name, str) or name not in _TYPES:
            problems.append((_at(path, "type"), f"unknown type {name!r}"))
    fmt = node.get("format")
    if fmt is not None and (not isinstance(fmt, str) or fmt not in STRICT_FORMATS):
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
    elif "array" in listed:
        problems.append((path, "an array needs `items` under strict"))
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
    made, problems = strict_form(raw)
    if problems:
        where, problem = problems[0]
        raise OutputSchemaError(
            f"{struct.__name__}: its schema cannot be strict at {where}: {problem}", path=where
        )
    return made


def _split_root(raw: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """msgspec's schema of one type as ``(root, defs)``, the root ``$ref`` inlined."""
    defs: dict[str, Any] = dict(raw.get("$defs", {}))
    root: dict[str, Any] = dict(raw)
    root.pop("$defs", None)
    ref = root.pop("$ref", None)
    if isinstance(ref, str):
        root = {**copy.deepcopy(_resolve({"$defs": defs}, ref) or {}), **root}
    return root, defs


def _with_defs(root: dict[str, Any], defs: Mapping[str, Any]) -> dict[str, Any]:
    """``root`` with those of ``defs`` it refers to, directly or through another, as
    ``$defs`` (none when it refers to none)."""
    if not defs:
        return root
    root = {key: value for key, value in root.items() if key != "$defs"}
    kept: dict[str, Any] = {}
    waiting = list(_refs(root))
    while waiting:
        name = waiting.pop().removeprefix("#/$defs/")
        if name in defs and name not in kept:
            kept[name] = defs[name]
            waiting.extend(_refs(defs[name]))
    if kept:
        root["$defs"] = {name: value for name, value in defs.items() if name in kept}
    return root


def inline_root(raw: Mapping[str, Any]) -> dict[str, Any]:
    """msgspec's schema of one type (``{"$ref": "#/$defs/Name", "$defs": {...}}``) with its
    root inlined: the named schema itself, keeping of ``$defs`` only what it refers to."""
    root, defs = _split_root(raw)
    return _with_defs(root, defs)


def strict_form(raw: Mapping[str, Any]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """msgspec's schema of one type made strict (see the module docstring), and where it
    cannot be: ``(schema, problems)``, ``problems`` empty when the schema is strict."""
    root, defs = _split_root(raw)
    problems: list[tuple[str, str]] = []
    made = _strict(root, "$", defs, problems)
    strict_defs = {
        name: _strict(value, f"$.$defs.{name}", defs, problems) for name, value in defs.items()
    }
    made = _with_defs(made, strict_defs)
    problems += strict_problems(made)
    return made, problems


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
    if fmt is not None and (not isinstance(fmt, str) or fmt not in STRICT_FORMATS):
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


def _key(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key) else f"{path}[{key!r}]"


_BOUNDS = {
    "minimum": "at least",
    "maximum": "at most",
    "exclusiveMinimum": "more than",
    "exclusiveMaximum": "less than",
}
_SIZES = {
    "minItems": ("at least", "items"),
    "maxItems": ("at most", "items"),
    "minLength": ("at least", "characters"),
    "maxLength": ("at most", "characters"),
}


def _mismatch(found: Violation) -> tuple[str, str]:
    """``(path, detail)`` of one violation: ``("$.items[2].price", "expected number, got
    string")``."""
    path = "$"
    for part in found.path:
        path = _key(path, part)
    return path, _detail(found)


def _detail(found: Violation) -> str:
    keyword, expected, value = found.keyword, found.expected, found.value
    if keyword is None:
        return "no value is allowed here"
    if keyword == "type":
        listed = expected if isinstance(expected, list) else [expected]
        return f"expected {' or '.join(str(name) for name in listed)}, got {_type_of(value)}"
    if keyword == "const":
        return f"expected {expected!r}, got {value!r}"
    if keyword == "enum":
        shown = ", ".join(repr(option) for option in expected[:8])
        return f"expected one of {shown}, got {value!r}"
    if keyword == "required" and found.names:
        return f"missing required property `{found.names[0]}`"
    if keyword in ("additionalProperties", "unevaluatedProperties") and found.names:
        return f"unexpected property `{found.names[0]}`"
    if keyword in ("anyOf", "oneOf"):
        alternatives = found.alternatives
        if not alternatives:
            return "matches more than one of the oneOf alternatives, not exactly one"
        return f"matches none of the {len(expected)} alternatives ({_detail(alternatives[0])})"
    if keyword in _SIZES:
        words, unit = _SIZES[keyword]
        return f"expected {words} {expected} {unit}, got {len(value)}"
    if keyword == "pattern":
        return f"does not match the pattern {expected!r}"
    if keyword in _BOUNDS:
        return f"expected {_BOUNDS[keyword]} {expected}, got {value}"
    if keyword == "multipleOf":
        return f"expected a multiple of {expected}, got {value}"
    if keyword == "uniqueItems":
        return f"expected unique items: {found.message}"
    return f"{keyword}: {found.message}"


def validate_json(
    value: Any, schema: Mapping[str, Any], *, max_refs: int | None = None
) -> tuple[str, str] | None:
    """The place where the JSON ``value`` breaks ``schema``, as ``(path, detail)``
    (``("$.items[2].price", "expected number, got string")``), or ``None`` when it matches.

    The check is :mod:`turnwire.model.json_schema`'s, the one tool arguments use too: JSON
    Schema Draft 2020-12 but ``format``, every regular expression on RE2. Of the places that
    break the schema, the one named is the shallowest (a missing property before a wrong one
    inside), and within an ``anyOf`` the alternative that got furthest into the value. A
    schema that cannot check (see there) is a mismatch at ``$`` that says why.

    :param max_refs: references the check may follow (``json_schema.MAX_REFS`` by default).
    """
    from turnwire.model.json_schema import JsonSchema

    return _first_mismatch(JsonSchema(schema), value, max_refs)


def _first_mismatch(
    checker: JsonSchema, value: Any, max_refs: int | None
) -> tuple[str, str] | None:
    from turnwire.model.json_schema import MAX_REFS

    verdict = checker.check(value, max_refs=MAX_REFS if max_refs is None else max_refs)
    if verdict.unusable is not None:
        return "$", f"the schema cannot check it: {verdict.unusable}"
    return _mismatch(verdict.violations[0]) if verdict.violations else None


# ------------------------------------------------------------------------------ a run's output


class StructuredOutput:
    """What a run asks for and how its answer is read: the schema, and the Struct to decode
    into (``None``: plain JSON, checked against the schema)."""

    __slots__ = ("_checker", "schema", "struct")

    def __init__(self, schema: OutputSchema, struct: type | None = None) -> None:
        self.schema = schema
        self.struct = struct
        self._checker: JsonSchema | None = None

    def __repr__(self) -> str:
        return f"StructuredOutput({self.schema.name!r}, struct={self.struct!r})"

    def parse(self, text: str) -> Any:
        """The answer's text decoded.

        A check of plain JSON follows at most ``json_schema.MAX_REFS`` references, and one
        more for each character of the answer (a long answer to a recursive schema follows
        one at each level).

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
        from turnwire.model.json_schema import MAX_REFS, JsonSchema

        if self._checker is None:
            self._checker = JsonSchema(self.schema.schema)
        mismatch = _first_mismatch(self._checker, value, MAX_REFS + len(text))
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


def output_schema_argument(output_schema: Any, output_type: Any) -> Any:
    """The ``output_schema=`` argument of the public functions, taking the spelling they had
    before, ``output_type=``, for one version (with a :class:`DeprecationWarning`)."""
    if output_type is None:
        return output_schema
    warnings.warn(
        "output_type= is deprecated: pass output_schema= (it takes the same values)",
        DeprecationWarning,
        stacklevel=3,
    )
    if output_schema is not None:
        raise TypeError("pass output_schema= (or the deprecated output_type=), not both")
    return output_type
