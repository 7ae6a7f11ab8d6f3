"""The thread stores and a peer's sessions side by side: appends per second, reads, a crash loop.

Subjects, with 1 and 8 writer processes, each appending one-turn appends (200 bytes of text) to
a thread of its own:

* turnwire's SQLite store (a WAL file), each append conditional on the last position it read,
  as ``run --thread`` appends;
* turnwire's PostgreSQL store, the same (a throwaway local server started here with ``fsync=on``
  and ``full_page_writes=on``, or ``--postgres URL``, a database each);
* openai-agents' ``SQLiteSession`` (a WAL file of its own), ``add_items`` of one user item per
  append (no conditional check: it appends blindly); and its ``SQLAlchemySession`` when
  SQLAlchemy is installed (``sqlite+aiosqlite``), else a line says it is skipped.

Each runs at two equal durabilities, said in its line:

* process-safe: a committed append survives the process being killed, not the machine losing
  power: SQLite ``synchronous=NORMAL`` in WAL mode (the turnwire store's setting), PostgreSQL
  ``synchronous_commit=off`` (with ``fsync=on``);
* on disk: a commit returns once it is on disk: SQLite ``synchronous=FULL`` (the
  ``SQLiteSession``'s default), PostgreSQL ``synchronous_commit=on``.

The benchmark sets the pragma on every connection a writer opens (the store's, the session's).

* appends/s: timed inside the writers, from "go" to each one's last commit (a system-wide
  monotonic clock; process start and teardown are outside it): all appends over the time from
  the first writer's start to the last one's end;
* reads: median ms of reading a written thread back (``store.turns()`` and ``store.load()``;
  the session's ``get_items()``).

Every subject of a writer count runs once per round, in an order rotated round by round, each
on a fresh database; appends/s are medians over rounds, each ratio the median of the rounds'
ratios against turnwire's SQLite store at the same durability. There is no target:
SQLite serialises every writer of the file, PostgreSQL only the writers of one thread.

``--crash``: writers append batches of 3 turns in a loop and report each committed append;
each is killed with SIGKILL at a random moment, over and over; then every thread must hold
exactly the batches its writers reported (plus at most one whole batch that committed just
before a kill, before its report), never part of a batch.

Run: ``uv run python benchmarks/store.py`` (``--quick``: 20 appends, 1 and 4 writers, one round;
``--crash`` for the crash loop only; ``--group bench`` for the peers).
"""

from __future__ import annotations

import argparse
import contextlib
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _rounds import skipped  # noqa: E402

BATCH = 3


SYNC = {"process-safe": ("NORMAL", "off"), "on disk": ("FULL", "on")}
"""Durability -> (SQLite ``synchronous``, PostgreSQL ``synchronous_commit``)."""


def _writer(kind: str, location: str, thread_id: str, count: int, tag: str, sync: str) -> None:
    """One writer process: opens its store or session, says ready, waits for go, appends
    ``count``, and prints when its appends began and ended (``time.monotonic``)."""
    text = "x" * 200
    if kind == "turnwire":
        from turnwire.store.turns import TurnBuilder

        builder = TurnBuilder()
        with open_store(location, folder=tempfile.gettempdir()) as store:
            if hasattr(store, "_db"):  # SQLite: the benchmark's durability on its connection
                store._db.execute(f"PRAGMA synchronous={sync}")
            print("ready", flush=True)
            sys.stdin.readline()
            began = time.monotonic()
            for n in range(count):
                last = store.last_position(thread_id)
                turn = builder.build_user_turn(f"{tag}-{n} {text}")
                store.append_turns(thread_id, [turn], expected_last=last)
            ended = time.monotonic()
    else:
        import asyncio

        loop = asyncio.new_event_loop()
        session = _session(kind, location, thread_id, sync)
        print("ready", flush=True)
        sys.stdin.readline()
        began = time.monotonic()
        for n in range(count):
            item = {"role": "user", "content": f"{tag}-{n} {text}"}
            loop.run_until_complete(session.add_items([item]))
        ended = time.monotonic()
        loop.run_until_complete(_close(session))
    print(f"done {began} {ended}", flush=True)


def _session(kind: str, location: str, session_id: str, sync: str) -> Any:
    """An openai-agents session on ``location``, every connection at ``synchronous=sync``."""
    if kind == "agents-sqlite":
        from agents.memory.sqlite_session import SQLiteSession

        configure = SQLiteSession._configure_connection

        def configured(conn: Any) -> None:
            configure(conn)
            conn.execute(f"PRAGMA synchronous={sync}")

        SQLiteSession._configure_connection = staticmethod(configured)  # type: ignore[method-assign]
        return SQLiteSession(session_id, location)
    from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession
    from sqlalchemy import event

    session = SQLAlchemySession.from_url(
        session_id, url=f"sqlite+aiosqlite:///{location}", create_tables=True
    )

    @event.listens_for(session._engine.sync_engine, "connect")
    def _pragmas(conn: Any, _record: Any) -> None:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={sync}")

    return session


async def _close(session: Any) -> None:
    closing = getattr(session, "close", None)
    if closing is not None:
        result = closing()
        if hasattr(result, "__await__"):
            await result
    engine = getattr(session, "_engine", None)
    if engine is not None:
        await engine.dispose()


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
    """A function giving fresh database URLs (``synchronous_commit`` given): on ``url``'s
    server, or on a throwaway one started here, durable (``fsync=on``)."""
    import uuid

    import psycopg

    if url is None:
        folder = Path(tempfile.mkdtemp(prefix="turnwire-pg-bench-"))
        try:
            base = _start_durable(folder)
            yield lambda commit: _fresh(base, commit, uuid, psycopg)
        finally:
            from tests.postgres import _stop

            _stop(folder)
    else:
        yield lambda commit: _fresh(url, commit, uuid, psycopg)


def _start_durable(folder: Path) -> str:
    """A PostgreSQL server in ``folder`` (the tests' helpers), with ``fsync`` and full page
    writes on, unlike the tests' own server; its URL."""
    from tests.postgres import PG_USER, _as_owner, _binaries, _free_port

    binaries = _binaries()
    if binaries is None:
        raise RuntimeError("no PostgreSQL server binaries (pg_ctl)")
    owner = _as_owner()
    if owner:
        import os
        import pwd

        entry = pwd.getpwnam(PG_USER)
        os.chown(folder, entry.pw_uid, entry.pw_gid)
    data = folder / "data"
    subprocess.run(
        [*owner, str(binaries / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
         "-E", "UTF8", "--no-sync"],
        capture_output=True, check=True,
    )  # fmt: skip
    port = _free_port()
    options = (
        f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=on "
        "-c full_page_writes=on -c max_connections=100"
    )
    subprocess.run(
        [*owner, str(binaries / "pg_ctl"), "-D", str(data), "-l", str(folder / "log"), "-w",
         "-t", "120", "-o", options, "start"],
        capture_output=True, check=True,
    )  # fmt: skip
    return f"postgresql://postgres@127.0.0.1:{port}/postgres"


def _fresh(base: str, commit: str, uuid: Any, psycopg: Any) -> str:
    name = f"bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"'.encode())
        conn.execute(f'ALTER DATABASE "{name}" SET synchronous_commit = {commit}'.encode())
    return str(base.rsplit("/", 1)[0] + "/" + name)


def measure(
    kind: str, location: str, writers: int, appends: int, reads: int, sync: str
) -> dict[str, float]:
    """Appends/s inside ``writers`` writer processes, then read latency of one thread."""
    if kind == "turnwire":
        with open_store(location, folder=tempfile.gettempdir()) as store:
            header = turnwire.load_thread({"version": 1, "model": "gpt-5"})
            threads = [store.create_thread(header) for _ in range(writers)]
    else:
        threads = [f"session{i}" for i in range(writers)]
    processes = [
        _spawn("write", kind, location, t, str(appends), f"w{i}", sync)
        for i, t in enumerate(threads)
    ]
    for process in processes:
        assert process.stdout is not None and process.stdout.readline() == "ready\n"
    for process in processes:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    spans = []
    for process in processes:
        out, _ = process.communicate(timeout=600)
        assert process.returncode == 0, f"a {kind} writer failed"
        _, began, ended = out.split()[-3:]
        spans.append((float(began), float(ended)))
    elapsed = max(end for _, end in spans) - min(begin for begin, _ in spans)
    result = {"appends/s": writers * appends / elapsed}
    if kind == "turnwire":
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
        result["read ms"] = statistics.median(turns_s) * 1000
        result["load ms"] = statistics.median(load_s) * 1000
    else:
        import asyncio

        loop = asyncio.new_event_loop()
        session = _session(kind, location, threads[0], sync)
        got = loop.run_until_complete(session.get_items())
        assert len(got) == appends
        read_s = []
        for _ in range(reads):
            t0 = time.perf_counter()
            loop.run_until_complete(session.get_items())
            read_s.append(time.perf_counter() - t0)
        loop.run_until_complete(_close(session))
        loop.close()
        result["read ms"] = statistics.median(read_s) * 1000
    return result


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


def peers_installed() -> dict[str, str | None]:
    """Each peer's kind, and why it is skipped (None: installed)."""
    import importlib.util

    have = {name: importlib.util.find_spec(name) is not None for name in ("agents", "sqlalchemy")}
    return {
        "agents-sqlite": None if have["agents"] else "openai-agents is not installed",
        "agents-sqlalchemy": None
        if have["agents"] and have["sqlalchemy"] and importlib.util.find_spec("aiosqlite")
        else "SQLAlchemy or aiosqlite is not installed",
    }


LABELS = {
    "turnwire SQLite": "turnwire SQLiteStore",
    "turnwire PostgreSQL": "turnwire PostgresStore",
    "agents-sqlite": "openai-agents SQLiteSession",
    "agents-sqlalchemy": "openai-agents SQLAlchemySession",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer appends, one round")
    parser.add_argument("--crash", action="store_true", help="only the crash loop")
    parser.add_argument("--postgres", metavar="URL", help="a server to use (a database each)")
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        kind, *rest = args.worker
        if kind == "write":
            _writer(rest[0], rest[1], rest[2], int(rest[3]), rest[4], rest[5])
        else:
            _crasher(rest[0], rest[1])
        return
    appends, reads, rounds = (20, 10, 1) if args.quick else (200, 100, 3)
    counts = (1, 4) if args.quick else (1, 8)
    work = Path(tempfile.mkdtemp(prefix="turnwire-store-bench-"))
    counter = iter(range(100_000))

    def sqlite_file(_commit: str) -> str:
        return str(work / f"bench{next(counter)}.db")

    try:
        with contextlib.ExitStack() as stack:
            makers: dict[str, Any] = {"turnwire SQLite": sqlite_file}
            try:
                makers["turnwire PostgreSQL"] = stack.enter_context(postgres(args.postgres))
            except Exception as err:  # no server binaries, no psycopg: SQLite alone
                print(f"turnwire PostgresStore: skipped ({type(err).__name__}: {err})")
            peers = peers_installed()
            for kind, why in peers.items():
                if why is None:
                    makers[kind] = sqlite_file
            if not args.crash:
                print(
                    f"store benchmark (Python {sys.version.split()[0]}; {rounds} round(s), every "
                    "subject alternated, a fresh database each; appends/s timed inside the "
                    "writers; ratios the median of each round's against turnwire's SQLite store "
                    "at the same durability)"
                )
                for kind, why in peers.items():
                    if why is not None:
                        skipped(LABELS[kind], why)
                for writers in counts:
                    compare(makers, writers, appends, reads, rounds)
            print("\ncrash loop")
            crash_rounds = 2 if args.quick else 20
            for name in ("turnwire SQLite", "turnwire PostgreSQL"):
                if name in makers:
                    location = makers[name]("off")
                    print(f"  {name}: {crash_loop(location, 4, crash_rounds, seed=14)}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def compare(makers: dict[str, Any], writers: int, appends: int, reads: int, rounds: int) -> None:
    """Every subject at both durabilities, ``rounds`` rounds, and their lines."""
    subjects = [(name, level) for level in SYNC for name in makers]
    results: dict[tuple[str, str], list[dict[str, float]]] = {s: [] for s in subjects}
    for round_ in range(rounds):
        shift = round_ % len(subjects)
        for name, level in subjects[shift:] + subjects[:shift]:
            lite, commit = SYNC[level]
            kind = "turnwire" if name.startswith("turnwire") else name
            sync = commit if name == "turnwire PostgreSQL" else lite
            location = makers[name](commit)
            results[name, level].append(measure(kind, location, writers, appends, reads, sync))
    print(f"\n{writers} writer process(es), {appends} appends each:")
    for level, (lite, commit) in SYNC.items():
        print(
            f"  {level}: SQLite synchronous={lite} (WAL), PostgreSQL synchronous_commit={commit}"
            " (fsync=on)"
        )
        base = [r["appends/s"] for r in results["turnwire SQLite", level]]
        for name in makers:
            got = results[name, level]
            rate = [r["appends/s"] for r in got]
            over = statistics.median(x / b for x, b in zip(rate, base, strict=True))
            reads_ms = "; ".join(
                f"{key} {statistics.median(r[key] for r in got):.2f}"
                for key in got[0]
                if key != "appends/s"
            )
            print(
                f"    {LABELS[name]:<32}{statistics.median(rate):>9.0f} appends/s "
                f"(min {min(rate):.0f})  {over:.2f}x turnwire SQLite  [{reads_ms}]"
            )


if __name__ == "__main__":
    main()
