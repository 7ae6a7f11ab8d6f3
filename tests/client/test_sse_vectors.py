"""The SSE decoder against the peers' test vectors (tests/data/sse_vectors/vectors.json).

Every case runs on its source's own chunks, re-split at 1, 2, 3, 7 and 4096 bytes, and at one
byte with an empty chunk after every byte (an empty read must change nothing).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from turnwire.client.sse import ServerSentEvent, SSEDecoder

VECTORS = json.loads(
    (Path(__file__).parents[1] / "data" / "sse_vectors" / "vectors.json").read_text("utf-8")
)
CASES = VECTORS["cases"]
SPLITS = ["as-sent", 1, 2, 3, 7, 4096, "1+empty"]


def chunk_bytes(chunk: str | dict[str, str]) -> bytes:
    return bytes.fromhex(chunk["hex"]) if isinstance(chunk, dict) else chunk.encode("utf-8")


def split(chunks: list[bytes], how: str | int) -> list[bytes]:
    if how == "as-sent":
        return chunks
    body = b"".join(chunks)
    if how == "1+empty":
        return [part for byte in body for part in (bytes([byte]), b"")]
    assert isinstance(how, int)
    return [body[i : i + how] for i in range(0, len(body), how)]


def decode(chunks: list[bytes], *, close: bool) -> list[ServerSentEvent]:
    decoder = SSEDecoder()
    events: list[ServerSentEvent] = []
    for chunk in chunks:
        events += decoder.feed(chunk)
    return events + decoder.close() if close else events


def observed(event: ServerSentEvent, expected: dict[str, Any]) -> dict[str, Any]:
    """The fields the source asserted, in the vectors' terms."""
    seen: dict[str, Any] = {}
    if "event" in expected:
        seen["event"] = event.event
    if "data" in expected:
        seen["data"] = event.data.decode("utf-8")
    if "json" in expected:
        seen["json"] = json.loads(event.data)
    if "id" in expected:
        seen["id"] = "" if event.id is None else event.id  # None: nothing ever set the buffer
    if "retry" in expected:
        seen["retry"] = event.retry
    return seen


def wanted(expected: dict[str, Any]) -> dict[str, Any]:
    if expected.get("event", "") is None:
        return {**expected, "event": "message"}  # no event field: the WHATWG default type
    return expected


@pytest.mark.parametrize("how", SPLITS, ids=str)
@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_vector(case: dict[str, Any], how: str | int) -> None:
    expected = case.get("expected_turnwire", case["expected"])
    chunks = split([chunk_bytes(c) for c in case["chunks"]], how)
    events = decode(chunks, close=case.get("close", True))
    assert len(events) == len(expected), events
    assert [observed(e, x) for e, x in zip(events, expected, strict=True)] == [
        wanted(x) for x in expected
    ]


def test_every_source_is_attributed_and_every_difference_explained() -> None:
    sources = VECTORS["sources"]
    for case in CASES:
        assert case["source"] in sources
        if "expected_turnwire" in case:
            assert case["why"] and case["expected_turnwire"] != case["expected"]
    for source in sources.values():
        assert source["licence"] in ("MIT", "Apache-2.0") and source["path"]
    assert {case["source"] for case in CASES} == set(sources)
