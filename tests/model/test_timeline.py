"""The timeline order: ``(created_at, seq)``, whatever the records' kinds or their order in the
file."""

from __future__ import annotations

from ..conftest import (
    assistant,
    at,
    render_body,
    thread,
    user,
)

WEATHER_TOOL = {
    "name": "get_weather",
    "description": "Weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}


def call(cid: str, second: int, *, seq: int = 0, result: dict | None = None, tool="get_weather"):
    return {
        "id": cid,
        "tool": tool,
        "args": {"city": "Paris"},
        "created_at": at(second),
        "seq": seq,
        "result": result if result is not None else {"text": "21C"},
    }


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
