"""The output-slot state machine: a response's stream events in, a
:class:`~turnwire.wire.response.Generation` out.

:class:`ResponseAccumulator` keeps one slot per output item as events arrive (text deltas,
reasoning, calls and their arguments, hosted items) and closes each at its ``done`` event;
:func:`generation_from_response` reads a whole (non-streamed) response the same way. Pure: no
I/O, so a container can provide another accumulator of the same shape.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from turnwire.wire.events import (
    ErrorEvent,
    FunctionCallArgumentsDelta,
    FunctionCallArgumentsDone,
    ImagePartial,
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
from turnwire.wire.response import (
    _AT_PATH,
    _EMPTY_RESPONSE,
    Generation,
    HostedOutput,
    MessageOutput,
    Output,
    ReasoningOutput,
    Terminal,
    _AnyItem,
    _CallItem,
    _convert,
    _ErrorObject,
    _HostedItem,
    _MessageItem,
    _ReasoningItem,
    _Response,
    shape_error,
)
from turnwire.wire.slots import _Call, _Hosted, _Slot, _Text, _Thinking

logger = logging.getLogger("turnwire")


__all__ = ["ResponseAccumulator", "generation_from_response"]


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
        "response.image_generation_call.partial_image",
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
            ImagePartial: self._preview,
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
        one = self.feed_one
        for event in events:
            generation = one(event)
            if generation is not None:
                finished.append(generation)
        return finished

    def feed_one(self, event: StreamEvent | UnknownEvent) -> Generation | None:
        """Apply one event; return the response it finished, if it finished one (what
        :meth:`feed` returns for ``[event]``, as its one element)."""
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
                return None
        generation: Generation | None = self._handlers[type(event)](event)
        return generation

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
            finished = self._generation("eof", strict=False)
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

    def _preview(self, event: ImagePartial) -> None:
        # A preview for observers: the finished item carries the image.
        self._started = True

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
        """End of stream: the response still open, as ``eof`` (``None`` if nothing arrived).
        A response without its terminal event is no answer: what it holds is for inspection,
        never persisted, so an item that could not be answered (a call without its
        ``call_id``) is kept as it is."""
        if not self._started and not self._slots:
            return None
        generation = self._generation("eof", strict=False)
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
