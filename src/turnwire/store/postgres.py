"""The PostgreSQL thread store, for deployments that outgrow one SQLite file.

The same guarantees as :class:`~turnwire.store.sqlite.SQLiteStore`, with PostgreSQL's own
tools: the schema version in the table ``turnwire_schema`` (one row per applied migration),
migrations applied in order under a transaction-scoped advisory lock when a store is opened;
every append in one transaction that first locks the thread's row (``SELECT ... FOR UPDATE``),
so the conditional append compares ``expected_last`` with a last position no other writer can
move, and the ``(thread_id, position)`` primary key refuses a duplicate position even so. A
client that dies mid-append leaves an open transaction the server rolls back when the
connection drops: nothing of it is ever visible. Writers on different threads lock different
rows and never wait for each other.

Imported files live on the local disk, as for SQLite: in ``files/`` inside the store's
``folder`` (``store.folder``; default ``$XDG_DATA_HOME/turnwire``). Hosts that share one
database share that folder (a network mount) or import no files.

Needs the ``postgres`` extra (psycopg 3 and its pool): ``uv sync --extra postgres`` in a clone,
or ``pip install 'dist/turnwire-<version>-py3-none-any.whl[postgres]'``.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from turnwire.errors import StoreConflictError, StoreError, UnknownThreadError
from turnwire.model.records import Thread
from turnwire.store._base import (
    HOSTED_ITEMS_PATTERN,
    StoreRecords,
    decode_header,
    decode_turn,
    encode_header,
    encode_turn,
    header_without_hosted_items,
    stored,
    unencodable,
    utc,
)
from turnwire.store._kept import Snapshot
from turnwire.store.protocol import NO_TURNS, ThreadSummary
from turnwire.store.turns import Turn, TurnBuilder

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

__all__ = [
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "URL_SCHEMES",
    "PostgresStore",
    "default_folder",
    "is_postgres_url",
    "redacted_url",
]

URL_SCHEMES = ("postgresql://", "postgres://")
"""How a store location names a PostgreSQL database (anything else is a SQLite file)."""


def _drop_header_copies(conn: psycopg.Connection[Any]) -> None:
    """Version 3: headers no longer keep the hosted items their turns hold."""
    rows = conn.execute(
        "SELECT id, header FROM threads WHERE header LIKE %s", (HOSTED_ITEMS_PATTERN,)
    ).fetchall()
    for thread_id, header in rows:
        rewritten = header_without_hosted_items(header)
        if rewritten is not None:
            conn.execute("UPDATE threads SET header = %s WHERE id = %s", (rewritten, thread_id))


# A fresh epoch (see turnwire.store._kept): random and the moment, hashed.
_NEW_EPOCH = "md5(random()::text || clock_timestamp()::text)"

_EPOCH_TRIGGERS = (
    f"ALTER TABLE threads ADD COLUMN epoch TEXT NOT NULL DEFAULT {_NEW_EPOCH}",
    f"""CREATE FUNCTION turnwire_new_epoch() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'TRUNCATE' THEN
            UPDATE threads SET epoch = {_NEW_EPOCH};
            RETURN NULL;
        END IF;
        IF TG_OP = 'INSERT' THEN
            -- an insert anywhere but after the thread's last turn
            IF EXISTS (
                SELECT 1 FROM turns WHERE thread_id = NEW.thread_id AND position > NEW.position
            ) THEN
                UPDATE threads SET epoch = {_NEW_EPOCH} WHERE id = NEW.thread_id;
            END IF;
            RETURN NULL;
        END IF;
        UPDATE threads SET epoch = {_NEW_EPOCH} WHERE id = OLD.thread_id;
        IF TG_OP = 'UPDATE' AND NEW.thread_id IS DISTINCT FROM OLD.thread_id THEN
            UPDATE threads SET epoch = {_NEW_EPOCH} WHERE id = NEW.thread_id;
        END IF;
        RETURN NULL;
    END
    $$""",
    "CREATE TRIGGER turns_epoch AFTER INSERT OR UPDATE OR DELETE ON turns "
    "FOR EACH ROW EXECUTE PROCEDURE turnwire_new_epoch()",
    "CREATE TRIGGER turns_epoch_truncate AFTER TRUNCATE ON turns "
    "FOR EACH STATEMENT EXECUTE PROCEDURE turnwire_new_epoch()",
)


def _add_epochs(conn: psycopg.Connection[Any]) -> None:
    """Version 5: every thread's ``epoch``, made anew by triggers whenever one of its turns
    changes other than by an append (what lets a store reuse the records it read)."""
    for statement in _EPOCH_TRIGGERS:
        conn.execute(statement.encode())


MIGRATIONS: tuple[tuple[int, str | Callable[[psycopg.Connection[Any]], None]], ...] = (
    (
        1,
        """
        CREATE TABLE threads (
            id TEXT PRIMARY KEY,
            title TEXT,
            header TEXT NOT NULL,
            created_at TIMESTAMPTZ NOT NULL,
            updated_at TIMESTAMPTZ NOT NULL
        );
        CREATE TABLE turns (
            thread_id TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
            position INTEGER NOT NULL CHECK (position >= 0),
            id TEXT NOT NULL,
            role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
            created_at TIMESTAMPTZ NOT NULL,
            parts TEXT NOT NULL,
            PRIMARY KEY (thread_id, position)
        );
        CREATE INDEX threads_by_update ON threads (updated_at DESC)
    """,
    ),
    (
        2,
        """
        ALTER TABLE turns ADD COLUMN model TEXT;
        ALTER TABLE turns ADD COLUMN usage TEXT;
        ALTER TABLE turns ADD COLUMN request_fingerprint TEXT;
        CREATE UNIQUE INDEX turns_by_id ON turns (id)
    """,
    ),
    (3, _drop_header_copies),
    (4, "ALTER TABLE turns ADD COLUMN ledger TEXT"),
    (5, _add_epochs),
)
"""The schema, version by version: a script of statements, or a function run on the open
transaction."""
SCHEMA_VERSION = MIGRATIONS[-1][0]

# Any constant will do: it only has to be the same for every turnwire that migrates a database.
_MIGRATION_LOCK = 0x7475726E77697265  # "turnwire"


def is_postgres_url(location: str | os.PathLike[str]) -> bool:
    """Whether ``location`` names a PostgreSQL database rather than a SQLite file."""
    return isinstance(location, str) and location.startswith(URL_SCHEMES)


def redacted_url(url: str) -> str:
    """``url`` without its password (and without any other parameter), for messages."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        parts = conninfo_to_dict(url)
    except Exception:
        return "postgresql://(unreadable URL)"
    user = f"{parts['user']}@" if parts.get("user") else ""
    host = str(parts.get("host") or "")
    if host.startswith("/"):
        host = f"[{host}]"
    port = f":{parts['port']}" if parts.get("port") else ""
    return f"postgresql://{user}{host}{port}/{parts.get('dbname') or ''}"


def default_folder() -> Path:
    """``$XDG_DATA_HOME/turnwire``: where the default SQLite store lives, and so the files."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "turnwire"


def _one_line(err: BaseException) -> str:
    """libpq's message on one line (it spreads a failed connection over several)."""
    return " ".join(str(err).split())


def _psycopg() -> Any:
    try:
        import psycopg
        import psycopg_pool
    except ImportError as err:
        raise StoreError(
            "a postgresql:// store needs the `postgres` extra (psycopg 3 and psycopg-pool): "
            "`uv sync --extra postgres` in a clone, or "
            "`pip install 'dist/turnwire-<version>-py3-none-any.whl[postgres]'`"
        ) from err
    return psycopg, psycopg_pool


class PostgresStore(StoreRecords):
    """A :class:`~turnwire.store.ThreadStore` in a PostgreSQL database.

    :param url: a ``postgresql://`` URL (libpq's rules: ``PGPASSWORD``, ``~/.pgpass`` ... apply).
    :param builder: the turn builder used to import and load threads.
    :param folder: the local folder whose ``files/`` holds imported files (default
        :func:`default_folder`).
    :param pool_size: the most connections this store opens at once.
    :param timeout_s: how long to wait for a connection, and for a locked thread row.
    """

    def __init__(
        self,
        url: str,
        *,
        builder: TurnBuilder | None = None,
        folder: str | os.PathLike[str] | None = None,
        pool_size: int = 4,
        timeout_s: float = 30.0,
    ) -> None:
        super().__init__()
        driver, pool = _psycopg()
        self.url = redacted_url(url)
        self.builder = builder or TurnBuilder()
        self.folder = Path(folder).expanduser() if folder is not None else default_folder()
        self._timeout_s = timeout_s
        options = {"connect_timeout": max(1, int(timeout_s))}
        try:
            with driver.connect(url, autocommit=True, **options) as first:
                self._migrate(first)
        except driver.Error as err:
            raise StoreError(f"cannot open the thread store {self.url}: {_one_line(err)}") from err
        self._pool: ConnectionPool[psycopg.Connection[Any]] = pool.ConnectionPool(
            url,
            min_size=1,
            max_size=max(1, pool_size),
            kwargs=options,
            configure=self._configure,
            timeout=timeout_s,
            open=True,
            name="turnwire-store",
        )

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        # Timestamps come back in UTC whatever the server's default; a locked row is waited
        # for at most timeout_s, then the append fails instead of hanging.
        conn.execute("SET TIME ZONE 'UTC'")
        conn.execute(f"SET lock_timeout = {int(self._timeout_s * 1000)}")
        conn.commit()

    def __repr__(self) -> str:
        return f"PostgresStore({self.url!r})"

    @property
    def path(self) -> Path:
        """The store's local anchor, shaped like :attr:`SQLiteStore.path`: its folder holds
        ``files/`` (so a run's default file roots are found the same way for both stores)."""
        return self.folder / "postgresql"

    def close(self) -> None:
        self._pool.close()
        self._kept.forget()

    # ------------------------------------------------------------------ schema

    @staticmethod
    def _version(conn: psycopg.Connection[Any]) -> int:
        row = conn.execute(
            "SELECT to_regclass('turnwire_schema') IS NOT NULL",
        ).fetchone()
        if not row or not row[0]:
            return 0
        found = conn.execute("SELECT COALESCE(MAX(version), 0) FROM turnwire_schema").fetchone()
        return int(found[0]) if found else 0

    @property
    def schema_version(self) -> int:
        with self._pool.connection() as conn:
            return self._version(conn)

    def _migrate(self, conn: psycopg.Connection[Any]) -> None:
        with conn.transaction():
            # Two processes opening a fresh database at once: one migrates, the other waits
            # and then finds the schema current.
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            current = self._version(conn)
            if current > SCHEMA_VERSION:
                raise StoreError(
                    f"the store {self.url} has schema version {current}, newer than this "
                    f"turnwire's {SCHEMA_VERSION}; upgrade turnwire"
                )
            if current == 0:
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS turnwire_schema (version INTEGER PRIMARY KEY, "
                    "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
                )
            for version, step in MIGRATIONS:
                if version > current:
                    if isinstance(step, str):
                        for statement in filter(str.strip, step.split(";")):
                            conn.execute(statement.encode())
                    else:
                        step(conn)
                    conn.execute("INSERT INTO turnwire_schema (version) VALUES (%s)", (version,))

    @contextmanager
    def _transaction(self) -> Iterator[psycopg.Cursor[Any]]:
        """One transaction on a pooled connection: committed at the end, rolled back on any
        exception (and by the server, should this process die in the middle)."""
        driver, _ = _psycopg()
        try:
            with self._pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
                yield cur
        except driver.errors.LockNotAvailable as err:
            raise StoreError(
                f"a thread row of {self.url} stayed locked for {self._timeout_s:g} s; "
                "another writer holds it: try again"
            ) from err
        except driver.OperationalError as err:
            raise StoreError(f"the thread store {self.url} failed: {_one_line(err)}") from err
        except UnicodeEncodeError as err:  # a lone surrogate: no text a database can hold
            raise StoreError(unencodable(self.url, err)) from err
        except driver.DataError as err:  # a value PostgreSQL cannot hold, such as NUL in text
            raise StoreError(
                f"the thread store {self.url} cannot hold a value of this thread "
                f"({_one_line(err)}); nothing was stored"
            ) from err

    # ------------------------------------------------------------------ threads

    def _new_thread(
        self,
        header: Thread,
        turns: Sequence[Turn],
        thread_id: str | None,
        title: str | None,
        *,
        created_at: datetime | None = None,
        updated_at: datetime | None = None,
    ) -> str:
        driver, _ = _psycopg()
        thread_id = thread_id or f"thr_{uuid.uuid4().hex}"
        now = datetime.now(UTC)
        try:
            with self._transaction() as cur:
                cur.execute(
                    "INSERT INTO threads (id, title, header, created_at, updated_at) "
                    "VALUES (%s, %s, %s, %s, %s)",
                    (
                        thread_id,
                        title,
                        encode_header(header),
                        created_at or now,
                        updated_at or created_at or now,
                    ),
                )
                for position, turn in enumerate(turns):
                    self._insert(cur, thread_id, position, turn)
        except driver.errors.UniqueViolation as err:
            raise StoreError(f"a thread {thread_id!r} (or one of its turns) already exists") from (
                err
            )
        return thread_id

    def summary(self, thread_id: str) -> ThreadSummary:
        """The thread's line of :meth:`list_threads`."""
        for item in self._summaries("WHERE t.id = %s", (thread_id,)):
            return item
        raise UnknownThreadError(thread_id)

    def header(self, thread_id: str) -> Thread:
        with self._pool.connection() as conn:
            row = conn.execute("SELECT header FROM threads WHERE id = %s", (thread_id,)).fetchone()
        if row is None:
            raise UnknownThreadError(thread_id)
        return stored(thread_id, "header", decode_header, row[0])

    def update_header(self, thread_id: str, header: Thread) -> None:
        """Replace the thread's header (prompt, tools, memories...), keeping its turns."""
        with self._transaction() as cur:
            cur.execute(
                "UPDATE threads SET header = %s, updated_at = %s WHERE id = %s",
                (encode_header(header), datetime.now(UTC), thread_id),
            )
            changed = cur.rowcount
        if not changed:
            raise UnknownThreadError(thread_id)

    def last_position(self, thread_id: str) -> int:
        """The position of the thread's last turn (``-1``, :data:`NO_TURNS`, when none)."""
        with self._pool.connection() as conn, conn.cursor() as cur:
            self._require(cur, thread_id)
            return self._last(cur, thread_id)

    @staticmethod
    def _require(cur: psycopg.Cursor[Any], thread_id: str, *, lock: bool = False) -> None:
        query = "SELECT 1 FROM threads WHERE id = %s" + (" FOR UPDATE" if lock else "")
        if cur.execute(query, (thread_id,)).fetchone() is None:
            raise UnknownThreadError(thread_id)

    @staticmethod
    def _last(cur: psycopg.Cursor[Any], thread_id: str) -> int:
        row = cur.execute(
            "SELECT COALESCE(MAX(position), %s) FROM turns WHERE thread_id = %s",
            (NO_TURNS, thread_id),
        ).fetchone()
        return int(row[0]) if row else NO_TURNS

    def append_turns(
        self, thread_id: str, turns: Sequence[Turn], *, expected_last: int | None = None
    ) -> None:
        """Append ``turns`` in one transaction: all of them, or (on any failure) none.

        :param expected_last: the :meth:`last_position` the caller read before it built the
            turns; when the thread has moved on since, :class:`StoreConflictError` and nothing
            is stored. ``None`` appends wherever the thread ends now.
        """
        if not turns:
            return
        with self._transaction() as cur:
            # The row lock orders the writers of this thread (and only of this thread): the
            # last position read below cannot move until this transaction ends.
            self._require(cur, thread_id, lock=True)
            last = self._last(cur, thread_id)
            if expected_last is not None and last != expected_last:
                raise StoreConflictError(thread_id, expected_last=expected_last, actual_last=last)
            for offset, turn in enumerate(turns):
                self._insert(cur, thread_id, last + 1 + offset, turn)
            cur.execute(
                "UPDATE threads SET updated_at = %s WHERE id = %s", (datetime.now(UTC), thread_id)
            )

    def _insert(self, cur: psycopg.Cursor[Any], thread_id: str, position: int, turn: Turn) -> None:
        parts, usage, ledger = encode_turn(turn)
        cur.execute(
            "INSERT INTO turns (thread_id, position, id, role, created_at, parts, model, usage, "
            "request_fingerprint, ledger) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (
                thread_id,
                position,
                turn.id,
                turn.role,
                utc(turn.created_at),
                parts,
                turn.model,
                usage,
                turn.request_fingerprint,
                ledger,
            ),
        )

    def turns(self, thread_id: str) -> list[Turn]:
        # One snapshot: the existence check and the turns agree even while a writer commits.
        with self._pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            self._require(cur, thread_id)
            rows = cur.execute(
                "SELECT id, role, created_at, parts, model, usage, request_fingerprint, ledger "
                "FROM turns WHERE thread_id = %s ORDER BY position",
                (thread_id,),
            ).fetchall()
        return [decode_turn(thread_id, row, utc) for row in rows]

    def _snapshot(self, thread_id: str, after: int) -> Snapshot:
        # One snapshot: the header row and the turns agree even while a writer commits.
        with self._pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            row = cur.execute(
                "SELECT header, epoch FROM threads WHERE id = %s", (thread_id,)
            ).fetchone()
            if row is None:
                raise UnknownThreadError(thread_id)
            rows = cur.execute(
                "SELECT position, id, role, created_at, parts, model, usage, "
                "request_fingerprint, ledger FROM turns "
                "WHERE thread_id = %s AND position > %s ORDER BY position",
                (thread_id, after),
            ).fetchall()
        turns = [decode_turn(thread_id, row[1:], utc) for row in rows]
        return Snapshot(row[0], row[1], turns, rows[-1][0] if rows else after)

    def _header(self, thread_id: str, stored_header: Any) -> Thread:
        return stored(thread_id, "header", decode_header, stored_header)

    def _summaries(self, where: str = "", params: tuple[Any, ...] = ()) -> list[ThreadSummary]:
        with self._pool.connection() as conn:
            rows = conn.execute(
                "SELECT t.id, t.title, t.header, t.created_at, t.updated_at, "
                "(SELECT COUNT(*) FROM turns u WHERE u.thread_id = t.id) "
                f"FROM threads t {where} ORDER BY t.updated_at DESC, t.id",
                params,
            ).fetchall()
        return [
            ThreadSummary(
                id=row[0],
                title=row[1],
                model=stored(row[0], "header", decode_header, row[2]).model,
                turns=int(row[5]),
                created_at=utc(row[3]),
                updated_at=utc(row[4]),
            )
            for row in rows
        ]

    def list_threads(self) -> list[ThreadSummary]:
        return self._summaries()

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread, its turns and the files an import copied for it."""
        with self._transaction() as cur:
            cur.execute("DELETE FROM threads WHERE id = %s", (thread_id,))
            deleted = cur.rowcount
        if not deleted:
            raise UnknownThreadError(thread_id)
        self._remove_files(thread_id)

    @property
    def files_folder(self) -> Path:
        """Where imported files live: ``files/`` in :attr:`folder`."""
        return self.folder.resolve() / "files"
