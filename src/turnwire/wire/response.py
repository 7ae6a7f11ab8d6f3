"""Output slots: the state machine that turns stream events into one finished generation.

Slots are keyed by ``output_index``. A ``message`` item opens a text slot, ``reasoning`` a
thinking slot, ``function_call`` a tool-call slot; any other item type (hosted tools: web
search, code interpreter, MCP, tool search, a compaction, a type added later) a hosted slot,
which keeps the whole item as the API emitted it. Deltas append (a
delta for an index no item opened opens the slot it implies); ``.function_call_arguments.done``
replaces the arguments; ``output_item.done`` finalises a slot from the complete item, and is
the only place ``encrypted_content`` is captured (it is re-encrypted at every emission; the
``.done`` value is the one to keep), with a backfill from the terminal response for an item
whose ``.done`` lacked it.

A hosted item that neither an ``output_item.done`` nor the terminal response finished (a
stream cut after its ``output_item.added``) is dropped (warning kind
``unfinished-hosted-item``): the item as opened cannot be sent back as input.

Nothing else the server reported is lost: an item of the terminal response's ``output`` that no
``output_item.done`` finalised is built from the terminal copy (warning kind
``output-from-terminal-response``), and a terminal copy that disagrees with a streamed item is
logged (kind ``terminal-output-mismatch``; ``encrypted_content`` is never compared, it differs
by design).

Every item, part and response object is validated before it is used: a value of the wrong type
(an int id, an object ``phase``, a content part that is not an object, a ``call_id`` missing
from a finished call, an unknown status...) raises :class:`~turnwire.errors.StreamError`
naming the event and the field, such as ``response.output_item.done output[1].content[0].text:
expected str, got int``, so no such value can reach a thread.

A response ends at ``response.completed``, ``response.incomplete``, ``response.failed`` or an
``error`` event, or at end of stream (:meth:`ResponseAccumulator.close`, which drains what
arrived). Several responses may follow each other on one stream; each ``response.created``
starts a new one.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from typing import Annotated, Any, Literal, TypeVar

import msgspec

from turnwire.errors import StreamError
from turnwire.wire.events import (
    ErrorEvent,
    FunctionCallArgumentsDelta,
    FunctionCallArgumentsDone,
    OutputItemAdded,
    OutputItemDone,
    ReasoningSummaryTextDelta,
    ReasoningTextDelta,
    RefusalDelta,
    ResponseCompleted,
    ResponseCreated,
    ResponseFailed,
    ResponseIncomplete,
    ResponseInProgress,
    ResponseQueued,
    StreamEvent,
    TextDelta,
    UnknownEvent,
)

__all__ = [
    "Generation",
    "HostedOutput",
    "MessageOutput",
    "Output",
    "ReasoningOutput",
    "ResponseAccumulator",
    "Terminal",
    "ToolCallOutput",
    "generation_from_response",
]

logger = logging.getLogger("turnwire")

Terminal = Literal["completed", "incomplete", "failed", "error", "eof"]


class MessageOutput(msgspec.Struct, frozen=True, kw_only=True):
    """An assistant message: its text (or refusal), id and ``phase`` when the API gave one."""

    output_index: int
    item_id: str | None
    text: str
    refusal: str = ""
    phase: str | None = None
    status: str | None = None
    annotations: tuple[dict[str, Any], ...] = ()
    logprobs: tuple[dict[str, Any], ...] = ()


class ReasoningOutput(msgspec.Struct, frozen=True, kw_only=True):
    """A reasoning item: summary parts, raw reasoning parts, the final encrypted content."""

    output_index: int
    item_id: str | None
    summary: tuple[str, ...] = ()
    content: tuple[str, ...] = ()
    encrypted_content: str | None = None

    @property
    def text(self) -> str:
        """What a plain-text thought shows: the reasoning text, else the summary."""
        return "\n\n".join(self.content) or "\n\n".join(self.summary)


class ToolCallOutput(msgspec.Struct, frozen=True, kw_only=True):
    """A function call: ``call_id``, name and the raw arguments string."""

    output_index: int
    item_id: str | None
    call_id: str
    name: str
    arguments: str
    status: str | None = None
    caller: str | None = None  # the call_id of the program that made it (programmatic calls)
    namespace: str | None = None  # the namespace of a function a tool search loaded


class HostedOutput(msgspec.Struct, frozen=True, kw_only=True):
    """Any other output item (a hosted tool's call, an MCP listing, a compaction ...), whole."""

    output_index: int
    item_id: str | None
    type: str
    item: dict[str, Any]


Output = MessageOutput | ReasoningOutput | ToolCallOutput | HostedOutput


class Generation(msgspec.Struct, frozen=True, kw_only=True):
    """One response as it was received.

    :ivar terminal: how it ended; ``eof`` means the stream closed without a terminal event.
    :ivar outputs: the slots in ``output_index`` order.
    :ivar hosted: the types of the hosted output items, in output order.
    :ivar sequence_gaps: how many times ``sequence_number`` skipped.
    :ivar from_terminal: the output indices built from the terminal response's ``output``
        because no ``output_item.done`` finalised them.
    """

    terminal: Terminal
    response_id: str | None = None
    status: str | None = None
    model: str | None = None
    usage: dict[str, Any] | None = None
    incomplete_reason: str | None = None
    error_code: str | None = None
    error_message: str | None = None
    outputs: tuple[Output, ...] = ()
    hosted: tuple[str, ...] = ()
    sequence_gaps: int = 0
    from_terminal: tuple[int, ...] = ()

    @property
    def messages(self) -> list[MessageOutput]:
        return [o for o in self.outputs if isinstance(o, MessageOutput)]

    @property
    def reasoning(self) -> list[ReasoningOutput]:
        return [o for o in self.outputs if isinstance(o, ReasoningOutput)]

    @property
    def tool_calls(self) -> list[ToolCallOutput]:
        return [o for o in self.outputs if isinstance(o, ToolCallOutput)]

    @property
    def hosted_items(self) -> list[HostedOutput]:
        return [o for o in self.outputs if isinstance(o, HostedOutput)]

    @property
    def text(self) -> str:
        return "".join(m.refusal or m.text for m in self.messages)


# ---------------------------------------------------------------------- shapes of the wire
# Unknown fields are allowed (the API grows); the fields turnwire reads are typed strictly.

# An item's status is informational (the response's status decides the outcome), and servers
# we did not write send values the spec lacks (open-responses-server's function calls say
# "ready"): any string is kept.
ItemStatus = str
ResponseStatus = Literal["queued", "in_progress", "completed", "incomplete", "failed", "cancelled"]


class _Shape(msgspec.Struct, frozen=True, kw_only=True):
    pass


class _AnyItem(_Shape, frozen=True, kw_only=True):
    type: str


class _MessageItem(_Shape, frozen=True, kw_only=True):
    id: str | None = None
    status: ItemStatus | None = None
    phase: str | None = None
    content: tuple[dict[str, Any], ...] | None = None


class _OutputTextPart(_Shape, frozen=True, kw_only=True):
    text: str = ""
    annotations: tuple[dict[str, Any], ...] | None = None
    logprobs: tuple[dict[str, Any], ...] | None = None


class _HostedItem(_Shape, frozen=True, kw_only=True):
    id: str | None = None
    status: ItemStatus | None = None


class _RefusalPart(_Shape, frozen=True, kw_only=True):
    refusal: str = ""


class _TextPart(_Shape, frozen=True, kw_only=True):
    text: str = ""


class _ReasoningItem(_Shape, frozen=True, kw_only=True):
    id: str | None = None
    status: ItemStatus | None = None
    summary: tuple[_TextPart, ...] | None = None
    content: tuple[_TextPart, ...] | None = None
    encrypted_content: str | None = None


class _DirectCaller(_Shape, frozen=True, kw_only=True, tag="direct", tag_field="type"):
    pass


class _ProgramCaller(_Shape, frozen=True, kw_only=True, tag="program", tag_field="type"):
    caller_id: Annotated[str, msgspec.Meta(min_length=1)]


class _CallItem(_Shape, frozen=True, kw_only=True):
    id: str | None = None
    status: ItemStatus | None = None
    call_id: str | None = None
    name: str | None = None
    arguments: str | None = None
    caller: _DirectCaller | _ProgramCaller | None = None
    namespace: str | None = None

    @property
    def program(self) -> str | None:
        """The ``call_id`` of the program that made the call, if a program did."""
        caller = self.caller
        return caller.caller_id if type(caller) is _ProgramCaller else None


class _ErrorObject(_Shape, frozen=True, kw_only=True):
    code: str | int | None = None
    message: str | None = None


class _IncompleteDetails(_Shape, frozen=True, kw_only=True):
    reason: str | None = None


class _Response(_Shape, frozen=True, kw_only=True):
    id: str | None = None
    status: ResponseStatus | None = None
    model: str | None = None
    usage: dict[str, Any] | None = None
    output: tuple[dict[str, Any], ...] | None = None
    error: _ErrorObject | None = None
    incomplete_details: _IncompleteDetails | None = None


_EMPTY_RESPONSE = _Response()
_AT_PATH = re.compile(r" - at `\$([^`]*)`$")
_S = TypeVar("_S", bound=_Shape)


def shape_error(event: str, field: str, detail: str) -> StreamError:
    """The error for a value of the wrong shape at ``field`` of ``event``."""
    return StreamError(
        f"{event} {field}: {detail}; the server's output does not follow the Responses schema "
        "and nothing was recorded",
        event=event,
        field=field,
    )


def _validation_error(event: str, where: str, err: msgspec.ValidationError) -> StreamError:
    message = str(err)
    match = _AT_PATH.search(message)
    suffix = match.group(1) if match else ""
    detail = _AT_PATH.sub("", message).replace("`", "")
    detail = detail[:1].lower() + detail[1:]
    field = f"{where}{suffix}" if where else suffix.lstrip(".") or "(root)"
    return shape_error(event, field, detail)


def _convert(value: Any, shape: type[_S], event: str, where: str) -> _S:
    try:
        return msgspec.convert(value, shape)
    except msgspec.ValidationError as err:
        raise _validation_error(event, where, err) from None


# ---------------------------------------------------------------------- slots


class _Text:
    __slots__ = (
        "annotations",
        "done",
        "finalised",
        "item_id",
        "logprobs",
        "parts",
        "phase",
        "refusal",
        "status",
    )

    def __init__(self, item: _MessageItem) -> None:
        self.item_id = item.id
        self.parts: list[str] = []
        self.refusal: list[str] = []
        self.phase = item.phase
        self.status: str | None = item.status
        self.done: str | None = None
        self.annotations: tuple[dict[str, Any], ...] = ()
        self.logprobs: tuple[dict[str, Any], ...] = ()
        self.finalised = False

    @staticmethod
    def shape(item: Any, event: str, where: str) -> _MessageItem:
        message = _convert(item, _MessageItem, event, where)
        for index, part in enumerate(message.content or ()):
            kind = part.get("type")
            if kind == "output_text":
                _convert(part, _OutputTextPart, event, f"{where}.content[{index}]")
            elif kind == "refusal":
                _convert(part, _RefusalPart, event, f"{where}.content[{index}]")
        return message

    def finalise(self, item: _MessageItem) -> None:
        texts: list[str] = []
        refusals: list[str] = []
        annotations: list[dict[str, Any]] = []
        logprobs: list[dict[str, Any]] = []
        offset = 0
        for part in item.content or ():
            kind = part.get("type")
            if kind == "output_text":
                text = part.get("text", "")
                # The parts are joined into one text: a citation's indexes count into it.
                annotations += (_shifted(a, offset) for a in part.get("annotations") or ())
                logprobs += part.get("logprobs") or ()
                texts.append(text)
                offset += len(text)
            elif kind == "refusal":
                refusals.append(part.get("refusal", ""))
        if texts or not self.parts:
            self.done = "".join(texts)
        if annotations:
            self.annotations = tuple(annotations)
        if logprobs:
            self.logprobs = tuple(logprobs)
        if refusals:
            self.refusal = [refusals[-1]]
        self.item_id = item.id if item.id is not None else self.item_id
        self.phase = item.phase if item.phase is not None else self.phase
        self.status = item.status if item.status is not None else self.status
        self.finalised = True

    def output(self, index: int, strict: bool) -> MessageOutput:
        text = self.done if self.done is not None else "".join(self.parts)
        return MessageOutput(
            output_index=index,
            item_id=self.item_id,
            text=text,
            refusal="".join(self.refusal),
            phase=self.phase,
            status=self.status,
            annotations=self.annotations,
            logprobs=self.logprobs,
        )


_INDEX_KEYS = ("start_index", "end_index", "index")


def _shifted(annotation: dict[str, Any], offset: int) -> dict[str, Any]:
    """``annotation`` with its character indexes moved by ``offset``."""
    if not offset or not any(type(annotation.get(key)) is int for key in _INDEX_KEYS):
        return annotation
    return {
        key: value + offset if key in _INDEX_KEYS and type(value) is int else value
        for key, value in annotation.items()
    }


class _Thinking:
    __slots__ = (
        "content",
        "done_content",
        "done_summary",
        "encrypted",
        "finalised",
        "item_id",
        "summary",
    )

    def __init__(self, item: _ReasoningItem) -> None:
        self.item_id = item.id
        self.summary: dict[int, list[str]] = {}
        self.content: dict[int, list[str]] = {}
        self.done_summary: tuple[str, ...] | None = None
        self.done_content: tuple[str, ...] | None = None
        self.encrypted: str | None = None
        self.finalised = False

    @staticmethod
    def shape(item: Any, event: str, where: str) -> _ReasoningItem:
        return _convert(item, _ReasoningItem, event, where)

    def finalise(self, item: _ReasoningItem) -> None:
        self.item_id = item.id if item.id is not None else self.item_id
        if item.summary is not None:
            self.done_summary = tuple(part.text for part in item.summary)
        if item.content is not None:
            self.done_content = tuple(part.text for part in item.content)
        if item.encrypted_content:
            self.encrypted = item.encrypted_content
        self.finalised = True

    def output(self, index: int, strict: bool) -> ReasoningOutput:
        summary = self.done_summary
        if summary is None:
            summary = tuple("".join(self.summary[k]) for k in sorted(self.summary))
        content = self.done_content
        if content is None:
            content = tuple("".join(self.content[k]) for k in sorted(self.content))
        return ReasoningOutput(
            output_index=index,
            item_id=self.item_id,
            summary=summary,
            content=content,
            encrypted_content=self.encrypted,
        )


class _Call:
    __slots__ = (
        "arguments",
        "call_id",
        "caller",
        "finalised",
        "item_id",
        "name",
        "namespace",
        "parts",
        "source",
        "status",
    )

    def __init__(self, item: _CallItem, source: str) -> None:
        self.item_id = item.id
        self.call_id = item.call_id or None
        self.name = item.name or ""
        self.parts: list[str] = [item.arguments] if item.arguments else []
        self.arguments: str | None = None
        self.status: str | None = item.status
        self.caller = item.program
        self.namespace = item.namespace or None
        self.source = source
        self.finalised = False

    @staticmethod
    def shape(item: Any, event: str, where: str) -> _CallItem:
        return _convert(item, _CallItem, event, where)

    def finalise(self, item: _CallItem, source: str) -> None:
        if item.arguments:
            self.arguments = item.arguments
        self.item_id = item.id if item.id is not None else self.item_id
        self.call_id = item.call_id or self.call_id
        self.name = item.name or self.name
        self.status = item.status if item.status is not None else self.status
        self.caller = item.program if item.caller is not None else self.caller
        self.namespace = item.namespace or self.namespace
        self.source = source
        self.finalised = True

    def output(self, index: int, strict: bool) -> ToolCallOutput:
        if self.call_id is None and strict:
            raise shape_error(
                self.source,
                f"output[{index}].call_id",
                "a function call needs a call_id to be answered, and none arrived",
            )
        arguments = self.arguments if self.arguments is not None else "".join(self.parts)
        return ToolCallOutput(
            output_index=index,
            item_id=self.item_id,
            call_id=self.call_id or "",
            name=self.name,
            arguments=arguments,
            status=self.status,
            caller=self.caller,
            namespace=self.namespace,
        )


class _Hosted:
    """Any other item: kept whole, as the last event that carried it gave it."""

    __slots__ = ("finalised", "item", "item_id", "kind")

    def __init__(self, kind: str, item: dict[str, Any], shaped: _HostedItem) -> None:
        self.kind = kind
        self.item = item
        self.item_id = shaped.id
        self.finalised = False

    def finalise(self, item: dict[str, Any], shaped: _HostedItem) -> None:
        self.item = item
        self.item_id = shaped.id if shaped.id is not None else self.item_id
        self.finalised = True

    def output(self, index: int, strict: bool) -> HostedOutput:
        return HostedOutput(
            output_index=index, item_id=self.item_id, type=self.kind, item=self.item
        )


_Slot = _Text | _Thinking | _Call | _Hosted
_KINDS: dict[str, type[_Text] | type[_Thinking] | type[_Call]] = {
    "message": _Text,
    "reasoning": _Thinking,
    "function_call": _Call,
}
_DELTAS = frozenset(
    {
        "response.output_text.delta",
        "response.refusal.delta",
        "response.reasoning_summary_text.delta",
        "response.reasoning_text.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
    }
)
_TERMINAL_EVENTS = {
    ResponseCompleted: "response.completed",
    ResponseIncomplete: "response.incomplete",
    ResponseFailed: "response.failed",
}


def _comparable(output: Output) -> tuple[Any, ...]:
    """What a terminal copy must agree on with the streamed item (never encrypted_content)."""
    if isinstance(output, MessageOutput):
        return ("message", output.item_id, output.text, output.refusal)
    if isinstance(output, ReasoningOutput):
        return ("reasoning", output.item_id, output.summary)
    if isinstance(output, HostedOutput):
        return (output.type, output.item_id)
    return (
        "function_call",
        output.item_id,
        output.call_id,
        output.name,
        output.arguments,
        output.caller,
        output.namespace,
    )


class ResponseAccumulator:
    """Feeds on decoded events; yields a :class:`Generation` per finished response.

    :raises turnwire.errors.StreamError: from :meth:`feed` and :meth:`close`, when a value has
        a shape the Responses schema does not allow (the message names the event and field).
    """

    def __init__(self) -> None:
        self._reset()
        self._handlers: dict[type, Any] = {
            TextDelta: self._text_delta,
            RefusalDelta: self._refusal_delta,
            ReasoningSummaryTextDelta: self._summary_delta,
            ReasoningTextDelta: self._reasoning_delta,
            FunctionCallArgumentsDelta: self._arguments_delta,
            FunctionCallArgumentsDone: self._arguments_done,
            OutputItemAdded: self._added,
            OutputItemDone: self._done,
            ResponseCreated: self._created,
            ResponseInProgress: self._progress,
            ResponseQueued: self._progress,
            ResponseCompleted: self._finished,
            ResponseIncomplete: self._finished,
            ResponseFailed: self._failed,
            ErrorEvent: self._error,
            UnknownEvent: self._unknown,
        }

    def _reset(self) -> None:
        self._slots: dict[int, _Slot] = {}
        self._text: dict[int, _Text] = {}
        self._thinking: dict[int, _Thinking] = {}
        self._calls: dict[int, _Call] = {}
        self._hosted: dict[int, str] = {}
        self._response: dict[str, Any] = {}
        self._shape = _EMPTY_RESPONSE
        self._started = False
        self._last_sequence: int | None = None
        self._gaps = 0
        self._after_error = False
        self._from_terminal: tuple[int, ...] = ()

    # ------------------------------------------------------------------ hot path

    def feed(self, events: Iterable[StreamEvent | UnknownEvent]) -> list[Generation]:
        """Apply ``events``; return the responses they finished (usually none or one)."""
        finished: list[Generation] = []
        handlers = self._handlers
        for event in events:
            sequence = event.sequence_number
            if sequence is not None:
                last = self._last_sequence
                if last is not None and sequence != last + 1 and type(event) is not ResponseCreated:
                    self._gaps += 1
                    logger.debug(
                        "sequence_number jumped from %s to %s",
                        last,
                        sequence,
                        extra={"kind": "sse-sequence-gap"},
                    )
                self._last_sequence = sequence
            if type(event) is TextDelta:  # most events: a delta to an open message, inline
                slot = self._text.get(event.output_index)
                if slot is not None:
                    slot.parts.append(event.delta)
                    continue
            generation = handlers[type(event)](event)
            if generation is not None:
                finished.append(generation)
        return finished

    def _implied_text(self, index: int, item_id: str | None = None) -> _Text | None:
        slot = self._text.get(index)
        if slot is None and index not in self._slots and index not in self._hosted:
            opened = self._open(index, "message", _MessageItem(id=item_id), "")
            assert isinstance(opened, _Text)
            return opened
        return slot

    def _text_delta(self, event: TextDelta) -> None:
        slot = self._implied_text(event.output_index, event.item_id)
        if slot is not None:
            slot.parts.append(event.delta)

    def _refusal_delta(self, event: RefusalDelta) -> None:
        slot = self._implied_text(event.output_index)
        if slot is not None:
            slot.refusal.append(event.delta)

    def _implied_thinking(self, index: int) -> _Thinking | None:
        slot = self._thinking.get(index)
        if slot is None and index not in self._slots and index not in self._hosted:
            opened = self._open(index, "reasoning", _ReasoningItem(), "")
            assert isinstance(opened, _Thinking)
            return opened
        return slot

    def _summary_delta(self, event: ReasoningSummaryTextDelta) -> None:
        slot = self._implied_thinking(event.output_index)
        if slot is not None:
            slot.summary.setdefault(event.summary_index, []).append(event.delta)

    def _reasoning_delta(self, event: ReasoningTextDelta) -> None:
        slot = self._implied_thinking(event.output_index)
        if slot is not None:
            slot.content.setdefault(event.content_index, []).append(event.delta)

    def _implied_call(self, index: int, source: str) -> _Call | None:
        slot = self._calls.get(index)
        if slot is None and index not in self._slots and index not in self._hosted:
            opened = self._open(index, "function_call", _CallItem(), source)
            assert isinstance(opened, _Call)
            return opened
        return slot

    def _arguments_delta(self, event: FunctionCallArgumentsDelta) -> None:
        slot = self._implied_call(event.output_index, "response.function_call_arguments.delta")
        if slot is not None:
            slot.parts.append(event.delta)

    def _arguments_done(self, event: FunctionCallArgumentsDone) -> None:
        slot = self._implied_call(event.output_index, "response.function_call_arguments.done")
        if slot is not None:
            slot.arguments = event.arguments

    # ------------------------------------------------------------------ items

    def _open(self, index: int, kind: str, shaped: Any, source: str) -> _Slot:
        slot: _Slot
        if kind == "message":
            slot = self._text[index] = _Text(shaped)
        elif kind == "reasoning":
            slot = self._thinking[index] = _Thinking(shaped)
        elif kind == "function_call":
            slot = self._calls[index] = _Call(shaped, source)
        else:
            slot = _Hosted(kind, *shaped)
            self._hosted[index] = kind
        self._slots[index] = slot
        return slot

    def _item(self, item: Any, event: str, where: str) -> tuple[str, Any]:
        """``(type, validated item)``; for a hosted type, ``(item, its checked id and
        status)``."""
        kind = _convert(item, _AnyItem, event, where).type
        slot_type = _KINDS.get(kind)
        if slot_type is None:
            return kind, (item, _convert(item, _HostedItem, event, where))
        return kind, slot_type.shape(item, event, where)

    def _added(self, event: OutputItemAdded) -> None:
        self._started = True
        index = event.output_index
        kind, shaped = self._item(event.item, "response.output_item.added", f"output[{index}]")
        self._open(index, kind, shaped, "response.output_item.added")

    def _done(self, event: OutputItemDone) -> None:
        self._started = True
        index = event.output_index
        kind, shaped = self._item(event.item, "response.output_item.done", f"output[{index}]")
        self._finalise(index, kind, shaped, "response.output_item.done")

    def _finalise(self, index: int, kind: str, shaped: Any, source: str) -> None:
        slot = self._slots.get(index)
        slot_type = _KINDS.get(kind, _Hosted)
        if slot is None or type(slot) is not slot_type:
            if slot is not None and _Hosted in (slot_type, type(slot)):
                return  # a hosted item and a slot item never replace each other
            slot = self._open(index, kind, shaped, source)
        if isinstance(slot, _Call):
            slot.finalise(shaped, source)
        elif isinstance(slot, _Hosted):
            slot.kind = self._hosted[index] = kind
            slot.finalise(*shaped)
        else:
            slot.finalise(shaped)

    # ------------------------------------------------------------------ lifecycle

    def _shaped_response(self, response: dict[str, Any], event: str) -> _Response:
        return _convert(response, _Response, event, "response")

    def _created(self, event: ResponseCreated) -> Generation | None:
        shape = self._shaped_response(event.response, "response.created")
        finished = None
        if self._started:  # a new response without a terminal event for the previous one
            finished = self._generation("eof")
        self._reset()
        self._started = True
        self._response = event.response
        self._shape = shape
        self._last_sequence = event.sequence_number
        return finished

    def _progress(self, event: ResponseInProgress | ResponseQueued) -> None:
        name = "response.queued" if isinstance(event, ResponseQueued) else "response.in_progress"
        merged = {**self._response, **event.response}
        self._shape = self._shaped_response(merged, name)
        self._started = True
        self._response = merged

    def _finished(self, event: ResponseCompleted | ResponseIncomplete) -> Generation:
        name = _TERMINAL_EVENTS[type(event)]
        self._shape = self._shaped_response(event.response, name)
        self._response = event.response
        self._reconcile(self._shape.output, name)
        terminal: Terminal = "completed" if isinstance(event, ResponseCompleted) else "incomplete"
        return self._close_with(terminal)

    def _reconcile(self, output: tuple[dict[str, Any], ...] | None, event: str) -> None:
        """Fill what no ``output_item.done`` finalised from the terminal ``output``; log where
        the terminal copy disagrees with a streamed item; backfill ``encrypted_content``."""
        if output is None:
            return
        checked = [self._item(item, event, f"output[{index}]") for index, item in enumerate(output)]
        streamed = {index for index, slot in self._slots.items() if slot.finalised}
        built: list[int] = []
        disagree: list[str] = []
        for index, (kind, shaped) in enumerate(checked):
            slot = self._slots.get(index)
            slot_type = _KINDS.get(kind, _Hosted)
            if index in streamed:
                assert slot is not None
                if slot_type is not type(slot):
                    disagree.append(f"output[{index}] is {kind} there")
                    continue
                if isinstance(slot, _Thinking) and slot.encrypted is None:
                    slot.encrypted = shaped.encrypted_content or None
                mine = _comparable(slot.output(index, strict=False))
                theirs = _comparable(self._copy(kind, shaped, event).output(index, strict=False))
                if mine != theirs:
                    disagree.append(f"output[{index}] ({kind}) differs")
                continue
            if (
                slot is not None
                and _Hosted in (slot_type, type(slot))
                and slot_type is not type(slot)
            ):
                disagree.append(f"output[{index}] is {kind} there")
                continue
            self._finalise(index, kind, shaped, event)
            built.append(index)
        extra = sorted(set(self._slots) - set(range(len(output))))
        disagree += [f"output[{index}] is missing there" for index in extra]
        if built:
            self._from_terminal = tuple(built)
            logger.warning(
                "the stream finished %s without output_item.done; built from the %s output",
                ", ".join(f"output[{index}]" for index in built),
                event,
                extra={"kind": "output-from-terminal-response"},
            )
        if disagree:
            logger.warning(
                "the %s output disagrees with the streamed items (%s); keeping the streamed ones",
                event,
                "; ".join(disagree),
                extra={"kind": "terminal-output-mismatch"},
            )

    @staticmethod
    def _copy(kind: str, shaped: Any, event: str) -> _Slot:
        slot: _Slot
        if kind == "message":
            slot = _Text(shaped)
            slot.finalise(shaped)
        elif kind == "reasoning":
            slot = _Thinking(shaped)
            slot.finalise(shaped)
        elif kind == "function_call":
            slot = _Call(shaped, event)
            slot.finalise(shaped, event)
        else:
            slot = _Hosted(kind, *shaped)
            slot.finalise(*shaped)
        return slot

    def _failed(self, event: ResponseFailed) -> Generation | None:
        shape = self._shaped_response(event.response, "response.failed")
        if self._after_error:  # the failure that follows an `error` event: already reported
            self._after_error = False
            return None
        self._response = event.response
        self._shape = shape
        error = shape.error or _ErrorObject()
        code = None if error.code is None else str(error.code)
        return self._close_with(
            "failed", code, error.message or "the response failed", strict=False
        )

    def _error(self, event: ErrorEvent) -> Generation:
        code, message = event.detail
        generation = self._close_with("error", code, message, strict=False)
        self._after_error = True
        return generation

    def _unknown(self, event: UnknownEvent) -> None:
        if event.invalid is not None:  # a type turnwire acts on, in a shape it cannot read
            match = _AT_PATH.search(event.invalid)
            field = (match.group(1).lstrip(".") if match else "") or "(root)"
            detail = _AT_PATH.sub("", event.invalid).replace("`", "")
            detail = detail[:1].lower() + detail[1:]
            if event.type in _DELTAS:
                # The finished item (or the terminal response) carries the whole value.
                logger.warning(
                    "skipping a %s event: %s: %s",
                    event.type,
                    field,
                    detail,
                    extra={"kind": "sse-invalid-event"},
                )
                return
            raise shape_error(event.type, field, detail)
        self._started = True

    def _close_with(
        self,
        terminal: Terminal,
        code: str | None = None,
        message: str | None = None,
        *,
        strict: bool = True,
    ) -> Generation:
        generation = self._generation(terminal, code, message, strict=strict)
        self._reset()
        return generation

    def _generation(
        self,
        terminal: Terminal,
        code: str | None = None,
        message: str | None = None,
        *,
        strict: bool = True,
    ) -> Generation:
        shape = self._shape
        details = shape.incomplete_details
        outputs = tuple(
            self._slots[index].output(index, strict)
            for index in sorted(self._slots)
            if self._kept(index)
        )
        return Generation(
            terminal=terminal,
            response_id=shape.id,
            status=shape.status,
            model=shape.model,
            usage=shape.usage,
            incomplete_reason=details.reason if details is not None else None,
            error_code=code,
            error_message=message,
            outputs=outputs,
            hosted=tuple(self._hosted[index] for index in sorted(self._hosted)),
            sequence_gaps=self._gaps,
            from_terminal=self._from_terminal,
        )

    def _kept(self, index: int) -> bool:
        """False for a hosted slot that no ``output_item.done`` (nor the terminal response)
        finalised: the item as opened (``status: in_progress``, no ``action``) is not one the
        API takes back as input, so it is dropped (warning kind ``unfinished-hosted-item``)."""
        slot = self._slots[index]
        if not isinstance(slot, _Hosted) or slot.finalised:
            return True
        logger.warning(
            "dropping output[%d] (%s): the stream ended before the item was finished",
            index,
            slot.kind,
            extra={"kind": "unfinished-hosted-item"},
        )
        return False

    def close(self) -> Generation | None:
        """End of stream: the response still open, drained as ``eof`` (``None`` if nothing)."""
        if not self._started and not self._slots:
            return None
        generation = self._generation("eof")
        self._reset()
        return generation

    def partial(self) -> Generation:
        """What has arrived so far (for a stalled stream's error; never persisted)."""
        return self._generation("eof", strict=False)


def generation_from_response(response: object) -> Generation:
    """A non-streamed response object as a :class:`Generation`.

    :raises turnwire.errors.StreamError: the answer is not a response object, or one of its
        values has a shape the Responses schema does not allow.
    """
    if not isinstance(response, dict):
        kind = "null" if response is None else type(response).__name__
        raise shape_error("response", "(root)", f"expected a response object, got {kind}")
    accumulator = ResponseAccumulator()
    shape = accumulator._shaped_response(response, "response")
    accumulator._response = response
    accumulator._shape = shape
    accumulator._started = True
    for index, item in enumerate(shape.output or ()):
        kind, shaped = accumulator._item(item, "response", f"output[{index}]")
        accumulator._finalise(index, kind, shaped, "response")
    status = shape.status
    if status == "failed" or shape.error is not None:
        error = shape.error or _ErrorObject()
        code = None if error.code is None else str(error.code)
        return accumulator._close_with(
            "failed", code, error.message or f"response {status}", strict=False
        )
    terminal: Terminal = "incomplete" if status == "incomplete" else "completed"
    return accumulator._close_with(terminal)
