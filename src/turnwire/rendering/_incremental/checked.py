"""Records built in code, each checked once per renderer: :class:`CheckedRecords`.

A thread that enters rendering is checked as a thread file is
(:func:`turnwire.model.checks.check_thread`), but a long-lived renderer meets the same records
request after request: an agent loop's thread grows by a few records, the rest are the same
objects. A :class:`~turnwire.rendering._incremental.memo.RenderMemo` (one per container) holds
a :class:`CheckedRecords`, which remembers, for each field of the thread:

- the value it checked last (for a record tuple, the tuple itself): the longest prefix a new
  tuple shares with it, by identity, is found with one ``memcmp``
  (:func:`~turnwire.rendering._incremental.identity.first_difference`) and not looked at
  again;
- the records it checked, by identity, for the records after that prefix (another thread
  rendered in between, a record rewritten in the middle): only those it never saw are checked.

It holds those objects, so an identity it remembers can never be taken by a new object. It is
bounded: a field's records are forgotten, all but the current thread's, once they are more than
twice as many as the current thread has (and 256). A thread the loader made (a thread file, a
stored thread) was checked as it was read: :meth:`CheckedRecords.check` with ``loaded=True``
only remembers its tuples.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from turnwire.model.checks import check_parts, check_thread, thread_fields
from turnwire.model.records import Thread
from turnwire.rendering._incremental.identity import first_difference

__all__ = ["CheckedRecords"]

_NOTHING: Any = object()
_KEEP_AT_LEAST = 256
_TAIL = 32


def _common(before: tuple[Any, ...], value: tuple[Any, ...]) -> int:
    """How many leading items ``before`` and ``value`` share (the same objects). A record the
    client stamped or a question it added sits at the end: one ``memcmp`` up to the last few
    items, then a scan of those, rather than a bisection down to them."""
    shared = min(len(before), len(value))
    if shared <= _TAIL * 2:
        return first_difference(before, value)
    head = first_difference(before, value, 0, shared - _TAIL)
    return head if head < shared - _TAIL else first_difference(before, value, head, shared)


class CheckedRecords:
    """What the renders of one memo have checked; see the module documentation. Not
    thread-safe by itself: its memo's lock is held around :meth:`check`."""

    __slots__ = ("_known", "_last")

    def __init__(self) -> None:
        self._last: dict[str, Any] = {}
        self._known: dict[str, dict[int, Any]] = {}

    def check(self, thread: Thread, *, loaded: bool = False) -> None:
        """Check what ``thread`` holds that this memo has not checked yet, in one pass.

        :param loaded: the loader made ``thread`` (and checked it): remember, do not check.
        :raises ThreadFileError: as :func:`~turnwire.model.checks.check_thread` raises it.
        """
        if type(thread) is not Thread:
            check_thread(thread)  # raises: not a Thread
        last = self._last
        changed: dict[str, Any] = {}
        chosen: dict[str, Sequence[int] | None] = {}
        for name, (_, each) in thread_fields().items():
            value = getattr(thread, name)
            before = last.get(name, _NOTHING)
            if value is before:
                continue
            changed[name] = value
            if loaded:
                continue
            if each is None:
                chosen[name] = None
                continue
            if type(value) is not tuple:
                check_thread(thread)  # raises, naming the field
            kept = _common(before, value) if type(before) is tuple else 0
            if kept == len(value):
                continue
            known = self._known.get(name, {})
            if not known and not kept:
                chosen[name] = None  # nothing seen: all of them
                continue
            new = [i for i in range(kept, len(value)) if id(value[i]) not in known]
            if new:
                chosen[name] = new
        if chosen:
            check_parts(thread, chosen)
        for name, value in changed.items():
            last[name] = value
            if name in chosen and thread_fields()[name][1] is not None:
                self._remember(name, value, chosen[name])

    def _remember(self, name: str, value: tuple[Any, ...], checked: Sequence[int] | None) -> None:
        """Remember the records of ``value`` at ``checked`` (all: ``None``) as checked."""
        known = self._known.setdefault(name, {})
        count = len(value) if checked is None else len(checked)
        if len(known) + count > max(2 * len(value), _KEEP_AT_LEAST):
            # Others' records past the bound: forget all but this thread's (all checked now).
            self._known[name] = {id(record): record for record in value}
            return
        if checked is None:
            known.update({id(record): record for record in value})
            return
        for index in checked:
            record = value[index]
            known[id(record)] = record

    def clear(self) -> None:
        """Forget everything (the next thread is checked whole)."""
        self._last.clear()
        self._known.clear()
