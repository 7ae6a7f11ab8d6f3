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
from turnwire.model.client_calls import (
    ComputerAction,
    CustomToolInput,
    LocalShellAction,
    PatchOperation,
    ShellAction,
)
from turnwire.model.records import HostedItem, Thought, Tool, ToolCall, ToolResult
from turnwire.rendering.preflight import MAX_CALL_ID
from turnwire.stages.thoughts import thought_text
from turnwire.stages.timeline import item_id_matcher
from turnwire.wire import (
    FunctionCall,
    FunctionCallOutput,
    HostedInputItem,
    InputImage,
    InputItem,
    InputMessage,
    OutputMessage,
    OutputText,
    ProgramCaller,
)
from turnwire.wire import items as wire_items
from turnwire.wire.items import (
    ApplyPatchCall,
    ApplyPatchCallOutput,
    ComputerCall,
    ComputerCallOutput,
    ComputerScreenshot,
    CustomToolCall,
    CustomToolCallOutput,
    LocalShellCall,
    LocalShellCallOutput,
    SafetyCheck,
    ShellCall,
    ShellCallAction,
    ShellCallOutput,
    ShellCommandResult,
    ShellExit,
    ShellTimeout,
)

__all__ = ["output_item_id", "short_call_id", "strip_item_id"]


# The types with an item id. A computer or local shell call keeps its id (its input shape
# requires one); the other calls lose theirs when no reasoning item pairs with them.
_CARRIERS = frozenset(
    (
        OutputMessage,
        FunctionCall,
        HostedInputItem,
        CustomToolCall,
        ShellCall,
        ApplyPatchCall,
        ComputerCall,
        LocalShellCall,
    )
)


_STRIPPED = frozenset(
    (OutputMessage, FunctionCall, CustomToolCall, ShellCall, ApplyPatchCall)
)  # the carriers stripped of their id


_CALL_ITEM_ID = item_id_matcher("fc_")  # valid_item_id(item_id, "fc_"), without the lookup


_ENCODER = msgspec.json.Encoder()


def short_call_id(call_id: str) -> str:
    """A ``call_id`` the API accepts: unchanged up to 64 characters, else a stable digest."""
    if len(call_id) <= MAX_CALL_ID:
        return call_id
    return "call_" + hashlib.sha256(call_id.encode()).hexdigest()[:40]


def output_item_id(item: object) -> str | None:
    """The id that pairs an output item with a preceding reasoning item, if it carries one."""
    if isinstance(
        item,
        OutputMessage
        | FunctionCall
        | HostedInputItem
        | CustomToolCall
        | ShellCall
        | ApplyPatchCall
        | ComputerCall
        | LocalShellCall,
    ):
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
    if isinstance(item, FunctionCall | CustomToolCall | ShellCall | ApplyPatchCall) and (
        item.id is not None
    ):
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
    if call.payload is not None:
        return _client_call_items(call, render_result)
    raw_call_id, raw_item_id = call.split_id()
    call_id = raw_call_id if len(raw_call_id) <= MAX_CALL_ID else short_call_id(raw_call_id)
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


def _client_call_items(call: ToolCall, render_result: Callable[..., Any]) -> tuple[InputItem, ...]:
    """The items of a client-executed call: the call as the model made it, then (once it has
    a result) its answer, paired by ``call_id``.

    Pure and deterministic in the record, so every request replays the same bytes. A custom
    tool's result renders through ``render_tool_call_result`` (its tool-result envelope, as a
    function's); a shell, local shell or patch result goes back as its handler gave it, the
    shape the API's own tools answer with; a computer call's screenshot is the image that
    stage renders for its media.
    """
    payload = call.payload
    raw_call_id, raw_item_id = call.split_id()
    call_id = raw_call_id if len(raw_call_id) <= MAX_CALL_ID else short_call_id(raw_call_id)
    caller = None if call.caller is None else ProgramCaller(caller_id=call.caller)
    result = call.result
    made: InputItem
    answer: InputItem | None = None
    if isinstance(payload, CustomToolInput):
        made = CustomToolCall(
            call_id=call_id,
            name=call.tool,
            input=payload.input,
            id=raw_item_id,
            caller=caller,
            namespace=call.namespace,
        )
        if result is not None:
            # An undeclared function of the same name must not be taken for it: the custom
            # tool's own (untrusted) declaration renders its result.
            output = render_result(call, Tool(name=call.tool)) or ""
            answer = CustomToolCallOutput(call_id=call_id, output=output, caller=caller)
    elif isinstance(payload, ShellAction):
        action = ShellCallAction(
            commands=payload.commands,
            timeout_ms=payload.timeout_ms,
            max_output_length=payload.max_output_length,
        )
        made = ShellCall(
            call_id=call_id, action=action, id=raw_item_id, status="completed", caller=caller
        )
        if result is not None:
            answer = ShellCallOutput(
                call_id=call_id,
                output=_shell_output(result),
                max_output_length=payload.max_output_length,
                caller=caller,
            )
    elif isinstance(payload, LocalShellAction):
        made = LocalShellCall(
            id=raw_item_id or call_id,
            call_id=call_id,
            action=wire_items.LocalShellAction(
                command=payload.command,
                env=payload.env,
                timeout_ms=payload.timeout_ms,
                user=payload.user,
                working_directory=payload.working_directory,
            ),
            status="completed",
        )
        if result is not None:
            answer = LocalShellCallOutput(id=call_id, output=_plain_text(result))
    elif isinstance(payload, PatchOperation):
        operation = wire_items.PatchOperation(
            type=payload.operation, path=payload.path, diff=payload.diff
        )
        made = ApplyPatchCall(
            call_id=call_id, operation=operation, status="completed", id=raw_item_id, caller=caller
        )
        if result is not None:
            answer = ApplyPatchCallOutput(
                call_id=call_id,
                status="failed" if call.is_error else "completed",
                output=_plain_text(result) or None,
                caller=caller,
            )
    else:
        assert isinstance(payload, ComputerAction)
        steps = tuple(_computer_step(step) for step in payload.actions)
        checks = {
            check.id: SafetyCheck(id=check.id, code=check.code, message=check.message)
            for check in payload.pending_safety_checks
        }
        made = ComputerCall(
            id=raw_item_id or call_id,
            call_id=call_id,
            pending_safety_checks=tuple(checks.values()),
            status="completed",
            action=None if payload.batched else steps[0],
            actions=steps if payload.batched else None,
        )
        if result is not None:
            acknowledged = tuple(
                checks[check] for check in result.acknowledged_safety_checks if check in checks
            )
            answer = ComputerCallOutput(
                call_id=call_id,
                output=_screenshot(call, render_result),
                acknowledged_safety_checks=acknowledged or None,
            )
    return (made,) if answer is None else (made, answer)


def _plain_text(result: ToolResult) -> str:
    """A result's text as it is: its text, or its artifacts' bodies."""
    if result.text is not None:
        return result.text
    artifacts = (result.artifact,) if result.artifact is not None else result.artifacts or ()
    return "\n\n".join(artifact.body for artifact in artifacts)


def _shell_output(result: ToolResult) -> tuple[ShellCommandResult, ...]:
    """A shell call's answer: each command's output; an error result (no handler ran, it
    failed) as one command that exited 1 with the error on stderr."""
    if result.shell is None:
        return (
            ShellCommandResult(
                stdout="", stderr=_plain_text(result), outcome=ShellExit(exit_code=1)
            ),
        )
    return tuple(
        ShellCommandResult(
            stdout=command.stdout,
            stderr=command.stderr,
            outcome=ShellTimeout() if command.timed_out else ShellExit(exit_code=command.exit_code),
        )
        for command in result.shell
    )


def _computer_step(step: Any) -> dict[str, Any]:
    """One computer action as the input shape takes it (``keys`` always on a double click)."""
    fields: dict[str, Any] = msgspec.to_builtins(step)
    if fields.get("type") == "double_click":
        fields.setdefault("keys", None)
    return fields


def _screenshot(call: ToolCall, render_result: Callable[..., Any]) -> ComputerScreenshot:
    """The screenshot of a computer call's result: the image its media renders as (no image
    for an error result: the handler failed, or none is registered)."""
    if call.result is None or call.result.media is None:
        return ComputerScreenshot()
    rendered = render_result(call, Tool(name=call.tool))
    for block in rendered if isinstance(rendered, tuple) else ():
        if isinstance(block, InputImage):
            return ComputerScreenshot(image_url=block.image_url, file_id=block.file_id)
    return ComputerScreenshot()


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
