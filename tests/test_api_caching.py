"""Prompt caching end to end, against a real local HTTP server: the ``prompt_cache_key`` each
request carries (a stored thread's, a thread file's, ``none``, a string, the compact
request's), and the cache reads and writes a run reports, kept in the store."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

import pytest

import turnwire
from turnwire.api import compact_thread, run_thread
from turnwire.model.hosted import thread_anchor
from turnwire.rendering.caching import thread_cache_key
from turnwire.store import open_store

from .client.server import Reply, ScriptedServer
from .client.streams import sse
from .client.test_run import compact_answer, history
from .conftest import make_container, user
from .oracle import validate_body, validate_compact_body

KEY = re.compile(r"^tw-[0-9a-f]{32}$")
NO_RETRY = {"client": {"retry": {"max_retries": 0}}}


def answer(
    rid: str, text: str = "ok", *, input_tokens: int = 1000, cached: int = 800, written: int = 150
) -> bytes:
    """A streamed answer whose usage reports ``cached`` tokens read from the prompt cache and
    ``written`` written to it (``input_tokens_details``, as the official ``ResponseUsage``)."""
    item = {"type": "message", "id": f"msg_{rid}", "role": "assistant", "status": "completed"}
    part = {"type": "output_text", "text": text, "annotations": []}
    usage = {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": written},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input_tokens + 5,
    }
    done = {"id": f"resp_{rid}", "status": "completed", "model": "gpt-4o", "usage": usage}
    return sse(
        {"type": "response.created", "response": {"id": f"resp_{rid}", "status": "in_progress"}},
        {"type": "response.output_item.added", "output_index": 0, "item": {**item, "content": []}},
        {"type": "response.output_text.delta", "output_index": 0, "delta": text},
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {**item, "content": [part]},
        },
        {"type": "response.completed", "response": done},
    )


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _keys(server: ScriptedServer) -> list[Any]:
    for seen in server.requests:
        (validate_compact_body if seen.path.endswith("/compact") else validate_body)(seen.json)
    return [seen.json.get("prompt_cache_key") for seen in server.requests]


def test_two_turns_of_a_stored_thread_carry_one_key_and_another_thread_another(tmp_path):
    container = make_container(NO_RETRY)
    with open_store(str(tmp_path / "threads.db"), folder=tmp_path) as store:
        first = store.create_thread(turnwire.load_thread({"version": 1, "model": "gpt-4o"}))
        other = store.create_thread(turnwire.load_thread({"version": 1, "model": "gpt-4o"}))
        script = [Reply.sse(answer(f"r{i}")) for i in range(3)]
        with ScriptedServer(script) as server:
            for thread_id, prompt in ((first, "one"), (first, "two"), (other, "three")):
                run_thread(
                    thread_id,
                    store=store,
                    prompt=prompt,
                    base_url=server.base_url,
                    container=container,
                )
    one, two, three = _keys(server)
    assert KEY.match(one)
    assert one == two == thread_cache_key(first)  # the same on every turn of the thread
    assert three == thread_cache_key(other) != one  # another thread, another key
    assert first not in one and other not in three  # a hash, never the id
    # the second turn extends the first: what the key groups is one growing prefix
    earlier, later = server.requests[0].json["input"], server.requests[1].json["input"]
    assert later[: len(earlier)] == earlier


def test_a_thread_file_keeps_its_key_from_run_to_run_and_another_file_has_another(tmp_path):
    container = make_container(NO_RETRY)
    path = tmp_path / "thread.yaml"
    turnwire.save_thread(turnwire.load_thread(_file("u1")), path)
    elsewhere = tmp_path / "other.yaml"
    turnwire.save_thread(turnwire.load_thread(_file("q1")), elsewhere)
    with ScriptedServer([Reply.sse(answer(f"r{i}")) for i in range(3)]) as server:
        turnwire.api.run(path, container=container, base_url=server.base_url, save=True)
        grown = json.loads(turnwire.dump_thread(turnwire.load_thread(path)))
        grown["messages"].append(user("u2", "and now?", 0) | {"created_at": _now()})
        turnwire.save_thread(turnwire.load_thread(grown), path)
        turnwire.api.run(path, container=container, base_url=server.base_url, save=True)
        turnwire.api.run(elsewhere, container=container, base_url=server.base_url)
    first, second, other = _keys(server)
    assert KEY.match(first)
    assert second == first == thread_cache_key(thread_anchor(turnwire.load_thread(path)))
    assert other != first
    assert len(turnwire.load_thread(path).messages) == 4  # two turns, both saved


def _file(first_id: str) -> dict[str, Any]:
    return {"version": 1, "model": "gpt-4o", "messages": [user(first_id, "hello", 0)]}


def test_none_sends_no_key_and_a_string_is_sent_as_it_is(tmp_path):
    sent = {}
    for setting in ("none", "tenant-7"):
        container = make_container({**NO_RETRY, "request": {"prompt_cache_key": setting}})
        with ScriptedServer([Reply.sse(answer("r1"))]) as server:
            turnwire.api.run(
                turnwire.load_thread(_file("u1")), container=container, base_url=server.base_url
            )
        (seen,) = server.requests
        sent[setting] = seen.json
    assert "prompt_cache_key" not in sent["none"]
    assert sent["tenant-7"]["prompt_cache_key"] == "tenant-7"


def test_the_compact_request_of_a_stored_thread_carries_the_thread_s_key(tmp_path):
    container = make_container(NO_RETRY)
    with open_store(str(tmp_path / "threads.db"), folder=tmp_path) as store:
        thread_id = store.import_thread(history())
        with ScriptedServer(
            [Reply.sse(answer("r1")), Reply.json(200, compact_answer("cmp_1"))]
        ) as server:
            run_thread(
                thread_id,
                store=store,
                prompt="and 5, 5?",
                base_url=server.base_url,
                container=container,
            )
            compact_thread(thread_id, store=store, base_url=server.base_url, container=container)
    asked, compacted = _keys(server)
    assert server.requests[1].path == "/v1/responses/compact"
    assert asked == compacted == thread_cache_key(thread_id)


def test_an_automatic_compaction_after_an_earlier_one_keeps_the_run_s_key(tmp_path):
    """The compact request renders only what comes after the earlier compaction, whose own
    opening record differs: the key is still the thread's, fixed for the run."""
    path = tmp_path / "thread.yaml"
    with ScriptedServer([Reply.json(200, compact_answer("cmp_1"))]) as server:
        compacted = turnwire.api.compact(
            history(), container=make_container(NO_RETRY), base_url=server.base_url
        ).thread
    grown = json.loads(turnwire.dump_thread(compacted))
    now = _now()  # after the compaction: these records come after it
    grown["messages"] += [
        {"id": "u3", "role": "user", "content": "and 5, 5?", "created_at": now, "seq": 0},
        {"id": "a3", "role": "assistant", "content": "10", "created_at": now, "seq": 1},
        {"id": "u4", "role": "user", "content": "and 6, 6?", "created_at": now, "seq": 2},
    ]
    turnwire.save_thread(turnwire.load_thread(grown), path)
    settings = {**NO_RETRY, "context": {"window": {"compact": {"threshold": 10}}}}
    with ScriptedServer(
        [Reply.json(200, compact_answer("cmp_2")), Reply.sse(answer("r1"))]
    ) as server:
        turnwire.api.run(path, container=make_container(settings), base_url=server.base_url)
    compact_key, request_key = _keys(server)
    assert server.requests[0].path == "/v1/responses/compact"
    assert compact_key == request_key == thread_cache_key(thread_anchor(history()))


# ---------------------------------------------------------------------- usage in the store


def test_cache_reads_writes_and_the_hit_ratio_round_trip_through_the_store(location, tmp_path):
    container = make_container(NO_RETRY)
    with open_store(location, folder=tmp_path) as store:
        thread_id = store.create_thread(turnwire.load_thread({"version": 1, "model": "gpt-4o"}))
        with ScriptedServer([Reply.sse(answer("r1", cached=800, written=150))]) as server:
            result = run_thread(
                thread_id, store=store, prompt="hi", base_url=server.base_url, container=container
            )
    assert result.usage is not None
    assert (result.usage.cached_tokens, result.usage.cache_write_tokens) == (800, 150)
    assert result.cache_hit_ratio == pytest.approx(0.8)
    assert result.generations[0].usage.cache_hit_ratio == pytest.approx(0.8)
    with open_store(location, folder=tmp_path) as reopened:  # a new connection reads it back
        usage = reopened.turns(thread_id)[-1].usage
    assert usage["cached_tokens"] == 800
    assert usage["cache_write_tokens"] == 150
    assert usage["input_tokens"] == 1000
