"""A thread store in memory: the contract suite's third backend.

It keeps what a database keeps (a header without records, the turns in order, the timestamps,
every turn id once) in plain Python values, under a lock, and writes all or nothing: each write
checks everything first, then changes the data in one step. Several handles can share one
:class:`MemoryData`, as several connections share one database.
"""

from __future__ import annotations

import itertools
import os
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import msgspec

from turnwire.errors import StoreConflictError, StoreError, UnknownThreadError
from turnwire.model.checks import check_thread
from turnwire.model.records import Thread
from turnwire.store._base import StoreRecords, utc
from turnwire.store.protocol import NO_TURNS, ThreadSummary
from turnwire.store.turns import Turn, TurnBuilder

SCHEMA_VERSION = 1


class _Row(msgspec.Struct, frozen=True, kw_only=True):
    title: str | None
    header: Thread
    turns: tuple[Turn, ...]
    created_at: datetime
    updated_at: datetime
    changed: int  # orders threads changed within one clock tick


def _last(row: _Row) -> int:
    return len(row.turns) - 1 if row.turns else NO_TURNS


class MemoryData:
    """The threads of one memory store."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.threads: dict[str, _Row] = {}
        self.turn_ids: set[str] = set()
        self.changes = itertools.count()


class MemoryStore(StoreRecords):
    """A :class:`~turnwire.store.ThreadStore` in memory.

    :param folder: holds ``files/``, where imported files live.
    :param data: the threads, shared with other handles (default: a store of its own).
    """

    def __init__(
        self,
        folder: str | os.PathLike[str],
        *,
        data: MemoryData | None = None,
        builder: TurnBuilder | None = None,
    ) -> None:
        super().__init__()
        self.folder = Path(folder)
        self.builder = builder or TurnBuilder()
        self._data: MemoryData | None = data or MemoryData()

    def __repr__(self) -> str:
        return f"MemoryStore({str(self.folder)!r})"

    @property
    def path(self) -> Path:
        return self.folder / "memory"

    @property
    def files_folder(self) -> Path:
        return self.folder.resolve() / "files"

    @property
    def schema_version(self) -> int:
        self._open()
        return SCHEMA_VERSION

    def close(self) -> None:
        self._data = None

    def _open(self) -> MemoryData:
        if self._data is None:
            raise StoreError(f"the store {self!r} is closed")
        return self._data

    @contextmanager
    def _locked(self) -> Iterator[MemoryData]:
        data = self._open()
        with data.lock:
            yield data

    @staticmethod
    def _row(data: MemoryData, thread_id: str) -> _Row:
        row = data.threads.get(thread_id)
        if row is None:
            raise UnknownThreadError(thread_id)
        return row

    @staticmethod
    def _stored_turns(data: MemoryData, turns: Sequence[Turn]) -> tuple[Turn, ...]:
        """``turns`` as the store keeps them (timestamps in UTC), after checking that their ids
        are new: a taken id is a :class:`StoreError`, as a database's unique index."""
        ids = [turn.id for turn in turns]
        if len(set(ids)) != len(ids) or not data.turn_ids.isdisjoint(ids):
            raise StoreError("a turn of that id already exists")
        return tuple(msgspec.structs.replace(t, created_at=utc(t.created_at)) for t in turns)

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
        check_thread(header.header_only())  # as the databases' encode_header checks it
        thread_id = thread_id or f"thr_{uuid.uuid4().hex}"
        now = datetime.now(UTC)
        with self._locked() as data:
            if thread_id in data.threads:
                raise StoreError(f"a thread {thread_id!r} (or one of its turns) already exists")
            kept = self._stored_turns(data, turns)
            data.threads[thread_id] = _Row(
                title=title,
                header=header.header_only(),
                turns=kept,
                created_at=utc(created_at or now),
                updated_at=utc(updated_at or created_at or now),
                changed=next(data.changes),
            )
            data.turn_ids.update(turn.id for turn in kept)
        return thread_id

    def header(self, thread_id: str) -> Thread:
        with self._locked() as data:
            return self._row(data, thread_id).header

    def update_header(self, thread_id: str, header: Thread) -> None:
        check_thread(header.header_only())
        with self._locked() as data:
            row = self._row(data, thread_id)
            data.threads[thread_id] = msgspec.structs.replace(
                row,
                header=header.header_only(),
                updated_at=datetime.now(UTC),
                changed=next(data.changes),
            )

    def last_position(self, thread_id: str) -> int:
        with self._locked() as data:
            return _last(self._row(data, thread_id))

    def append_turns(
        self, thread_id: str, turns: Sequence[Turn], *, expected_last: int | None = None
    ) -> None:
        if not turns:
            return
        with self._locked() as data:
            row = self._row(data, thread_id)
            last = _last(row)
            if expected_last is not None and last != expected_last:
                raise StoreConflictError(thread_id, expected_last=expected_last, actual_last=last)
            kept = self._stored_turns(data, turns)
            data.threads[thread_id] = msgspec.structs.replace(
                row,
                turns=row.turns + kept,
                updated_at=datetime.now(UTC),
                changed=next(data.changes),
            )
            data.turn_ids.update(turn.id for turn in kept)

    def turns(self, thread_id: str) -> list[Turn]:
        with self._locked() as data:
            return list(self._row(data, thread_id).turns)

    def list_threads(self) -> list[ThreadSummary]:
        with self._locked() as data:
            rows = sorted(
                data.threads.items(),
                key=lambda item: (item[1].updated_at, item[1].changed),
                reverse=True,
            )
        return [
            ThreadSummary(
                id=thread_id,
                title=row.title,
                model=row.header.model,
                turns=len(row.turns),
                created_at=row.created_at,
                updated_at=row.updated_at,
            )
            for thread_id, row in rows
        ]

    def delete_thread(self, thread_id: str) -> None:
        with self._locked() as data:
            row = self._row(data, thread_id)
            del data.threads[thread_id]
            data.turn_ids.difference_update(turn.id for turn in row.turns)
        self._remove_files(thread_id)
