"""Stream reading: an answer into a :class:`~turnwire.wire.response.Generation`.

An event stream is decoded (:class:`~turnwire.client.sse.SSEDecoder`, then the wire events)
and fed to the container's response accumulator, each event reported as progress; an answer
that is one response object is decoded whole. An answer is finished only when the server says
so (``response.completed``, ``response.incomplete`` or ``response.failed``): a stream that ends
or drops before that, or a stall, raises with the partial answer attached and nothing of it is
recorded; a failed or cancelled response is a :class:`~turnwire.errors.StreamError`
(:func:`raise_unless_answered`).

The client's per-event path is :func:`read_stream`: per chunk, :meth:`SSEDecoder.feed_data
<turnwire.client.sse.SSEDecoder.feed_data>` and one :meth:`ResponseAccumulator.feed
<turnwire.wire.accumulator.ResponseAccumulator.feed>`, or, for a chunk that is one whole event
(what a live server flushes), :meth:`SSEDecoder.feed_one <turnwire.client.sse.SSEDecoder.feed_one>`
and :meth:`ResponseAccumulator.feed_one <turnwire.wire.accumulator.ResponseAccumulator.feed_one>`
(the same steps, without a list or loop per chunk); per event,
:data:`~turnwire.wire.events.decode_typed` (:func:`~turnwire.wire.events.decode_refused`,
what :func:`~turnwire.wire.events.decode_event` answers, for what it refuses);
:func:`decoded_cost` only for an event that retains its data or is longer than
:func:`unmeasured_size`; :func:`~turnwire.client.progress.from_wire` and the run's observer
only when the run has one (:attr:`Run.observer <turnwire.client._run.Run.observer>`).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterable
from typing import Any, get_args

import msgspec

from turnwire._redact import redact
from turnwire.client.progress import ItemDoneEvent, ProgressEvent, from_wire
from turnwire.client.sse import SSEDecoder
from turnwire.client.transport import Transport
from turnwire.errors import AnswerTooLargeError, StreamError, StreamStalledError
from turnwire.rendering.body import EncodedBody
from turnwire.wire.accumulator import ResponseAccumulator, generation_from_response
from turnwire.wire.events import (
    ErrorEvent,
    OutputItemAdded,
    OutputItemDone,
    ResponseLifecycle,
    StreamEvent,
    TextDelta,
    UnknownEvent,
    decode_event,
    decode_refused,
    decode_typed,
)
from turnwire.wire.response import (
    Generation,
    HostedOutput,
    MessageOutput,
    ReasoningOutput,
    ToolCallOutput,
)

__all__ = [
    "decoded_answer",
    "finish_reason",
    "raise_unless_answered",
    "read_answer",
    "read_stream",
    "unfinished",
]

logger = logging.getLogger("turnwire")


def finish_reason(generation: Generation) -> str:
    """``stop``, ``tool_calls``, ``length``, ``content_filter`` or ``error`` (a response that
    failed, or never finished: ``eof``)."""
    terminal = generation.terminal
    if terminal == "eof":
        return "error"
    if terminal == "completed" and generation.status != "incomplete":
        return "tool_calls" if generation.tool_calls else "stop"
    if terminal == "incomplete" or generation.status == "incomplete":
        return "content_filter" if generation.incomplete_reason == "content_filter" else "length"
    return "error"


_ITEM_TYPES = {
    MessageOutput: "message",
    ReasoningOutput: "reasoning",
    ToolCallOutput: "function_call",
}

_ANSWERLESS = {"failed": "failed", "cancelled": "was cancelled"}


def raise_unless_answered(generation: Generation) -> None:
    """A failed, errored or cancelled response is a stream error, and so is one that never
    finished (``eof``): nothing of it is recorded (``incomplete`` is an answer, cut short: its
    finish reason says why)."""
    if generation.terminal == "eof":
        raise unfinished(generation)
    status = generation.status
    if generation.terminal in ("failed", "error") or status in _ANSWERLESS:
        what = _ANSWERLESS.get(status or "", generation.terminal)
        logger.warning(
            "the response %s; nothing of it is recorded",
            what,
            extra={"kind": "stream-error", "error_code": generation.error_code},
        )
        raise StreamError(
            generation.error_message or f"the response {what}; nothing was recorded",
            error_code=generation.error_code or ("cancelled" if status == "cancelled" else None),
        )


_UNFINISHED = (
    "{why} before the response finished (no response.completed, response.incomplete or "
    "response.failed event); nothing of it was recorded (the output that arrived is on the "
    "error's `partial`)"
)


def unfinished(partial: Generation, why: str = "the stream ended") -> StreamError:
    """The :class:`StreamError` of a response that never finished, ``partial`` attached:
    a complete Responses stream always ends with a terminal event, so what arrived before the
    end is no answer (the official SDK refuses it too), and no call in it may run."""
    logger.warning(
        "%s without a terminal event; nothing of it is recorded",
        why,
        extra={"kind": "sse-eof-without-terminal-event"},
    )
    return StreamError(_UNFINISHED.format(why=why), partial=partial)


def decoded_answer(raw: bytes, what: str) -> Any:
    """A JSON answer's value; a :class:`StreamError` saying it is not ``what`` otherwise."""
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError as err:
        raise StreamError(f"the answer is not {what}: {err}") from err
    except RecursionError:
        raise StreamError("the answer is nested too deeply to read") from None


async def read_answer(
    transport: Transport,
    container: Any,
    body: bytes | EncodedBody,
    stream: bool,
    on_text: Callable[[str], None] | None,
    *,
    emit: Callable[[ProgressEvent], None] | None,
) -> Generation:
    """POST ``body`` and read the answer: an event stream, or one response object (when the
    request did not stream, or the server answered with JSON), each event reported to
    ``emit`` (``None``: nobody listens)."""
    async with transport.exchange(body, stream=stream) as answer:
        if answer.is_event_stream:  # the transport's decision, its size limit with it
            generation = await read_stream(
                answer.chunks,
                on_text,
                container=container,
                emit=emit,
                max_decoded=transport.max_stream_bytes * DECODED_BUDGET,
            )
        else:
            raw = b"".join([chunk async for chunk in answer.chunks])
            decoded = decoded_answer(raw, "a response object")
            generation = generation_from_response(decoded)
            if emit is not None:
                for output in generation.outputs:
                    emit(
                        ItemDoneEvent(
                            output_index=output.output_index,
                            item_type=output.type
                            if isinstance(output, HostedOutput)
                            else _ITEM_TYPES[type(output)],
                            item_id=output.item_id,
                        )
                    )
    return generation


# The items and responses an answer's events carry are kept whole until it ends, and decoded
# they can cost far more than their bytes: ``[]`` or ``{}`` is 2 bytes on the wire and some 60
# in memory, a 900-deep ``[[[...]]]`` 1,800 bytes with no comma. So, besides its bytes, an
# answer is held to an estimate of what they decode to: CONTAINER_COST bytes for each ``[`` or
# ``{`` and VALUE_COST for each value, key or element (each ``,`` or ``:``), DECODED_BUDGET
# times max_stream_bytes in all, and in any one event. An upper bound (the characters inside
# strings count too); a delta event's fields are not kept (only its text, which the byte limit
# bounds), so deltas count only against the one-event bound.
CONTAINER_COST = 64
VALUE_COST = 48
DECODED_BUDGET = 4
_RETAINING = (OutputItemAdded, OutputItemDone, ResponseLifecycle, ErrorEvent)
# The event types decode_event returns that are _RETAINING, for one set lookup per event.
_RETAINED = frozenset(kind for kind in get_args(StreamEvent) if issubclass(kind, _RETAINING))


def decoded_cost(data: bytes) -> int:
    """The estimate of what ``data``'s JSON costs once decoded, in bytes (an upper bound)."""
    containers = data.count(b"[") + data.count(b"{")
    return CONTAINER_COST * containers + VALUE_COST * (data.count(b",") + data.count(b":") + 1)


def cost_ceiling(size: int) -> int:
    """The most :func:`decoded_cost` gives for ``size`` bytes of data: every byte a ``[`` or
    ``{`` (the dearer of the two kinds it counts), plus the one value."""
    return max(CONTAINER_COST, VALUE_COST) * size + VALUE_COST


def unmeasured_size(limit: int) -> int:
    """The most bytes an event may have and still be sure to cost at most ``limit``
    (:func:`cost_ceiling`): only a longer one is measured against the one-event bound."""
    return max(-1, (limit - VALUE_COST) // max(CONTAINER_COST, VALUE_COST))


def _too_many(limit: int) -> AnswerTooLargeError:
    return AnswerTooLargeError(
        limit=limit,
        setting=f"its items and responses decoded, {DECODED_BUDGET} x client.max_stream_bytes",
        unit="bytes once decoded",
    )


async def read_stream(
    chunks: Any,
    on_text: Callable[[str], None] | None,
    *,
    container: Any,
    emit: Callable[[ProgressEvent], None] | None,
    max_decoded: int | None = None,
) -> Generation:
    """An SSE stream into the :class:`~turnwire.wire.response.Generation` its events build
    (through the container's response accumulator), each event reported to ``emit``.

    Per event, the work is the decoder's (:meth:`SSEDecoder.feed_data
    <turnwire.client.sse.SSEDecoder.feed_data>`, or its ``feed_one`` for a chunk that is one
    whole event; :func:`~turnwire.wire.events.decode_event`) and the accumulator's
    (:meth:`ResponseAccumulator.feed <turnwire.wire.accumulator.ResponseAccumulator.feed>`, or
    its ``feed_one`` for such a chunk when ``feed`` is that class's), plus: :func:`decoded_cost`
    only for an event that retains its data (an item or a response) or is longer than
    :func:`unmeasured_size` of ``max_decoded``; :func:`~turnwire.client.progress.from_wire` only
    when ``emit`` is given.

    :param emit: receives each event's progress event; ``None`` when nobody listens (then no
        progress event is made).
    :param max_decoded: the most bytes the items and responses of the events may cost once
        decoded, in all and in any one event (see :func:`decoded_cost`): past it,
        :class:`~turnwire.errors.AnswerTooLargeError`.
    """
    decoder = SSEDecoder()
    accumulator: ResponseAccumulator = container.response_accumulator()()
    malformed = 0
    spent = 0
    # Events this short cannot pass the one-event bound (cost_ceiling): they are not measured.
    unmeasured = sys.maxsize if max_decoded is None else unmeasured_size(max_decoded)
    finished: list[Generation] = []
    typed = decode_typed
    feed = accumulator.feed
    # The accumulator's step for one event, when its feed is the one made of that step (an
    # accumulator that overrides feed, or only has its shape, gets every event through feed).
    feed_one = (
        accumulator.feed_one
        if getattr(type(accumulator), "feed", None) is ResponseAccumulator.feed
        else None
    )

    def take(raw: bytes) -> StreamEvent | UnknownEvent | None:
        """The event of one event's ``raw`` data, held to the bounds (and its text to
        ``on_text``); ``None`` for the ``[DONE]`` marker and for data that is no event."""
        nonlocal malformed, spent
        if raw == b"[DONE]":
            return None  # the Chat Completions end marker some bridges (litellm) send
        cost = -1
        if len(raw) > unmeasured:
            cost = decoded_cost(raw)
            if max_decoded is not None and cost > max_decoded:
                raise _too_many(max_decoded)  # one event alone: refused before it is decoded
        event: StreamEvent | UnknownEvent
        try:
            try:
                event = typed(raw)  # decode_event's answer whenever this one succeeds
            except msgspec.DecodeError as refusal:
                event = decode_refused(raw, refusal)  # decode_event's answer
            except RecursionError:
                event = decode_event(raw)
        except msgspec.DecodeError:
            malformed += 1
            # Redacted, then cut: a secret cut in two is no longer recognisable. The first
            # 4 KiB are redacted (a secret starting in what is shown ends well inside).
            shown = redact(bytes(raw[:4096]).decode("utf-8", "replace"))
            logger.warning(
                "skipping an event whose data is no event (not JSON, or no type): %r",
                shown[:120],
                extra={"kind": "sse-parse-failure"},
            )
            return None
        kind = type(event)
        if max_decoded is not None and kind in _RETAINED:
            spent += decoded_cost(raw) if cost < 0 else cost
            if spent > max_decoded:
                raise _too_many(max_decoded)
        if on_text is not None and kind is TextDelta:
            on_text(event.delta)  # type: ignore[union-attr]  # a TextDelta
        return event

    def apply(raw_events: Iterable[bytes]) -> None:
        """The events of a chunk: each taken, then all fed, then all reported."""
        events = []
        for raw in raw_events:
            event = take(raw)
            if event is not None:
                events.append(event)
        finished.extend(feed(events))
        if emit is not None:
            for event in events:
                progress = from_wire(event)
                if progress is not None:
                    emit(progress)

    reader = aiter(chunks)
    one, feed_data = decoder.feed_one, decoder.feed_data
    dropped: StreamError | None = None
    while True:
        # Only reading may fail as a disconnect; a StreamError from `apply` (a value of
        # the wrong shape) ends the exchange as it is.
        try:
            chunk = await anext(reader)
        except StopAsyncIteration:
            break
        except StreamStalledError as err:
            err.partial = accumulator.partial()
            raise
        except AnswerTooLargeError:
            raise  # not a disconnect: what arrived is not kept
        except StreamError as err:
            logger.warning(
                "the connection dropped mid-stream (%s)",
                err,
                extra={"kind": "stream-disconnected"},
            )
            dropped = err
            break
        raw = one(chunk)
        if raw is None:
            apply(feed_data(chunk))
        elif feed_one is None:
            apply((raw,))
        else:  # one event per chunk: what apply((raw,)) does, without its lists and loops
            event = take(raw)
            if event is not None:
                generation = feed_one(event)
                if generation is not None:
                    finished.append(generation)
                if emit is not None:
                    progress = from_wire(event)
                    if progress is not None:
                        emit(progress)
        if finished:
            return _answered(finished[0])
    apply(decoder.close_data())
    if finished:
        return _answered(finished[0])
    tail = accumulator.close()
    if tail is None:
        raise StreamError("the stream ended before any event") from dropped
    why = "the stream ended" if dropped is None else "the connection dropped mid-stream"
    raise unfinished(tail, why) from dropped


def _answered(generation: Generation) -> Generation:
    """``generation``, unless it never finished: a ``response.created`` that opened another
    response before the first one's terminal event."""
    if generation.terminal == "eof":
        raise unfinished(generation, "another response began")
    return generation
