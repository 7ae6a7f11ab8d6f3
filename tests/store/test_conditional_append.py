"""One writer per thread, through the command line: two concurrent ``turnwire run --thread``
processes on one SQLite file store one answer; the other gets ``E_STORE_CONFLICT``.

The store-level cases (a second writer, an empty thread, ``run_thread`` during a change, two
processes) run against both stores in ``test_contract.py``.
"""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

import turnwire
from turnwire.store.sqlite import SQLiteStore
from turnwire.store.turns import TurnBuilder

from ..client.server import Reply, ScriptedServer, Seen, recorded
from ..conftest import turnwire_process


def _turn(text: str):
    return TurnBuilder().build_user_turn(text)


def _texts(store: SQLiteStore, thread_id: str) -> list[str]:
    return [turn.parts[0].text for turn in store.turns(thread_id)]


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
