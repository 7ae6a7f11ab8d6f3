"""Answers in the shapes gateways and third-party servers give, on a real local server: media
types in any case or none at all, and a failure sent mid-stream as an HTTP error body (an
``error`` object with no event ``type``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import turnwire
from turnwire.errors import StreamError

from ..conftest import make_container
from .server import Reply, ScriptedServer, recorded
from .test_output_shapes import THREAD

TEXT = recorded("text_simple_gpt-4o-mini.sse")


def _run(path: Path, reply: Reply) -> turnwire.RunResult:
    with ScriptedServer([reply]) as server:
        return turnwire.api.run(
            path,
            container=make_container({"client": {"retry": {"max_retries": 0}}}),
            base_url=server.base_url,
            save=True,
        )


@pytest.fixture
def thread_file(tmp_path: Path) -> Path:
    path = tmp_path / "t.yaml"
    path.write_text(THREAD)
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
def test_a_stream_is_read_as_events_unless_the_answer_says_json(thread_file, content_type):
    result = _run(thread_file, Reply.sse(TEXT, content_type=content_type))
    assert result.response.finish_reason == "stop"
    assert result.records.messages[0].content.startswith("Hi in Portuguese")


@pytest.mark.parametrize("content_type", ["application/json", "Application/JSON; charset=utf-8"])
def test_a_json_answer_to_a_streaming_request_is_read_whole_in_any_case(thread_file, content_type):
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
    result = _run(thread_file, reply)
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
    thread_file, named, error
):
    """A gateway's failure in the middle of an answer, in the shape of its HTTP error body
    (the frame diegosouzapw/OmniRoute#13431 quotes), with or without ``event: error``."""
    before = thread_file.read_text()
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
        _run(thread_file, Reply.sse("".join(frames).encode()))
    assert "upstream overloaded" in str(caught.value)
    assert caught.value.code == "E_OPENAI_RESPONSES_STREAM_ERROR"
    assert thread_file.read_text() == before


def test_an_error_text_with_escape_sequences_reaches_the_terminal_escaped(thread_file):
    from turnwire.errors import HttpError

    raw = b"upstream says \x1b]0;pwned\x07\x1b[2J\x1b[31mRED"  # a plain-text error body
    reply = Reply(status=400, chunks=[raw], content_type="text/plain")
    with ScriptedServer([reply]) as server, pytest.raises(HttpError) as caught:
        turnwire.api.run(
            thread_file,
            container=make_container({"client": {"retry": {"max_retries": 0}}}),
            base_url=server.base_url,
        )
    shown = str(caught.value)
    assert "\x1b" not in shown and "\x07" not in shown
    assert "upstream says \\x1b]0;pwned\\x07\\x1b[2J\\x1b[31mRED" in shown
