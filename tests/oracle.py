"""Three independent oracles for what we send: the official ``openai`` package's request types,
the Open Responses specification's (``openresponses-types``, :func:`validate_open_responses`),
and the API's own OpenAPI description (:func:`validate_openapi`).

Each input item is validated only against the TypedDicts that carry its ``type`` tag, with
unknown keys forbidden (the SDK's own smart union would accept typos and report 100 errors for
one mistake). The body's top level is validated the same way, minus ``input``.
"""

from __future__ import annotations

import functools
import typing
from collections import defaultdict
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from openai.types.responses import response_compact_params, response_create_params
from openai.types.responses.response_input_item_param import ResponseInputItemParam
from openai.types.responses.tool_param import ToolParam
from pydantic import ConfigDict, TypeAdapter, ValidationError

__all__ = [
    "OPENAI_ONLY",
    "OPENAI_ONLY_DETAILS",
    "OPENAI_ONLY_INCLUDES",
    "OPENAI_ONLY_ITEMS",
    "OPENAI_ONLY_TOOLS",
    "OPENAPI_PREDATES",
    "OPENAPI_RELAXED",
    "OracleError",
    "validate_body",
    "validate_compact_body",
    "validate_open_responses",
    "validate_openapi",
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


def _drained(value: Any) -> Any:
    """``value`` (what an SDK type adapter returned) with every lazy iterable consumed: the SDK
    types most arrays as ``Iterable[...]``, whose elements pydantic validates only as they are
    read, so without this a content part, a source or a summary would go unchecked."""
    if type(value).__name__ == "ValidatorIterator":
        return [_drained(element) for element in value]
    if isinstance(value, dict):
        return {key: _drained(element) for key, element in value.items()}
    if isinstance(value, list | tuple):
        return [_drained(element) for element in value]
    return value


def validate_body(body: dict[str, Any]) -> None:
    """Raise :class:`OracleError` naming ``input[i]`` when the SDK types reject ``body``."""
    for index, item in enumerate(body.get("input", [])):
        tag = item.get("type", "message")
        adapter = _ITEMS.get(tag)
        if adapter is None:
            raise OracleError(f"input[{index}]: unknown input item type {tag!r}")
        try:
            _drained(adapter.validate_python([item]))
        except ValidationError as err:
            raise OracleError(f"input[{index}] ({tag}): {err}") from err
    for index, tool in enumerate(body.get("tools") or []):
        if tool.get("type") != "function":
            # A hosted tool: against the SDK's declaration of its type, unknown keys
            # forbidden (the body's own check lets them through).
            adapter = _TOOLS.get(tool.get("type"))
            if adapter is None:
                raise OracleError(f"tools[{index}]: unknown tool type {tool.get('type')!r}")
            try:
                _drained(adapter.validate_python([tool]))
            except ValidationError as err:
                raise OracleError(f"tools[{index}] ({tool.get('type')}): {err}") from err
            continue
        allowed = {
            "type",
            "name",
            "description",
            "parameters",
            "strict",
            "allowed_callers",
            "defer_loading",
        }
        extra = set(tool) - allowed
        if extra:
            raise OracleError(f"tools[{index}]: unexpected keys {sorted(extra)}")
    # the top level last: a tool's own check names it more precisely
    top = {key: value for key, value in body.items() if key != "input"}
    top["input"] = []
    top["stream"] = True
    try:
        _drained(_BODY.validate_python(top))
    except ValidationError as err:
        raise OracleError(f"body: {err}") from err


# ---------------------------------------------------------------------- Open Responses
# The Open Responses specification's own types (``openresponses-types``) as a second oracle:
# the body validates, and no key is unknown to the specification, except the OpenAI-only
# options listed here, each with the reason turnwire sends it.

OPENAI_ONLY: dict[str, str] = {
    "context_management": (
        "OpenAI's server-side compaction (request.context_management, opt-in): the API "
        "compacts the input itself; the specification has no such option"
    ),
    "prompt_cache_retention": (
        "OpenAI's prompt-cache lifetime (request.prompt_cache_retention); the specification has "
        "prompt_cache_key only, and a server that does not cache ignores the option"
    ),
    "prompt_cache_options": (
        "OpenAI's prompt caching options for GPT-5.6 and later (request.prompt_cache_options), "
        "sent only when configured; the specification has prompt_cache_key only"
    ),
    "input[*].content[*].prompt_cache_breakpoint": (
        "OpenAI's explicit prompt-cache breakpoint on a content block (GPT-5.6 and later), "
        "sent only under request.prompt_cache_breakpoints: auto"
    ),
    "input[*].output[*].prompt_cache_breakpoint": (
        "the same breakpoint, on a content block of a tool result"
    ),
    "input[*].content[*].file_id": (
        "OpenAI's Files API: an uploaded file by id; the specification has no files endpoint "
        "(file pointers render as file_data or image_url unless a thread names a file_id)"
    ),
    "input[*].output[*].file_id": "the same Files API id, inside a tool result's content",
    "input[*].caller": (
        "OpenAI's programmatic tool calling: the program that made a function call, sent "
        "back with the call and its output; the specification has no programs"
    ),
    "input[*].namespace": (
        "OpenAI's tool search: the namespace of a function it loaded, which the API needs "
        "back with the call; the specification has no tool search"
    ),
    "tools[*].allowed_callers": (
        "OpenAI's programmatic tool calling: whether the model, a program or both may call "
        "a function"
    ),
    "tools[*].defer_loading": (
        "OpenAI's tool search: a function loaded only when the model searches for it, sent "
        "only when true; the specification has no tool search"
    ),
}
"""Keys the specification does not define that turnwire may send, by path (``[*]`` = any)."""

OPENAI_ONLY_DETAILS: dict[str, str] = {
    "input_file.detail": (
        "OpenAI's detail level of a document (low, high, auto: how GPT-5.6 and later render a "
        "file), sent only when an attachment sets one; the specification's input_file has none"
    ),
    "input_image.detail=original": (
        "OpenAI's detail level that sends an image unscaled, sent only when an attachment or "
        "render.image_detail asks for it; the specification knows low, high and auto"
    ),
}
"""Detail levels of content blocks (of a message or a tool result) the specification lacks,
each with its reason; the Open Responses check leaves them out (the official types and the
OpenAPI description check them)."""


REASONING_CONTENT_REASON = (
    "a reasoning item's raw text (gpt-oss and other models return it), which OpenAI's API "
    "takes back; the specification's reasoning input item has content: null, so under the "
    "openresponses profile turnwire leaves it out (render.reasoning_content: omit)"
)
"""Why the Open Responses check leaves out a replayed reasoning item's ``content``."""


def _without_openai_details(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` without the detail levels of :data:`OPENAI_ONLY_DETAILS` and the ``content``
    of reasoning items (:data:`REASONING_CONTENT_REASON`) (a copy where one is found, ``body``
    itself otherwise); every other detail stays, for the check."""

    def kept(block: Any) -> Any:
        if not isinstance(block, dict) or "detail" not in block:
            return block
        kind, detail = block.get("type"), block["detail"]
        if (kind == "input_file") or (kind == "input_image" and detail == "original"):
            return {key: value for key, value in block.items() if key != "detail"}
        return block

    items = body.get("input")
    if not isinstance(items, list):
        return body
    changed = []
    for item in items:
        new = item
        if isinstance(item, dict) and item.get("type") == "reasoning" and "content" in item:
            changed.append({key: value for key, value in item.items() if key != "content"})
            continue
        for field in ("content", "output"):
            blocks = item.get(field) if isinstance(item, dict) else None
            if isinstance(blocks, list) and any(kept(b) is not b for b in blocks):
                new = {**new, field: [kept(block) for block in blocks]}
        changed.append(new)
    if all(new is old for new, old in zip(changed, items, strict=True)):
        return body
    return {**body, "input": changed}


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
    "program": "a program the model wrote for OpenAI's programmatic tool calling",
    "program_output": "what such a program returned",
    "additional_tools": "tools OpenAI made available from this point of the input on",
    "configuration_update": "a change of reasoning effort or text format OpenAI made mid-way",
    **{
        kind: f"a call of an OpenAI client-executed tool ({tool}), replayed as the model made it"
        for kind, tool in (
            ("custom_tool_call", "custom tools"),
            ("shell_call", "shell"),
            ("local_shell_call", "local shell"),
            ("apply_patch_call", "apply_patch"),
            ("computer_call", "computer use"),
        )
    },
    **{
        kind: f"the client's answer to an OpenAI client-executed tool's call ({tool})"
        for kind, tool in (
            ("custom_tool_call_output", "custom tools"),
            ("shell_call_output", "shell"),
            ("local_shell_call_output", "local shell"),
            ("apply_patch_call_output", "apply_patch"),
            ("computer_call_output", "computer use"),
        )
    },
}
"""Input item types the specification does not define, each with its reason; the Open
Responses check skips them (the official types check them, field for field)."""

_CHOICE_ONLY = frozenset({"web_search_preview", "web_search_preview_2025_03_11", "computer_use"})
"""``tool_choice`` types of the official types, beyond :data:`OPENAI_ONLY_TOOLS`, that the
specification does not define (older spellings of OpenAI tools)."""

_HOSTED_TOOL = (
    "an OpenAI-hosted tool ({}): the API runs it; the specification declares function tools only"
)
OPENAI_ONLY_TOOLS: dict[str, str] = {
    "web_search": _HOSTED_TOOL.format("web search"),
    "file_search": _HOSTED_TOOL.format("file search over vector stores"),
    "code_interpreter": _HOSTED_TOOL.format("code interpreter"),
    "mcp": _HOSTED_TOOL.format("remote MCP servers and connectors"),
    "image_generation": _HOSTED_TOOL.format("image generation"),
    "programmatic_tool_calling": _HOSTED_TOOL.format("programs that call functions"),
    "tool_search": _HOSTED_TOOL.format("a search that loads deferred tools"),
    "namespace": (
        "OpenAI's tool search: functions and custom tools grouped under a name; the "
        "specification declares function tools only"
    ),
    **{
        kind: f"an OpenAI tool the client runs ({what}): the specification declares function "
        "tools only"
        for kind, what in (
            ("custom", "freeform input, optionally grammar-constrained"),
            ("shell", "shell commands"),
            ("local_shell", "one local command"),
            ("apply_patch", "file patches"),
            ("computer", "computer use"),
            ("computer_use_preview", "computer use, preview"),
        )
    },
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
    key = _encode(body)  # the verdict depends on the value alone: a body seen passing, passes
    if key in _OPEN_RESPONSES_PASSED:
        return
    _open_responses(body)
    if len(_OPEN_RESPONSES_PASSED) > 20_000:
        _OPEN_RESPONSES_PASSED.clear()
    _OPEN_RESPONSES_PASSED.add(key)


_OPEN_RESPONSES_PASSED: set[bytes] = set()


def _open_responses(body: dict[str, Any]) -> None:
    from openresponses_types import CreateResponseBody, ToolChoiceParam

    body = _without_openai_details(body)
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
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") in {*OPENAI_ONLY_TOOLS, *_CHOICE_ONLY}:
        # forcing an OpenAI tool (hosted, client-run, a program): checked by the official types
        body = {key: value for key, value in body.items() if key != "tool_choice"}
    elif isinstance(choice, dict) and choice.get("type") == "allowed_tools":
        # The specification's allowed tools are functions: the OpenAI tools among them are
        # checked by the official types.
        allowed = [
            entry
            for entry in choice.get("tools") or ()
            if entry.get("type") not in {*OPENAI_ONLY_TOOLS, *_CHOICE_ONLY}
        ]
        body = {key: value for key, value in body.items() if key != "tool_choice"}
        if allowed:
            body["tool_choice"] = {**choice, "tools": allowed}
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
    forbidden; then the OpenAPI description's compact body (:func:`validate_openapi`)."""
    validate_body({"model": body.get("model"), "input": body.get("input", [])})
    unknown = set(body) - set(response_compact_params.ResponseCompactParams.__annotations__)
    if unknown:
        raise OracleError(f"compact body: unknown keys {sorted(unknown)}")
    try:
        _drained(_COMPACT_BODY.validate_python(body))
    except ValidationError as err:
        raise OracleError(f"compact body: {err}") from err
    validate_openapi(body, compact=True)


# ---------------------------------------------------------------------- OpenAPI
# The API's own OpenAPI description (openai/openai-openapi, MIT; tests/data/conformance/
# openapi/openapi.yaml, see its SOURCES.md) as a third oracle, read with jsonschema: each
# input item against the description's `InputItem`, then the whole body against
# `CreateResponse` (required fields, value types, enums, lengths). Its unions are `oneOf`
# with a discriminator, and some members overlap (the easy message and the input message
# both describe a user message), so a strict `oneOf` would call a valid item ambiguous. A
# union is read as the API reads it: the members the discriminator's value selects (the
# members whose `type` enum holds it; all of them when it selects none), and the value is
# valid under one of them. Unknown keys are the other two oracles' business (the description
# does not forbid them).

_OPENAPI = Path(__file__).parent / "data" / "conformance" / "openapi" / "openapi.yaml"
_MEMBER_VALUES: dict[tuple[int, str], tuple[Any, ...] | None] = {}


def _selectable(validator: Any, member: dict[str, Any], name: str) -> tuple[Any, ...] | None:
    """The discriminator values ``member`` declares for property ``name`` (its enum or const,
    and :data:`_ABSENT` when it does not require the property), ``None`` when it declares
    none. Kept by the member's identity: the schemas live as long as the cached validators."""
    key = (id(member), name)
    if key not in _MEMBER_VALUES:
        target = member
        if "$ref" in member:
            target = validator._resolver.lookup(member["$ref"]).contents
        declared = (target.get("properties") or {}).get(name)
        values: tuple[Any, ...] | None = None
        if isinstance(declared, dict):
            if "enum" in declared:
                values = tuple(declared["enum"])
            elif "const" in declared:
                values = (declared["const"],)
        if values is not None and name not in (target.get("required") or ()):
            values = (*values, _ABSENT)
        _MEMBER_VALUES[key] = values
    return _MEMBER_VALUES[key]


_ABSENT = object()  # the discriminator property left out: members that do not require it


def _one_of(validator: Any, members: list[Any], instance: Any, schema: dict[str, Any]) -> Any:
    from jsonschema.exceptions import ValidationError as SchemaError

    chosen = list(enumerate(members))
    discriminator = schema.get("discriminator")
    if discriminator and isinstance(instance, dict):
        name = discriminator["propertyName"]
        value = instance.get(name, _ABSENT)
        picked = []
        for index, member in chosen:
            values = _selectable(validator, member, name)
            if values is None or value in values:
                picked.append((index, member))
        chosen = picked or chosen
    errors = []
    for index, member in chosen:
        found = list(validator.descend(instance, member, schema_path=index))
        if not found:
            return
        errors.extend(found)
    if len(chosen) == 1:
        yield from errors  # the one member its discriminator selects: its own errors
    else:
        yield SchemaError(
            f"{instance!r} is not valid under any of the given schemas", context=errors
        )


def _logprobs_optional(schemas: dict[str, Any]) -> None:
    schemas["OutputTextContent"]["required"].remove("logprobs")


def _call_status_nullable(schemas: dict[str, Any]) -> None:
    status = schemas["FunctionToolCall"]["properties"]["status"]
    status["type"] = ["string", "null"]
    status["enum"] = [*status["enum"], None]


def _approval_needs_no_request_id(schemas: dict[str, Any]) -> None:
    schemas["MCPApprovalResponse"]["required"].remove("request_id")


def _local_shell_output_needs_no_call_id(schemas: dict[str, Any]) -> None:
    schemas["LocalShellToolCallOutput"]["required"].remove("call_id")


OPENAPI_RELAXED: dict[str, tuple[str, Any]] = {
    "output_text without logprobs": (
        "reasoning_replay_multi_turn_text_gpt-5.json",  # accepted: an answer replayed as input
        _logprobs_optional,
    ),
    "function_call with status null": (
        "reasoning_replay_function_call_status_null_gpt-5.json",
        _call_status_nullable,
    ),
    "mcp_approval_response without request_id": (
        # The description requires a `request_id` its properties do not define (they, the
        # SDK's McpApprovalResponse and the API's docs name it approval_request_id).
        "",
        _approval_needs_no_request_id,
    ),
    "local_shell_call_output without call_id": (
        # The description requires a `call_id` its properties do not define (they and the
        # SDK's LocalShellCallOutput name the call by `id`, which the SDK type requires).
        "",
        _local_shell_output_needs_no_call_id,
    ),
}
"""Where the description is stricter than the API: each rule relaxed, with the recorded
request the API accepted that the unrelaxed description rejects (tests/data/conformance/
requests; the description reuses its output shapes for the input items that replay them), or
none when the description contradicts itself."""


OPENAPI_PREDATES: dict[str, str] = {
    "configuration_update": (
        "in the official types (ResponseConfigurationUpdateItemParam, openai 3.57) and the "
        "compaction guide; the description's snapshot (August 2026) has no such item"
    ),
}
"""Input item types newer than the OpenAPI description, each with where it is documented: the
official types (:func:`validate_body`) check them alone."""


@functools.cache
def _openapi_validators(
    relaxed: frozenset[str] = frozenset(OPENAPI_RELAXED),
) -> tuple[Any, Any, Any]:
    import yaml
    from jsonschema import Draft202012Validator, validators
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    with _OPENAPI.open("rb") as file:
        document = yaml.load(file, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    components = document["components"]["schemas"]
    for name in relaxed:
        OPENAPI_RELAXED[name][1](components)
    schemas = {"components": {"schemas": components}}
    Discriminating = validators.extend(Draft202012Validator, {"oneOf": _one_of})
    registry: Registry[Any] = Registry().with_resource(
        "urn:openai-openapi", Resource.from_contents(schemas, DRAFT202012)
    )

    def validator(name: str) -> Any:
        schema = {"$ref": f"urn:openai-openapi#/components/schemas/{name}"}
        return Discriminating(schema, registry=registry)

    return (
        validator("InputItem"),
        validator("CreateResponse"),
        validator("CompactResponseMethodPublicBody"),
    )


def _openapi_problem(validator: Any, value: Any, name: str) -> str | None:
    """``name`` and the path inside it of the error jsonschema ranks first, and its message;
    ``None`` when ``value`` is valid."""
    from jsonschema.exceptions import best_match

    error = best_match(validator.iter_errors(value))
    if error is None:
        return None
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return f"{name}{where}: {error.message[:300]}"


def validate_openapi(
    body: dict[str, Any],
    relaxed: frozenset[str] = frozenset(OPENAPI_RELAXED),
    *,
    compact: bool = False,
) -> None:
    """Raise :class:`OracleError` naming ``input[i]`` (or the body) when the API's OpenAPI
    description, with the ``relaxed`` rules of :data:`OPENAPI_RELAXED`, rejects ``body`` (a
    ``POST /responses`` body, or with ``compact`` a ``POST /responses/compact`` one)."""
    item_validator, body_validator, compact_validator = _openapi_validators(relaxed)
    passed = _OPENAPI_PASSED.setdefault(relaxed, set())
    if len(passed) > 100_000:  # the suite renders the same items again and again
        passed.clear()
    items = body.get("input")
    for index, item in enumerate(items if isinstance(items, list) else ()):
        key = b"item:" + _encode(item)
        if key in passed or (isinstance(item, dict) and item.get("type") in OPENAPI_PREDATES):
            continue
        problem = _openapi_problem(item_validator, item, f"input[{index}]")
        if problem is not None:
            kind = item.get("type", "message") if isinstance(item, dict) else type(item).__name__
            raise OracleError(f"OpenAPI ({kind}): {problem}")
        passed.add(key)
    # a string input stays in the body: the description allows one there
    rest = {**body, "input": []} if isinstance(items, list) else body
    key = (b"compact:" if compact else b"body:") + _encode(rest)
    if key not in passed:
        whole = compact_validator if compact else body_validator
        problem = _openapi_problem(whole, rest, "compact body" if compact else "body")
        if problem is not None:
            raise OracleError(f"OpenAPI: {problem}")
        passed.add(key)


# What passed already, by relaxation set: the JSON text of an item, of a body without its
# input or of a compact body without its input, each behind its own prefix (a verdict depends
# on nothing else).
_OPENAPI_PASSED: dict[frozenset[str], set[bytes]] = {}


def _encode(value: Any) -> bytes:
    import msgspec

    return msgspec.json.encode(value)
