"""``InputItems``: a rendered input read as the tuple of its items, whatever its pieces, and
never changed by the growth of the chunk list it was made from."""

from __future__ import annotations

import pickle
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turnwire.rendering._incremental.chunked import CHUNK, InputItems, enc_hook, grow_chunks
from turnwire.rendering._incremental.identity import first_difference

SIZES = st.integers(0, 3 * CHUNK + 7)
INDEX = st.integers(-3 * CHUNK - 20, 3 * CHUNK + 20)


def _made(size: int) -> tuple[InputItems, tuple[Any, ...]]:
    items = [object() for _ in range(size)]
    return grow_chunks([], items), tuple(items)


@settings(max_examples=150, deadline=None)
@given(
    size=SIZES,
    at=INDEX,
    start=st.none() | INDEX,
    stop=st.none() | INDEX,
    step=st.sampled_from([None, 1, 2, 3, -1, -2]),
)
def test_reads_as_the_tuple_of_its_items(
    size: int, at: int, start: int | None, stop: int | None, step: int | None
) -> None:
    chunked, plain = _made(size)
    assert len(chunked) == size
    assert list(chunked) == list(plain)
    assert list(reversed(chunked)) == list(reversed(plain))
    assert chunked[start:stop:step] == plain[start:stop:step]
    assert type(chunked[start:stop:step]) is tuple
    if -size <= at < size:
        assert chunked[at] is plain[at]
        assert plain[at] in chunked
        assert chunked.index(plain[at]) == at % size
    else:
        with pytest.raises(IndexError):
            chunked[at]
    assert chunked == plain and plain == chunked
    assert not chunked.__ne__(plain)
    assert hash(chunked) == hash(plain)
    assert chunked.__add__(("x",)) == (*plain, "x") and chunked.__radd__(("x",)) == ("x", *plain)


def test_full_chunks_then_a_tail() -> None:
    chunked, plain = _made(2 * CHUNK + 5)
    chunks, tail = chunked.pieces
    assert [len(chunk) for chunk in chunks] == [CHUNK, CHUNK] and len(tail) == 5
    assert chunked.with_tail(("end",)) == (*plain, "end")
    assert chunked != plain[:-1] and chunked != list(plain) and chunked != InputItems()


def test_an_input_made_earlier_never_changes() -> None:
    """The chunk list is cut back and grown by the next sweep; what was handed out before
    keeps its items (the chunks are tuples, shared, never changed)."""
    out = [object() for _ in range(3 * CHUNK + 10)]
    chunks: list[tuple[Any, ...]] = []
    first = grow_chunks(chunks, out)
    seen = tuple(first)
    del out[CHUNK + 3 :], chunks[(CHUNK + 3) // CHUNK :]  # as a resumed sweep cuts back
    out += [object() for _ in range(2 * CHUNK)]
    second = grow_chunks(chunks, out)
    assert tuple(first) == seen and len(first) == len(seen)
    assert tuple(second) == tuple(out)
    assert second.pieces[0][0] is first.pieces[0][0]  # the unchanged chunk, shared
    assert first_difference(first, second) == CHUNK + 3


def test_replacing_copies_one_piece() -> None:
    chunked, plain = _made(2 * CHUNK + 5)
    for at in (0, CHUNK + 1, 2 * CHUNK + 4):
        changed = chunked.replacing(at, "new")
        assert changed == (*plain[:at], "new", *plain[at + 1 :])
        assert (
            sum(a is not b for a, b in zip(changed.pieces[0], chunked.pieces[0], strict=True)) <= 1
        )
    assert chunked == plain
    with pytest.raises(IndexError):
        chunked.replacing(len(plain), "new")


def test_encodes_as_its_tuple_through_the_hook() -> None:
    items = [{"n": n} for n in range(CHUNK + 3)]
    chunked = grow_chunks([], items)
    encoder = msgspec.json.Encoder(enc_hook=enc_hook)
    assert encoder.encode(chunked) == msgspec.json.encode(items)
    with pytest.raises(TypeError):
        msgspec.json.encode(chunked)  # not by msgspec alone: a render's bytes are in .body
    with pytest.raises(TypeError):
        encoder.encode(object())


def test_pickles_and_shows_its_items() -> None:
    chunked = grow_chunks([], list(range(CHUNK + 2)))
    again = pickle.loads(pickle.dumps(chunked))
    assert again == chunked and type(again) is InputItems
    assert repr(InputItems((), (1, 2))) == "InputItems((1, 2))"
