"""The store contract: what turnwire needs from a thread store."""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

import msgspec

from turnwire.model.records import Thread
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
