"""The two thread stores side by side: appends per second, read latency, and a crash loop.

For SQLite (a WAL file) and PostgreSQL (a throwaway local server, as the tests start one, or
``--postgres URL``), with 1 and 8 writer processes, each appending one-turn appends to a thread
of its own (conditional on the last position it read, as ``run --thread`` appends):

* appends/s: every writer's appends over the wall time from "go" to the last one done;
* read latency: median and p95 of ``store.turns()`` and ``store.load()`` on a written thread.

The numbers are a ratio between the two stores on the same machine in the same run, never a
target: SQLite serialises every writer of the file, PostgreSQL only the writers of one thread.

``--crash``: writers append batches of 3 turns in a loop and report each committed append;
each is killed with SIGKILL at a random moment, over and over; then every thread must hold
exactly the batches its writers reported (plus at most one whole batch that committed just
before a kill, before its report), never part of a batch.

Run: ``uv run python benchmarks/store.py`` (``--quick`` for fewer appends; ``--crash`` for the
crash loop only).
"""

from __future__ import annotations

import argparse
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import turnwire  # noqa: E402
from turnwire.store import open_store  # noqa: E402

BATCH = 3


def _writer(location: str, thread_id: str, count: int, tag: str) -> None:
    """One writer process: opens the store, says ready, waits for go, appends ``count``."""
    from turnwire.store.turns import TurnBuilder

    builder = TurnBuilder()
    with open_store(location, folder=tempfile.gettempdir()) as store:
        print("ready", flush=True)
        sys.stdin.readline()
        for n in range(count):
            last = store.last_position(thread_id)
            store.append_turns(
                thread_id, [builder.build_user_turn(f"{tag}-{n} " + "x" * 200)], expected_last=last
            )
    print("done", flush=True)


def _crasher(location: str, thread_id: str) -> None:
    """Appends batches forever, printing the last position after each committed one."""
    from turnwire.store.turns import TurnBuilder

    builder = TurnBuilder()
    with open_store(location, folder=tempfile.gettempdir()) as store:
        print("ready", flush=True)
        while True:
            last = store.last_position(thread_id)
            batch = [builder.build_user_turn(f"{last + 1 + j}") for j in range(BATCH)]
            store.append_turns(thread_id, batch, expected_last=last)
            print(last + BATCH, flush=True)


def _spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, __file__, "--worker", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


@contextmanager
def postgres(url: str | None) -> Iterator[Any]:
    """A function giving fresh database URLs: on ``url``'s server, or on a throwaway one."""
    import uuid

    import psycopg

    if url is None:
        from tests.postgres import _start, _stop

        folder = Path(tempfile.mkdtemp(prefix="turnwire-pg-bench-"))
        try:
            server = _start(folder)
            base = server.url()
            yield lambda: _fresh(base, uuid, psycopg)
        finally:
            _stop(folder)
    else:
        yield lambda: _fresh(url, uuid, psycopg)


def _fresh(base: str, uuid: Any, psycopg: Any) -> str:
    name = f"bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"'.encode())
    return str(base.rsplit("/", 1)[0] + "/" + name)


def measure(location: str, writers: int, appends: int, reads: int) -> dict[str, float]:
    with open_store(location, folder=tempfile.gettempdir()) as store:
        header = turnwire.load_thread({"version": 1, "model": "gpt-5"})
        threads = [store.create_thread(header) for _ in range(writers)]
    processes = [_spawn("write", location, t, str(appends), f"w{i}") for i, t in enumerate(threads)]
    for process in processes:
        assert process.stdout is not None and process.stdout.readline() == "ready\n"
    started = time.perf_counter()
    for process in processes:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    for process in processes:
        process.communicate(timeout=600)
        assert process.returncode == 0
    elapsed = time.perf_counter() - started
    with open_store(location, folder=tempfile.gettempdir()) as store:
        assert all(len(store.turns(t)) == appends for t in threads)
        turns_s, load_s = [], []
        for _ in range(reads):
            t0 = time.perf_counter()
            store.turns(threads[0])
            t1 = time.perf_counter()
            store.load(threads[0])
            load_s.append(time.perf_counter() - t1)
            turns_s.append(t1 - t0)
    return {
        "appends/s": writers * appends / elapsed,
        "turns() median ms": statistics.median(turns_s) * 1000,
        "turns() p95 ms": statistics.quantiles(turns_s, n=20)[-1] * 1000,
        "load() median ms": statistics.median(load_s) * 1000,
    }


def crash_loop(location: str, writers: int, rounds: int, seed: int) -> str:
    """Kill writers mid-append, ``rounds`` times; check each thread; return a summary line."""
    chance = random.Random(seed)
    with open_store(location, folder=tempfile.gettempdir()) as store:
        header = turnwire.load_thread({"version": 1})
        threads = [store.create_thread(header) for _ in range(writers)]
    reported = dict.fromkeys(threads, -1)
    kills = 0
    for _ in range(rounds):
        processes = {t: _spawn("crash", location, t) for t in threads}
        for process in processes.values():
            assert process.stdout is not None and process.stdout.readline() == "ready\n"
        time.sleep(chance.uniform(0.0, 0.2))
        for thread_id, process in processes.items():
            process.send_signal(signal.SIGKILL)
            out, _ = process.communicate(timeout=60)
            kills += process.returncode == -signal.SIGKILL
            for line in out.split():
                reported[thread_id] = max(reported[thread_id], int(line))
    with open_store(location, folder=tempfile.gettempdir()) as store:
        unreported = 0
        for thread_id in threads:
            texts = [turn.parts[0].text for turn in store.turns(thread_id)]
            stored = len(texts) - 1
            assert texts == [str(n) for n in range(len(texts))], f"{thread_id}: out of order"
            assert len(texts) % BATCH == 0, f"{thread_id}: part of a batch stored"
            # Committed but killed before it printed: at most one whole batch past the report.
            assert stored in (reported[thread_id], reported[thread_id] + BATCH), (
                f"{thread_id}: {len(texts)} turns stored, {reported[thread_id] + 1} reported"
            )
            unreported += stored != reported[thread_id]
    total = sum(reported.values()) + len(threads)
    return (
        f"{kills} SIGKILLs over {rounds} rounds x {writers} writers: {total} reported turns all "
        f"stored, no half batch, {unreported} whole batch(es) committed unreported"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer appends and reads")
    parser.add_argument("--crash", action="store_true", help="only the crash loop")
    parser.add_argument("--postgres", metavar="URL", help="a server to use (a database each)")
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        kind, *rest = args.worker
        if kind == "write":
            _writer(rest[0], rest[1], int(rest[2]), rest[3])
        else:
            _crasher(rest[0], rest[1])
        return
    appends, reads = (50, 50) if args.quick else (200, 200)
    work = Path(tempfile.mkdtemp(prefix="turnwire-store-bench-"))
    try:
        with postgres(args.postgres) as fresh_database:
            counter = iter(range(1000))

            def sqlite() -> str:
                return str(work / f"bench{next(counter)}.db")

            makers = {"SQLite": sqlite, "PostgreSQL": fresh_database}
            if not args.crash:
                for writers in (1, 8):
                    results = {
                        name: measure(make(), writers, appends, reads)
                        for name, make in makers.items()
                    }
                    print(f"\n{writers} writer process(es), {appends} appends each")
                    print(f"{'':<22}{'SQLite':>12}{'PostgreSQL':>12}{'PG / SQLite':>14}")
                    for metric in results["SQLite"]:
                        a, b = results["SQLite"][metric], results["PostgreSQL"][metric]
                        print(f"{metric:<22}{a:>12.2f}{b:>12.2f}{b / a:>13.2f}x")
            print("\ncrash loop")
            rounds = 5 if args.quick else 20
            for name, make in makers.items():
                print(f"  {name}: {crash_loop(make(), 4, rounds, seed=14)}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
