"""Encoded answers against a real server on 127.0.0.1: every offered Content-Encoding is decoded
(event streams, JSON answers, error bodies), and memory stays bounded whatever a body inflates
to: a 2 MB gzip bomb (2 GiB of zeros) or a 1 GiB plain body on a 500."""

from __future__ import annotations

import importlib.util
import json
import logging
import tracemalloc
from pathlib import Path

import pytest

import turnwire
from turnwire.client.transport import ACCEPT_ENCODING, ERROR_BODY_LIMIT
from turnwire.errors import HttpError, StreamError

from ..conftest import CONFORMANCE, make_container
from .server import (
    Lazy,
    Reply,
    ScriptedServer,
    encode,
    encoded,
    endless,
    gzip_bomb,
    recorded,
)
from .streams import STREAMS, payloads, wire_bytes

STREAM = "text_simple_gpt-4o-mini.sse"
TEXT = recorded(STREAM)
ANSWER = CONFORMANCE / "responses" / "parallel_function_calls_gpt-4o-mini.json"
MiB = 1 << 20
BOUND = 200 * MiB  # generous bounds on memory (not on time); the error body limit is 1 MiB
ERROR_BOUND = 32 * MiB
THREAD = """\
version: 1
model: gpt-4o
tools:
  - {name: add, parameters: {type: object, properties: {a: {type: number}, b: {type: number}}}}
  - {name: multiply, parameters: {type: object, properties: {a: {type: number}, b: {type: number}}}}
messages:
  - {id: u1, role: user, content: "What's the weather?", created_at: "2026-01-01T10:00:00Z"}
"""


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


ENCODINGS = [
    "gzip",
    "deflate",
    "raw-deflate",
    pytest.param(
        "br", marks=pytest.mark.skipif(not installed("brotli"), reason="brotli not installed")
    ),
    pytest.param(
        "zstd",
        marks=pytest.mark.skipif(not installed("zstandard"), reason="zstandard not installed"),
    ),
]


@pytest.fixture
def thread_file(tmp_path: Path) -> Path:
    path = tmp_path / "thread.yaml"
    path.write_text(THREAD)
    return path


def run(server: ScriptedServer, path: Path, *, settings: dict | None = None, **options: object):
    client = {"retry": {"max_retries": 0}, **(settings or {})}
    return turnwire.api.run(
        path,
        container=make_container({"client": client}),
        base_url=server.base_url,
        handlers={"add": lambda a, b: a + b, "multiply": lambda a, b: a * b},
        jitter=lambda: 0.0,
        **options,
    )


def streamed_text() -> str:
    (done,) = [
        e for e in payloads(CONFORMANCE / "streams" / STREAM) if e["type"].endswith("text.done")
    ]
    return str(done["text"])


def peak_while(call):
    """``call()``'s outcome (value or exception) and the peak of traced memory meanwhile."""
    tracemalloc.start()
    try:
        try:
            outcome: object = call()
        except Exception as err:
            outcome = err
        return outcome, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_accept_encoding_offers_exactly_what_can_be_decoded(thread_file):
    expected = (
        ["gzip", "deflate"] + ["br"] * installed("brotli") + ["zstd"] * installed("zstandard")
    )
    with ScriptedServer([Reply.sse(TEXT)]) as server:
        run(server, thread_file)
    assert ", ".join(expected) == ACCEPT_ENCODING
    assert server.requests[0].headers["accept-encoding"] == ACCEPT_ENCODING


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 4096])
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_an_encoded_event_stream_is_decoded(thread_file, encoding, chunk):
    reply = encoded(TEXT, encoding, chunk=chunk)
    with ScriptedServer([reply]) as server:
        result = run(server, thread_file)
    assert result.response.status == "completed"
    assert [m.content for m in result.records.messages] == [streamed_text()]


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_an_encoded_json_answer_is_decoded(thread_file, encoding):
    answer = json.loads(ANSWER.read_text())
    final = {
        **answer,
        "output": [
            {
                "type": "message",
                "id": "msg_x",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "done", "annotations": []}],
            }
        ],
    }
    script = [
        encoded(json.dumps(value).encode(), encoding, content_type="application/json")
        for value in (answer, final)
    ]
    with ScriptedServer(script) as server:
        result = run(server, thread_file, settings={"stream": False})
    assert [m.content for m in result.records.messages] == ["done"]
    assert [c.tool for c in result.records.tool_calls] == ["add", "multiply"]


def test_a_gzip_error_body_is_decoded(thread_file):
    error = {"error": {"message": "Invalid value for 'temperature'", "type": "invalid_request"}}
    reply = encoded(json.dumps(error).encode(), "gzip", status=400, content_type="application/json")
    with ScriptedServer([reply]) as server, pytest.raises(HttpError) as caught:
        run(server, thread_file)
    assert caught.value.http_status == 400
    assert json.loads(caught.value.body) == error


def test_a_two_gib_gzip_bomb_on_a_500_is_cut_at_the_limit(thread_file):
    with ScriptedServer([gzip_bomb(2048)]) as server:
        outcome, peak = peak_while(lambda: run(server, thread_file))
    assert isinstance(outcome, HttpError) and outcome.http_status == 500
    assert str(outcome).endswith(f"... (truncated, {ERROR_BODY_LIMIT} bytes read)")
    assert outcome.body == "\0" * 2000
    assert peak < ERROR_BOUND, f"peak {peak / MiB:.1f} MiB"


def test_a_one_gib_plain_error_body_is_cut_at_the_limit(thread_file):
    with ScriptedServer([endless(1024)]) as server:
        outcome, peak = peak_while(lambda: run(server, thread_file))
    assert isinstance(outcome, HttpError) and outcome.http_status == 500
    assert str(outcome).endswith(f"... (truncated, {ERROR_BODY_LIMIT} bytes read)")
    assert peak < ERROR_BOUND, f"peak {peak / MiB:.1f} MiB"


def test_a_json_answer_past_max_body_bytes_is_refused(thread_file):
    with ScriptedServer([endless(64, status=200)]) as server:
        outcome, peak = peak_while(
            lambda: run(server, thread_file, settings={"stream": False}, max_body_bytes=8 * MiB)
        )
    assert isinstance(outcome, StreamError)
    assert "larger than 8388608 bytes" in str(outcome)
    assert peak < BOUND, f"peak {peak / MiB:.1f} MiB"


def test_a_gzip_bomb_as_a_json_answer_is_refused_with_memory_bounded(thread_file):
    with ScriptedServer([gzip_bomb(2048, status=200)]) as server:
        outcome, peak = peak_while(lambda: run(server, thread_file, settings={"stream": False}))
    assert isinstance(outcome, StreamError) and "larger than" in str(outcome)
    assert peak < BOUND, f"peak {peak / MiB:.1f} MiB"


def test_a_gzip_bomb_as_an_event_stream_is_one_endless_event_refused_with_memory_bounded(
    thread_file,
):
    bomb = gzip_bomb(1024, status=200)
    bomb.content_type = "text/event-stream"
    with ScriptedServer([bomb]) as server:
        outcome, peak = peak_while(lambda: run(server, thread_file))
    assert isinstance(outcome, StreamError)
    assert "an event larger than 67108864 bytes" in str(outcome)
    assert peak < BOUND, f"peak {peak / MiB:.1f} MiB"


def _endless_deltas(kind: str, content_type: str = "text/event-stream") -> Reply:
    """A valid event stream that never ends: one item, then 60 KB deltas of ``kind`` (text or
    function-call arguments) forever, as a hostile or broken server sends them."""
    item = (
        {"type": "message", "id": "msg_1", "role": "assistant", "content": []}
        if kind == "text"
        else {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "add"}
    )
    delta_type = (
        "response.output_text.delta" if kind == "text" else "response.function_call_arguments.delta"
    )
    head = [
        {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
    ]
    delta = {"type": delta_type, "output_index": 0, "item_id": item["id"], "delta": "y" * 60_000}
    frame = f"event: {delta_type}\ndata: {json.dumps(delta)}\n\n".encode()

    def chunks():
        for event in head:
            yield f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()
        for _ in range(1 << 20):  # 60 GB: it ends only because the client stops reading
            yield frame

    return Reply(chunks=Lazy(chunks), content_type=content_type)


@pytest.mark.parametrize(
    ("kind", "content_type"),
    [
        ("text", "text/event-stream"),
        ("arguments", "text/event-stream"),
        ("text", ""),  # no Content-Type: read as events, so held to the stream's limit
        ("text", "text/plain"),
    ],
)
def test_an_endless_stream_of_deltas_ends_at_max_stream_bytes_with_memory_bounded(
    thread_file, kind, content_type
):
    _cut_with_memory_bounded(
        thread_file,
        _endless_deltas(kind, content_type),
        f"larger than {32 * MiB} bytes (client.max_stream_bytes)",
    )


def _cut_with_memory_bounded(thread_file, reply: Reply, expected: str) -> None:
    """``reply`` under ``max_stream_bytes: 32 MiB``: a stream error saying ``expected``, a
    peak of memory under three times the limit, and nothing recorded."""
    with ScriptedServer([reply]) as server:
        outcome, peak = peak_while(
            lambda: run(server, thread_file, settings={"max_stream_bytes": 32 * MiB})
        )
    assert isinstance(outcome, StreamError), outcome
    assert expected in str(outcome)
    assert peak < 6 * 32 * MiB, f"peak {peak / MiB:.1f} MiB"
    assert thread_file.read_text() == THREAD


@pytest.mark.parametrize(
    ("shape", "count"),
    [
        ("[" * 900 + "]" * 900, 3_000),  # no comma at all: each [ a list once decoded
        ('{"k": {}}', 30_000),  # a key and a value a comma
    ],
)
def test_deep_or_keyed_values_are_held_to_what_they_decode_to(thread_file, shape, count):
    item = {"type": "message", "id": "msg_1", "role": "assistant", "content": []}
    grown = ",".join([shape] * count)
    text = json.dumps({"type": "response.output_item.added", "output_index": 0, "item": item})
    added = text.replace('"content": []', f'"content": [], "x": [{grown}]')

    def chunks():
        for _ in range(100):
            yield f"event: response.output_item.added\ndata: {added}\n\n".encode()

    _cut_with_memory_bounded(
        thread_file, Reply(chunks=Lazy(chunks)), f"holds over {4 * 32 * MiB} bytes once decoded"
    )


def test_a_stream_of_tiny_values_is_held_to_its_values_too_with_memory_bounded(thread_file):
    """Each {} of an item's annotations is 3 bytes on the wire and about 60 once decoded: a
    byte limit alone would let 256 MiB of them grow to gigabytes."""
    message = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed"}
    part = {"type": "output_text", "text": "x", "annotations": [{}] * 200_000}
    done = {
        "type": "response.output_item.done",
        "output_index": 0,
        "item": {**message, "content": [part]},
    }
    frame = f"event: response.output_item.done\ndata: {json.dumps(done)}\n\n".encode()

    def chunks():
        head = {"type": "response.created", "response": {"id": "r", "status": "in_progress"}}
        yield f"event: response.created\ndata: {json.dumps(head)}\n\n".encode()
        for _ in range(10_000):
            yield frame

    _cut_with_memory_bounded(
        thread_file,
        Reply(chunks=Lazy(chunks)),
        f"holds over {4 * 32 * MiB} bytes once decoded",
    )


def test_a_corrupt_gzip_stream_is_a_stream_error(thread_file, caplog):
    reply = Reply.sse(TEXT, headers={"Content-Encoding": "gzip"})  # plain bytes, wrong header
    with ScriptedServer([reply]) as server, pytest.raises(StreamError):
        with caplog.at_level(logging.WARNING, logger="turnwire"):
            run(server, thread_file)
    assert "corrupt gzip data" in caplog.text


def test_an_encoding_never_offered_is_refused(thread_file):
    reply = Reply.sse(encode(TEXT, "gzip"), headers={"Content-Encoding": "compress"})
    with ScriptedServer([reply]) as server, pytest.raises(StreamError) as caught:
        run(server, thread_file)
    assert "encoded as 'compress', which was not offered" in str(caught.value)


def test_an_error_body_in_an_encoding_never_offered_says_so(thread_file):
    reply = Reply.json(503, {"error": "x"}, headers={"Content-Encoding": "compress"})
    with ScriptedServer([reply]) as server, pytest.raises(HttpError) as caught:
        run(server, thread_file)
    assert caught.value.http_status == 503
    assert "encoded as 'compress', which was not offered" in caught.value.body


# ---------------------------------------------------------------- the decoder, one function


def decoded(encoding: str, body: bytes, chunk: int = 4096) -> list[bytes]:
    from turnwire.client.transport import _Decoder

    decoder = _Decoder(encoding)
    return [
        piece for i in range(0, len(body), chunk) for piece in decoder.feed(body[i : i + chunk])
    ]


def test_a_decoder_hands_out_64_kib_at_most_however_much_a_chunk_inflates():
    body = encode(bytes(64 * MiB), "gzip")  # about 64 KiB on the wire
    pieces = decoded("gzip", body, chunk=len(body))  # one chunk
    assert max(len(p) for p in pieces) == 64 << 10
    assert sum(len(p) for p in pieces) == 64 * MiB


def test_every_gzip_member_and_both_deflate_shapes_are_decoded():
    assert (
        b"".join(decoded("gzip", encode(b"one ", "gzip") + encode(b"two", "gzip"), 3)) == b"one two"
    )
    for shape in ("deflate", "raw-deflate"):
        assert b"".join(decoded("deflate", encode(TEXT, shape), 1)) == TEXT


@pytest.mark.skipif(not installed("brotli"), reason="brotli not installed")
def test_a_chain_of_encodings_is_undone_right_to_left():
    body = encode(encode(TEXT, "gzip"), "br")
    assert b"".join(decoded("gzip, br", body, 7)) == TEXT


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: p.name)
def test_every_recorded_stream_is_read_under_a_limit_a_little_above_its_size(path):
    """The value limit counts the items and responses only: a real answer's deltas (some 25
    bytes a value) never make a stream under max_stream_bytes too large."""
    import asyncio

    from turnwire.client.reading import DECODED_BUDGET, read_stream

    data = wire_bytes(path)
    limit = int(len(data) * 1.15) + 1024

    async def chunks():
        for start in range(0, len(data), 4096):
            yield data[start : start + 4096]

    async def read():
        return await read_stream(
            chunks(),
            None,
            container=make_container(),
            emit=lambda event: None,
            max_decoded=limit * DECODED_BUDGET,
        )

    try:
        generation = asyncio.run(read())
    except StreamError as err:  # a recording of a failure: its own error, never the limit
        assert "larger than" not in str(err) and "holds over" not in str(err), err
    else:
        assert generation is not None
