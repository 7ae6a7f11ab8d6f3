"""The emulator's field table, derived from the official ``openai`` package's request types.

The emulator cannot import ``openai`` at run time (a test-only dependency), so the table is
derived here and kept in ``src/turnwire/emulate/fields.json``; ``test_fields.py`` checks the
file against the installed types. After upgrading ``openai``, write it again with
``uv run python -m tests.emulate.fields_oracle``.
"""

from __future__ import annotations

import json
import typing
from pathlib import Path
from typing import Any

from openai.types.responses import (
    easy_input_message_param,
    input_token_count_params,
    response_compact_params,
    response_create_params,
    response_input_item_param,
    response_output_message_param,
)

FIELDS = Path(__file__).resolve().parents[2] / "src" / "turnwire" / "emulate" / "fields.json"


def _keys(typed_dict: Any) -> list[str]:
    return sorted(typed_dict.__required_keys__ | typed_dict.__optional_keys__)


def _literal(annotation: Any) -> str:
    while typing.get_origin(annotation) is not typing.Literal:
        annotation = typing.get_args(annotation)[0]
    (value,) = typing.get_args(annotation)
    return str(value)


def _typed_dicts(annotation: Any) -> list[Any]:
    """The TypedDicts anywhere inside ``annotation`` (a union, a list of a union ...)."""
    if isinstance(annotation, type) and hasattr(annotation, "__required_keys__"):
        return [annotation]
    return [found for arg in typing.get_args(annotation) for found in _typed_dicts(arg)]


# Where an input item holds a list of typed parts: (the item's type, its field) and the
# request types that declare it (a message is three: the easy form, the input message and an
# output message replayed).
_PART_LISTS = (
    (
        "message",
        "content",
        (
            easy_input_message_param.EasyInputMessageParam,
            response_input_item_param.Message,
            response_output_message_param.ResponseOutputMessageParam,
        ),
    ),
    ("function_call_output", "output", (response_input_item_param.FunctionCallOutput,)),
    (
        "custom_tool_call_output",
        "output",
        (response_input_item_param.ResponseCustomToolCallOutputParam,),
    ),
    ("reasoning", "summary", (response_input_item_param.ResponseReasoningItemParam,)),
    ("reasoning", "content", (response_input_item_param.ResponseReasoningItemParam,)),
)


def _parts() -> dict[str, dict[str, list[str]]]:
    """``{"item_type.field": {part type: [fields]}}``."""
    table: dict[str, dict[str, set[str]]] = {}
    for kind, name, owners in _PART_LISTS:
        parts = table.setdefault(f"{kind}.{name}", {})
        for owner in owners:
            annotation = typing.get_type_hints(owner, include_extras=True)[name]
            for part in _typed_dicts(annotation):
                hints = typing.get_type_hints(part, include_extras=True)
                parts.setdefault(_literal(hints["type"]), set()).update(_keys(part))
    return {
        where: {kind: sorted(fields) for kind, fields in sorted(parts.items())}
        for where, parts in sorted(table.items())
    }


def derive() -> dict[str, Any]:
    """``{"endpoints": {endpoint: [fields]}, "items": {type: [fields]}, "parts":
    {"item_type.field": {part type: [fields]}}}``."""
    create = sorted(
        set(_keys(response_create_params.ResponseCreateParamsStreaming))
        | set(_keys(response_create_params.ResponseCreateParamsNonStreaming))
    )
    items: dict[str, set[str]] = {}
    for member in typing.get_args(response_input_item_param.ResponseInputItemParam):
        hints = typing.get_type_hints(member, include_extras=True)
        items.setdefault(_literal(hints["type"]), set()).update(_keys(member))
    return {
        "endpoints": {
            "responses": create,
            "responses/compact": _keys(response_compact_params.ResponseCompactParams),
            "responses/input_tokens": _keys(input_token_count_params.InputTokenCountParams),
        },
        "items": {kind: sorted(fields) for kind, fields in sorted(items.items())},
        "parts": _parts(),
    }


def encoded() -> str:
    return json.dumps(derive(), indent=1, sort_keys=True) + "\n"


if __name__ == "__main__":
    FIELDS.write_text(encoded(), encoding="utf-8")
