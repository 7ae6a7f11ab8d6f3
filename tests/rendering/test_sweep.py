"""The pairing sweep: a reasoning item is kept only right before the partner it was recorded with,
while its prefix fingerprint still matches; kept ids are stripped everywhere else; whatever the
stored timeline, the input is pairable."""

from __future__ import annotations

import functools
import logging

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import turnwire
from turnwire.rendering.preflight import preflight

from ..conftest import (
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
from ..oracle import validate_body

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


MODEL_BINDING = {
    "render": {
        "reasoning_replay": "encrypted",
        "fingerprint_binding": "model",
        "replay_compatibility": ["openai-responses-reasoning-v1"],
    }
}


def _valid_fingerprint() -> str:
    from turnwire.config.options import Endpoint
    from turnwire.stages.fingerprint import fingerprint_prefix

    return fingerprint_prefix(
        model="gpt-5",
        instructions=None,
        tools=None,
        input=[],
        through_item=0,
        fingerprint_binding="model",
        endpoint=Endpoint(),
        scratch={},
    )


VALID = _valid_fingerprint()


kinds = st.lists(
    st.sampled_from(
        ["user", "own", "own-bad-id", "thought", "call", "call-no-fc", "plain-thought"]
    ),
    min_size=1,
    max_size=14,
)


@st.composite
def timelines(draw):
    messages, thoughts, calls = [], [], []
    ids = [f"msg_{n}" for n in range(20)] + [f"fc_{n}" for n in range(20)]
    for position, kind in enumerate(draw(kinds)):
        stamp = "2026-01-01T10:00:00Z"
        if kind == "user":
            messages.append(
                {
                    "id": f"u{position}",
                    "role": "user",
                    "content": "q",
                    "created_at": stamp,
                    "seq": position,
                }
            )
        elif kind in ("own", "own-bad-id"):
            mid = f"msg_{position}" if kind == "own" else f"own-{position}"
            messages.append(
                {
                    "id": mid,
                    "role": "assistant",
                    "content": "a",
                    "created_at": stamp,
                    "seq": position,
                }
            )
        elif kind in ("call", "call-no-fc"):
            cid = f"call_{position}|fc_{position}" if kind == "call" else f"call_{position}"
            calls.append(
                {
                    "id": cid,
                    "tool": "t",
                    "created_at": stamp,
                    "seq": position,
                    "result": {"text": "r"},
                }
            )
        elif kind == "plain-thought":
            thoughts.append(
                {"id": f"t{position}", "content": "hm", "created_at": stamp, "seq": position}
            )
        else:
            paired = draw(st.one_of(st.none(), st.sampled_from(ids)))
            fingerprint = draw(st.sampled_from([VALID, "0" * 64]))
            thoughts.append(
                {
                    "id": f"rs_{position}",
                    "created_at": stamp,
                    "seq": position,
                    "replay_compatibility": "openai-responses-reasoning-v1",
                    "payload": {
                        "variant": "responses-reasoning",
                        "paired_item_id": paired,
                        "prefix_fingerprint": fingerprint,
                        "item": {
                            "type": "reasoning",
                            "id": f"rs_{position}",
                            "summary": [],
                            "encrypted_content": "gAAAA",
                        },
                    },
                }
            )
    if not messages and not calls:
        messages.append(
            {"id": "u_last", "role": "user", "content": "q", "created_at": "2026-01-01T10:00:01Z"}
        )
    return turnwire.load_thread(
        {
            "version": 1,
            "model": "gpt-5",
            "tools": [{"name": "t"}],
            "messages": messages,
            "thoughts": thoughts,
            "tool_calls": calls,
        }
    )


@functools.cache
def _container() -> turnwire.Container:
    return make_container(MODEL_BINDING)


def _kept_example() -> turnwire.Thread:
    """A timeline whose reasoning item must be kept (so the property's branch always runs)."""
    stamp = "2026-01-01T10:00:00Z"
    return turnwire.load_thread(
        {
            "version": 1,
            "model": "gpt-5",
            "tools": [{"name": "t"}],
            "messages": [
                {"id": "u0", "role": "user", "content": "q", "created_at": stamp},
                {"id": "msg_2", "role": "assistant", "content": "a", "created_at": stamp, "seq": 2},
            ],
            "thoughts": [
                {
                    "id": "rs_1",
                    "created_at": stamp,
                    "seq": 1,
                    "replay_compatibility": "openai-responses-reasoning-v1",
                    "payload": {
                        "variant": "responses-reasoning",
                        "paired_item_id": "msg_2",
                        "prefix_fingerprint": VALID,
                        "item": {
                            "type": "reasoning",
                            "id": "rs_1",
                            "summary": [],
                            "encrypted_content": "gAAAA",
                        },
                    },
                }
            ],
        }
    )


def test_the_kept_example_keeps_its_reasoning_item():
    body = turnwire.render(_kept_example(), container=make_container(MODEL_BINDING)).json
    assert [i.get("type") for i in body["input"]] == ["message", "reasoning", "message"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(_kept_example())
@given(timelines())
def test_every_reasoning_item_sits_right_before_its_partner_and_ids_only_there(thread):
    rendered = turnwire.render(thread, container=_container())
    body = rendered.json
    preflight(body)
    validate_body(body)
    items = body["input"]
    by_id = {t.id: t for t in thread.thoughts}
    for index, item in enumerate(items):
        if item.get("type") == "reasoning":
            partner = items[index + 1]
            assert partner.get("type") in ("message", "function_call") and partner.get("id")
            payload = by_id[item["id"]].payload
            assert payload.prefix_fingerprint == VALID
            assert payload.paired_item_id in (None, partner["id"])
        elif item.get("id"):
            assert index > 0 and items[index - 1].get("type") == "reasoning"
    assert turnwire.render(thread, container=_container()).body == rendered.body
