"""What only the SQLite store has: its file, read and damaged with SQLite's own tools, and the
command line on it: two concurrent ``turnwire run --thread`` processes on one SQLite file store one
answer, the other gets ``E_STORE_CONFLICT`` (the store-level cases run against every store in
``test_contract.py``)."""

from __future__ import annotations

import sqlite3
import subprocess
import threading
from pathlib import Path

import pytest

import turnwire
from turnwire.store.sqlite import SQLiteStore
from turnwire.store.turns import TurnBuilder

from ..client.server import Reply, ScriptedServer, Seen, recorded
from ..conftest import REPO_EXAMPLES, turnwire_process


def test_a_damaged_row_of_sqlite_text_is_a_store_error_on_the_command_line(tmp_path):
    from ..conftest import turnwire_process

    db = tmp_path / "c.db"
    done = turnwire_process(
        "threads", "import", str(REPO_EXAMPLES / "weather.yaml"), "--store", str(db)
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
        listed = turnwire_process("threads", "list", "--store", str(backup))
        if "header" in sql:  # what the list reads of each thread
            assert listed.returncode == 2 and "Traceback" not in listed.stderr, listed.stderr
        else:
            assert listed.returncode == 0 and thread_id in listed.stdout, listed.stderr
        shown = turnwire_process("threads", "show", thread_id, "--store", str(backup))
        assert shown.returncode == 2, (sql, shown.stdout)  # bad input: exit 2
        assert "Traceback" not in shown.stderr, shown.stderr
        last = shown.stderr.strip().splitlines()[-1]
        assert last.startswith("error: E_STORE: the store's "), last
        assert thread_id in last and "is damaged" in last


def _turn(text: str):
    return TurnBuilder().build_user_turn(text)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "threads.db"


def _thread(path: Path, *texts: str) -> str:
    with SQLiteStore(path) as store:
        thread_id = store.create_thread(turnwire.load_thread({"version": 1, "model": "gpt-4o"}))
        for text in texts:
            store.append_turns(thread_id, [_turn(text)])
    return thread_id


class BarrierServer(ScriptedServer):
    """Answers no request until ``parties`` requests have arrived, so runs overlap for sure."""

    def __init__(self, script: list[Reply], parties: int) -> None:
        super().__init__(script)
        self._barrier = threading.Barrier(parties, timeout=60)

    def _next(self, seen: Seen) -> Reply:
        self._barrier.wait()
        return super()._next(seen)


def test_two_concurrent_cli_runs_on_one_thread_store_one_answer(path):
    thread_id = _thread(path, "earlier question")
    answer = Reply.sse(recorded("text_simple_gpt-4o-mini.sse"))
    with BarrierServer([answer], parties=2) as server:
        runs = [
            threading.Thread(
                target=lambda i=i: results.__setitem__(
                    i,
                    turnwire_process(
                        "run",
                        "--thread",
                        thread_id,
                        "--store",
                        str(path),
                        "--prompt",
                        f"question {i}",
                        "--base-url",
                        server.base_url,
                    ),
                )
            )
            for i in range(2)
        ]
        results: dict[int, subprocess.CompletedProcess[str]] = {}
        for run in runs:
            run.start()
        for run in runs:
            run.join(timeout=120)
    assert sorted(done.returncode for done in results.values()) == [0, 1]
    (loser,) = (done for done in results.values() if done.returncode == 1)
    assert loser.stderr.strip().splitlines()[-1].startswith("error: E_STORE_CONFLICT: ")
    winner = next(i for i, done in results.items() if done.returncode == 0)
    with SQLiteStore(path) as store:
        turns = store.turns(thread_id)
        assert [turn.role for turn in turns] == ["user", "user", "assistant"]
        asked = [turn.parts[0].text for turn in turns[:2]]
        assert asked == ["earlier question", f"question {winner}"]
