"""Helpers to read the recorded streams in tests/data/conformance/streams, and to build small
streamed answers by hand."""

from __future__ import annotations

import json
from pathlib import Path

from turnwire.client.sse import SSEDecoder
from turnwire.wire.accumulator import ResponseAccumulator
from turnwire.wire.events import decode_event
from turnwire.wire.response import Generation

from ..conftest import CONFORMANCE

STREAMS = sorted((CONFORMANCE / "streams").glob("*.sse")) + sorted(
    (CONFORMANCE / "streams" / "jsonl").glob("*.jsonl")
)


def wire_bytes(path: Path) -> bytes:
    """The stream as SSE bytes (data-only .jsonl files framed as SSE)."""
    raw = path.read_bytes()
    if path.suffix == ".jsonl":
        lines = [line for line in raw.split(b"\n") if line.strip()]
        return b"".join(b"data: " + line + b"\n\n" for line in lines)
    return raw


def payloads(path: Path) -> list[dict]:
    """Every event's JSON payload, straight from the file (the reference for assertions)."""
    raw = wire_bytes(path).decode()
    out = []
    for block in raw.split("\n\n"):
        data = [line[6:] for line in block.split("\n") if line.startswith("data: ")]
        if data:
            out.append(json.loads("\n".join(data)))
    return out


def parse(data: bytes, chunk: int) -> list[Generation]:
    decoder, accumulator = SSEDecoder(), ResponseAccumulator()
    generations: list[Generation] = []
    for start in range(0, len(data), chunk):
        events = decoder.feed(data[start : start + chunk])
        generations += accumulator.feed(decode_event(e.data) for e in events)
    generations += accumulator.feed(decode_event(e.data) for e in decoder.close())
    tail = accumulator.close()
    if tail is not None:
        generations.append(tail)
    return generations


# Hand-built answers: a structured-output schema and the streams that answer it.

INVOICE_SCHEMA = {
    "title": "invoice",
    "type": "object",
    "properties": {
        "number": {"type": "string"},
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "price": {"type": "number"}},
                "required": ["name", "price"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["number", "items"],
    "additionalProperties": False,
}


def sse(*events: dict) -> bytes:
    """Events as a server sends them: ``data:`` frames."""
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)


def message_item(text: str, msg_id: str = "msg_1") -> dict:
    """A finished assistant message of ``text``, as an output item."""
    return {
        "type": "message",
        "id": msg_id,
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def items_answer(
    *items: dict, response_id: str = "resp_1", model: str = "gpt-5", added: bool = False
) -> bytes:
    """A streamed answer of finished ``items`` alone: created, each item done (``added``: each
    announced by ``output_item.added`` first), completed."""
    response = {"id": response_id, "model": model}
    kinds = (
        ("response.output_item.added", "response.output_item.done")
        if added
        else ("response.output_item.done",)
    )
    return sse(
        {"type": "response.created", "response": {**response, "status": "in_progress"}},
        *(
            {"type": kind, "output_index": index, "item": item}
            for index, item in enumerate(items)
            for kind in kinds
        ),
        {"type": "response.completed", "response": {**response, "status": "completed"}},
    )


def text_answer(text: str, *, msg_id: str = "msg_1", status: str = "completed") -> bytes:
    """A streamed answer with one assistant message of ``text``, in two deltas."""
    half = len(text) // 2
    item = {"type": "message", "id": msg_id, "role": "assistant", "status": "completed"}
    part = {"type": "output_text", "text": text, "annotations": []}
    terminal = "response.completed" if status == "completed" else "response.incomplete"
    response = {"id": "resp_1", "status": status, "model": "gpt-4o"}
    if status == "incomplete":
        response["incomplete_details"] = {"reason": "max_output_tokens"}
    return sse(
        {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}},
        {"type": "response.output_item.added", "output_index": 0, "item": {**item, "content": []}},
        {"type": "response.output_text.delta", "output_index": 0, "delta": text[:half]},
        {"type": "response.output_text.delta", "output_index": 0, "delta": text[half:]},
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {**item, "content": [part]},
        },
        {"type": terminal, "response": response},
    )


def call_answer(name: str, arguments: str, *, call_id: str, item_id: str) -> bytes:
    """A streamed answer that is one function call."""
    item = {
        "type": "function_call",
        "id": item_id,
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }
    response = {"id": f"resp_{item_id}", "status": "completed", "model": "gpt-4o"}
    return sse(
        {"type": "response.created", "response": {"id": response["id"], "status": "in_progress"}},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**item, "arguments": ""},
        },
        {"type": "response.function_call_arguments.delta", "output_index": 0, "delta": arguments},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": response},
    )


def refusal_answer(text: str) -> bytes:
    """A streamed refusal of ``text``."""
    return sse(
        {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []},
        },
        {"type": "response.refusal.delta", "output_index": 0, "delta": text},
        {"type": "response.completed", "response": {"id": "resp_1", "status": "completed"}},
    )


# A thread with one tool, get_weather, and a question that calls for it.
WEATHER_THREAD = {
    "version": 1,
    "model": "gpt-4o-mini",
    "tools": [
        {
            "name": "get_weather",
            "description": "Weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {"location": {"type": "string"}},
                "required": ["location"],
            },
        }
    ],
    "messages": [
        {
            "id": "u1",
            "role": "user",
            "content": "Weather in Paris?",
            "created_at": "2026-01-01T10:00:00Z",
        }
    ],
}
