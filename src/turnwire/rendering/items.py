"""One record's input items: the rules that turn a tool call, a thought or a hosted item into
what the request carries, and the rules of an item's id (``call_id`` length, which items carry
an id, stripping it).

Pure functions of their record and the stage they are given; the timeline
(:mod:`turnwire.rendering._incremental.timeline`) calls them once per record.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import msgspec

from turnwire.model.canonical import canonical_json
from turnwire.model.records import HostedItem, Thought, Tool, ToolCall
from turnwire.stages.thoughts import thought_text
from turnwire.stages.timeline import item_id_matcher
from turnwire.wire import (
    FunctionCall,
    FunctionCallOutput,
    HostedInputItem,
    InputItem,
    InputMessage,
    OutputMessage,
    OutputText,
    ProgramCaller,
)

__all__ = ["output_item_id", "short_call_id", "strip_item_id"]

_MAX_CALL_ID = 64


_CARRIERS = frozenset((OutputMessage, FunctionCall, HostedInputItem))  # the types with an item id


_STRIPPED = frozenset((OutputMessage, FunctionCall))  # the carriers stripped of their id


_CALL_ITEM_ID = item_id_matcher("fc_")  # valid_item_id(item_id, "fc_"), without the lookup


_ENCODER = msgspec.json.Encoder()


def short_call_id(call_id: str) -> str:
    """A ``call_id`` the API accepts: unchanged up to 64 characters, else a stable digest."""
    if len(call_id) <= _MAX_CALL_ID:
        return call_id
    return "call_" + hashlib.sha256(call_id.encode()).hexdigest()[:40]


def output_item_id(item: object) -> str | None:
    """The id that pairs an output item with a preceding reasoning item, if it carries one."""
    if isinstance(item, OutputMessage | FunctionCall | HostedInputItem):
        return item.id
    return None


def strip_item_id(item: InputItem) -> InputItem:
    """The item without its id (an output message becomes assistant string content)."""
    if isinstance(item, OutputMessage):
        parts = item.content
        if len(parts) == 1 and type(parts[0]) is OutputText:  # what an answer is: one text
            return InputMessage(role="assistant", content=parts[0].text, phase=item.phase)
        text = "\n\n".join(
            part.text if isinstance(part, OutputText) else part.refusal
            for part in item.content
            if (part.text if isinstance(part, OutputText) else part.refusal)
        )
        return InputMessage(role="assistant", content=text, phase=item.phase)
    if isinstance(item, FunctionCall) and item.id is not None:
        return msgspec.structs.replace(item, id=None)
    return item


_PLAIN = frozenset((str, bool, type(None)))


def _needs_js_numbers(value: Any) -> bool:
    """Whether msgspec would print a number of ``value`` unlike ``JSON.stringify``."""
    if type(value) is dict and _PLAIN.issuperset(map(type, value.values())):
        return False  # the usual arguments: strings, flags, nulls
    if isinstance(value, float):
        return True
    if isinstance(value, int):
        return abs(value) >= 2**53
    if isinstance(value, dict):
        return any(_needs_js_numbers(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_needs_js_numbers(v) for v in value)
    return False


def _arguments(tool_call: ToolCall) -> str:
    """The arguments as the model sent them when they are kept raw (``raw_args``: not a JSON
    object the thread could hold), else ``JSON.stringify`` of the stored arguments (compact,
    insertion order, JS numbers)."""
    if tool_call.raw_args is not None:
        return tool_call.raw_args
    args = tool_call.args
    # the usual arguments (strings, flags, nulls) tested here, without a call
    if (type(args) is dict and _PLAIN.issuperset(map(type, args.values()))) or (
        not _needs_js_numbers(args)
    ):
        return _ENCODER.encode(args).decode()
    return canonical_json(args, sort_keys=False)


def _tool_call_items(
    call: ToolCall, tool: Tool | None, render_result: Callable[..., Any]
) -> tuple[InputItem, ...]:
    """The items of one tool call; ``render_result(call, tool)`` is its
    ``render_tool_call_result``."""
    raw_call_id, raw_item_id = call.split_id()
    call_id = raw_call_id if len(raw_call_id) <= _MAX_CALL_ID else short_call_id(raw_call_id)
    item_id = raw_item_id if raw_item_id and _CALL_ITEM_ID(raw_item_id) else None
    caller = None if call.caller is None else ProgramCaller(caller_id=call.caller)
    function_call = FunctionCall(
        call_id=call_id,
        name=call.tool,
        arguments=_arguments(call),
        id=item_id,
        caller=caller,
        namespace=call.namespace,
    )
    if call.result is None:
        return (function_call,)
    output = render_result(call, tool) or ""
    return (function_call, FunctionCallOutput(call_id=call_id, output=output, caller=caller))


def _hosted_items(record: HostedItem, stages: Any) -> tuple[InputItem, ...]:
    """The items of one hosted record, each item form marked with the record's position."""
    rendered = tuple(stages.render_hosted_item(hosted_item=record) or ())
    for item in rendered:
        if type(item) is HostedInputItem and item.recorded is None:
            item.recorded = (record.created_at, record.seq)
    return rendered


def _thought_items(
    thought: Thought, replay: bool, render_reasoning: Callable[[Thought], Any], stages: Any
) -> tuple[tuple[InputItem, ...], bool]:
    """The items of one surfaced thought (``replay``: reasoning replay is not ``off``;
    ``render_reasoning(thought)`` is its ``render_reasoning_item``), and whether the first is
    a reasoning candidate."""
    if replay:
        item = render_reasoning(thought)
        if item is not None:
            return (item,), True
    return _thought_text_items(thought, replay, stages), False


def _thought_text_items(thought: Thought, replay: bool, stages: Any) -> tuple[InputItem, ...]:
    """The text form of a thought that goes without a reasoning item (if it has text)."""
    if (thought.payload is None or replay) and thought_text(thought):
        text = stages.render_thought(thought=thought)
        return (InputMessage(role="assistant", content=text),)
    return ()
