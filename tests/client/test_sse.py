"""The SSE decoder: WHATWG line endings, fields, comments, the final event without a blank line."""

from __future__ import annotations

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
