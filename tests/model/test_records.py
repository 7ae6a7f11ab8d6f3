"""The domain records' validation rules, each failure naming its ``$.path``: roles, time zones,
cross-field rules, names the API would refuse, composite tool call ids and the call checksum."""

from __future__ import annotations

import pytest

import turnwire
from turnwire import ThreadFileError, load_thread

from ..conftest import at


def _fails(data, path, words):
    with pytest.raises(ThreadFileError) as caught:
        load_thread({"version": 1, **data})
    assert caught.value.path == path, str(caught.value)
    assert str(caught.value).startswith(path)
    assert words in str(caught.value)
    return caught.value


def test_wrong_role_names_its_path():
    _fails(
        {
            "messages": [
                {"id": "u1", "role": "user", "content": "a", "created_at": at(0)},
                {"id": "u2", "role": "system", "content": "b", "created_at": at(1)},
            ]
        },
        "$.messages[1].role",
        "Invalid enum value 'system'",
    )


def test_unknown_field_and_missing_timezone():
    _fails(
        {
            "messages": [
                {"id": "u", "role": "user", "content": "a", "created_at": at(0), "colour": 1}
            ]
        },
        "$.messages[0]",
        "unknown field `colour`",
    )
    _fails(
        {
            "messages": [
                {"id": "u", "role": "user", "content": "a", "created_at": "2026-01-01T10:00:00"}
            ]
        },
        "$.messages[0].created_at",
        "timezone",
    )


def test_cross_field_rules_name_the_record():
    _fails(
        {"messages": [{"id": "u", "role": "user", "created_at": at(0)}]},
        "$.messages[0]",
        "`content` or `attachments`",
    )
    _fails(
        {"thoughts": [{"id": "t", "created_at": at(0)}]},
        "$.thoughts[0]",
        "`content` or a `payload`",
    )
    _fails(
        {
            "thoughts": [
                {
                    "id": "t",
                    "created_at": at(0),
                    "payload": {
                        "variant": "responses-reasoning",
                        "item": {"type": "reasoning", "summary": []},
                    },
                }
            ]
        },
        "$.thoughts[0]",
        "no `replay_compatibility`",
    )
    _fails(
        {
            "tool_calls": [
                {"id": "c", "tool": "t", "created_at": at(0), "result": {"text": "a", "media": []}}
            ]
        },
        "$.tool_calls[0].result",
        "exactly one",
    )
    _fails(
        {
            "messages": [
                {
                    "id": "u",
                    "role": "user",
                    "created_at": at(0),
                    "attachments": [{"id": "a", "kind": "image", "mime_type": "image/png"}],
                }
            ]
        },
        "$.messages[0].attachments[0]",
        "exactly one of `path`, `data_base64`, `file_id` or `url` (given: none)",
    )
    _fails({"tools": [{"name": "a"}, {"name": "a"}]}, "$.tools[1].name", "declared twice")
    _fails(
        {"memories": [{"id": "m", "content": "x", "confidence": 2}]},
        "$.memories[0].confidence",
        "<= 1.0",
    )


def test_composite_tool_call_ids():
    call = turnwire.ToolCall(id="call_1|fc_1|extra", tool="t", created_at=at_dt())
    assert (call.call_id, call.item_id) == ("call_1", "fc_1|extra")
    bare = turnwire.ToolCall(id="|fc_1", tool="t", created_at=at_dt())
    assert (bare.call_id, bare.item_id) == ("|fc_1", None)
    assert turnwire.ToolCall(id="call_9", tool="t", created_at=at_dt()).item_id is None


def test_tool_call_checksum_is_the_canonical_sha256():
    import hashlib

    call = turnwire.ToolCall(id="c", tool="search", args={"q": "x"}, created_at=at_dt())
    expected = hashlib.sha256(b'{"args":{"q":"x"},"tool":"search"}').hexdigest()
    assert call.digest == expected


def at_dt():
    from datetime import UTC, datetime

    return datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize("name", ["x" * 65, "get weather", "functions.get_weather", "名前"])
def test_a_tool_name_the_api_would_refuse_is_refused_at_load(name):
    with pytest.raises(ThreadFileError) as caught:
        turnwire.load_thread({"version": 1, "tools": [{"name": "ok"}, {"name": name}]})
    assert caught.value.path == "$.tools[1].name"
    assert turnwire.load_thread({"version": 1, "tools": [{"name": "a-Z_0" * 12 + "abcd"}]})


@pytest.mark.parametrize(
    ("field", "extra"),
    [
        (
            "$.hosted_items[0].type",
            {
                "hosted_items": [
                    {
                        "id": "x_1",
                        "type": "shell_call\n",
                        "created_at": "2026-01-01T10:00:01Z",
                        "item": {"id": "x_1", "type": "shell_call\n"},
                    }
                ]
            },
        ),
        ("$.tools[0].name", {"tools": [{"name": "t\n", "parameters": {}}]}),
        (
            "$.output_schema.name",
            {"output_schema": {"name": "out\n", "schema": {"type": "object"}}},
        ),
    ],
)
def test_a_checked_name_refuses_a_trailing_newline(field, extra):
    """`$` in a Python pattern matches before a final newline: the names' patterns do not."""
    thread = {
        "version": 1,
        "model": "m",
        "messages": [
            {"id": "u1", "role": "user", "content": "q", "created_at": "2026-01-01T10:00:00Z"}
        ],
        **extra,
    }
    with pytest.raises(ThreadFileError, match="matching regex") as caught:
        load_thread(thread)
    assert caught.value.path == field
    assert str(caught.value).startswith(field)


# ------------------------------------------------------------------ built in code, conveniently


def test_a_user_message_gets_its_id_and_date_and_points_at_its_files(tmp_path):
    from datetime import UTC, datetime

    before = datetime.now(UTC).replace(microsecond=0)
    photo, notes = tmp_path / "photo.png", tmp_path / "notes.txt"
    message = turnwire.Message.user("What is this?", files=[photo, str(notes)])
    assert message.role == "user" and message.content == "What is this?"
    assert message.id.startswith("msg_") and len(message.id) == 36
    assert before <= message.created_at <= datetime.now(UTC)
    assert message.created_at.tzinfo is UTC and message.created_at.microsecond % 1000 == 0
    image, text = message.attachments
    assert (image.kind, image.mime_type, image.filename, image.path) == (
        "image",
        "image/png",
        "photo.png",
        str(photo),
    )
    assert (text.kind, text.mime_type, text.path) == ("document", "text/plain", str(notes))
    assert image.id.startswith("file_") and image.id != text.id
    assert turnwire.Message.user("x").id != turnwire.Message.user("x").id
    # One path alone is one file (not its characters); a Media is attached as it is.
    assert len(turnwire.Message.user(files=str(photo)).attachments) == 1
    assert turnwire.Message.user(files=[image]).attachments == (image,)


def test_a_user_message_is_checked_as_it_is_built():
    with pytest.raises(ThreadFileError) as caught:
        turnwire.Message.user(42)  # type: ignore[arg-type]
    assert caught.value.path == "$.content"
    with pytest.raises(ThreadFileError, match="needs `content` or `attachments`"):
        turnwire.Message.user("")
    with pytest.raises(ThreadFileError) as caught:
        turnwire.Message.user("hi", created_at="2026-01-01T00:00:00Z")  # type: ignore[arg-type]
    assert str(caught.value) == "$.created_at: Expected `datetime`, got `str`"


def test_a_thread_from_a_system_prompt_tools_and_a_first_question_renders():
    tool = turnwire.Tool(name="lookup", parameters={"type": "object", "properties": {}})
    created = turnwire.Thread.create("Be brief.", model="gpt-5", tools=[tool], prompt="Look it up.")
    assert created.tools == (tool,) and created.system_prompt == "Be brief."
    (question,) = created.messages
    assert question.content == "Look it up." and question.id.startswith("msg_")
    body = turnwire.render(created).json
    assert body["instructions"].startswith("Be brief.")
    assert [t["name"] for t in body["tools"]] == ["lookup"]
    # What it is given is checked as a thread file's value (a record given whole, where the
    # thread enters rendering: a render, a run, a store, or check_thread).
    with pytest.raises(ThreadFileError) as caught:
        turnwire.Thread.create(model=5)  # type: ignore[arg-type]
    assert caught.value.path == "$.model"
    with pytest.raises(ThreadFileError) as caught:
        turnwire.Thread.create(tools=[{"name": "look up"}])  # type: ignore[list-item]
    assert caught.value.path == "$.tools[0].name"
    unchecked = turnwire.Thread.create(model="gpt-5", tools=[turnwire.Tool(name="look up")])
    with pytest.raises(ThreadFileError) as caught:
        turnwire.render(unchecked)
    assert caught.value.path == "$.tools[0].name"


def test_a_user_message_added_to_a_thread_sorts_after_every_record():
    """The question is dated after every record, one dated a little ahead of this clock too."""
    from datetime import UTC, datetime, timedelta

    ahead = datetime.now(UTC) + timedelta(minutes=2)
    answered = turnwire.Thread(
        model="gpt-5",
        messages=(
            turnwire.Message(id="u1", role="user", content="hi", created_at=ahead),
            turnwire.Message(id="a1", role="assistant", content="hello", created_at=ahead, seq=3),
        ),
    )
    asked = answered.with_user_message("and now?")
    assert asked.messages[:2] == answered.messages
    assert asked.messages[-1].created_at > ahead
    from turnwire.model.timeline import timeline

    assert [r.id for r in timeline(asked)] == ["u1", "a1", asked.messages[-1].id]
