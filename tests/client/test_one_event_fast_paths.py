"""One event per chunk, the Client's fast paths held to the general ones they stand for: the
decoder's :meth:`~turnwire.client.sse.SSEDecoder.feed_one` to :meth:`feed_data
<turnwire.client.sse.SSEDecoder.feed_data>`, the accumulator's :meth:`feed_one
<turnwire.wire.accumulator.ResponseAccumulator.feed_one>` to :meth:`feed
<turnwire.wire.accumulator.ResponseAccumulator.feed>`, :func:`~turnwire.client.reading.read_stream`
on one-event chunks to the same chunks read through the decoder's general path, and the
transport's reading of the response's stream to ``response.aiter_raw()``: the same events and
bytes, in order, and the same errors."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import httpx
import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from turnwire.client.reading import read_stream
from turnwire.client.sse import SSEDecoder
from turnwire.client.transport import Transport
from turnwire.errors import StreamError
from turnwire.rendering.container import overriding
from turnwire.wire.accumulator import ResponseAccumulator
from turnwire.wire.events import decode_event

from ..conftest import make_container
from .streams import STREAMS, wire_bytes
from .test_event_path import _PIECES, CHUNKINGS, COMPLETED, CREATED, _chunked, _frame
from .test_sse_one_event import chunks as sse_chunks
from .test_sse_one_event import line_by_line, usual


def _outcome(call: Callable[[], Any]) -> Any:
    """What ``call`` gives, or the type and message of the error it raised."""
    try:
        return call()
    except Exception as err:  # the error is the outcome compared
        return (type(err), str(err))


# ------------------------------------------------------------------ the decoder


def _through_feed_one(pieces: list[bytes], limit: int) -> list[bytes]:
    """The reader's way: feed_one first, feed_data for a chunk it does not take."""
    decoder = SSEDecoder(max_event_bytes=limit)
    datas: list[bytes] = []
    for piece in pieces:
        data = decoder.feed_one(piece)
        datas += decoder.feed_data(piece) if data is None else [data]
    return datas + decoder.close_data()


def _through_feed_data(pieces: list[bytes], limit: int) -> list[bytes]:
    decoder = SSEDecoder(max_event_bytes=limit)
    datas: list[bytes] = []
    for piece in pieces:
        datas += decoder.feed_data(piece)
    return datas + decoder.close_data()


class _General(SSEDecoder):
    """The decoder with its shortcut off: every chunk through the general path."""

    def feed_one(self, chunk: bytes) -> bytes | None:
        return None


def _through_general(pieces: list[bytes], limit: int) -> list[bytes]:
    decoder = _General(max_event_bytes=limit)
    datas: list[bytes] = []
    for piece in pieces:
        datas += decoder.feed_data(piece)
    return datas + decoder.close_data()


# One-event chunks with a CR somewhere (a line end of its own), among the other chunks.
with_cr = st.builds(
    lambda block, at: block[:at] + b"\r" + block[at:] + b"\n\n", usual, st.integers(0, 30)
)
mixed = st.lists(st.one_of(sse_chunks.map(tuple), with_cr.map(lambda b: (b,))), max_size=8).map(
    lambda groups: [piece for group in groups for piece in group]
)


@given(mixed, st.sampled_from([8, 20, 64, 1 << 20]))
def test_feed_one_then_feed_data_decodes_as_the_general_path(pieces, limit):
    """The same data in the same order, or the same error (an event past the bound), on any
    mix of one-event chunks and pieces cut anywhere; as the line-by-line rule reads them."""
    mine = _outcome(lambda: _through_feed_one(pieces, limit))
    assert mine == _outcome(lambda: _through_general(pieces, limit))
    assert _outcome(lambda: _through_feed_data(pieces, limit)) == mine
    if limit == 1 << 20:
        assert mine == [event.data for event in line_by_line(b"".join(pieces))]


def test_feed_one_takes_a_usual_event_only_when_nothing_is_pending():
    decoder = SSEDecoder()
    assert decoder.feed_one(b"event: a\ndata: {}\n\n") is None  # the byte order mark check
    assert decoder.feed_data(b"event: a\ndata: {}\n\n") == [b"{}"]
    assert decoder.feed_one(b"event: b\ndata: 1\n\n") == b"1"
    assert decoder.feed_one(b"data: 2\n\n") == b"2"
    for other in (
        b"data: 1\ndata: 2\n\n",
        b"data: 1\r\n\r\n",
        b"data: 1\r2\n\n",
        b"event: x\rdata: 1\n\n",
        b"id: 3\n\n",
        b"data: 4\n",
        b"event: y\n\n\n",
    ):
        fresh, reference = SSEDecoder(), SSEDecoder()
        fresh.feed_data(b"data: 0\n\n")
        reference.feed_data(b"data: 0\n\n")
        assert fresh.feed_one(other) is None
        assert fresh.feed_data(other) == reference.feed_data(other)
        assert fresh.close_data() == reference.close_data()
    assert decoder.feed_data(b"event: b\n") == []
    assert decoder.feed_one(b"data: 5\n\n") is None  # an event is under way
    assert decoder.feed_data(b"data: 5\n\n") == [b"5"]
    assert decoder.feed_one(b"data: 6\n\n") == b"6"


# ------------------------------------------------------------------ the accumulator


def _events(pieces: list[bytes]) -> list[Any]:
    decoded = []
    for raw in _through_feed_data(pieces, 1 << 30):
        try:
            decoded.append(decode_event(raw))
        except (msgspec.DecodeError, StreamError):
            continue
    return decoded


def _fed(events: list[Any], one: bool) -> list[Any]:
    """Each event's outcome (what feed returns for it, or its error), then close()'s."""
    accumulator = ResponseAccumulator()
    seen: list[Any] = []
    for event in events:
        if one:
            seen.append(_outcome(lambda event=event: [accumulator.feed_one(event)]))
        else:
            seen.append(_outcome(lambda event=event: accumulator.feed([event]) or [None]))
    seen.append(_outcome(accumulator.partial))
    seen.append(_outcome(accumulator.close))
    return seen


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: p.name)
def test_feed_one_applies_a_recorded_stream_as_feed_does(path):
    events = _events([wire_bytes(path)])
    assert _fed(events, one=True) == _fed(events, one=False)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_PIECES, max_size=25), st.sampled_from([COMPLETED, CREATED, None]))
def test_feed_one_applies_any_stream_as_feed_does(events, ending):
    frames = [_frame(CREATED), *map(_frame, events)]
    if ending is not None:
        frames.append(_frame(ending))
    decoded = _events([b"".join(frames)])
    assert _fed(decoded, one=True) == _fed(decoded, one=False)


# ------------------------------------------------------------------ the reader


class _Unshaped(ResponseAccumulator):
    """An accumulator whose feed is its own: the reader gives it every event through feed."""

    fed: list[Any]

    def feed(self, events: Any) -> Any:
        events = list(events)
        type(self).fed += events
        return super().feed(events)


def _read(
    pieces: list[bytes],
    limit: int | None,
    *,
    general: bool = False,
    monkeypatch: pytest.MonkeyPatch | None = None,
    container: Any = None,
) -> tuple[Any, list[str], list[Any]]:
    """read_stream's outcome, the text it gave on_text and the progress events it emitted;
    ``general``: with the decoder's feed_one taking no chunk (every chunk through feed_data's
    general path, every event through apply)."""
    texts: list[str] = []
    progress: list[Any] = []

    async def chunks() -> Any:
        for piece in pieces:
            yield piece

    async def read() -> Any:
        return await read_stream(
            chunks(),
            texts.append,
            container=container or make_container(),
            emit=progress.append,
            max_decoded=limit,
        )

    with pytest.MonkeyPatch.context() as patch:
        if general:
            patch.setattr(SSEDecoder, "feed_one", lambda self, chunk: None)
        outcome = _outcome(lambda: asyncio.run(read()))
    return outcome, texts, progress


def _logged(caplog: pytest.LogCaptureFixture, read: Callable[[], Any]) -> tuple[Any, list[str]]:
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="turnwire"):
        result = read()
    return result, [f"{record.levelname} {record.getMessage()}" for record in caplog.records]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    events=st.lists(_PIECES, max_size=25),
    ending=st.sampled_from([COMPLETED, None]),
    limit=st.sampled_from([None, 0, 500, 2_000, 6_000]),
)
def test_one_event_chunks_read_as_the_general_path_reads_them(events, ending, limit):
    """Random streams (deltas, items, unknown, malformed and costly events, [DONE]) one event
    per chunk: the same generation or error, the same text to on_text and the same progress
    events, in the same order, as when every chunk takes the general path."""
    frames = [_frame(CREATED), *map(_frame, events)]
    if ending is not None:
        frames.append(_frame(ending))
    pieces = _chunked(b"".join(frames), None)
    assert _read(pieces, limit) == _read(pieces, limit, general=True)


@pytest.mark.parametrize("size", [*CHUNKINGS, None])
@pytest.mark.parametrize("path", STREAMS, ids=lambda p: p.name)
def test_recorded_streams_read_as_the_general_path_reads_them(path, size, caplog):
    """Every recorded stream on every chunking, its log records included."""
    pieces = _chunked(wire_bytes(path).replace(b"\r\n", b"\n"), size)
    fast = _logged(caplog, lambda: _read(pieces, 4 << 20))
    assert fast == _logged(caplog, lambda: _read(pieces, 4 << 20, general=True))


@pytest.mark.parametrize("path", STREAMS[:6], ids=lambda p: p.name)
def test_an_accumulator_with_its_own_feed_gets_every_event_through_it(path):
    pieces = _chunked(wire_bytes(path).replace(b"\n\r\n", b"\n\n"), None)
    container = make_container()
    expected: list[Any] = []
    for general in (False, True):
        _Unshaped.fed = []
        with overriding(container.response_accumulator, _Unshaped):
            result = _read(pieces, None, general=general, container=container)
        assert _Unshaped.fed, "the accumulator was fed"
        expected.append((result, _Unshaped.fed))
    assert expected[0] == expected[1]


# ------------------------------------------------------------------ the transport


class _Pieces(httpx.AsyncByteStream):
    def __init__(self, pieces: list[bytes], fail: bool = False) -> None:
        self.pieces = pieces
        self.fail = fail

    async def __aiter__(self) -> Any:
        for piece in self.pieces:
            yield piece
        if self.fail:
            raise httpx.ReadError("connection reset")


def _transport(answer: Callable[[], httpx.Response]) -> Transport:
    client = httpx.AsyncClient(transport=httpx.MockTransport(lambda request: answer()))
    return Transport(base_url="http://mock.invalid/v1", api_key="sk-test", client=client)


async def _through_transport(answer: Callable[[], httpx.Response]) -> tuple[list[bytes], bool]:
    transport = _transport(answer)
    async with transport.exchange(b"{}", stream=True) as reply:
        read = [chunk async for chunk in reply.chunks]
        closed = reply.response.is_closed
    await transport._http().aclose()
    return read, closed


async def _through_aiter_raw(answer: Callable[[], httpx.Response]) -> tuple[list[bytes], bool]:
    client = httpx.AsyncClient(transport=httpx.MockTransport(lambda request: answer()))
    request = client.build_request("POST", "http://mock.invalid/v1/responses", content=b"{}")
    response = await client.send(request, stream=True)
    read = [chunk async for chunk in response.aiter_raw()]
    await client.aclose()
    return read, response.is_closed


def _event_stream(stream: httpx.AsyncByteStream) -> Callable[[], httpx.Response]:
    return lambda: httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=stream)


@given(st.lists(st.binary(max_size=8) | st.just(b""), max_size=12))
def test_the_transport_reads_the_chunks_aiter_raw_gives(pieces):
    """Empty chunks skipped, every other one as it came, and the response closed at its end
    (where aiter_raw closes it)."""
    answer = _event_stream(_Pieces(pieces))
    mine = asyncio.run(_through_transport(answer))
    assert mine == asyncio.run(_through_aiter_raw(answer))
    assert mine == ([piece for piece in pieces if piece], True)


def test_a_read_error_mid_answer_is_a_stream_error_whose_cause_knows_its_request():
    async def read() -> Any:
        transport = _transport(_event_stream(_Pieces([b"data: 1\n\n"], fail=True)))
        read: list[bytes] = []
        with pytest.raises(StreamError, match="connection failed mid-answer: ReadError") as err:
            async with transport.exchange(b"{}", stream=True) as reply:
                async for chunk in reply.chunks:
                    read.append(chunk)
        await transport._http().aclose()
        return read, err.value.__cause__

    read, cause = asyncio.run(read())
    assert read == [b"data: 1\n\n"]
    assert isinstance(cause, httpx.ReadError)
    assert cause.request.url == "http://mock.invalid/v1/responses"


def test_an_answer_already_read_is_refused_as_aiter_raw_refuses_it():
    """A response built from bytes is read as it is made: its stream is consumed."""
    answer = lambda: httpx.Response(  # noqa: E731
        200, headers={"content-type": "text/event-stream"}, content=b"data: 1\n\n"
    )
    with pytest.raises(httpx.StreamConsumed):
        asyncio.run(_through_aiter_raw(answer))
    with pytest.raises(httpx.StreamConsumed):
        asyncio.run(_through_transport(answer))
