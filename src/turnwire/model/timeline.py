"""The timeline: a thread's records in the one order every render, window and cut uses.

Records sort by ``(created_at, seq)``; ties go messages, thoughts, tool calls, hosted items,
then the order they are stored in.

Under ``render.context_placement: timeline`` the memories and retrieved documents take places
in the same order (:func:`context_order_key`): a dated one after every record of its instant
(the records of one response share their instant, so a reasoning item is never parted from the
item it produced), an undated one at the head, before every record; on a tie memories go
before documents, each in the order they are stored in.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

import msgspec

from turnwire.model.records import (
    HostedItem,
    Memory,
    Message,
    Retrievable,
    Thought,
    Thread,
    ToolCall,
    latest,
    not_before,
)

__all__ = [
    "CONTEXT_RANKS",
    "ContextItem",
    "Record",
    "context_order_key",
    "latest",
    "not_before",
    "only_records",
    "order_key",
    "timeline",
]

Record = Message | Thought | ToolCall | HostedItem

ContextItem = Memory | Retrievable
"""What ``render.context_placement: timeline`` places among the records."""

CONTEXT_RANKS = (4, 5)
"""The ranks of memories and of retrieved documents, after the records' four."""

_UNDATED = datetime.min.replace(tzinfo=UTC)


def order_key(record: Record, rank: int, index: int) -> tuple[datetime, int, int, int]:
    """Where ``record`` sorts: ``rank`` is its kind (0 messages ... 3 hosted items), ``index``
    its place among the records of that kind."""
    return (record.created_at, record.seq, rank, index)


def context_order_key(item: ContextItem, rank: int, index: int) -> tuple[datetime, float, int, int]:
    """Where a memory or a retrieved document sorts among the records (keys of
    :func:`order_key`): ``rank`` is 4 for memories, 5 for documents (:data:`CONTEXT_RANKS`),
    ``index`` its place among the thread's items of that kind. Dated: after every record of
    the same ``created_at``, whatever its ``seq``; undated: before every record."""
    created_at = item.created_at
    if created_at is None:
        return (_UNDATED, -math.inf, rank, index)
    return (created_at, math.inf, rank, index)


def timeline(thread: Thread) -> list[Record]:
    """Every timeline record of ``thread`` in render order."""
    groups: tuple[tuple[Record, ...], ...] = (
        thread.messages,
        thread.thoughts,
        thread.tool_calls,
        thread.hosted_items,
    )
    entries = [
        (order_key(record, rank, index), record)
        for rank, records in enumerate(groups)
        for index, record in enumerate(records)
    ]
    entries.sort(key=lambda entry: entry[0])
    return [record for _, record in entries]


def only_records(thread: Thread, keep: set[int]) -> Thread:
    """``thread`` with only the timeline records whose ``id()`` is in ``keep`` (the header
    untouched)."""
    return msgspec.structs.replace(
        thread,
        messages=tuple(r for r in thread.messages if id(r) in keep),
        thoughts=tuple(r for r in thread.thoughts if id(r) in keep),
        tool_calls=tuple(r for r in thread.tool_calls if id(r) in keep),
        hosted_items=tuple(r for r in thread.hosted_items if id(r) in keep),
    )
