"""The client against a real HTTP server on 127.0.0.1: retries, faults, the reasoning-free
retry, the tool loop, observers, and what ends up in the thread file on disk."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from types import SimpleNamespace

import pytest

import turnwire
from turnwire import hookimpl
from turnwire.errors import (
    HttpError,
    ReasoningReplayRejectedError,
    RequestTimeoutError,
    StreamError,
    StreamStalledError,
)

from ..conftest import CONFORMANCE, REPLAY, make_container, prefix_fingerprint, thread
from ..oracle import validate_body
from .conftest import AFTER_CALL, CALL, ERROR_400, TEXT, THREAD, Sleeps, assert_unchanged, run
from .server import Reply, ScriptedServer, free_port, recorded

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


def test_stream_finalised_and_stream_error_log_kinds(thread_file, caplog):
    with caplog.at_level(logging.DEBUG, logger="turnwire"):
        with ScriptedServer([Reply.sse(TEXT)]) as s:
            run(s, thread_file)
    (done,) = [r for r in caplog.records if getattr(r, "kind", "") == "stream-finalised"]
    assert (done.tool_call_count, done.saw_message, done.terminal_seen) == (0, True, True)
    caplog.clear()
    failed = recorded("error_then_failed_insufficient_quota_gpt-5-nano.jsonl")
    with caplog.at_level(logging.DEBUG, logger="turnwire"):
        with ScriptedServer([Reply.sse(failed)]) as s, pytest.raises(StreamError):
            run(s, thread_file)
    assert any(getattr(r, "kind", "") == "stream-error" for r in caplog.records)


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


# ------------------------------------------------------------------ the stream


def _truncated(data: bytes) -> bytes:
    return data[: data.index(b"event: response.output_text.done")]


def test_a_clean_end_without_a_terminal_event_drains_what_arrived(thread_file, caplog):
    with ScriptedServer([Reply.sse(_truncated(TEXT))]) as server:
        with caplog.at_level(logging.WARNING, logger="turnwire"):
            result = run(server, thread_file)
    assert "sse-eof-without-terminal-event" in [r.kind for r in caplog.records]
    assert result.records.messages[0].content.startswith("Hi in Portuguese")
    assert (
        turnwire.load_thread(thread_file).messages[-1].content == result.records.messages[0].content
    )


def test_a_disconnect_mid_stream_drains_what_arrived(thread_file, caplog):
    reply = Reply.sse(_truncated(TEXT), chunk=512)
    reply.close_after = len(reply.chunks)
    with ScriptedServer([reply]) as server, caplog.at_level(logging.WARNING, logger="turnwire"):
        result = run(server, thread_file)
    kinds = [r.kind for r in caplog.records]
    assert "stream-disconnected" in kinds and "sse-eof-without-terminal-event" in kinds
    assert result.records.messages[0].content.startswith("Hi in Portuguese")
    assert len(server.requests) == 1


def test_a_stalled_stream_raises_with_the_partial_answer_and_records_nothing(thread_file):
    reply = Reply.sse(TEXT, chunk=900, stall_after=3)
    with ScriptedServer([reply]) as server, pytest.raises(StreamStalledError) as caught:
        run(server, thread_file, settings={"client": {"stream_idle_timeout_s": 0.3}})
    partial = caught.value.partial
    assert partial is not None and partial.terminal == "eof"
    assert len(server.requests) == 1
    assert_unchanged(thread_file)


def test_a_slow_body_past_the_request_timeout(thread_file):
    reply = Reply.sse(TEXT, chunk=500, delay_s=0.25)
    with ScriptedServer([reply]) as server, pytest.raises(RequestTimeoutError) as caught:
        run(server, thread_file, settings={"client": {"request_timeout_s": 0.6}})
    assert caught.value.phase == "while reading the answer"
    assert len(server.requests) == 1  # a timeout while streaming is never retried
    assert_unchanged(thread_file)


def test_malformed_frames_are_skipped(thread_file, caplog):
    cut = TEXT.index(b"event: response.output_text.delta")
    broken = TEXT[:cut] + b"data: {not json\n\n" + TEXT[cut:]
    with ScriptedServer([Reply.sse(broken)]) as server:
        with caplog.at_level(logging.WARNING, logger="turnwire"):
            result = run(server, thread_file)
    assert "sse-parse-failure" in [r.kind for r in caplog.records]
    assert result.response.status == "completed"


def test_a_malformed_frame_that_echoes_the_key_is_logged_redacted_before_it_is_cut(
    thread_file, caplog
):
    """The log shows the first 120 characters of such a frame: a key cut at that boundary
    would no longer match the redaction, so the frame is redacted whole first."""
    key = "azureKEY0123456789abcdef0123456789"  # no recognisable prefix: known only as the key
    cut = TEXT.index(b"event: response.output_text.delta")
    frame = b"data: {" + b"x" * 100 + key.encode() + b"\n\n"
    with ScriptedServer([Reply.sse(TEXT[:cut] + frame + TEXT[cut:])]) as server:
        with caplog.at_level(logging.WARNING, logger="turnwire"):
            run(server, thread_file, api_key=key)
    (logged,) = [r.getMessage() for r in caplog.records if r.kind == "sse-parse-failure"]
    assert "[redacted]" in logged or "[red" in logged
    assert key[:8] not in logged


def test_a_failed_stream_is_a_stream_error_and_records_nothing(thread_file):
    failing = recorded("error_then_failed_insufficient_quota_gpt-5-nano.jsonl")
    with ScriptedServer([Reply.sse(failing)]) as server, pytest.raises(StreamError) as caught:
        run(server, thread_file)
    assert caught.value.error_code == "insufficient_quota"
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


def test_non_streaming_json_answers(thread_file):
    answer = json.loads(
        (CONFORMANCE / "responses" / "parallel_function_calls_gpt-4o-mini.json").read_text()
    )
    script = [
        Reply.json(200, answer),
        Reply.json(
            200,
            {
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
            },
        ),
    ]
    with ScriptedServer(script) as server:
        result = run(
            server,
            thread_file,
            settings={"client": {"stream": False}},
            handlers={"add": lambda a, b: a + b, "multiply": lambda a, b: a * b},
        )
    assert server.requests[0].json["stream"] is False
    assert [c.tool for c in result.records.tool_calls] == ["add", "multiply"]
    assert result.records.messages[-1].content == "done"


# ------------------------------------------------------------------ the reasoning-free retry


def _replay_thread(path: Path) -> Path:
    base = thread(
        model="gpt-5",
        messages=[
            {"id": "u1", "role": "user", "content": "hi", "created_at": "2026-01-01T10:00:00Z"}
        ],
    )
    fp = prefix_fingerprint(base, REPLAY)
    path.write_text(
        json.dumps(
            {
                "version": 1,
                "model": "gpt-5",
                "messages": [
                    {
                        "id": "u1",
                        "role": "user",
                        "content": "hi",
                        "created_at": "2026-01-01T10:00:00Z",
                    },
                    {
                        "id": "msg_1",
                        "role": "assistant",
                        "content": "hello",
                        "created_at": "2026-01-01T10:00:02Z",
                        "seq": 1,
                    },
                ],
                "thoughts": [
                    {
                        "id": "rs_1",
                        "created_at": "2026-01-01T10:00:02Z",
                        "seq": 0,
                        "replay_compatibility": "openai-responses-reasoning-v1",
                        "payload": {
                            "variant": "responses-reasoning",
                            "item": {
                                "type": "reasoning",
                                "id": "rs_1",
                                "summary": [],
                                "encrypted_content": "gAAAA-x",
                            },
                            "paired_item_id": "msg_1",
                            "prefix_fingerprint": fp,
                        },
                    }
                ],
            }
        )
    )
    return path


PHRASES = [
    "The encrypted content for item rs_1 could not be verified. (invalid_encrypted_content)",
    "Item 'rs_1' of type 'reasoning' was provided without its required following item.",
    "Item 'msg_1' of type 'message' was provided without its required preceding item of type "
    "'reasoning'.",
    "Item with id 'rs_1' not found. Items are not persisted when `store` is set to false.",
    "Item 'msg_1' of type 'message' was provided without its required 'reasoning' item: 'rs_1'.",
    "Item 'fc_1' of type 'function_call' was provided without its required 'reasoning' item: "
    "'rs_1'.",
]


@pytest.mark.parametrize("phrase", PHRASES)
def test_a_reasoning_400_gets_one_retry_without_reasoning_or_ids(tmp_path, phrase):
    path = _replay_thread(tmp_path / "t.json")
    body = {"error": {"message": phrase, "type": "invalid_request_error", "code": None}}
    with ScriptedServer([Reply.json(400, body), Reply.sse(TEXT)]) as server:
        result = run(server, path, settings=REPLAY)
    first, second = (r.json for r in server.requests)
    assert [i.get("type") for i in first["input"]] == ["message", "reasoning", "message"]
    assert all(i.get("type") != "reasoning" and "id" not in i for i in second["input"])
    validate_body(second)
    assert result.records.messages


def test_a_pairing_400_that_survives_the_retry_is_reasoning_replay_rejected(tmp_path):
    path = _replay_thread(tmp_path / "t.json")
    before = path.read_text()
    body = {"error": {"message": PHRASES[1]}}
    with ScriptedServer([Reply.json(400, body)]) as server:
        with pytest.raises(ReasoningReplayRejectedError) as caught:
            run(server, path, settings=REPLAY)
    assert len(server.requests) == 2
    assert caught.value.code == "E_OPENAI_RESPONSES_REASONING_REPLAY_REJECTED"
    assert (caught.value.status, caught.value.http_status) == (422, 400)
    assert caught.value.item_id == "rs_1" and "item rs_1" in str(caught.value)
    assert path.read_text() == before


def test_a_400_about_something_else_is_not_retried(tmp_path):
    path = _replay_thread(tmp_path / "t.json")
    with ScriptedServer([Reply.json(400, ERROR_400)]) as server:
        with pytest.raises(HttpError) as caught:
            run(server, path, settings=REPLAY)
    assert caught.value.http_status == 400 and len(server.requests) == 1


def test_no_reasoning_free_retry_when_the_request_carried_no_reasoning(thread_file):
    body = {"error": {"message": PHRASES[0]}}
    with ScriptedServer([Reply.json(400, body)]) as server, pytest.raises(HttpError):
        run(server, thread_file)
    assert len(server.requests) == 1


# ------------------------------------------------------------------ the tool loop


def test_tool_calls_run_and_loop_until_the_model_answers(thread_file):
    with ScriptedServer([Reply.sse(CALL), Reply.sse(AFTER_CALL)]) as server:
        result = run(server, thread_file)
    assert result.iterations == 2 and len(server.requests) == 2
    call = result.records.tool_calls[0]
    assert call.id.startswith("call_") and "|fc_" in call.id
    assert call.result.text.startswith("the capital of")
    second = server.requests[1].json
    kinds = [i.get("type") for i in second["input"]]
    assert kinds[-2:] == ["function_call", "function_call_output"]
    assert "the capital of" in second["input"][-1]["output"]
    saved = turnwire.load_thread(thread_file)
    assert saved.tool_calls[0].result == call.result
    assert saved.messages[-1].content == result.records.messages[-1].content
    records = [*saved.messages, *saved.tool_calls]
    assert sorted(r.seq for r in records if r.created_at == call.created_at) == sorted(
        {r.seq for r in records if r.created_at == call.created_at}
    )


@pytest.mark.parametrize(
    ("handlers", "arguments", "expected"),
    [
        ({}, None, "Tool get_capital cannot run: it has no handler"),
        ({"get_capital": lambda **kw: 1 / 0}, None, "Tool get_capital failed: ZeroDivisionError"),
        (None, '{"city": ', 'Tool arguments are not valid JSON. Raw value: {"city": '),
        (None, '["Paris"]', "Tool arguments must be a JSON object; received array."),
        (
            None,
            '{"country": 5}',
            "Tool arguments do not match the parameters of get_capital: $.country: expected string",
        ),
    ],
)
def test_tool_failures_become_error_results_the_model_sees(
    thread_file, handlers, arguments, expected
):
    stream = CALL
    if arguments is not None:
        original = json.loads(
            next(
                line[6:]
                for line in CALL.decode().splitlines()
                if line.startswith("data: ") and '"response.output_item.done"' in line
            )
        )
        raw = original["item"]["arguments"]
        stream = CALL.replace(json.dumps(raw).encode(), json.dumps(arguments).encode())
    with ScriptedServer([Reply.sse(stream), Reply.sse(AFTER_CALL)]) as server:
        result = run(server, thread_file, handlers=handlers if handlers is not None else None)
    call = result.records.tool_calls[0]
    assert call.is_error and call.result.text.startswith(expected)
    assert expected in server.requests[1].json["input"][-1]["output"]


def test_arguments_that_break_the_schema_never_reach_the_handler(thread_file):
    ran: list[dict] = []
    stream = CALL.replace(b'{\\"country\\":\\"France\\"}', b'{\\"country\\":[\\"France\\"]}')
    assert stream != CALL
    with ScriptedServer([Reply.sse(stream), Reply.sse(AFTER_CALL)]) as server:
        result = run(server, thread_file, handlers={"get_capital": lambda **kw: ran.append(kw)})
    assert ran == []
    call = result.records.tool_calls[0]
    assert call.is_error and call.args == {"country": ["France"]}
    assert "$.country: expected string" in server.requests[1].json["input"][-1]["output"]


def _tiny_png() -> bytes:
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8-bit RGB
    pixels = zlib.compress(b"\x00\xff\x00\x00")  # filter byte, one red pixel
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def test_a_handler_that_returns_an_image_sends_it_as_input_image_next(thread_file):
    import base64

    png = _tiny_png()

    def chart(**kw):
        return turnwire.Media(id="chart", kind="image", mime_type="image/png", data=png)

    with ScriptedServer([Reply.sse(CALL), Reply.sse(AFTER_CALL)]) as server:
        result = run(server, thread_file, handlers={"get_capital": chart})
    call = result.records.tool_calls[0]
    assert not call.is_error and call.result.media[0].data == png
    output = server.requests[1].json["input"][-1]["output"]
    images = [part for part in output if part.get("type") == "input_image"]
    assert [part["image_url"] for part in images] == [
        "data:image/png;base64," + base64.b64encode(png).decode()
    ]
    assert turnwire.load_thread(thread_file).tool_calls[0].result.media[0].data == png


def test_a_handler_may_return_several_media_or_an_artifact(thread_file):
    pdf = turnwire.Media(id="doc", kind="document", mime_type="application/pdf", data=b"%PDF-1.4")
    png = turnwire.Media(id="img", kind="image", mime_type="image/png", data=_tiny_png())
    with ScriptedServer([Reply.sse(CALL), Reply.sse(AFTER_CALL)]) as server:
        result = run(server, thread_file, handlers={"get_capital": lambda **kw: [png, pdf]})
    assert [m.id for m in result.records.tool_calls[0].result.media] == ["img", "doc"]
    kinds = [p.get("type") for p in server.requests[1].json["input"][-1]["output"]]
    assert "input_image" in kinds and "input_file" in kinds
    artifact = turnwire.Artifact(text="a long report\n" * 500)
    thread_file.write_text(THREAD)
    with ScriptedServer([Reply.sse(CALL), Reply.sse(AFTER_CALL)]) as server:
        result = run(server, thread_file, handlers={"get_capital": lambda **kw: artifact})
    assert result.records.tool_calls[0].result.artifact == artifact
    assert 'kind="artifact-handle"' in server.requests[1].json["input"][-1]["output"]


def test_a_media_result_pointing_outside_the_roots_is_an_error_result(thread_file, tmp_path):
    outside = tmp_path.parent / "elsewhere.png"
    pointer = turnwire.Media(id="p", kind="image", mime_type="image/png", path=str(outside))
    with ScriptedServer([Reply.sse(CALL), Reply.sse(AFTER_CALL)]) as server:
        result = run(server, thread_file, handlers={"get_capital": lambda **kw: pointer})
    call = result.records.tool_calls[0]
    assert call.is_error and "leads outside the allowed roots" in call.result.text
    assert len(server.requests) == 2  # the run went on; the model read the error


def test_media_over_the_result_limit_are_an_error_result(thread_file):
    big = turnwire.Media(id="big", kind="image", mime_type="image/png", data=b"x" * 2048)
    settings = {"tools": {"max_result_bytes": 1024}}
    with ScriptedServer([Reply.sse(CALL), Reply.sse(AFTER_CALL)]) as server:
        result = run(
            server, thread_file, settings=settings, handlers={"get_capital": lambda **kw: big}
        )
    call = result.records.tool_calls[0]
    assert call.is_error and "its media are over 1024 bytes" in call.result.text


def test_usage_per_generation_and_for_the_run(thread_file):
    cached = CALL.replace(b'"cached_tokens":0', b'"cached_tokens":200')
    assert cached != CALL
    with ScriptedServer([Reply.sse(cached), Reply.sse(AFTER_CALL)]) as server:
        result = run(server, thread_file)
    first, second = result.generations
    assert (first.provider, first.model, first.finish_reason) == (
        "openai_responses",
        "gpt-4o-2024-08-06",
        "tool_calls",
    )
    assert second.finish_reason == "stop"
    assert (first.usage.input_tokens, first.usage.cached_tokens) == (255, 200)
    assert (first.usage.prompt_tokens, first.usage.completion_tokens) == (55, 16)
    assert first.usage.total_tokens == 271
    assert first.record_ids == (result.records.tool_calls[0].id,)
    assert second.record_ids == (result.records.messages[0].id,)
    assert result.usage.prompt_tokens == 55 + 278
    assert result.usage.completion_tokens == 16 + 9
    assert result.usage.total_tokens == 271 + 287


def test_an_unknown_tool_lists_the_available_ones(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text(THREAD.replace("get_capital", "get_time"))
    with ScriptedServer([Reply.sse(CALL), Reply.sse(AFTER_CALL)]) as server:
        result = run(server, path)
    assert result.records.tool_calls[0].result.text == (
        "Tool not found: get_capital. Available tools: get_time."
    )


def test_large_results_become_artifacts_readable_with_the_artifact_tools(thread_file):
    big = "line of log\n" * 1000
    with ScriptedServer([Reply.sse(CALL), Reply.sse(AFTER_CALL)]) as server:
        result = run(server, thread_file, handlers={"get_capital": lambda **kw: big})
    call = result.records.tool_calls[0]
    assert call.result.artifact is not None and call.result.artifact.text == big
    second = server.requests[1].json
    assert 'kind="artifact-handle"' in second["input"][-1]["output"]
    assert {"artifact_head", "artifact_grep"} <= {t["name"] for t in second["tools"]}


def test_once_records_calls_without_running_them_and_the_next_run_runs_them(thread_file):
    with ScriptedServer([Reply.sse(CALL)]) as server:
        result = run(server, thread_file, once=True)
    assert result.records.tool_calls[0].result is None
    assert turnwire.load_thread(thread_file).tool_calls[0].result is None
    with ScriptedServer([Reply.sse(AFTER_CALL)]) as server:
        again = run(server, thread_file)
    assert "the capital of" in server.requests[0].json["input"][-1]["output"]
    assert again.thread.tool_calls[0].result.text.startswith("the capital of")


def test_the_iteration_cap(thread_file, caplog):
    with ScriptedServer([Reply.sse(CALL)]) as server:
        with caplog.at_level(logging.WARNING, logger="turnwire"):
            result = run(server, thread_file, settings={"client": {"max_iterations": 2}})
    assert result.iterations == 2 and len(server.requests) == 2
    assert "max-iterations" in [r.kind for r in caplog.records]


# ------------------------------------------------------------------ hooks


class Observer:
    def __init__(self) -> None:
        self.bodies: list[tuple[str, bytes]] = []
        self.generations: list[object] = []

    @hookimpl
    def on_prompt_assembled(self, body, attempt_kind):
        self.bodies.append((attempt_kind, body))

    @hookimpl
    def on_raw_generation(self, generation):
        self.generations.append(generation)


class Broken:
    @hookimpl
    def on_prompt_assembled(self, body):
        raise RuntimeError("observer bug")


def test_observers_see_every_request_sent_and_a_broken_one_never_fails_the_turn(tmp_path, caplog):
    path = _replay_thread(tmp_path / "t.json")
    observer = Observer()
    container = make_container(REPLAY, extra_plugins=[observer, Broken()])
    body = {"error": {"message": PHRASES[0]}}
    script = [Reply.json(503, ERROR_400), Reply.json(400, body), Reply.sse(TEXT)]
    with ScriptedServer(script) as server, caplog.at_level(logging.ERROR, logger="turnwire"):
        run(server, path, container=container)
    assert [kind for kind, _ in observer.bodies] == ["request", "reasoning-free-retry"]
    assert observer.bodies[1][1] == server.requests[2].body
    assert len(observer.generations) == 1
    assert "observer-error" in [r.kind for r in caplog.records]


def test_filter_tool_call_id_de_collides_and_keeps_the_fc_half():
    from turnwire.stages.client_hooks import filter_tool_call_id

    assert (
        filter_tool_call_id(tool_call_id="call_1|fc_1", existing_ids=frozenset()) == "call_1|fc_1"
    )
    fresh = filter_tool_call_id(tool_call_id="call_1|fc_1", existing_ids=frozenset({"call_1|fc_1"}))
    assert fresh.endswith("|fc_1") and fresh.startswith("call_") and fresh != "call_1|fc_1"
    bare = filter_tool_call_id(tool_call_id="call_1", existing_ids=frozenset({"call_1"}))
    assert "|" not in bare and bare != "call_1"


def test_a_filter_tool_call_id_plugin_decides_the_stored_id(thread_file):
    class Prefixer:
        @hookimpl
        def filter_tool_call_id(self, tool_call_id):
            return "x-" + tool_call_id

    container = make_container(extra_plugins=[Prefixer()])
    with ScriptedServer([Reply.sse(CALL), Reply.sse(AFTER_CALL)]) as server:
        result = run(server, thread_file, container=container)
    assert result.records.tool_calls[0].id.startswith("x-call_")


def test_a_small_result_forced_to_a_handle_still_gets_the_artifact_tools(tmp_path):
    """The client declares the artifact tools by the same rule the stage shows handles by."""
    path = tmp_path / "t.yaml"
    path.write_text(
        THREAD
        + """tool_calls:
  - {id: "call_0", tool: get_capital, created_at: "2026-01-01T10:00:01Z", inline: false,
     result: {artifact: {text: "tiny"}}}
"""
    )
    with ScriptedServer([Reply.sse(TEXT)]) as server:
        run(server, path)
    sent = server.requests[0].json
    assert 'kind="artifact-handle"' in sent["input"][2]["output"]
    assert "artifact_head" in {t["name"] for t in sent["tools"]}


def test_a_retrieved_document_handle_is_readable_with_the_artifact_tools(tmp_path):
    log = tmp_path / "report.txt"
    log.write_text("alpha\nbeta\ngamma\n")
    path = tmp_path / "t.yaml"
    path.write_text(
        THREAD
        + f"""retrievables:
  - {{id: doc-1, trust_tier: first-party, artifact: {{path: {log}}}}}
"""
    )
    head_call = CALL.replace(b"get_capital", b"artifact_grep").replace(
        b'{\\"country\\":\\"France\\"}', b'{\\"callId\\":\\"doc-1\\",\\"pattern\\":\\"be\\"}'
    )
    assert b"artifact_grep" in head_call and b"doc-1" in head_call
    with ScriptedServer([Reply.sse(head_call), Reply.sse(AFTER_CALL)]) as server:
        result = run(server, path)
    first = server.requests[0].json
    assert "This retrieved record is large" in first["instructions"]
    assert "artifact_grep" in {t["name"] for t in first["tools"]}
    call = result.records.tool_calls[0]
    assert (call.tool, call.is_error, call.result.text) == ("artifact_grep", False, "2: beta")


def test_a_json_answer_nested_too_deeply_is_a_stream_error(thread_file):
    deep = b"[" * 100_000 + b"]" * 100_000
    reply = Reply(status=200, chunks=[deep], content_type="application/json")
    before = Path(thread_file).read_bytes() if isinstance(thread_file, Path) else None
    with ScriptedServer([reply]) as server:
        with pytest.raises(turnwire.StreamError, match="nested too deeply"):
            run(server, thread_file, settings={"client": {"stream": False}})
    if before is not None:
        assert Path(thread_file).read_bytes() == before


def test_a_thread_file_saved_by_another_run_meanwhile_is_not_overwritten(thread_file):
    """Two runs of one file: the one that saves last would drop the other's turn. It finds
    the file changed since it read it, writes nothing and says so (E_THREAD_FILE_CONFLICT)."""
    from turnwire.errors import ThreadFileChangedError

    other = (
        THREAD + '  - {id: u9, role: user, content: "from the other run", created_at: '
        '"2026-01-01T10:00:09Z"}\n'
    )

    def get_capital(country="?"):
        thread_file.write_text(other)  # the other run saves while this one runs its tool
        return f"the capital of {country}"

    with ScriptedServer([Reply.sse(CALL), Reply.sse(AFTER_CALL)]) as server:
        with pytest.raises(ThreadFileChangedError) as caught:
            run(server, thread_file, handlers={"get_capital": get_capital})
    assert thread_file.read_text() == other
    assert caught.value.code == "E_THREAD_FILE_CONFLICT" and not caught.value.fatal
    assert str(thread_file) in str(caught.value)
    assert caught.value.result.records.tool_calls  # what this run recorded, for the caller
    assert not list(thread_file.parent.glob(".*.tmp"))


def test_a_run_that_saves_over_the_file_it_read_saves(thread_file):
    with ScriptedServer([Reply.sse(TEXT)]) as server:
        run(server, thread_file)
    assert "Hi in Portuguese" in thread_file.read_text()


def test_a_thread_saved_by_run_once_renders_to_a_clear_error_until_its_calls_run(thread_file):
    from turnwire.errors import PreflightError

    with ScriptedServer([Reply.sse(CALL)]) as server:
        run(server, thread_file, once=True)
    saved = turnwire.load_thread(thread_file)
    (pending,) = saved.tool_calls
    assert pending.result is None
    with pytest.raises(PreflightError) as caught:
        turnwire.render(saved, container=make_container())
    assert caught.value.rule == "call-output-pairing"
    assert str(caught.value).startswith(f"$.tool_calls[0]: tool call {pending.id!r}")
    assert "`turnwire run` runs them first" in str(caught.value)
    with ScriptedServer([Reply.sse(AFTER_CALL)]) as server:  # and the next run runs it
        result = run(server, thread_file)
    assert result.resolved and turnwire.render(turnwire.load_thread(thread_file)).body


def test_a_transport_option_given_to_run_wins_and_an_unknown_one_is_named(thread_file):
    reply = Reply.sse(TEXT, chunk=500, delay_s=0.25)
    with ScriptedServer([reply]) as server, pytest.raises(RequestTimeoutError):
        run(server, thread_file, request_timeout_s=0.6)  # over client.request_timeout_s
    with ScriptedServer([Reply.sse(TEXT)]) as server:
        with pytest.raises(
            TypeError, match=r"unexpected keyword argument 'temperature'.*request\.temperature"
        ):
            run(server, thread_file, temperature=0.2)
    assert_unchanged(thread_file)
