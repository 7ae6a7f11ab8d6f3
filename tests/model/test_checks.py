"""Records built in code are held to the thread file's rules (``turnwire.model.checks``): the same
error, with the same ``$.path``, as a thread file holding the same value; plus the shapes only
Python can get wrong (a list for a tuple, a dict for a record, a date as text)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import pytest

import turnwire
from turnwire import ThreadFileError
from turnwire.files.thread_file import load_thread_bytes
from turnwire.model.checks import FUTURE_SKEW, check_thread

from ..conftest import at, user

VALID: dict[str, Any] = {
    "version": 1,
    "model": "gpt-5",
    "system_prompt": "S",
    "tools": [{"name": "lookup", "parameters": {"type": "object"}}],
    "memories": [{"id": "m1", "content": "likes tea"}],
    "retrievables": [
        {"id": "d1", "artifact": {"path": "/srv/doc.txt"}, "trust_tier": "first-party"}
    ],
    "messages": [
        user("u1", "hi", 0),
        {
            "id": "u2",
            "role": "user",
            "content": "see",
            "attachments": [
                {"id": "f1", "kind": "image", "mime_type": "image/png", "path": "/srv/a.png"}
            ],
            "created_at": at(1),
        },
    ],
    "thoughts": [{"id": "t1", "content": "plan", "created_at": at(2)}],
    "tool_calls": [
        {
            "id": "call_1",
            "tool": "lookup",
            "args": {"q": 1},
            "result": {"text": "found"},
            "created_at": at(3),
        }
    ],
    "hosted_items": [
        {
            "id": "ws_1",
            "type": "web_search_call",
            "item": {"id": "ws_1", "type": "web_search_call"},
            "created_at": at(4),
        }
    ],
}

# (where, the value a thread file would hold there)
BAD_VALUES = [
    ("messages[0].role", "usr"),
    ("messages[0].id", ""),
    ("messages[1].attachments[0].kind", "picture"),
    ("messages[1].attachments[0].trust_tier", "trusted"),
    ("messages[1].attachments[0].path", "/srv/a\0.png"),
    ("tools[0].name", "look up"),
    ("tool_calls[0].tool", "look up"),
    ("tool_calls[0].seq", 2**64),
    ("memories[0].confidence", 1.5),
    ("retrievables[0].trust_tier", "mine"),
    ("retrievables[0].artifact.path", "/srv/\0"),
    ("thoughts[0].seq", "1"),
    ("hosted_items[0].seal", 5),
    ("model", 5),
    ("system_prompt", None),
]


def _set(tree: Any, where: str, value: Any) -> Any:
    """``tree`` (plain data) with ``value`` at ``where`` (``a[0].b``)."""
    head, _, rest = where.partition(".")
    name, _, index = head.partition("[")
    copy = dict(tree)
    if index:
        items = list(copy[name])
        at_index = int(index.rstrip("]"))
        items[at_index] = _set(items[at_index], rest, value) if rest else value
        copy[name] = items
    else:
        copy[name] = _set(copy[name], rest, value) if rest else value
    return copy


def _built(tree: Any, where: str, value: Any) -> turnwire.Thread:
    """The valid thread built in code, with ``value`` put at ``where`` the way Python code
    would put it (no check: ``msgspec.structs.replace`` down the path)."""
    thread = msgspec.convert(tree, turnwire.Thread)

    def put(record: Any, path: str) -> Any:
        head, _, rest = path.partition(".")
        name, _, index = head.partition("[")
        field = next(f for f in msgspec.structs.fields(record) if f.encode_name == name)
        current = getattr(record, field.name)
        if index:
            items = list(current)
            at_index = int(index.rstrip("]"))
            items[at_index] = put(items[at_index], rest) if rest else value
            new: Any = tuple(items)
        else:
            new = put(current, rest) if rest else value
        return msgspec.structs.replace(record, **{field.name: new})

    return put(thread, where)  # type: ignore[no-any-return]


def test_the_valid_thread_passes_built_in_code_and_as_a_file():
    check_thread(msgspec.convert(VALID, turnwire.Thread))
    turnwire.load_thread(VALID)


@pytest.mark.parametrize(("where", "value"), BAD_VALUES, ids=[w for w, _ in BAD_VALUES])
def test_a_value_built_in_code_fails_as_the_same_value_in_a_thread_file_fails(where, value):
    with pytest.raises(ThreadFileError) as from_file:
        load_thread_bytes(json.dumps(_set(VALID, where, value)).encode(), name="t.json")
    with pytest.raises(ThreadFileError) as from_code:
        check_thread(_built(VALID, where, value))
    assert from_code.value.path == from_file.value.path == f"$.{where}"
    assert from_code.value.code == "E_THREAD_FILE_INVALID"
    # the same words (a file's limits also name the file: "thread file t.json, $.a: ...")
    assert str(from_file.value).endswith(str(from_code.value))


def test_a_role_outside_the_enum_is_refused_naming_it():
    """Reported: a role ``"usr"`` built in code went out as an assistant-role peer message."""
    thread = turnwire.Thread(
        model="gpt-5",
        messages=(
            turnwire.Message(id="m1", role="usr", content="hi", created_at=datetime.now(UTC)),
        ),  # type: ignore[arg-type]
    )
    with pytest.raises(ThreadFileError) as caught:
        turnwire.render(thread)
    assert caught.value.path == "$.messages[0].role"
    assert str(caught.value) == "$.messages[0].role: Invalid enum value 'usr'"


@pytest.mark.parametrize(
    ("created_at", "detail"),
    [
        ("2026-01-01T10:00:00Z", "Expected `datetime`, got `str`"),
        (datetime(2026, 1, 1, 10), "Expected `datetime` with a timezone component"),
        (1767261600, "Expected `datetime`, got `int`"),
    ],
)
def test_a_date_that_is_not_an_aware_datetime_is_refused_naming_it(created_at, detail):
    """Reported: a string ``created_at`` crashed deep in rendering with an AttributeError."""
    message = turnwire.Message(id="m1", role="user", content="hi", created_at=created_at)
    with pytest.raises(ThreadFileError) as caught:
        turnwire.render(turnwire.Thread(model="gpt-5", messages=(message,)))
    assert caught.value.path == "$.messages[0].created_at"
    assert str(caught.value) == f"$.messages[0].created_at: {detail}"


def test_a_record_dated_ahead_is_refused_as_a_thread_file_is():
    ahead = datetime.now(UTC) + FUTURE_SKEW + timedelta(minutes=1)
    message = turnwire.Message(id="m1", role="user", content="hi", created_at=ahead)
    with pytest.raises(ThreadFileError, match="is in the future") as caught:
        check_thread(turnwire.Thread(messages=(message,)))
    assert caught.value.path == "$.messages[0].created_at"
    check_thread(turnwire.Thread(messages=(message,)), now=ahead)


NOW = datetime(2026, 1, 1, 10, tzinfo=UTC)


@pytest.mark.parametrize(
    ("thread", "path", "detail"),
    [
        (
            turnwire.Thread(
                messages=[turnwire.Message(id="m", role="user", content="x", created_at=NOW)]  # type: ignore[arg-type]
            ),
            "$.messages",
            "expected a tuple, got a list (give tuple(...))",
        ),
        (
            turnwire.Thread(
                messages=(
                    turnwire.Message(
                        id="m",
                        role="user",
                        content="x",
                        attachments=[],
                        created_at=NOW,  # type: ignore[arg-type]
                    ),
                )
            ),
            "$.messages[0].attachments",
            "expected a tuple, got a list (give tuple(...))",
        ),
        (
            turnwire.Thread(
                messages=(
                    turnwire.Message(
                        id="m",
                        role="user",
                        attachments=(  # a dict that has every field of a Media
                            {"id": "f", "kind": "image", "mime_type": "image/png", "path": "/a"},  # type: ignore[arg-type]
                        ),
                        created_at=NOW,
                    ),
                )
            ),
            "$.messages[0].attachments[0]",
            "expected a Media, got a dict",
        ),
        (
            turnwire.Thread(
                thoughts=(turnwire.Message(id="m", role="user", content="x", created_at=NOW),)  # type: ignore[arg-type]
            ),
            "$.thoughts[0]",
            "Object contains unknown field `role`",
        ),
        (
            turnwire.Thread(
                tool_calls=(
                    turnwire.ToolCall(id="c", tool="t", args={"x": object()}, created_at=NOW),
                )
            ),
            "$.tool_calls[0]",
            "Encoding objects of type object is unsupported",
        ),
    ],
    ids=["list-for-tuple", "nested-list", "dict-for-record", "wrong-record", "not-json"],
)
def test_the_shapes_only_python_gets_wrong_are_refused_naming_them(thread, path, detail):
    with pytest.raises(ThreadFileError) as caught:
        check_thread(thread)
    assert caught.value.path == path
    assert str(caught.value) == f"{path}: {detail}"


def test_what_is_not_a_thread_is_refused():
    with pytest.raises(ThreadFileError, match=r"^\$: expected a Thread, got a dict$"):
        check_thread({"version": 1})  # type: ignore[arg-type]


def test_free_form_trees_and_numbers_are_checked_as_json_values():
    """An ``int`` where a float goes is a number (1 is 1.0 in JSON); a tuple or a set inside a
    tool call's ``args`` is a JSON array, as it encodes."""
    thread = turnwire.Thread(
        memories=(turnwire.Memory(id="m", content="c", confidence=1),),
        tool_calls=(
            turnwire.ToolCall(
                id="c", tool="t", args={"xs": (1, 2), "tags": {"a"}, "n": 1.5}, created_at=NOW
            ),
        ),
    )
    check_thread(thread, now=NOW)
