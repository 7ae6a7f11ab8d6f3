"""What the two databases (a real SQLite file and a real PostgreSQL server) hold beyond the
store contract: their rows, several processes on one store, a writer killed mid-append,
schema versions and migrations, and rows damaged outside turnwire.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from typing import Any

import pytest

import turnwire
from turnwire.errors import StoreError

from ..conftest import REPO_EXAMPLES
from .test_contract import texts, user_turn, with_hosted_items


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


@pytest.fixture
def store(location, open_at):
    with open_at(location) as opened:
        yield opened


# ---------------------------------------------------------------------- rows


def test_turns_are_rows_numbered_from_zero(store, location):
    thread_id = store.create_thread(turnwire.load_thread({"version": 1}))
    store.append_turns(thread_id, [user_turn(1)])
    store.append_turns(thread_id, [user_turn(2)])
    positions = query(location, "SELECT position FROM turns WHERE thread_id = ?", thread_id)
    assert sorted(row[0] for row in positions) == [0, 1]


def test_deleting_a_thread_deletes_its_turn_rows(store, location):
    thread_id = store.create_thread(turnwire.load_thread({"version": 1}))
    store.append_turns(thread_id, [user_turn(1)])
    store.delete_thread(thread_id)
    assert query(location, "SELECT COUNT(*) FROM turns")[0][0] == 0  # cascaded with the thread


def test_the_header_row_holds_no_records(store, location):
    thread = with_hosted_items()
    thread_id = store.import_thread(thread)
    ((header,),) = query(location, "SELECT header FROM threads WHERE id = ?", thread_id)
    kept = json.loads(header)
    assert {"messages", "thoughts", "tool_calls", "hosted_items"}.isdisjoint(kept)
    assert (kept["model"], kept["system_prompt"]) == ("gpt-5", "S")
    assert store.load(thread_id) == thread


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


def test_a_database_from_the_first_schema_version_migrates(location, open_at):
    _old_store(location)
    with open_at(location) as store:
        assert store.schema_version == schema_module(location).SCHEMA_VERSION == 5
        (turn,) = store.turns("thr_old")
        assert turn.parts[0].text == "hello from v1"
        assert turn.created_at == datetime(2025, 1, 1, tzinfo=UTC)
        assert (turn.model, turn.usage, turn.request_fingerprint, turn.ledger) == (None,) * 4
        assert store.load("thr_old").messages[0].content == "hello from v1"
        assert store.header("thr_old").model == "gpt-4o"
        (summary,) = store.list_threads()
        assert (summary.title, summary.turns) == ("old one", 1)
    with open_at(location) as again:  # opening a current store changes nothing
        assert again.schema_version == 5 and len(again.turns("thr_old")) == 1


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


def _back_to_version_2(location: str) -> None:
    """The schema version set back to 2, without what later versions added: the next open
    runs the migrations after it."""
    execute(location, "ALTER TABLE turns DROP COLUMN ledger")  # added by version 4
    if location.startswith("postgresql://"):  # and what version 5 added
        execute(location, "DROP TRIGGER turns_epoch ON turns")
        execute(location, "DROP TRIGGER turns_epoch_truncate ON turns")
        execute(location, "DROP FUNCTION turnwire_new_epoch")
    else:
        for trigger in ("threads_epoch", "turns_epoch_insert", "turns_epoch_update"):
            execute(location, f"DROP TRIGGER {trigger}")
        execute(location, "DROP TRIGGER turns_epoch_delete")
    execute(location, "ALTER TABLE threads DROP COLUMN epoch")
    if location.startswith("postgresql://"):
        execute(location, "DELETE FROM turnwire_schema WHERE version > 2")
    else:
        execute(location, "PRAGMA user_version=2")


def _with_copies_in_its_header(location: str, thread_id: str, thread: turnwire.Thread) -> None:
    """The store as schema version 2 left it: the header row also holding the thread's hosted
    items (every write of a header kept them then)."""
    import msgspec

    old = msgspec.structs.replace(thread.header_only(), hosted_items=thread.hosted_items)
    execute(
        location,
        "UPDATE threads SET header = ? WHERE id = ?",
        msgspec.json.encode(old).decode(),
        thread_id,
    )
    _back_to_version_2(location)


def test_a_store_whose_headers_copied_the_hosted_items_migrates_to_one_copy(location, open_at):
    thread = with_hosted_items()
    with open_at(location) as store:
        thread_id = store.import_thread(thread, title="hosted")
        plain = store.import_thread(turnwire.load_thread(REPO_EXAMPLES / "weather.yaml"))
        before = {item.id: item for item in store.list_threads()}
        untouched = query(location, "SELECT header FROM threads WHERE id = ?", plain)
    _with_copies_in_its_header(location, thread_id, thread)
    ((header,),) = query(location, "SELECT header FROM threads WHERE id = ?", thread_id)
    assert [item["id"] for item in json.loads(header)["hosted_items"]] == ["ws_1", "ws_2", "cmp_1"]
    with open_at(location) as store:
        assert store.schema_version == schema_module(location).SCHEMA_VERSION == 5
        ((header,),) = query(location, "SELECT header FROM threads WHERE id = ?", thread_id)
        assert "hosted_items" not in json.loads(header)
        assert store.header(thread_id) == thread.header_only()
        assert store.load(thread_id) == thread  # each hosted item once, in its turn
        assert store.export_thread(thread_id) == thread
        # Nothing else changed: the other thread's row, the titles, the timestamps.
        assert query(location, "SELECT header FROM threads WHERE id = ?", plain) == untouched
        assert {item.id: item for item in store.list_threads()} == before


def test_a_damaged_header_of_an_old_store_is_left_for_the_read_to_report(location, open_at):
    with open_at(location) as store:
        damaged = store.import_thread(with_hosted_items())
    execute(location, "UPDATE threads SET header = ? WHERE id = ?", '{"hosted_items": [', damaged)
    _back_to_version_2(location)
    with open_at(location) as store:  # the migration goes through
        assert store.schema_version == 5
        with pytest.raises(StoreError, match="is damaged"):
            store.header(damaged)


# ---------------------------------------------------------------------- one writer per thread

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


# ---------------------------------------------------------------------- damage


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
