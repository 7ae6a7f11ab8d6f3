"""Thread stores: where conversations live between turns.

:class:`ThreadStore` is the protocol; :class:`~turnwire.store.sqlite.SQLiteStore` is the
embedded default (one file, WAL, schema migrations, every append in one transaction).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

import msgspec

from turnwire.errors import InputError
from turnwire.model import Thread
from turnwire.turns import Turn, TurnBuilder

__all__ = ["ThreadStore", "ThreadSummary", "UnknownThreadError"]


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


class ThreadStore(Protocol):
    """What turnwire needs from a store."""

    builder: TurnBuilder
    """Builds the turns appended to this store (ids, clock)."""

    def create_thread(
        self, header: Thread, *, thread_id: str | None = None, title: str | None = None
    ) -> str: ...

    def append_turns(self, thread_id: str, turns: Sequence[Turn]) -> None: ...

    def turns(self, thread_id: str) -> list[Turn]: ...

    def header(self, thread_id: str) -> Thread: ...

    def load(self, thread_id: str, *, current: Turn | None = None) -> Thread: ...

    def list_threads(self) -> list[ThreadSummary]: ...

    def delete_thread(self, thread_id: str) -> None: ...

    def import_thread(
        self, thread: Thread, *, thread_id: str | None = None, title: str | None = None
    ) -> str: ...

    def export_thread(self, thread_id: str) -> Thread: ...
