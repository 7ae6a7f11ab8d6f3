"""Compaction through a real local server: ``POST /responses/compact`` with the rendered input,
the compaction item stored as a turn, and the next request sending it in place of the turns it
covers, in the shape of the recorded accepted request (``[compaction, new user message]``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

import turnwire
from turnwire.api import compact_thread, run_thread
from turnwire.errors import HttpError, InputError, StreamError
from turnwire.rendering.compaction import COMPACT_FIELDS, compacted
from turnwire.store import open_store
from turnwire.store.turns import HostedPart

from ..conftest import CONFORMANCE, assistant, make_container, thread, user
from ..oracle import validate_body, validate_compact_body
from .server import Reply, ScriptedServer, recorded

ANSWER = recorded("text_simple_gpt-4o-mini.sse")
ACCEPTED = CONFORMANCE / "requests" / "compaction_item_replay_gpt-4o-mini.json"
SYSTEM = "You are a helpful math assistant. Give short answers."


def compact_answer(cid: str = "cmp_1", *retained: str) -> dict[str, Any]:
    """A ``response.compaction`` object: the retained user messages, then the compaction, in
    the shape of the compact endpoint's recorded answer (pydantic-ai's cassette
    ``test_openai_responses_compact_messages.yaml``, interaction 2; the SDK's
    ``CompactedResponse`` is no oracle here: it types ``output`` as output items, which user
    messages with ``input_text`` are not)."""
    output: list[dict[str, Any]] = [
        {
            "id": f"msg_{cid}_{i}",
            "type": "message",
            "status": "completed",
            "role": "user",
            "content": [{"type": "input_text", "text": text}],
        }
        for i, text in enumerate(retained)
    ]
    output.append({"encrypted_content": f"gAAAA-{cid}", "id": cid, "type": "compaction"})
    return {
        "created_at": 1770131531,
        "id": f"resp_{cid}",
        "object": "response.compaction",
        "output": output,
        "usage": {
            "input_tokens": 154,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 177,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 331,
        },
    }


def history() -> turnwire.Thread:
    return thread(
        model="gpt-4o-mini",
        system_prompt=SYSTEM,
        messages=[
            user("u1", "Sum only. 3, 3?", 1),
            assistant("a1", "6", 2),
            user("u2", "and: 4, 4?", 3),
            assistant("a2", "8", 4),
        ],
    )


@pytest.fixture
def stored(tmp_path: Path) -> tuple[Any, str]:
    store = open_store(str(tmp_path / "threads.db"))
    thread_id = store.import_thread(history())
    yield store, thread_id
    store.close()


def _compact(store: Any, thread_id: str, answer: dict[str, Any], **options: Any) -> Any:
    with ScriptedServer([Reply.json(200, answer)]) as server:
        result = compact_thread(
            thread_id, store=store, container=make_container(), base_url=server.base_url, **options
        )
    (seen,) = server.requests
    return result, seen


def _ask(store: Any, thread_id: str, question: str, settings: dict[str, Any] | None = None):
    script = [Reply.sse(ANSWER)]
    if settings is not None:
        script.insert(0, Reply.json(200, compact_answer("cmp_auto")))
    with ScriptedServer(script) as server:
        result = run_thread(
            thread_id,
            store=store,
            prompt=question,
            container=make_container(settings),
            base_url=server.base_url,
        )
    return result, server.requests


def test_a_compaction_round_trip(stored):
    store, thread_id = stored
    before = turnwire.render(store.load(thread_id), container=make_container()).json

    result, seen = _compact(store, thread_id, compact_answer("cmp_1", "Sum only. 3, 3?"))
    # The compact endpoint got the input a request would send, with only its own fields.
    assert (seen.method, seen.path) == ("POST", "/v1/responses/compact")
    body = seen.json
    validate_compact_body(body)
    assert set(body) <= set(COMPACT_FIELDS)
    assert body == {k: before[k] for k in before if k in COMPACT_FIELDS}
    assert body["input"] == before["input"]
    assert body["instructions"] == SYSTEM
    assert "stream" not in body and "store" not in body and "tools" not in body

    # Stored: one turn holding the compaction item alone, after the turns it covers.
    last = store.turns(thread_id)[-1]
    assert last.role == "assistant"
    assert [type(p) for p in last.parts] == [HostedPart]
    record = last.parts[0].item
    assert record == result.record
    assert record.item == {"encrypted_content": "gAAAA-cmp_1", "id": "cmp_1", "type": "compaction"}
    loaded = store.load(thread_id)
    assert max((m.created_at, m.seq) for m in loaded.messages) < (record.created_at, record.seq)

    # The next request sends the compaction in place of every turn before it.
    run, requests = _ask(store, thread_id, "And 5+5?")
    (sent,) = requests
    assert sent.path == "/v1/responses"
    validate_body(sent.json)
    accepted = json.loads(ACCEPTED.read_text())
    assert sent.json["instructions"] == SYSTEM == accepted["instructions"]
    items = sent.json["input"]
    assert [i.get("type", "message") for i in items] == [
        i.get("type", "message") for i in accepted["input"]
    ]
    assert sorted(items[0]) == sorted(accepted["input"][0])
    assert items[0] == record.item
    assert items[1]["role"] == "user"
    assert "And 5+5?" in json.dumps(items[1])

    # Nothing was deleted: the store and an export keep every turn.
    exported = store.export_thread(thread_id)
    assert [m.id for m in exported.messages][:4] == ["u1", "a1", "u2", "a2"]
    assert [h.id for h in exported.hosted_items] == ["cmp_1"]
    assert len(store.turns(thread_id)) == 4 + 1 + 2  # the turns, the compaction, the exchange
    assert run.records.hosted_items == ()


def test_a_second_compaction_supersedes_the_first(stored):
    store, thread_id = stored
    _compact(store, thread_id, compact_answer("cmp_1"))
    _ask(store, thread_id, "And 5+5?")
    rendered = turnwire.render(store.load(thread_id), container=make_container()).json
    assert rendered["input"][0]["id"] == "cmp_1"

    _, seen = _compact(store, thread_id, compact_answer("cmp_2"))
    # The second compaction is asked of what a request sends: the first compaction, then what
    # came after it.
    assert seen.json["input"] == rendered["input"]
    assert seen.json["input"][0]["id"] == "cmp_1"

    _, requests = _ask(store, thread_id, "And 6+6?")
    items = requests[0].json["input"]
    assert [i.get("type", "message") for i in items] == ["compaction", "message"]
    assert items[0]["id"] == "cmp_2"
    exported = store.export_thread(thread_id)
    assert [h.id for h in exported.hosted_items] == ["cmp_1", "cmp_2"]
    assert len(exported.messages) == 4 + 2 + 2


def test_the_compact_window_compacts_before_a_run_over_its_threshold(stored):
    store, thread_id = stored
    settings = {"context": {"window": {"compact": {"threshold": 10}}}}
    result, requests = _ask(store, thread_id, "And 5+5?", settings)
    compact_request, request = requests
    assert compact_request.path == "/v1/responses/compact"
    validate_compact_body(compact_request.json)
    # What it covers: everything before the question; the question goes after the compaction.
    covered = compact_request.json["input"]
    assert [i.get("role") for i in covered] == ["user", "assistant", "user", "assistant"]
    assert "And 5+5?" not in json.dumps(covered)
    assert request.path == "/v1/responses"
    items = request.json["input"]
    assert [i.get("type", "message") for i in items] == ["compaction", "message"]
    assert items[0]["id"] == "cmp_auto"
    assert "And 5+5?" in json.dumps(items[1])
    assert result.compaction is not None and result.compaction.record.id == "cmp_auto"

    # Stored as a turn of its own before the question; every older turn kept.
    roles = [(t.role, type(t.parts[0]).__name__) for t in store.turns(thread_id)]
    assert roles[4:] == [
        ("assistant", "HostedPart"),
        ("user", "TextPart"),
        ("assistant", "MessagePart"),
    ]
    loaded = store.load(thread_id)
    assert len(loaded.messages) == 6
    cut = compacted(loaded)
    assert [h.id for h in cut.hosted_items] == ["cmp_auto"]
    assert cut.messages[0].content == "And 5+5?"

    # Under the threshold now (the compaction stands for the history): no second compaction.
    quiet = {"context": {"window": {"compact": {"threshold": 10_000}}}}
    with ScriptedServer([Reply.sse(ANSWER)]) as server:
        run_thread(
            thread_id,
            store=store,
            prompt="And 6+6?",
            container=make_container(quiet),
            base_url=server.base_url,
        )
    assert [r.path for r in server.requests] == ["/v1/responses"]
    assert server.requests[0].json["input"][0]["id"] == "cmp_auto"


def test_under_the_threshold_no_compaction_is_made(stored):
    store, thread_id = stored
    settings = {"context": {"window": {"compact": {"threshold": 100_000}}}}
    with ScriptedServer([Reply.sse(ANSWER)]) as server:
        result = run_thread(
            thread_id,
            store=store,
            prompt="And 5+5?",
            container=make_container(settings),
            base_url=server.base_url,
        )
    assert [r.path for r in server.requests] == ["/v1/responses"]
    assert result.compaction is None
    assert len(server.requests[0].json["input"]) == 5


def test_a_thread_without_turns_cannot_be_compacted(tmp_path):
    with open_store(str(tmp_path / "threads.db")) as store:
        thread_id = store.create_thread(thread(model="gpt-4o-mini", system_prompt=SYSTEM))
        with ScriptedServer([Reply.json(200, compact_answer())]) as server:
            with pytest.raises(InputError, match="nothing to compact"):
                compact_thread(
                    thread_id, store=store, container=make_container(), base_url=server.base_url
                )
        assert server.requests == []
        assert store.turns(thread_id) == []


def test_nothing_added_since_the_latest_compaction_cannot_be_compacted(stored):
    store, thread_id = stored
    _compact(store, thread_id, compact_answer("cmp_1"))
    turns = len(store.turns(thread_id))
    with ScriptedServer([Reply.json(200, compact_answer("cmp_2"))]) as server:
        with pytest.raises(InputError, match=r"since its latest compaction \(cmp_1\)"):
            compact_thread(
                thread_id, store=store, container=make_container(), base_url=server.base_url
            )
    assert server.requests == []
    assert len(store.turns(thread_id)) == turns


def test_http_errors_are_retried_and_reported_like_a_request(stored):
    store, thread_id = stored
    turns = len(store.turns(thread_id))
    with ScriptedServer([Reply.json(400, {"error": {"message": "bad model"}})]) as server:
        with pytest.raises(HttpError) as caught:
            compact_thread(
                thread_id, store=store, container=make_container(), base_url=server.base_url
            )
    assert caught.value.http_status == 400
    assert len(store.turns(thread_id)) == turns  # nothing stored

    slept: list[float] = []

    async def sleep(delay: float) -> None:
        slept.append(delay)

    script = [Reply.json(500, {"error": {"message": "busy"}}), Reply.json(200, compact_answer())]
    with ScriptedServer(script) as server:
        result = compact_thread(
            thread_id,
            store=store,
            container=make_container(),
            base_url=server.base_url,
            sleep=sleep,
        )
    assert [r.path for r in server.requests] == ["/v1/responses/compact"] * 2
    assert len(slept) == 1
    assert result.record.id == "cmp_1"
    assert len(store.turns(thread_id)) == turns + 1


def _broken(change: str) -> Any:
    answer = compact_answer("cmp_1", "q")
    if change == "object":
        answer["object"] = "response"
    elif change == "encrypted_content":
        del answer["output"][1]["encrypted_content"]
    elif change == "encrypted_content-type":
        answer["output"][1]["encrypted_content"] = 7
    elif change == "no-compaction":
        answer["output"] = answer["output"][:1]
    elif change == "usage":
        del answer["usage"]
    elif change == "message-role":
        del answer["output"][0]["role"]
    elif change == "root":
        answer = ["not", "an", "object"]
    return answer


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ("object", "object"),
        ("encrypted_content", "output[1].encrypted_content"),
        ("encrypted_content-type", "output[1].encrypted_content"),
        ("no-compaction", "output"),
        ("usage", "usage"),
        ("message-role", "output[0].role"),
        ("root", "(root)"),
    ],
)
def test_a_bad_answer_is_a_stream_error_naming_the_field(stored, change, field):
    store, thread_id = stored
    turns = len(store.turns(thread_id))
    with pytest.raises(StreamError) as caught:
        _compact(store, thread_id, _broken(change))
    assert caught.value.event == "response.compaction"
    assert caught.value.field == field
    assert field in str(caught.value)
    assert len(store.turns(thread_id)) == turns


def test_an_answer_that_is_not_json_is_a_stream_error(stored):
    store, thread_id = stored
    reply = Reply(status=200, chunks=[b"<html>"], content_type="application/json")
    with ScriptedServer([reply]) as server:
        with pytest.raises(StreamError, match=r"not a response\.compaction object"):
            compact_thread(
                thread_id, store=store, container=make_container(), base_url=server.base_url
            )


def test_threads_compact_on_the_command_line(stored, capsys):
    from turnwire.cli.main import main

    store, thread_id = stored
    location = str(store.path)
    with ScriptedServer([Reply.json(200, compact_answer())]) as server:
        status = main(
            [
                "threads",
                "compact",
                thread_id,
                "--store",
                location,
                "--base-url",
                server.base_url,
                "--json",
            ]
        )
    assert status == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["record"]["id"] == "cmp_1"
    assert printed["usage"]["total_tokens"] == 331
    assert server.requests[0].path == "/v1/responses/compact"
    # `threads show` still shows every turn, and the compaction.
    assert main(["threads", "show", thread_id, "--store", location]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [m["id"] for m in shown["messages"]] == ["u1", "a1", "u2", "a2"]
    assert [h["id"] for h in shown["hosted_items"]] == ["cmp_1"]


def test_client_compact_on_a_thread_file(tmp_path):
    path = tmp_path / "t.json"
    turnwire.save_thread(history(), path)
    with ScriptedServer([Reply.json(200, compact_answer())]) as server:
        result = turnwire.compact(
            path, container=make_container(), base_url=server.base_url, save=True
        )
    saved = turnwire.load_thread(path)
    assert [h.id for h in saved.hosted_items] == ["cmp_1"]
    assert saved.messages == history().messages
    body = turnwire.render(saved, container=make_container()).json
    assert body["input"] == [result.record.item]


def test_the_compact_window_on_a_thread_file_places_the_compaction_before_the_question(tmp_path):
    path = tmp_path / "t.json"
    asked = thread(
        model="gpt-4o-mini",
        system_prompt=SYSTEM,
        messages=[*(msgspec.to_builtins(m) for m in history().messages), user("u3", "5, 5?", 5)],
    )
    turnwire.save_thread(asked, path)
    settings = {"context": {"window": {"compact": {"threshold": 10}}}}
    script = [Reply.json(200, compact_answer("cmp_f")), Reply.sse(ANSWER)]
    with ScriptedServer(script) as server:
        result = turnwire.api.run(
            path, container=make_container(settings), base_url=server.base_url, save=True
        )
    assert [r.path for r in server.requests] == ["/v1/responses/compact", "/v1/responses"]
    assert "5, 5?" not in json.dumps(server.requests[0].json)
    items = server.requests[1].json["input"]
    assert [i.get("type", "message") for i in items] == ["compaction", "message"]
    saved = turnwire.load_thread(path)
    (record,) = saved.hosted_items
    a2, u3 = saved.messages[3], saved.messages[4]
    # The clock is later than the question: stamped at the last covered record's time, next seq.
    assert (a2.created_at, a2.seq) < (record.created_at, record.seq) < (u3.created_at, u3.seq)
    assert result.compaction is not None and result.records.hosted_items == ()
    assert len(saved.messages) == 6


def test_observers_see_the_compact_body(stored):
    from turnwire.hookspecs import hookimpl

    class Observer:
        def __init__(self) -> None:
            self.seen: list[tuple[str, bytes]] = []

        @hookimpl
        def on_prompt_assembled(self, body, attempt_kind):
            self.seen.append((attempt_kind, body))

    store, thread_id = stored
    observer = Observer()
    settings = {"context": {"window": {"compact": {"threshold": 10}}}}
    script = [Reply.json(200, compact_answer()), Reply.sse(ANSWER)]
    with ScriptedServer(script) as server:
        run_thread(
            thread_id,
            store=store,
            prompt="5, 5?",
            container=make_container(settings, extra_plugins=[observer]),
            base_url=server.base_url,
        )
    assert [kind for kind, _ in observer.seen] == ["compact", "request"]
    assert [body for _, body in observer.seen] == [r.body for r in server.requests]


def test_reasoning_after_a_compaction_is_replayed_with_fingerprints_over_the_cut(tmp_path):
    """The fingerprints of reasoning recorded after a compaction cover the compacted prefix, so
    the next requests of the run, and a render of the saved thread, replay it paired."""
    from ..conftest import REPLAY

    path = tmp_path / "t.json"
    weather = {
        "name": "weather",
        "parameters": {"type": "object", "properties": {"location": {"type": "string"}}},
    }
    start = thread(
        model="gpt-5",
        system_prompt="You are terse.",
        tools=[weather],
        messages=[
            user("u0", "Hello there, how are you today?", 1),
            assistant("a0", "Fine, thanks. What can I do for you?", 2),
            user("u1", "Weather in Florence?", 3),
        ],
    )
    turnwire.save_thread(start, path)
    settings = {**REPLAY, "context": {"window": {"compact": {"threshold": 10}}}}
    script = [
        Reply.json(200, compact_answer("cmp_r")),
        Reply.sse(recorded("reasoning_summary_encrypted_function_call_gpt-5.sse")),
        Reply.sse(recorded("reasoning_summary_encrypted_text_turn2_gpt-5.sse")),
    ]
    with ScriptedServer(script) as server:
        turnwire.api.run(
            path,
            container=make_container(settings),
            base_url=server.base_url,
            save=True,
            handlers={"weather": lambda location: "40 C"},
        )
    compact_request, first, second = server.requests
    assert compact_request.path == "/v1/responses/compact"
    assert [i.get("role") for i in compact_request.json["input"]] == ["user", "assistant"]
    assert [i.get("type", "message") for i in first.json["input"]] == ["compaction", "message"]
    kinds = [i.get("type", "message") for i in second.json["input"]]
    assert kinds == ["compaction", "message", "reasoning", "function_call", "function_call_output"]
    validate_body(second.json)

    saved = turnwire.load_thread(path)
    rendered = turnwire.render(saved, container=make_container(settings))
    assert rendered.rendered.warnings == ()
    assert [i.get("type", "message") for i in rendered.json["input"]] == [
        *kinds,
        "reasoning",
        "message",
    ]
    assert rendered.json["input"][:5] == second.json["input"]
    assert [m.id for m in saved.messages][:3] == ["u0", "a0", "u1"]
