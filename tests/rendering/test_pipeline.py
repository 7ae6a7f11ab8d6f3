"""build_input: the four steps, the pairing sweep, id hygiene and the load-bearing invariants."""

from __future__ import annotations

import logging

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import turnwire

from ..conftest import (
    REPLAY,
    assistant,
    at,
    make_container,
    reasoning_thought,
    render_body,
    thread,
    user,
)

WEATHER_TOOL = {
    "name": "get_weather",
    "description": "Weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}


# ------------------------------------------------------------------ step 1: leading content


def test_leading_text_goes_to_instructions_by_default():
    body = render_body(
        thread(system_prompt="SYS", standing_instructions=["Be terse."], messages=[user()])
    )
    assert body["instructions"].startswith('SYS\n\n<system_instructions kind="developer-rules">')
    assert all(item.get("role") != "developer" for item in body["input"])


@pytest.mark.parametrize(
    ("channel", "role"), [("developer-item", "developer"), ("system-item", "system")]
)
def test_leading_text_as_a_first_item(channel, role):
    body = render_body(
        thread(system_prompt="SYS", messages=[user()]),
        {"render": {"system_prompt_channel": channel}},
    )
    assert "instructions" not in body
    assert body["input"][0] == {
        "type": "message",
        "role": role,
        "content": [{"type": "input_text", "text": "SYS"}],
    }


def test_no_leading_text_means_no_instructions_and_no_item():
    body = render_body(thread(messages=[user()]))
    assert "instructions" not in body
    assert len(body["input"]) == 1


def test_trailing_buckets_become_one_system_item_outside_the_fingerprinted_prefix():
    t = thread(
        system_prompt="SYS",
        standing_instructions=["Rule."],
        memories=[{"id": "m1", "content": "Prefers tea"}],
        messages=[user()],
    )
    settings_ = {"render": {"bucket_order": ["standing_instructions", "timeline", "memories"]}}
    rendered = turnwire.render(t, container=make_container(settings_), model="gpt-5")
    body = rendered.json
    assert "<system_instructions" in body["instructions"]
    assert "<memories>" not in body["instructions"]
    last = body["input"][-1]
    assert last["role"] == "system" and last["type"] == "message"
    assert last["content"][0]["text"].startswith("<memories>\n<memory_")
    assert rendered.fingerprintable_length == len(body["input"]) - 1


def test_buckets_left_out_of_the_order_are_never_rendered():
    t = thread(
        standing_instructions=["Rule."],
        memories=[{"id": "m1", "content": "tea"}],
        messages=[user()],
    )
    body = render_body(t, {"render": {"bucket_order": ["timeline"]}})
    assert "instructions" not in body
    assert "memor" not in str(body)


def test_tools_are_absent_never_empty_when_none_are_visible():
    """Load-bearing invariant 3: tools is undefined, never [], when nothing is declared."""
    hidden = {**WEATHER_TOOL, "hidden": True}
    for tools in ([], [hidden]):
        rendered = turnwire.render(
            thread(tools=tools, messages=[user()]), container=make_container(), model="gpt-5"
        )
        assert "tools" not in rendered.json
        assert rendered.rendered.tools is None


def test_no_assistant_item_ever_carries_input_text():
    t = thread(
        messages=[
            user(),
            assistant("p1", "peer says", 1, identity={"identifier": "bot-2"}),
            assistant("own-1", "mine", 2),
        ],
        thoughts=[
            {"id": "t1", "content": "thinking", "created_at": at(3)},
            {
                "id": "t2",
                "content": "peer thinking",
                "created_at": at(4),
                "identity": {"identifier": "bot-2"},
            },
        ],
    )
    body = render_body(t, {"render": {"thought_surfacing": "all"}})
    assistants = [i for i in body["input"] if i.get("role") == "assistant"]
    assert len(assistants) == 4
    for item in assistants:
        parts = item["content"] if isinstance(item["content"], list) else []
        assert all(p["type"] != "input_text" for p in parts)
    # peer messages, own messages without their reasoning and thoughts: string content
    assert all(isinstance(item["content"], str) for item in assistants)


# ------------------------------------------------------------------ determinism


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(min_size=1, max_size=20), min_size=1, max_size=6))
def test_rendering_is_deterministic(texts):
    t = thread(
        system_prompt="SYS",
        messages=[
            user(f"u{i}", text, i) if i % 2 == 0 else assistant(f"msg_{i}", text, i)
            for i, text in enumerate(texts)
        ],
    )
    first = turnwire.render(t, container=make_container(), model="gpt-5").body
    second = turnwire.render(t, container=make_container(), model="gpt-5").body
    assert first == second


def test_many_warnings_are_logged_once_each_up_to_five_then_counted(caplog):
    t = thread(
        messages=[user()],
        thoughts=[
            reasoning_thought(f"rs_{n}", 1, fingerprint="0" * 64, paired=None, seq=n)
            for n in range(8)
        ],
    )
    with caplog.at_level(logging.WARNING, logger="turnwire"):
        rendered = turnwire.render(t, container=make_container(REPLAY), model="gpt-5")
    assert len(rendered.rendered.warnings) == 8
    assert len(caplog.records) == 6
    assert "and 3 more render warnings" in caplog.records[-1].getMessage()
