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
