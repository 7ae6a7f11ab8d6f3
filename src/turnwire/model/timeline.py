"""The timeline: a thread's records in the one order every render, window and cut uses.

Records sort by ``(created_at, seq)``; ties go messages, thoughts, tool calls, hosted items,
then the order they are stored in.
"""

from __future__ import annotations

from datetime import datetime

import msgspec

from turnwire.model.records import HostedItem, Message, Thought, Thread, ToolCall

__all__ = ["Record", "only_records", "order_key", "timeline"]

Record = Message | Thought | ToolCall | HostedItem


def order_key(record: Record, rank: int, index: int) -> tuple[datetime, int, int, int]:
    """Where ``record`` sorts: ``rank`` is its kind (0 messages ... 3 hosted items), ``index``
    its place among the records of that kind."""
    return (record.created_at, record.seq, rank, index)


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
