"""``build_input``: a stored thread → the Responses ``instructions``, ``input`` and ``tools``.

The four steps of the seed, each through the stage relay:

1. leading system content (prompt + buckets before ``timeline``), placed by
   ``system_prompt_channel``;
2. the timeline: messages, surfaced thoughts and tool calls ordered by ``(created_at, seq)``
   (stable: on a full tie messages, then thoughts, then tool calls), a tool call as a
   ``function_call`` and its ``function_call_output`` sibling;
3. the reasoning-pairing sweep, one left-to-right pass over the final input: a reasoning item is
   kept only when its fingerprint matches the prefix before it and the next item is its
   recorded partner carrying an id; an output item keeps its id only right after a kept
   reasoning item (everywhere else the API could not check it);
4. trailing buckets (after ``timeline``) as one system item, outside every fingerprint.

The three load-bearing invariants: the sweep sees only the prefix ``fingerprintable_length``
marks; a reasoning item must sort strictly before its partner; ``tools`` is ``None``, never
empty, when nothing is declared.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

import msgspec

from turnwire._canonical import canonical_json
from turnwire._relay import StagePlan, StageRelay
from turnwire.context import RenderOptions
from turnwire.errors import ConfigError
from turnwire.model import REPLAY_TAG, Message, Thought, Thread, Tool, ToolCall
from turnwire.stages.system_prompt import render_bucket
from turnwire.stages.thoughts import thought_text
from turnwire.stages.timeline import valid_item_id
from turnwire.wire import (
    FunctionCall,
    FunctionCallOutput,
    FunctionTool,
    InputItem,
    InputMessage,
    InputText,
    OutputMessage,
)

__all__ = ["RenderedInput", "build_input", "output_item_id", "short_call_id", "strip_item_id"]

logger = logging.getLogger("turnwire")

_MAX_CALL_ID = 64
_CARRY_IDS = (OutputMessage, FunctionCall)
_ENCODER = msgspec.json.Encoder()


class RenderedInput(msgspec.Struct, frozen=True, kw_only=True):
    """What ``build_input`` returns.

    :ivar instructions: the leading system text, when the channel is ``instructions``.
    :ivar input: the input items.
    :ivar tools: the declarations, or ``None`` when there are none (never empty).
    :ivar fingerprintable_length: how many leading items the pairing sweep saw.
    :ivar warnings: what the stages reported (also logged).
    """

    instructions: str | None
    input: tuple[InputItem, ...]
    tools: tuple[FunctionTool, ...] | None
    fingerprintable_length: int
    warnings: tuple[str, ...] = ()


def short_call_id(call_id: str) -> str:
    """A ``call_id`` the API accepts: unchanged up to 64 characters, else a stable digest."""
    if len(call_id) <= _MAX_CALL_ID:
        return call_id
    return "call_" + hashlib.sha256(call_id.encode()).hexdigest()[:40]


def output_item_id(item: object) -> str | None:
    """The id that pairs an output item with a preceding reasoning item, if it carries one."""
    if isinstance(item, OutputMessage | FunctionCall):
        return item.id
    return None


def strip_item_id(item: InputItem) -> InputItem:
    """The item without its id (an output message becomes assistant string content)."""
    if isinstance(item, OutputMessage):
        text = "".join(part.text for part in item.content)
        return InputMessage(role="assistant", content=text, phase=item.phase)
    if isinstance(item, FunctionCall) and item.id is not None:
        return msgspec.structs.replace(item, id=None)
    return item


_PLAIN = (str, bool, type(None))


def _needs_js_numbers(value: Any) -> bool:
    """Whether msgspec would print a number of ``value`` unlike ``JSON.stringify``."""
    if type(value) is dict and all(type(v) in _PLAIN for v in value.values()):
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
    """``JSON.stringify`` of the stored arguments (compact, insertion order, JS numbers)."""
    args = tool_call.args
    if _needs_js_numbers(args):
        return canonical_json(args, sort_keys=False)
    return _ENCODER.encode(args).decode()


def _tool_call_items(call: ToolCall, tools: dict[str, Tool], stages: Any) -> list[InputItem]:
    raw_call_id, raw_item_id = call.split_id()
    call_id = short_call_id(raw_call_id)
    item_id = valid_item_id(raw_item_id, "fc_")
    items: list[InputItem] = [
        FunctionCall(call_id=call_id, name=call.tool, arguments=_arguments(call), id=item_id)
    ]
    if call.result is not None:
        output = stages.render_tool_call_result(tool_call=call, tool=tools.get(call.tool)) or ""
        items.append(FunctionCallOutput(call_id=call_id, output=output))
    return items


def _timeline(
    thread: Thread, options: RenderOptions, stages: Any
) -> tuple[list[InputItem], dict[int, Thought]]:
    surfaced = stages.filter_thoughts(thoughts=thread.thoughts) or ()
    entries: list[tuple[Any, int, int, int, Message | Thought | ToolCall]] = []
    for rank, records in enumerate((thread.messages, surfaced, thread.tool_calls)):
        entries += [(r.created_at, r.seq, rank, i, r) for i, r in enumerate(records)]
    entries.sort()  # the first four fields are unique, so records are never compared

    tools = {tool.name: tool for tool in thread.tools}
    render_message = stages.render_timeline_message
    items: list[InputItem] = []
    candidates: dict[int, Thought] = {}
    for entry in entries:
        record = entry[4]
        if isinstance(record, Message):
            items.extend(render_message(message=record) or ())
        elif isinstance(record, ToolCall):
            items.extend(_tool_call_items(record, tools, stages))
        else:
            item = None
            if options.reasoning_replay != "off":
                item = stages.render_reasoning_item(thought=record)
            if item is not None:
                candidates[len(items)] = record
                items.append(item)
            elif (record.payload is None or options.reasoning_replay != "off") and thought_text(
                record
            ):
                text = stages.render_thought(thought=record)
                items.append(InputMessage(role="assistant", content=text))
    return items, candidates


def _strip_ids(items: list[InputItem]) -> list[InputItem]:
    return [strip_item_id(item) if type(item) in _CARRY_IDS else item for item in items]


def _sweep(
    items: list[InputItem],
    candidates: dict[int, Thought],
    *,
    instructions: str | None,
    tools: tuple[FunctionTool, ...] | None,
    options: RenderOptions,
    stages: Any,
    warn: Any,
) -> list[InputItem]:
    out: list[InputItem] = []
    done, count = 0, len(items)  # items[:done] are settled
    for index in sorted(candidates):
        if index < done:  # the partner of the previous kept candidate
            continue
        out.extend(_strip_ids(items[done:index]))
        thought = candidates[index]
        assert thought.payload is not None
        partner = items[index + 1] if index + 1 < count else None
        partner_id = output_item_id(partner)
        recorded = thought.payload.paired_item_id
        reason = None
        if partner is None:
            reason = "no output item follows it"
        elif partner_id is None:
            reason = "the item after it carries no id the API can pair"
        elif recorded is not None and recorded != partner_id:
            reason = f"the item after it is {partner_id}, not its recorded partner {recorded}"
        elif thought.payload.prefix_fingerprint is None:
            if options.unfingerprinted_reasoning != "trust":
                reason = (
                    "it has no prefix_fingerprint (imported reasoning: run `turnwire "
                    "fingerprint`, or set render.unfingerprinted_reasoning: trust)"
                )
        else:
            fingerprint = stages.fingerprint_prefix(
                model=options.model,
                instructions=instructions,
                tools=tools,
                input=out,
                through_item=len(out),
            )
            if thought.payload.prefix_fingerprint != fingerprint:
                reason = "the request prefix changed since it was produced (stale fingerprint)"
        if reason is not None:
            warn(f"dropping the reasoning item of thought {thought.id}: {reason}")
            done = index + 1
            continue
        assert partner is not None
        out.append(items[index])
        out.append(partner)
        done = index + 2
    out.extend(_strip_ids(items[done:]))
    return out


_LOGGED_WARNINGS = 5


def _log_warnings(warnings: list[str]) -> None:
    """Log what the stages reported: the first few in full, then how many more (all are kept in
    ``RenderedInput.warnings``), so a long thread cannot flood the log on every render."""
    for message in warnings[:_LOGGED_WARNINGS]:
        logger.warning(message, extra={"kind": "helper-warning"})
    if len(warnings) > _LOGGED_WARNINGS:
        logger.warning(
            "... and %d more render warnings (see RenderedInput.warnings)",
            len(warnings) - _LOGGED_WARNINGS,
            extra={"kind": "helper-warning"},
        )


def build_input(thread: Thread, *, plan: StagePlan, options: RenderOptions) -> RenderedInput:
    """Render ``thread`` into the Responses ``instructions``, ``input`` and ``tools``.

    :param thread: the stored conversation (media and artifact bytes already loaded).
    :param plan: the resolved stages (plugin manager plus container overrides).
    :param options: every option of the signature, one per container provider.
    """
    if "timeline" not in options.bucket_order:
        raise ConfigError(
            "render.bucket_order must contain `timeline`; without it no message would be sent",
            path="$.render.bucket_order",
        )
    warnings: list[str] = []
    stages = StageRelay(plan, {**options.injectable(), "warn": warnings.append, "scratch": {}})
    declared = tuple(stages.tools_to_wire(tools=thread.tools) or ())
    tools = declared or None
    leading = stages.render_system_prompt(
        system_prompt=thread.system_prompt,
        standing_instructions=thread.standing_instructions,
        memories=thread.memories,
        retrievables=thread.retrievables,
    )
    instructions: str | None = None
    head: list[InputItem] = []
    if leading:
        channel = options.system_prompt_channel
        if channel == "instructions":
            instructions = leading
        else:
            head.append(
                InputMessage(
                    role="developer" if channel == "developer-item" else "system",
                    content=(InputText(text=leading),),
                )
            )

    if (
        options.reasoning_replay != "off"
        and REPLAY_TAG not in options.replay_compatibility
        and any(t.replay_compatibility == REPLAY_TAG for t in thread.thoughts)
    ):
        warnings.append(
            f"reasoning_replay is {options.reasoning_replay!r} but render.replay_compatibility "
            f"does not list {REPLAY_TAG}; reasoning items are not replayed"
        )
    timeline, candidates = _timeline(thread, options, stages)
    offset = len(head)
    candidates = {index + offset: thought for index, thought in candidates.items()}
    items = _sweep(
        head + timeline,
        candidates,
        instructions=instructions,
        tools=tools,
        options=options,
        stages=stages,
        warn=warnings.append,
    )
    fingerprintable_length = len(items)

    position = options.bucket_order.index("timeline")
    trailing = [
        render_bucket(
            label, stages, thread.standing_instructions, thread.memories, thread.retrievables
        )
        for label in options.bucket_order[position + 1 :]
    ]
    trailing_text = "\n\n".join(part for part in trailing if part)
    if trailing_text:
        items.append(InputMessage(role="system", content=(InputText(text=trailing_text),)))

    _log_warnings(warnings)
    return RenderedInput(
        instructions=instructions,
        input=tuple(items),
        tools=tools,
        fingerprintable_length=fingerprintable_length,
        warnings=tuple(warnings),
    )
