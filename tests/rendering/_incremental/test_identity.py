"""``first_difference``: the pointer comparison agrees with the element-by-element scan, on
tuples and on chunked inputs."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from turnwire.rendering._incremental import identity as _identity
from turnwire.rendering._incremental.chunked import CHUNK, grow_chunks
from turnwire.rendering._incremental.identity import first_difference


def _expected(old: Any, new: Any, start: int, stop: int | None) -> int:
    limit = min(len(old), len(new))
    stop = limit if stop is None else min(stop, limit)
    for index in range(start, stop):
        if old[index] is not new[index]:
            return index
    return max(start, stop) if start < stop else stop


POOL = tuple(object() for _ in range(8))


@settings(max_examples=300, deadline=None)
@given(
    size=st.integers(0, 700),
    extra=st.integers(0, 5),
    changes=st.lists(st.integers(0, 699), max_size=4),
    start=st.integers(0, 720),
    stop=st.none() | st.integers(0, 720),
)
def test_agrees_with_a_scan(
    size: int, extra: int, changes: list[int], start: int, stop: int | None
) -> None:
    old = tuple(POOL[i % 8] for i in range(size))
    items = list(old) + [object() for _ in range(extra)]
    for position in changes:
        if position < size:
            items[position] = object()
    new = tuple(items)
    assert first_difference(old, new, start, stop) == _expected(old, new, start, stop)
    assert first_difference(list(old), items, start, stop) == _expected(old, new, start, stop)


def test_equal_but_not_identical_items_differ() -> None:
    old = tuple([1000 + i] for i in range(500))
    new = tuple([1000 + i] for i in range(500))
    assert old == new
    assert first_difference(old, new) == 0
    same = old[:250] + new[250:]
    assert first_difference(old, same) == 250


def test_the_fast_path_is_in_use_here() -> None:
    """On this CPython the pointer comparison loaded and passed its self-check (so the
    property test above exercised it, not only the fallback)."""
    assert _identity._memcmp is not None
    assert _identity._self_check()


def test_subclasses_take_the_scan() -> None:
    class Items(tuple[Any, ...]):
        pass

    things = tuple(object() for _ in range(200))
    changed = Items((*things[:150], object(), *things[151:]))
    assert first_difference(things, changed) == 150


@settings(max_examples=200, deadline=None)
@given(
    size=st.integers(0, 2 * CHUNK + 40),
    cut=st.integers(0, 2 * CHUNK + 40),
    extra=st.integers(0, CHUNK + 5),
    changes=st.lists(st.integers(0, 2 * CHUNK + 40), max_size=3),
    start=st.integers(0, 3 * CHUNK),
    stop=st.none() | st.integers(0, 3 * CHUNK),
    as_tuple=st.sampled_from(["", "old", "new"]),
)
def test_agrees_with_a_scan_on_chunked_inputs(
    size: int,
    cut: int,
    extra: int,
    changes: list[int],
    start: int,
    stop: int | None,
    as_tuple: str,
) -> None:
    """Two inputs made of chunks (the second grown from the first's chunk list cut back, as a
    resumed sweep does), or one of them a tuple: the same answer as the scan."""
    out = [POOL[i % 8] if i % 3 else object() for i in range(size)]
    chunks: list[tuple[Any, ...]] = []
    old: Any = grow_chunks(chunks, out)
    cut = min(cut, size)
    del out[cut:], chunks[cut // CHUNK :]
    out += [object() for _ in range(extra)]
    for position in changes:
        if position < len(out):
            out[position] = object()
    new: Any = grow_chunks(chunks, out)
    if as_tuple == "old":
        old = tuple(old)
    elif as_tuple == "new":
        new = tuple(new)
    expected = _expected(tuple(old), tuple(new), start, stop)
    assert first_difference(old, new, start, stop) == expected
    assert first_difference(new, old, start, stop) == _expected(tuple(new), tuple(old), start, stop)
