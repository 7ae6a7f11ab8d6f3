"""One writer per thread: appends conditional on the last position read, on a real SQLite file.

Two runs that read the same thread cannot both append: the second finds the thread moved on,
gets ``E_STORE_CONFLICT`` and stores nothing, so the thread never holds turns in an order the
model did not see.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

import turnwire
from turnwire.api import run_thread
from turnwire.store import NO_TURNS, StoreConflictError
from turnwire.store.sqlite import SQLiteStore
from turnwire.turns import TurnBuilder

from ..client.server import Reply, ScriptedServer, recorded
from ..conftest import make_container, turnwire_process


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


def test_an_append_after_another_writer_conflicts_and_stores_nothing(path):
    thread_id = _thread(path, "q0")
    with SQLiteStore(path) as first, SQLiteStore(path) as second:
        read = first.last_position(thread_id)
        assert read == 0
        first.load(thread_id)
        second.append_turns(
            thread_id, [_turn("other")], expected_last=second.last_position(thread_id)
        )
        with pytest.raises(StoreConflictError) as caught:
            first.append_turns(thread_id, [_turn("mine 1"), _turn("mine 2")], expected_last=read)
        error = caught.value
        assert (error.code, error.status, error.fatal) == ("E_STORE_CONFLICT", 409, False)
        assert (error.thread_id, error.expected_last, error.actual_last) == (thread_id, 0, 1)
        assert "re-run" in str(error)
        assert _texts(first, thread_id) == ["q0", "other"]
        # The caller re-reads and re-runs; now its append goes through.
        first.append_turns(
            thread_id, [_turn("mine 1")], expected_last=first.last_position(thread_id)
        )
        assert _texts(second, thread_id) == ["q0", "other", "mine 1"]


def test_an_empty_thread_has_no_last_turn_and_the_first_append_is_conditional_too(path):
    thread_id = _thread(path)
    with SQLiteStore(path) as store:
        assert store.last_position(thread_id) == NO_TURNS == -1
        store.append_turns(thread_id, [_turn("a")], expected_last=NO_TURNS)
        with pytest.raises(StoreConflictError):
            store.append_turns(thread_id, [_turn("b")], expected_last=NO_TURNS)
        assert _texts(store, thread_id) == ["a"]


def test_run_thread_fails_with_a_conflict_when_the_thread_changes_during_the_run(path):
    thread_id = _thread(path, "earlier question")
    container = make_container({"client": {"retry": {"max_retries": 0}}})
    with SQLiteStore(path) as store, SQLiteStore(path) as other:
        meddled = []

        def meddle(delta: str) -> None:  # another writer appends while the answer streams
            if not meddled:
                other.append_turns(thread_id, [_turn("concurrent question")])
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
        assert _texts(store, thread_id) == ["earlier question", "concurrent question"]


APPENDER = textwrap.dedent("""
    import sys
    from turnwire.store import StoreConflictError
    from turnwire.store.sqlite import SQLiteStore
    from turnwire.turns import TurnBuilder

    store = SQLiteStore(sys.argv[1])
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


def test_two_processes_that_read_the_same_thread_one_appends_the_other_conflicts(path):
    thread_id = _thread(path, "q0")
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", APPENDER, str(path), thread_id, tag],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for tag in ("a", "b")
    ]
    for writer in writers:
        assert writer.stdout is not None and writer.stdout.readline() == "loaded\n"
    outputs = [writer.communicate("go\n", timeout=60)[0] for writer in writers]
    codes = sorted(writer.returncode for writer in writers)
    assert codes == [0, 3], outputs
    assert sorted(outputs) == ["E_STORE_CONFLICT\n", "appended\n"]
    winner = "ab"[[w.returncode for w in writers].index(0)]
    with SQLiteStore(path) as store:
        assert _texts(store, thread_id) == ["q0", *(f"{winner}-{n}" for n in range(5))]
        assert store.last_position(thread_id) == 5


class BarrierServer(ScriptedServer):
    """Answers no request until ``parties`` requests have arrived, so runs overlap for sure."""

    def __init__(self, script: list[Reply], parties: int) -> None:
        super().__init__(script)
        self._barrier = threading.Barrier(parties, timeout=60)

    def _next(self) -> Reply:
        self._barrier.wait()
        return super()._next()


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
                        "--db",
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
