"""Items of the current API a response may carry, recorded and replayed in their place:
a ``configuration_update`` (its reasoning effort and text format stay in force for the answers
after it), and hosted items whose optional fields came back ``null`` (sent without them, the
form every Responses server takes)."""

from __future__ import annotations

from typing import Any

import pytest

import turnwire
from turnwire.model.hosted import INPUT_FIELDS, input_item, input_problem

from ..conftest import make_container
from ..hosted_items import ITEMS
from ..oracle import validate_body
from .server import Reply, ScriptedServer
from .streams import items_answer, message_item

UPDATE = {
    "type": "configuration_update",
    "id": "cu_1",
    "reasoning": {"effort": "low"},
    "text": None,
}
MCP = {
    "type": "mcp_call",
    "id": "mcp_1",
    "status": "completed",
    "server_label": "docs",
    "name": "lookup",
    "arguments": "{}",
    "output": "found",
    "error": None,
    "approval_request_id": None,
}


def _answer(n: int, *items: dict[str, Any]) -> Reply:
    message = message_item(f"answer {n}", f"msg_{n}")
    return Reply.sse(items_answer(*items, message, response_id=f"resp_{n}"))


def _two_turns(*items: dict[str, Any]) -> tuple[turnwire.RunResult[Any], list[dict[str, Any]]]:
    container = make_container()
    thread = turnwire.Thread.create(model="gpt-5", prompt="first question")
    with ScriptedServer([_answer(1, *items), _answer(2)]) as server:
        first = turnwire.run(thread, container=container, base_url=server.base_url, api_key="k")
        asked = first.thread.with_user_message("second question")
        turnwire.run(asked, container=container, base_url=server.base_url, api_key="k")
    return first, [seen.json for seen in server.requests]


def test_a_configuration_update_is_recorded_and_replayed_in_its_place() -> None:
    first, (_, second) = _two_turns(UPDATE)
    [record] = first.thread.hosted_items
    assert (record.type, record.id) == ("configuration_update", "cu_1")
    assert record.view.reasoning == {"effort": "low"}
    # In its place: after the first question, before the answer that followed it; the
    # ``null`` text (an optional field) is left out.
    kinds = [(item["type"], item.get("role")) for item in second["input"]]
    assert kinds == [
        ("message", "user"),
        ("configuration_update", None),
        ("message", "assistant"),
        ("message", "user"),
    ]
    assert second["input"][1] == {
        "type": "configuration_update",
        "id": "cu_1",
        "reasoning": {"effort": "low"},
    }
    validate_body(second)


def test_a_null_optional_field_of_a_hosted_item_is_not_sent_back() -> None:
    _, (_, second) = _two_turns(MCP)
    [replayed] = [item for item in second["input"] if item.get("type") == "mcp_call"]
    assert replayed == {
        "type": "mcp_call",
        "id": "mcp_1",
        "status": "completed",
        "server_label": "docs",
        "name": "lookup",
        "arguments": "{}",
        "output": "found",
    }
    validate_body(second)


def test_a_required_field_keeps_its_null() -> None:
    # The input shape of a code interpreter call requires ``code`` and ``outputs`` (nullable):
    # leaving them out would fail the next request.
    item = {
        "type": "code_interpreter_call",
        "id": "ci_1",
        "status": "completed",
        "container_id": "c",
        "code": None,
        "outputs": None,
    }
    fields = input_item(item)
    assert fields == item
    assert input_problem(fields) is None
    validate_body({"model": "gpt-5", "input": [fields]})


@pytest.mark.parametrize(
    "item",
    # mcp_3's ``error`` is a string, which the input shape refuses: it goes as text
    # (tests/stages/test_hosted.py).
    [*(item for item in ITEMS if item["id"] != "mcp_3"), UPDATE, MCP],
    ids=lambda item: str(item["id"]),
)
def test_every_replayed_hosted_item_is_taken_by_the_official_types(item: dict[str, Any]) -> None:
    fields = input_item(item)
    assert fields is not None
    assert input_problem(fields) is None
    assert set(fields) <= set(INPUT_FIELDS[item["type"]])
    validate_body({"model": "gpt-5", "input": [fields]})
