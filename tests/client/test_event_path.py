"""The client's per-event path (:func:`turnwire.client.reading.read_stream`): the decoded-size
bound holds exactly as its rule says, on every chunking, while an event that cannot pass it is
never measured; progress events are made only for a run that someone observes, and who
observes is looked up once per run."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Iterable
from typing import Any, get_args

import msgspec
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pluggy import HookCaller

import turnwire
from turnwire import hookimpl
from turnwire.client import reading
from turnwire.client._run import Run
from turnwire.client.dispatch import Client
from turnwire.client.progress import TextDeltaEvent
from turnwire.client.reading import (
    _RETAINED,
    _RETAINING,
    cost_ceiling,
    decoded_cost,
    read_stream,
    unmeasured_size,
)
from turnwire.client.sse import SSEDecoder
from turnwire.client.transport import _Watchdog
from turnwire.errors import AnswerTooLargeError, StreamError
from turnwire.wire.accumulator import ResponseAccumulator
from turnwire.wire.events import StreamEvent, TextDelta, UnknownEvent, decode_event, decode_typed

from ..conftest import make_container
from .conftest import THREAD
from .server import Reply, ScriptedServer
from .streams import STREAMS, wire_bytes

CHUNKINGS = (1, 2, 3, 7, 4096)

# ------------------------------------------------------------------ the rule and its ceiling


@given(st.binary(max_size=300) | st.text(alphabet='[{,:x"}] ', max_size=300).map(str.encode))
def test_no_data_costs_more_than_the_ceiling_of_its_size(data):
    assert decoded_cost(data) <= cost_ceiling(len(data))


@pytest.mark.parametrize("size", [0, 1, 2, 17, 4096])
def test_the_ceiling_is_what_the_dearest_data_of_that_size_costs(size):
    assert decoded_cost(b"[" * size) == cost_ceiling(size)
    assert decoded_cost(b"{" * size) == cost_ceiling(size)


@given(st.integers(min_value=0, max_value=1 << 40))
def test_the_unmeasured_size_is_the_longest_whose_ceiling_fits(limit):
    size = unmeasured_size(limit)
    if size >= 0:
        assert cost_ceiling(size) <= limit
    assert cost_ceiling(size + 1) > limit


def test_the_retaining_types_are_the_decodable_types_that_are_retaining():
    decodable = [*get_args(StreamEvent), UnknownEvent]
    assert {kind for kind in decodable if issubclass(kind, _RETAINING)} == _RETAINED
    assert len(_RETAINED) == 9  # two item events, six lifecycle events, the error event


def _samples() -> list[bytes]:
    """Every event's data of the recorded streams, and data of every other kind."""
    found = [raw for path in STREAMS for raw in SSEDecoder().feed_data(wire_bytes(path))]
    return [
        *found,
        b'{"type": "response.output_text.delta", "output_index": "0", "delta": "x"}',
        b'{"type": "response.output_text.delta", "output_index": 0, "delta": "\\ud800"}',
        b'{"type": "response.hosted.thing", "n": 1}',
        b'{"error": {"message": "overloaded"}}',
        b'{"error": "overloaded"}',
        b'{"type": 3}',
        b"[]",
        b"not json",
    ]


@given(st.binary(max_size=200) | st.sampled_from(_samples()))
def test_the_typed_decoder_answers_as_decode_event_whenever_it_answers(data):
    try:
        typed = decode_typed(data)
    except (msgspec.DecodeError, RecursionError):
        return
    assert decode_event(data) == typed


# ------------------------------------------------------------------ streams for the bound


def _frame(event: dict[str, Any] | bytes) -> bytes:
    data = event if isinstance(event, bytes) else json.dumps(event).encode()
    return b"data: " + data + b"\n\n"


def _item_event(kind: str, index: int, extra: int) -> dict[str, Any]:
    """An item event whose item carries ``extra`` tiny values: cheap on the wire, costly
    decoded."""
    item = {"type": "message", "id": f"msg_{index}", "role": "assistant", "content": []}
    if extra:
        item["x"] = [{}] * extra
    return {"type": kind, "output_index": index, "item": item}


def _delta(index: int, text: str) -> dict[str, Any]:
    return {"type": "response.output_text.delta", "output_index": index, "delta": text}


CREATED = {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}}
COMPLETED = {"type": "response.completed", "response": {"id": "resp_1", "status": "completed"}}


def _chunked(data: bytes, size: int | None) -> list[bytes]:
    """``data`` cut every ``size`` bytes, or one event per chunk (``None``)."""
    if size is None:
        return [block + b"\n\n" for block in data.split(b"\n\n") if block]
    return [data[start : start + size] for start in range(0, len(data), size)]


async def _chunks(pieces: Iterable[bytes]) -> Any:
    for piece in pieces:
        yield piece


def _read(
    pieces: list[bytes], limit: int | None, on_text: Callable[[str], None] | None = None
) -> Any:
    """What :func:`read_stream` gives: the generation, or the error it raised."""

    async def read() -> Any:
        return await read_stream(
            _chunks(pieces),
            on_text,
            container=make_container(),
            emit=None,
            max_decoded=limit,
        )

    try:
        return asyncio.run(read())
    except StreamError as err:
        return err


def _reference(pieces: list[bytes], limit: int) -> tuple[bool, list[str]]:
    """The bound as its rule reads, with nothing skipped: every event measured before it is
    decoded and refused alone past ``limit``, every retaining event's cost added to the
    answer's; read chunk by chunk until a chunk finishes a response. Whether the answer is
    refused, and the text deltas read before that."""
    decoder = SSEDecoder()
    accumulator = ResponseAccumulator()
    spent = 0
    texts: list[str] = []
    for raws in [*map(decoder.feed_data, pieces), decoder.close_data()]:
        events = []
        for raw in raws:
            if raw == b"[DONE]":
                continue
            cost = decoded_cost(raw)
            if cost > limit:
                return True, texts
            try:
                event = decode_event(raw)
            except msgspec.DecodeError:
                continue
            if isinstance(event, _RETAINING):
                spent += cost
                if spent > limit:
                    return True, texts
            if isinstance(event, TextDelta):
                texts.append(event.delta)
            events.append(event)
        try:
            if accumulator.feed(events):
                break
        except StreamError:  # a value of the wrong shape ends the reading, refused or not
            break
    return False, texts


def _rare_costly(extra: int, between: int = 200) -> bytes:
    """Many cheap deltas, and between them now and then an item event that costs much once
    decoded (``extra`` tiny values in it)."""
    events: list[dict[str, Any]] = [CREATED]
    for index in range(4):
        events.append(_item_event("response.output_item.added", index, 0))
        events += [_delta(index, "w ") for _ in range(between)]
        events.append(_item_event("response.output_item.done", index, extra))
    events.append(COMPLETED)
    return b"".join(_frame(event) for event in events)


def _spent(data: bytes) -> int:
    """What the retaining events of ``data`` cost under the rule."""
    total = 0
    for raw in SSEDecoder().feed_data(data):
        if isinstance(decode_event(raw), _RETAINING):
            total += decoded_cost(raw)
    return total


@pytest.mark.parametrize("size", [*CHUNKINGS, None])
def test_rare_costly_items_among_cheap_deltas_trip_the_bound_on_any_chunking(size):
    data = _rare_costly(extra=2_000)
    total = _spent(data)
    # Each costly item fits alone and is far below the unmeasured size: only the sum passes.
    assert max(map(len, data.split(b"\n\n"))) <= unmeasured_size(total - 1)
    seen: list[str] = []
    outcome = _read(_chunked(data, size), total - 1, seen.append)
    assert isinstance(outcome, AnswerTooLargeError)
    assert f"holds over {total - 1} bytes once decoded" in str(outcome)
    assert "".join(seen) == "w " * 800  # every delta before the last item was read
    generation = _read(_chunked(data, size), total)
    assert not isinstance(generation, Exception) and generation.text == "w " * 800


@pytest.mark.parametrize("size", [*CHUNKINGS, None])
def test_one_costly_event_alone_is_refused_before_it_is_decoded_on_any_chunking(size):
    """A delta is not retained, and an event that is no JSON is not even an event: both are
    still held to the one-event bound when they are long enough to pass it."""
    limit = 4_096
    costly = b'{"type": "response.output_text.delta", "output_index": 0, "delta": "[[[[[[[[[["}'
    junk = b"[" * (unmeasured_size(limit) + 1)  # not JSON: the cost is in the bytes
    for data in (costly, junk):
        assert decoded_cost(data) > limit or len(data) > unmeasured_size(limit)
    for bad in (_frame(costly.replace(b"[[[[[[[[[[", b"[" * 80)), _frame(junk)):
        stream = _frame(CREATED) + _frame(_delta(0, "a")) + bad + _frame(COMPLETED)
        assert decoded_cost(bad[6:-2]) > limit
        seen: list[str] = []
        outcome = _read(_chunked(stream, size), limit, seen.append)
        assert isinstance(outcome, AnswerTooLargeError), outcome
        assert seen == ["a"]


@pytest.mark.parametrize("size", [1, 7, 4096, None])
def test_an_event_at_the_unmeasured_size_fits_and_one_byte_more_is_measured(size):
    limit = 10_000
    longest = unmeasured_size(limit)
    fits = b"[" * longest  # the dearest data of that size: it costs the limit or less
    over = b"[" * (longest + 1)
    assert decoded_cost(fits) <= limit < decoded_cost(over)
    ok = _frame(CREATED) + _frame(fits) + _frame(COMPLETED)
    assert not isinstance(_read(_chunked(ok, size), limit), Exception)
    refused = _frame(CREATED) + _frame(over) + _frame(COMPLETED)
    assert isinstance(_read(_chunked(refused, size), limit), AnswerTooLargeError)


_PIECES = st.one_of(
    st.builds(_delta, st.integers(0, 2), st.text(alphabet="ab[{,:", max_size=40)),
    st.builds(
        _item_event,
        st.sampled_from(["response.output_item.added", "response.output_item.done"]),
        st.integers(0, 2),
        st.integers(0, 60),
    ),
    st.sampled_from(
        [
            {"type": "response.in_progress", "response": {"id": "resp_1"}},
            {"type": "response.content_part.added", "output_index": 0, "part": {"x": [[], {}]}},
            {"type": "error", "code": "x", "message": "boom", "param": None},
            b"[DONE]",
            b"not json {[[:,",
            b"[" * 40,
            b'{"no": "type", "n": [1, 2, 3]}',
        ]
    ),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    events=st.lists(_PIECES, max_size=25),
    ending=st.sampled_from([COMPLETED, None]),
    size=st.sampled_from([*CHUNKINGS, None]),
    limit=st.integers(min_value=0, max_value=6_000),
)
def test_the_reader_refuses_exactly_what_the_rule_refuses(events, ending, size, limit):
    """Random streams, chunkings and limits: the reader, which measures only retaining events
    and events long enough to pass the limit alone, refuses exactly the answers the rule
    refuses, after exactly the same text; an answer the rule lets through reads as it does
    without any limit."""
    frames = [_frame(CREATED), *map(_frame, events)]
    if ending is not None:
        frames.append(_frame(ending))
    pieces = _chunked(b"".join(frames), size)
    refused, texts = _reference(pieces, limit)
    seen: list[str] = []
    outcome = _read(pieces, limit, seen.append)
    assert isinstance(outcome, AnswerTooLargeError) == refused, outcome
    if refused:
        assert seen == texts
    else:
        unbounded = _read(pieces, None)
        assert type(outcome) is type(unbounded)
        assert str(outcome) == str(unbounded)
        if not isinstance(outcome, Exception):
            assert outcome == unbounded


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: p.name)
def test_only_retaining_events_of_a_recorded_stream_are_measured(path, monkeypatch):
    """Under the default limit, :func:`decoded_cost` runs once per item or response event and
    never for a delta."""
    data = wire_bytes(path)
    measured: list[int] = []

    def counting(raw: bytes) -> int:
        measured.append(len(raw))
        return decoded_cost(raw)

    monkeypatch.setattr(reading, "decoded_cost", counting)
    outcome = _read(_chunked(data, 4096), 4 * (256 << 20))
    retaining = []
    for raw in SSEDecoder().feed_data(data) + SSEDecoder().close_data():
        try:
            event = decode_event(raw)
        except (msgspec.DecodeError, StreamError):
            continue
        if isinstance(event, _RETAINING):
            retaining.append(len(raw))
    read = len(measured)
    assert measured == retaining[:read]  # the reader stops at the first finished response
    assert read >= 1 or isinstance(outcome, Exception)


# ------------------------------------------------------------------ observers


class Collector:
    def __init__(self) -> None:
        self.events: list[object] = []

    @hookimpl
    def on_stream_event(self, event, model):
        self.events.append(event)


def _text_stream(deltas: int) -> bytes:
    events: list[dict[str, Any]] = [CREATED, _item_event("response.output_item.added", 0, 0)]
    events += [_delta(0, "w") for _ in range(deltas)]
    events += [_item_event("response.output_item.done", 0, 0), COMPLETED]
    return b"".join(_frame(event) for event in events)


def _thread() -> turnwire.Thread:
    return turnwire.load_thread(yaml.safe_load(THREAD))


def test_a_run_nobody_observes_makes_no_progress_event(monkeypatch):
    made: list[object] = []
    real = reading.from_wire

    def counting(event: Any) -> Any:
        made.append(event)
        return real(event)

    monkeypatch.setattr(reading, "from_wire", counting)
    with ScriptedServer([Reply.sse(_text_stream(50))]) as server:
        result = turnwire.api.run(_thread(), container=make_container(), base_url=server.base_url)
    assert result.records.messages[0].content == "w" * 50
    assert made == []


def test_a_run_without_observers_looks_its_observers_up_once(monkeypatch):
    """Not once per event: the run finds no ``on_stream_event`` implementation as it starts."""
    looked: list[str] = []
    real = HookCaller.get_hookimpls

    def counting(self: HookCaller) -> Any:
        looked.append(self.name)
        return real(self)

    monkeypatch.setattr(HookCaller, "get_hookimpls", counting)
    with ScriptedServer([Reply.sse(_text_stream(50))]) as server:
        client = Client(make_container(), base_url=server.base_url)
        result = asyncio.run(client.run(_thread()))
    assert result.records.messages[0].content == "w" * 50
    assert looked.count("on_stream_event") == 1


def test_a_run_without_observers_never_calls_the_hook(monkeypatch):
    called: list[str] = []
    container = make_container()
    with ScriptedServer([Reply.sse(_text_stream(50))]) as server:
        client = Client(container, base_url=server.base_url)
        real = client._observe

        def observing(name: str, **kwargs: Any) -> None:
            called.append(name)
            real(name, **kwargs)

        monkeypatch.setattr(client, "_observe", observing)
        asyncio.run(client.run(_thread()))
    assert "on_stream_event" not in called
    assert "on_raw_generation" in called  # the other observers are called as before


def test_a_plugin_registered_after_the_client_was_made_is_seen_by_the_next_run():
    container = make_container()
    collector = Collector()
    with ScriptedServer([Reply.sse(_text_stream(3)), Reply.sse(_text_stream(4))]) as server:
        client = Client(container, base_url=server.base_url)
        asyncio.run(client.run(_thread()))
        client.plugin_manager.register(collector)
        asyncio.run(client.run(_thread()))
    deltas = [e.delta for e in collector.events if isinstance(e, TextDeltaEvent)]
    assert deltas == ["w"] * 4


def test_an_on_event_callback_alone_sees_every_event():
    seen: list[object] = []
    with ScriptedServer([Reply.sse(_text_stream(5))]) as server:
        turnwire.api.run(
            _thread(), container=make_container(), base_url=server.base_url, on_event=seen.append
        )
    assert [e.delta for e in seen if isinstance(e, TextDeltaEvent)] == ["w"] * 5


def test_a_traced_hook_is_called_even_without_an_implementation(caplog):
    """With ``plugins.trace``, pluggy's trace shows every call of ``on_stream_event``, as it
    did when the hook was called per event whoever implemented it."""
    container = make_container({"plugins": {"trace": True}})
    with caplog.at_level(logging.DEBUG, logger="turnwire.trace"):
        with ScriptedServer([Reply.sse(_text_stream(3))]) as server:
            client = Client(container, base_url=server.base_url)
            run = Run(client)
            assert run.observer is not None
            asyncio.run(client.run(_thread()))
    assert sum("on_stream_event" in r.getMessage() for r in caplog.records) >= 3


# ------------------------------------------------------------------ the transport's wait


async def _ready(value: bytes) -> bytes:
    return value


def _later(loop: asyncio.AbstractEventLoop, seconds: float, value: bytes) -> asyncio.Future[bytes]:
    future: asyncio.Future[bytes] = loop.create_future()
    loop.call_later(seconds, future.set_result, value)
    return future


def test_one_timer_serves_every_wait_for_a_chunk():
    """The transport's wait for each chunk makes no timer per chunk (``wait_for`` made a task
    and a timer for each); a wait that outlasts its limit still raises ``TimeoutError``."""

    async def main() -> list[float]:
        loop = asyncio.get_running_loop()
        made: list[float] = []
        real = loop.call_at

        def counting(when: float, *args: Any, **kwargs: Any) -> Any:
            made.append(when)
            return real(when, *args, **kwargs)

        loop.call_at = counting  # type: ignore[method-assign]
        watchdog = _Watchdog()
        for number in range(1000):
            assert await watchdog.wait(_ready(b"%d" % number), 30.0) == b"%d" % number
        with pytest.raises(TimeoutError):
            await watchdog.wait(loop.create_future(), 0.05)  # earlier than the timer: set again
        watchdog.close()
        return made

    assert len(asyncio.run(main())) == 2


def test_waits_that_each_keep_within_the_limit_never_time_out():
    """The idle limit is per chunk: twelve waits of 0.15 s under a 1 s limit outlast the
    first wait's expiry, and the timer, firing then, moves on to the wait under way (the
    margins leave a loaded machine 0.85 s of delay in any one wait)."""

    async def main() -> list[bytes]:
        loop = asyncio.get_running_loop()
        watchdog = _Watchdog()
        got = [await watchdog.wait(_later(loop, 0.15, b"x"), 1.0) for _ in range(12)]
        await asyncio.sleep(1.05)  # no wait under way when the timer fires: it stays off
        got.append(await watchdog.wait(_later(loop, 0.01, b"y"), 1.0))
        watchdog.close()
        return got

    assert asyncio.run(main()) == [b"x"] * 12 + [b"y"]


def test_a_cancellation_from_elsewhere_is_no_timeout():
    async def main() -> str:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        loop.call_later(0.01, task.cancel)
        watchdog = _Watchdog()
        try:
            await watchdog.wait(loop.create_future(), 30.0)
        except TimeoutError:
            return "timeout"
        except asyncio.CancelledError:
            return "cancelled"
        finally:
            watchdog.close()
        return "answered"

    assert asyncio.run(main()) == "cancelled"
