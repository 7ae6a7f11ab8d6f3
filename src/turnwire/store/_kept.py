"""What a store object keeps of the threads it loaded: :class:`KeptThreads`.

A long-lived client loads a stored thread before every run, and the render memo recognises
the records of the last request by identity: a thread decoded anew from its rows is new
objects throughout, which the memo can only compare by content (encoding each record), and
reading and decoding every row is itself several times what encoding the request body costs.
So a store keeps, per thread it loaded, the header and the records its turns gave (and the
raw header they came from), and the next load reads only the header row and the turns after
the last one it kept, handing back the same record objects for the turns before.

That is only right while those turns are exactly as they were read. The database decides,
never a guess: a thread's row carries an ``epoch``, random, which triggers make anew for a new
thread and whenever one of its turns is updated or deleted, is about to be replaced by an
insert or an update (SQLite's ``OR REPLACE`` deletes without firing delete triggers), or a
turn is inserted anywhere but after its last one; so also for a change another program makes
behind the store's back. While the epoch is the one the kept records were read under, the
turns they came from are as they were, and the turns after the last kept position are all
that is new. Any other epoch reads the whole thread again. A store without that bookkeeping
(``version`` ``None``) keeps nothing.

Bounded: at most :data:`KEEP_THREADS` threads, and the threads other than the one loaded last
hold at most :data:`KEEP_RECORDS` records between them (the one loaded last shares its records
with the thread the caller holds). Thread-safe: what is kept is replaced whole, under a lock,
and never changed in place, so a load that read the database while another load replaced the
entry still builds on the entry it started from.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, NamedTuple

from turnwire.model.records import Thread
from turnwire.store.protocol import NO_TURNS
from turnwire.store.turns import Turn, TurnBuilder, TurnRecords

__all__ = ["KEEP_RECORDS", "KEEP_THREADS", "KeptThreads", "Snapshot"]

KEEP_THREADS = 16
"""The most threads a store keeps the records of."""

KEEP_RECORDS = 200_000
"""The most records a store keeps of the threads other than the one it loaded last."""


class Snapshot(NamedTuple):
    """One consistent read of a thread: its header row and the turns after a position.

    :ivar header: the stored header as read (text, or a value a store keeps as is):
        compared with the kept one for equality, decoded only when it differs.
    :ivar version: the ``epoch`` of the thread's row (see the module docstring), or ``None``
        when the store keeps no such bookkeeping (nothing is kept then).
    :ivar turns: the turns after the position asked for, in order.
    :ivar last: the position of the last of ``turns`` (the position asked for when none).
    """

    header: Any
    version: str | None
    turns: list[Turn]
    last: int


class _Kept(NamedTuple):
    builder: TurnBuilder
    epoch: str
    raw_header: Any
    header: Thread
    last: int
    records: TurnRecords


class KeptThreads:
    """The records of the threads a store loaded last; see the module docstring."""

    __slots__ = ("_kept", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: OrderedDict[str, _Kept] = OrderedDict()

    def load(
        self,
        thread_id: str,
        builder: TurnBuilder,
        read: Callable[[int], Snapshot],
        decode_header: Callable[[Any], Thread],
    ) -> tuple[Thread, TurnRecords]:
        """The header and records of ``thread_id``: the kept ones, extended by the turns
        ``read(after)`` gives after the last kept turn, when the database says the kept turns
        are unchanged; else from ``read(NO_TURNS)``, all of its turns."""
        with self._lock:
            kept = self._kept.get(thread_id)
        if kept is not None and kept.builder is not builder:
            kept = None
        snapshot = read(kept.last if kept is not None else NO_TURNS)
        version = snapshot.version
        if kept is not None and version is not None and version == kept.epoch:
            records = builder.extend_records(kept.records, snapshot.turns)
            raw, header = kept.raw_header, kept.header
            if snapshot.header != raw:
                raw, header = snapshot.header, decode_header(snapshot.header)
        else:
            if kept is not None:  # changed behind this store's back: all of it, afresh
                snapshot = read(NO_TURNS)
                version = snapshot.version
            records = builder.extend_records(TurnRecords(), snapshot.turns)
            raw, header = snapshot.header, decode_header(snapshot.header)
        if version is not None:
            self._keep(
                thread_id,
                _Kept(builder, version, raw, header, snapshot.last, records),
            )
        return header, records

    def _keep(self, thread_id: str, entry: _Kept) -> None:
        with self._lock:
            kept = self._kept
            before = kept.get(thread_id)
            # Of two loads at once, the one that read more turns is kept.
            if before is not None and before.epoch == entry.epoch and before.last > entry.last:
                kept.move_to_end(thread_id)
                return
            kept[thread_id] = entry
            kept.move_to_end(thread_id)
            others = sum(len(e.records) for e in kept.values()) - len(entry.records)
            while len(kept) > 1 and (len(kept) > KEEP_THREADS or others > KEEP_RECORDS):
                _, dropped = kept.popitem(last=False)
                others -= len(dropped.records)

    def forget(self, thread_id: str | None = None) -> None:
        """Forget ``thread_id`` (``None``: every thread)."""
        with self._lock:
            if thread_id is None:
                self._kept.clear()
            else:
                self._kept.pop(thread_id, None)

    def __contains__(self, thread_id: Hashable) -> bool:
        with self._lock:
            return thread_id in self._kept

    def __len__(self) -> int:
        with self._lock:
            return len(self._kept)
