"""Where turnwire deliberately does better than the reference (DESIGN.md, numbered list).

Each test states the reference's behaviour it would catch. Items covered at length elsewhere
are pinned again here in their smallest form, so this file reads as the list itself.
"""

from __future__ import annotations

import hashlib

import msgspec

import turnwire

from .conftest import (
    REPLAY,
    SECRET,
    assistant,
    at,
    make_container,
    prefix_fingerprint,
    reasoning_thought,
    render_body,
    thread,
    user,
)


def test_1_nonces_are_keyed_not_the_id_or_the_public_checksum():
    """Reference: tool-result nonce = sha256(tool+args), message tag = the raw id."""
    t = thread(
        messages=[user("u1")],
        tools=[{"name": "s"}],
        tool_calls=[
            {
                "id": "call_1",
                "tool": "s",
                "args": {"q": "x"},
                "created_at": at(1),
                "result": {"text": "r"},
            }
        ],
    )
    body = render_body(t)
    checksum = hashlib.sha256(b'{"args":{"q":"x"},"tool":"s"}').hexdigest()
    text = str(body)
    assert checksum not in text and "<message_u1 " not in text
    assert turnwire.plugin.EnvelopeNonce(SECRET)("call_1") in body["input"][2]["output"]


def test_2_no_assistant_item_carries_input_text():
    """Reference: peer messages and plain-text thoughts go out as assistant + input_text."""
    t = thread(
        messages=[user(), assistant("p", "peer", 1, identity={"identifier": "other"})],
        thoughts=[{"id": "t", "content": "hm", "created_at": at(2)}],
    )
    for item in render_body(t)["input"][1:]:
        assert item["role"] == "assistant" and isinstance(item["content"], str)


def test_3_ids_only_where_the_api_can_check_them():
    """Reference: own messages and calls keep ids with no reasoning before them."""
    t = thread(
        tools=[{"name": "s"}],
        messages=[user(), assistant("msg_1", "a", 3)],
        tool_calls=[
            {"id": "call_1|fc_1", "tool": "s", "created_at": at(1), "result": {"text": "r"}}
        ],
    )
    assert all("id" not in item for item in render_body(t)["input"])


def test_4_order_is_created_at_then_seq():
    """Reference: millisecond createdAt only; ties fall back to the kind order."""
    t = thread(messages=[user("u1", "first", 0, seq=0), user("u2", "second", 0, seq=1)])
    texts = [i["content"][0]["text"] for i in render_body(t)["input"]]
    assert "first" in texts[0] and "second" in texts[1]


def test_5_a_reasoning_record_without_text_never_fails_a_render():
    """Reference: an empty payload-less thought fails validation and the turn with it."""
    t = thread(
        messages=[user()],
        thoughts=[
            reasoning_thought("rs_1", 1, fingerprint=None, paired=None, encrypted=None, summary="")
        ],
    )
    assert len(render_body(t)["input"]) == 1


def test_7_no_reasoning_item_without_encrypted_content_under_store_false():
    """Reference: summary-only replays bare reasoning items, which store:false cannot resolve."""
    settings = {
        "render": {
            "reasoning_replay": "summary-only",
            "replay_compatibility": ["openai-responses-reasoning-v1"],
        }
    }
    fp = prefix_fingerprint(thread(messages=[user()]), settings)
    t = thread(
        messages=[user(), assistant("msg_1", "a", 2, seq=1)],
        thoughts=[reasoning_thought("rs_1", 2, fingerprint=fp, paired="msg_1")],
    )
    assert all(i.get("type") != "reasoning" for i in render_body(t, settings)["input"])


def test_11_tool_choice_and_stream_options_only_where_they_mean_something():
    """Reference: both are sent whatever the tools and the stream mode."""
    body = render_body(
        thread(messages=[user()]),
        {
            "request": {"tool_choice": "auto", "stream_options": {"include_obfuscation": False}},
            "client": {"stream": False},
        },
    )
    assert "tool_choice" not in body and "stream_options" not in body


def test_12_small_tool_results_are_inlined():
    """Reference: every ordinary tool result becomes a handle, even two bytes."""
    t = thread(
        messages=[user()],
        tools=[{"name": "s"}],
        tool_calls=[
            {"id": "c", "tool": "s", "created_at": at(1), "result": {"artifact": {"text": "ok"}}}
        ],
    )
    assert "\nok\n" in render_body(t)["input"][2]["output"]


def test_13_model_binding_keeps_replay_when_the_prefix_changes():
    """Reference: any change to instructions or earlier items drops all earlier reasoning."""
    settings = {"render": {**REPLAY["render"], "fingerprint_binding": "model"}}
    fp = prefix_fingerprint(thread(messages=[user()]), settings)
    t = thread(
        system_prompt="a new system prompt",
        memories=[{"id": "m", "content": "new"}],
        messages=[user(), assistant("msg_1", "a", 2, seq=1)],
        thoughts=[reasoning_thought("rs_1", 2, fingerprint=fp, paired="msg_1")],
    )
    kinds = [i.get("type") for i in render_body(t, settings)["input"]]
    assert kinds == ["message", "reasoning", "message"]
    assert all(i.get("type") != "reasoning" for i in render_body(t, REPLAY)["input"])


def test_14_strict_is_always_explicit():
    """Reference: `strict` only when configured; the spec marks it required."""
    body = render_body(thread(messages=[user()], tools=[{"name": "s"}]))
    assert body["tools"][0]["strict"] is False


def test_the_reasoning_free_body_shape_is_unchanged_by_msgspec_defaults():
    """`store` has no default, so omit_defaults can never drop it."""
    body = turnwire.render(thread(messages=[user()]), container=make_container(), model="m").request
    assert b'"store":false' in msgspec.json.encode(body)
