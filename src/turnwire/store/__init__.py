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

from turnwire.errors import StoreConflictError, StoreError, UnknownThreadError
from turnwire.store.copy import copy_threads
from turnwire.store.protocol import NO_TURNS, ThreadStore, ThreadSummary
from turnwire.store.turns import TurnBuilder

__all__ = [
    "NO_TURNS",
    "StoreConflictError",
    "StoreError",
    "ThreadStore",
    "ThreadSummary",
    "UnknownThreadError",
    "copy_threads",
    "open_store",
]


def open_store(
    location: str | os.PathLike[str] | None = None,
    *,
    folder: str | os.PathLike[str] | None = None,
    builder: TurnBuilder | None = None,
) -> ThreadStore:
    """Open the store ``location`` names: a ``postgresql://`` URL, else a SQLite file.

    :param location: a URL or a path; ``None``: ``$TURNWIRE_STORE`` (a URL or a path), else
        ``$XDG_DATA_HOME/turnwire/threads.db``.
    :param folder: for a PostgreSQL store, the local folder whose ``files/`` holds imported
        files (default ``$XDG_DATA_HOME/turnwire``); a SQLite store keeps them beside its file.
    :returns: a :class:`~turnwire.store.sqlite.SQLiteStore` or a
        :class:`~turnwire.store.postgres.PostgresStore`, open (close it, or use ``with``), typed
        as the :class:`ThreadStore` both are.
    :raises turnwire.errors.StoreError: the store cannot be opened, or a URL names
        PostgreSQL and the ``postgres`` extra is not installed.
    """
    from turnwire.store.sqlite import SQLiteStore, default_store_path

    if location is None:
        location = os.environ.get("TURNWIRE_STORE") or default_store_path()
    from turnwire.store.postgres import PostgresStore, is_postgres_url  # psycopg: only if used

    if isinstance(location, str) and is_postgres_url(location):
        return PostgresStore(location, builder=builder, folder=folder)
    return SQLiteStore(location, builder=builder)
