"""One event per chunk, as a live server flushes them: the decoder's shortcut for a chunk that
is one whole usual event gives what the line-by-line rule gives, on any mix of chunks."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from turnwire.client.sse import ServerSentEvent, SSEDecoder
from turnwire.errors import StreamError

text = st.text(
    alphabet=st.characters(blacklist_characters="\r\n\0", blacklist_categories=("Cs",)),
    max_size=12,
)
usual = st.one_of(
    st.builds(
        lambda name, data: b"event: " + name + b"\ndata: " + data,
        text.map(str.encode),
        text.map(str.encode),
    ),
    st.builds(lambda data: b"data: " + data, text.map(str.encode)),
)
unusual = st.one_of(
    st.sampled_from(
        [
            b"id: 7",
            b"retry: 10\ndata: r",
            b": comment\ndata: c",
            b"data: 1\ndata: 2",
            b"data:x",
            b"event:y\ndata: z",
            b"data: a\nevent: b",
            b"event: only",
            b"data",
            b"",
        ]
    ),
    text.map(lambda t: b"data: " + t.encode() + b"\n\ndata: second"),
)
# Each chunk: one block and its blank line, or a piece cut anywhere.
chunks = st.lists(
    st.one_of(
        usual.map(lambda block: block + b"\n\n"),
        unusual.map(lambda block: block + b"\n\n"),
        st.binary(max_size=6).filter(lambda b: b"\r" not in b),
        st.sampled_from([b"\xef\xbb", b"\xef\xbb\xbf", b"\n", b"data: x", b"\r\n"]),
    ),
    max_size=25,
)


def line_by_line(stream: bytes) -> list[ServerSentEvent]:
    """The rule: the same bytes one at a time (no whole event in any chunk)."""
    decoder = SSEDecoder()
    events: list[ServerSentEvent] = []
    for byte in range(len(stream)):
        events += decoder.feed(stream[byte : byte + 1])
    return events + decoder.close()


@given(chunks)
def test_one_event_chunks_decode_as_the_line_by_line_rule(pieces):
    decoder = SSEDecoder()
    events: list[ServerSentEvent] = []
    for piece in pieces:
        events += decoder.feed(piece)
    events += decoder.close()
    assert events == line_by_line(b"".join(pieces))
    data = SSEDecoder()
    datas: list[bytes] = []
    for piece in pieces:
        datas += data.feed_data(piece)
    assert datas + data.close_data() == [event.data for event in events]


def test_the_usual_one_event_chunks():
    decoder = SSEDecoder()
    assert decoder.feed_data(b"event: a\ndata: {}\n\n") == [b"{}"]  # the stream's first bytes
    assert decoder.feed_data(b"event: b\ndata: 1\n\n") == [b"1"]
    assert decoder.feed_data(b"data: 2\n\n") == [b"2"]
    assert decoder.feed(b"id: 9\n\n") == []
    assert decoder.feed(b"event: c\ndata: 3\n\n") == [ServerSentEvent(b"3", "c", "9")]
    assert decoder.feed(b"data: 4\n\n") == [ServerSentEvent(b"4", "message", "9")]
    assert decoder.feed_data(b"event: d\n") == []  # an event begun: no shortcut till it ends
    assert decoder.feed_data(b"data: 5\n\n") == [b"5"]
    assert decoder.close_data() == []


def test_the_bound_counts_what_an_eventless_chunk_left_held():
    """A chunk that completes no event keeps its bytes counted (the rule's bound), and a whole
    event in the next chunk is held to what is left."""
    decoder = SSEDecoder(max_event_bytes=40)
    assert decoder.feed_data(b"data: 1\n\n") == [b"1"]
    assert decoder.feed_data(b"id: 12345\n\n") == []
    with pytest.raises(StreamError, match="larger than 40 bytes"):
        decoder.feed_data(b"data: " + b"x" * 22 + b"\n\n")
    fresh = SSEDecoder(max_event_bytes=40)
    fresh.feed_data(b"data: 1\n\n")
    assert fresh.feed_data(b"data: " + b"x" * 22 + b"\n\n") == [b"x" * 22]
