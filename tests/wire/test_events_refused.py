"""What a reader does with data ``decode_typed`` refuses: ``decode_refused`` answers what
``decode_event`` answers (the event, or the same error), without a second typed decode for an
event turnwire does not model."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from turnwire.client.reading import read_stream
from turnwire.errors import StreamError
from turnwire.wire import events
from turnwire.wire.events import decode_event, decode_refused, decode_typed

from ..conftest import make_container

KNOWN = sorted(events._TAGS)
values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
fields = st.dictionaries(
    st.sampled_from(["output_index", "delta", "item", "response", "error", "message", "x"]),
    values,
    max_size=4,
)
kinds = st.one_of(
    st.sampled_from(KNOWN),
    st.sampled_from(["response.content_part.added", "response.output_text.done", "x"]),
    st.none(),
    st.integers(),
)


def _data(kind: Any, rest: dict[str, Any], surrogate: bool) -> bytes:
    value = dict(rest)
    if kind is not None:
        value["type"] = kind
    text = json.dumps(value)
    if surrogate:  # a lone surrogate escape, which msgspec refuses and decode_event repairs
        text = text[:-1] + (", " if value else "") + '"s": "a\\ud800b"}'
    return text.encode()


def _outcome(function: Any, *args: Any) -> tuple[str, Any]:
    try:
        return "event", function(*args)
    except (msgspec.DecodeError, StreamError) as err:
        return type(err).__name__, str(err)


@given(kinds, fields, st.booleans())
def test_decode_refused_answers_as_decode_event(kind, rest, surrogate):
    data = _data(kind, rest, surrogate)
    try:
        typed = decode_typed(data)
    except msgspec.DecodeError as refusal:
        assert _outcome(decode_refused, data, refusal) == _outcome(decode_event, data)
    else:
        assert decode_event(data) == typed


@pytest.mark.parametrize(
    "data",
    [
        b'{"type": "response.content_part.added", "part": {"type": "output_text"}}',
        b'{"type": "response.output_text.delta", "delta": 3}',  # known, of the wrong shape
        b'{"error": {"message": "overloaded"}}',
        b'{"error": "overloaded"}',
        b'{"type": "x", "s": "\\ud800"}',
        b"[DONE]",
        b'{"no": "type"}',
        b"[" * 5000 + b"]" * 5000,
    ],
)
def test_the_usual_refusals(data):
    try:
        decode_typed(data)
    except (msgspec.DecodeError, RecursionError) as refusal:
        if isinstance(refusal, RecursionError):
            pytest.skip("this interpreter's stack holds the nesting")
        assert _outcome(decode_refused, data, refusal) == _outcome(decode_event, data)


def test_the_reader_decodes_an_unmodelled_event_once_after_the_refusal(monkeypatch):
    """The events turnwire does not model (content parts, text done...) are refused by the
    typed decoder once, then read as unknown events: never decoded as typed events again."""
    asked: list[bytes] = []

    class Counting:
        def decode(self, data: bytes) -> Any:
            asked.append(data)
            return real.decode(data)

    real = events._TYPED
    monkeypatch.setattr(events, "_TYPED", Counting())
    frames = [
        {"type": "response.created", "response": {"id": "r", "status": "in_progress"}},
        {"type": "response.output_item.added", "output_index": 0, "item": MESSAGE},
        {"type": "response.content_part.added", "output_index": 0, "content_index": 0},
        {"type": "response.output_text.delta", "output_index": 0, "delta": "Hi"},
        {"type": "response.output_text.done", "output_index": 0, "text": "Hi"},
        {"type": "response.output_item.done", "output_index": 0, "item": DONE},
        {"type": "response.completed", "response": {"id": "r", "status": "completed"}},
    ]
    chunks = [f"data: {json.dumps(frame)}\n\n".encode() for frame in frames]

    async def arrive() -> Any:
        for chunk in chunks:
            yield chunk

    generation = asyncio.run(
        read_stream(arrive(), None, container=make_container(), emit=None, max_decoded=1 << 30)
    )
    assert [m.text for m in generation.messages] == ["Hi"]
    assert asked == []


MESSAGE = {
    "type": "message",
    "id": "m",
    "role": "assistant",
    "status": "in_progress",
    "content": [],
}
DONE = {
    **MESSAGE,
    "status": "completed",
    "content": [{"type": "output_text", "text": "Hi", "annotations": []}],
}
