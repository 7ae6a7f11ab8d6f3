"""The store contract: what turnwire needs from a thread store.

Everything the command line, :func:`turnwire.api.run_thread`, :func:`turnwire.api.compact_thread`
and :func:`turnwire.store.copy_threads` use of a store is here, and nothing else: a store that
implements :class:`ThreadStore` works with all of them. The SQLite and PostgreSQL stores, and
the in-memory store of the tests, run one contract suite (``tests/store/test_contract.py``).

A thread is a header (the thread without its records: :meth:`Thread.header_only`) and a list
of turns, numbered from 0 in the order they were appended; the records live in the turns only,
each once.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Protocol, Self

import msgspec

from turnwire.files.pointers import ContextAssembler
from turnwire.model.records import Thread
from turnwire.rendering.ledger import Ledger
from turnwire.store.turns import Turn, TurnBuilder

__all__ = ["NO_TURNS", "ThreadStore", "ThreadSummary"]

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


class ThreadStore(Protocol):
    """What turnwire needs from a store.

    Every method that names a thread raises :class:`~turnwire.errors.UnknownThreadError` when
    the store has no such thread, and every failure of the store itself is a
    :class:`~turnwire.errors.StoreError`. A write is all or nothing.
    """

    builder: TurnBuilder
    """Builds the turns appended to this store (ids, clock), and converts turns to records."""

    @property
    def path(self) -> Path:
        """Where the store is on this machine, for messages: a SQLite store's file; for a store
        kept elsewhere, a name in the folder that holds :attr:`files_folder`."""
        ...

    @property
    def files_folder(self) -> Path:
        """The folder that holds the files imports copied into the store (the default file
        root of a stored thread's runs)."""
        ...

    @property
    def schema_version(self) -> int:
        """The version of the store's schema, after the migrations opening it applied."""
        ...

    def close(self) -> None:
        """Release the store's connections; the store is unusable afterwards."""
        ...

    def __enter__(self) -> Self:
        """The store itself, closed when the ``with`` block ends."""
        ...

    def __exit__(self, *exc: object) -> None:
        """Close the store (:meth:`close`)."""
        ...

    def create_thread(
        self, header: Thread, *, thread_id: str | None = None, title: str | None = None
    ) -> str:
        """Create an empty thread from ``header`` (its records are ignored).

        :param thread_id: the new thread's id (default: a fresh ``thr_...``).
        :returns: the thread's id.
        :raises turnwire.errors.StoreError: the store already has a thread of that id.
        :raises turnwire.errors.ThreadFileError: the header breaks a rule a thread file is held
            to (:func:`turnwire.model.checks.check_thread`); nothing is stored.
        """
        ...

    def restore_thread(
        self,
        thread_id: str,
        *,
        header: Thread,
        turns: Sequence[Turn],
        title: str | None,
        created_at: datetime,
        updated_at: datetime,
    ) -> None:
        """Store a thread exactly as another store held it (id, title, timestamps, the turns
        with their ids), in one transaction: what :func:`~turnwire.store.copy_threads`
        writes.

        :raises turnwire.errors.StoreError: the thread, or one of its turns, already exists;
            nothing is stored.
        """
        ...

    def header(self, thread_id: str) -> Thread:
        """The thread's header: the thread without its records."""
        ...

    def update_header(self, thread_id: str, header: Thread) -> None:
        """Replace the thread's header (prompt, tools, memories...), keeping its turns; the
        records of ``header`` are ignored.

        :raises turnwire.errors.ThreadFileError: the header breaks a rule a thread file is held
            to; nothing is changed.
        """
        ...

    def last_position(self, thread_id: str) -> int:
        """The position of the thread's last turn (:data:`NO_TURNS` when it has none)."""
        ...

    def append_turns(
        self, thread_id: str, turns: Sequence[Turn], *, expected_last: int | None = None
    ) -> None:
        """Append ``turns`` atomically. With ``expected_last`` (a :meth:`last_position` read
        earlier), only if the thread's last turn is still that one, else
        :class:`~turnwire.errors.StoreConflictError` and nothing stored; ``None`` appends
        unconditionally. No turns: nothing happens."""
        ...

    def turns(self, thread_id: str) -> list[Turn]:
        """The thread's turns, in the order they were appended."""
        ...

    def load(self, thread_id: str, *, current: Turn | None = None) -> Thread:
        """The thread as the renderer reads it: the header with the records of its turns, every
        question with its files (as pointers).

        :param current: the question of the run about to start (not stored yet), loaded as
            its last turn.
        """
        ...

    def load_with_ledger(
        self, thread_id: str, *, current: Turn | None = None
    ) -> tuple[Thread, Ledger | None]:
        """:meth:`load` and the ledger of the last request a run of the thread recorded (the
        last turn that holds one; ``None``: none), from one read: what a run of a stored
        thread starts from (:meth:`Client.run_thread
        <turnwire.client.dispatch.Client.run_thread>`). A long-lived store may hand back the
        same record objects for turns it read before and that are unchanged since, which
        lets a warm renderer recognise them by identity.
        """
        ...

    def list_threads(self) -> list[ThreadSummary]:
        """Every thread, the most recently changed first."""
        ...

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread, its turns and the files imports copied for it."""
        ...

    def import_thread(
        self,
        thread: Thread,
        *,
        thread_id: str | None = None,
        title: str | None = None,
        files: ContextAssembler | None = None,
    ) -> str:
        """Store a whole thread (header and records) as a new thread, in one transaction.

        :param files: when given, every file the thread points at is read through it and
            copied into :attr:`files_folder`, the stored pointers leading to the copies.
        :returns: the thread's id.
        :raises turnwire.errors.ThreadFileError: the thread breaks a rule a thread file is held
            to (:func:`turnwire.model.checks.check_thread`); nothing is stored.
        """
        ...

    def export_thread(self, thread_id: str) -> Thread:
        """The thread with every record and file pointer, as a thread file holds it."""
        ...

    def export_file(self, thread_id: str, path: str | os.PathLike[str]) -> Thread:
        """Write the thread to the thread file ``path``, the files it keeps in the store
        copied beside it into ``FILE.files/``.

        :returns: the thread as written.
        """
        ...
