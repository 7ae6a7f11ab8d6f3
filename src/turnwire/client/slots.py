"""Output slots: the state machine that turns stream events into one finished generation.

Slots are keyed by ``output_index``. A ``message`` item opens a text slot, ``reasoning`` a
thinking slot, ``function_call`` a tool-call slot; any other item type (hosted tools: web
search, code interpreter, MCP, tool search...) opens none and is only noted. Deltas append;
``response.function_call_arguments.done`` replaces the arguments; ``output_item.done``
finalises a slot from the complete item, and is the only place ``encrypted_content`` is
captured (it is re-encrypted at every emission; the ``.done`` value is the one to keep), with a
backfill from the terminal response for an item whose ``.done`` lacked it.

A response ends at ``response.completed``, ``response.incomplete``, ``response.failed`` or an
``error`` event, or at end of stream (:meth:`ResponseAccumulator.close`, which drains what
arrived). Several responses may follow each other on one stream; each ``response.created``
starts a new one.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any, Literal

import msgspec

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
    "MessageOutput",
    "Output",
    "ReasoningOutput",
    "ResponseAccumulator",
    "Terminal",
    "ToolCallOutput",
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


Output = MessageOutput | ReasoningOutput | ToolCallOutput


class Generation(msgspec.Struct, frozen=True, kw_only=True):
    """One response as it was received.

    :ivar terminal: how it ended; ``eof`` means the stream closed without a terminal event.
    :ivar outputs: the slots in ``output_index`` order.
    :ivar hosted: the types of output items that opened no slot (hosted tools).
    :ivar sequence_gaps: how many times ``sequence_number`` skipped.
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
    def text(self) -> str:
        return "".join(m.refusal or m.text for m in self.messages)


class _Text:
    __slots__ = ("done", "item_id", "parts", "phase", "refusal", "status")

    def __init__(self, item: dict[str, Any]) -> None:
        self.item_id: str | None = item.get("id")
        self.parts: list[str] = []
        self.refusal: list[str] = []
        self.phase: str | None = item.get("phase")
        self.status: str | None = item.get("status")
        self.done: str | None = None

    def finalise(self, item: dict[str, Any]) -> None:
        texts, refusals = [], []
        for part in item.get("content") or ():
            if part.get("type") == "output_text":
                texts.append(part.get("text", ""))
            elif part.get("type") == "refusal":
                refusals.append(part.get("refusal", ""))
        if texts or not self.parts:
            self.done = "".join(texts)
        if refusals:
            self.refusal = [refusals[-1]]
        self.item_id = item.get("id", self.item_id)
        self.phase = item.get("phase", self.phase)
        self.status = item.get("status", self.status)

    def output(self, index: int) -> MessageOutput:
        text = self.done if self.done is not None else "".join(self.parts)
        return MessageOutput(
            output_index=index,
            item_id=self.item_id,
            text=text,
            refusal="".join(self.refusal),
            phase=self.phase,
            status=self.status,
        )


class _Thinking:
    __slots__ = ("content", "done_content", "done_summary", "encrypted", "item_id", "summary")

    def __init__(self, item: dict[str, Any]) -> None:
        self.item_id: str | None = item.get("id")
        self.summary: dict[int, list[str]] = {}
        self.content: dict[int, list[str]] = {}
        self.done_summary: tuple[str, ...] | None = None
        self.done_content: tuple[str, ...] | None = None
        self.encrypted: str | None = None

    def finalise(self, item: dict[str, Any]) -> None:
        self.item_id = item.get("id", self.item_id)
        summary = item.get("summary")
        if summary is not None:
            self.done_summary = tuple(p.get("text", "") for p in summary)
        content = item.get("content")
        if content is not None:
            self.done_content = tuple(p.get("text", "") for p in content)
        if item.get("encrypted_content"):
            self.encrypted = item["encrypted_content"]

    def output(self, index: int) -> ReasoningOutput:
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
    __slots__ = ("arguments", "call_id", "item_id", "name", "parts", "status")

    def __init__(self, item: dict[str, Any], index: int) -> None:
        self.item_id: str | None = item.get("id")
        self.call_id: str = item.get("call_id") or f"idx-{index}"
        self.name: str = item.get("name") or ""
        self.parts: list[str] = [item["arguments"]] if item.get("arguments") else []
        self.arguments: str | None = None
        self.status: str | None = item.get("status")

    def finalise(self, item: dict[str, Any]) -> None:
        if item.get("arguments"):
            self.arguments = item["arguments"]
        self.item_id = item.get("id", self.item_id)
        self.call_id = item.get("call_id") or self.call_id
        self.name = item.get("name") or self.name
        self.status = item.get("status", self.status)

    def output(self, index: int) -> ToolCallOutput:
        arguments = self.arguments if self.arguments is not None else "".join(self.parts)
        return ToolCallOutput(
            output_index=index,
            item_id=self.item_id,
            call_id=self.call_id,
            name=self.name,
            arguments=arguments,
            status=self.status,
        )


_Slot = _Text | _Thinking | _Call


class ResponseAccumulator:
    """Feeds on decoded events; yields a :class:`Generation` per finished response."""

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
        self._hosted: list[str] = []
        self._response: dict[str, Any] = {}
        self._started = False
        self._last_sequence: int | None = None
        self._gaps = 0
        self._after_error = False

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
            generation = handlers[type(event)](event)
            if generation is not None:
                finished.append(generation)
        return finished

    def _text_delta(self, event: TextDelta) -> None:
        slot = self._text.get(event.output_index)
        if slot is not None:
            slot.parts.append(event.delta)

    def _refusal_delta(self, event: RefusalDelta) -> None:
        slot = self._text.get(event.output_index)
        if slot is not None:
            slot.refusal.append(event.delta)

    def _summary_delta(self, event: ReasoningSummaryTextDelta) -> None:
        slot = self._thinking.get(event.output_index)
        if slot is not None:
            slot.summary.setdefault(event.summary_index, []).append(event.delta)

    def _reasoning_delta(self, event: ReasoningTextDelta) -> None:
        slot = self._thinking.get(event.output_index)
        if slot is not None:
            slot.content.setdefault(event.content_index, []).append(event.delta)

    def _arguments_delta(self, event: FunctionCallArgumentsDelta) -> None:
        slot = self._calls.get(event.output_index)
        if slot is not None:
            slot.parts.append(event.delta)

    def _arguments_done(self, event: FunctionCallArgumentsDone) -> None:
        slot = self._calls.get(event.output_index)
        if slot is not None:
            slot.arguments = event.arguments

    # ------------------------------------------------------------------ items

    def _added(self, event: OutputItemAdded) -> None:
        self._started = True
        index, item = event.output_index, event.item
        kind = item.get("type")
        slot: _Slot
        if kind == "message":
            slot = self._text[index] = _Text(item)
        elif kind == "reasoning":
            slot = self._thinking[index] = _Thinking(item)
        elif kind == "function_call":
            slot = self._calls[index] = _Call(item, index)
        else:
            self._hosted.append(str(kind))
            logger.debug(
                "no slot for output item type %r at index %d",
                kind,
                index,
                extra={"kind": "unhandled-output-item"},
            )
            return
        self._slots[index] = slot

    def _done(self, event: OutputItemDone) -> None:
        slot = self._slots.get(event.output_index)
        if slot is not None:
            slot.finalise(event.item)

    # ------------------------------------------------------------------ lifecycle

    def _created(self, event: ResponseCreated) -> Generation | None:
        finished = None
        if self._started:  # a new response without a terminal event for the previous one
            finished = self._generation("eof")
        self._reset()
        self._started = True
        self._response = event.response
        self._last_sequence = event.sequence_number
        return finished

    def _progress(self, event: ResponseInProgress | ResponseQueued) -> None:
        self._started = True
        self._response = {**self._response, **event.response}

    def _finished(self, event: ResponseCompleted | ResponseIncomplete) -> Generation:
        self._response = event.response
        output = event.response.get("output") or []
        for index, slot in self._thinking.items():
            if slot.encrypted is None and index < len(output) and isinstance(output[index], dict):
                backfill = output[index].get("encrypted_content")
                if backfill and output[index].get("type") == "reasoning":
                    slot.encrypted = backfill
        terminal: Terminal = "completed" if isinstance(event, ResponseCompleted) else "incomplete"
        return self._close_with(terminal)

    def _failed(self, event: ResponseFailed) -> Generation | None:
        if self._after_error:  # the failure that follows an `error` event: already reported
            self._after_error = False
            return None
        self._response = event.response
        error = event.response.get("error") or {}
        return self._close_with(
            "failed", error.get("code"), error.get("message") or "the response failed"
        )

    def _error(self, event: ErrorEvent) -> Generation:
        code, message = event.detail
        generation = self._close_with("error", code, message)
        self._after_error = True
        return generation

    def _unknown(self, event: UnknownEvent) -> None:
        self._started = True

    def _close_with(
        self, terminal: Terminal, code: str | None = None, message: str | None = None
    ) -> Generation:
        generation = self._generation(terminal, code, message)
        self._reset()
        return generation

    def _generation(
        self, terminal: Terminal, code: str | None = None, message: str | None = None
    ) -> Generation:
        response = self._response
        details = response.get("incomplete_details") or {}
        outputs = tuple(self._slots[index].output(index) for index in sorted(self._slots))
        return Generation(
            terminal=terminal,
            response_id=response.get("id"),
            status=response.get("status"),
            model=response.get("model"),
            usage=response.get("usage"),
            incomplete_reason=details.get("reason"),
            error_code=code,
            error_message=message,
            outputs=outputs,
            hosted=tuple(self._hosted),
            sequence_gaps=self._gaps,
        )

    def close(self) -> Generation | None:
        """End of stream: the response still open, drained as ``eof`` (``None`` if nothing)."""
        if not self._started and not self._slots:
            return None
        generation = self._generation("eof")
        self._reset()
        return generation

    def partial(self) -> Generation:
        """What has arrived so far (for a stalled stream's error; never persisted)."""
        return self._generation("eof")


def generation_from_response(response: dict[str, Any]) -> Generation:
    """A non-streamed response object as a :class:`Generation`."""
    accumulator = ResponseAccumulator()
    accumulator._response = response
    accumulator._started = True
    for index, item in enumerate(response.get("output") or []):
        if not isinstance(item, dict):
            continue
        accumulator._added(OutputItemAdded(output_index=index, item=item))
        accumulator._done(OutputItemDone(output_index=index, item=item))
    status = response.get("status")
    if status == "failed" or response.get("error"):
        error = response.get("error") or {}
        return accumulator._close_with(
            "failed", error.get("code"), error.get("message") or f"response {status}"
        )
    terminal: Terminal = "incomplete" if status == "incomplete" else "completed"
    return accumulator._close_with(terminal)
