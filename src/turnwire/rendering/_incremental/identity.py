"""Where two tuples stop holding the very same objects, without a Python step per element.

A warm render asks, for every tuple of a thread it saw last time, how many leading records are
still the same objects: an agent loop's thread grows by a few records per request, so the
answer is almost always "all of them", and a per-element scan (``map(is_not, ...)``, about
30 ns an element) would be the largest cost of a warm render that grows with the thread.

On CPython with the GIL, a tuple's items are an array of object pointers right after its
header (at ``tuple.__basicsize__``), so two prefixes hold the same objects exactly when those
arrays are byte-equal. :func:`first_difference` compares them with the C library's ``memcmp``
(called through :class:`ctypes.PyDLL`, which keeps the GIL, so nothing runs meanwhile) and
bisects to the first differing position: a few microseconds for 20,000 items. Reading the
arrays is safe because both tuples are alive (the caller holds them) and a tuple never changes.

A rendered input (:class:`~turnwire.rendering._incremental.chunked.InputItems`) is compared
piece by piece: a chunk both inputs hold at the same place is the same items, skipped whole,
and the other pieces are compared as tuples are.

Anywhere else (another implementation, a free-threaded build, no ``memcmp`` to be found, a
list, a tuple subclass) the same answer comes from the per-element scan. The fast path checks
itself once at import against that scan and is not used if they disagree.
"""

from __future__ import annotations

import ctypes
import sys
import sysconfig
from collections.abc import Callable, Sequence
from itertools import compress, count
from operator import is_not
from typing import Any

from turnwire.rendering._incremental.chunked import CHUNK_SHIFT, InputItems, chunked_pieces

__all__ = ["first_difference"]

_WORD = tuple.__itemsize__
_HEADER = tuple.__basicsize__
# Below this many items the bisection stops and the rest is scanned element by element.
_SCAN_BELOW = 32


def _scan(old: Sequence[Any], new: Sequence[Any], start: int, stop: int) -> int:
    if start or stop < len(old) or stop < len(new):
        old, new = old[start:stop], new[start:stop]
    return next(compress(count(start), map(is_not, old, new)), stop)


def _load_memcmp() -> Callable[[int, int, int], int] | None:
    if sys.implementation.name != "cpython" or sysconfig.get_config_var("Py_GIL_DISABLED"):
        return None
    if ctypes.sizeof(ctypes.c_void_p) != _WORD:
        return None
    try:
        memcmp = ctypes.PyDLL(None).memcmp
    except (OSError, AttributeError, TypeError):
        return None
    memcmp.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
    memcmp.restype = ctypes.c_int
    function: Callable[[int, int, int], int] = memcmp
    return function


_memcmp = _load_memcmp()


def _compare(old: tuple[Any, ...], new: tuple[Any, ...], start: int, stop: int) -> int:
    return start + _compare_at(old, start, new, start, stop - start)


def _compare_at(
    old: tuple[Any, ...], old_at: int, new: tuple[Any, ...], new_at: int, length: int
) -> int:
    """How many leading items of ``old[old_at:old_at + length]`` and ``new[new_at:new_at +
    length]`` are the very same objects (both ranges inside their tuples)."""
    if _memcmp is None or length <= 64:
        run_old, run_new = old[old_at : old_at + length], new[new_at : new_at + length]
        return next(compress(count(), map(is_not, run_old, run_new)), length)
    memcmp = _memcmp
    old_items, new_items = id(old) + _HEADER + old_at * _WORD, id(new) + _HEADER + new_at * _WORD
    low, high = 0, length
    if not memcmp(old_items, new_items, length * _WORD):
        return length
    # A difference lies in [low, high): halve until the range is short, then scan it.
    while high - low > _SCAN_BELOW:
        middle = (low + high) // 2
        if memcmp(old_items + low * _WORD, new_items + low * _WORD, (middle - low) * _WORD):
            high = middle
        else:
            low = middle
    run_old, run_new = old[old_at + low : old_at + high], new[new_at + low : new_at + high]
    return low + next(compress(count(), map(is_not, run_old, run_new)), high - low)


def _piecewise(old: Any, new: Any, start: int, stop: int) -> int:
    """:func:`first_difference` of two sequences made of tuple pieces (an
    :class:`~turnwire.rendering._incremental.chunked.InputItems` or a tuple): a piece both hold
    at the same place (the same chunk of two inputs) is skipped whole, the others compared as
    tuples are."""
    old_pieces, new_pieces = chunked_pieces(old), chunked_pieces(new)
    if old_pieces is None or new_pieces is None:
        return _scan(old, new, start, stop)
    at_old = min(start >> CHUNK_SHIFT, len(old_pieces) - 1)
    at_new = min(start >> CHUNK_SHIFT, len(new_pieces) - 1)
    position = start
    while position < stop:
        while old_pieces[at_old][0] + len(old_pieces[at_old][1]) <= position:
            at_old += 1
        while new_pieces[at_new][0] + len(new_pieces[at_new][1]) <= position:
            at_new += 1
        old_first, old_piece = old_pieces[at_old]
        new_first, new_piece = new_pieces[at_new]
        end = min(old_first + len(old_piece), new_first + len(new_piece), stop)
        if old_piece is not new_piece or old_first != new_first:
            length = end - position
            same = _compare_at(
                old_piece, position - old_first, new_piece, position - new_first, length
            )
            if same < length:
                return position + same
        position = end
    return stop


def first_difference(
    old: Sequence[Any], new: Sequence[Any], start: int = 0, stop: int | None = None
) -> int:
    """The first index in ``[start, stop)`` where ``old`` and ``new`` hold different objects
    (identity, never ``==``), else ``stop``.

    :param stop: at most the shorter length; ``None``: the shorter length.
    """
    limit = min(len(old), len(new))
    stop = limit if stop is None else min(stop, limit)
    if start >= stop:
        return stop
    if type(old) is InputItems or type(new) is InputItems:
        return _piecewise(old, new, start, stop)
    if _memcmp is not None and type(old) is tuple and type(new) is tuple and stop - start > 64:
        return _compare(old, new, start, stop)
    return _scan(old, new, start, stop)


def _self_check() -> bool:
    things = tuple(object() for _ in range(300))
    other = (*things[:211], object(), *things[212:])
    same = things[:150] + things[150:]  # the same items, another tuple
    return (
        _compare(things, same, 0, 300) == 300
        and _compare(things, other, 0, 300) == 211
        and _compare(things, other, 212, 300) == 300
        and _compare(things, other, 0, 100) == 100
    )


if _memcmp is not None and not _self_check():  # pragma: no cover - a layout we do not know
    _memcmp = None
