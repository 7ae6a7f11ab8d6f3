"""The thread-store contract, on every store: in memory (``memory.py``), a real SQLite file and
a real PostgreSQL server, each checked through :class:`turnwire.store.ThreadStore` alone.

Appends and round trips, unknown threads, headers without records (each hosted item once, in
its turn), the conditional append (two handles, one conflict), run_thread, compaction, and
copying threads between any two kinds losslessly. What needs a database's own rows, other
processes or the command line is in ``test_databases.py``, ``test_sqlite.py`` and
``test_postgres.py``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest

import turnwire
from turnwire.api import run_thread
from turnwire.errors import StoreConflictError, StoreError, UnknownThreadError
from turnwire.store import copy_threads
from turnwire.store.protocol import NO_TURNS
from turnwire.store.turns import HostedPart, MessagePart, TurnBuilder

from ..client.server import Reply, ScriptedServer, recorded
from ..conftest import REPO_EXAMPLES, make_container

REPO = Path(__file__).resolve().parents[2]
GOLDEN = sorted(
    p for p in (REPO / "tests" / "golden").glob("*.yaml") if not p.name.endswith(".config.yaml")
)


def user_turn(text: str | int):
    return TurnBuilder().build_user_turn(f"question {text}" if isinstance(text, int) else text)


def texts(store: Any, thread_id: str) -> list[str]:
    return [turn.parts[0].text for turn in store.turns(thread_id)]


def with_hosted_items() -> turnwire.Thread:
    """A thread whose hosted items sit between its other records, in two runs."""
    from .. import conftest

    return turnwire.load_thread(
        {
            "version": 1,
            "model": "gpt-5",
            "system_prompt": "S",
            "messages": [
                conftest.user("u1", "search it", 0),
                conftest.assistant("a1", "found", 3),
                conftest.user("u2", "and now?", 4),
                conftest.assistant("a2", "done", 7),
            ],
            "tool_calls": [
                {"id": "call_1|fc_1", "tool": "t", "args": {}, "created_at": conftest.at(5)}
            ],
            "hosted_items": [
                {
                    "id": "ws_1",
                    "type": "web_search_call",
                    "item": {"id": "ws_1", "type": "web_search_call", "status": "completed"},
                    "created_at": conftest.at(1),
                },
                {
                    "id": "ws_2",
                    "type": "web_search_call",
                    "item": {"id": "ws_2", "type": "web_search_call", "status": "completed"},
                    "created_at": conftest.at(2),
                },
                {
                    "id": "cmp_1",
                    "type": "compaction",
                    "item": {"id": "cmp_1", "type": "compaction", "encrypted_content": "gAAAA"},
                    "created_at": conftest.at(6),
                },
            ],
        }
    )


def test_append_and_read_back(store, backend):
    header = turnwire.load_thread({"version": 1, "model": "gpt-5", "system_prompt": "S"})
    thread_id = store.create_thread(header, title="t")
    first, second = user_turn(1), user_turn(2)
    store.append_turns(thread_id, [first])
    store.append_turns(thread_id, [second])
    assert store.turns(thread_id) == [first, second]
    loaded = store.load(thread_id)
    assert [m.content for m in loaded.messages] == ["question 1", "question 2"]
    assert loaded.system_prompt == "S"
    (summary,) = store.list_threads()
    assert (summary.id, summary.turns, summary.model, summary.title) == (thread_id, 2, "gpt-5", "t")
    assert summary.created_at <= summary.updated_at
    assert store.schema_version == backend.schema_version
    assert store.last_position(thread_id) == 1


def test_the_list_is_most_recent_first(store):
    older = store.create_thread(turnwire.load_thread({"version": 1}), title="older")
    newer = store.create_thread(turnwire.load_thread({"version": 1}), title="newer")
    assert [item.id for item in store.list_threads()] == [newer, older]
    store.append_turns(older, [user_turn(1)])
    assert [item.id for item in store.list_threads()] == [older, newer]


@pytest.mark.parametrize("source", [REPO_EXAMPLES / "weather.yaml", *GOLDEN], ids=lambda p: p.name)
def test_export_then_import_gives_the_same_thread(store, source):
    thread = turnwire.load_thread(source)
    thread_id = store.import_thread(thread)
    assert store.export_thread(thread_id) == thread
    again = store.import_thread(store.export_thread(thread_id))
    assert store.export_thread(again) == thread


def test_a_thread_with_replay_payloads_round_trips(store):
    from .. import conftest

    thread = turnwire.load_thread(
        {
            "version": 1,
            "model": "gpt-5",
            "messages": [conftest.user(), conftest.assistant("msg_1", "hi\u0000 ✓", 2, seq=1)],
            "thoughts": [
                conftest.reasoning_thought("rs_1", 2, fingerprint="a" * 64, paired="msg_1")
            ],
            "tool_calls": [
                {
                    "id": "call_1|fc_1",
                    "tool": "t",
                    "args": {"x": 1.5, "big": 2**60},
                    "created_at": conftest.at(3),
                    "result": {"artifact": {"text": "big"}},
                }
            ],
        }
    )
    thread_id = store.import_thread(thread)
    assert store.export_thread(thread_id) == thread


def test_unknown_threads_and_delete(store):
    with pytest.raises(UnknownThreadError) as caught:
        store.turns("thr_missing")
    assert caught.value.code == "E_THREAD_NOT_FOUND"
    for call in (store.header, store.last_position, store.delete_thread):
        with pytest.raises(UnknownThreadError):
            call("thr_missing")
    thread_id = store.create_thread(turnwire.load_thread({"version": 1}))
    store.append_turns(thread_id, [user_turn(1)])
    store.delete_thread(thread_id)
    assert store.list_threads() == []
    with pytest.raises(UnknownThreadError):
        store.turns(thread_id)
    with pytest.raises(UnknownThreadError):
        store.append_turns(thread_id, [user_turn(2)])
    store.create_thread(turnwire.load_thread({"version": 1}), thread_id="same")
    with pytest.raises(StoreError, match="already exists"):
        store.create_thread(turnwire.load_thread({"version": 1}), thread_id="same")


def test_turn_metadata_is_kept(store):
    thread_id = store.create_thread(turnwire.load_thread({"version": 1}))
    from turnwire.model.records import Message

    message = Message(
        id="msg_1", role="assistant", content="hi", created_at=datetime(2026, 1, 1, tzinfo=UTC)
    )
    (turn,) = TurnBuilder().build_assistant_turns(
        [message], model="gpt-5", usage={"total_tokens": 3}, request_fingerprint="c" * 64
    )
    store.append_turns(thread_id, [turn])
    (stored,) = store.turns(thread_id)
    assert stored == turn and isinstance(stored.parts[0], MessagePart)
    assert (stored.model, stored.usage, stored.request_fingerprint) == (
        "gpt-5",
        {"total_tokens": 3},
        "c" * 64,
    )


def test_update_header_keeps_the_turns(store):
    thread_id = store.create_thread(turnwire.load_thread({"version": 1, "system_prompt": "a"}))
    store.append_turns(thread_id, [user_turn(1)])
    store.update_header(thread_id, turnwire.load_thread({"version": 1, "system_prompt": "b"}))
    assert store.header(thread_id).system_prompt == "b"
    assert len(store.turns(thread_id)) == 1
    with pytest.raises(UnknownThreadError):
        store.update_header("thr_missing", turnwire.load_thread({"version": 1}))


# ---------------------------------------------------------------------- headers and records


def test_a_header_keeps_no_records_and_each_hosted_item_is_loaded_once_in_place(store):
    thread = with_hosted_items()
    thread_id = store.import_thread(thread)
    assert store.header(thread_id) == thread.header_only()
    assert store.header(thread_id).hosted_items == ()
    assert store.load(thread_id) == thread
    assert store.export_thread(thread_id) == thread
    # Each hosted item once, in the turn of the run that made it, where the timeline puts it.
    assert [
        [p.item.id if isinstance(p, HostedPart) else type(p).__name__ for p in turn.parts]
        for turn in store.turns(thread_id)
    ] == [
        ["MessagePart"],
        ["ws_1", "ws_2", "MessagePart"],
        ["MessagePart"],
        ["ToolCallPart", "cmp_1", "MessagePart"],
    ]


def test_a_header_given_records_keeps_none_of_them(store):
    thread = with_hosted_items()
    created = store.create_thread(thread)  # its records are ignored
    assert store.header(created) == thread.header_only()
    assert store.load(created).hosted_items == ()
    imported = store.import_thread(thread)
    store.update_header(imported, thread)
    assert store.header(imported) == thread.header_only()
    assert store.load(imported) == thread  # once each, from the turns


def test_header_only_drops_every_record_and_keeps_the_rest():
    thread = with_hosted_items()
    header = thread.header_only()
    records = (header.messages, header.thoughts, header.tool_calls, header.hosted_items)
    assert records == ((), (), (), ())
    assert (header.model, header.system_prompt) == (thread.model, thread.system_prompt)
    assert header.header_only() == header


# ---------------------------------------------------------------------- one writer per thread


def test_an_append_after_another_writer_conflicts_and_stores_nothing(backend):
    with backend.open() as first, backend.open() as second:
        thread_id = first.create_thread(turnwire.load_thread({"version": 1}))
        first.append_turns(thread_id, [user_turn("q0")])
        read = first.last_position(thread_id)
        assert read == 0
        first.load(thread_id)
        second.append_turns(
            thread_id, [user_turn("other")], expected_last=second.last_position(thread_id)
        )
        with pytest.raises(StoreConflictError) as caught:
            first.append_turns(
                thread_id, [user_turn("mine 1"), user_turn("mine 2")], expected_last=read
            )
        error = caught.value
        assert (error.code, error.status, error.fatal) == ("E_STORE_CONFLICT", 409, False)
        assert (error.thread_id, error.expected_last, error.actual_last) == (thread_id, 0, 1)
        assert texts(first, thread_id) == ["q0", "other"]
        first.append_turns(
            thread_id, [user_turn("mine 1")], expected_last=first.last_position(thread_id)
        )
        assert texts(second, thread_id) == ["q0", "other", "mine 1"]


def test_an_empty_thread_has_no_last_turn_and_the_first_append_is_conditional_too(store):
    thread_id = store.create_thread(turnwire.load_thread({"version": 1}))
    assert store.last_position(thread_id) == NO_TURNS == -1
    store.append_turns(thread_id, [user_turn("a")], expected_last=NO_TURNS)
    with pytest.raises(StoreConflictError):
        store.append_turns(thread_id, [user_turn("b")], expected_last=NO_TURNS)
    assert texts(store, thread_id) == ["a"]


def test_run_thread_fails_with_a_conflict_when_the_thread_changes_during_the_run(backend):
    container = make_container({"client": {"retry": {"max_retries": 0}}})
    with backend.open() as store, backend.open() as other:
        thread_id = store.create_thread(turnwire.load_thread({"version": 1, "model": "gpt-4o"}))
        store.append_turns(thread_id, [user_turn("earlier question")])
        meddled = []

        def meddle(delta: str) -> None:  # another writer appends while the answer streams
            if not meddled:
                other.append_turns(thread_id, [user_turn("concurrent question")])
                meddled.append(delta)

        with ScriptedServer([Reply.sse(recorded("text_simple_gpt-4o-mini.sse"))]) as server:
            with pytest.raises(StoreConflictError):
                run_thread(
                    thread_id,
                    store=store,
                    prompt="my question",
                    base_url=server.base_url,
                    container=container,
                    on_text=meddle,
                )
        assert meddled
        assert texts(store, thread_id) == ["earlier question", "concurrent question"]
        # Run again on what the thread is now: it goes through and stores the answer.
        with ScriptedServer([Reply.sse(recorded("text_simple_gpt-4o-mini.sse"))]) as server:
            run_thread(
                thread_id,
                store=store,
                prompt="my question",
                base_url=server.base_url,
                container=container,
            )
        assert [t.role for t in store.turns(thread_id)] == ["user", "user", "user", "assistant"]
        assert store.turns(thread_id)[-1].model == "gpt-4o-mini-2024-07-18"


# ---------------------------------------------------------------------- copies between stores


def test_copy_moves_threads_losslessly_between_any_two_stores(backend, other_backend):
    from turnwire.files.pointers import ContextAssembler
    from turnwire.model.records import Message

    weather = turnwire.load_thread(REPO_EXAMPLES / "weather.yaml")
    with backend.open() as source:
        files = ContextAssembler(roots=(str(REPO_EXAMPLES),))
        first = source.import_thread(weather, title="Weather", files=files)
        second = source.create_thread(turnwire.load_thread({"version": 1, "model": "gpt-5"}))
        message = Message(
            id="msg_9", role="assistant", content="ok", created_at=datetime(2026, 1, 2, tzinfo=UTC)
        )
        source.append_turns(
            second,
            TurnBuilder().build_assistant_turns(
                [message], model="gpt-5", usage={"total_tokens": 7}, request_fingerprint="f" * 64
            ),
        )
        summaries = {item.id: item for item in source.list_threads()}
        expected = {i: (source.header(i), source.turns(i)) for i in (first, second)}
        exported = source.export_thread(first)
        with other_backend.open() as target:
            assert copy_threads(source, target) == [first, second]
            assert {item.id: item for item in target.list_threads()} == summaries
            assert target.turns(second) == expected[second][1]
            assert target.header(second) == expected[second][0]
            assert target.turns(second)[0].usage == {"total_tokens": 7}
            copied = target.export_thread(first)
            (attachment,) = copied.messages[0].attachments
            # The file came along into the target's own folder, byte for byte.
            assert attachment.path is not None
            assert Path(attachment.path).parent.parent == target.files_folder
            assert Path(attachment.path).read_bytes() == (REPO_EXAMPLES / "photo.png").read_bytes()
            (original,) = exported.messages[0].attachments
            assert Path(original.path).parent.parent == source.files_folder
            assert copied.messages[1:] == exported.messages[1:]
            assert copied.tool_calls == exported.tool_calls
            # A second copy is refused before anything is written; other ids go on.
            with pytest.raises(StoreError, match="already has thread"):
                copy_threads(source, target, [second])
            with pytest.raises(UnknownThreadError):
                copy_threads(source, target, ["thr_missing"])
            target.delete_thread(first)
            assert not Path(attachment.path).exists()
            assert Path(original.path).exists()  # the source's file is its own
            assert copy_threads(source, target, [first]) == [first]
            assert target.export_thread(first).messages[1:] == exported.messages[1:]
            # Hosted items come along once each, in their turns.
            third = source.import_thread(with_hosted_items())
            assert copy_threads(source, target, [third]) == [third]
            assert target.header(third).hosted_items == ()
            assert target.export_thread(third) == with_hosted_items()


def test_a_compaction_round_trip(store):
    """``compact_thread`` stores the compaction as a turn (older turns kept); the next run
    sends it in place of them; a second compaction supersedes the first; a thread changed
    during a compaction conflicts and stores nothing."""
    from turnwire.api import compact_thread

    from ..client.test_run import compact_answer, history

    thread_id = store.import_thread(history())
    before = len(store.turns(thread_id))
    container = make_container({"client": {"retry": {"max_retries": 0}}})
    for cid in ("cmp_1", "cmp_2"):
        with ScriptedServer([Reply.json(200, compact_answer(cid, "Sum only. 3, 3?"))]) as server:
            compact_thread(thread_id, store=store, container=container, base_url=server.base_url)
        assert server.requests[0].path == "/v1/responses/compact"
        answer = Reply.sse(recorded("text_simple_gpt-4o-mini.sse"))
        with ScriptedServer([answer]) as server:
            run_thread(
                thread_id,
                store=store,
                prompt=f"after {cid}?",
                container=container,
                base_url=server.base_url,
            )
        sent = server.requests[0].json["input"]
        assert [i.get("type", "message") for i in sent] == ["compaction", "message"]
        assert sent[0] == {"encrypted_content": f"gAAAA-{cid}", "id": cid, "type": "compaction"}
    exported = store.export_thread(thread_id)
    assert [h.id for h in exported.hosted_items] == ["cmp_1", "cmp_2"]
    assert [m.id for m in exported.messages][:4] == ["u1", "a1", "u2", "a2"]
    assert len(store.turns(thread_id)) == before + 2 * 3


def test_a_thread_changed_during_a_compaction_conflicts(backend):
    from turnwire.api import compact_thread

    from ..client.test_run import compact_answer, history

    with backend.open() as store, backend.open() as other:
        thread_id = store.import_thread(history())
        turns = len(store.turns(thread_id))
        original = store.load

        def load_then_meddle(*args: Any, **kwargs: Any) -> Any:
            loaded = original(*args, **kwargs)
            other.append_turns(thread_id, [user_turn("concurrent question")])
            return loaded

        store.load = load_then_meddle
        with ScriptedServer([Reply.json(200, compact_answer())]) as server:
            with pytest.raises(StoreConflictError):
                compact_thread(
                    thread_id, store=store, container=make_container(), base_url=server.base_url
                )
        store.load = original
        assert len(store.turns(thread_id)) == turns + 1
        assert store.load(thread_id).hosted_items == ()


def test_a_timestamp_past_what_a_store_keeps_is_refused_with_nothing_stored(store):
    # Built in code (a thread file dated ahead is refused as it is read, before any store): an
    # import checks it as a thread file is, so a date this far ahead is refused there...
    far = datetime.fromisoformat("9999-12-31T23:59:59-23:59")
    thread = turnwire.Thread(
        messages=(turnwire.Message(id="u1", role="user", content="hi", created_at=far),)
    )
    with pytest.raises(turnwire.ThreadFileError, match="is in the future") as caught:
        store.import_thread(thread)
    assert caught.value.path == "$.messages[0].created_at"
    assert store.list_threads() == []
    # ... and a turn dated so is the store's own refusal, before anything is appended.
    thread_id = store.create_thread(turnwire.Thread())
    turn = msgspec.structs.replace(user_turn(1), created_at=far)
    with pytest.raises(StoreError, match="past the range a store keeps"):
        store.append_turns(thread_id, [turn])
    assert store.turns(thread_id) == []


def test_records_built_in_code_are_checked_as_a_thread_file_before_a_store_keeps_them(store):
    """A header or a thread built in code that a thread file could not hold is refused with the
    loader's error and ``$.path``, and nothing is stored (the store would keep what it could
    not read back)."""
    bad_tool = turnwire.Thread(tools=(turnwire.Tool(name="no spaces"),))
    with pytest.raises(turnwire.ThreadFileError) as caught:
        store.create_thread(bad_tool)
    assert caught.value.path == "$.tools[0].name"
    assert store.list_threads() == []
    thread_id = store.create_thread(turnwire.Thread(system_prompt="S"))
    with pytest.raises(turnwire.ThreadFileError) as caught:
        store.update_header(thread_id, turnwire.Thread(model=42))  # type: ignore[arg-type]
    assert caught.value.path == "$.model"
    assert store.header(thread_id).system_prompt == "S"
    text_date = turnwire.Message(id="u1", role="user", content="hi", created_at="2025-01-01")  # type: ignore[arg-type]
    with pytest.raises(turnwire.ThreadFileError, match="Expected `datetime`, got `str`") as caught:
        store.import_thread(turnwire.Thread(messages=(text_date,)))
    assert caught.value.path == "$.messages[0].created_at"
    assert [summary.id for summary in store.list_threads()] == [thread_id]


def test_a_programs_calls_keep_their_caller_and_namespace_through_the_store(store):
    thread = turnwire.load_thread(
        {
            "version": 1,
            "model": "gpt-5",
            "tools": [{"name": "count_rows", "allowed_callers": ["programmatic"]}],
            "hosted_tools": [{"type": "programmatic_tool_calling"}],
            "messages": [
                {"id": "u1", "role": "user", "content": "hi", "created_at": "2026-01-01T10:00:00Z"}
            ],
            "tool_calls": [
                {
                    "id": "call_1|fc_1",
                    "tool": "count_rows",
                    "caller": "call_prog_1",
                    "namespace": "rows",
                    "result": {"text": "42"},
                    "created_at": "2026-01-01T10:00:01Z",
                }
            ],
        }
    )
    back = store.export_thread(store.import_thread(thread))
    (call,) = back.tool_calls
    assert (call.caller, call.namespace) == ("call_prog_1", "rows")
    assert back.tools[0].allowed_callers == ("programmatic",)
    assert back.hosted_tools == thread.hosted_tools
