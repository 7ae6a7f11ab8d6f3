"""Progress events: one surface for everything a run reports while it happens.

A run reports each event to the ``on_event=`` callback of :meth:`turnwire.Client.run` (and
:func:`turnwire.run`) and to the ``on_stream_event`` hook, in the order things happen: deltas
as they stream (answer text, refusals, reasoning summaries, raw reasoning, tool arguments),
partial images of an image generation,
each output item once finished, each response once finished (with its finish reason and
usage), each tool call as it starts and finishes, and each request that does not extend the
one before it (a prefix reset: the API drops the reasoning after the change and the prompt
cache misses). A callback or hook implementation that
raises is logged (kind ``observer-error``) and the run goes on.

Events are frozen msgspec Structs tagged by ``type``, so ``msgspec.json.encode(event)`` is
their wire form for a UI.
"""

from __future__ import annotations

from typing import Any

import msgspec

from turnwire.model.records import ToolCall
from turnwire.model.usage import Usage
from turnwire.rendering.ledger import PrefixReport
from turnwire.wire.events import (
    FunctionCallArgumentsDelta,
    ImagePartial,
    OutputItemDone,
    ReasoningSummaryTextDelta,
    ReasoningTextDelta,
    RefusalDelta,
    TextDelta,
)

__all__ = [
    "ImagePartialEvent",
    "ItemDoneEvent",
    "PrefixResetEvent",
    "ProgressEvent",
    "ReasoningSummaryDeltaEvent",
    "ReasoningTextDeltaEvent",
    "RefusalDeltaEvent",
    "ResponseDoneEvent",
    "TextDeltaEvent",
    "ToolArgumentsDeltaEvent",
    "ToolFinishedEvent",
    "ToolSearchEvent",
    "ToolStartedEvent",
    "from_wire",
]


class _Progress(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    pass


class TextDeltaEvent(_Progress, frozen=True, kw_only=True, tag="text.delta"):
    """A piece of answer text."""

    output_index: int
    item_id: str | None = None
    delta: str


class RefusalDeltaEvent(_Progress, frozen=True, kw_only=True, tag="refusal.delta"):
    """A piece of a refusal (stored as the message's text once finished)."""

    output_index: int
    delta: str


class ReasoningSummaryDeltaEvent(
    _Progress, frozen=True, kw_only=True, tag="reasoning_summary.delta"
):
    """A piece of a reasoning summary (``summary_index`` counts its parts)."""

    output_index: int
    summary_index: int = 0
    delta: str


class ReasoningTextDeltaEvent(_Progress, frozen=True, kw_only=True, tag="reasoning_text.delta"):
    """A piece of raw reasoning text (models and servers that stream it)."""

    output_index: int
    content_index: int = 0
    delta: str


class ToolArgumentsDeltaEvent(_Progress, frozen=True, kw_only=True, tag="tool_arguments.delta"):
    """A piece of a function call's arguments (JSON text, incomplete until the item is done)."""

    output_index: int
    delta: str


class ImagePartialEvent(_Progress, frozen=True, kw_only=True, tag="image.partial"):
    """A preview of an image being generated (the image generation tool's ``partial_images``):
    ``index`` counts the previews of one image from 0; ``image_b64`` is the image, base64; the
    finished ``image_generation_call`` item (an :class:`ItemDoneEvent`) carries the final one.
    ``output_format``, ``size``, ``quality`` and ``background`` are as the server gave them."""

    output_index: int
    item_id: str | None = None
    index: int
    image_b64: str
    output_format: str | None = None
    size: str | None = None
    quality: str | None = None
    background: str | None = None


class ItemDoneEvent(_Progress, frozen=True, kw_only=True, tag="item.done"):
    """An output item finished: ``item_type`` is the API's (``message``, ``reasoning``,
    ``function_call``, or a hosted tool's)."""

    output_index: int
    item_type: str
    item_id: str | None = None


class ResponseDoneEvent(_Progress, frozen=True, kw_only=True, tag="response.done"):
    """A response finished and its records were kept."""

    response_id: str | None = None
    status: str | None = None
    model: str | None = None
    finish_reason: str
    usage: Usage | None = None


class ToolStartedEvent(_Progress, frozen=True, kw_only=True, tag="tool.started"):
    """A tool call is about to run."""

    call: ToolCall


class ToolFinishedEvent(_Progress, frozen=True, kw_only=True, tag="tool.finished"):
    """A tool call ran: ``call`` carries its result (``is_error`` for a failure)."""

    call: ToolCall


class ToolSearchEvent(_Progress, frozen=True, kw_only=True, tag="tool_search.done"):
    """A client-executed tool search was answered: ``loaded`` names what its answer declares
    (``namespace.tool`` for a namespace's tools, an MCP server by its label), empty when it
    loaded nothing."""

    call_id: str | None
    loaded: tuple[str, ...]


class PrefixResetEvent(_Progress, frozen=True, kw_only=True, tag="prefix.reset"):
    """Request ``request`` of the run (1 for the first) does not extend the request sent before
    it; ``report`` says where and why (:class:`~turnwire.rendering.ledger.PrefixReport`)."""

    request: int
    report: PrefixReport


ProgressEvent = (
    TextDeltaEvent
    | RefusalDeltaEvent
    | ReasoningSummaryDeltaEvent
    | ReasoningTextDeltaEvent
    | ToolArgumentsDeltaEvent
    | ImagePartialEvent
    | ItemDoneEvent
    | ResponseDoneEvent
    | ToolStartedEvent
    | ToolFinishedEvent
    | ToolSearchEvent
    | PrefixResetEvent
)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def from_wire(event: Any) -> ProgressEvent | None:
    """The progress event of a decoded stream event (``None`` for one that reports none)."""
    kind = type(event)
    if kind is TextDelta:
        return TextDeltaEvent(
            output_index=event.output_index, item_id=event.item_id, delta=event.delta
        )
    if kind is ReasoningSummaryTextDelta:
        return ReasoningSummaryDeltaEvent(
            output_index=event.output_index, summary_index=event.summary_index, delta=event.delta
        )
    if kind is ReasoningTextDelta:
        return ReasoningTextDeltaEvent(
            output_index=event.output_index, content_index=event.content_index, delta=event.delta
        )
    if kind is FunctionCallArgumentsDelta:
        return ToolArgumentsDeltaEvent(output_index=event.output_index, delta=event.delta)
    if kind is RefusalDelta:
        return RefusalDeltaEvent(output_index=event.output_index, delta=event.delta)
    if kind is ImagePartial:
        return ImagePartialEvent(
            output_index=event.output_index,
            item_id=event.item_id,
            index=event.partial_image_index,
            image_b64=event.partial_image_b64,
            output_format=event.output_format,
            size=event.size,
            quality=event.quality,
            background=event.background,
        )
    if kind is OutputItemDone:
        return ItemDoneEvent(
            output_index=event.output_index,
            item_type=_text(event.item.get("type")) or "?",
            item_id=_text(event.item.get("id")),
        )
    return None
