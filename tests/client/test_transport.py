"""HTTP transport against a real server on 127.0.0.1: the official SDK's retry rules (``retry-after-
ms``, ``retry-after`` in every form, backoff, what is retried and what is not), the body sent as
rendered, in its pieces, with the reference headers, the API key in no error or log, the request
timeout, every offered Content-Encoding decoded with memory bounded whatever a body inflates to (a 2
MB gzip bomb of 2 GiB of zeros, a 1 GiB plain body on a 500), answers in the shapes gateways give
(media types in any case or none, an error body mid-stream), and an unusable proxy in the
environment as a configuration error."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import tracemalloc
from pathlib import Path
from types import SimpleNamespace

import pytest

import turnwire
from turnwire.client.transport import (
    ACCEPT_ENCODING,
    COALESCED_BYTES,
    ERROR_BODY_LIMIT,
    RetryPolicy,
    Transport,
)
from turnwire.errors import (
    ConfigError,
    HttpError,
    RequestTimeoutError,
    StreamError,
)
from turnwire.rendering.body import EncodedBody

from ..conftest import (
    CONFORMANCE,
    make_container,
    thread,
    user,
)
from .conftest import ERROR_400, TEXT, Sleeps, assert_unchanged, run
from .server import (
    Lazy,
    Reply,
    ScriptedServer,
    encode,
    encoded,
    endless,
    free_port,
    gzip_bomb,
    recorded,
)
from .streams import STREAMS, payloads, wire_bytes
from .test_reading import SHAPES_THREAD

# ------------------------------------------------------------------ retries


def test_429_with_retry_after_then_success(thread_file):
    sleeps = Sleeps()
    script = [Reply.json(429, ERROR_400, headers={"retry-after": "3"}), Reply.sse(TEXT)]
    with ScriptedServer(script) as server:
        result = run(server, thread_file, sleeps=sleeps)
    assert sleeps == [3.0]
    assert len(server.requests) == 2
    assert server.requests[0].body == server.requests[1].body
    assert result.response.finish_reason == "stop"
    saved = turnwire.load_thread(thread_file)
    assert saved.messages[-1].content == result.records.messages[0].content
    assert saved.messages[-1].content.startswith("Hi in Portuguese")


def test_retry_after_ms_wins_over_retry_after(thread_file):
    sleeps = Sleeps()
    headers = {"retry-after-ms": "1500", "retry-after": "9"}
    with ScriptedServer([Reply.json(429, ERROR_400, headers=headers), Reply.sse(TEXT)]) as s:
        run(s, thread_file, sleeps=sleeps)
    assert sleeps == [1.5]


@pytest.mark.parametrize(
    "headers",
    [
        {"retry-after": "soon"},
        {"retry-after": "inf"},
        {"retry-after": "nan"},
        {"retry-after-ms": "NaN"},
        {"retry-after-ms": "Infinity", "retry-after": "-inf"},
        {"retry-after": "Tue, 99 Foo 2026 99:99:99 GMT"},
    ],
)
def test_a_retry_after_that_is_no_finite_delay_falls_back_to_the_backoff(thread_file, headers):
    """As the SDK reads it: a value that parses as no number or date, or as an infinite one,
    asks for no delay, and the exponential backoff applies."""
    sleeps = Sleeps()
    script = [Reply.json(429, ERROR_400, headers=headers), Reply.sse(TEXT)]
    with ScriptedServer(script) as s:
        result = run(s, thread_file, sleeps=sleeps)
    assert sleeps == [0.5]
    assert len(s.requests) == 2
    assert result.response.finish_reason == "stop"


@pytest.mark.parametrize(
    "form",
    [
        "%a, %d %b %Y %H:%M:%S GMT",  # IMF-fixdate
        "%A, %d-%b-%y %H:%M:%S GMT",  # RFC 850
        "%a %b %d %H:%M:%S %Y",  # asctime: no zone, and UTC all the same
        "%a, %d %b %Y %H:%M:%S -0000",
    ],
)
def test_a_retry_after_date_is_utc_in_every_form_whatever_the_local_zone(monkeypatch, form):
    import time
    from datetime import UTC, datetime, timedelta

    from turnwire.client.transport import RetryPolicy

    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        now = datetime(2026, 12, 1, 23, 42, 0, tzinfo=UTC)
        value = (now + timedelta(seconds=5)).strftime(form)
        delay = RetryPolicy().server_delay({"retry-after": value}, now=now.timestamp())
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    assert delay == pytest.approx(5.0)


def test_honor_retry_after_off_uses_the_backoff_alone(thread_file):
    sleeps = Sleeps()
    headers = {"retry-after": "900"}  # past max_retry_after_s: honoured, it stops the retries
    script = [Reply.json(429, ERROR_400, headers=headers), Reply.sse(TEXT)]
    with ScriptedServer(script) as s:
        run(
            s,
            thread_file,
            sleeps=sleeps,
            settings={"client": {"retry": {"honor_retry_after": False}}},
        )
    assert sleeps == [0.5]
    assert len(s.requests) == 2


def test_server_errors_back_off_exponentially_then_succeed(thread_file):
    sleeps = Sleeps()
    script = [
        Reply.json(500, ERROR_400),
        Reply.json(502, ERROR_400),
        Reply.json(503, ERROR_400),
        Reply.sse(TEXT),
    ]
    with ScriptedServer(script) as server:
        run(server, thread_file, sleeps=sleeps, settings={"client": {"retry": {"max_retries": 3}}})
    assert sleeps == [0.5, 1.0, 2.0]
    assert len(server.requests) == 4
    assert len(turnwire.load_thread(thread_file).messages) == 2


def test_retries_exhausted_leave_the_thread_unchanged(thread_file):
    with ScriptedServer([Reply.json(503, ERROR_400)]) as server:
        with pytest.raises(HttpError) as caught:
            run(server, thread_file)
    assert (caught.value.http_status, caught.value.attempts) == (503, 3)
    assert caught.value.status == 502  # the class status, like every other error
    assert len(server.requests) == 3
    assert_unchanged(thread_file)


@pytest.mark.parametrize(
    ("status", "headers", "requests"),
    [
        (503, {"x-should-retry": "false"}, 1),
        (400, {"x-should-retry": "true"}, 2),
        (429, {"retry-after": "121"}, 1),
        (404, {}, 1),
        (408, {}, 2),
        (409, {}, 2),
    ],
)
def test_the_sdks_retry_rules(thread_file, status, headers, requests):
    script = [Reply.json(status, ERROR_400, headers=headers), Reply.sse(TEXT)]
    with ScriptedServer(script) as server:
        try:
            run(server, thread_file)
        except HttpError as err:
            assert err.http_status == status
    assert len(server.requests) == requests


def test_connection_refused_is_retried_then_reported_with_status_0(thread_file):
    sleeps = Sleeps()
    server = SimpleNamespace(base_url=f"http://127.0.0.1:{free_port()}/v1")
    with pytest.raises(HttpError) as caught:
        run(server, thread_file, sleeps=sleeps)
    assert caught.value.http_status == 0 and caught.value.attempts == 3
    assert "ConnectError" in str(caught.value)
    assert sleeps == [0.5, 1.0]
    assert_unchanged(thread_file)


def test_a_reset_before_headers_is_retried(thread_file):
    with ScriptedServer([Reply(reset=True), Reply.sse(TEXT)]) as server:
        result = run(server, thread_file)
    assert len(server.requests) == 2
    assert result.records.messages


def test_a_slow_body_past_the_request_timeout(thread_file):
    # The headers come at once, the body's chunks far past the deadline in all; the deadline
    # leaves a loaded machine 1.5 s to deliver the headers (else the timeout would come before
    # them, and be retried).
    assert len(TEXT) > 4 * 500  # 4 delays at least: 2.4 s
    reply = Reply.sse(TEXT, chunk=500, delay_s=0.6)
    with ScriptedServer([reply]) as server, pytest.raises(RequestTimeoutError) as caught:
        run(server, thread_file, settings={"client": {"request_timeout_s": 1.5}})
    assert caught.value.phase == "while reading the answer"
    assert len(server.requests) == 1  # a timeout while streaming is never retried
    assert_unchanged(thread_file)


def test_the_body_is_sent_as_rendered_with_the_reference_headers(thread_file, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret-key-000")
    expected = turnwire.render(
        turnwire.load_thread(thread_file), container=make_container(), model="gpt-4o"
    ).body
    with ScriptedServer([Reply.sse(TEXT)]) as server:
        run(
            server,
            thread_file,
            settings={
                "client": {"organization": "org-1", "project": "proj-1", "headers": {"X-Team": "a"}}
            },
        )
    seen = server.requests[0]
    assert seen.method == "POST" and seen.path == "/v1/responses"
    assert seen.headers["authorization"] == "Bearer sk-test-secret-key-000"
    assert seen.headers["accept"] == "text/event-stream"
    assert seen.headers["openai-organization"] == "org-1"
    assert seen.headers["openai-project"] == "proj-1" and seen.headers["x-team"] == "a"
    assert seen.body == expected


def test_the_api_key_never_reaches_an_error_or_a_log(thread_file, monkeypatch, caplog):
    key = "sk-test-secret-key-123"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    echo = {"error": {"message": f"Incorrect API key provided: {key}"}}
    with ScriptedServer([Reply.json(401, echo)]) as server:
        with caplog.at_level(logging.DEBUG, logger="turnwire"):
            with pytest.raises(HttpError) as caught:
                run(server, thread_file)
    assert key not in str(caught.value) and key not in repr(caught.value)
    assert "[redacted]" in str(caught.value)
    assert key not in caplog.text


ANSWER = {"id": "resp_1", "object": "response", "status": "completed", "output": []}


async def _post(base_url: str, body: EncodedBody | bytes, retries: int = 0) -> bytes:
    async def no_wait(_: float) -> None:
        return None

    transport = Transport(base_url=base_url, retry=RetryPolicy(max_retries=retries), sleep=no_wait)
    try:
        async with transport.exchange(body, stream=False) as answer:
            return b"".join([chunk async for chunk in answer.chunks])
    finally:
        await transport.aclose()


@pytest.mark.parametrize("count", [5000, 200_000], ids=["one-write", "over-coalesced-bytes"])
def test_pieces_arrive_as_one_body_with_its_length(count: int) -> None:
    """A body of at most COALESCED_BYTES goes joined; a larger one as its pieces: either way
    whole, with its Content-Length and no chunked encoding."""
    whole = b'{"model":"m","input":[' + b",".join(b'"%d"' % i for i in range(count)) + b"]}"
    assert (len(whole) > COALESCED_BYTES) is (count == 200_000)
    cut = len(whole) // 3
    body = EncodedBody((whole[:10], memoryview(whole)[10:cut], whole[cut:]))
    with ScriptedServer([Reply.json(200, ANSWER)]) as server:
        asyncio.run(_post(server.base_url, body))
    (seen,) = server.requests
    assert seen.body == whole
    assert seen.headers["content-length"] == str(len(whole))
    assert "transfer-encoding" not in seen.headers


def test_a_retry_sends_the_same_pieces_again() -> None:
    body = EncodedBody((b'{"model":"m",', b'"input":[]}'))
    with ScriptedServer(
        [Reply.json(500, {"error": {"message": "x"}}), Reply.json(200, ANSWER)]
    ) as s:
        asyncio.run(_post(s.base_url, body, retries=1))
    assert [seen.body for seen in s.requests] == [bytes(body)] * 2


def test_plain_bytes_and_a_single_piece_are_sent_as_bytes() -> None:
    with ScriptedServer([Reply.json(200, ANSWER)]) as server:
        asyncio.run(_post(server.base_url, b'{"a":1}'))
        asyncio.run(_post(server.base_url, EncodedBody((b'{"a":2}',))))
    assert [seen.body for seen in server.requests] == [b'{"a":1}', b'{"a":2}']
    assert all(seen.headers["content-length"] == "7" for seen in server.requests)


def test_a_run_sends_each_later_request_as_pieces(tmp_path, monkeypatch) -> None:
    """The tool loop's second request is rendered warm: the client hands the transport the
    body's pieces (not joined bytes), and the server receives exactly those bytes."""
    import turnwire

    from ..conftest import REPLAY, make_container
    from .server import recorded

    handed: list[object] = []
    real = Transport.exchange

    def spy(self, body, **kwargs):  # type: ignore[no-untyped-def]
        handed.append(body)
        return real(self, body, **kwargs)

    monkeypatch.setattr(Transport, "exchange", spy)
    thread = tmp_path / "t.yaml"
    thread.write_text(
        "version: 1\nmodel: gpt-5\ntools:\n  - {name: weather, parameters: {type: object, "
        "properties: {location: {type: string}}}}\nmessages:\n  - {id: u1, role: user, "
        'content: "Weather in Florence?", created_at: "2026-01-01T10:00:00Z"}\n'
    )
    call = recorded("reasoning_summary_encrypted_function_call_gpt-5.sse")
    text = recorded("reasoning_summary_encrypted_text_turn2_gpt-5.sse")
    with ScriptedServer([Reply.sse(call), Reply.sse(text)]) as server:
        turnwire.api.run(
            thread,
            container=make_container(REPLAY),
            base_url=server.base_url,
            handlers={"weather": lambda location: "40 C"},
        )
    assert len(handed) == len(server.requests) == 2
    second = handed[1]
    assert isinstance(second, EncodedBody) and len(second.parts) > 1
    assert server.requests[1].body == bytes(second)
    assert server.requests[1].headers["content-length"] == str(len(second))


STREAM = "text_simple_gpt-4o-mini.sse"


ENCODED_TEXT = recorded(STREAM)


ENCODED_ANSWER = CONFORMANCE / "responses" / "parallel_function_calls_gpt-4o-mini.json"


MiB = 1 << 20


BOUND = 200 * MiB  # generous bounds on memory (not on time); the error body limit is 1 MiB


ERROR_BOUND = 32 * MiB


ENCODED_THREAD = """\
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
def encoded_thread_file(tmp_path: Path) -> Path:
    path = tmp_path / "thread.yaml"
    path.write_text(ENCODED_THREAD)
    return path


def encoded_run(
    server: ScriptedServer, path: Path, *, settings: dict | None = None, **options: object
):
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


def test_accept_encoding_offers_exactly_what_can_be_decoded(encoded_thread_file):
    expected = (
        ["gzip", "deflate"] + ["br"] * installed("brotli") + ["zstd"] * installed("zstandard")
    )
    with ScriptedServer([Reply.sse(ENCODED_TEXT)]) as server:
        encoded_run(server, encoded_thread_file)
    assert ", ".join(expected) == ACCEPT_ENCODING
    assert server.requests[0].headers["accept-encoding"] == ACCEPT_ENCODING


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 4096])
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_an_encoded_event_stream_is_decoded(encoded_thread_file, encoding, chunk):
    reply = encoded(ENCODED_TEXT, encoding, chunk=chunk)
    with ScriptedServer([reply]) as server:
        result = encoded_run(server, encoded_thread_file)
    assert result.response.status == "completed"
    assert [m.content for m in result.records.messages] == [streamed_text()]


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_an_encoded_json_answer_is_decoded(encoded_thread_file, encoding):
    answer = json.loads(ENCODED_ANSWER.read_text())
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
        result = encoded_run(server, encoded_thread_file, settings={"stream": False})
    assert [m.content for m in result.records.messages] == ["done"]
    assert [c.tool for c in result.records.tool_calls] == ["add", "multiply"]


def test_a_gzip_error_body_is_decoded(encoded_thread_file):
    error = {"error": {"message": "Invalid value for 'temperature'", "type": "invalid_request"}}
    reply = encoded(json.dumps(error).encode(), "gzip", status=400, content_type="application/json")
    with ScriptedServer([reply]) as server, pytest.raises(HttpError) as caught:
        encoded_run(server, encoded_thread_file)
    assert caught.value.http_status == 400
    assert json.loads(caught.value.body) == error


def test_a_two_gib_gzip_bomb_on_a_500_is_cut_at_the_limit(encoded_thread_file):
    with ScriptedServer([gzip_bomb(2048)]) as server:
        outcome, peak = peak_while(lambda: encoded_run(server, encoded_thread_file))
    assert isinstance(outcome, HttpError) and outcome.http_status == 500
    assert str(outcome).endswith(f"... (truncated, {ERROR_BODY_LIMIT} bytes read)")
    assert outcome.body == "\0" * 2000
    assert peak < ERROR_BOUND, f"peak {peak / MiB:.1f} MiB"


def test_a_one_gib_plain_error_body_is_cut_at_the_limit(encoded_thread_file):
    with ScriptedServer([endless(1024)]) as server:
        outcome, peak = peak_while(lambda: encoded_run(server, encoded_thread_file))
    assert isinstance(outcome, HttpError) and outcome.http_status == 500
    assert str(outcome).endswith(f"... (truncated, {ERROR_BODY_LIMIT} bytes read)")
    assert peak < ERROR_BOUND, f"peak {peak / MiB:.1f} MiB"


def test_a_json_answer_past_max_body_bytes_is_refused(encoded_thread_file):
    with ScriptedServer([endless(64, status=200)]) as server:
        outcome, peak = peak_while(
            lambda: encoded_run(
                server, encoded_thread_file, settings={"stream": False}, max_body_bytes=8 * MiB
            )
        )
    assert isinstance(outcome, StreamError)
    assert "larger than 8388608 bytes" in str(outcome)
    assert peak < BOUND, f"peak {peak / MiB:.1f} MiB"


def test_a_gzip_bomb_as_a_json_answer_is_refused_with_memory_bounded(encoded_thread_file):
    with ScriptedServer([gzip_bomb(2048, status=200)]) as server:
        outcome, peak = peak_while(
            lambda: encoded_run(server, encoded_thread_file, settings={"stream": False})
        )
    assert isinstance(outcome, StreamError) and "larger than" in str(outcome)
    assert peak < BOUND, f"peak {peak / MiB:.1f} MiB"


def test_a_gzip_bomb_as_an_event_stream_is_one_endless_event_refused_with_memory_bounded(
    encoded_thread_file,
):
    bomb = gzip_bomb(1024, status=200)
    bomb.content_type = "text/event-stream"
    with ScriptedServer([bomb]) as server:
        outcome, peak = peak_while(lambda: encoded_run(server, encoded_thread_file))
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
    encoded_thread_file, kind, content_type
):
    _cut_with_memory_bounded(
        encoded_thread_file,
        _endless_deltas(kind, content_type),
        f"larger than {32 * MiB} bytes (client.max_stream_bytes)",
    )


def _cut_with_memory_bounded(thread_file, reply: Reply, expected: str) -> None:
    """``reply`` under ``max_stream_bytes: 32 MiB``: a stream error saying ``expected``, a
    peak of memory under three times the limit, and nothing recorded."""
    with ScriptedServer([reply]) as server:
        outcome, peak = peak_while(
            lambda: encoded_run(server, thread_file, settings={"max_stream_bytes": 32 * MiB})
        )
    assert isinstance(outcome, StreamError), outcome
    assert expected in str(outcome)
    assert peak < 6 * 32 * MiB, f"peak {peak / MiB:.1f} MiB"
    assert thread_file.read_text() == ENCODED_THREAD


@pytest.mark.parametrize(
    ("shape", "count"),
    [
        ("[" * 900 + "]" * 900, 3_000),  # no comma at all: each [ a list once decoded
        ('{"k": {}}', 30_000),  # a key and a value a comma
    ],
)
def test_deep_or_keyed_values_are_held_to_what_they_decode_to(encoded_thread_file, shape, count):
    item = {"type": "message", "id": "msg_1", "role": "assistant", "content": []}
    grown = ",".join([shape] * count)
    text = json.dumps({"type": "response.output_item.added", "output_index": 0, "item": item})
    added = text.replace('"content": []', f'"content": [], "x": [{grown}]')

    def chunks():
        for _ in range(100):
            yield f"event: response.output_item.added\ndata: {added}\n\n".encode()

    _cut_with_memory_bounded(
        encoded_thread_file,
        Reply(chunks=Lazy(chunks)),
        f"holds over {4 * 32 * MiB} bytes once decoded",
    )


def test_a_stream_of_tiny_values_is_held_to_its_values_too_with_memory_bounded(encoded_thread_file):
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
        encoded_thread_file,
        Reply(chunks=Lazy(chunks)),
        f"holds over {4 * 32 * MiB} bytes once decoded",
    )


def test_a_corrupt_gzip_stream_is_a_stream_error(encoded_thread_file, caplog):
    reply = Reply.sse(
        ENCODED_TEXT, headers={"Content-Encoding": "gzip"}
    )  # plain bytes, wrong header
    with ScriptedServer([reply]) as server, pytest.raises(StreamError):
        with caplog.at_level(logging.WARNING, logger="turnwire"):
            encoded_run(server, encoded_thread_file)
    assert "corrupt gzip data" in caplog.text


def test_an_encoding_never_offered_is_refused(encoded_thread_file):
    reply = Reply.sse(encode(ENCODED_TEXT, "gzip"), headers={"Content-Encoding": "compress"})
    with ScriptedServer([reply]) as server, pytest.raises(StreamError) as caught:
        encoded_run(server, encoded_thread_file)
    assert "encoded as 'compress', which was not offered" in str(caught.value)


def test_an_error_body_in_an_encoding_never_offered_says_so(encoded_thread_file):
    reply = Reply.json(503, {"error": "x"}, headers={"Content-Encoding": "compress"})
    with ScriptedServer([reply]) as server, pytest.raises(HttpError) as caught:
        encoded_run(server, encoded_thread_file)
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
        assert b"".join(decoded("deflate", encode(ENCODED_TEXT, shape), 1)) == ENCODED_TEXT


@pytest.mark.skipif(not installed("brotli"), reason="brotli not installed")
def test_a_chain_of_encodings_is_undone_right_to_left():
    body = encode(encode(ENCODED_TEXT, "gzip"), "br")
    assert b"".join(decoded("gzip, br", body, 7)) == ENCODED_TEXT


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


def _run(path: Path, reply: Reply) -> turnwire.RunResult:
    with ScriptedServer([reply]) as server:
        return turnwire.api.run(
            path,
            container=make_container({"client": {"retry": {"max_retries": 0}}}),
            base_url=server.base_url,
            save=True,
        )


@pytest.fixture
def gateway_thread_file(tmp_path: Path) -> Path:
    path = tmp_path / "t.yaml"
    path.write_text(SHAPES_THREAD)
    return path


@pytest.mark.parametrize(
    "content_type",
    [
        "text/event-stream",
        "Text/Event-Stream",
        "TEXT/EVENT-STREAM; charset=utf-8",
        "",
        "text/plain",
    ],
)
def test_a_stream_is_read_as_events_unless_the_answer_says_json(gateway_thread_file, content_type):
    result = _run(gateway_thread_file, Reply.sse(TEXT, content_type=content_type))
    assert result.response.finish_reason == "stop"
    assert result.records.messages[0].content.startswith("Hi in Portuguese")


@pytest.mark.parametrize("content_type", ["application/json", "Application/JSON; charset=utf-8"])
def test_a_json_answer_to_a_streaming_request_is_read_whole_in_any_case(
    gateway_thread_file, content_type
):
    response = {
        "id": "resp_1",
        "object": "response",
        "status": "completed",
        "model": "gpt-5",
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "Paris.", "annotations": []}],
            }
        ],
    }
    reply = Reply(chunks=[json.dumps(response).encode()], content_type=content_type)
    result = _run(gateway_thread_file, reply)
    assert result.records.messages[0].content == "Paris."


@pytest.mark.parametrize(
    ("named", "error"),
    [
        (True, {"message": "upstream overloaded", "type": "server_error", "code": None}),
        (False, {"message": "upstream overloaded", "type": "server_error", "code": None}),
        (False, "upstream overloaded"),  # a bare string, as the SDK also raises on
    ],
)
def test_an_error_body_sent_mid_stream_fails_the_turn_and_records_nothing(
    gateway_thread_file, named, error
):
    """A gateway's failure in the middle of an answer, in the shape of its HTTP error body
    (the frame diegosouzapw/OmniRoute#13431 quotes), with or without ``event: error``."""
    before = gateway_thread_file.read_text()
    head = [
        {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []},
        },
        {
            "type": "response.output_text.delta",
            "output_index": 0,
            "item_id": "msg_1",
            "delta": "Partial answer",
        },
    ]
    frames = [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in head]
    body = {"error": error}
    frames.append(("event: error\n" if named else "") + f"data: {json.dumps(body)}\n\n")
    with pytest.raises(StreamError) as caught:
        _run(gateway_thread_file, Reply.sse("".join(frames).encode()))
    assert "upstream overloaded" in str(caught.value)
    assert caught.value.code == "E_OPENAI_RESPONSES_STREAM_ERROR"
    assert gateway_thread_file.read_text() == before


def test_an_error_text_with_escape_sequences_reaches_the_terminal_escaped(gateway_thread_file):
    from turnwire.errors import HttpError

    raw = b"upstream says \x1b]0;pwned\x07\x1b[2J\x1b[31mRED"  # a plain-text error body
    reply = Reply(status=400, chunks=[raw], content_type="text/plain")
    with ScriptedServer([reply]) as server, pytest.raises(HttpError) as caught:
        turnwire.api.run(
            gateway_thread_file,
            container=make_container({"client": {"retry": {"max_retries": 0}}}),
            base_url=server.base_url,
        )
    shown = str(caught.value)
    assert "\x1b" not in shown and "\x07" not in shown
    assert "upstream says \\x1b]0;pwned\\x07\\x1b[2J\\x1b[31mRED" in shown


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("ALL_PROXY", "socks5://user:pw-secret@127.0.0.1:9", "socksio"),
        ("HTTPS_PROXY", "ftp://user:pw-secret@127.0.0.1:9", "http://, https:// or socks5://"),
    ],
)
def test_an_unusable_proxy_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, expected: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError, match=expected) as refused:
        turnwire.run(thread(model="gpt-5", messages=[user()]), base_url="http://127.0.0.1:9/v1")
    assert variable in str(refused.value) and "pw-secret" not in str(refused.value)


def test_httpx_s_request_log_shows_no_credential_of_the_url(caplog) -> None:
    """httpx logs each request's URL at INFO: the base URL's password and a query credential
    (``client.query`` or the base URL's own) are redacted there as everywhere."""
    password, subscription, named = "pw-0a1b2c3d", "sub-4e5f6g7h", "tok-8i9j0k1l"

    async def post(base_url: str) -> None:
        transport = Transport(
            base_url=f"{base_url}?subscription-key={subscription}&api-version=2025-04-01",
            api_key="sk-test-key-1234",
            auth_header="api-key",
            auth_scheme=None,
            query={"access_token": named},
        )
        try:
            async with transport.exchange(b"{}", stream=False) as answer:
                assert b"".join([chunk async for chunk in answer.chunks])
        finally:
            await transport.aclose()

    with ScriptedServer([Reply.json(200, ANSWER)]) as server:
        with_user = server.base_url.replace("http://", f"http://gateway:{password}@")
        with caplog.at_level(logging.INFO, logger="httpx"):
            asyncio.run(post(with_user))
    (seen,) = server.requests
    assert seen.headers["api-key"] == "sk-test-key-1234"
    lines = [r.getMessage() for r in caplog.records if r.name == "httpx"]
    assert any("HTTP Request: POST" in line and "api-version=2025-04-01" in line for line in lines)
    for secret in (password, subscription, named, "sk-test-key-1234"):
        assert not any(secret in line for line in lines), secret


def test_a_password_in_the_url_would_replace_the_key_s_authorization_so_it_is_refused() -> None:
    with pytest.raises(ConfigError) as raised:
        Transport(base_url="https://user:pw-secret-99@gateway.example/v1", api_key="sk-abcdefgh12")
    assert str(raised.value).startswith(
        "the base URL holds credentials before its host, which httpx would turn into an "
        "Authorization header of its own, in place of the API key's (or of client.headers'): "
    )
    assert "client.api_key_env: null" in str(raised.value)
    with pytest.raises(ConfigError):  # an Authorization header given as such: the same
        Transport(
            base_url="https://user:pw-secret-99@gateway.example/v1",
            headers={"authorization": "Bearer sk-abcdefgh12"},
        )
    assert "pw-secret-99" not in str(raised.value)
    # without a key, or with the key in a header of its own, the URL's credentials are what
    # the gateway gets
    Transport(base_url="https://user:pw-secret-99@gateway.example/v1")
    Transport(
        base_url="https://user:pw-secret-99@gateway.example/v1",
        api_key="sk-abcdefgh12",
        auth_header="api-key",
    )
