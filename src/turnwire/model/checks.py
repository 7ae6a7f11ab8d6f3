"""Records built in code, held to the rules a thread file is read under.

msgspec checks every field when it decodes a record (a thread file, a store's row), but a record
built in Python is taken as given: ``Message(id="m1", role="usr", created_at="2025-01-01")``
is a message whose role no request can carry and whose date is text. :func:`check_thread`
checks a :class:`~turnwire.model.records.Thread` built in code the way the thread file loader
checks a file:

- every field against its type: enum values (``role``, ``kind``, ``trust_tier`` ...), aware
  datetimes (a ``datetime`` with a time zone, never its text), non-empty ids, tool names, number
  ranges, and the cross-field rules of each record;
- the shapes Python could get wrong: a nested record of its own class (an ``attachments`` entry
  is a :class:`~turnwire.model.records.Media`, not a ``dict``), a tuple where the schema says
  tuple, bytes where it says bytes;
- what the loader refuses besides: a record dated ahead of this machine's clock (past
  :data:`FUTURE_SKEW`), a file pointer with a NUL character, a ``seq`` outside 64 bits.

A violation raises :class:`~turnwire.errors.ThreadFileError` whose ``path`` (and the start of its
message) is the ``$.path`` a thread file holding the same value gets
(``$.messages[0].role: Invalid enum value 'usr'``). The free-form trees (a tool call's
``args``, a hosted item's ``item``, a schema) are checked as JSON values, not by their Python
classes.

:func:`turnwire.render`, :meth:`turnwire.Client.run` and the stores' writes call it for you
(a renderer checks each record once: see
:mod:`turnwire.rendering._incremental.checked`); call it yourself to fail where a thread is
built.
"""

from __future__ import annotations

import functools
import re
import typing
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from operator import attrgetter
from typing import Any

import msgspec

from turnwire.errors import ThreadFileError, validation_location
from turnwire.model.records import Thread

__all__ = [
    "FUTURE_SKEW",
    "RECORD_FIELDS",
    "check_date",
    "check_parts",
    "check_pointer",
    "check_thread",
    "check_value",
    "date_limit",
    "points",
    "record_pointers",
    "record_problems",
    "thread_fields",
]

FUTURE_SKEW = timedelta(minutes=5)
"""How far ahead of this machine's clock a record may be dated (clocks drift)."""

RECORD_FIELDS = ("messages", "thoughts", "tool_calls", "hosted_items")
"""The fields of a thread whose records sort in the timeline by ``(created_at, seq)``."""

_POINTING = frozenset({"messages", "tool_calls", "retrievables"})
_CREATED = attrgetter("created_at")
_ITEM = re.compile(r"\$\.([a-z_]+)\[(\d+)\]")
_SEQ = attrgetter("seq")
_FEW = 16  # up to this many records, one by one; more, a column at a time


# What a thread file's integers may be (``turnwire.files.loading.INT_MIN`` and ``INT_MAX``):
# what msgspec decodes, signed or unsigned 64 bits.
_INT64 = (-(2**63), 2**64 - 1)
# Kept as they are on the way through plain data: a record built in code holds a datetime and
# bytes, never their text (a date given as text is an error, not a date).
_BUILT = (datetime, bytes)


@functools.cache
def thread_fields() -> dict[str, tuple[Any, Any]]:
    """Each field of :class:`Thread`: its type, and the type of its items when it is a tuple of
    them (``None`` otherwise)."""
    hints = typing.get_type_hints(Thread, include_extras=True)
    fields: dict[str, tuple[Any, Any]] = {}
    for name in Thread.__struct_fields__:
        kind = hints[name]
        args = typing.get_args(kind)
        each = args[0] if typing.get_origin(kind) is tuple and args[1:] == (...,) else None
        fields[name] = (kind, each)
    return fields


class _Parts(Thread, frozen=True, kw_only=True):
    """Some fields of a thread, some items of its tuples, as they are checked: a
    :class:`Thread` without its cross-field rule (it held when the thread was built)."""

    def __post_init__(self) -> None:
        pass


def _name(value: Any) -> str:
    return type(value).__name__


def _stray(expected: Any, given: Any, path: str) -> tuple[str, str] | None:
    """Where ``given`` (a value built in code) is not of the class the schema makes of it
    (``expected``: what decoding its plain data gave), else ``None``. Free-form trees
    (mappings, lists) are compared as JSON values, which decoding already checked."""
    if expected is given:
        return None
    kind = type(expected)
    if isinstance(expected, msgspec.Struct):
        if type(given) is not kind:
            return path, f"expected a {kind.__name__}, got a {_name(given)}"
        for field in msgspec.structs.fields(kind):
            found = _stray(
                getattr(expected, field.name),
                getattr(given, field.name),
                f"{path}.{field.encode_name}",
            )
            if found is not None:
                return found
        return None
    if kind is tuple:
        if type(given) is not tuple:
            return path, f"expected a tuple, got a {_name(given)} (give tuple(...))"
        for index, (made, held) in enumerate(zip(expected, given, strict=False)):
            found = _stray(made, held, f"{path}[{index}]")
            if found is not None:
                return found
        return None
    if kind is float and type(given) is int:  # a number is a number (1 is 1.0, as in JSON)
        return None
    if kind in (str, int, float, bool, bytes, datetime) and not isinstance(given, kind):
        return path, f"expected `{kind.__name__}`, got `{_name(given)}`"
    return None


def check_value(value: Any, kind: Any, path: str) -> None:
    """Check ``value`` (built in code) against the type ``kind`` as a thread file's value at
    ``path`` is checked.

    :raises ThreadFileError: naming the ``$.path`` at fault.
    """
    try:
        plain = msgspec.to_builtins(value, builtin_types=_BUILT)
    except (TypeError, ValueError) as err:  # an object no thread file can hold
        raise ThreadFileError(f"{path}: {err}", path=path) from None
    try:
        made = msgspec.convert(plain, kind, builtin_types=_BUILT)
    except msgspec.ValidationError as err:
        where, detail = validation_location(err, root=path)
        raise ThreadFileError(f"{where}: {detail}", path=where) from None
    if made != value:
        found = _stray(made, value, path)
        if found is not None:
            where, detail = found
            raise ThreadFileError(f"{where}: {detail}", path=where)


def date_limit(now: datetime | None = None) -> datetime:
    """The latest date a record may hold now: this machine's clock plus :data:`FUTURE_SKEW`."""
    return (now or datetime.now(UTC)) + FUTURE_SKEW


def points(field: str, record: Any) -> bool:
    """Whether ``record``, an item of the thread's field ``field``, may hold a file pointer
    (a quick look, before :func:`record_pointers` walks it)."""
    if field == "messages":
        return bool(record.attachments)
    if field == "tool_calls":
        result = record.result
        return result is not None and bool(result.media or result.artifact or result.artifacts)
    return field == "retrievables" and record.artifact is not None


def record_pointers(field: str, index: int, record: Any) -> Iterator[tuple[str, str | None]]:
    """``($.path, pointer)`` of every file pointer of ``record``, the item at ``index`` of the
    thread's field ``field`` (attachments, media and artifacts of tool results, artifacts of
    retrieved documents)."""
    if field == "messages":
        for j, media in enumerate(record.attachments):
            yield f"$.messages[{index}].attachments[{j}].path", media.path
    elif field == "tool_calls":
        result = record.result
        if result is None:
            return
        for j, media in enumerate(result.media or ()):
            yield f"$.tool_calls[{index}].result.media[{j}].path", media.path
        if result.artifact is not None:
            yield f"$.tool_calls[{index}].result.artifact.path", result.artifact.path
        for j, artifact in enumerate(result.artifacts or ()):
            yield f"$.tool_calls[{index}].result.artifacts[{j}].path", artifact.path
    elif field == "retrievables" and record.artifact is not None:
        yield f"$.retrievables[{index}].artifact.path", record.artifact.path


def check_pointer(path: str, pointer: str | None) -> None:
    """Refuse a file pointer no operating system can open (one holding a NUL character)."""
    if pointer is not None and "\0" in pointer:
        raise ThreadFileError(f"{path}: a file path cannot contain a NUL character", path=path)


def check_date(field: str, index: int, record: Any, limit: datetime) -> None:
    """Refuse a timeline record dated past ``limit`` (:func:`date_limit`): the timeline sorts by
    date, so it would sort after every turn added later, and a compaction dated ahead would
    cut each new prompt out of the request."""
    if record.created_at > limit:
        path = f"$.{field}[{index}].created_at"
        raise ThreadFileError(
            f"{path}: {record.created_at.isoformat()} is in the future (this machine's "
            f"clock says {limit - FUTURE_SKEW:%Y-%m-%dT%H:%M:%SZ}); a record dated ahead "
            "would sort after every turn added later and hide it: fix the date",
            path=path,
        )


def record_problems(field: str, index: int, record: Any, limit: datetime) -> None:
    """What the loader refuses in a well-typed item of the thread's field ``field`` besides
    its type: a date past ``limit``, a ``seq`` outside 64 bits, a NUL in a file pointer.

    :raises ThreadFileError: naming the ``$.path`` at fault.
    """
    if field in RECORD_FIELDS:
        check_date(field, index, record, limit)
        if not _INT64[0] <= record.seq <= _INT64[1]:
            path = f"$.{field}[{index}].seq"
            bits = record.seq.bit_length()
            raise ThreadFileError(
                f"{path}: an integer of {bits} bits is outside the 64-bit range", path=path
            )
    if points(field, record):
        for path, pointer in record_pointers(field, index, record):
            check_pointer(path, pointer)


def _reindexed(err: ThreadFileError, chosen: Mapping[str, Sequence[int] | None]) -> None:
    """``err`` (from checking only some items of a field) with its path, and the start of its
    message, naming the item's place in the whole thread."""
    match = _ITEM.match(err.path)
    if match is None:
        return
    field, index = match.group(1), int(match.group(2))
    places = chosen.get(field)
    if places is None or index >= len(places):
        return
    path = f"$.{field}[{places[index]}]{err.path[match.end() :]}"
    message = str(err)
    if message.startswith(err.path):
        message = path + message[len(err.path) :]
    err.path = path
    err.message = message
    err.args = (message,)


def _problems(field: str, items: tuple[Any, ...], chosen: Sequence[int], limit: datetime) -> None:
    """:func:`record_problems` of ``items[i]`` for each ``i`` of ``chosen``, the common case (no
    problem) at C speed for many records, one comparison each for a few; a record at fault is
    then found one by one."""
    dated = field in RECORD_FIELDS
    if len(chosen) <= _FEW:
        low, high = _INT64
        for index in chosen:
            record = items[index]
            if (dated and (record.created_at > limit or not low <= record.seq <= high)) or (
                field in _POINTING and points(field, record)
            ):
                record_problems(field, index, record, limit)
        return
    records = [items[index] for index in chosen] if len(chosen) != len(items) else items
    suspects: Sequence[int] = ()
    if dated:
        seqs = list(map(_SEQ, records))
        if max(map(_CREATED, records)) > limit or min(seqs) < _INT64[0] or max(seqs) > _INT64[1]:
            suspects = chosen
    if not suspects and field in _POINTING:
        suspects = [i for i, record in zip(chosen, records, strict=True) if points(field, record)]
    for index in suspects:
        record_problems(field, index, items[index], limit)


def _check_given(given: dict[str, Any]) -> None:
    """Check ``given`` (fields of a thread, some items of its tuples) in one conversion."""
    try:
        plain = msgspec.to_builtins(given, builtin_types=_BUILT)
    except (TypeError, ValueError):
        # An object plain data cannot hold: which item is it?
        for name, value in given.items():
            kind, each = thread_fields()[name]
            if each is None:
                check_value(value, kind, f"$.{name}")
            else:
                for index, item in enumerate(value):
                    check_value(item, each, f"$.{name}[{index}]")
        raise  # pragma: no cover - one of them raised
    try:
        made = msgspec.convert(plain, _Parts, builtin_types=_BUILT)
    except msgspec.ValidationError as err:
        where, detail = validation_location(err)
        raise ThreadFileError(f"{where}: {detail}", path=where) from None
    for name, value in given.items():
        expected = getattr(made, name)
        if expected != value:
            found = _stray(expected, value, f"$.{name}")
            if found is not None:
                where, detail = found
                raise ThreadFileError(f"{where}: {detail}", path=where)


def check_parts(
    thread: Thread,
    chosen: Mapping[str, Sequence[int] | None],
    *,
    now: datetime | None = None,
) -> None:
    """Check some fields of ``thread``, in one pass: of each tuple field in ``chosen``, the
    items at the positions it maps to (``None``: all of them), and each other field named.

    :raises ThreadFileError: the first fault, named by its place in the whole thread.
    """
    given: dict[str, Any] = {}
    for name, places in chosen.items():
        value = getattr(thread, name)
        given[name] = value if places is None else tuple([value[i] for i in places])
    try:
        _check_given(given)
    except ThreadFileError as err:
        _reindexed(err, chosen)
        raise
    limit: datetime | None = None
    for name, places in chosen.items():
        if name in RECORD_FIELDS or name in _POINTING:
            items = getattr(thread, name)
            if limit is None:
                limit = date_limit(now)
            _problems(name, items, range(len(items)) if places is None else places, limit)


def check_thread(thread: Thread, *, now: datetime | None = None) -> None:
    """Check a thread built in code as the thread file loader checks a file (see the module
    documentation): every field, every record, every file pointer.

    :param now: the time records may not be dated ahead of (default: this machine's clock).
    :raises ThreadFileError: the first value that breaks a rule; its ``path`` (and the start
        of its message) is the value's ``$.path``, such as ``$.messages[0].role``.
    """
    if type(thread) is not Thread:
        raise ThreadFileError(f"$: expected a Thread, got a {_name(thread)}", path="$")
    for name, (_, each) in thread_fields().items():
        value = getattr(thread, name)
        if each is not None and type(value) is not tuple:
            raise ThreadFileError(
                f"$.{name}: expected a tuple, got a {_name(value)} (give tuple(...))",
                path=f"$.{name}",
            )
    check_parts(thread, dict.fromkeys(thread_fields()), now=now)
