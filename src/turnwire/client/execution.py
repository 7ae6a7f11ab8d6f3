"""Tool execution: a run's tool calls run in order, and its approval decisions recorded.

Each call runs through the :class:`~turnwire.client.tools.ToolExecutor` inside its telemetry
span, between a ``tool_started`` and a ``tool_finished`` event, and its result is recorded on
the thread (:func:`execute`; the run loop passes it, first, the calls a ``--once`` left
without a result). A client-executed tool search is answered with the tools it loads, a
sealed ``tool_search_output`` right after its response (:func:`answer_searches`). Decisions on
pending MCP approval requests become sealed hosted items before the first request
(:func:`decided_approvals`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

import msgspec

from turnwire.client.progress import (
    ProgressEvent,
    ToolFinishedEvent,
    ToolSearchEvent,
    ToolStartedEvent,
)
from turnwire.client.telemetry import Telemetry
from turnwire.client.tools import ToolExecutor
from turnwire.files.pointers import ContextAssembler
from turnwire.model.approvals import ApprovalDecision, approval_records
from turnwire.model.hosted import replay, seal, thread_anchor
from turnwire.model.records import HostedItem, Thread, ToolCall
from turnwire.model.tool_search import ToolSearch, loaded_names, output_record, search_paths

__all__ = ["answer_searches", "decided_approvals", "execute"]

logger = logging.getLogger("turnwire")


def decided_approvals(
    thread: Thread,
    approvals: Mapping[str, ApprovalDecision] | None,
    *,
    container: Any,
    clock: Callable[[], datetime],
) -> tuple[HostedItem, ...]:
    """The ``mcp_approval_response`` records of ``approvals``, sealed for replay (see
    :func:`turnwire.model.approvals.approval_records`)."""
    nonce, anchor = container.envelope_nonce(), thread_anchor(thread)
    return tuple(
        seal(record, nonce, anchor) for record in approval_records(thread, approvals or {}, clock())
    )


async def execute(
    thread: Thread,
    calls: list[ToolCall],
    on_tool_result: Callable[[ToolCall], None] | None,
    files: ContextAssembler,
    *,
    executor: ToolExecutor,
    telemetry: Telemetry,
    emit: Callable[[ProgressEvent], None],
) -> Thread:
    """Run ``calls`` in order; ``thread`` with their results recorded."""
    done: dict[str, ToolCall] = {}
    for call in calls:
        emit(ToolStartedEvent(call=call))
        with telemetry.tool(call) as span:
            finished = await executor.execute(call, thread, files=files)
            telemetry.ran(span, finished)
        done[call.id] = finished
        emit(ToolFinishedEvent(call=finished))
        if on_tool_result is not None:
            on_tool_result(finished)
    tool_calls = tuple(done.get(c.id, c) if c.result is None else c for c in thread.tool_calls)
    return msgspec.structs.replace(thread, tool_calls=tool_calls)


async def answer_searches(
    thread: Thread,
    indexes: Sequence[int],
    declared: Sequence[Mapping[str, Any]],
    *,
    executor: ToolExecutor,
    container: Any,
    emit: Callable[[ProgressEvent], None],
) -> Thread:
    """``thread`` with the client-executed tool searches at ``indexes`` (of its hosted
    items) answered, in order: each by what :meth:`ToolExecutor.search
    <turnwire.client.tools.ToolExecutor.search>` loads from the tools the request
    ``declared`` (plain JSON, as sent), recorded as a sealed ``tool_search_output``, and
    reported to ``emit`` (a :class:`~turnwire.client.progress.ToolSearchEvent`).

    A search whose call is not replayed as an item (not recorded by this deployment in this
    thread: no valid seal, see :func:`turnwire.model.hosted.replay`) goes as text and is not
    answered: its answer, sent as an item, would pair with no call. A WARNING says so.
    """
    nonce, anchor = container.envelope_nonce(), thread_anchor(thread)
    hosted_replay = container.settings().render.hosted_replay
    for index in indexes:
        call = thread.hosted_items[index]
        if replay(call, hosted_replay, nonce, anchor).fields is None:
            logger.warning(
                "the client-executed tool search %s (hosted item %d) is sent as text (not "
                "recorded by this deployment in this thread, or not of the API's input shape), "
                "so it is not answered",
                call.id,
                index,
                extra={"kind": "tool-search"},
            )
            continue
        arguments = call.item.get("arguments")
        search = ToolSearch(
            call_id=call.item.get("call_id"),
            arguments=arguments,
            paths=search_paths(arguments),
            declared=tuple(dict(tool) for tool in declared),
        )
        tools = await executor.search(search)
        record = seal(output_record(thread, call, tools), nonce, anchor)
        thread = msgspec.structs.replace(thread, hosted_items=(*thread.hosted_items, record))
        emit(ToolSearchEvent(call_id=search.call_id, loaded=loaded_names(tools)))
    return thread
