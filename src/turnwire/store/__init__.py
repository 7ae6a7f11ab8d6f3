"""Thread stores: where conversations live between turns.

:class:`ThreadStore` is the protocol; :class:`~turnwire.store.sqlite.SQLiteStore` is the
embedded default (one file, WAL, schema migrations, every append in one transaction).

One writer per thread: a run reads :meth:`ThreadStore.last_position` before it loads the thread
and passes it back as ``append_turns(..., expected_last=...)``; when another writer appended in
the meantime the append stores nothing and raises :class:`StoreConflictError`, and the caller
can load the thread again and re-run.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

import msgspec

from turnwire.errors import InputError, TurnwireError
from turnwire.model import Thread
from turnwire.turns import Turn, TurnBuilder

__all__ = ["NO_TURNS", "StoreConflictError", "ThreadStore", "ThreadSummary", "UnknownThreadError"]

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
