"""Two independent oracles for what we send: the official ``openai`` package's request types,
and the Open Responses specification's (``openresponses-types``, :func:`validate_open_responses`).

Each input item is validated only against the TypedDicts that carry its ``type`` tag, with
unknown keys forbidden (the SDK's own smart union would accept typos and report 100 errors for
one mistake). The body's top level is validated the same way, minus ``input``.
"""

from __future__ import annotations

import typing
from collections import defaultdict
from typing import Any, Literal, Union, get_args, get_origin

from openai.types.responses import response_compact_params, response_create_params
from openai.types.responses.response_input_item_param import ResponseInputItemParam
from openai.types.responses.tool_param import ToolParam
from pydantic import ConfigDict, TypeAdapter, ValidationError

__all__ = [
    "OPENAI_ONLY",
    "OPENAI_ONLY_INCLUDES",
    "OPENAI_ONLY_ITEMS",
    "OPENAI_ONLY_TOOLS",
    "OracleError",
    "validate_body",
    "validate_compact_body",
    "validate_open_responses",
]

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


def _build(union: Any = ResponseInputItemParam) -> dict[str, TypeAdapter[Any]]:
    by_tag: dict[str, list[type]] = defaultdict(list)
    for member in get_args(union):
        for tag in _tags(member):
            by_tag[tag].append(member)
    return {
        tag: TypeAdapter(list[Union[tuple(members)]], config=_STRICT)  # noqa: UP007
        for tag, members in by_tag.items()
    }


_ITEMS = _build()
_TOOLS = _build(ToolParam)
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
            # A hosted tool: against the SDK's declaration of its type, unknown keys
            # forbidden (the body's own check lets them through).
            adapter = _TOOLS.get(tool.get("type"))
            if adapter is None:
                raise OracleError(f"tools[{index}]: unknown tool type {tool.get('type')!r}")
            try:
                adapter.validate_python([tool])
            except ValidationError as err:
                raise OracleError(f"tools[{index}] ({tool.get('type')}): {err}") from err
            continue
        allowed = {"type", "name", "description", "parameters", "strict"}
        extra = set(tool) - allowed
        if extra:
            raise OracleError(f"tools[{index}]: unexpected keys {sorted(extra)}")


# ---------------------------------------------------------------------- Open Responses
# The Open Responses specification's own types (``openresponses-types``) as a second oracle:
# the body validates, and no key is unknown to the specification, except the OpenAI-only
# options listed here, each with the reason turnwire sends it.

OPENAI_ONLY: dict[str, str] = {
    "prompt_cache_retention": (
        "OpenAI's prompt-cache lifetime (request.prompt_cache_retention); the specification has "
        "prompt_cache_key only, and a server that does not cache ignores the option"
    ),
    "input[*].content[*].file_id": (
        "OpenAI's Files API: an uploaded file by id; the specification has no files endpoint "
        "(file pointers render as file_data or image_url unless a thread names a file_id)"
    ),
    "input[*].output[*].file_id": "the same Files API id, inside a tool result's content",
}
"""Keys the specification does not define that turnwire may send, by path (``[*]`` = any)."""

_HOSTED = "the output of an OpenAI-hosted tool ({}), which the specification does not define"
OPENAI_ONLY_INCLUDES: dict[str, str] = {
    "code_interpreter_call.outputs": _HOSTED.format("code interpreter"),
    "computer_call_output.output.image_url": _HOSTED.format("computer use"),
    "file_search_call.results": _HOSTED.format("file search"),
    "web_search_call.action.sources": _HOSTED.format("web search"),
    "web_search_call.results": _HOSTED.format("web search"),
    "message.input_image.image_url": (
        "OpenAI echoes input image URLs back in the response; the specification has no such include"
    ),
}
"""``include`` values the specification does not list, each with its reason."""

_HOSTED_CALL = "a call of an OpenAI-hosted tool ({}), replayed as the API emitted it"
OPENAI_ONLY_ITEMS: dict[str, str] = {
    "web_search_call": _HOSTED_CALL.format("web search"),
    "file_search_call": _HOSTED_CALL.format("file search"),
    "code_interpreter_call": _HOSTED_CALL.format("code interpreter"),
    "image_generation_call": _HOSTED_CALL.format("image generation"),
    "mcp_call": _HOSTED_CALL.format("remote MCP server"),
    "mcp_list_tools": "the tools an OpenAI-hosted MCP connection listed",
    "mcp_approval_request": "an OpenAI-hosted MCP call waiting for approval",
    "mcp_approval_response": "the user's decision on an MCP approval request",
    "tool_search_call": _HOSTED_CALL.format("tool search"),
    "tool_search_output": "the tools an OpenAI-hosted tool search loaded",
}
"""Input item types the specification does not define, each with its reason; the Open
Responses check skips them (the official types check them, field for field)."""

_HOSTED_TOOL = (
    "an OpenAI-hosted tool ({}): the API runs it; the specification declares function tools only"
)
OPENAI_ONLY_TOOLS: dict[str, str] = {
    "web_search": _HOSTED_TOOL.format("web search"),
    "file_search": _HOSTED_TOOL.format("file search over vector stores"),
    "code_interpreter": _HOSTED_TOOL.format("code interpreter"),
    "mcp": _HOSTED_TOOL.format("remote MCP servers and connectors"),
    "image_generation": _HOSTED_TOOL.format("image generation"),
}
"""Tool types of ``tools`` the specification does not define, each with its reason; the Open
Responses check skips them (the official types check them, key for key)."""

# Free-form in the structural walk: `parameters` is JSON Schema (the generated types model it
# as an empty object); `tool_choice`'s specific-function variant is generated as an empty
# object too, so it is validated against the specification's own ToolChoiceParam instead.
_FREE_FORM = ("parameters", "tool_choice")


def _known(path: str) -> bool:
    import re

    return re.sub(r"\[\d+\]", "[*]", path) in OPENAI_ONLY


def _unknown_keys(raw: Any, value: Any, path: str) -> list[str]:
    """Keys of ``raw`` that the validated ``value`` (a pydantic model tree) has no field for."""
    from pydantic import BaseModel, RootModel

    if isinstance(value, RootModel):
        return _unknown_keys(raw, value.root, path)
    if isinstance(value, BaseModel):
        if not isinstance(raw, dict):
            return []
        fields = {(info.alias or name): name for name, info in type(value).model_fields.items()}
        found = []
        for key, item in raw.items():
            where = f"{path}.{key}" if path else key
            if key not in fields:
                if not _known(where):
                    found.append(where)
            elif key not in _FREE_FORM:
                found += _unknown_keys(item, getattr(value, fields[key]), where)
        return found
    if isinstance(value, list | tuple) and isinstance(raw, list | tuple):
        found = []
        for index, (item, validated) in enumerate(zip(raw, value, strict=False)):
            found += _unknown_keys(item, validated, f"{path}[{index}]")
        return found
    if isinstance(value, dict) and isinstance(raw, dict):
        found = []
        for key, item in raw.items():
            if key in value:
                found += _unknown_keys(item, value[key], f"{path}.{key}")
        return found
    return []


def _without_known(raw: Any, path: str = "") -> Any:
    """``raw`` minus the OpenAI-only keys (so their values cannot fail the validation)."""
    if isinstance(raw, dict):
        kept = {
            key: _without_known(item, f"{path}.{key}" if path else key)
            for key, item in raw.items()
            if not _known(f"{path}.{key}" if path else key)
        }
        if not path and isinstance(kept.get("include"), list):
            kept["include"] = [i for i in kept["include"] if i not in OPENAI_ONLY_INCLUDES]
        return kept
    if isinstance(raw, list):
        return [_without_known(item, f"{path}[{index}]") for index, item in enumerate(raw)]
    return raw


def validate_open_responses(body: dict[str, Any]) -> None:
    """Raise :class:`OracleError` when the Open Responses types reject ``body`` or find a key
    the specification does not define (beyond :data:`OPENAI_ONLY`)."""
    from openresponses_types import CreateResponseBody, ToolChoiceParam

    if any(item.get("type") in OPENAI_ONLY_ITEMS for item in body.get("input") or ()):
        body = {
            **body,
            "input": [i for i in body["input"] if i.get("type") not in OPENAI_ONLY_ITEMS],
        }
    if any(tool.get("type") in OPENAI_ONLY_TOOLS for tool in body.get("tools") or ()):
        tools = [t for t in body["tools"] if t.get("type") not in OPENAI_ONLY_TOOLS]
        body = {key: value for key, value in body.items() if key != "tools"}
        if tools:
            body["tools"] = tools
        elif "tool_choice" in body and not isinstance(body["tool_choice"], str):
            del body["tool_choice"]
    try:
        model = CreateResponseBody.model_validate(_without_known(body))
        if "tool_choice" in body:
            choice = ToolChoiceParam.model_validate(body["tool_choice"])
            unknown = _unknown_keys(body["tool_choice"], choice, "tool_choice")
            if unknown:
                raise OracleError(
                    f"Open Responses: keys the specification does not define: {unknown}"
                )
    except ValidationError as err:
        raise OracleError(f"Open Responses: {err}") from err
    unknown = _unknown_keys(body, model, "")
    if unknown:
        raise OracleError(f"Open Responses: keys the specification does not define: {unknown}")


_COMPACT_BODY = TypeAdapter(response_compact_params.ResponseCompactParams)


def validate_compact_body(body: dict[str, Any]) -> None:
    """Raise :class:`OracleError` when the SDK's ``responses.compact`` types reject ``body``:
    each input item as :func:`validate_body` checks it, and the top level with unknown keys
    forbidden."""
    validate_body({"model": body.get("model"), "input": body.get("input", [])})
    unknown = set(body) - set(response_compact_params.ResponseCompactParams.__annotations__)
    if unknown:
        raise OracleError(f"compact body: unknown keys {sorted(unknown)}")
    try:
        _COMPACT_BODY.validate_python(body)
    except ValidationError as err:
        raise OracleError(f"compact body: {err}") from err
