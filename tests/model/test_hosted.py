"""Hosted items: the typed views, the record's check of its item, and the input shape of every
recorded item."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from turnwire.model.hosted import (
    INPUT_FIELDS,
    CodeInterpreterCall,
    Compaction,
    McpCall,
    WebSearchCall,
    input_item,
)
from turnwire.model.records import HostedItem

T = datetime(2026, 1, 1, tzinfo=UTC)


def hosted(item: dict, **extra: object) -> HostedItem:
    return HostedItem(id=item.get("id", "x_1"), type=item["type"], item=item, created_at=T, **extra)


WEB = {
    "id": "ws_1",
    "type": "web_search_call",
    "status": "completed",
    "action": {
        "type": "search",
        "query": "weather",
        "sources": [{"type": "url", "url": "https://w.example"}],
    },
}


COMPACTION = {"id": "cmp_1", "type": "compaction", "encrypted_content": "gAAA", "created_by": "x"}


def test_every_replayable_type_has_a_view():
    for kind in INPUT_FIELDS:
        record = hosted({"id": "x_1", "type": kind})
        assert not isinstance(record.view, dict), kind


def test_views_read_the_known_types_and_fall_back_to_the_mapping():
    assert isinstance(hosted(WEB).view, WebSearchCall)
    assert hosted(WEB).view.query == "weather"
    code = {"id": "ci_1", "type": "code_interpreter_call", "code": "1+1", "outputs": None}
    assert hosted(code).view == CodeInterpreterCall(id="ci_1", code="1+1")
    assert hosted(COMPACTION).view == Compaction(id="cmp_1", encrypted_content="gAAA")
    call = {"id": "mcp_1", "type": "mcp_call", "server_label": "wiki", "name": "ask"}
    assert hosted(call).view.server_label == "wiki"
    assert isinstance(hosted(call).view, McpCall)
    future = {"id": "n_1", "type": "new_thing", "x": 1}
    assert hosted(future).view == future
    bad = {"id": "ws_2", "type": "web_search_call", "action": "not an object"}
    assert hosted(bad).view == bad  # a shape the view cannot read stays raw


def test_the_record_checks_its_item():
    with pytest.raises(ValueError, match="not its `type`"):
        HostedItem(id="ws_1", type="web_search_call", item={"type": "mcp_call"}, created_at=T)
    with pytest.raises(ValueError, match="not its `id`"):
        HostedItem(id="ws_1", type="web_search_call", item={**WEB, "id": "ws_2"}, created_at=T)


def test_every_recorded_hosted_item_fits_its_input_shape():
    import json as json_

    from turnwire.model.hosted import input_problem

    from ..conftest import CONFORMANCE

    seen = 0
    for path in sorted((CONFORMANCE / "streams").glob("*.sse")):
        for line in path.read_text().splitlines():
            if not line.startswith("data: "):
                continue
            event = json_.loads(line[6:])
            item = event.get("item") if event.get("type") == "response.output_item.done" else None
            fields = input_item(item) if isinstance(item, dict) else None
            if fields is not None:
                assert input_problem(fields) is None, (path.name, fields)
                seen += 1
    for path in sorted((CONFORMANCE / "requests").glob("*.json")):
        for item in json_.loads(path.read_text()).get("input", []):
            if item.get("type") in INPUT_FIELDS:
                assert input_problem(input_item(item)) is None, (path.name, item)
                seen += 1
    assert seen >= 12
