"""What the server reported, kept whole and checked: items built from the terminal response when
no output_item events came, disagreements logged, hostile shapes refused cleanly before anything
is stored, and answerless statuses (cancelled, failed, null) as stream errors."""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import turnwire
from turnwire.errors import StreamError

from ..conftest import make_container, turnwire_process
from .server import Reply, ScriptedServer, recorded

THREAD = """\
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
CALL = {
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
        {"type": "response.completed", "response": _response([CALL, MESSAGE])},
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
    ("arguments-object", [CALL], _set(0, "arguments", {}), {}, "output[0].arguments"),
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
    ("missing-call-id", [CALL], _drop(0, "call_id"), {}, "output[0].call_id"),
    ("name-not-a-string", [CALL], _set(0, "name", 5), {}, "output[0].name"),
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
    if fields is None:  # the example of the issue: an int where the text goes
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
    path.write_text(THREAD)
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


# ------------------------------------------------------------------ answerless statuses


TEXT = recorded("text_simple_gpt-4o-mini.sse")


@pytest.mark.parametrize("status", ["cancelled", "failed"])
def test_a_cancelled_or_failed_status_is_a_stream_error_with_nothing_recorded(tmp_path, status):
    path = tmp_path / "thread.yaml"
    path.write_text(THREAD)
    stream = streamed([MESSAGE], _response([MESSAGE], status))
    with pytest.raises(StreamError) as caught:
        _run(path, [Reply.sse(stream)], save=True)
    assert status in str(caught.value) or caught.value.error_code == status
    assert path.read_text() == THREAD


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
def test_arguments_the_thread_file_could_not_hold_are_answered_as_an_error_and_never_stored(
    tmp_path, arguments
):
    """The call is answered with an error result the model can act on; the saved thread file
    loads and renders again, and holds no trace of the value."""
    path = tmp_path / "thread.yaml"
    path.write_text(THREAD)
    call = {**CALL, "arguments": arguments}
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
    assert stored.args == {} and stored.is_error
    assert stored.result.text.startswith("Tool arguments are out of bounds (")
    (answered,) = [
        item for item in server.requests[1].json["input"] if item["type"] == "function_call_output"
    ]
    assert "out of bounds" in answered["output"]
    turnwire.render(saved, container=make_container())
