"""The thread-store contract, on both stores: a real SQLite file and a real PostgreSQL server.

Appends and round trips, unknown threads, a writer killed mid-append, several processes on one
store, migrations from the previous schema version, the conditional append (two writers, one
conflict), run_thread, and copying threads between the two kinds losslessly.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import turnwire
from turnwire.api import run_thread
from turnwire.errors import StoreConflictError, StoreError, UnknownThreadError
from turnwire.store import copy_threads
from turnwire.store.protocol import NO_TURNS
from turnwire.store.turns import MessagePart, TurnBuilder

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


def query(location: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    """A raw query on the store's own database, as its operator would run it."""
    if location.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(location) as conn:
            return conn.execute(sql.replace("?", "%s").encode(), params).fetchall()
    with sqlite3.connect(location) as db:
        return db.execute(sql, params).fetchall()


def execute(location: str, sql: str, *params: Any) -> None:
    """A raw statement on the store's own database (an operator's, or a damaging one)."""
    if location.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(location) as conn:
            conn.execute(sql.replace("?", "%s").encode(), params)
        return
    with sqlite3.connect(location) as db:
        db.execute(sql, params)


def schema_module(location: str) -> Any:
    if location.startswith("postgresql://"):
        from turnwire.store import postgres

        return postgres
    from turnwire.store import sqlite

    return sqlite


def test_append_and_read_back(store, location):
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
    assert store.schema_version == schema_module(location).SCHEMA_VERSION
    positions = query(location, "SELECT position FROM turns WHERE thread_id = ?", thread_id)
    assert sorted(row[0] for row in positions) == [0, 1]


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


def test_unknown_threads_and_delete(store, location):
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
    assert query(location, "SELECT COUNT(*) FROM turns")[0][0] == 0  # cascaded with the thread
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


# ---------------------------------------------------------------------- crashes, processes

CRASHING_WRITER = textwrap.dedent("""
    import os, signal, sys
    from turnwire.store import open_store
    from turnwire.store.turns import TurnBuilder

    store = open_store(sys.argv[1], folder=sys.argv[3])
    kind = type(store)
    original = kind._insert
    written = []

    def crashing(self, db, thread_id, position, turn):
        original(self, db, thread_id, position, turn)
        written.append(position)
        if len(written) == 3:
            os.kill(os.getpid(), signal.SIGKILL)   # killed mid-append

    kind._insert = crashing
    builder = TurnBuilder()
    store.append_turns(sys.argv[2], [builder.build_user_turn(f"q{n}") for n in range(10)])
""")


def test_a_writer_killed_mid_append_leaves_the_store_as_it_was(location, open_at, tmp_path):
    with open_at(location) as store:
        thread_id = store.create_thread(turnwire.load_thread({"version": 1}))
        store.append_turns(thread_id, [user_turn(0)])
        before = store.turns(thread_id)
    done = subprocess.run(
        [sys.executable, "-c", CRASHING_WRITER, location, thread_id, str(tmp_path)],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == -9, done.stderr
    with open_at(location) as store:
        assert store.turns(thread_id) == before
        # The dead writer's lock is gone with it: the next append goes through.
        store.append_turns(thread_id, [user_turn(1)], expected_last=0)
        assert texts(store, thread_id) == ["question 0", "question 1"]
    count = query(location, "SELECT COUNT(*) FROM turns WHERE thread_id = ?", thread_id)
    assert count[0][0] == 2


WRITER = textwrap.dedent("""
    import sys
    from turnwire.store import open_store
    from turnwire.store.turns import TurnBuilder

    store = open_store(sys.argv[1], folder=sys.argv[5])
    builder = TurnBuilder()
    for n in range(int(sys.argv[3])):
        store.append_turns(sys.argv[2], [builder.build_user_turn(f"{sys.argv[4]}-{n}")])
    print("done")
""")


def test_two_processes_write_one_store_while_a_third_reads(location, open_at, tmp_path):
    with open_at(location) as store:
        thread_id = store.create_thread(turnwire.load_thread({"version": 1}))
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, location, thread_id, "40", tag, str(tmp_path)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for tag in ("a", "b")
    ]
    seen = []
    with open_at(location) as reader:
        while any(w.poll() is None for w in writers):
            seen.append(len(reader.turns(thread_id)))
        outputs = [w.communicate(timeout=60)[0] for w in writers]
        assert [w.returncode for w in writers] == [0, 0], outputs
        turns = reader.turns(thread_id)
    assert len(turns) == 80
    got = [t.parts[0].text for t in turns]
    for tag in ("a", "b"):
        assert [x for x in got if x.startswith(tag)] == [f"{tag}-{n}" for n in range(40)]
    assert seen == sorted(seen)  # the reader only ever saw whole appends, growing
    rows = query(
        location, "SELECT position FROM turns WHERE thread_id = ? ORDER BY position", thread_id
    )
    assert [r[0] for r in rows] == list(range(80))


# ---------------------------------------------------------------------- schema versions


def _old_store(location: str) -> None:
    """A database as the first schema version left it, with one thread of one turn."""
    module = schema_module(location)
    header = json.dumps({"version": 1, "model": "gpt-4o"})
    parts = json.dumps([{"kind": "text", "text": "hello from v1"}])
    thread = "INSERT INTO threads VALUES ('thr_old', 'old one', ?, ?, ?)"
    turn = "INSERT INTO turns VALUES ('thr_old', 0, 'turn_a', 'user', ?, ?)"
    moment = "2025-01-01T00:00:00+00:00"
    if location.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(location) as conn:
            conn.execute(
                "CREATE TABLE turnwire_schema (version INTEGER PRIMARY KEY, "
                "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
            )
            for statement in filter(str.strip, module.MIGRATIONS[0][1].split(";")):
                conn.execute(statement.encode())
            conn.execute("INSERT INTO turnwire_schema (version) VALUES (1)")
            conn.execute(thread.replace("?", "%s").encode(), (header, moment, moment))
            conn.execute(turn.replace("?", "%s").encode(), (moment, parts))
        return
    old = sqlite3.connect(location)
    for statement in filter(str.strip, module.MIGRATIONS[0][1].split(";")):
        old.execute(statement)
    old.execute("PRAGMA user_version=1")
    old.execute(thread, (header, moment, moment))
    old.execute(turn, (moment, parts))
    old.commit()
    old.close()


def test_a_database_from_the_previous_schema_version_migrates(location, open_at):
    _old_store(location)
    with open_at(location) as store:
        assert store.schema_version == schema_module(location).SCHEMA_VERSION == 2
        (turn,) = store.turns("thr_old")
        assert turn.parts[0].text == "hello from v1"
        assert turn.created_at == datetime(2025, 1, 1, tzinfo=UTC)
        assert (turn.model, turn.usage, turn.request_fingerprint) == (None, None, None)
        assert store.load("thr_old").messages[0].content == "hello from v1"
        assert store.header("thr_old").model == "gpt-4o"
        (summary,) = store.list_threads()
        assert (summary.title, summary.turns) == ("old one", 1)
    with open_at(location) as again:  # opening a current store changes nothing
        assert again.schema_version == 2 and len(again.turns("thr_old")) == 1


def test_a_newer_schema_is_refused(location, open_at):
    newer = schema_module(location).SCHEMA_VERSION + 1
    if location.startswith("postgresql://"):
        with open_at(location):
            pass
        query(location, "INSERT INTO turnwire_schema (version) VALUES (?) RETURNING version", newer)
    else:
        sqlite3.connect(location).execute(f"PRAGMA user_version={newer}")
    with pytest.raises(StoreError, match="newer"):
        open_at(location)


# ---------------------------------------------------------------------- one writer per thread


def test_an_append_after_another_writer_conflicts_and_stores_nothing(location, open_at):
    with open_at(location) as first, open_at(location) as second:
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


def test_run_thread_fails_with_a_conflict_when_the_thread_changes_during_the_run(location, open_at):
    container = make_container({"client": {"retry": {"max_retries": 0}}})
    with open_at(location) as store, open_at(location) as other:
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


APPENDER = textwrap.dedent("""
    import sys
    from turnwire.store import open_store
    from turnwire.errors import StoreConflictError
    from turnwire.store.turns import TurnBuilder

    store = open_store(sys.argv[1], folder=sys.argv[4])
    thread_id, tag = sys.argv[2], sys.argv[3]
    read = store.last_position(thread_id)
    store.load(thread_id)
    print("loaded", flush=True)
    sys.stdin.readline()  # both have read the thread: go
    builder = TurnBuilder()
    try:
        store.append_turns(
            thread_id, [builder.build_user_turn(f"{tag}-{n}") for n in range(5)], expected_last=read
        )
    except StoreConflictError as err:
        print(err.code, flush=True)
        sys.exit(3)
    print("appended", flush=True)
""")


def test_two_processes_that_read_the_same_thread_one_appends_the_other_conflicts(
    location, open_at, tmp_path
):
    with open_at(location) as store:
        thread_id = store.create_thread(turnwire.load_thread({"version": 1}))
        store.append_turns(thread_id, [user_turn("q0")])
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", APPENDER, location, thread_id, tag, str(tmp_path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for tag in ("a", "b")
    ]
    for writer in writers:
        assert writer.stdout is not None and writer.stdout.readline() == "loaded\n"
    outputs = [writer.communicate("go\n", timeout=60)[0] for writer in writers]
    assert sorted(writer.returncode for writer in writers) == [0, 3], outputs
    assert sorted(outputs) == ["E_STORE_CONFLICT\n", "appended\n"]
    winner = "ab"[[w.returncode for w in writers].index(0)]
    with open_at(location) as store:
        assert texts(store, thread_id) == ["q0", *(f"{winner}-{n}" for n in range(5))]
        assert store.last_position(thread_id) == 5


# ---------------------------------------------------------------------- copies between stores


@pytest.fixture(params=["sqlite", "postgres"])
def other_location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A second store, of either kind, beside :func:`location`."""
    if request.param == "sqlite":
        folder = tmp_path / "other"
        folder.mkdir()
        return str(folder / "threads.db")
    import uuid

    name = f"t_{uuid.uuid4().hex[:16]}"
    server = request.getfixturevalue("postgres_server")
    server.admin(f'CREATE DATABASE "{name}"')
    request.addfinalizer(lambda: server.admin(f'DROP DATABASE "{name}" WITH (FORCE)'))
    url: str = server.url(name)
    return url


def test_copy_moves_threads_losslessly_between_any_two_stores(location, other_location, tmp_path):
    from turnwire.files.pointers import ContextAssembler
    from turnwire.model.records import Message
    from turnwire.store import open_store

    weather = turnwire.load_thread(REPO_EXAMPLES / "weather.yaml")
    with open_store(location, folder=tmp_path / "a") as source:
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
        with open_store(other_location, folder=tmp_path / "b") as target:
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


def test_a_compaction_round_trip(store):
    """``compact_thread`` stores the compaction as a turn (older turns kept); the next run
    sends it in place of them; a second compaction supersedes the first; a thread changed
    during a compaction conflicts and stores nothing."""
    from turnwire.api import compact_thread

    from ..client.test_compaction import compact_answer, history

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


def test_a_thread_changed_during_a_compaction_conflicts(location, open_at):
    from turnwire.api import compact_thread

    from ..client.test_compaction import compact_answer, history

    with open_at(location) as store, open_at(location) as other:
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


@pytest.mark.parametrize(
    ("column", "value", "named"),
    [
        ("header", '{"version": 7}', "header"),
        ("parts", '[{"unknown": 1}]', "parts"),
    ],
)
def test_a_damaged_row_is_a_store_error_naming_the_thread_and_the_column(
    store, location, column, value, named
):
    """A row changed outside turnwire: a typed error naming where, never a traceback; the
    other threads still list and load."""
    damaged = store.import_thread(turnwire.load_thread(REPO_EXAMPLES / "weather.yaml"))
    kept = store.import_thread(turnwire.load_thread(REPO_EXAMPLES / "weather.yaml"))
    table = "threads" if column == "header" else "turns"
    key = "id" if column == "header" else "thread_id"
    execute(location, f"UPDATE {table} SET {column} = ? WHERE {key} = ?", value, damaged)
    with pytest.raises(StoreError) as caught:
        store.export_thread(damaged)
    assert repr(damaged) in str(caught.value) and named in str(caught.value)
    assert "is damaged" in str(caught.value)
    assert caught.value.code == "E_STORE"
    assert store.export_thread(kept).messages
    if column == "header":
        with pytest.raises(StoreError, match="header of thread"):
            store.list_threads()


def test_a_damaged_row_of_sqlite_text_is_a_store_error_on_the_command_line(tmp_path):
    from ..conftest import turnwire_process

    db = tmp_path / "c.db"
    done = turnwire_process(
        "threads", "import", str(REPO_EXAMPLES / "weather.yaml"), "--db", str(db)
    )
    assert done.returncode == 0, done.stderr
    thread_id = done.stdout.strip()
    for number, sql in enumerate(
        (
            "UPDATE threads SET header = '{not json'",
            "UPDATE turns SET parts = '[{\"kind\"'",
            "UPDATE turns SET created_at = 'yesterday'",
        )
    ):
        backup = tmp_path / f"b{number}.db"  # a copy of its own (no WAL file of another)
        backup.write_bytes(db.read_bytes())
        with sqlite3.connect(backup) as raw:
            raw.execute(sql)
        listed = turnwire_process("threads", "list", "--db", str(backup))
        if "header" in sql:  # what the list reads of each thread
            assert listed.returncode == 2 and "Traceback" not in listed.stderr, listed.stderr
        else:
            assert listed.returncode == 0 and thread_id in listed.stdout, listed.stderr
        shown = turnwire_process("threads", "show", thread_id, "--db", str(backup))
        assert shown.returncode == 2, (sql, shown.stdout)  # bad input: exit 2
        assert "Traceback" not in shown.stderr, shown.stderr
        last = shown.stderr.strip().splitlines()[-1]
        assert last.startswith("error: E_STORE: the store's "), last
        assert thread_id in last and "is damaged" in last


def test_a_timestamp_past_what_a_store_keeps_is_refused_at_import_with_nothing_stored(store):
    thread = turnwire.load_thread(
        {
            "version": 1,
            "messages": [
                {
                    "id": "u1",
                    "role": "user",
                    "content": "hi",
                    "created_at": "9999-12-31T23:59:59-23:59",
                }
            ],
        }
    )
    with pytest.raises(StoreError, match="past the range a store keeps"):
        store.import_thread(thread)
    assert store.list_threads() == []


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
