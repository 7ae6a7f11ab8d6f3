"""``InputItems``: a rendered input, an immutable sequence kept in shared pieces.

The input of a long conversation holds over a hundred thousand items, and the next request
changes only its last few. A tuple of them built afresh for every request (and freed with the
request before it) touches every item twice, about 1 ms at 125,000 items: the largest cost
of a warm render that grew with the thread. An :class:`InputItems` is instead made of *full
chunks* (tuples of exactly :data:`CHUNK` items) and a short *tail* tuple. The sweep that
produced it keeps its chunks and hands the same tuple objects to the next request's input
(see :mod:`turnwire.rendering.sweep`), so a request makes only its tail and its tuple of
chunks, and nothing it hands out ever changes afterwards: an input stays valid for as long as
anyone holds it (a client's run holds its last request for the reasoning-free retry and the
ledger), in any thread.

To a reader it is a read-only sequence, as the tuple it replaces was: ``len``, indexes, slices
(a slice is a tuple), iteration, ``in``, ``index``, ``count``, ``==`` and ``hash`` as a tuple
of the same items, ``+`` with a tuple (a tuple). ``msgspec`` does not encode it by itself:
the body encoders of :mod:`turnwire.rendering.body` take it through :func:`enc_hook`, and
:attr:`RenderedRequest.body <turnwire.rendering.renderer.RenderedRequest.body>` holds the
exact bytes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import chain
from typing import Any, overload

__all__ = ["CHUNK", "CHUNK_SHIFT", "InputItems", "chunked_pieces", "enc_hook", "grow_chunks"]

CHUNK_SHIFT = 10
"""log2 of :data:`CHUNK`."""
CHUNK = 1 << CHUNK_SHIFT
"""How many items each full chunk holds: a request makes a tail of fewer than this many
items (half of it on average), and a tuple of one chunk per this many."""
_MASK = CHUNK - 1

_Chunks = tuple[tuple[Any, ...], ...]


class InputItems(Sequence[Any]):
    """An immutable sequence of input items: full chunks of :data:`CHUNK` items, then a tail.

    :param chunks: tuples of exactly :data:`CHUNK` items each.
    :param tail: the items after them (any number).
    """

    __slots__ = ("_chunks", "_size", "_tail")

    def __init__(self, chunks: _Chunks = (), tail: tuple[Any, ...] = ()) -> None:
        self._chunks = chunks
        self._tail = tail
        self._size = (len(chunks) << CHUNK_SHIFT) + len(tail)

    @property
    def pieces(self) -> tuple[_Chunks, tuple[Any, ...]]:
        """The full chunks and the tail (shared with other inputs: never to be changed)."""
        return self._chunks, self._tail

    def with_tail(self, extra: tuple[Any, ...]) -> InputItems:
        """These items, then ``extra`` (the chunks shared, the tail copied)."""
        return InputItems(self._chunks, self._tail + extra)

    def replacing(self, index: int, item: Any) -> InputItems:
        """These items with ``item`` at ``index`` (one chunk, or the tail, copied)."""
        if not 0 <= index < self._size:
            raise IndexError("InputItems index out of range")
        chunks, tail = self._chunks, self._tail
        head = len(chunks) << CHUNK_SHIFT
        if index >= head:
            at = index - head
            return InputItems(chunks, (*tail[:at], item, *tail[at + 1 :]))
        number, at = index >> CHUNK_SHIFT, index & _MASK
        chunk = chunks[number]
        changed = (*chunk[:at], item, *chunk[at + 1 :])
        return InputItems((*chunks[:number], changed, *chunks[number + 1 :]), tail)

    def __len__(self) -> int:
        return self._size

    @overload
    def __getitem__(self, index: int) -> Any: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Any, ...]: ...

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return self._slice(index)
        size = self._size
        if index < 0:
            index += size
        if not 0 <= index < size:
            raise IndexError("InputItems index out of range")
        head = len(self._chunks) << CHUNK_SHIFT
        if index >= head:
            return self._tail[index - head]
        return self._chunks[index >> CHUNK_SHIFT][index & _MASK]

    def _slice(self, where: slice) -> tuple[Any, ...]:
        start, stop, step = where.indices(self._size)
        if step != 1:
            return tuple(self[index] for index in range(start, stop, step))
        if start >= stop:
            return ()
        chunks, tail = self._chunks, self._tail
        head = len(chunks) << CHUNK_SHIFT
        if start >= head:
            return tail[start - head : stop - head]
        parts: list[tuple[Any, ...]] = []
        for number in range(
            start >> CHUNK_SHIFT, min(len(chunks), ((stop - 1) >> CHUNK_SHIFT) + 1)
        ):
            begin = number << CHUNK_SHIFT
            chunk = chunks[number]
            parts.append(
                chunk
                if start <= begin and begin + CHUNK <= stop
                else chunk[max(start - begin, 0) : stop - begin]
            )
        if stop > head:
            parts.append(tail[: stop - head])
        return parts[0] if len(parts) == 1 else tuple(chain.from_iterable(parts))

    def __iter__(self) -> Iterator[Any]:
        return chain(chain.from_iterable(self._chunks), self._tail)

    def __reversed__(self) -> Iterator[Any]:
        return chain(reversed(self._tail), *(reversed(chunk) for chunk in reversed(self._chunks)))

    def _as_tuple(self) -> tuple[Any, ...]:
        if not self._chunks:
            return self._tail
        return tuple(self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, InputItems):
            if self._size != other._size:
                return False
            return self._as_tuple() == other._as_tuple()
        if isinstance(other, tuple):
            return self._size == len(other) and self._as_tuple() == other
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        return hash(self._as_tuple())

    def __add__(self, other: object) -> tuple[Any, ...]:
        if isinstance(other, InputItems | tuple):
            return (*self, *other)
        return NotImplemented

    def __radd__(self, other: object) -> tuple[Any, ...]:
        if isinstance(other, tuple):
            return (*other, *self)
        return NotImplemented

    def __repr__(self) -> str:
        return f"InputItems({self._as_tuple()!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (InputItems, (self._chunks, self._tail))


def grow_chunks(chunks: list[tuple[Any, ...]], items: Sequence[Any]) -> InputItems:
    """``items`` as an :class:`InputItems` whose full chunks are ``chunks``, grown in place.

    ``chunks`` must hold ``items``'s leading full chunks, or fewer (those of a prefix that did
    not change): the chunks ``items`` now fills are added to it, and the items after them make
    the tail.
    """
    size = len(items)
    while (len(chunks) + 1) << CHUNK_SHIFT <= size:
        begin = len(chunks) << CHUNK_SHIFT
        chunks.append(tuple(items[begin : begin + CHUNK]))
    return InputItems(tuple(chunks), tuple(items[len(chunks) << CHUNK_SHIFT :]))


def enc_hook(value: Any) -> Any:
    """What ``msgspec`` encodes for a value it does not know: an :class:`InputItems` as the
    list of its items (the same JSON array a tuple gives)."""
    if type(value) is InputItems:
        return list(value)
    raise TypeError(f"Encoding objects of type {type(value).__name__} is unsupported")


def chunked_pieces(items: Any) -> list[tuple[int, tuple[Any, ...]]] | None:
    """``items`` as (first index, tuple) pieces in order, or ``None`` when it is neither a
    tuple nor an :class:`InputItems`."""
    kind = type(items)
    if kind is tuple:
        return [(0, items)]
    if kind is InputItems:
        chunks, tail = items.pieces
        pieces = [(number << CHUNK_SHIFT, chunk) for number, chunk in enumerate(chunks)]
        pieces.append((len(chunks) << CHUNK_SHIFT, tail))
        return pieces
    return None
