"""An answer is finished only when the server said so: a stream that ends, or drops, before
``response.completed``, ``response.incomplete`` or ``response.failed`` is a stream error with
the partial output attached, nothing of it is recorded, and no call in it runs (DESIGN.md,
"Where we deliberately do better", 15)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

import turnwire
from turnwire.client.reading import finish_reason
from turnwire.errors import StreamError
from turnwire.wire.response import Generation

from ..conftest import REPLAY, assistant, at, make_container, prefix_fingerprint, thread
from .conftest import AFTER_CALL, CALL, TEXT, THREAD, Sleeps
from .server import Reply, ScriptedServer


def _run(server: ScriptedServer, source: Path, ran: list[dict] | None = None, **settings):
    """A saving run with retries on (two of them, without waiting)."""
    calls = ran if ran is not None else []
    return turnwire.api.run(
        source,
        container=make_container({"client": {"retry": {"max_retries": 2}}, **settings}),
        base_url=server.base_url,
        save=True,
        handlers={"get_capital": lambda **kw: calls.append(kw) or "Paris"},
        sleep=Sleeps(),
        jitter=lambda: 0.0,
    )


def _before(data: bytes, marker: bytes) -> bytes:
    """``data`` up to the SSE event that holds ``marker``."""
    return data[: data.rindex(b"event: ", 0, data.index(marker))]


def _kinds(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [getattr(record, "kind", "") for record in caplog.records]


@pytest.mark.parametrize("chunk", [1, 7, 4096])
def test_a_clean_end_without_a_terminal_event_fails_with_the_partial_text_and_records_nothing(
    thread_file, caplog, chunk
):
    cut = _before(TEXT, b'"type":"response.output_text.done"')
    with ScriptedServer([Reply.sse(cut, chunk=chunk)]) as server:
        with caplog.at_level(logging.WARNING, logger="turnwire"):
            with pytest.raises(StreamError) as caught:
                _run(server, thread_file)
    error = caught.value
    assert type(error) is StreamError and error.code == "E_OPENAI_RESPONSES_STREAM_ERROR"
    assert "the stream ended before the response finished" in str(error)
    assert "nothing of it was recorded" in str(error)
    assert error.partial.terminal == "eof" and error.partial.text.startswith("Hi in Portuguese")
    assert finish_reason(error.partial) == "error"
    assert "sse-eof-without-terminal-event" in _kinds(caplog)
    assert len(server.requests) == 1  # output began: never retried
    assert thread_file.read_text() == THREAD


def test_a_disconnect_mid_stream_fails_with_the_partial_text_and_records_nothing(
    thread_file, caplog
):
    reply = Reply.sse(_before(TEXT, b'"type":"response.output_text.done"'), chunk=512)
    reply.close_after = len(reply.chunks)  # the connection closes without its final chunk
    with ScriptedServer([reply]) as server, caplog.at_level(logging.WARNING, logger="turnwire"):
        with pytest.raises(StreamError) as caught:
            _run(server, thread_file)
    error = caught.value
    assert "the connection dropped mid-stream before the response finished" in str(error)
    assert isinstance(error.__cause__, StreamError)
    assert "the connection failed mid-answer" in str(error.__cause__)
    assert error.partial.text.startswith("Hi in Portuguese")
    kinds = _kinds(caplog)
    assert "stream-disconnected" in kinds and "sse-eof-without-terminal-event" in kinds
    assert len(server.requests) == 1
    assert thread_file.read_text() == THREAD


def test_a_call_cut_mid_arguments_never_runs(thread_file):
    cut = _before(CALL, b'"delta":"France"')
    ran: list[dict] = []
    with ScriptedServer([Reply.sse(cut), Reply.sse(AFTER_CALL)]) as server:
        with pytest.raises(StreamError) as caught:
            _run(server, thread_file, ran)
    (call,) = caught.value.partial.tool_calls
    assert (call.name, call.arguments) == ("get_capital", '{"country":"')
    assert ran == []
    assert len(server.requests) == 1  # no error result was sent back for it either
    assert thread_file.read_text() == THREAD


def test_a_finished_call_in_an_unfinished_response_never_runs(thread_file):
    cut = _before(CALL, b'"type":"response.completed"')
    ran: list[dict] = []
    with ScriptedServer([Reply.sse(cut), Reply.sse(AFTER_CALL)]) as server:
        with pytest.raises(StreamError) as caught:
            _run(server, thread_file, ran)
    (call,) = caught.value.partial.tool_calls
    assert call.arguments == '{"country":"France"}'
    assert ran == [] and len(server.requests) == 1
    assert thread_file.read_text() == THREAD


def test_a_response_that_another_one_interrupts_is_no_answer(thread_file):
    interrupted = _before(TEXT, b'"type":"response.output_text.done"')
    with ScriptedServer([Reply.sse(interrupted + TEXT)]) as server:
        with pytest.raises(StreamError) as caught:
            _run(server, thread_file)
    assert "another response began before the response finished" in str(caught.value)
    assert caught.value.partial.text.startswith("Hi in Portuguese")
    assert thread_file.read_text() == THREAD


def _replay_thread(path: Path) -> Path:
    """A thread whose request replays a reasoning item (paired with the answer after it)."""
    question = {"id": "u1", "role": "user", "content": "hi", "created_at": at(0)}
    fingerprint = prefix_fingerprint(thread(model="gpt-5", messages=[question]), REPLAY)
    item = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA-x"}
    payload = {
        "variant": "responses-reasoning",
        "item": item,
        "paired_item_id": "msg_1",
        "prefix_fingerprint": fingerprint,
    }
    document = {
        "version": 1,
        "model": "gpt-5",
        "messages": [question, assistant("msg_1", "hello", 2, seq=1)],
        "thoughts": [
            {
                "id": "rs_1",
                "created_at": at(2),
                "seq": 0,
                "replay_compatibility": "openai-responses-reasoning-v1",
                "payload": payload,
            }
        ],
    }
    path.write_text(json.dumps(document))
    return path


def test_an_unfinished_answer_never_triggers_the_reasoning_free_retry(tmp_path):
    """The retry answers a 400 that blames replayed reasoning; an answer that began and never
    finished is not one, even when the request carried reasoning."""
    path = _replay_thread(tmp_path / "t.json")
    before = path.read_bytes()
    cut = _before(TEXT, b'"type":"response.output_text.done"')
    with ScriptedServer([Reply.sse(cut), Reply.sse(TEXT)]) as server:
        with pytest.raises(StreamError):
            turnwire.api.run(
                path,
                container=make_container({**REPLAY, "client": {"retry": {"max_retries": 2}}}),
                base_url=server.base_url,
                save=True,
                sleep=Sleeps(),
                jitter=lambda: 0.0,
            )
    assert "reasoning" in [item.get("type") for item in server.requests[0].json["input"]]
    assert len(server.requests) == 1
    assert path.read_bytes() == before


def test_a_stored_thread_gets_no_turn_from_an_unfinished_answer(tmp_path):
    from turnwire.store.sqlite import SQLiteStore

    with SQLiteStore(tmp_path / "t.db") as store:
        header = turnwire.load_thread({"version": 1, "model": "gpt-4o"})
        thread_id = store.create_thread(header)
        cut = _before(TEXT, b'"type":"response.output_text.done"')
        with ScriptedServer([Reply.sse(cut)]) as server, pytest.raises(StreamError) as caught:
            turnwire.run_thread(
                thread_id,
                store=store,
                prompt="hi",
                container=make_container(),
                base_url=server.base_url,
            )
        assert caught.value.partial.text.startswith("Hi in Portuguese")
        assert store.turns(thread_id) == []


@pytest.mark.parametrize(
    ("generation", "reason"),
    [
        (Generation(terminal="eof"), "error"),
        (Generation(terminal="eof", status="incomplete"), "error"),
        (Generation(terminal="eof", status="completed"), "error"),
        (Generation(terminal="completed", status="completed"), "stop"),
    ],
)
def test_an_unfinished_response_has_no_finish_reason_but_error(generation, reason):
    assert finish_reason(generation) == reason
