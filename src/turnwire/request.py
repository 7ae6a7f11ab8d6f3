"""Request body assembly and the preflight wire check.

:func:`build_body` puts a rendered input and the ``request:`` options together, in the order of
the reference (model, input, stream, store, instructions, options, tool_choice, tools), with
``store: false`` always. :func:`preflight` checks a body (ours, or any JSON body) against the
wire rules the real API enforces, and raises :class:`~turnwire.errors.PreflightError` naming
``input[i]`` and the rule before a request can earn a 400.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from turnwire.context import ReasoningReplay
from turnwire.errors import PreflightError
from turnwire.pipeline import RenderedInput
from turnwire.settings import RequestSettings
from turnwire.wire import RequestBody

__all__ = ["ENCRYPTED_INCLUDE", "PREFLIGHT_RULES", "build_body", "encode_body", "preflight"]

logger = logging.getLogger("turnwire")

ENCRYPTED_INCLUDE = "reasoning.encrypted_content"

PREFLIGHT_RULES: dict[str, str] = {
    "non-empty-input": "input must hold at least one item",
    "max-output-tokens": "max_output_tokens must be at least 16",
    "reasoning-partner": "a reasoning item must be followed by the output item it produced, "
    "carrying that item's id",
    "reasoning-encrypted": "under store: false a reasoning item must carry encrypted_content",
    "item-id-prefix": "item ids must start with the prefix of their type (msg_, fc_, rs_)",
    "call-id-length": "call_id must be at most 64 characters",
    "call-output-pairing": "every function_call_output needs an earlier function_call with its "
    "call_id, and every function_call needs its output",
    "duplicate-id": "an item id or a function_call call_id appears twice",
    "assistant-input-text": "assistant-role messages take output_text parts or string content, "
    "never input_text",
    "json-object-needs-json": "text.format json_object needs the word 'json' in the input",
}

_ID_PREFIX = {"function_call": "fc_", "reasoning": "rs_", "message": "msg_"}
_PASSIVE_TYPES = {"reasoning", "function_call_output", "item_reference"}

_ENCODER = msgspec.json.Encoder()


def build_body(
    rendered: RenderedInput,
    *,
    model: str,
    request: RequestSettings,
    stream: bool,
    reasoning_replay: ReasoningReplay,
) -> RequestBody:
    """The request body for ``rendered`` under these options."""
    include = list(request.include)
    if reasoning_replay == "encrypted" and ENCRYPTED_INCLUDE not in include:
        include.append(ENCRYPTED_INCLUDE)
    tool_choice = request.tool_choice
    if tool_choice is not None and rendered.tools is None:
        logger.warning(
            "request.tool_choice is set but no tool is declared; it is left out of the body",
            extra={"kind": "tool-choice-without-tools"},
        )
        tool_choice = None
    return RequestBody(
        model=model,
        input=rendered.input,
        stream=stream,
        store=False,
        instructions=rendered.instructions,
        include=tuple(include) or None,
        reasoning=request.reasoning,
        max_output_tokens=request.max_output_tokens,
        parallel_tool_calls=request.parallel_tool_calls,
        temperature=request.temperature,
        top_p=request.top_p,
        top_logprobs=request.top_logprobs,
        truncation=request.truncation,
        service_tier=request.service_tier,
        prompt_cache_key=request.prompt_cache_key,
        prompt_cache_retention=request.prompt_cache_retention,
        safety_identifier=request.safety_identifier,
        metadata=request.metadata,
        text=request.text,
        background=request.background,
        stream_options=request.stream_options if stream else None,
        tool_choice=tool_choice,
        tools=rendered.tools,
    )


def encode_body(body: RequestBody) -> bytes:
    """The exact bytes to POST."""
    return _ENCODER.encode(body)


def _fail(rule: str, detail: str, index: int | None = None) -> PreflightError:
    where = "body" if index is None else f"input[{index}]"
    return PreflightError(
        f"{where}: {detail} (rule {rule}: {PREFLIGHT_RULES[rule]})", rule=rule, index=index
    )


def _text_of(item: Mapping[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return " ".join(part.get("text", "") for part in content if isinstance(part, Mapping))
    return ""


def preflight(body: RequestBody | Mapping[str, Any]) -> None:
    """Check ``body`` against the wire rules; raise the first violation, in input order."""
    data: Mapping[str, Any] = (
        msgspec.to_builtins(body) if isinstance(body, msgspec.Struct) else body
    )
    items = data.get("input")
    if isinstance(items, str):
        if not items:
            raise _fail("non-empty-input", "input is an empty string")
        items = []
    elif not items:
        raise _fail("non-empty-input", "input is empty")
    max_tokens = data.get("max_output_tokens")
    if isinstance(max_tokens, int) and max_tokens < 16:
        raise _fail("max-output-tokens", f"max_output_tokens is {max_tokens}")

    stateless = data.get("store") is False
    seen_ids: dict[str, int] = {}
    calls: dict[str, int] = {}
    answered: set[str] = set()
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            continue
        kind = item.get("type", "message")
        item_id = item.get("id")
        if item_id is not None:
            if item_id in seen_ids:
                raise _fail(
                    "duplicate-id",
                    f"id {item_id!r} already used by input[{seen_ids[item_id]}]",
                    index,
                )
            seen_ids[item_id] = index
            prefix = _ID_PREFIX.get(kind)
            if prefix and not str(item_id).startswith(prefix):
                raise _fail(
                    "item-id-prefix", f"{kind} id {item_id!r} does not start with {prefix}", index
                )
        if kind == "reasoning":
            following = items[index + 1] if index + 1 < len(items) else None
            if (
                not isinstance(following, Mapping)
                or not following.get("id")
                or following.get("type", "message") in _PASSIVE_TYPES
            ):
                raise _fail(
                    "reasoning-partner",
                    f"reasoning item {item_id!r} is not followed by an output item with an id",
                    index,
                )
            if stateless and not item.get("encrypted_content"):
                raise _fail(
                    "reasoning-encrypted",
                    f"reasoning item {item_id!r} has no encrypted_content",
                    index,
                )
        elif kind == "message" and item.get("role") == "assistant":
            content = item.get("content")
            if (
                isinstance(content, Sequence)
                and not isinstance(content, str)
                and any(
                    isinstance(part, Mapping) and part.get("type") == "input_text"
                    for part in content
                )
            ):
                raise _fail("assistant-input-text", "assistant message has input_text parts", index)
        elif kind in ("function_call", "function_call_output"):
            call_id = str(item.get("call_id", ""))
            if len(call_id) > 64:
                raise _fail("call-id-length", f"call_id is {len(call_id)} characters", index)
            if kind == "function_call":
                if call_id in calls:
                    raise _fail(
                        "duplicate-id",
                        f"call_id {call_id!r} already used by input[{calls[call_id]}]",
                        index,
                    )
                calls[call_id] = index
            else:
                if call_id not in calls:
                    raise _fail(
                        "call-output-pairing",
                        f"function_call_output {call_id!r} has no earlier function_call",
                        index,
                    )
                answered.add(call_id)
    for call_id, index in calls.items():
        if call_id not in answered:
            raise _fail(
                "call-output-pairing",
                f"function_call {call_id!r} has no function_call_output",
                index,
            )

    text = data.get("text")
    if isinstance(text, Mapping):
        format_ = text.get("format")
        if (
            isinstance(format_, Mapping)
            and format_.get("type") == "json_object"
            and not any(
                isinstance(item, Mapping) and "json" in _text_of(item).lower() for item in items
            )
        ):
            raise _fail("json-object-needs-json", "no input item mentions JSON")
