"""Thread stores: where conversations live between turns.

:class:`ThreadStore` is the protocol; :class:`~turnwire.store.sqlite.SQLiteStore` is the
embedded default (one file, WAL, schema migrations, every append in one transaction) and
:class:`~turnwire.store.postgres.PostgresStore` the same guarantees in a PostgreSQL database
(the ``postgres`` extra). :func:`open_store` picks one by its location: a ``postgresql://``
(or ``postgres://``) URL is a PostgreSQL database, anything else a SQLite file.

One writer per thread: a run reads :meth:`ThreadStore.last_position` before it loads the thread
and passes it back as ``append_turns(..., expected_last=...)``; when another writer appended in
the meantime the append stores nothing and raises :class:`StoreConflictError`, and the caller
can load the thread again and re-run.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import msgspec

from turnwire.errors import InputError, TurnwireError
from turnwire.model import Thread
from turnwire.turns import Turn, TurnBuilder

__all__ = [
    "NO_TURNS",
    "StoreConflictError",
    "ThreadStore",
    "ThreadSummary",
    "UnknownThreadError",
    "copy_threads",
    "open_store",
]

NO_TURNS = -1
"""What :meth:`ThreadStore.last_position` returns for a thread without turns."""


class ThreadSummary(msgspec.Struct, frozen=True, kw_only=True):
    """One line of ``turnwire threads list``."""

    id: str
    title: str | None
    model: str | None
    turns: int
    created_at: datetime
    updated_at: datetime


class UnknownThreadError(InputError):
    """No thread has this id in the store."""

    code = "E_THREAD_NOT_FOUND"
    status = 404

    def __init__(self, thread_id: str) -> None:
        super().__init__(f"no thread {thread_id!r} in the store (see `turnwire threads list`)")
        self.thread_id = thread_id


class StoreConflictError(TurnwireError):
    """The thread changed between the read a run started from and its append; nothing was stored.

    Not fatal: load the thread again and re-run the turn.
    """

    code = "E_STORE_CONFLICT"
    status = 409
    fatal = False

    def __init__(self, thread_id: str, *, expected_last: int, actual_last: int) -> None:
        super().__init__(
            f"thread {thread_id!r} changed while this run was in flight (its last turn was "
            f"{expected_last} when the run read it, {actual_last} now); nothing was stored: "
            "load the thread again and re-run"
        )
        self.thread_id = thread_id
        self.expected_last = expected_last
        self.actual_last = actual_last


class ThreadStore(Protocol):
    """What turnwire needs from a store."""

    builder: TurnBuilder
    """Builds the turns appended to this store (ids, clock)."""

    def create_thread(
        self, header: Thread, *, thread_id: str | None = None, title: str | None = None
    ) -> str: ...

    def last_position(self, thread_id: str) -> int:
        """The position of the thread's last turn (:data:`NO_TURNS` when it has none)."""
        ...

    def append_turns(
        self, thread_id: str, turns: Sequence[Turn], *, expected_last: int | None = None
    ) -> None:
        """Append ``turns`` atomically. With ``expected_last`` (a :meth:`last_position` read
        earlier), only if the thread's last turn is still that one, else
        :class:`StoreConflictError` and nothing stored; ``None`` appends unconditionally."""
        ...

    def turns(self, thread_id: str) -> list[Turn]: ...

    def header(self, thread_id: str) -> Thread: ...

    def load(self, thread_id: str, *, current: Turn | None = None) -> Thread: ...

    def list_threads(self) -> list[ThreadSummary]: ...

    def delete_thread(self, thread_id: str) -> None: ...

    def import_thread(
        self, thread: Thread, *, thread_id: str | None = None, title: str | None = None
    ) -> str: ...

    def export_thread(self, thread_id: str) -> Thread: ...

    def export_file(self, thread_id: str, path: str | os.PathLike[str]) -> Thread: ...


def open_store(
    location: str | os.PathLike[str] | None = None,
    *,
    folder: str | os.PathLike[str] | None = None,
    builder: TurnBuilder | None = None,
) -> Any:
    """Open the store ``location`` names: a ``postgresql://`` URL, else a SQLite file.

    :param location: a URL or a path; ``None``: ``$TURNWIRE_STORE`` (a URL or a path), else
        ``$XDG_DATA_HOME/turnwire/threads.db``.
    :param folder: for a PostgreSQL store, the local folder whose ``files/`` holds imported
        files (default ``$XDG_DATA_HOME/turnwire``); a SQLite store keeps them beside its file.
    :returns: a :class:`~turnwire.store.sqlite.SQLiteStore` or a
        :class:`~turnwire.store.postgres.PostgresStore`, open (close it, or use ``with``).
    :raises turnwire.store.sqlite.StoreError: the store cannot be opened, or a URL names
        PostgreSQL and the ``postgres`` extra is not installed.
    """
    from turnwire.store.sqlite import SQLiteStore, default_store_path

    if location is None:
        location = os.environ.get("TURNWIRE_STORE") or default_store_path()
    from turnwire.store.postgres import PostgresStore, is_postgres_url  # psycopg: only if used

    if isinstance(location, str) and is_postgres_url(location):
        return PostgresStore(location, builder=builder, folder=folder)
    return SQLiteStore(location, builder=builder)


def copy_threads(
    source: ThreadStore, target: ThreadStore, thread_ids: Iterable[str] = ()
) -> list[str]:
    """Copy threads from ``source`` to ``target`` as they are: the same ids, titles, headers,
    timestamps and turns (ids, models, usage, fingerprints), each in one transaction; the files
    an import copied into ``source``'s files folder are copied into ``target``'s and the
    pointers follow. A thread ``target`` already has is refused before anything is written.

    :param thread_ids: the threads to copy (empty: every thread of ``source``).
    :returns: the ids copied, in order.
    :raises UnknownThreadError: ``source`` has no such thread.
    :raises turnwire.store.sqlite.StoreError: ``target`` already has one of them.
    """
    from turnwire.store.sqlite import StoreError

    summaries = {item.id: item for item in source.list_threads()}
    wanted = list(dict.fromkeys(thread_ids)) or list(reversed(summaries))
    for thread_id in wanted:
        if thread_id not in summaries:
            raise UnknownThreadError(thread_id)
    present = {item.id for item in target.list_threads()}
    clashes = [thread_id for thread_id in wanted if thread_id in present]
    if clashes:
        raise StoreError(
            f"the target store already has thread {clashes[0]!r}: delete it there first, or "
            "copy the other threads by id"
        )
    for thread_id in wanted:
        summary = summaries[thread_id]
        header, turns = source.header(thread_id), source.turns(thread_id)
        folders = _copy_thread_files(source, target, thread_id)
        try:
            header, turns = _moved_pointers((header, turns), folders)
            _restore(target, summary, header, turns)
        except BaseException:
            for copied in folders.values():
                shutil.rmtree(copied, ignore_errors=True)
            raise
    return wanted


def _copy_thread_files(source: Any, target: Any, thread_id: str) -> dict[str, str]:
    """The thread's import folders copied into ``target``'s files folder: old → new path."""
    from turnwire.store._shared import folder_key as _folder_key

    moved: dict[str, str] = {}
    origin: Path | None = getattr(source, "files_folder", None)
    into: Path | None = getattr(target, "files_folder", None)
    if origin is None or into is None or origin == into:
        return moved
    for folder in sorted(origin.glob(f"{_folder_key(thread_id)}.*")):
        destination = into / f"{_folder_key(thread_id)}.{uuid.uuid4().hex[:8]}"
        shutil.copytree(folder, destination)
        moved[str(folder)] = str(destination)
    return moved


def _moved_pointers(value: Any, folders: dict[str, str]) -> Any:
    """``value`` with every file pointer inside a moved folder leading to its copy."""
    if not folders:
        return value
    replace = msgspec.structs.replace

    def move(path: str) -> str:
        for old, new in folders.items():
            if path.startswith(old + os.sep):
                return new + path[len(old) :]
        return path

    def walk(item: Any) -> Any:
        if isinstance(item, tuple | list):
            return type(item)(walk(x) for x in item)
        if isinstance(item, msgspec.Struct):
            changes = {}
            for name in item.__struct_fields__:
                field = getattr(item, name)
                if name == "path" and isinstance(field, str):
                    changes[name] = move(field)
                elif isinstance(field, msgspec.Struct | tuple | list):
                    changes[name] = walk(field)
            return replace(item, **changes) if changes else item
        return item

    return walk(value)


def _restore(target: Any, summary: ThreadSummary, header: Thread, turns: Sequence[Turn]) -> None:
    restore = getattr(target, "restore_thread", None)
    if restore is not None:
        restore(
            summary.id,
            header=header,
            turns=turns,
            title=summary.title,
            created_at=summary.created_at,
            updated_at=summary.updated_at,
        )
        return
    from turnwire.store.sqlite import SQLiteStore, StoreError, _iso

    if not isinstance(target, SQLiteStore):
        raise StoreError(f"{target!r} cannot receive copied threads (no restore_thread)")
    import sqlite3

    # SQLiteStore has no restore of its own: the same rows its create and append write, with
    # the source's timestamps, in one of its transactions.
    empty = msgspec.structs.replace(header, messages=(), thoughts=(), tool_calls=())
    try:
        with target._transaction() as db:
            db.execute(
                "INSERT INTO threads (id, title, header, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (
                    summary.id,
                    summary.title,
                    msgspec.json.encode(empty).decode(),
                    _iso(summary.created_at),
                    _iso(summary.updated_at),
                ),
            )
            for position, turn in enumerate(turns):
                target._insert(db, summary.id, position, turn)
    except sqlite3.IntegrityError as err:
        raise StoreError(f"a thread {summary.id!r} (or one of its turns) already exists") from err
