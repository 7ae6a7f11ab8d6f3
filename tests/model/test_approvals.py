"""Which MCP approval requests are pending, and where a decision goes in the timeline."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

import turnwire
from turnwire.errors import ApprovalNotPendingError
from turnwire.model.approvals import Approval, approval_records, pending_approvals, with_approvals


def _item(kind: str, item_id: str | None, second: int, seq: int = 0, **fields) -> dict:
    item = {"type": kind, **({"id": item_id} if item_id else {}), **fields}
    return {
        "id": item_id or f"rec_{second}_{seq}",
        "type": kind,
        "item": item,
        "created_at": f"2026-01-01T10:00:{second:02d}Z",
        "seq": seq,
    }


def _thread(*hosted: dict) -> turnwire.Thread:
    return turnwire.load_thread({"version": 1, "hosted_items": list(hosted)})


REQUEST = {"server_label": "wiki", "name": "ask", "arguments": "{}"}
EARLY = datetime(2025, 1, 1, tzinfo=UTC)


def test_a_request_is_pending_until_a_response_or_a_call_names_it():
    thread = _thread(
        _item("mcp_approval_request", "mcpr_2", 5, **REQUEST),
        _item("mcp_approval_request", "mcpr_1", 1, **REQUEST),
        _item("mcp_approval_request", "mcpr_3", 6, **REQUEST),
        _item("mcp_approval_response", None, 7, approval_request_id="mcpr_3", approve=True),
        _item("mcp_call", "mcp_1", 8, approval_request_id="mcpr_2", **REQUEST),
    )
    assert [r.id for r in pending_approvals(thread)] == ["mcpr_1"]


def test_decisions_go_after_every_record_even_with_a_clock_behind_them():
    thread = _thread(
        _item("mcp_approval_request", "mcpr_1", 1, **REQUEST),
        _item("mcp_approval_request", "mcpr_2", 9, 3, **REQUEST),
    )
    made = approval_records(
        thread, {"mcpr_2": False, "mcpr_1": Approval(approve=True, reason="ok")}, EARLY
    )
    # After the last record, and never on its timestamp (that would make it part of its
    # response): one microsecond later when the clock is behind.
    assert [(r.created_at.second, r.created_at.microsecond, r.seq) for r in made] == [
        (9, 1, 0),
        (9, 1, 1),
    ]
    assert [r.item for r in made] == [
        {"type": "mcp_approval_response", "approval_request_id": "mcpr_2", "approve": False},
        {
            "type": "mcp_approval_response",
            "approval_request_id": "mcpr_1",
            "approve": True,
            "reason": "ok",
        },
    ]
    assert len({r.id for r in made}) == 2 and all(r.id.startswith("mcpa_") for r in made)
    now = datetime(2027, 1, 1, tzinfo=UTC)
    assert approval_records(thread, {"mcpr_1": True}, now)[0].created_at == now
    extended = with_approvals(thread, {"mcpr_1": True}, now)
    assert [r.id for r in pending_approvals(extended)] == ["mcpr_2"]
    assert with_approvals(thread, None, now) is thread


def test_a_decision_on_anything_but_a_pending_request_is_refused():
    thread = _thread(
        _item("mcp_approval_request", "mcpr_1", 1, **REQUEST),
        _item("mcp_list_tools", "mcpl_1", 0, server_label="wiki", tools=[]),
    )
    for wrong in ("mcpl_1", "nope"):
        with pytest.raises(ApprovalNotPendingError, match="not an MCP approval request"):
            approval_records(thread, {"mcpr_1": True, wrong: True}, EARLY)
    with pytest.raises(ApprovalNotPendingError, match=r"\(pending: none\)"):
        approval_records(_thread(), {"mcpr_1": True}, EARLY)
