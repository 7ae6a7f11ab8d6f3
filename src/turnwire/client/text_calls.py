"""Tool calls found in plain text: what ``parse_text_tool_calls`` returns.

Local models often write their tool calls into the answer text (``<tool_call>{...}</tool_call>``,
``[get_weather(city="Paris")]`` ...) instead of the structured ``function_call`` items of the
Responses API. A plugin (``plugins/turnwire-local-tools``) implements the hook; the client calls
it only when a response has text and no structured calls, and turns what it returns into
ordinary tool calls: recorded, run and answered like any other.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import msgspec

from turnwire.wire.response import Generation, MessageOutput, Output, ToolCallOutput

__all__ = ["TextToolCall", "TextToolCalls", "apply_text_tool_calls"]


class TextToolCall(msgspec.Struct, frozen=True, kw_only=True):
    """One call found in the text.

    :ivar name: the tool's name, as written.
    :ivar arguments: the arguments, as a mapping.
    :ivar call_id: the id the text gave the call, if any (else the client makes one).
    """

    name: str
    arguments: dict[str, Any] = msgspec.field(default_factory=dict)
    call_id: str | None = None


class TextToolCalls(msgspec.Struct, frozen=True, kw_only=True):
    """What a parser found: the calls, and the answer text without their markup.

    :ivar calls: the calls, in the order they were written (never empty).
    :ivar text: the text that remains once the calls are cut out (may be empty).
    """

    calls: tuple[TextToolCall, ...]
    text: str = ""


def apply_text_tool_calls(
    generation: Generation, parse: Callable[[str], TextToolCalls | None]
) -> Generation:
    """``generation`` with the calls ``parse`` finds in its text made structured calls.

    Only a generation with text and no structured calls is parsed. The calls follow the last
    output in order; the text that remains replaces the messages' text (in the first message,
    the others emptied), so the markup is never stored as the answer.
    """
    messages = generation.messages
    if generation.tool_calls or not messages:
        return generation
    text = "".join(message.text for message in messages)
    if not text.strip():
        return generation
    found = parse(text)
    if found is None or not found.calls:
        return generation
    replace = msgspec.structs.replace
    first = messages[0]
    outputs: list[Output] = [
        replace(output, text=found.text if output is first else "")
        if isinstance(output, MessageOutput)
        else output
        for output in generation.outputs
    ]
    after = max((output.output_index for output in generation.outputs), default=-1) + 1
    outputs += [
        ToolCallOutput(
            output_index=after + index,
            item_id=None,
            call_id=call.call_id or f"call_{uuid.uuid4().hex[:24]}",
            name=call.name,
            arguments=msgspec.json.encode(call.arguments).decode(),
            status="completed",
        )
        for index, call in enumerate(found.calls)
    ]
    return replace(generation, outputs=tuple(outputs))
