"""One run of a client, its state and its loop: the reasoning-free retry, ``once``, the iteration
cap, cancellation, many runs at once on one client each keeping its own state, and compaction
(``POST /responses/compact`` with the rendered input, the compaction item stored as a turn, and the
next request sending it in place of the turns it covers, in the shape of the recorded accepted
request)."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import msgspec
import pytest

import turnwire
from turnwire.api import compact_thread, run_thread
from turnwire.client.dispatch import Client
from turnwire.client.progress import ProgressEvent, ResponseDoneEvent
from turnwire.errors import (
    HttpError,
    InputError,
    MaxIterationsError,
    ReasoningReplayRejectedError,
    StreamError,
)
from turnwire.rendering.compaction import COMPACT_FIELDS, compacted
from turnwire.store import open_store
from turnwire.store.turns import HostedPart

from ..conftest import (
    CONFORMANCE,
    REPLAY,
    assistant,
    make_container,
    thread,
    user,
)
from ..oracle import validate_body, validate_compact_body
from .conftest import AFTER_CALL, CALL, ERROR_400, PHRASES, TEXT, replay_thread, run
from .server import Reply, ScriptedServer, Seen, recorded
from .streams import sse

# ------------------------------------------------------------------ the reasoning-free retry


@pytest.mark.parametrize("phrase", PHRASES)
def test_a_reasoning_400_gets_one_retry_without_reasoning_or_ids(tmp_path, phrase):
    path = replay_thread(tmp_path / "t.json")
    body = {"error": {"message": phrase, "type": "invalid_request_error", "code": None}}
    with ScriptedServer([Reply.json(400, body), Reply.sse(TEXT)]) as server:
        result = run(server, path, settings=REPLAY)
    first, second = (r.json for r in server.requests)
    assert [i.get("type") for i in first["input"]] == ["message", "reasoning", "message"]
    assert all(i.get("type") != "reasoning" and "id" not in i for i in second["input"])
    validate_body(second)
    assert result.records.messages


def test_a_pairing_400_that_survives_the_retry_is_reasoning_replay_rejected(tmp_path):
    path = replay_thread(tmp_path / "t.json")
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
    path = replay_thread(tmp_path / "t.json")
    with ScriptedServer([Reply.json(400, ERROR_400)]) as server:
        with pytest.raises(HttpError) as caught:
            run(server, path, settings=REPLAY)
    assert caught.value.http_status == 400 and len(server.requests) == 1


def test_no_reasoning_free_retry_when_the_request_carried_no_reasoning(thread_file):
    body = {"error": {"message": PHRASES[0]}}
    with ScriptedServer([Reply.json(400, body)]) as server, pytest.raises(HttpError):
        run(server, thread_file)
    assert len(server.requests) == 1


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
            with pytest.raises(MaxIterationsError) as caught:
                run(server, thread_file, settings={"client": {"max_iterations": 2}})
    result = caught.value.result
    assert result.iterations == 2 and len(server.requests) == 2
    assert "max-iterations" in [r.kind for r in caplog.records]
    assert len(turnwire.load_thread(thread_file).tool_calls) == 2  # saved before it raised


def test_cancelling_a_run_stops_cleanly_and_records_nothing():
    t = thread(model="gpt-5", messages=[user()])
    cut = TEXT.index(b"response.output_text.delta") + 400
    reply = Reply(chunks=[TEXT[:cut]], stall_after=1)  # some text, then silence

    async def scenario(base_url: str) -> list[str]:
        client = Client(make_container(), base_url=base_url)
        streaming = asyncio.Event()
        seen: list[str] = []

        def on_text(delta: str) -> None:
            seen.append(delta)
            streaming.set()

        task = asyncio.create_task(client.run(t, on_text=on_text))
        await streaming.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await client.transport.aclose()
        return seen

    with ScriptedServer([reply]) as server:
        seen = asyncio.run(scenario(server.base_url))
    assert seen and len(server.requests) == 1


TEMPLATE = {"render": {"system_prompt_template": True}}


class Ticket(msgspec.Struct):
    """A ticket for run A."""

    owner: str


class Invoice(msgspec.Struct):
    """An invoice for run B."""

    number: int


def _call(run: str) -> bytes:
    item = {
        "type": "function_call",
        "id": f"fc_{run}",
        "call_id": f"call_{run}",
        "name": "lookup",
        "arguments": json.dumps({"who": run}),
        "status": "completed",
    }
    response = {"id": f"resp_{run}_1", "status": "completed", "model": "gpt-4o"}
    return sse(
        {"type": "response.created", "response": {**response, "status": "in_progress"}},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": response},
    )


def _answer(run: str, text: str) -> bytes:
    item = {
        "type": "message",
        "id": f"msg_{run}",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    response = {"id": f"resp_{run}_2", "status": "completed", "model": "gpt-4o"}
    return sse(
        {"type": "response.created", "response": {**response, "status": "in_progress"}},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": response},
    )


def _reply(seen: Seen) -> Reply:
    """Run A's requests say "Help A." in their instructions, run B's "Help B.": the first
    request of each gets a tool call, the second (after the tool's output) the answer."""
    body = seen.json
    run = "A" if body["instructions"] == "Help A." else "B"
    if body["input"][-1].get("type") != "function_call_output":
        return Reply.sse(_call(run))
    answer = {"owner": "ana"} if run == "A" else {"number": 7}
    return Reply.sse(_answer(run, json.dumps(answer)))


def test_concurrent_runs_on_one_client_keep_their_own_state() -> None:
    thread = turnwire.load_thread(
        {
            "version": 1,
            "model": "gpt-4o",
            "system_prompt": "Help {user}.",
            "tools": [
                {
                    "name": "lookup",
                    "description": "Look someone up.",
                    "parameters": {
                        "type": "object",
                        "properties": {"who": {"type": "string"}},
                        "required": ["who"],
                        "additionalProperties": False,
                    },
                }
            ],
            "messages": [
                {"id": "u1", "role": "user", "content": "hi", "created_at": "2026-01-01T00:00:00Z"}
            ],
        }
    )
    started: list[str] = []

    async def lookup(who: str) -> str:
        started.append(who)
        # Hold each tool until both runs have one running, so the runs interleave.
        for _ in range(200):
            if {"A", "B"} <= set(started):
                break
            await asyncio.sleep(0.01)
        return f"found {who}"

    events: dict[str, list[ProgressEvent]] = {"A": [], "B": []}

    async def both(base_url: str) -> tuple[Any, Any]:
        container = make_container(TEMPLATE)
        async with turnwire.Client(container, base_url=base_url, handlers={"lookup": lookup}) as c:
            return await asyncio.gather(
                c.run(
                    thread,
                    render_context={"user": "A"},
                    output_schema=Ticket,
                    on_event=events["A"].append,
                ),
                c.run(
                    thread,
                    render_context={"user": "B"},
                    output_schema=Invoice,
                    on_event=events["B"].append,
                ),
            )

    with ScriptedServer(answer=_reply) as server:
        first, second = asyncio.run(both(server.base_url))

    assert sorted(started) == ["A", "B"]
    bodies = [seen.json for seen in server.requests]
    assert len(bodies) == 4
    for name, schema in (("A", "Ticket"), ("B", "Invoice")):
        sent = [b for b in bodies if b["instructions"] == f"Help {name}."]
        assert len(sent) == 2, name
        assert {b["text"]["format"]["name"] for b in sent} == {schema}
        outputs = [
            item for b in sent for item in b["input"] if item.get("type") == "function_call_output"
        ]
        assert len(outputs) == 1 and f"\nfound {name}\n" in outputs[0]["output"], outputs
    assert first.requests == 2 and second.requests == 2
    assert first.parsed == Ticket(owner="ana")
    assert second.parsed == Invoice(number=7)
    assert first.response.id == "resp_A_2" and second.response.id == "resp_B_2"
    for name, seen_events in events.items():
        done = [e.response_id for e in seen_events if isinstance(e, ResponseDoneEvent)]
        assert done == [f"resp_{name}_1", f"resp_{name}_2"]


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
    before = turnwire.render(
        store.load(thread_id), container=make_container(), cache_identity=thread_id
    ).json

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
