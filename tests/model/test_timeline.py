"""The timeline order: ``(created_at, seq)``, whatever the records' kinds or their order in the
file."""

from __future__ import annotations

from ..conftest import (
    WEATHER_TOOL,
    assistant,
    call,
    render_body,
    thread,
    user,
)


def test_timeline_orders_by_created_at_then_seq_and_calls_are_siblings():
    t = thread(
        tools=[WEATHER_TOOL],
        messages=[user("u1", "weather?", 0), assistant("a1", "done", 5, seq=2)],
        tool_calls=[call("call_1", 5, seq=1)],
    )
    types = [(i.get("type"), i.get("role")) for i in render_body(t)["input"]]
    assert types == [
        ("message", "user"),
        ("function_call", None),
        ("function_call_output", None),
        ("message", "assistant"),
    ]


def test_seq_breaks_a_timestamp_tie_that_would_otherwise_put_the_message_first():
    t = thread(messages=[user("u1", "a", 0, seq=1), user("u2", "b", 0, seq=0)])
    texts = [i["content"][0]["text"] for i in render_body(t)["input"]]
    assert ">\nb\n" in texts[0] and ">\na\n" in texts[1]


def test_context_items_sort_after_the_records_of_their_instant_and_undated_ones_first():
    """``context_order_key`` (``render.context_placement: timeline``): a dated memory or
    document after every record of the same ``created_at``, whatever its ``seq``; an undated
    one before every record; among themselves memories (rank 4) before documents (rank 5),
    then stored order."""
    from datetime import UTC, datetime

    from turnwire.model.records import Memory, Retrievable
    from turnwire.model.timeline import CONTEXT_RANKS, context_order_key, order_key, timeline

    t = thread(
        messages=[user("u1", "a", 0, seq=2**40), user("u2", "b", 1)],
        memories=[{"id": "m1", "content": "x", "created_at": "2026-01-01T10:00:00Z"}],
    )
    first, second = timeline(t)
    memory_rank, document_rank = CONTEXT_RANKS
    dated = context_order_key(t.memories[0], memory_rank, 0)
    assert order_key(first, 0, 0) < dated < order_key(second, 0, 1)
    undated = Memory(id="m0", content="y")
    earliest = datetime(1, 1, 1, tzinfo=UTC)
    assert context_order_key(undated, memory_rank, 0) < order_key(first, 0, 0)
    assert context_order_key(undated, memory_rank, 5) < (earliest, -(2**62), 0, 0)
    document = Retrievable(
        id="d", content="z", trust_tier="first-party", created_at=t.memories[0].created_at
    )
    assert dated < context_order_key(document, document_rank, 0)
    assert context_order_key(document, document_rank, 0) < context_order_key(
        document, document_rank, 1
    )
