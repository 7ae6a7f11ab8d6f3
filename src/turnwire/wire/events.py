"""Stream events of the Responses wire, decoded with msgspec.

The hot events (text, summary, reasoning and argument deltas) are typed Structs; output items
and response objects stay loosely typed (the API adds fields and item types over time).
Anything not listed decodes as :class:`UnknownEvent`. Both shapes of the ``error`` event are
accepted: the flat one of the spec and the nested one seen on the wire.

Per event, a reader calls :data:`decode_typed` (msgspec's decoder itself), and
:func:`decode_refused` (what :func:`decode_event` answers) only for the data it refuses.
"""

from __future__ import annotations

import json
import re
from typing import Any, get_args

import msgspec

__all__ = [
    "ErrorEvent",
    "FunctionCallArgumentsDelta",
    "FunctionCallArgumentsDone",
    "ImagePartial",
    "OutputItemAdded",
    "OutputItemDone",
    "ReasoningSummaryTextDelta",
    "ReasoningTextDelta",
    "RefusalDelta",
    "ResponseCompleted",
    "ResponseCreated",
    "ResponseFailed",
    "ResponseInProgress",
    "ResponseIncomplete",
    "ResponseLifecycle",
    "ResponseQueued",
    "StreamEvent",
    "TextDelta",
    "UnknownEvent",
    "decode_event",
    "decode_refused",
    "decode_typed",
]


class _Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", gc=False):
    sequence_number: int | None = None


class TextDelta(_Event, frozen=True, kw_only=True, tag="response.output_text.delta"):
    output_index: int
    delta: str
    item_id: str | None = None


class RefusalDelta(_Event, frozen=True, kw_only=True, tag="response.refusal.delta"):
    output_index: int
    delta: str


class ReasoningSummaryTextDelta(
    _Event, frozen=True, kw_only=True, tag="response.reasoning_summary_text.delta"
):
    output_index: int
    delta: str
    summary_index: int = 0


class ReasoningTextDelta(_Event, frozen=True, kw_only=True, tag="response.reasoning_text.delta"):
    output_index: int
    delta: str
    content_index: int = 0


class FunctionCallArgumentsDelta(
    _Event, frozen=True, kw_only=True, tag="response.function_call_arguments.delta"
):
    output_index: int
    delta: str


class FunctionCallArgumentsDone(
    _Event, frozen=True, kw_only=True, tag="response.function_call_arguments.done"
):
    output_index: int
    arguments: str


class ImagePartial(
    _Event, frozen=True, kw_only=True, tag="response.image_generation_call.partial_image"
):
    """An image generation's partial image (``partial_images: N`` on its tool): a preview the
    finished ``image_generation_call`` item replaces; ``partial_image_index`` counts from 0."""

    output_index: int
    item_id: str | None = None
    partial_image_index: int = 0
    partial_image_b64: str
    background: str | None = None
    output_format: str | None = None
    quality: str | None = None
    size: str | None = None


class OutputItemAdded(_Event, frozen=True, kw_only=True, tag="response.output_item.added"):
    output_index: int
    item: dict[str, Any]


class OutputItemDone(_Event, frozen=True, kw_only=True, tag="response.output_item.done"):
    output_index: int
    item: dict[str, Any]


class ResponseLifecycle(_Event, frozen=True, kw_only=True, tag="response.lifecycle"):
    """Base of the events that carry the whole response object (never on the wire itself)."""

    response: dict[str, Any]


class ResponseCreated(ResponseLifecycle, frozen=True, kw_only=True, tag="response.created"):
    pass


class ResponseInProgress(ResponseLifecycle, frozen=True, kw_only=True, tag="response.in_progress"):
    pass


class ResponseQueued(ResponseLifecycle, frozen=True, kw_only=True, tag="response.queued"):
    pass


class ResponseCompleted(ResponseLifecycle, frozen=True, kw_only=True, tag="response.completed"):
    pass


class ResponseIncomplete(ResponseLifecycle, frozen=True, kw_only=True, tag="response.incomplete"):
    pass


class ResponseFailed(ResponseLifecycle, frozen=True, kw_only=True, tag="response.failed"):
    pass


class ErrorEvent(_Event, frozen=True, kw_only=True, tag="error"):
    """``{type: error, code, message, param}`` or ``{type: error, error: {code, message}}``."""

    code: str | None = None
    message: str | None = None
    param: str | None = None
    error: dict[str, Any] | None = None

    @property
    def detail(self) -> tuple[str | None, str]:
        nested = self.error or {}
        code = self.code or nested.get("code") or nested.get("type")
        message = self.message or nested.get("message") or "error event without a message"
        return (None if code is None else str(code)), str(message)


class UnknownEvent(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """An event type turnwire does not act on (hosted-tool progress, future events), or one it
    acts on whose fields have the wrong shape: then ``invalid`` holds the validation message."""

    type: str
    sequence_number: int | None = None
    invalid: str | None = None


StreamEvent = (
    TextDelta
    | RefusalDelta
    | ReasoningSummaryTextDelta
    | ReasoningTextDelta
    | FunctionCallArgumentsDelta
    | FunctionCallArgumentsDone
    | ImagePartial
    | OutputItemAdded
    | OutputItemDone
    | ResponseCreated
    | ResponseInProgress
    | ResponseQueued
    | ResponseCompleted
    | ResponseIncomplete
    | ResponseFailed
    | ErrorEvent
)

_TYPED = msgspec.json.Decoder(StreamEvent)
decode_typed = _TYPED.decode
"""The first step of :func:`decode_event`: an event of a type turnwire acts on, in its shape.
Whenever it returns, :func:`decode_event` returns the same; when it raises, only
:func:`decode_event` says what the data is. A reader calls it first, per event, and
:func:`decode_event` on what it refuses (the same answer, without a Python call per event)."""
_TAGS = frozenset(str(event.__struct_config__.tag) for event in get_args(StreamEvent))
_UNKNOWN = msgspec.json.Decoder(UnknownEvent)


class _Untyped(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    error: Any = None


# What a gateway sends for a failure mid-stream, in the shape of an HTTP error body and with no
# ``type``: ``{"error": {"message": ..., "type": ..., "code": ...}}``. The official SDK raises
# on any event whose data has a top-level ``error``; here it reads as an ``error`` event.
_UNTYPED = msgspec.json.Decoder(_Untyped)


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _with_whole_characters(data: bytes | str) -> bytes | None:
    """``data`` with each lone surrogate escape (``\\ud800`` without its pair, which no
    Unicode text holds and msgspec refuses) read as U+FFFD, so the event's text is kept with a
    replacement character rather than the whole event dropped; ``None`` when ``data`` holds no
    such escape or is no JSON anyway."""
    raw = data.encode() if isinstance(data, str) else bytes(data)
    if not _SURROGATE_ESCAPE.search(raw):
        return None
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return msgspec.json.encode(_whole(value))


def _whole(value: Any) -> Any:
    if isinstance(value, str):
        try:
            value.encode()
        except UnicodeEncodeError:
            return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        return value
    if isinstance(value, list):
        return [_whole(item) for item in value]
    if isinstance(value, dict):
        return {_whole(key): _whole(item) for key, item in value.items()}
    return value


def decode_event(data: bytes | str) -> StreamEvent | UnknownEvent:
    """Decode one event's ``data``; unknown types fall back to :class:`UnknownEvent`.

    Data without a ``type`` whose top level holds an ``error`` object (a gateway's error body
    sent as an event) decodes as an :class:`ErrorEvent`.

    :raises msgspec.DecodeError: the data is not JSON, or lacks a string ``type`` (and is no
        error body).
    :raises turnwire.errors.StreamError: the data is JSON nested too deeply to decode (a value
        no schema turnwire reads can hold, like any other value of the wrong shape).
    """
    try:
        try:
            try:
                return _TYPED.decode(data)
            except msgspec.DecodeError:
                whole = _with_whole_characters(data)
                if whole is None:
                    raise
                data = whole
                return _TYPED.decode(data)
        except msgspec.ValidationError as err:
            return _untyped(data, err)
    except RecursionError:
        raise _too_deep() from None


def decode_refused(data: bytes, refusal: msgspec.DecodeError) -> StreamEvent | UnknownEvent:
    """:func:`decode_event`'s answer for ``data`` that :data:`decode_typed` refused with
    ``refusal``: when the data parsed but is not of a type turnwire acts on (an event it does
    not model, the usual refusal) and holds no lone surrogate escape, the rest of
    :func:`decode_event` from there, without decoding it as a typed event again."""
    if not isinstance(refusal, msgspec.ValidationError) or (
        92 in data and _SURROGATE_ESCAPE.search(data)  # 92: a backslash, looked for first
    ):
        return decode_event(data)
    try:
        return _untyped(data, refusal)
    except RecursionError:
        raise _too_deep() from None


def _untyped(data: bytes | str, refusal: msgspec.ValidationError) -> StreamEvent | UnknownEvent:
    """Data that parsed and is no typed event: an unknown event, a known type in a shape it
    refuses (``invalid``), or a gateway's error body."""
    try:
        unknown = _UNKNOWN.decode(data)
    except msgspec.ValidationError:
        error = _UNTYPED.decode(data).error
        if isinstance(error, dict):
            return ErrorEvent(error=error)
        if isinstance(error, str) and error:  # {"error": "upstream overloaded"}
            return ErrorEvent(message=error)
        raise
    if unknown.type in _TAGS:
        return msgspec.structs.replace(unknown, invalid=str(refusal))
    return unknown


def _too_deep() -> Exception:
    from turnwire.errors import StreamError

    return StreamError(
        "an event's data is nested too deeply to decode; the server's output does not "
        "follow the Responses schema and nothing was recorded",
        event="event",
        field="(root)",
    )
