"""The SSE decoder: WHATWG line endings, fields, comments, the final event without a blank line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from turnwire.client.sse import ServerSentEvent, SSEDecoder


def decode(data: bytes, chunk: int = 4096) -> list[ServerSentEvent]:
    decoder = SSEDecoder()
    events = []
    for start in range(0, len(data), chunk):
        events += decoder.feed(data[start : start + chunk])
    return events + decoder.close()


def test_fields_comments_and_multi_line_data():
    data = b": keep-alive\nevent: ping\nid: 7\nretry: 1500\ndata: a\ndata:b\ndata\n\n"
    assert decode(data) == [ServerSentEvent(b"a\nb\n", "ping", "7", 1500)]


def test_an_event_without_data_is_not_dispatched():
    assert decode(b"event: x\n\n: comment\n\n") == []


def test_the_last_event_without_its_blank_line_is_flushed_at_close():
    decoder = SSEDecoder()
    assert decoder.feed(b'data: {"type":"response.completed"}') == []
    assert decoder.close() == [ServerSentEvent(b'{"type":"response.completed"}')]
    assert decode(b"data: x\n") == [ServerSentEvent(b"x")]


def test_a_cr_split_from_its_lf_across_chunks_is_one_line_end():
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"\n\r") == [ServerSentEvent(b"a")]
    assert decoder.feed(b"\ndata: b\r\r") == [ServerSentEvent(b"b")]


def test_bare_cr_line_endings():
    assert decode(b"data: a\rdata: b\r\rdata: c\r\r") == [
        ServerSentEvent(b"a\nb"),
        ServerSentEvent(b"c"),
    ]


def test_one_space_after_the_colon_is_dropped_and_no_more():
    assert decode(b"data:  two\n\n") == [ServerSentEvent(b" two")]


def test_a_huge_event_in_tiny_chunks():
    payload = b"x" * 200_000
    assert decode(b"data: " + payload + b"\n\n", chunk=1000) == [ServerSentEvent(payload)]


events = st.lists(
    st.tuples(
        st.sampled_from(["message", "response.output_text.delta", "error"]),
        st.lists(
            st.text(
                alphabet=st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)),
                max_size=20,
            ),
            min_size=1,
            max_size=3,
        ),
    ),
    max_size=6,
)


@given(
    events,
    st.sampled_from([b"\n", b"\r\n", b"\r"]),
    st.integers(1, 64),
    st.booleans(),
    st.booleans(),
)
def test_any_chunking_and_line_ending_gives_the_same_events(
    spec, eol, chunk, comments, final_blank
):
    parts = []
    for name, lines in spec:
        if comments:
            parts.append(b": hello" + eol)
        parts.append(b"event: " + name.encode() + eol)
        parts.extend(b"data: " + line.encode() + eol for line in lines)
        parts.append(eol)
    data = b"".join(parts)
    if not final_blank and data:
        data = data[: -len(eol)]  # the server forgot the final blank line
    expected = [ServerSentEvent("\n".join(lines).encode(), name) for name, lines in spec]
    assert decode(data, chunk) == expected


@pytest.mark.parametrize("ending", [b"\n", b"\r\n", b"\r"])
def test_one_event_may_hold_at_most_max_event_bytes(ending):
    from turnwire.errors import StreamError

    decoder = SSEDecoder(max_event_bytes=100)
    # Many small events, far more than the limit in total, pass.
    event = b"data: " + b"x" * 40 + ending + ending
    for _ in range(50):
        assert len(decoder.feed(event)) == 1
    # One line that never ends does not.
    decoder.feed(b"data: " + b"y" * 60)
    with pytest.raises(StreamError, match="an event larger than 100 bytes"):
        decoder.feed(b"y" * 60)
    # Nor do many data lines of one event that never ends.
    lines = SSEDecoder(max_event_bytes=100)
    with pytest.raises(StreamError):
        for _ in range(20):
            lines.feed(b"data: 12345678" + ending)


# ---------------------------------------------------------------- the LF-only fast path


def test_a_cr_in_an_otherwise_lf_only_chunk_is_a_line_end():
    # A block that looks like the usual "event:" + "data:" pair, but a CR ends the data line.
    assert decode(b"event: x\ndata: a\rb\n\n") == [ServerSentEvent(b"a", "x")]
    assert decode(b"event: a\ndata: 1\n\nevent: b\r\ndata: 2\r\n\r\n") == [
        ServerSentEvent(b"1", "a"),
        ServerSentEvent(b"2", "b"),
    ]


def test_an_event_boundary_split_across_chunks():
    decoder = SSEDecoder()
    assert decoder.feed(b"event: a\ndata: 1\n") == []
    assert decoder.feed(b"\nevent: b\ndata: 2\n\nevent: c\nda") == [
        ServerSentEvent(b"1", "a"),
        ServerSentEvent(b"2", "b"),
    ]
    assert decoder.feed(b"ta: 3\n") == []
    assert decoder.feed(b"\n") == [ServerSentEvent(b"3", "c")]
    assert decoder.feed(b"data: 4\n\n") == [ServerSentEvent(b"4")]
    assert decoder.close() == []


def test_blocks_the_fast_path_does_not_slice_go_line_by_line():
    data = (
        b"id: 7\n\n"  # no data: not dispatched, but the id is kept
        b"event: a\ndata: 1\n\n"
        b"\n\n\n"  # extra blank lines
        b"event: \ndata: 2\n\n"  # an empty name is the default type
        b"data: 3\nevent: b\n\n"  # the usual lines in the other order
        b"event: c\ndata: 4\ndata: 5\n\n"  # two data lines
        b"event:d\ndata:6\n\n"  # no space after the colons
        b"retry: 10\ndata\n\n"  # a field without a colon
        b": comment\ndata: 7\n\n"
    )
    expected = [
        ServerSentEvent(b"1", "a", "7"),
        ServerSentEvent(b"2", "message", "7"),
        ServerSentEvent(b"3", "b", "7"),
        ServerSentEvent(b"4\n5", "c", "7"),
        ServerSentEvent(b"6", "d", "7"),
        ServerSentEvent(b"", "message", "7", 10),
        ServerSentEvent(b"7", "message", "7", 10),
    ]
    for chunk in (len(data), 1, 5, 17):
        assert decode(data, chunk) == expected


def test_feed_data_gives_the_data_of_the_events_feed_gives():
    data = b"event: a\ndata: 1\n\ndata: 2\ndata: 3\n\nevent: b\rdata: 4\r\r: x\ndata: 5"
    for chunk in (len(data), 1, 4):
        decoder = SSEDecoder()
        datas = []
        for start in range(0, len(data), chunk):
            datas += decoder.feed_data(data[start : start + chunk])
        datas += decoder.close_data()
        assert datas == [e.data for e in decode(data, chunk)] == [b"1", b"2\n3", b"4", b"5"]
    mixed = SSEDecoder()
    assert mixed.feed_data(b"data: 1\n\ndata: 2") == [b"1"]
    assert mixed.feed(b"\n\ndata: 3\n") == [ServerSentEvent(b"2")]
    assert mixed.close_data() == [b"3"]


def test_the_bound_holds_on_the_fast_path():
    from turnwire.errors import StreamError

    decoder = SSEDecoder(max_event_bytes=100)
    with pytest.raises(StreamError):
        decoder.feed_data(b"event: x\ndata: " + b"y" * 200 + b"\n\n")
    # A whole event, then the start of one the next chunk takes over the bound.
    decoder = SSEDecoder(max_event_bytes=100)
    assert decoder.feed_data(b"data: 1\n\ndata: " + b"z" * 60) == [b"1"]
    with pytest.raises(StreamError, match="an event larger than 100 bytes"):
        decoder.feed_data(b"z" * 50)


lines = st.lists(
    st.one_of(
        st.sampled_from(
            [b"", b"data", b"data:", b"data: ", b"event: ", b": c", b"id: 3", b"retry: 9"]
        ),
        st.builds(
            lambda field, sep, value: field + sep + value.encode(),
            st.sampled_from([b"data", b"event", b"id", b"retry", b"other"]),
            st.sampled_from([b": ", b":", b":  "]),
            st.text(
                alphabet=st.characters(blacklist_characters="\r\n\0", blacklist_categories=("Cs",)),
                max_size=8,
            ),
        ),
    ),
    max_size=30,
)


@given(lines, st.integers(1, 40), st.booleans())
def test_the_fast_path_agrees_with_the_line_by_line_path(spec, chunk, final_blank):
    """LF-only whole chunks take the fast path; the same lines with CRLF ends, or LF ends one
    byte at a time, go line by line: the events are the same."""
    lf = b"".join(line + b"\n" for line in spec) + (b"\n" if final_blank else b"")
    crlf = lf.replace(b"\n", b"\r\n")
    whole = decode(lf, len(lf) or 1)
    assert whole == decode(crlf, len(crlf) or 1) == decode(lf, 1) == decode(lf, chunk)


VECTORS = json.loads(
    (Path(__file__).parents[1] / "data" / "sse_vectors" / "vectors.json").read_text("utf-8")
)


CASES = VECTORS["cases"]


SPLITS = ["as-sent", 1, 2, 3, 7, 4096, "1+empty"]


def decode_chunks(chunks: list[bytes], *, close: bool) -> list[ServerSentEvent]:
    decoder = SSEDecoder()
    events: list[ServerSentEvent] = []
    for chunk in chunks:
        events += decoder.feed(chunk)
    return events + decoder.close() if close else events


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
    events = decode_chunks(chunks, close=case.get("close", True))
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
