"""MCP approvals: the requests a thread is waiting on, and the user's decisions on them.

An MCP server declared with ``require_approval`` makes the API stop before a call and emit an
``mcp_approval_request`` item instead (recorded as a :class:`~turnwire.model.records.HostedItem`).
The
decision goes back on the next run: ``turnwire run THREAD --approve ID`` / ``--deny ID
[--reason TEXT]``, ``run(..., approvals={ID: True})``, ``Client.run(..., approvals=...)``.
Each decision becomes a hosted item of type ``mcp_approval_response``
(``{"type": "mcp_approval_response", "approval_request_id": ID, "approve": ..., "reason":
...}``, no item id: the API gives it none), placed after every record of the thread, so after
its request, with a timestamp no response's records share; it is replayed as an input item
like every hosted item, and the API then makes (or skips) the call.

A request is pending while no ``mcp_approval_response`` and no ``mcp_call`` of the thread
names it (``approval_request_id``). A decision on any other id raises
:class:`~turnwire.errors.ApprovalNotPendingError` before anything is sent.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import msgspec

from turnwire.errors import ApprovalNotPendingError
from turnwire.model.records import HostedItem, Thread, after_every_record

__all__ = [
    "APPROVAL_REQUEST",
    "APPROVAL_RESPONSE",
    "Approval",
    "ApprovalDecision",
    "approval_records",
    "pending_approvals",
    "with_approvals",
]

APPROVAL_REQUEST = "mcp_approval_request"
APPROVAL_RESPONSE = "mcp_approval_response"


class Approval(msgspec.Struct, frozen=True, kw_only=True):
    """A decision on an MCP approval request, with the reason the model reads when it is a
    denial (``reason`` is sent with an approval too, when given)."""

    approve: bool
    reason: str | None = None


ApprovalDecision = bool | Approval
"""``True`` (approve), ``False`` (deny), or an :class:`Approval` with a reason."""


def _answered(thread: Thread) -> set[str]:
    answered = set()
    for record in thread.hosted_items:
        if record.type in (APPROVAL_RESPONSE, "mcp_call"):
            request_id = record.item.get("approval_request_id")
            if isinstance(request_id, str):
                answered.add(request_id)
    return answered


def pending_approvals(thread: Thread) -> tuple[HostedItem, ...]:
    """The thread's ``mcp_approval_request`` records that no decision or call answers yet, in
    timeline order."""
    answered = _answered(thread)
    waiting = [
        record
        for record in thread.hosted_items
        if record.type == APPROVAL_REQUEST and record.id not in answered
    ]
    return tuple(sorted(waiting, key=lambda record: (record.created_at, record.seq)))


def _record_id(request_id: str) -> str:
    return "mcpa_" + hashlib.sha256(request_id.encode()).hexdigest()[:32]


def approval_records(
    thread: Thread, approvals: Mapping[str, ApprovalDecision], now: datetime
) -> tuple[HostedItem, ...]:
    """One ``mcp_approval_response`` record per decision, in the order given, each after
    every record of ``thread``.

    :raises ApprovalNotPendingError: a decision names no pending request.
    """
    if not approvals:
        return ()
    pending = {record.id for record in pending_approvals(thread)}
    for request_id in approvals:
        if request_id not in pending:
            known = any(
                r.id == request_id and r.type == APPROVAL_REQUEST for r in thread.hosted_items
            )
            why = (
                "was answered already" if known else "is not an MCP approval request of the thread"
            )
            waiting = ", ".join(sorted(pending)) or "none"
            raise ApprovalNotPendingError(
                f"cannot approve or deny {request_id!r}: it {why} (pending: {waiting}); "
                "nothing was sent",
                item_id=request_id,
                pending=tuple(sorted(pending)),
            )
    stamp = after_every_record(thread, now)
    made = []
    for seq, (request_id, decision) in enumerate(approvals.items()):
        chosen = decision if isinstance(decision, Approval) else Approval(approve=bool(decision))
        item: dict[str, Any] = {
            "type": APPROVAL_RESPONSE,
            "approval_request_id": request_id,
            "approve": chosen.approve,
        }
        if chosen.reason:
            item["reason"] = chosen.reason
        made.append(
            HostedItem(
                id=_record_id(request_id),
                type=APPROVAL_RESPONSE,
                item=item,
                created_at=stamp,
                seq=seq,
            )
        )
    return tuple(made)


def with_approvals(
    thread: Thread, approvals: Mapping[str, ApprovalDecision] | None, now: datetime
) -> Thread:
    """``thread`` with the records of ``approvals`` appended (the same thread without any).

    :raises ApprovalNotPendingError: a decision names no pending request.
    """
    made = approval_records(thread, approvals or {}, now)
    if not made:
        return thread
    return msgspec.structs.replace(thread, hosted_items=thread.hosted_items + made)
