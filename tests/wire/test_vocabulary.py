"""Nothing the installed official types allow is silently unsupported: every input item type,
tool type and request field of the ``openai`` package is either handled by turnwire (named by
the table that handles it) or listed here with what turnwire does instead. A type or field the
next SDK adds fails this test until someone decides."""

from __future__ import annotations

import typing
from typing import Any

from openai.types.responses import response_create_params
from openai.types.responses.response_input_item_param import ResponseInputItemParam
from openai.types.responses.tool_param import ToolParam

from turnwire.config.settings import OWNED_FIELDS, REJECTED_REQUEST_KEYS
from turnwire.model.client_calls import CLIENT_CALL_TYPES, CLIENT_OUTPUT_TYPES
from turnwire.model.hosted import INPUT_FIELDS
from turnwire.rendering.body import COMPACTION_TRIGGER
from turnwire.rendering.preflight import PREFLIGHT_RULES
from turnwire.wire.request import RequestBody
from turnwire.wire.tools import CLIENT_TOOL_TYPES, HOSTED_TOOL_TYPES

# Item types turnwire renders from its own records (messages, reasoning, function calls).
RENDERED_ITEMS = {"message", "reasoning", "function_call", "function_call_output"}

# Item types turnwire does not send, each with what it does instead.
NOT_SENT_ITEMS = {
    "item_reference": "a reference to server-side state, which store: false keeps none of: "
    "never sent as an item (a hosted item of this type goes as text)",
}

# Tool types turnwire does not declare, each with what to declare instead.
NOT_DECLARED_TOOLS = {
    "web_search_preview": "the preview search tool: declare web_search",
    "web_search_preview_2025_03_11": "a dated preview of the search tool: declare web_search",
    "web_search_2025_08_26": "a dated web_search: declare web_search",
}

# Request fields turnwire does not model: sent as given through request.extra / extra_body=.
PASSED_THROUGH = {"access_programs", "background_options", "image", "max_tool_calls", "moderation"}
PASSED_THROUGH |= {"user"}  # deprecated by the API for safety_identifier and prompt_cache_key


def _literal(annotation: Any) -> tuple[str, ...]:
    while typing.get_origin(annotation) is not typing.Literal:
        args = typing.get_args(annotation)
        if not args:
            return ()
        annotation = args[0]
    return typing.get_args(annotation)


def _tags(union: Any) -> set[str]:
    tags: set[str] = set()
    for member in typing.get_args(union):
        tags.update(_literal(typing.get_type_hints(member).get("type")))
    return tags


def test_every_input_item_type_is_handled_or_listed() -> None:
    official = _tags(ResponseInputItemParam)
    handled = (
        RENDERED_ITEMS
        | set(INPUT_FIELDS)  # hosted items replayed as the API emitted them
        | set(CLIENT_CALL_TYPES)  # client-executed calls and their outputs
        | set(CLIENT_OUTPUT_TYPES.values())
        | {COMPACTION_TRIGGER["type"]}  # run(..., compaction_trigger=True)
    )
    assert official - handled == set(NOT_SENT_ITEMS)
    assert not (handled - official), "turnwire sends a type the official types do not know"


def test_every_tool_type_is_declarable_or_listed() -> None:
    official = _tags(ToolParam)
    declared = {"function"} | set(HOSTED_TOOL_TYPES) | set(CLIENT_TOOL_TYPES)
    assert official - declared == set(NOT_DECLARED_TOOLS)
    assert not (declared - official)


def test_every_request_field_is_modelled_owned_refused_or_passed_through() -> None:
    official = set(response_create_params.ResponseCreateParamsBase.__annotations__)
    official |= set(response_create_params.ResponseCreateParamsStreaming.__annotations__)
    modelled = set(RequestBody.__struct_fields__)
    owned = set(OWNED_FIELDS) | set(REJECTED_REQUEST_KEYS)
    assert official - modelled - owned == PASSED_THROUGH
    assert not (modelled - official)


def test_the_compaction_trigger_item_has_its_rule() -> None:
    assert "compaction-trigger-last" in PREFLIGHT_RULES
