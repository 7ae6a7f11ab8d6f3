"""Hosted items of every type the API documents, as the server gives them (for the fuzzers),
and the helpers the hosted-item tests share: a record builder, the default stage called with a
relay of the built-in sub-stages, a sealed copy."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

from turnwire.config.nonce import EnvelopeNonce
from turnwire.model.hosted import seal
from turnwire.model.records import HostedItem
from turnwire.stages.envelopes import render_untrusted_content
from turnwire.stages.hosted import render_hosted_item, render_hosted_item_text

ITEMS = [
    {
        "id": "ws_1",
        "type": "web_search_call",
        "status": "completed",
        "action": {
            "type": "search",
            "query": "q",
            "queries": ["q"],
            "sources": [{"type": "url", "url": "https://a"}],
        },
    },
    {
        "id": "ws_2",
        "type": "web_search_call",
        "status": "completed",
        "action": {"type": "open_page", "url": "https://a"},
    },
    {
        "id": "ws_3",
        "type": "web_search_call",
        "status": "completed",
        "action": {"type": "find_in_page", "url": "https://a", "pattern": "x"},
    },
    {
        "id": "ws_4",
        "type": "web_search_call",
        "status": "completed",
        "action": {"type": "open_page", "url": None},
    },
    {
        "id": "fs_1",
        "type": "file_search_call",
        "status": "completed",
        "queries": ["q"],
        "results": None,
    },
    {
        "id": "fs_2",
        "type": "file_search_call",
        "status": "completed",
        "queries": ["q"],
        "results": [
            {
                "file_id": "f",
                "filename": "a.txt",
                "score": 0.5,
                "text": "t",
                "attributes": {"k": "v"},
            }
        ],
    },
    {
        "id": "ci_1",
        "type": "code_interpreter_call",
        "status": "completed",
        "container_id": "c",
        "code": "1",
        "outputs": None,
    },
    {
        "id": "ci_2",
        "type": "code_interpreter_call",
        "status": "completed",
        "container_id": "c",
        "code": None,
        "outputs": [{"type": "logs", "logs": "2"}, {"type": "image", "url": "https://i"}],
    },
    {
        "id": "ig_1",
        "type": "image_generation_call",
        "status": "completed",
        "result": "QUJD",
        "action": "generate",
        "background": "opaque",
        "output_format": "png",
        "quality": "high",
        "revised_prompt": "a cat",
        "size": "1024x1024",
    },
    {"id": "ig_2", "type": "image_generation_call", "status": "failed", "result": None},
    {
        "id": "mcp_1",
        "type": "mcp_call",
        "status": "completed",
        "approval_request_id": None,
        "arguments": "{}",
        "error": None,
        "name": "n",
        "output": "o",
        "server_label": "s",
    },
    {
        "id": "mcp_2",
        "type": "mcp_call",
        "status": "failed",
        "approval_request_id": None,
        "arguments": "{}",
        "error": {"type": "mcp_protocol_error", "code": 1, "message": "m"},
        "name": "n",
        "output": None,
        "server_label": "s",
    },
    {
        "id": "mcp_3",
        "type": "mcp_call",
        "status": "failed",
        "arguments": "{}",
        "error": "boom",
        "name": "n",
        "server_label": "s",
    },
    {
        "id": "mcpl_1",
        "type": "mcp_list_tools",
        "server_label": "s",
        "tools": [
            {
                "name": "t",
                "input_schema": {"type": "object"},
                "description": "d",
                "annotations": {"read_only": False},
            }
        ],
        "error": None,
    },
    {
        "id": "mcpr_1",
        "type": "mcp_approval_request",
        "server_label": "s",
        "name": "n",
        "arguments": "{}",
    },
    {
        "id": "mcpa_1",
        "type": "mcp_approval_response",
        "approval_request_id": "mcpr_1",
        "approve": True,
        "reason": None,
    },
    {
        "id": "tsc_1",
        "type": "tool_search_call",
        "status": "completed",
        "arguments": {"paths": ["x"]},
        "call_id": None,
        "execution": "server",
        "created_by": "me",
    },
    {
        "id": "tso_1",
        "type": "tool_search_output",
        "status": "completed",
        "call_id": None,
        "execution": "server",
        "created_by": "me",
        "tools": [
            {
                "type": "function",
                "defer_loading": True,
                "description": "d",
                "name": "x",
                "parameters": {"type": "object", "properties": {}},
                "strict": True,
            }
        ],
    },
    {"id": "cmp_1", "type": "compaction", "encrypted_content": "gAAA", "created_by": "u"},
    {
        "id": "at_1",
        "type": "additional_tools",
        "role": "developer",
        "tools": [{"type": "function", "name": "x", "parameters": {}, "strict": True}],
    },
    {"id": "pg_1", "type": "program", "call_id": "c1", "code": "x()", "fingerprint": "fp"},
    {
        "id": "pgo_1",
        "type": "program_output",
        "call_id": "c1",
        "result": "r",
        "status": "completed",
    },
]


N = EnvelopeNonce("k")


T = datetime(2026, 1, 1, tzinfo=UTC)


def hosted(item: dict, **extra: object) -> HostedItem:
    return HostedItem(id=item.get("id", "x_1"), type=item["type"], item=item, created_at=T, **extra)


class Relay(SimpleNamespace):
    """The two sub-stages the defaults reach through ``stages``."""

    def __init__(self) -> None:
        super().__init__(
            render_untrusted_content=render_untrusted_content,
            render_hosted_item_text=lambda hosted_item: render_hosted_item_text(
                hosted_item=hosted_item, envelope_nonce=N, stages=self
            ),
        )


ANCHOR = '["message","m1","2026-01-01T10:00:00+00:00",0]'
"""The thread the helpers seal for and render in."""


def replay(
    record: HostedItem,
    mode: str = "sealed",
    warnings: list | None = None,
    anchor: str = ANCHOR,
) -> tuple:
    said = warnings if warnings is not None else []
    return render_hosted_item(
        hosted_item=record,
        hosted_replay=mode,
        envelope_nonce=N,
        thread_anchor=anchor,
        warn=said.append,
        stages=Relay(),
    )


def sealed(record: HostedItem, anchor: str = ANCHOR) -> HostedItem:
    return seal(record, N, anchor)


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
