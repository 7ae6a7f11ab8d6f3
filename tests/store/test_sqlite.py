"""The SQLite store on a real file: appends, round trips, crashes, two processes, migrations."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import pytest

import turnwire
from turnwire.store import UnknownThreadError
from turnwire.store.sqlite import MIGRATIONS, SCHEMA_VERSION, SQLiteStore, StoreError
from turnwire.turns import MessagePart, TurnBuilder

from ..conftest import REPO_EXAMPLES

REPO = Path(__file__).resolve().parents[2]
GOLDEN = sorted(
    p for p in (REPO / "tests" / "golden").glob("*.yaml") if not p.name.endswith(".config.yaml")
)


def user_turn(n: int):
    return TurnBuilder().build_user_turn(f"question {n}")


@pytest.fixture
def store(tmp_path: Path):
    with SQLiteStore(tmp_path / "threads.db") as opened:
        yield opened


def test_append_and_read_back(store):
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
    assert store.path.exists() and store.schema_version == SCHEMA_VERSION
    journal = sqlite3.connect(store.path).execute("PRAGMA journal_mode").fetchone()[0]
    assert journal == "wal"


@pytest.mark.parametrize("source", [REPO_EXAMPLES / "weather.yaml", *GOLDEN], ids=lambda p: p.name)
def test_export_then_import_gives_the_same_thread(store, source):
    thread = turnwire.load_thread(source)
    thread_id = store.import_thread(thread)
    assert store.export_thread(thread_id) == thread
    again = store.import_thread(store.export_thread(thread_id))
    assert store.export_thread(again) == thread


def test_a_thread_with_replay_payloads_round_trips(store, tmp_path):
    from .. import conftest

    thread = turnwire.load_thread(
        {
            "version": 1,
            "model": "gpt-5",
            "messages": [conftest.user(), conftest.assistant("msg_1", "hi", 2, seq=1)],
            "thoughts": [
                conftest.reasoning_thought("rs_1", 2, fingerprint="a" * 64, paired="msg_1")
            ],
            "tool_calls": [
                {
                    "id": "call_1|fc_1",
                    "tool": "t",
                    "args": {"x": 1.5},
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
    thread_id = store.create_thread(turnwire.load_thread({"version": 1}))
    store.append_turns(thread_id, [user_turn(1)])
    store.delete_thread(thread_id)
    assert store.list_threads() == []
    count = sqlite3.connect(store.path).execute("SELECT COUNT(*) FROM turns").fetchone()[0]
    assert count == 0  # the turns went with the thread (foreign key cascade)
    with pytest.raises(UnknownThreadError):
        store.append_turns(thread_id, [user_turn(2)])
    with pytest.raises(StoreError, match="already exists"):
        store.create_thread(turnwire.load_thread({"version": 1}), thread_id="same")
        store.create_thread(turnwire.load_thread({"version": 1}), thread_id="same")


CRASHING_WRITER = textwrap.dedent("""
    import os, signal, sys
    from turnwire.store.sqlite import SQLiteStore
    from turnwire.turns import TurnBuilder

    class Crashing(SQLiteStore):
        written = 0
        def _insert(self, db, thread_id, position, turn):
            super()._insert(db, thread_id, position, turn)
            Crashing.written += 1
            if Crashing.written == 3:
                os.kill(os.getpid(), signal.SIGKILL)   # killed mid-append

    store = Crashing(sys.argv[1])
    builder = TurnBuilder()
    store.append_turns(sys.argv[2], [builder.build_user_turn(f"q{n}") for n in range(10)])
""")


def test_a_writer_killed_mid_append_leaves_the_store_as_it_was(tmp_path):
    path = tmp_path / "threads.db"
    with SQLiteStore(path) as store:
        thread_id = store.create_thread(turnwire.load_thread({"version": 1}))
        store.append_turns(thread_id, [user_turn(0)])
        before = store.turns(thread_id)
    done = subprocess.run(
        [sys.executable, "-c", CRASHING_WRITER, str(path), thread_id],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == -9
    with SQLiteStore(path) as store:
        assert store.turns(thread_id) == before
        assert sqlite3.connect(path).execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        store.append_turns(thread_id, [user_turn(1)])
        assert len(store.turns(thread_id)) == 2


WRITER = textwrap.dedent("""
    import sys
    from turnwire.store.sqlite import SQLiteStore
    from turnwire.turns import TurnBuilder

    store = SQLiteStore(sys.argv[1])
    builder = TurnBuilder()
    for n in range(int(sys.argv[3])):
        store.append_turns(sys.argv[2], [builder.build_user_turn(f"{sys.argv[4]}-{n}")])
    print("done")
""")


def test_two_processes_write_one_store_while_a_third_reads(tmp_path):
    path = tmp_path / "threads.db"
    with SQLiteStore(path) as store:
        thread_id = store.create_thread(turnwire.load_thread({"version": 1}))
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), thread_id, "40", tag],
            stdout=subprocess.PIPE,
            text=True,
        )
        for tag in ("a", "b")
    ]
    seen = []
    with SQLiteStore(path) as reader:
        while any(w.poll() is None for w in writers):
            seen.append(len(reader.turns(thread_id)))
        outputs = [w.communicate(timeout=60)[0] for w in writers]
        assert [w.returncode for w in writers] == [0, 0], outputs
        turns = reader.turns(thread_id)
    assert len(turns) == 80
    texts = [t.parts[0].text for t in turns]
    for tag in ("a", "b"):
        assert [x for x in texts if x.startswith(tag)] == [f"{tag}-{n}" for n in range(40)]
    assert seen == sorted(seen)  # the reader only ever saw whole appends, growing
    rows = (
        sqlite3.connect(path)
        .execute("SELECT position FROM turns WHERE thread_id = ? ORDER BY position", (thread_id,))
        .fetchall()
    )
    assert [r[0] for r in rows] == list(range(80))


def test_a_database_from_the_previous_schema_version_migrates(tmp_path):
    path = tmp_path / "old.db"
    old = sqlite3.connect(path)
    for statement in filter(str.strip, MIGRATIONS[0][1].split(";")):
        old.execute(statement)
    old.execute("PRAGMA user_version=1")
    header = json.dumps({"version": 1, "model": "gpt-4o"})
    old.execute(
        "INSERT INTO threads VALUES ('thr_old', 'old one', ?, '2025-01-01T00:00:00+00:00',"
        " '2025-01-01T00:00:00+00:00')",
        (header,),
    )
    parts = json.dumps([{"kind": "text", "text": "hello from v1"}])
    old.execute(
        "INSERT INTO turns VALUES ('thr_old', 0, 'turn_a', 'user', '2025-01-01T00:00:00+00:00', ?)",
        (parts,),
    )
    old.commit()
    old.close()
    with SQLiteStore(path) as store:
        assert store.schema_version == SCHEMA_VERSION == 2
        (turn,) = store.turns("thr_old")
        assert turn.parts[0].text == "hello from v1"
        assert (turn.model, turn.usage, turn.request_fingerprint) == (None, None, None)
        assert store.load("thr_old").messages[0].content == "hello from v1"
        assert store.header("thr_old").model == "gpt-4o"


def test_a_newer_schema_is_refused(tmp_path):
    path = tmp_path / "new.db"
    sqlite3.connect(path).execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    with pytest.raises(StoreError, match="newer"):
        SQLiteStore(path)


def test_turn_metadata_is_kept(store):
    thread_id = store.create_thread(turnwire.load_thread({"version": 1}))
    builder = TurnBuilder()
    from turnwire.model import Message

    message = Message(
        id="msg_1", role="assistant", content="hi", created_at=datetime(2026, 1, 1, tzinfo=UTC)
    )
    (turn,) = builder.build_assistant_turns(
        [message], model="gpt-5", usage={"total_tokens": 3}, request_fingerprint="c" * 64
    )
    store.append_turns(thread_id, [turn])
    (stored,) = store.turns(thread_id)
    assert stored == turn and isinstance(stored.parts[0], MessagePart)


def test_update_header_keeps_the_turns(store):
    thread_id = store.create_thread(turnwire.load_thread({"version": 1, "system_prompt": "a"}))
    store.append_turns(thread_id, [user_turn(1)])
    store.update_header(thread_id, turnwire.load_thread({"version": 1, "system_prompt": "b"}))
    assert store.header(thread_id).system_prompt == "b"
    assert len(store.turns(thread_id)) == 1
    with pytest.raises(UnknownThreadError):
        store.update_header("thr_missing", turnwire.load_thread({"version": 1}))
