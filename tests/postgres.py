"""A real PostgreSQL server for the tests: ``postgres_server`` (one per test session),
``postgres_url`` (a fresh database on it) and ``location`` (a SQLite file or a PostgreSQL URL,
each test once per store), registered for every test folder by ``tests/conftest.py``.

The server is a throwaway cluster in a temporary folder, started once per test session (once
per worker under pytest-xdist) by the server binaries installed on the machine (Debian's
``postgresql`` package puts them in ``/usr/lib/postgresql/NN/bin``), owned by an unprivileged
user (``initdb`` refuses root: as root the cluster belongs to the system user ``turnwire-pg``,
created when missing), listening on 127.0.0.1 only, on a free port, and on a unix socket in
that folder; it is stopped and its folder removed at the end. Each test gets a database of its
own.

Without binaries, or when the server cannot start, the Postgres half is skipped with the
reason; with ``TURNWIRE_REQUIRE_POSTGRES=1`` (CI) that skip is a failure instead.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PG_USER = "turnwire-pg"
REQUIRE = "TURNWIRE_REQUIRE_POSTGRES"


@dataclass(frozen=True)
class PostgresServer:
    port: int
    socket_dir: Path

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(sql.encode())


def _binaries() -> Path | None:
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).resolve().parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=_version_key)
    return Path(versions[-1]).parent if versions else None


def _version_key(path: str) -> int:
    part = Path(path).parts[-3]
    return int(part) if part.isdigit() else 0


def _as_owner() -> list[str]:
    """The prefix that runs a server command as an unprivileged user (none when we are one)."""
    if os.geteuid() != 0:
        return []
    import pwd

    try:
        pwd.getpwnam(PG_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", PG_USER],
            check=True,
            capture_output=True,
        )
    return ["runuser", "-u", PG_USER, "--"]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _start(folder: Path) -> PostgresServer:
    binaries = _binaries()
    if binaries is None:
        raise RuntimeError("no PostgreSQL server binaries (pg_ctl) on PATH or in /usr/lib")
    owner = _as_owner()
    if owner:
        import pwd

        entry = pwd.getpwnam(PG_USER)
        os.chown(folder, entry.pw_uid, entry.pw_gid)
    data = folder / "data"
    initdb = subprocess.run(
        [*owner, str(binaries / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
         "-E", "UTF8", "--no-sync"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if initdb.returncode:
        raise RuntimeError(f"initdb failed: {initdb.stderr.strip()[-500:]}")
    failure = ""
    for _attempt in range(5):  # the free port may be taken between the probe and the start
        port = _free_port()
        options = (
            f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c full_page_writes=off -c max_connections=100"
        )
        started = subprocess.run(
            [*owner, str(binaries / "pg_ctl"), "-D", str(data), "-l", str(folder / "log"),
             "-w", "-t", "120", "-o", options, "start"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if started.returncode == 0:
            return PostgresServer(port=port, socket_dir=folder)
        log = folder / "log"
        failure = log.read_text()[-500:] if log.exists() else started.stderr[-500:]
    raise RuntimeError(f"the PostgreSQL server did not start: {failure.strip()}")


def _stop(folder: Path) -> None:
    binaries = _binaries()
    if binaries is not None and (folder / "data" / "postmaster.pid").exists():
        subprocess.run(
            [*_as_owner(), str(binaries / "pg_ctl"), "-D", str(folder / "data"), "-m",
             "immediate", "-w", "stop"],
            capture_output=True, check=False,
        )  # fmt: skip
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    folder = Path(tempfile.mkdtemp(prefix="turnwire-pg-"))
    try:
        try:
            import psycopg  # noqa: F401

            server = _start(folder)
        except (ImportError, RuntimeError, OSError, subprocess.CalledProcessError) as err:
            reason = f"no PostgreSQL server could be started: {err}"
            if os.environ.get(REQUIRE) == "1":
                pytest.fail(f"{reason} ({REQUIRE}=1: the Postgres half must run)")
            pytest.skip(reason)
        yield server
    finally:
        _stop(folder)


def _database(request: pytest.FixtureRequest) -> str:
    """A fresh, empty database on the test server, dropped after the test."""
    server: PostgresServer = request.getfixturevalue("postgres_server")
    name = f"t_{uuid.uuid4().hex[:16]}"
    server.admin(f'CREATE DATABASE "{name}"')
    request.addfinalizer(lambda: server.admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    return server.url(name)


@pytest.fixture
def postgres_url(request: pytest.FixtureRequest) -> str:
    """A fresh, empty database on the test server, dropped afterwards."""
    return _database(request)


STORES = ["sqlite", "postgres"]


@pytest.fixture(params=STORES)
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a store lives: a SQLite file, or a PostgreSQL database URL."""
    if request.param == "sqlite":
        return str(tmp_path / "threads.db")
    url: str = request.getfixturevalue("postgres_url")
    return url
