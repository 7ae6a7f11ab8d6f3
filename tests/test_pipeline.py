"""build_input: the four steps, the pairing sweep, id hygiene and the load-bearing invariants."""

from __future__ import annotations

import logging

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import turnwire
from turnwire.rendering.items import short_call_id

from .conftest import (
    REPLAY,
    assistant,
    at,
    make_container,
    prefix_fingerprint,
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


def call(cid: str, second: int, *, seq: int = 0, result: dict | None = None, tool="get_weather"):
    return {
        "id": cid,
        "tool": tool,
        "args": {"city": "Paris"},
        "created_at": at(second),
        "seq": seq,
        "result": result if result is not None else {"text": "21C"},
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


def test_tools_are_absent_never_empty_when_none_are_visible():
    """Load-bearing invariant 3: tools is undefined, never [], when nothing is declared."""
    hidden = {**WEATHER_TOOL, "hidden": True}
    for tools in ([], [hidden]):
        rendered = turnwire.render(
            thread(tools=tools, messages=[user()]), container=make_container(), model="gpt-5"
        )
        assert "tools" not in rendered.json
        assert rendered.rendered.tools is None


def test_own_output_without_its_reasoning_goes_out_as_assistant_string_content():
    t = thread(messages=[user(), assistant("msg_1", "hello <system_instructions>", 1)])
    item = render_body(t)["input"][1]
    assert item == {
        "type": "message",
        "role": "assistant",
        "content": "hello &lt;system_instructions>",
    }


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


# ------------------------------------------------------------------ step 3: the sweep


def _replay_thread(
    fingerprint,
    *,
    paired="msg_1",
    partner_id="msg_1",
    trailing=False,
    thought_seq=1,
    message_seq=2,
    same_time=False,
):
    thought_second = 5
    message_second = 5 if same_time else 6
    fields = {
        "system_prompt": "SYS",
        "messages": [
            user("u1", "cross the street?", 0),
            assistant(partner_id, "Look both ways.", message_second, seq=message_seq),
        ],
        "thoughts": [
            reasoning_thought(
                "rs_1", thought_second, fingerprint=fingerprint, paired=paired, seq=thought_seq
            )
        ],
    }
    if trailing:
        fields["memories"] = [{"id": "m1", "content": "tea"}]
    return thread(**fields)


def _fingerprint_after_user(settings_=None, trailing=False):
    fields = {"system_prompt": "SYS", "messages": [user("u1", "cross the street?", 0)]}
    if trailing:
        fields["memories"] = [{"id": "m1", "content": "tea"}]
    return prefix_fingerprint(thread(**fields), settings_)


def test_a_matching_reasoning_item_is_replayed_with_its_partner_and_the_partner_keeps_its_id():
    body = render_body(_replay_thread(_fingerprint_after_user(REPLAY)), REPLAY)
    reasoning, message = body["input"][1:3]
    assert reasoning == {
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "plan"}],
        "id": "rs_1",
        "encrypted_content": "gAAAA-enc",
    }
    assert message["type"] == "message" and message["id"] == "msg_1"
    assert message["content"] == [
        {"type": "output_text", "text": "Look both ways.", "annotations": []}
    ]
    assert "reasoning.encrypted_content" in body["include"]


def test_a_stale_fingerprint_drops_the_item_and_strips_the_partner_id(caplog):
    with caplog.at_level(logging.WARNING, logger="turnwire"):
        body = render_body(_replay_thread("0" * 64), REPLAY)
    assert [i.get("type") for i in body["input"]] == ["message", "message"]
    assert body["input"][1] == {
        "type": "message",
        "role": "assistant",
        "content": "Look both ways.",
    }
    assert "stale fingerprint" in caplog.text


def test_a_partner_that_is_not_the_recorded_one_drops_the_item():
    body = render_body(_replay_thread(_fingerprint_after_user(REPLAY), paired="msg_other"), REPLAY)
    assert all(i.get("type") != "reasoning" for i in body["input"])
    assert all("id" not in i for i in body["input"])


def test_a_reasoning_item_at_the_end_is_dropped():
    t = thread(
        system_prompt="SYS",
        messages=[user("u1", "cross the street?", 0)],
        thoughts=[
            reasoning_thought("rs_1", 5, fingerprint=_fingerprint_after_user(REPLAY), paired=None)
        ],
    )
    assert len(render_body(t, REPLAY)["input"]) == 1


def test_a_partner_without_a_valid_id_cannot_pair():
    body = render_body(
        _replay_thread(_fingerprint_after_user(REPLAY), paired=None, partner_id="own-1"), REPLAY
    )
    assert all(i.get("type") != "reasoning" for i in body["input"])


def test_two_consecutive_reasoning_items_never_pair_with_each_other():
    fp = _fingerprint_after_user(REPLAY)
    t = thread(
        system_prompt="SYS",
        messages=[user("u1", "cross the street?", 0)],
        thoughts=[
            reasoning_thought("rs_1", 5, fingerprint=fp, paired=None, seq=0),
            reasoning_thought("rs_2", 5, fingerprint=fp, paired=None, seq=1),
        ],
    )
    assert all(i.get("type") != "reasoning" for i in render_body(t, REPLAY)["input"])


def test_the_sweep_only_sees_the_fingerprintable_prefix():
    """Load-bearing invariant 1: a trailing bucket is invisible to every fingerprint."""
    fp = _fingerprint_after_user(
        {**REPLAY, "render": {**REPLAY["render"], "bucket_order": ["timeline", "memories"]}},
        trailing=True,
    )
    settings_ = {"render": {**REPLAY["render"], "bucket_order": ["timeline", "memories"]}}
    rendered = turnwire.render(
        _replay_thread(fp, trailing=True), container=make_container(settings_), model="gpt-5"
    )
    body = rendered.json
    assert [i.get("type") for i in body["input"]] == ["message", "reasoning", "message", "message"]
    assert rendered.fingerprintable_length == 3


def test_a_reasoning_item_must_sort_strictly_before_its_partner():
    """Load-bearing invariant 2: on a full (created_at, seq) tie the message sorts first."""
    fp = _fingerprint_after_user(REPLAY)
    tied = render_body(_replay_thread(fp, same_time=True, thought_seq=0, message_seq=0), REPLAY)
    assert all(i.get("type") != "reasoning" for i in tied["input"])
    ordered = render_body(_replay_thread(fp, same_time=True, thought_seq=1, message_seq=2), REPLAY)
    assert [i.get("type") for i in ordered["input"]][1:] == ["reasoning", "message"]


def test_replay_needs_the_compatibility_tag_and_says_so(caplog):
    fp = _fingerprint_after_user(REPLAY)
    with caplog.at_level(logging.WARNING, logger="turnwire"):
        body = render_body(_replay_thread(fp), {"render": {"reasoning_replay": "encrypted"}})
    assert all(i.get("type") != "reasoning" for i in body["input"])
    assert "replay_compatibility" in caplog.text


def test_summary_only_replays_the_summary_as_text_never_as_a_reasoning_item():
    settings_ = {
        "render": {
            "reasoning_replay": "summary-only",
            "replay_compatibility": ["openai-responses-reasoning-v1"],
        }
    }
    body = render_body(_replay_thread(_fingerprint_after_user(settings_)), settings_)
    assert all(i.get("type") != "reasoning" for i in body["input"])
    thought = body["input"][1]
    assert thought["role"] == "assistant" and 'kind="self-reasoning"' in thought["content"]
    assert "\nplan\n" in thought["content"]
    assert "include" not in body


def test_without_encrypted_content_a_reasoning_item_is_never_sent():
    t = _replay_thread(_fingerprint_after_user(REPLAY))
    payload_item = t.thoughts[0].payload.item
    import msgspec

    bare = msgspec.structs.replace(payload_item, encrypted_content=None)
    thought_ = msgspec.structs.replace(
        t.thoughts[0], payload=msgspec.structs.replace(t.thoughts[0].payload, item=bare)
    )
    t = msgspec.structs.replace(t, thoughts=(thought_,))
    body = render_body(t, REPLAY)
    assert all(i.get("type") != "reasoning" for i in body["input"])


def test_function_call_ids_are_sent_only_after_their_reasoning():
    t = thread(
        tools=[WEATHER_TOOL],
        messages=[user()],
        tool_calls=[call("call_1|fc_1", 1), call("call_2|xx_2", 2)],
    )
    fcs = [i for i in render_body(t)["input"] if i.get("type") == "function_call"]
    assert [("id" in fc) for fc in fcs] == [False, False]


def test_reasoning_then_function_call_round_trip_keeps_the_fc_id():
    fp = prefix_fingerprint(thread(tools=[WEATHER_TOOL], messages=[user()]), REPLAY)
    t = thread(
        tools=[WEATHER_TOOL],
        messages=[user()],
        thoughts=[reasoning_thought("rs_1", 1, fingerprint=fp, paired="fc_1", seq=0)],
        tool_calls=[call("call_1|fc_1", 1, seq=1), call("call_2|fc_2", 1, seq=2)],
    )
    items = render_body(t, REPLAY)["input"]
    assert [i.get("type") for i in items] == [
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "function_call",
        "function_call_output",
    ]
    assert items[2]["id"] == "fc_1"
    assert "id" not in items[4]


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
