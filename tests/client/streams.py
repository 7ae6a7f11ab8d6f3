"""Helpers to read the recorded streams in tests/data/conformance/streams."""

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
