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
    assert _memcmp is not None
    memcmp = _memcmp
    old_items, new_items = id(old) + _HEADER, id(new) + _HEADER
    low, high = start, stop
    if not memcmp(old_items + low * _WORD, new_items + low * _WORD, (high - low) * _WORD):
        return stop
    # A difference lies in [low, high): halve until the range is short, then scan it.
    while high - low > _SCAN_BELOW:
        middle = (low + high) // 2
        if memcmp(old_items + low * _WORD, new_items + low * _WORD, (middle - low) * _WORD):
            high = middle
        else:
            low = middle
    return _scan(old, new, low, high)


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
