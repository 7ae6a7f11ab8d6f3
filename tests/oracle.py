"""The official ``openai`` package's request types as an independent oracle.

Each input item is validated only against the TypedDicts that carry its ``type`` tag, with
unknown keys forbidden (the SDK's own smart union would accept typos and report 100 errors for
one mistake). The body's top level is validated the same way, minus ``input``.
"""

from __future__ import annotations

import typing
from collections import defaultdict
from typing import Any, Literal, Union, get_args, get_origin

from openai.types.responses import response_create_params
from openai.types.responses.response_input_item_param import ResponseInputItemParam
from pydantic import ConfigDict, TypeAdapter, ValidationError

__all__ = ["OracleError", "validate_body"]

_STRICT = ConfigDict(extra="forbid")


class OracleError(AssertionError):
    pass


def _tags(typed_dict: type) -> list[str]:
    hints = typing.get_type_hints(typed_dict, include_extras=True)
    hint = hints.get("type")
    if hint is None:
        return ["message"]
    while get_origin(hint) is not Literal:
        args = get_args(hint)
        if not args:
            return []
        hint = args[0]
    return [str(a) for a in get_args(hint)]


def _build() -> dict[str, TypeAdapter[Any]]:
    by_tag: dict[str, list[type]] = defaultdict(list)
    for member in get_args(ResponseInputItemParam):
        for tag in _tags(member):
            by_tag[tag].append(member)
    return {
        tag: TypeAdapter(list[Union[tuple(members)]], config=_STRICT)  # noqa: UP007
        for tag, members in by_tag.items()
    }


_ITEMS = _build()
_BODY = TypeAdapter(response_create_params.ResponseCreateParamsStreaming)


def validate_body(body: dict[str, Any]) -> None:
    """Raise :class:`OracleError` naming ``input[i]`` when the SDK types reject ``body``."""
    for index, item in enumerate(body.get("input", [])):
        tag = item.get("type", "message")
        adapter = _ITEMS.get(tag)
        if adapter is None:
            raise OracleError(f"input[{index}]: unknown input item type {tag!r}")
        try:
            adapter.validate_python([item])
        except ValidationError as err:
            raise OracleError(f"input[{index}] ({tag}): {err}") from err
    top = {key: value for key, value in body.items() if key != "input"}
    top["input"] = []
    top["stream"] = True
    try:
        _BODY.validate_python(top)
    except ValidationError as err:
        raise OracleError(f"body: {err}") from err
    for index, tool in enumerate(body.get("tools") or []):
        if tool.get("type") != "function":
            continue
        allowed = {"type", "name", "description", "parameters", "strict"}
        extra = set(tool) - allowed
        if extra:
            raise OracleError(f"tools[{index}]: unexpected keys {sorted(extra)}")
