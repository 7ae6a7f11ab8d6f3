"""The embedded thread store: one SQLite file.

WAL journal (readers never block the writer), foreign keys on, a busy timeout so several
processes can share one file, the schema version in ``PRAGMA user_version`` with migrations
applied in order when a file is opened. Every append runs in one ``BEGIN IMMEDIATE``
transaction: a process killed halfway leaves the file as it was before the append, and an
append given ``expected_last`` checks the thread's last position inside that same transaction
(the write lock is taken first), so of two runs that read the same thread only one appends.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

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
    iso,
    stored,
    unencodable,
)
from turnwire.store._kept import Snapshot
from turnwire.store.protocol import NO_TURNS, ThreadSummary
from turnwire.store.turns import Turn, TurnBuilder

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "SQLiteStore", "default_store_path"]


def _drop_header_copies(db: sqlite3.Connection) -> None:
    """Version 3: headers no longer keep the hosted items their turns hold."""
    rows = db.execute(
        "SELECT id, header FROM threads WHERE header LIKE ?", (HOSTED_ITEMS_PATTERN,)
    ).fetchall()
    for thread_id, header in rows:
        rewritten = header_without_hosted_items(header)
        if rewritten is not None:
            db.execute("UPDATE threads SET header = ? WHERE id = ?", (rewritten, thread_id))


# A fresh epoch (see turnwire.store._kept): 128 random bits, as text.
_NEW_EPOCH = "lower(hex(randomblob(16)))"

_EPOCH_TRIGGERS = (
    "ALTER TABLE threads ADD COLUMN epoch TEXT",
    f"UPDATE threads SET epoch = {_NEW_EPOCH}",
    f"""CREATE TRIGGER threads_epoch AFTER INSERT ON threads BEGIN
        UPDATE threads SET epoch = {_NEW_EPOCH} WHERE id = NEW.id;
    END""",
    # Before the insert: the turn it would replace (OR REPLACE deletes without firing delete
    # triggers) and a turn it would put before the thread's last one are still there to see.
    f"""CREATE TRIGGER turns_epoch_insert BEFORE INSERT ON turns BEGIN
        UPDATE threads SET epoch = {_NEW_EPOCH} WHERE id IN (
            SELECT thread_id FROM turns WHERE id = NEW.id
            UNION SELECT NEW.thread_id WHERE EXISTS (
                SELECT 1 FROM turns WHERE thread_id = NEW.thread_id AND position >= NEW.position
            )
        );
    END""",
    f"""CREATE TRIGGER turns_epoch_update BEFORE UPDATE ON turns BEGIN
        UPDATE threads SET epoch = {_NEW_EPOCH} WHERE id IN (
            SELECT OLD.thread_id UNION SELECT NEW.thread_id
            UNION SELECT thread_id FROM turns WHERE id = NEW.id
        );
    END""",
    f"""CREATE TRIGGER turns_epoch_delete AFTER DELETE ON turns BEGIN
        UPDATE threads SET epoch = {_NEW_EPOCH} WHERE id = OLD.thread_id;
    END""",
)


def _add_epochs(db: sqlite3.Connection) -> None:
    """Version 5: every thread's ``epoch``, made anew by triggers whenever one of its turns
    changes other than by an append (what lets a store reuse the records it read)."""
    for statement in _EPOCH_TRIGGERS:
        db.execute(statement)


MIGRATIONS: tuple[tuple[int, str | Callable[[sqlite3.Connection], None]], ...] = (
    (
        1,
        """
        CREATE TABLE threads (
            id TEXT PRIMARY KEY,
            title TEXT,
            header TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );
        CREATE TABLE turns (
            thread_id TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            id TEXT NOT NULL,
            role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
            created_at TEXT NOT NULL,
            parts TEXT NOT NULL,
            PRIMARY KEY (thread_id, position)
        );
    """,
    ),
    (
        2,
        """
        ALTER TABLE turns ADD COLUMN model TEXT;
        ALTER TABLE turns ADD COLUMN usage TEXT;
        ALTER TABLE turns ADD COLUMN request_fingerprint TEXT;
        CREATE UNIQUE INDEX turns_by_id ON turns(id);
    """,
    ),
    (3, _drop_header_copies),
    (4, "ALTER TABLE turns ADD COLUMN ledger TEXT"),
    (5, _add_epochs),
)
"""The schema, version by version: a script of statements, or a function run on the open
transaction."""
SCHEMA_VERSION = MIGRATIONS[-1][0]


def default_store_path() -> Path:
    """``$TURNWIRE_STORE``, else ``$XDG_DATA_HOME/turnwire/threads.db``."""
    explicit = os.environ.get("TURNWIRE_STORE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "turnwire" / "threads.db"


class SQLiteStore(StoreRecords):
    """A :class:`~turnwire.store.ThreadStore` in one SQLite file.

    :param path: the database file (created with its folder when missing).
    :param builder: the turn builder used to import and load threads.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        builder: TurnBuilder | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        super().__init__()
        self.path = Path(path)
        self.builder = builder or TurnBuilder()
        # One connection, shared by the threads that call this store (the async API runs its
        # calls in worker threads): one call at a time, a transaction never interleaved.
        self._lock = threading.RLock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(
                self.path, timeout=timeout_s, isolation_level=None, check_same_thread=False
            )
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._db.execute(f"PRAGMA busy_timeout={int(timeout_s * 1000)}")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._migrate()
        except sqlite3.DatabaseError as err:
            raise StoreError(f"cannot open the thread store {self.path}: {err}") from err

    def __repr__(self) -> str:
        return f"SQLiteStore({str(self.path)!r})"

    def close(self) -> None:
        with self._lock:
            self._db.close()
        self._kept.forget()

    # ------------------------------------------------------------------ schema

    @property
    def schema_version(self) -> int:
        return int(self._rows("PRAGMA user_version")[0][0])

    def _migrate(self) -> None:
        with self._transaction():
            current = self.schema_version
            if current > SCHEMA_VERSION:
                raise StoreError(
                    f"the store {self.path} has schema version {current}, newer "
                    f"than this turnwire's {SCHEMA_VERSION}; upgrade turnwire"
                )
            for version, step in MIGRATIONS:
                if version > current:
                    if isinstance(step, str):
                        for statement in filter(str.strip, step.split(";")):
                            self._db.execute(statement)
                    else:
                        step(self._db)
                    self._db.execute(f"PRAGMA user_version={version}")

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except UnicodeEncodeError as err:  # a lone surrogate: no text a database can hold
                self._db.execute("ROLLBACK")
                raise StoreError(unencodable(self.path, err)) from err
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _rows(self, sql: str, parameters: tuple[Any, ...] = ()) -> list[Any]:
        """The rows of one read, the connection held for it alone."""
        with self._lock:
            return self._db.execute(sql, parameters).fetchall()

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
        thread_id = thread_id or f"thr_{uuid.uuid4().hex}"
        now = datetime.now(UTC)
        try:
            with self._transaction() as db:
                db.execute(
                    "INSERT INTO threads (id, title, header, created_at, updated_at) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (
                        thread_id,
                        title,
                        encode_header(header),
                        iso(created_at or now),
                        iso(updated_at or created_at or now),
                    ),
                )
                for position, turn in enumerate(turns):
                    self._insert(db, thread_id, position, turn)
        except sqlite3.IntegrityError as err:
            raise StoreError(f"a thread {thread_id!r} (or one of its turns) already exists") from (
                err
            )
        return thread_id

    def _require(self, thread_id: str) -> None:
        if not self._rows("SELECT 1 FROM threads WHERE id = ?", (thread_id,)):
            raise UnknownThreadError(thread_id)

    def header(self, thread_id: str) -> Thread:
        rows = self._rows("SELECT header FROM threads WHERE id = ?", (thread_id,))
        if not rows:
            raise UnknownThreadError(thread_id)
        return stored(thread_id, "header", decode_header, rows[0][0])

    def update_header(self, thread_id: str, header: Thread) -> None:
        """Replace the thread's header (prompt, tools, memories...), keeping its turns."""
        with self._transaction() as db:
            changed = db.execute(
                "UPDATE threads SET header = ?, updated_at = ? WHERE id = ?",
                (encode_header(header), iso(datetime.now(UTC)), thread_id),
            ).rowcount
        if not changed:
            raise UnknownThreadError(thread_id)

    def last_position(self, thread_id: str) -> int:
        """The position of the thread's last turn (``-1``, :data:`NO_TURNS`, when none)."""
        with self._lock:
            self._require(thread_id)
            return self._last(self._db, thread_id)

    @staticmethod
    def _last(db: sqlite3.Connection, thread_id: str) -> int:
        row = db.execute(
            "SELECT COALESCE(MAX(position), ?) FROM turns WHERE thread_id = ?",
            (NO_TURNS, thread_id),
        ).fetchone()
        return int(row[0])

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
        with self._transaction() as db:
            self._require(thread_id)
            last = self._last(db, thread_id)
            if expected_last is not None and last != expected_last:
                raise StoreConflictError(thread_id, expected_last=expected_last, actual_last=last)
            for offset, turn in enumerate(turns):
                self._insert(db, thread_id, last + 1 + offset, turn)
            db.execute(
                "UPDATE threads SET updated_at = ? WHERE id = ?",
                (iso(datetime.now(UTC)), thread_id),
            )

    def _insert(self, db: sqlite3.Connection, thread_id: str, position: int, turn: Turn) -> None:
        parts, usage, ledger = encode_turn(turn)
        db.execute(
            "INSERT INTO turns (thread_id, position, id, role, created_at, parts, model, usage, "
            "request_fingerprint, ledger) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                thread_id,
                position,
                turn.id,
                turn.role,
                iso(turn.created_at),
                parts,
                turn.model,
                usage,
                turn.request_fingerprint,
                ledger,
            ),
        )

    def turns(self, thread_id: str) -> list[Turn]:
        with self._lock:
            self._require(thread_id)
            rows = self._rows(
                "SELECT id, role, created_at, parts, model, usage, request_fingerprint, ledger "
                "FROM turns "
                "WHERE thread_id = ? ORDER BY position",
                (thread_id,),
            )
        return [decode_turn(thread_id, row, datetime.fromisoformat) for row in rows]

    def _snapshot(self, thread_id: str, after: int) -> Snapshot:
        with self._lock:
            self._db.execute("BEGIN")  # one read: the header row and the turns agree
            try:
                row = self._db.execute(
                    "SELECT header, epoch FROM threads WHERE id = ?", (thread_id,)
                ).fetchone()
                if row is None:
                    raise UnknownThreadError(thread_id)
                rows = self._db.execute(
                    "SELECT position, id, role, created_at, parts, model, usage, "
                    "request_fingerprint, ledger FROM turns "
                    "WHERE thread_id = ? AND position > ? ORDER BY position",
                    (thread_id, after),
                ).fetchall()
            finally:
                self._db.execute("COMMIT")
        turns = [decode_turn(thread_id, row[1:], datetime.fromisoformat) for row in rows]
        return Snapshot(row[0], row[1], turns, rows[-1][0] if rows else after)

    def _header(self, thread_id: str, stored_header: Any) -> Thread:
        return stored(thread_id, "header", decode_header, stored_header)

    def list_threads(self) -> list[ThreadSummary]:
        rows = self._rows(
            "SELECT t.id, t.title, t.header, t.created_at, t.updated_at, COUNT(u.id) "
            "FROM threads t LEFT JOIN turns u ON u.thread_id = t.id "
            "GROUP BY t.id ORDER BY t.updated_at DESC"
        )
        return [
            ThreadSummary(
                id=row[0],
                title=row[1],
                model=stored(row[0], "header", decode_header, row[2]).model,
                turns=row[5],
                created_at=stored(row[0], "created_at", datetime.fromisoformat, row[3]),
                updated_at=stored(row[0], "updated_at", datetime.fromisoformat, row[4]),
            )
            for row in rows
        ]

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread, its turns and the files an import copied for it."""
        with self._transaction() as db:
            if not db.execute("DELETE FROM threads WHERE id = ?", (thread_id,)).rowcount:
                raise UnknownThreadError(thread_id)
        self._remove_files(thread_id)

    @property
    def files_folder(self) -> Path:
        """Where imported files live: ``files/`` beside the database."""
        return self.path.resolve().parent / "files"
