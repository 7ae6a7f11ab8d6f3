"""What only the PostgreSQL store has: row locks, the version table, URLs, the optional extra."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

import pytest

import turnwire
from turnwire.errors import StoreError
from turnwire.store import open_store
from turnwire.store.postgres import SCHEMA_VERSION, PostgresStore, is_postgres_url, redacted_url
from turnwire.store.sqlite import SQLiteStore
from turnwire.store.turns import TurnBuilder


def test_a_writer_holding_one_thread_does_not_block_a_writer_on_another(postgres_url, tmp_path):
    builder = TurnBuilder()
    with (
        PostgresStore(postgres_url, folder=tmp_path) as holder,
        PostgresStore(postgres_url, folder=tmp_path, timeout_s=2) as other,
    ):
        busy = holder.create_thread(turnwire.load_thread({"version": 1}))
        free = other.create_thread(turnwire.load_thread({"version": 1}))
        inside, release = threading.Event(), threading.Event()
        original = holder._insert

        def stalled(cur, thread_id, position, turn):
            original(cur, thread_id, position, turn)
            inside.set()  # busy's row is locked, its turn half written, until release
            assert release.wait(60)

        holder._insert = stalled  # type: ignore[method-assign]
        writer = threading.Thread(
            target=holder.append_turns, args=(busy, [builder.build_user_turn("slow")])
        )
        writer.start()
        assert inside.wait(60)
        try:
            # The other thread's row is not locked: this append commits while busy's waits
            # (with a table lock it would fail on its 2 s lock timeout instead).
            other.append_turns(free, [builder.build_user_turn("fast")], expected_last=-1)
            assert [t.parts[0].text for t in other.turns(free)] == ["fast"]
            assert other.turns(busy) == []  # the open append is invisible to readers
            # A second writer on busy's own row has to wait for it: it gives up at its timeout.
            with pytest.raises(StoreError, match="stayed locked"):
                other.append_turns(busy, [builder.build_user_turn("blocked")])
        finally:
            release.set()
            writer.join(60)
        assert [t.parts[0].text for t in other.turns(busy)] == ["slow"]


def test_the_version_table_records_each_migration(postgres_url, tmp_path):
    import psycopg

    with PostgresStore(postgres_url, folder=tmp_path) as store:
        assert store.schema_version == SCHEMA_VERSION
    with psycopg.connect(postgres_url) as conn:
        rows = conn.execute("SELECT version FROM turnwire_schema ORDER BY version").fetchall()
    assert [row[0] for row in rows] == list(range(1, SCHEMA_VERSION + 1))


OPENER = textwrap.dedent("""
    import sys
    from turnwire.store.postgres import PostgresStore
    with PostgresStore(sys.argv[1], folder=sys.argv[2]) as store:
        print(store.schema_version)
""")


def test_processes_opening_a_fresh_database_at_once_migrate_it_once(postgres_url, tmp_path):
    openers = [
        subprocess.Popen(
            [sys.executable, "-c", OPENER, postgres_url, str(tmp_path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    results = [opener.communicate(timeout=120) for opener in openers]
    assert [opener.returncode for opener in openers] == [0] * 4, results
    assert [out for out, _ in results] == [f"{SCHEMA_VERSION}\n"] * 4


def test_the_location_picks_the_store(postgres_url, tmp_path, monkeypatch):
    with open_store(postgres_url, folder=tmp_path) as store:
        assert isinstance(store, PostgresStore)
        assert store.files_folder == tmp_path.resolve() / "files"
        assert store.path.parent / "files" == store.files_folder  # run_thread's default root
    with open_store(str(tmp_path / "t.db")) as store:
        assert isinstance(store, SQLiteStore)
    monkeypatch.setenv("TURNWIRE_STORE", postgres_url.replace("postgresql://", "postgres://"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    with open_store() as store:
        assert isinstance(store, PostgresStore)
        assert store.files_folder == (tmp_path / "data" / "turnwire" / "files").resolve()
    assert is_postgres_url("postgresql://h/db") and not is_postgres_url("postgresql.db")


def _closed_port() -> int:
    import socket

    with socket.socket() as probe:  # bound, never listening: a connection is refused
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_password_never_shows(postgres_server, tmp_path):
    url = f"postgresql://postgres:hunter2@127.0.0.1:{postgres_server.port}/no_such_db"
    with pytest.raises(StoreError) as caught:
        PostgresStore(url, folder=tmp_path, timeout_s=5)
    assert caught.value.code == "E_STORE"
    assert "no_such_db" in str(caught.value) and "hunter2" not in str(caught.value)
    assert "\n" not in str(caught.value)  # one line, as every error
    refused = f"postgresql://postgres:hunter2@127.0.0.1:{_closed_port()}/db"
    with pytest.raises(StoreError, match="cannot open the thread store") as caught:
        PostgresStore(refused, folder=tmp_path, timeout_s=5)
    assert "hunter2" not in str(caught.value) and "\n" not in str(caught.value)
    assert redacted_url(url) == f"postgresql://postgres@127.0.0.1:{postgres_server.port}/no_such_db"
    with PostgresStore(postgres_server.url(), folder=tmp_path) as store:
        assert "hunter2" not in repr(store)


WITHOUT_EXTRA = textwrap.dedent("""
    import sys
    sys.modules["psycopg"] = None   # as on an install without turnwire[postgres]
    sys.modules["psycopg_pool"] = None
    from turnwire.store import open_store
    from turnwire.errors import StoreError
    with open_store(sys.argv[1] + "/t.db") as store:   # SQLite needs nothing more
        store.list_threads()
    try:
        open_store("postgresql://127.0.0.1:9/db")
    except StoreError as err:
        print(err.code, err)
""")


def test_a_url_without_the_extra_is_a_clear_error_and_sqlite_still_works(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_EXTRA, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("E_STORE ")
    assert "uv sync --extra postgres" in done.stdout and "whl[postgres]" in done.stdout


def test_importing_turnwire_does_not_import_psycopg():
    done = subprocess.run(
        [sys.executable, "-c", "import turnwire, turnwire.cli.main, turnwire.store, sys; "
         "import turnwire.store.postgres; print('psycopg' in sys.modules)"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.stdout == "False\n", done.stderr


@pytest.mark.parametrize(
    ("store", "message"),
    [
        ({"url": "mysql://h/db"}, "starts with postgresql://"),
        ({"url": "postgresql://h/db", "path": "/x.db"}, "not url and path"),
        ({"location": "postgresql://h/db", "path": "/x.db"}, "not location and path"),
    ],
)
def test_store_settings_are_checked(store, message):
    import warnings

    from turnwire.errors import ConfigError

    with warnings.catch_warnings(), pytest.raises(ConfigError, match=message):
        warnings.simplefilter("ignore", DeprecationWarning)  # the old keys' own warning
        turnwire.load_settings(overrides={"store": store})


def test_store_settings_take_a_url_and_a_folder():
    settings = turnwire.load_settings(
        overrides={"store": {"location": "postgresql://h/db", "folder": "/srv/turnwire"}}
    )
    assert (settings.store.where, settings.store.folder, settings.store.path) == (
        "postgresql://h/db",
        "/srv/turnwire",
        None,
    )


NO_SERVER = """
import sys

def pytest_sessionstart(session):  # as on a machine without PostgreSQL's binaries
    sys.modules["tests.postgres"]._binaries = lambda: None
"""


@pytest.mark.parametrize("required", [False, True])
def test_without_a_server_the_postgres_half_skips_visibly_and_ci_fails(tmp_path, required):
    from pathlib import Path

    (tmp_path / "no_server.py").write_text(NO_SERVER)
    repo = Path(__file__).resolve().parents[2]
    env = {
        **__import__("os").environ,
        "PYTHONPATH": str(tmp_path),
        "TURNWIRE_REQUIRE_POSTGRES": "1" if required else "",
    }
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no_server",
         "-p", "no:cacheprovider",
         "tests/store/test_postgres.py::test_the_version_table_records_each_migration"],
        capture_output=True, text=True, timeout=300, cwd=repo, env=env, check=False,
    )  # fmt: skip
    if required:
        assert done.returncode == 1, done.stdout
        assert "TURNWIRE_REQUIRE_POSTGRES=1: the Postgres half must run" in done.stdout
    else:
        assert done.returncode == 0, done.stdout
        assert "SKIPPED [1]" in done.stdout and "no PostgreSQL server could be started" in (
            done.stdout
        )


def test_a_title_postgresql_cannot_hold_is_a_store_error_and_stores_nothing(
    postgres_url: str,
) -> None:
    header = turnwire.load_thread({"version": 1, "model": "gpt-5"})
    with open_store(postgres_url) as store:
        with pytest.raises(StoreError, match="cannot hold a value"):
            store.create_thread(header, title="bad\x00title")
        assert store.list_threads() == []
        # NUL inside a record's text goes through the JSON columns, escaped
        thread_id = store.create_thread(header, title="ok")
        turn = store.builder.build_user_turn("a\x00b", [])
        store.append_turns(thread_id, [turn])
        assert store.load(thread_id).messages[-1].content == "a\x00b"
