"""A store hands back the records it read before, unchanged since, as the same objects
(``turnwire.store._kept``): so a stored thread reloaded before every run meets a warm render
memo that recognises them by identity. The database decides what is unchanged: a turn changed
behind the store's back (another program, raw SQL) is read again, never handed back stale."""

from __future__ import annotations

import random
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import pytest

import turnwire
from turnwire.model.records import Message, ToolCall, ToolResult
from turnwire.rendering.ledger import Ledger
from turnwire.store.turns import MessagePart, TextPart, ToolCallPart, Turn

from .test_databases import execute

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def question(n: int) -> Turn:
    return Turn(
        id=f"q{n}",
        role="user",
        parts=(TextPart(text=f"question {n}"),),
        created_at=T0 + timedelta(seconds=10 * n),
    )


def answer(n: int, *, ledger: Ledger | None = None) -> Turn:
    moment = T0 + timedelta(seconds=10 * n + 1)
    call = ToolCall(
        id=f"call_{n}",
        tool="lookup",
        args={"n": n},
        result=ToolResult(text=f"result {n}"),
        created_at=moment,
    )
    reply = Message(id=f"a{n}", role="assistant", content=f"answer {n}", created_at=moment)
    return Turn(
        id=f"t{n}",
        role="assistant",
        parts=(ToolCallPart(call=call), MessagePart(message=reply)),
        created_at=moment,
        model="gpt-5",
        ledger=ledger,
    )


def exchange(n: int) -> list[Turn]:
    return [question(n), answer(n)]


def records(thread: turnwire.Thread) -> list[Any]:
    return [*thread.messages, *thread.thoughts, *thread.tool_calls, *thread.hosted_items]


def fresh_load(open_at: Any, location: str, thread_id: str) -> turnwire.Thread:
    """What a store that never read the thread loads (a cold read)."""
    with open_at(location) as other:
        loaded: turnwire.Thread = other.load(thread_id)
        return loaded


@pytest.fixture
def stored(location: str, open_at: Any) -> Any:
    with open_at(location) as store:
        thread_id = store.create_thread(turnwire.Thread(system_prompt="Be brief."))
        for n in range(3):
            store.append_turns(thread_id, exchange(n))
        yield store, thread_id


def test_a_reloaded_thread_holds_the_same_record_objects_and_only_new_turns_are_new(
    stored, location, open_at
):
    store, thread_id = stored
    first = store.load(thread_id)
    store.append_turns(thread_id, exchange(3))
    again = store.load(thread_id)
    assert again == fresh_load(open_at, location, thread_id)
    old, new = records(first), records(again)
    # every record of the first load is the very same object in the second
    kept = {id(record) for record in new}
    assert all(id(record) in kept for record in old)
    assert len(new) == len(old) + 3  # q3, a3 and call_3, read anew
    assert again.messages[: len(first.messages)] == first.messages
    assert all(map(lambda a, b: a is b, first.messages, again.messages))


def test_load_with_ledger_gives_the_last_ledger_the_turns_recorded_from_the_same_read(stored):
    store, thread_id = stored
    assert store.load_with_ledger(thread_id)[1] is None
    ledger = Ledger(model="gpt-5", instructions="i", tools="t", items=("a", "b"))
    store.append_turns(thread_id, [question(3), answer(3, ledger=ledger)])
    thread, found = store.load_with_ledger(thread_id, current=question(4))
    assert found == ledger == store.builder.last_ledger(store.turns(thread_id))
    assert thread.messages[-1].id == "q4"  # the question last, dated after every record
    assert thread.messages[-1].created_at > thread.messages[-2].created_at
    store.append_turns(thread_id, exchange(4))  # a later run without a ledger keeps it
    assert store.load_with_ledger(thread_id)[1] == ledger


CHANGES_BEHIND_THE_BACK = {
    "update": ["UPDATE turns SET parts = ? WHERE thread_id = ? AND position = 3"],
    "delete": ["DELETE FROM turns WHERE thread_id = ? AND position = 3"],
    "delete and insert again": [
        "DELETE FROM turns WHERE thread_id = ? AND position = 3",
        "INSERT INTO turns (thread_id, position, id, role, created_at, parts) "
        "SELECT thread_id, 3, 'turn_new', role, created_at, ? FROM turns "
        "WHERE thread_id = ? AND position = 1",
    ],
}


@pytest.mark.parametrize("change", sorted(CHANGES_BEHIND_THE_BACK))
def test_a_turn_changed_behind_the_stores_back_is_read_again_never_handed_back_stale(
    stored, location, open_at, change
):
    store, thread_id = stored
    before = store.load(thread_id)
    assert before.tool_calls[1].result.text == "result 1"
    parts = msgspec.json.encode(
        (ToolCallPart(call=msgspec.structs.replace(answer(1).parts[0].call, args={"n": 99})),)
    ).decode()
    for statement in CHANGES_BEHIND_THE_BACK[change]:
        params = (parts, thread_id) if statement.count("?") == 2 else (thread_id,)
        execute(location, statement, *params)
    after = store.load(thread_id)
    assert after == fresh_load(open_at, location, thread_id)
    assert after != before
    if change != "delete":
        assert after.tool_calls[1].args == {"n": 99}


def test_an_insert_that_replaces_a_turn_or_fills_a_gap_is_seen(location, open_at):
    with open_at(location) as store:
        thread_id = store.create_thread(turnwire.Thread())
        store.append_turns(thread_id, exchange(0) + exchange(1))
        execute(location, "DELETE FROM turns WHERE thread_id = ? AND position = 1", thread_id)
        gapped = store.load(thread_id)
        assert [m.id for m in gapped.messages] == ["q0", "q1", "a1"]
        # the gap filled by another program: before the last turn, so read again
        execute(
            location,
            "INSERT INTO turns (thread_id, position, id, role, created_at, parts) "
            "VALUES (?, 1, 'turn_gap', 'user', '2026-01-01T00:00:05+00:00', ?)",
            thread_id,
            msgspec.json.encode((TextPart(text="filled"),)).decode(),
        )
        filled = store.load(thread_id)
        assert filled == fresh_load(open_at, location, thread_id)
        assert [m.content for m in filled.messages][:2] == ["question 0", "filled"]
        if location.startswith("postgresql://"):
            execute(location, "TRUNCATE turns")
            assert store.load(thread_id) == fresh_load(open_at, location, thread_id)
            assert store.load(thread_id).messages == ()
            return
        # SQLite's OR REPLACE deletes the row it replaces without firing delete triggers
        execute(
            location,
            "INSERT OR REPLACE INTO turns (thread_id, position, id, role, created_at, parts) "
            "VALUES (?, 0, 'turn_replaced', 'user', '2026-01-01T00:00:00+00:00', ?)",
            thread_id,
            msgspec.json.encode((TextPart(text="replaced"),)).decode(),
        )
        replaced = store.load(thread_id)
        assert replaced == fresh_load(open_at, location, thread_id)
        assert replaced.messages[0].content == "replaced"
        # ... and a turn of this thread taken over by its id from another thread
        other = store.create_thread(turnwire.Thread())
        execute(
            location,
            "INSERT OR REPLACE INTO turns (thread_id, position, id, role, created_at, parts) "
            "VALUES (?, 0, 'turn_replaced', 'user', '2026-01-01T00:00:00+00:00', ?)",
            other,
            msgspec.json.encode((TextPart(text="moved"),)).decode(),
        )
        assert store.load(thread_id) == fresh_load(open_at, location, thread_id)
        assert store.load(thread_id).messages[0].content == "filled"


def test_a_thread_deleted_and_imported_again_under_its_id_is_read_anew(stored, location, open_at):
    store, thread_id = stored
    store.load(thread_id)
    with open_at(location) as other:  # another handle: this store is not told
        other.delete_thread(thread_id)
        other.import_thread(
            turnwire.Thread(messages=(Message(id="m", role="user", content="new", created_at=T0),)),
            thread_id=thread_id,
        )
    assert [m.content for m in store.load(thread_id).messages] == ["new"]


def test_a_header_changed_elsewhere_is_read_and_the_records_are_kept(stored, location, open_at):
    store, thread_id = stored
    first = store.load(thread_id)
    with open_at(location) as other:
        other.update_header(thread_id, turnwire.Thread(system_prompt="Be thorough."))
    again = store.load(thread_id)
    assert again.system_prompt == "Be thorough."
    assert all(map(lambda a, b: a is b, first.messages, again.messages))


def test_what_a_store_keeps_is_bounded(location, open_at, monkeypatch):
    from turnwire.store import _kept

    monkeypatch.setattr(_kept, "KEEP_THREADS", 3)
    monkeypatch.setattr(_kept, "KEEP_RECORDS", 7)
    with open_at(location) as store:
        ids = []
        for n in range(5):
            ids.append(store.create_thread(turnwire.Thread()))
            store.append_turns(ids[-1], exchange(n))  # 3 records each
            store.load(ids[-1])
            assert len(store._kept) <= 3
        # the last thread, and the others within 7 records (two of 3)
        assert [thread_id in store._kept for thread_id in ids] == [False, False, True, True, True]
        monkeypatch.setattr(_kept, "KEEP_RECORDS", 2)
        store.load(ids[0])
        assert [thread_id in store._kept for thread_id in ids] == [True] + [False] * 4


def test_loads_and_appends_from_many_threads_at_once_agree_with_a_cold_read(location, open_at):
    with open_at(location) as store:
        thread_id = store.create_thread(turnwire.Thread())
        loaded: list[turnwire.Thread] = []
        errors: list[BaseException] = []
        start = threading.Barrier(4)

        def work(worker: int) -> None:
            try:
                start.wait()
                for n in range(8):
                    if worker == 0:
                        store.append_turns(thread_id, exchange(n))
                    loaded.append(store.load(thread_id))
            except BaseException as err:  # reported below
                errors.append(err)

        workers = [threading.Thread(target=work, args=(w,)) for w in range(4)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        assert errors == []
        final = fresh_load(open_at, location, thread_id)
        assert store.load(thread_id) == final
        # every load saw the thread as it was after some number of appends
        assert all(thread.messages == final.messages[: len(thread.messages)] for thread in loaded)


def test_warm_renders_of_a_reloaded_thread_changed_in_place_equal_cold_ones(
    location, open_at, monkeypatch
):
    """The differential check across reloads: each step appends, or edits a turn in place
    behind the store's back, then a warm render (one container all along, the store's kept
    records) and a cold one (a fresh container, a fresh store) give the same bytes."""
    monkeypatch.setenv("TURNWIRE_ENVELOPE_SECRET", "kept-records")
    settings = turnwire.load_settings(overrides={"plugins": {"load_entrypoints": False}})
    warm = turnwire.build_container(settings=settings)
    chance = random.Random(27)
    with open_at(location) as store:
        thread_id = store.create_thread(turnwire.Thread(system_prompt="Be brief."))
        for n in range(40):
            store.append_turns(thread_id, exchange(n))
        appended = 40
        for _step in range(12):
            if chance.random() < 0.6:
                store.append_turns(thread_id, exchange(appended))
                appended += 1
            else:
                position = chance.randrange(store.last_position(thread_id) + 1)
                text = f"edited {chance.random()}"
                execute(
                    location,
                    "UPDATE turns SET parts = ? WHERE thread_id = ? AND position = ?",
                    msgspec.json.encode((TextPart(text=text),)).decode(),
                    thread_id,
                    position,
                )
            current = question(appended)
            thread, _ = store.load_with_ledger(thread_id, current=current)
            body = turnwire.render(thread, container=warm, model="gpt-5").body
            with open_at(location) as other:
                cold_thread = other.load(thread_id, current=current)
            assert cold_thread == thread
            cold = turnwire.render(
                cold_thread, container=turnwire.build_container(settings=settings), model="gpt-5"
            ).body
            assert body == cold
