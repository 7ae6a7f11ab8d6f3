"""render_timeline_message: user, own output and peer-agent messages."""

from __future__ import annotations

from types import SimpleNamespace

from turnwire import hookimpl
from turnwire.config.nonce import EnvelopeNonce
from turnwire.wire import InputMessage

from ..conftest import (
    SECRET,
    assistant,
    at,
    render_body,
    thread,
    user,
)

N = EnvelopeNonce(SECRET)


def test_user_message_is_an_identity_envelope():
    body = render_body(
        thread(
            messages=[
                user(
                    "u1",
                    "hi <system_instructions>",
                    0,
                    identity={"identifier": "u-7", "representation": 'Al "x"'},
                )
            ]
        )
    )
    n = N("u1")
    assert body["input"] == [
        {
            "type": "message",
            "role": "user",
            "content": [
                {
                    "type": "input_text",
                    "text": (
                        f'<message_{n} from="Al &quot;x&quot;" role="user" '
                        'createdAt="2026-01-01T10:00:00.000Z">'
                        f"\nhi &lt;system_instructions>\n</message_{n}>"
                    ),
                }
            ],
        }
    ]


def test_attachments_only_user_message_keeps_an_empty_envelope_and_its_media():
    t = thread(
        messages=[
            {
                "id": "u1",
                "role": "user",
                "created_at": at(0),
                "attachments": [
                    {"id": "a1", "kind": "image", "mime_type": "image/png", "data_base64": "AAAA"}
                ],
            }
        ]
    )
    parts = render_body(t)["input"][0]["content"]
    assert [p["type"] for p in parts] == ["input_text", "input_text", "input_image"]
    assert ">\n\n</message_" in parts[0]["text"]


def test_peer_assistant_is_string_content_in_a_peer_envelope():
    body = render_body(
        thread(
            messages=[
                user(),
                assistant(
                    "p1", "I checked.", 1, identity={"identifier": "bot-2", "representation": "Bot"}
                ),
            ]
        )
    )
    n = N("p1")
    assert body["input"][1] == {
        "type": "message",
        "role": "assistant",
        "content": (
            f'<peer_agent_output_{n} from="Bot" createdAt="2026-01-01T10:00:01.000Z">\nI checked.\n'
            f"</peer_agent_output_{n}>"
        ),
    }


def test_own_message_attachments_follow_as_a_user_item():
    t = thread(
        messages=[
            user(),
            {
                **assistant("msg_1", "Here is the chart.", 1),
                "attachments": [
                    {
                        "id": "c1",
                        "kind": "image",
                        "mime_type": "image/png",
                        "data_base64": "AAAA",
                        "trust_tier": "first-party",
                    }
                ],
            },
        ]
    )
    items = render_body(t)["input"]
    assert items[1] == {"type": "message", "role": "assistant", "content": "Here is the chart."}
    assert items[2]["role"] == "user"
    assert [p["type"] for p in items[2]["content"]] == ["input_text", "input_image"]


def test_self_identity_decides_what_is_own_output():
    t = thread(messages=[user(), assistant("x1", "from me", 1, identity={"identifier": "me"})])
    own = render_body(t, {"render": {"self_identity": "me"}})["input"][1]
    assert own == {"type": "message", "role": "assistant", "content": "from me"}
    peer = render_body(t)["input"][1]
    assert "<peer_agent_output_" in peer["content"]


def test_a_nonce_is_derived_only_for_messages_that_get_an_envelope():
    from datetime import UTC, datetime

    from turnwire.model.records import Identity, Message
    from turnwire.stages.timeline import render_timeline_message

    asked: list[str] = []

    def spy(record_id: str) -> str:
        asked.append(record_id)
        return N(record_id)

    when = datetime(2026, 1, 1, tzinfo=UTC)
    own = Message(id="msg_1", role="assistant", content="mine", created_at=when)
    peer = Message(
        id="p1",
        role="assistant",
        content="theirs",
        identity=Identity(identifier="other-agent"),
        created_at=when,
    )
    person = Message(id="u1", role="user", content="hi", created_at=when)
    for message in (own, peer, person):
        render_timeline_message(
            message=message, self_identity="assistant", envelope_nonce=spy, stages=None
        )
    assert asked == ["p1", "u1"]


def test_own_output_without_its_reasoning_goes_out_as_assistant_string_content():
    t = thread(messages=[user(), assistant("msg_1", "hello <system_instructions>", 1)])
    item = render_body(t)["input"][1]
    assert item == {
        "type": "message",
        "role": "assistant",
        "content": "hello &lt;system_instructions>",
    }


def test_hook_render_timeline_message():
    """A plugin renders a message's items, given the message; ``None`` leaves the others."""

    @hookimpl
    def render_timeline_message(message):
        if message.role != "user":
            return None
        return (InputMessage(role="user", content=f"{message.id} asks: {message.content}"),)

    t = thread(messages=[user("u1", "hi", 0), assistant("msg_1", "hello", 1)])
    plugin = SimpleNamespace(render_timeline_message=render_timeline_message)
    items = render_body(t, extra_plugins=[plugin])["input"]
    assert items[0] == {"type": "message", "role": "user", "content": "u1 asks: hi"}
    assert items[1] == {"type": "message", "role": "assistant", "content": "hello"}
