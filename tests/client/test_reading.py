"""Stream reading: an answer into a generation. A stream that ends without its terminal event,
drops mid-stream or stalls raises with the partial answer and records nothing, malformed frames
are skipped (logged redacted), a failed stream or an answerless status is a stream
error, finish reasons; and what the server reported is kept whole and checked: items built from the
terminal response when no output_item events came, disagreements logged, hostile shapes refused
cleanly before anything is stored."""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import turnwire
from turnwire.client.dispatch import finish_reason
from turnwire.errors import (
    StreamError,
    StreamStalledError,
)
from turnwire.wire.response import Generation, ToolCallOutput

from ..conftest import (
    CONFORMANCE,
    make_container,
    turnwire_process,
)
from .conftest import TEXT, assert_unchanged, run
from .server import Reply, ScriptedServer, recorded


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


# ------------------------------------------------------------------ the stream


def _truncated(data: bytes) -> bytes:
    return data[: data.index(b"event: response.output_text.done")]


def test_a_clean_end_without_a_terminal_event_raises_with_the_partial_answer(thread_file, caplog):
    with ScriptedServer([Reply.sse(_truncated(TEXT))]) as server:
        with caplog.at_level(logging.WARNING, logger="turnwire"):
            with pytest.raises(StreamError) as caught:
                run(server, thread_file)
    assert "sse-eof-without-terminal-event" in [r.kind for r in caplog.records]
    partial = caught.value.partial
    assert partial.terminal == "eof" and partial.text.startswith("Hi in Portuguese")
    assert len(server.requests) == 1
    assert_unchanged(thread_file)


def test_a_disconnect_mid_stream_raises_with_the_partial_answer(thread_file, caplog):
    reply = Reply.sse(_truncated(TEXT), chunk=512)
    reply.close_after = len(reply.chunks)
    with ScriptedServer([reply]) as server, caplog.at_level(logging.WARNING, logger="turnwire"):
        with pytest.raises(StreamError) as caught:
            run(server, thread_file)
    kinds = [r.kind for r in caplog.records]
    assert "stream-disconnected" in kinds and "sse-eof-without-terminal-event" in kinds
    assert caught.value.partial.text.startswith("Hi in Portuguese")
    assert len(server.requests) == 1
    assert_unchanged(thread_file)


def test_a_stalled_stream_raises_with_the_partial_answer_and_records_nothing(thread_file):
    reply = Reply.sse(TEXT, chunk=900, stall_after=3)
    with ScriptedServer([reply]) as server, pytest.raises(StreamStalledError) as caught:
        run(server, thread_file, settings={"client": {"stream_idle_timeout_s": 0.3}})
    partial = caught.value.partial
    assert partial is not None and partial.terminal == "eof"
    assert len(server.requests) == 1
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


def test_a_json_answer_nested_too_deeply_is_a_stream_error(thread_file):
    deep = b"[" * 100_000 + b"]" * 100_000
    reply = Reply(status=200, chunks=[deep], content_type="application/json")
    before = Path(thread_file).read_bytes() if isinstance(thread_file, Path) else None
    with ScriptedServer([reply]) as server:
        with pytest.raises(turnwire.StreamError, match="nested too deeply"):
            run(server, thread_file, settings={"client": {"stream": False}})
    if before is not None:
        assert Path(thread_file).read_bytes() == before


@pytest.mark.parametrize(
    ("generation", "expected"),
    [
        (Generation(terminal="completed", status="completed"), "stop"),
        (
            Generation(
                terminal="completed",
                status="completed",
                outputs=(
                    ToolCallOutput(
                        output_index=0, item_id="fc_1", call_id="c", name="f", arguments="{}"
                    ),
                ),
            ),
            "tool_calls",
        ),
        (
            Generation(
                terminal="incomplete", status="incomplete", incomplete_reason="max_output_tokens"
            ),
            "length",
        ),
        (Generation(terminal="incomplete", status="incomplete", incomplete_reason=None), "length"),
        (
            Generation(
                terminal="incomplete", status="incomplete", incomplete_reason="content_filter"
            ),
            "content_filter",
        ),
        (Generation(terminal="failed", status="failed"), "error"),
        (Generation(terminal="eof"), "error"),
    ],
)
def test_finish_reasons(generation, expected):
    assert finish_reason(generation) == expected


SHAPES_THREAD = """\
version: 1
model: gpt-5
tools:
  - {name: get_capital, parameters: {type: object, properties: {country: {type: string}}}}
messages:
  - {id: u1, role: user, content: "Capital of France?", created_at: "2026-01-01T10:00:00Z"}
"""


MESSAGE = {
    "type": "message",
    "id": "msg_1",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "output_text", "text": "Paris.", "annotations": []}],
}


REASONING = {
    "type": "reasoning",
    "id": "rs_1",
    "summary": [{"type": "summary_text", "text": "Think of France."}],
    "encrypted_content": "gAAAA-done-copy",
}


SHAPES_CALL = {
    "type": "function_call",
    "id": "fc_1",
    "call_id": "call_1",
    "name": "get_capital",
    "arguments": '{"country":"France"}',
    "status": "completed",
}


def _response(output: Any, status: str = "completed", **extra: Any) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "status": status,
        "model": "gpt-5",
        "output": output,
        "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
        **extra,
    }


def _skeleton(item: Any) -> Any:
    """An item as output_item.added carries it: no content, arguments or summary yet."""
    if not isinstance(item, dict):
        return item
    empty = {"message": {"content": []}, "function_call": {"arguments": ""}}
    return {**item, **empty.get(item.get("type"), {})}


def sse(*events: dict[str, Any]) -> bytes:
    """SSE bytes for ``events``, numbered in order."""
    out = []
    for number, event in enumerate(events):
        payload = {**event, "sequence_number": number}
        out.append(f"event: {event['type']}\ndata: {json.dumps(payload)}\n\n")
    return "".join(out).encode()


def streamed(items: list[Any], response: dict[str, Any] | None = None) -> bytes:
    """A stream in OpenAI's shape: every item added then done, then the terminal response."""
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": _response([], "in_progress")}
    ]
    for index, item in enumerate(items):
        events.append(
            {"type": "response.output_item.added", "output_index": index, "item": _skeleton(item)}
        )
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append({"type": "response.completed", "response": response or _response(items)})
    return sse(*events)


def _run(source: Any, replies: list[Reply], **options: Any) -> Any:
    with ScriptedServer(replies) as server:
        return turnwire.api.run(
            source,
            container=make_container({"client": {"retry": {"max_retries": 0}}}),
            base_url=server.base_url,
            handlers={"get_capital": lambda country: f"the capital of {country}"},
            **options,
        )


# ------------------------------------------------------------------ nothing lost


def test_a_server_that_never_sends_output_items_still_gives_its_records(caplog):
    """open-responses-server's shape: deltas at most, and the items only in response.completed."""
    stream = sse(
        {"type": "response.created", "response": _response([], "in_progress")},
        {"type": "response.in_progress", "response": _response([], "in_progress")},
        {
            "type": "response.output_text.delta",
            "output_index": 1,
            "item_id": "msg_1",
            "delta": "Par",
        },
        {
            "type": "response.output_text.delta",
            "output_index": 1,
            "item_id": "msg_1",
            "delta": "is.",
        },
        {"type": "response.completed", "response": _response([SHAPES_CALL, MESSAGE])},
    )
    thread = turnwire.load_thread(
        {"version": 1, "model": "gpt-5", "messages": [MESSAGE_USER], "tools": [TOOL]}
    )
    with caplog.at_level(logging.WARNING, logger="turnwire"):
        result = _run(thread, [Reply.sse(stream)], once=True)
    warned = [r for r in caplog.records if r.kind == "output-from-terminal-response"]
    assert len(warned) == 1 and "output[0], output[1]" in warned[0].getMessage()
    call = result.records.tool_calls[0]
    assert (call.id, call.tool, call.args) == ("call_1|fc_1", "get_capital", {"country": "France"})
    assert [(m.id, m.content) for m in result.records.messages] == [("msg_1", "Paris.")]
    assert result.response.finish_reason == "tool_calls"


MESSAGE_USER = {
    "id": "u1",
    "role": "user",
    "content": "Capital?",
    "created_at": "2026-01-01T10:00:00Z",
}


TOOL = {"name": "get_capital"}


def test_an_empty_answer_is_the_only_silent_one(caplog):
    thread = turnwire.load_thread({"version": 1, "model": "gpt-5", "messages": [MESSAGE_USER]})
    with caplog.at_level(logging.WARNING, logger="turnwire"):
        result = _run(thread, [Reply.sse(streamed([]))])
    assert result.records == type(result.records)()
    assert not [r for r in caplog.records if r.kind.startswith(("output-", "terminal-"))]


def test_a_terminal_output_that_disagrees_is_logged_and_the_streamed_items_kept(caplog):
    other = {**MESSAGE, "content": [{"type": "output_text", "text": "Lyon.", "annotations": []}]}
    stream = streamed([MESSAGE], _response([other]))
    thread = turnwire.load_thread({"version": 1, "model": "gpt-5", "messages": [MESSAGE_USER]})
    with caplog.at_level(logging.WARNING, logger="turnwire"):
        result = _run(thread, [Reply.sse(stream)])
    warned = [r.getMessage() for r in caplog.records if r.kind == "terminal-output-mismatch"]
    assert len(warned) == 1 and "output[0] (message) differs" in warned[0]
    assert result.records.messages[0].content == "Paris."


def test_the_encrypted_content_kept_is_the_done_one_not_the_terminal_copy():
    terminal = {**REASONING, "encrypted_content": "gAAAA-terminal-copy"}
    stream = streamed([REASONING, MESSAGE], _response([terminal, MESSAGE]))
    thread = turnwire.load_thread({"version": 1, "model": "gpt-5", "messages": [MESSAGE_USER]})
    with ScriptedServer([Reply.sse(stream)]) as server:
        result = turnwire.api.run(
            thread,
            container=make_container(
                {
                    "render": {
                        "reasoning_replay": "encrypted",
                        "replay_compatibility": ["openai-responses-reasoning-v1"],
                    }
                }
            ),
            base_url=server.base_url,
        )
    payload = result.records.thoughts[0].payload
    assert payload.item.encrypted_content == "gAAAA-done-copy"


# ------------------------------------------------------------------ hostile shapes


def _set(index: int, key: str, value: Any) -> Callable[[list[Any]], list[Any]]:
    def mutate(items: list[Any]) -> list[Any]:
        items[index] = {**items[index], key: value}
        return items

    return mutate


def _drop(index: int, key: str) -> Callable[[list[Any]], list[Any]]:
    def mutate(items: list[Any]) -> list[Any]:
        items[index] = {k: v for k, v in items[index].items() if k != key}
        return items

    return mutate


def _replace(index: int, value: Any) -> Callable[[list[Any]], list[Any]]:
    def mutate(items: list[Any]) -> list[Any]:
        items[index] = value
        return items

    return mutate


# (id, base items, item mutation, response fields, the field the error must name)
SHAPES = [
    ("content-non-objects", [MESSAGE], _set(0, "content", ["x", 5]), {}, "output[0].content[0]"),
    ("arguments-object", [SHAPES_CALL], _set(0, "arguments", {}), {}, "output[0].arguments"),
    ("error-string", [MESSAGE], None, {"error": "boom"}, "response.error"),
    ("int-id", [MESSAGE], _set(0, "id", 5), {}, "output[0].id"),
    ("object-phase", [MESSAGE], _set(0, "phase", {"a": 1}), {}, "output[0].phase"),
    (
        "object-encrypted-content",
        [REASONING, MESSAGE],
        _set(0, "encrypted_content", {"a": 1}),
        {},
        "output[0].encrypted_content",
    ),
    ("missing-call-id", [SHAPES_CALL], _drop(0, "call_id"), {}, "output[0].call_id"),
    ("name-not-a-string", [SHAPES_CALL], _set(0, "name", 5), {}, "output[0].name"),
    ("summary-not-a-list", [REASONING, MESSAGE], _set(0, "summary", "x"), {}, "output[0].summary"),
    ("output-not-a-list", [MESSAGE], None, {"output": "x"}, "response.output"),
    ("item-not-an-object", [MESSAGE], _replace(0, "x"), {}, "item"),
    # An item status the spec lacks is kept (servers send "ready"); one that is no string is not.
    ("status-not-a-string", [MESSAGE], _set(0, "status", {"x": 1}), {}, "output[0].status"),
    ("text-not-a-string", [REASONING, MESSAGE], None, None, "output[1].content[0].text"),
    ("response-status-unknown", [MESSAGE], None, {"status": "exploded"}, "response.status"),
]


def _hostile(items: list[Any], mutate: Any, fields: dict[str, Any] | None) -> bytes:
    items = copy.deepcopy(items)
    if fields is None:  # an int where the text goes
        items[1] = {**items[1], "content": [{"type": "output_text", "text": 5}]}
        fields = {}
    if mutate is not None:
        items = mutate(items)
    return streamed(items, {**_response(items), **fields})


@pytest.mark.parametrize(
    ("items", "mutate", "fields", "where"),
    [shape[1:] for shape in SHAPES],
    ids=[shape[0] for shape in SHAPES],
)
def test_a_hostile_shape_is_one_clean_error_and_the_thread_file_stays_as_it_was(
    tmp_path: Path, items, mutate, fields, where
):
    path = tmp_path / "thread.yaml"
    path.write_text(SHAPES_THREAD)
    before = path.read_bytes()
    config = tmp_path / "c.yaml"
    config.write_text(
        "plugins: {load_entrypoints: false}\nclient: {retry: {max_retries: 0}}\n"
        "render: {reasoning_replay: encrypted, replay_compatibility: "
        "[openai-responses-reasoning-v1]}\n"
    )
    stream = _hostile(items, mutate, fields)
    with ScriptedServer([Reply.sse(stream)]) as server:
        done = turnwire_process(
            "run", str(path), "--base-url", server.base_url, "--config", str(config), "--save"
        )
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert "Traceback" not in done.stderr
    assert [line for line in lines if line.startswith("error:")] == [lines[-1]]
    assert lines[-1].startswith("error: E_OPENAI_RESPONSES_STREAM_ERROR: stream error: response")
    assert f" {where}" in lines[-1] or f".{where}" in lines[-1]
    assert path.read_bytes() == before


def test_the_shape_error_names_the_event_and_the_field():
    stream = _hostile([REASONING, MESSAGE], None, None)
    thread = turnwire.load_thread({"version": 1, "model": "gpt-5", "messages": [MESSAGE_USER]})
    with pytest.raises(StreamError) as caught:
        _run(thread, [Reply.sse(stream)])
    error = caught.value
    assert (error.event, error.field) == ("response.output_item.done", "output[1].content[0].text")
    assert "response.output_item.done output[1].content[0].text: expected str, got int" in str(
        error
    )


def test_a_non_streamed_answer_is_checked_the_same_way():
    bad = _response([{**MESSAGE, "id": 5}])
    thread = turnwire.load_thread({"version": 1, "model": "gpt-5", "messages": [MESSAGE_USER]})
    with ScriptedServer([Reply.json(200, bad)]) as server, pytest.raises(StreamError) as caught:
        turnwire.api.run(
            thread,
            container=make_container({"client": {"stream": False}}),
            base_url=server.base_url,
        )
    assert (caught.value.event, caught.value.field) == ("response", "output[0].id")


@pytest.mark.parametrize("status", ["cancelled", "failed"])
def test_a_cancelled_or_failed_status_is_a_stream_error_with_nothing_recorded(tmp_path, status):
    path = tmp_path / "thread.yaml"
    path.write_text(SHAPES_THREAD)
    stream = streamed([MESSAGE], _response([MESSAGE], status))
    with pytest.raises(StreamError) as caught:
        _run(path, [Reply.sse(stream)], save=True)
    assert status in str(caught.value) or caught.value.error_code == status
    assert path.read_text() == SHAPES_THREAD


def test_incomplete_stays_an_answer():
    stream = streamed(
        [MESSAGE],
        _response([MESSAGE], "incomplete", incomplete_details={"reason": "max_output_tokens"}),
    )
    thread = turnwire.load_thread({"version": 1, "model": "gpt-5", "messages": [MESSAGE_USER]})
    result = _run(thread, [Reply.sse(stream)])
    assert result.response.finish_reason == "length"
    assert result.records.messages[0].content == "Paris."


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (None, "expected a response object, got null"),
        ([1, 2], "expected a response object, got list"),
        (5, "expected a response object, got int"),
        (_response([MESSAGE], "cancelled"), "cancelled"),
    ],
    ids=["null", "array", "number", "cancelled"],
)
def test_a_json_answer_that_is_no_answer_is_a_clean_stream_error(answer, expected):
    thread = turnwire.load_thread({"version": 1, "model": "gpt-5", "messages": [MESSAGE_USER]})
    with ScriptedServer([Reply.json(200, answer)]) as server, pytest.raises(StreamError) as caught:
        turnwire.api.run(
            thread,
            container=make_container({"client": {"stream": False}}),
            base_url=server.base_url,
        )
    assert expected in str(caught.value)


def test_a_hostile_shape_leaves_a_stored_thread_as_it_was_and_showable(tmp_path):
    from turnwire.store.sqlite import SQLiteStore

    db = tmp_path / "t.db"
    with SQLiteStore(db) as store:
        thread_id = store.create_thread(turnwire.load_thread({"version": 1, "model": "gpt-5"}))
    stream = streamed([{**MESSAGE, "id": 5, "phase": {"a": 1}}])
    with ScriptedServer([Reply.sse(stream)]) as server:
        done = turnwire_process(
            "run", "--thread", thread_id, "--store", str(db), "--prompt", "hi",
            "--base-url", server.base_url,
        )  # fmt: skip
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "output[0].id: expected str | null, got int" in done.stderr.splitlines()[-1]
    with SQLiteStore(db) as store:
        assert store.turns(thread_id) == []
    shown = turnwire_process("threads", "show", thread_id, "--store", str(db))
    assert shown.returncode == 0, shown.stderr


@pytest.mark.parametrize(
    "arguments",
    [
        '{"country":"France","n":1' + "0" * 100 + "}",
        '{"country":NaN}',
        '{"a":' * 70 + "1" + "}" * 70,
    ],
)
def test_arguments_the_thread_file_could_not_hold_are_answered_as_an_error_and_kept_as_text(
    tmp_path, arguments
):
    """The call is answered with an error result the model can act on; the saved thread file
    loads and renders again, and holds the value only as the text the model sent."""
    path = tmp_path / "thread.yaml"
    path.write_text(SHAPES_THREAD)
    call = {**SHAPES_CALL, "arguments": arguments}
    replies = [Reply.sse(streamed([call])), Reply.sse(streamed([MESSAGE]))]
    with ScriptedServer(replies) as server:
        turnwire.api.run(
            path,
            container=make_container({"client": {"retry": {"max_retries": 0}}}),
            base_url=server.base_url,
            handlers={"get_capital": lambda **kw: pytest.fail("the tool must not run")},
            save=True,
        )
    saved = turnwire.load_thread(path)
    (stored,) = saved.tool_calls
    assert stored.args == {} and stored.is_error and stored.raw_args == arguments
    assert stored.result.text.startswith("Tool arguments are out of bounds (")
    sent = server.requests[1].json["input"]
    (answered,) = [item for item in sent if item["type"] == "function_call_output"]
    assert "out of bounds" in answered["output"]
    (replayed,) = [item for item in sent if item["type"] == "function_call"]
    assert replayed["arguments"] == arguments
    turnwire.render(saved, container=make_container())
