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
    input_token_count_params,
    response_compact_params,
    response_create_params,
    response_input_item_param,
)

FIELDS = Path(__file__).resolve().parents[2] / "src" / "turnwire" / "emulate" / "fields.json"


def _keys(typed_dict: Any) -> list[str]:
    return sorted(typed_dict.__required_keys__ | typed_dict.__optional_keys__)


def _literal(annotation: Any) -> str:
    while typing.get_origin(annotation) is not typing.Literal:
        annotation = typing.get_args(annotation)[0]
    (value,) = typing.get_args(annotation)
    return str(value)


def derive() -> dict[str, Any]:
    """``{"endpoints": {endpoint: [fields]}, "items": {type: [fields]}}``."""
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
    }


def encoded() -> str:
    return json.dumps(derive(), indent=1, sort_keys=True) + "\n"


if __name__ == "__main__":
    FIELDS.write_text(encoded(), encoding="utf-8")
