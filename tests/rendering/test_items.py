"""One record's input items: function call arguments as compact JSON, call ids over 64 characters
mapped alike on both halves, and a reasoning record without text that never fails a render."""

from __future__ import annotations

from turnwire.rendering.items import short_call_id

from ..conftest import (
    REPLAY,
    WEATHER_TOOL,
    call,
    reasoning_thought,
    render_body,
    thread,
    user,
)


def test_function_call_arguments_are_compact_json_in_insertion_order():
    t = thread(
        tools=[WEATHER_TOOL],
        messages=[user()],
        tool_calls=[{**call("call_1", 1), "args": {"z": 1.0, "a": "é"}}],
    )
    fc = render_body(t)["input"][1]
    assert fc["arguments"] == '{"z":1,"a":"é"}'


def test_a_call_id_over_64_characters_maps_identically_on_call_and_output():
    long_id = "call_" + "x" * 80
    t = thread(tools=[WEATHER_TOOL], messages=[user()], tool_calls=[call(long_id, 1)])
    fc, out = render_body(t)["input"][1:3]
    assert fc["call_id"] == out["call_id"] == short_call_id(long_id)
    assert len(fc["call_id"]) <= 64
    assert short_call_id(long_id) == short_call_id(long_id)
    assert short_call_id("call_short") == "call_short"


def test_thought_with_a_payload_and_no_text_never_fails_a_turn():
    t = thread(
        messages=[user()],
        thoughts=[
            reasoning_thought("rs_1", 1, fingerprint=None, paired=None, encrypted=None, summary="")
        ],
    )
    for settings_ in (
        None,
        REPLAY,
        {
            "render": {
                "reasoning_replay": "summary-only",
                "replay_compatibility": ["openai-responses-reasoning-v1"],
            }
        },
    ):
        assert len(render_body(t, settings_)["input"]) == 1
