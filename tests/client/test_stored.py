"""Stored threads, async: ``await client.run_thread(...)`` and ``await client.compact_thread(...)``
on one long-lived client, concurrent runs on it, the sync functions inside a running event loop,
and ``Client()`` made from the environment alone."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest

import turnwire
from turnwire.store.sqlite import SQLiteStore
from turnwire.store.turns import TurnBuilder

from ..conftest import make_container
from .server import Reply, ScriptedServer, Seen
from .streams import call_answer, sse, text_answer


def _answer(seen: Seen) -> Reply:
    """Each thread's first request gets a call of ``lookup`` (its id naming the thread, read
    from the instructions), the request after the tool's output gets the text answer."""
    body = seen.json
    who = "A" if body["instructions"] == "Help A." else "B"
    if body["input"][-1].get("type") != "function_call_output":
        called = call_answer(
            "lookup", json.dumps({"who": who}), call_id=f"call_{who}", item_id=f"fc_{who}"
        )
        return Reply.sse(called)
    return Reply.sse(text_answer(f"Done for {who}.", msg_id=f"msg_{who}"))


def _store(tmp_path: Path) -> tuple[SQLiteStore, dict[str, str]]:
    store = SQLiteStore(tmp_path / "threads.db")
    ids = {
        who: store.create_thread(turnwire.Thread.create(f"Help {who}.", model="gpt-4o"))
        for who in ("A", "B")
    }
    return store, ids


def test_two_concurrent_run_thread_calls_on_one_client_keep_their_own_tools_and_turns(
    tmp_path: Path,
) -> None:
    store, ids = _store(tmp_path)
    started: list[str] = []

    def lookup_for(owner: str) -> Any:
        @turnwire.tool(name="lookup")
        async def lookup(who: str) -> str:
            """Look someone up."""
            started.append(owner)
            # Hold each tool until both runs have one running, so the runs interleave.
            for _ in range(300):
                if {"A", "B"} <= set(started):
                    break
                await asyncio.sleep(0.01)
            return f"{owner}'s tool found {who}"

        return lookup

    texts: dict[str, list[str]] = {"A": [], "B": []}

    async def both(base_url: str) -> list[turnwire.RunResult[Any]]:
        async with turnwire.Client(make_container(), base_url=base_url, api_key="sk-t") as client:
            return list(
                await asyncio.gather(
                    *(
                        client.run_thread(
                            ids[who],
                            store=store,
                            prompt=f"Find {who}.",
                            tools=[lookup_for(who)],
                            on_text=texts[who].append,
                        )
                        for who in ("A", "B")
                    )
                )
            )

    with ScriptedServer(answer=_answer, keep_alive=True) as server:
        first, second = asyncio.run(both(server.base_url))

    assert sorted(started) == ["A", "B"]  # both tools ran, one while the other waited
    assert first.requests == 2 and second.requests == 2
    assert first.text == "Done for A." and second.text == "Done for B."
    assert "".join(texts["A"]) == "Done for A." and "".join(texts["B"]) == "Done for B."
    assert len(server.requests) == 4
    assert server.connections <= 2  # one per run at most: the pool reuses them
    for who, result in (("A", first), ("B", second)):
        (call,) = result.thread.tool_calls
        assert call.result is not None and call.result.text == f"{who}'s tool found {who}"
        stored = store.load(ids[who])
        assert [m.content for m in stored.messages] == [f"Find {who}.", f"Done for {who}."]
        (kept,) = stored.tool_calls
        assert kept.result is not None and kept.result.text == f"{who}'s tool found {who}"
        assert kept.args == {"who": who}
        assert stored.tools == ()  # a run's function tools are never stored with the thread
    store.close()


def test_the_sync_functions_work_inside_a_running_event_loop(tmp_path: Path) -> None:
    store, ids = _store(tmp_path)

    async def inside_a_loop(base_url: str) -> tuple[Any, Any, Any]:
        # What a notebook cell or a sync tool of an async framework does.
        stored = turnwire.run_thread(
            ids["A"],
            store=store,
            prompt="Hello?",
            container=make_container(),
            base_url=base_url,
            api_key="sk-t",
        )
        loose = turnwire.run(
            turnwire.Thread.create("Help B.", model="gpt-4o", prompt="Hi?"),
            container=make_container(),
            base_url=base_url,
            api_key="sk-t",
        )
        return stored, loose, asyncio.get_running_loop()

    with ScriptedServer([Reply.sse(text_answer("Hi there."))]) as server:
        stored, loose, loop = asyncio.run(inside_a_loop(server.base_url))

    assert loop is not None
    assert stored.text == "Hi there." and loose.text == "Hi there."
    assert [m.content for m in store.load(ids["A"]).messages] == ["Hello?", "Hi there."]
    store.close()


def test_compact_thread_awaited_appends_the_compaction_as_its_own_turn(tmp_path: Path) -> None:
    store, ids = _store(tmp_path)
    compaction = {
        "id": "resp_cmp",
        "object": "response.compaction",
        "created_at": 1767261600,
        "output": [
            {"id": "cmp_1", "type": "compaction", "encrypted_content": "gAAAA-opaque"},
        ],
        "usage": {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12},
    }
    script = [Reply.sse(text_answer("Hi there.")), Reply.json(200, compaction)]

    async def turn_then_compact(base_url: str) -> Any:
        async with turnwire.Client(make_container(), base_url=base_url, api_key="sk-t") as client:
            await client.run_thread(ids["A"], store=store, prompt="Hello?")
            return await client.compact_thread(ids["A"], store=store)

    with ScriptedServer(script, keep_alive=True) as server:
        result = asyncio.run(turn_then_compact(server.base_url))

    assert server.requests[1].path == "/v1/responses/compact"
    assert result.record.type == "compaction"
    turns = store.turns(ids["A"])
    assert len(turns) == 3 and turns[-1].parts[0].item.id == "cmp_1"  # type: ignore[union-attr]
    assert server.connections == 1
    store.close()


def test_a_failed_run_thread_stores_nothing_and_removes_its_question_s_copied_files(
    tmp_path: Path,
) -> None:
    store, ids = _store(tmp_path)
    note = tmp_path / "note.txt"
    note.write_text("the note")
    failed = Reply.json(400, {"error": {"message": "bad", "type": "invalid_request_error"}})

    async def ask(base_url: str) -> None:
        async with turnwire.Client(make_container(), base_url=base_url, api_key="sk-t") as client:
            await client.run_thread(ids["A"], store=store, prompt="Read it.", files=[note])

    with ScriptedServer([failed]) as server, pytest.raises(turnwire.TurnwireError):
        asyncio.run(ask(server.base_url))

    assert len(server.requests) == 1 and "note.txt" in server.requests[0].body.decode()
    assert store.turns(ids["A"]) == []
    assert not any(path.is_file() for path in store.files_folder.rglob("*"))
    store.close()


def test_run_thread_sets_the_cache_identity_and_the_previous_ledger_itself(tmp_path: Path) -> None:
    store, ids = _store(tmp_path)
    client = turnwire.Client(make_container(), base_url="http://127.0.0.1:9/v1", api_key="sk-t")
    with pytest.raises(TypeError, match="cache_identity"):
        asyncio.run(client.run_thread(ids["A"], store=store, cache_identity="mine"))
    store.close()


def test_a_client_made_with_no_arguments_reads_the_endpoint_and_the_key_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with ScriptedServer([Reply.sse(text_answer("Hi."))]) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")

        async def ask() -> Any:
            async with turnwire.Client() as client:
                return await client.run(turnwire.Thread.create(model="gpt-4o", prompt="Hi?"))

        result = asyncio.run(ask())
    assert result.text == "Hi."
    (seen,) = server.requests
    assert seen.headers["authorization"] == "Bearer sk-from-the-environment"


def test_a_client_takes_profiles_files_and_overrides_or_a_container_not_both(
    tmp_path: Path,
) -> None:
    config = tmp_path / "mine.yaml"
    config.write_text("request:\n  temperature: 0.3\n")
    client = turnwire.Client(
        profile="local-dev", config=[config], overrides={"request": {"max_output_tokens": 99}}
    )
    assert client.settings.request.temperature == 0.3
    assert client.settings.request.max_output_tokens == 99
    with pytest.raises(turnwire.ConfigError, match="no-such-profile"):
        turnwire.Client(profile="no-such-profile")
    with pytest.raises(TypeError, match="not both"):
        turnwire.Client(make_container(), overrides={"request": {"temperature": 0.1}})


def test_one_sqlite_store_serves_many_threads_at_once(tmp_path: Path) -> None:
    """The async API calls a store from worker threads: one SQLite store, eight threads
    appending and reading at once, every turn stored once and in order."""
    store = SQLiteStore(tmp_path / "threads.db")
    builder = TurnBuilder()
    ids = [store.create_thread(turnwire.Thread.create(model="gpt-4o")) for _ in range(8)]
    errors: list[BaseException] = []

    def writer(thread_id: str) -> None:
        try:
            for n in range(40):
                last = store.last_position(thread_id)
                turn = builder.build_user_turn(f"question {n}", [])
                store.append_turns(thread_id, [turn], expected_last=last)
                store.load(thread_id)
        except BaseException as err:  # the test reports every failure
            errors.append(err)

    workers = [threading.Thread(target=writer, args=(thread_id,)) for thread_id in ids]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert errors == []
    for thread_id in ids:
        assert [m.content for m in store.load(thread_id).messages] == [
            f"question {n}" for n in range(40)
        ]
    store.close()


def test_the_stream_of_a_stored_run_reaches_on_event(tmp_path: Path) -> None:
    store, ids = _store(tmp_path)
    seen: list[str] = []
    answer = sse(
        {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}},
        {"type": "response.output_text.delta", "output_index": 0, "delta": "Hi"},
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "Hi", "annotations": []}],
            },
        },
        {
            "type": "response.completed",
            "response": {"id": "resp_1", "status": "completed", "model": "gpt-4o"},
        },
    )

    async def ask(base_url: str) -> Any:
        async with turnwire.Client(make_container(), base_url=base_url, api_key="sk-t") as client:
            return await client.run_thread(
                ids["B"],
                store=store,
                prompt="Hi?",
                on_event=lambda event: seen.append(type(event).__name__),
            )

    with ScriptedServer([Reply.sse(answer)]) as server:
        result = asyncio.run(ask(server.base_url))
    assert result.text == "Hi"
    assert "TextDeltaEvent" in seen and "ResponseDoneEvent" in seen, seen
    store.close()
