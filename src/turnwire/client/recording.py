"""Recording: a :class:`~turnwire.wire.response.Generation` into thread records.

Each output becomes a record (messages, reasoning thoughts with their replay payload, tool calls
with composite ``call_id|fc_...`` ids and their arguments parsed, or kept as the model sent them
when they are no JSON object a thread can hold, hosted items sealed for replay), all stamped
with one timestamp and strictly increasing ``seq``, and each is checked against the
thread-file schema before it joins the thread (:func:`check_records`).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

import msgspec

from turnwire.client.assembly import PENDING
from turnwire.client.reading import finish_reason
from turnwire.client.text_calls import TextToolCalls
from turnwire.client.tools import parse_arguments
from turnwire.config.settings import Settings
from turnwire.errors import StreamError, ThreadFileError, validation_location
from turnwire.files.thread_file import THREAD_FILES
from turnwire.model.client_calls import CLIENT_CALL_TYPES, CLIENT_OUTPUT_TYPES, payload_from_item
from turnwire.model.hosted import seal, thread_anchor
from turnwire.model.records import (
    REPLAY_TAG,
    HostedItem,
    Identity,
    Message,
    ReasoningPayload,
    Thought,
    Thread,
    ToolCall,
    ToolResult,
)
from turnwire.model.tool_search import SEARCH_CALL, client_executed
from turnwire.model.usage import GenerationStats, Usage
from turnwire.rendering.preflight import MAX_CALL_ID
from turnwire.rendering.renderer import with_declared_tools
from turnwire.wire import ReasoningItem, ReasoningText, SummaryText
from turnwire.wire.response import (
    Generation,
    HostedOutput,
    MessageOutput,
    ReasoningOutput,
    ToolCallOutput,
)

__all__ = [
    "Records",
    "check_records",
    "generation_stats",
    "record_counts",
    "record_generation",
    "text_call_parser",
]

logger = logging.getLogger("turnwire")


class Records(msgspec.Struct, frozen=True, kw_only=True):
    """What a run added to the thread, in thread-file schema."""

    messages: tuple[Message, ...] = ()
    thoughts: tuple[Thought, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    hosted_items: tuple[HostedItem, ...] = ()

    def timeline(self) -> list[Message | Thought | ToolCall | HostedItem]:
        """Every record, in timeline order ``(created_at, seq)``."""
        records: list[Message | Thought | ToolCall | HostedItem] = [
            *self.messages,
            *self.thoughts,
            *self.tool_calls,
            *self.hosted_items,
        ]
        records.sort(key=lambda record: (record.created_at, record.seq))
        return records


def record_generation(
    thread: Thread,
    generation: Generation,
    *,
    settings: Settings,
    clock: Callable[[], datetime],
    hook: Callable[..., Any],
    container: Any,
) -> tuple[Thread, list[ToolCall]]:
    """Append the generation's records; return its tool calls (bad arguments come back
    already answered with an error result, which the model reads next iteration).

    :param clock: gives the one timestamp of the records.
    :param hook: calls a plugin hook by name (``filter_tool_call_id``).
    """
    render = settings.render
    stamp = clock()
    records: list[Message | Thought | ToolCall | HostedItem] = [
        *thread.messages,
        *thread.thoughts,
        *thread.tool_calls,
        *thread.hosted_items,
    ]
    seq = 1 + max((r.seq for r in records if r.created_at == stamp), default=-1)
    identity = (
        None if render.self_identity == "assistant" else Identity(identifier=render.self_identity)
    )
    messages, thoughts, calls = [], [], []
    hosted: list[HostedItem] = []
    existing = {call.id for call in thread.tool_calls}
    outputs = generation.outputs
    answered_by_server = {
        output.item.get("call_id")
        for output in outputs
        if isinstance(output, HostedOutput) and output.type in _CLIENT_OUTPUTS
    }
    for position, output in enumerate(outputs):
        if isinstance(output, MessageOutput):
            if output.text or output.refusal:
                messages.append(
                    Message(
                        id=output.item_id or f"msg_{uuid.uuid4().hex}",
                        role="assistant",
                        content=output.text or None,
                        identity=identity,
                        phase=output.phase,
                        refusal=output.refusal or None,
                        annotations=output.annotations,
                        logprobs=output.logprobs,
                        created_at=stamp,
                        seq=seq,
                    )
                )
                seq += 1
        elif isinstance(output, HostedOutput):
            if output.type in CLIENT_CALL_TYPES and (
                output.item.get("call_id") not in answered_by_server
            ):
                calls.append(_client_call(output, position, stamp, seq, hook, existing))
            else:  # a hosted item, or a call the API ran and answered itself (a hosted shell)
                if output.type == SEARCH_CALL and client_executed(output.item):
                    _check_search_call(output, position, (*thread.hosted_items, *hosted))
                hosted.append(_hosted_record(output, stamp, seq))
            seq += 1
        elif isinstance(output, ReasoningOutput):
            following = outputs[position + 1] if position + 1 < len(outputs) else None
            thought = _thought(output, following, identity, stamp, seq, settings=settings)
            if thought is not None:
                thoughts.append(thought)
                seq += 1
        elif isinstance(output, ToolCallOutput):
            composite = f"{output.call_id}|{output.item_id}" if output.item_id else output.call_id
            chosen = (
                hook(
                    "filter_tool_call_id",
                    tool_call_id=composite,
                    existing_ids=frozenset(existing),
                )
                or composite
            )
            existing.add(chosen)
            args, error = parse_arguments(output.arguments)
            call = ToolCall(
                id=chosen,
                tool=output.name or "(unnamed tool call)",
                args=args,
                # Replayed as the model sent them: history never rewrites the model's call.
                raw_args=output.arguments if error is not None else None,
                caller=output.caller,
                namespace=output.namespace,
                created_at=stamp,
                seq=seq,
            )
            if error is not None:
                call = msgspec.structs.replace(call, is_error=True, result=ToolResult(text=error))
            calls.append(call)
            seq += 1
    check_records("messages", messages)
    check_records("thoughts", thoughts)
    check_records("tool_calls", calls)
    check_records("hosted_items", hosted)
    extended = msgspec.structs.replace(
        thread,
        messages=thread.messages + tuple(messages),
        thoughts=thread.thoughts + tuple(thoughts),
        tool_calls=thread.tool_calls + tuple(calls),
    )
    if hosted:  # recorded by this deployment: replayed as items (render.hosted_replay)
        nonce, anchor = container.envelope_nonce(), thread_anchor(extended)
        extended = msgspec.structs.replace(
            extended,
            hosted_items=thread.hosted_items
            + tuple(seal(record, nonce, anchor) for record in hosted),
        )
    return extended, calls


_CLIENT_OUTPUTS = frozenset(CLIENT_OUTPUT_TYPES.values())


def _check_search_call(output: HostedOutput, position: int, recorded: Sequence[HostedItem]) -> None:
    """Refuse a client-executed ``tool_search_call`` the client could never answer in a
    request the API takes: without a ``call_id``, with one over 64 characters, or with one
    another client-executed search of the thread already has (its answer would pair with
    either).

    :raises StreamError: naming ``output[i].call_id``; nothing of the answer is recorded.
    """
    call_id = output.item.get("call_id")
    where = f"output[{position}].call_id"
    problem = None
    if not isinstance(call_id, str) or not call_id:
        problem = "has no call_id"
    elif len(call_id) > MAX_CALL_ID:
        problem = f"has a call_id of {len(call_id)} characters (at most {MAX_CALL_ID})"
    elif any(
        record.type == SEARCH_CALL
        and client_executed(record.item)
        and record.item.get("call_id") == call_id
        for record in recorded
    ):
        problem = "has the call_id of an earlier tool search of the thread"
    if problem is not None:
        raise StreamError(
            f"the answer's client-executed tool_search_call at output[{position}] {problem}; "
            "nothing was recorded",
            event="record",
            field=where,
        )


def _hosted_record(output: HostedOutput, stamp: datetime, seq: int) -> HostedItem:
    item_id = output.item_id or f"{output.type}_{uuid.uuid4().hex}"
    item = output.item
    if item.get("id") != item_id:  # sent without an id: the item holds the one it gets
        item = {**item, "id": item_id}
    return HostedItem(id=item_id, type=output.type, item=item, created_at=stamp, seq=seq)


def _client_call(
    output: HostedOutput,
    position: int,
    stamp: datetime,
    seq: int,
    hook: Callable[..., Any],
    existing: set[str],
) -> ToolCall:
    """The record of a client-executed call (``custom_tool_call``, ``shell_call`` ...): a tool
    call of its kind, its payload read from the item, waiting for its handler.

    :raises StreamError: the item lacks what its kind needs (``output[i].action.commands``);
        nothing of the answer is recorded.
    """
    item = output.item
    call_id = item.get("call_id")
    where = f"output[{position}]"
    if not isinstance(call_id, str) or not call_id:
        raise StreamError(
            f"the answer's {output.type} at {where} has no call_id; nothing was recorded",
            event="record",
            field=f"{where}.call_id",
        )
    try:
        payload = payload_from_item(item)
    except msgspec.ValidationError as err:
        path, detail = validation_location(err, root=where)
        path = _item_path(output.type, path, where)
        raise StreamError(
            f"the answer's {output.type} cannot be answered ({path}: {detail}); nothing was "
            "recorded",
            event="record",
            field=path,
        ) from None
    except ValueError as err:
        raise StreamError(
            f"the answer's {output.type} cannot be answered ({where}: {err}); nothing was recorded",
            event="record",
            field=where,
        ) from None
    composite = f"{call_id}|{output.item_id}" if output.item_id else call_id
    chosen = (
        hook("filter_tool_call_id", tool_call_id=composite, existing_ids=frozenset(existing))
        or composite
    )
    existing.add(chosen)
    kind = payload.__struct_config__.tag
    name = item.get("name") if kind == "custom" else kind
    caller = item.get("caller")
    program = (
        caller.get("caller_id")
        if isinstance(caller, dict) and caller.get("type") == "program"
        else None
    )
    namespace = item.get("namespace") if kind == "custom" else None
    return ToolCall(
        id=chosen,
        tool=name if isinstance(name, str) and name else "(unnamed tool call)",
        caller=program if isinstance(program, str) and program else None,
        namespace=namespace if isinstance(namespace, str) and namespace else None,
        payload=payload,
        created_at=stamp,
        seq=seq,
    )


_PAYLOAD_PATHS = {
    "shell_call": ".action",
    "local_shell_call": ".action",
    "apply_patch_call": ".operation",
}


def _item_path(kind: str, path: str, where: str) -> str:
    """A payload's ``$.path`` as the item's own (``output[2].action.commands``)."""
    inner = path.removeprefix(where)
    if kind == "apply_patch_call" and inner.startswith(".operation"):
        return f"{where}.operation.type{inner.removeprefix('.operation')}"
    return f"{where}{_PAYLOAD_PATHS.get(kind, '')}{inner}"


def _thought(
    output: ReasoningOutput,
    following: object,
    identity: Identity | None,
    stamp: datetime,
    seq: int,
    *,
    settings: Settings,
) -> Thought | None:
    text = output.text
    if settings.render.reasoning_replay == "off" or not output.item_id:
        if not text:
            return None  # nothing to show and nothing to replay: never fails a turn
        return Thought(
            id=output.item_id or f"rs_{uuid.uuid4().hex}",
            content=text,
            identity=identity,
            created_at=stamp,
            seq=seq,
        )
    item = ReasoningItem(
        id=output.item_id,
        summary=tuple(SummaryText(text=part) for part in output.summary),
        content=tuple(ReasoningText(text=part) for part in output.content) or None,
        encrypted_content=output.encrypted_content,
    )
    partner = getattr(following, "item_id", None)
    payload = ReasoningPayload(item=item, paired_item_id=partner, prefix_fingerprint=PENDING)
    return Thought(
        id=output.item_id,
        content=text,
        identity=identity,
        replay_compatibility=REPLAY_TAG,
        payload=payload,
        created_at=stamp,
        seq=seq,
    )


def generation_stats(
    generation: Generation, model: str, thread: Thread, before: tuple[int, int, int, int]
) -> GenerationStats:
    """One response of a run: its model, finish reason, usage and the records it added
    (those after the counts ``before``, see :func:`record_counts`)."""
    messages, thoughts, calls, hosted = before
    added: tuple[Message | Thought | ToolCall | HostedItem, ...] = (
        *thread.messages[messages:],
        *thread.thoughts[thoughts:],
        *thread.tool_calls[calls:],
        *thread.hosted_items[hosted:],
    )
    return GenerationStats(
        model=generation.model or model,
        response_id=generation.response_id,
        finish_reason=finish_reason(generation),
        usage=Usage.from_api(generation.usage),
        record_ids=tuple(record.id for record in added),
    )


def text_call_parser(
    thread: Thread, *, container: Any, hook: Callable[..., Any]
) -> Callable[[str], TextToolCalls | None]:
    """The ``parse_text_tool_calls`` hook over the tools ``thread``'s request declares."""
    # The tools the request declared, the built-in artifact tools included.
    tools = with_declared_tools(thread, container=container).tools

    def parse(text: str) -> TextToolCalls | None:
        try:
            found = hook("parse_text_tool_calls", text=text, tools=tools)
        except Exception:
            # A parser that breaks leaves the answer as text; it never fails the turn.
            logger.exception("parse_text_tool_calls raised", extra={"kind": "parser-error"})
            return None
        return found if isinstance(found, TextToolCalls) else None

    return parse


def record_counts(thread: Thread) -> tuple[int, int, int, int]:
    """How many messages, thoughts, tool calls and hosted items ``thread`` holds."""
    return (
        len(thread.messages),
        len(thread.thoughts),
        len(thread.tool_calls),
        len(thread.hosted_items),
    )


def check_records(kind: str, records: Iterable[Message | Thought | ToolCall | HostedItem]) -> None:
    """Each new record through the thread-file schema, strictly, before it joins the thread:
    a value the file could not hold later is refused now, naming where it sits (its free-form
    trees too, through the thread file's nesting and integer limits)."""
    for index, record in enumerate(records):
        root = f"$.{kind}[+{index}]"
        trees: list[tuple[str, Any, int]] = []
        if isinstance(record, HostedItem):
            trees.append((f"{root}.item", record.item, 4))
        elif isinstance(record, ToolCall):
            if record.args:
                trees.append((f"{root}.args", record.args, 4))
        elif isinstance(record, Message):
            for field in ("annotations", "logprobs"):
                for at, tree in enumerate(getattr(record, field) or ()):
                    trees.append((f"{root}.{field}[{at}]", tree, 5))
        try:
            msgspec.convert(msgspec.to_builtins(record), type(record))
        except (msgspec.ValidationError, ValueError, TypeError) as err:
            path, detail = validation_location(err, root=root)
            raise StreamError(
                f"the answer would add a record the thread file cannot hold ({path}: "
                f"{detail}); nothing was recorded",
                event="record",
                field=path,
            ) from err
        for where, tree, depth in trees:
            try:
                THREAD_FILES.check_tree(tree, name="record", data=b"", path=where, depth=depth)
            except ThreadFileError as err:
                path = err.path if err.path != "$" else where
                raise StreamError(
                    f"the answer would add a record the thread file cannot hold ({path}: "
                    f"{str(err).partition(': ')[2]}); nothing was recorded",
                    event="record",
                    field=path,
                ) from None
