"""What a warm renderer keeps between renders: :class:`RenderMemo`.

``build_input`` is a pure function of (thread, stages, options), so a memo may hand back what an
earlier render produced for the same inputs. What is kept, and what each part is keyed on:

* per record kind (messages, tool calls, thoughts, hosted items, and under
  ``render.context_placement: timeline`` memories and retrieved records, each rendered by
  ``render_timeline_context``), each record's wire items and warnings, keyed
  by the record's id and validated by identity, else equality (records are frozen; a record
  whose file pointer was inlined again is equal, not identical). One table per *stage key*: the
  implementations of the stages that kind renders through (plugin functions, container
  overrides) and the values of the options those implementations and the pipeline read. A
  stage that runs through pluggy (a wrapper, tracing) or asks for ``scratch`` disables the table
  of every kind that renders through it. A first render keeps its records as columns, made
  into entries when a later render first reads the table (:class:`RecordTable`);
* the last timeline per combination of stage keys, so a thread that only grew is rendered by
  appending (records in the same order, nothing re-sorted);
* per sweep key (instructions, tools, model, the sweep's options), the last pairing sweep with
  checkpoints of where it stood after some reasoning candidates (with the built-in hasher:
  every eighth and the last sixteen, each with the SHA-256 state of the canonical prefix
  hashed so far; else after every candidate), so the next sweep resumes after the last
  checkpoint whose inputs are unchanged. Only the built-in ``fingerprint_prefix`` (``prefix``
  binding) is resumed this way; any other implementation is called as usual;
* the last request body's encoded items and the preflight state over them, reused for the
  longest unchanged prefix of ``input``;
* the records already checked as a thread file is (:mod:`.checked`), so a record built in
  code is checked once, not at every render (kept by :meth:`RenderMemo.clear`, which forgets
  what was rendered, not what holds of a frozen record).

Everything is bounded (a few entries per table, records of the last renders only) and owned by
one memo object: a container holds one (``container.render_memo()``), a test makes its own or
calls :meth:`RenderMemo.clear`.
"""

from __future__ import annotations

import threading
from array import array
from collections.abc import Hashable, Iterable, Mapping, Sequence
from itertools import repeat
from operator import attrgetter
from typing import Any, Generic, TypeVar

import msgspec

from turnwire.rendering._incremental.checked import CheckedRecords
from turnwire.rendering._incremental.chunked import InputItems, grow_chunks
from turnwire.rendering._incremental.identity import first_difference

__all__ = ["Entry", "RenderMemo", "common_prefix", "stage_key"]

K = TypeVar("K", bound=Hashable)
_ID = attrgetter("id")
V = TypeVar("V")


class BoundedTable(Generic[K, V]):
    """A small least-recently-used mapping."""

    __slots__ = ("_data", "size")

    def __init__(self, size: int) -> None:
        self.size = size
        self._data: dict[K, V] = {}

    def get(self, key: K) -> V | None:
        value = self._data.pop(key, None)
        if value is not None:
            self._data[key] = value
        return value

    def put(self, key: K, value: V) -> None:
        self._data.pop(key, None)
        self._data[key] = value
        while len(self._data) > self.size:
            del self._data[next(iter(self._data))]

    def discard(self, key: K) -> None:
        self._data.pop(key, None)

    def clear(self) -> None:
        self._data.clear()

    def __len__(self) -> int:
        return len(self._data)


def _option_token(value: Any) -> Hashable:
    token = getattr(value, "cache_key", None)
    if isinstance(token, str):
        return ("cache_key", type(value), token)
    if isinstance(value, msgspec.Struct):
        return (type(value), msgspec.json.encode(value, order="deterministic"))
    try:
        hash(value)
    except TypeError:
        return ("encoded", msgspec.json.encode(value, order="deterministic"))
    hashable: Hashable = value
    return hashable


def stage_key(
    plan: Any,
    stages: Iterable[str],
    options: Mapping[str, Any],
    read_options: Iterable[str] = (),
) -> Hashable | None:
    """What the output of ``stages`` depends on besides its arguments, or ``None`` when it must
    not be memoised (a stage runs through pluggy, or asks for ``scratch``).

    :param plan: the :class:`~turnwire.rendering.relay.StagePlan` of the render.
    :param stages: the stage names whose implementations matter.
    :param options: the injectable option values by name.
    :param read_options: options the pipeline itself reads for this output.
    """
    stages, read_options = tuple(stages), tuple(read_options)
    # What depends on the plan alone (the implementations, the option names they read) is
    # worked out once per plan and kept with it; the option values are read each time.
    kept: dict[Any, Any] | None = getattr(plan, "stage_keys", None)
    shape: Any = kept.get((stages, read_options), _UNSEEN) if kept is not None else _UNSEEN
    if shape is _UNSEEN:
        shape = _key_shape(plan, stages, read_options)
        if kept is not None:
            kept[stages, read_options] = shape
    if shape is None:
        return None
    parts, names = shape
    return (*parts, *[(name, _option_token(options[name])) for name in names if name in options])


_UNSEEN = object()


def _key_shape(
    plan: Any, stages: tuple[str, ...], read_options: tuple[str, ...]
) -> tuple[tuple[Hashable, ...], tuple[str, ...]] | None:
    """The implementations part of :func:`stage_key` and the option names whose values it
    adds (sorted), or ``None`` when the output must not be memoised."""
    parts: list[Hashable] = []
    names: set[str] = set(read_options)
    for stage in stages:
        kind, target = plan.targets[stage]
        if kind == "pluggy":
            return None
        if kind == "override":
            function, arguments = target
            if "scratch" in arguments:
                return None
            parts.append((stage, "override", function))
            names.update(arguments)
        else:
            implementations = (target,) if kind == "only" else target[3]
            for _, arguments in implementations:
                if "scratch" in arguments:
                    return None
                names.update(arguments)
            parts.append((stage, tuple(function for function, _ in implementations)))
    return tuple(parts), tuple(sorted(names - {"stages", "warn"}))


def common_prefix(old: Any, new: Any, known: int = 0, size: int | None = None) -> int:
    """How many leading elements of ``old`` (of its first ``size``) and ``new`` are the very
    same objects.

    Identity, never ``==``: records and items that compare equal can still render differently
    (``{"x": 1} == {"x": True}``). The scan starts at ``known``: a length the caller built both
    from (so already the same objects), never a guess; see
    :mod:`turnwire.rendering._incremental.identity` for how it
    avoids a Python step per element.
    """
    return first_difference(old, new, known, size)


class Entry(msgspec.Struct, frozen=True, gc=False):
    """One memoised record: the record, what it depends on besides, its items and warnings.

    Not tracked by the garbage collector (it refers only to records, items and strings,
    never back to the memo), so a large table adds nothing to collection passes.
    """

    record: Any
    tool: Any
    rendered: tuple[Any, ...]
    candidate: bool
    said: tuple[str, ...]


class RecordTable:
    """Rendered records of one kind under one stage key: record id → (record, ..., output).

    A first render hands its records over as columns (:meth:`add_columns`); the entries of
    every column held are made when the table is next read (:attr:`entries`), so a first
    render makes none itself, and columns dropped unread (:meth:`keep_only`) are never made.
    """

    __slots__ = ("_columns", "_entries")

    def __init__(self) -> None:
        self._entries: dict[str, Entry] = {}
        self._columns: list[tuple[Sequence[Any], Iterable[Any], Sequence[Any], Any, Any]] = []

    @property
    def entries(self) -> dict[str, Entry]:
        """Record id → entry (the columns handed over so far made entries first)."""
        if self._columns:
            columns, self._columns = self._columns, []
            for records, tools, rendered, candidates, said in columns:
                warned: Any = (
                    [said.get(row, ()) for row in range(len(records))] if said else repeat(())
                )
                entries = map(Entry, records, tools, rendered, candidates, warned)
                self._entries.update(zip(map(_ID, records), entries, strict=True))
        return self._entries

    @entries.setter
    def entries(self, entries: dict[str, Entry]) -> None:
        self._entries, self._columns = entries, []

    def add_columns(
        self,
        records: Sequence[Any],
        tools: Iterable[Any],
        rendered: Sequence[tuple[Any, ...]],
        candidates: Iterable[bool],
        said: Mapping[int, tuple[str, ...]],
    ) -> None:
        """Keep rendered records, none of which the table holds (:meth:`holds_none_of`),
        column by column: ``tools``, ``rendered`` and ``candidates`` give each record's in
        order (``tools`` and ``candidates`` may repeat without end), ``said`` the warnings by
        row (rows without warnings left out). The columns are read later and must not
        change."""
        self._columns.append((records, tools, rendered, candidates, said))

    def __len__(self) -> int:
        """How many records the table holds, entries not made yet counted (an id handed over
        twice counts twice)."""
        return len(self._entries) + sum(len(columns[0]) for columns in self._columns)

    def holds_none_of(self, records: Sequence[Any]) -> bool:
        """Whether the table holds no record with the id of one of ``records`` (its columns
        are looked into without making their entries)."""
        if self._entries and not self._entries.keys().isdisjoint(map(_ID, records)):
            return False
        if not self._columns:
            return True
        ids = set(map(_ID, records))
        return all(ids.isdisjoint(map(_ID, columns[0])) for columns in self._columns)

    def keep_only(self, records: Sequence[Any]) -> None:
        """Forget every record whose id is not one of ``records``'s. When the last columns
        are ``records`` themselves, handed over by a render that found none of them here,
        everything else is of other ids and goes without its entries being made."""
        if self._columns and self._columns[-1][0] is records:
            self._entries, self._columns = {}, self._columns[-1:]
            return
        entries = self.entries
        self._entries = {r.id: entries[r.id] for r in records if r.id in entries}


class TimelineState(msgspec.Struct, kw_only=True, gc=False):
    """The last timeline under one combination of stage keys: its sources and what they gave.

    ``items``, ``candidate_indexes`` and ``candidate_thoughts`` only ever grow (a timeline
    that does not extend this one starts lists of its own), so the next timeline appends to
    them in place instead of copying them; ``sizes`` are their lengths when this state was
    kept, and whoever holds one of the lists reads only the prefix it saw. A thought the
    client stamped, which renders the same, takes its candidate's place in
    ``candidate_thoughts`` in place: ``rewrites`` (which travels with that list) notes each
    place, so whoever holds the list knows which of the thoughts it saw changed since.
    """

    messages: tuple[Any, ...]
    thoughts: tuple[Any, ...]
    surfaced: tuple[Any, ...]
    tool_calls: tuple[Any, ...]
    hosted_items: tuple[Any, ...]
    # the memories and retrieved records placed in the timeline (none under ``leading``)
    memories: tuple[Any, ...]
    retrievables: tuple[Any, ...]
    tools: tuple[Any, ...]
    last_key: tuple[Any, ...] | None
    items: list[Any]
    candidate_indexes: list[int]
    candidate_thoughts: list[Any]
    rewrites: array[int]
    warnings: list[str]
    sizes: tuple[int, int, int]


class Checkpoint(msgspec.Struct, frozen=True, gc=False):
    """The sweep after one candidate: where it stood and what it had hashed.

    :ivar position: the candidate's position among the candidates.
    :ivar index: the candidate's index in the swept items.
    :ivar done: items before this index are settled.
    :ivar out_length: how many output items there were.
    :ivar warning_count: how many sweep warnings there were.
    :ivar hasher: the SHA-256 state of the canonical prefix over ``out[:hashed]`` (``None``
        when fingerprints do not come from the built-in hasher; with it, only some
        candidates have a checkpoint: see ``turnwire.rendering.sweep._SNAPSHOT_EVERY``).
    :ivar hashed: how many output items ``hasher`` covers.
    """

    position: int
    index: int
    done: int
    out_length: int
    warning_count: int
    hasher: Any
    hashed: int


class SweepState:
    """The last pairing sweep under one sweep key.

    Its lists (``out``, ``chunks``, ``checkpoints`` and their bisection lists, ``warnings``)
    belong to it alone: the next sweep under the same key cuts them back to the checkpoint it
    resumes from and goes on appending in place, and drops the state if it fails half-way.
    ``chunks`` holds ``out``'s full chunks, tuples that never change, so ``swept`` (the
    :class:`~turnwire.rendering._incremental.chunked.InputItems` this sweep handed out, made
    of them) stays valid after the list is cut back. ``items`` may be a timeline's list, which
    only grows: ``item_count`` is how much of it was swept.
    """

    __slots__ = (
        "candidates",
        "checkpoints",
        "chunks",
        "hashed",
        "head",
        "indexes",
        "item_count",
        "items",
        "out",
        "pending_from",
        "reasoned",
        "rewrites",
        "run",
        "swept",
        "tail",
        "thoughts",
        "timeline_items",
        "timeline_size",
        "warnings",
    )

    def __init__(
        self,
        items: list[Any],
        candidates: tuple[list[int], list[Any], int],
        out: list[Any],
        checkpoints: list[Checkpoint],
        warnings: list[str],
        source: tuple[list[Any], list[Any]] = ([], []),
        reasoned: dict[Any, int] | None = None,
        pending_from: int | None = None,
        bisected: tuple[list[int], list[int]] | None = None,
        tail: bytes = b"",
        chunked: tuple[list[tuple[Any, ...]], InputItems] | None = None,
        rewrites: tuple[array[int], int] | None = None,
    ) -> None:
        # the canonical text after the input array (it depends only on the sweep key)
        self.tail = tail
        # This sweep's own token: ``out`` is cut back and grown in place by later sweeps, so
        # the list's identity does not say which sweep's items it held (a body names its
        # sweep by this token; see ``RenderMemo.input_from``).
        self.run = object()
        self.items = items
        self.item_count = len(items)
        self.reasoned = reasoned or {}
        # the first candidate position that carried the pending marker (the next sweep
        # resumes before it, so that its render stamps it again)
        self.pending_from = pending_from
        self.head, self.timeline_items = source
        self.timeline_size = len(self.timeline_items)
        self.candidates = candidates
        self.out = out
        self.checkpoints = checkpoints
        # Each checkpoint's index and hashed count, to bisect on: kept by the sweep as it adds
        # checkpoints (built here only when not given: a Python step per checkpoint).
        if bisected is None:
            bisected = (
                [checkpoint.index for checkpoint in checkpoints],
                [checkpoint.hashed for checkpoint in checkpoints],
            )
        self.indexes, self.hashed = bisected
        self.thoughts = candidates[1]
        self.warnings = warnings
        if chunked is None:
            chunks: list[tuple[Any, ...]] = []
            chunked = (chunks, grow_chunks(chunks, out))
        self.chunks, self.swept = chunked
        # the rewrite log of the candidate thoughts list, and how much of it had been written
        # when this sweep saw the list
        self.rewrites = rewrites if rewrites is not None else (array("q"), 0)


class BodyState(msgspec.Struct, kw_only=True, gc=False):
    """The last checked and encoded ``input``: its items, their bytes, the preflight state.

    :ivar input: the items.
    :ivar segments: the items' bytes, joined by commas, in pieces (``None``: not kept, the
        body was encoded whole).
    :ivar bounds: where each segment ends, from the first item's first byte.
    :ivar ends: where each item's bytes end, from the first item's first byte (``None``: not
        known, the body was encoded whole).
    :ivar facts: the preflight facts of each item (``request._UNREAD`` where a body's fast
        pass wrote none down: read from the item when needed).
    :ivar seen_ids: item id → index of its item.
    :ivar calls: ``function_call`` call id → index.
    :ivar answered: call id → index of its first ``function_call_output``.
    :ivar stateless: the ``store: false`` the facts were checked under.
    :ivar source: the token of the sweep whose output ``input`` was made from, if known
        (``SweepState.run``: the sweep's lists are reused in place, so not the list itself).
    """

    input: tuple[Any, ...]
    segments: list[Any] | None
    bounds: list[int]
    ends: list[int] | None
    facts: list[tuple[Any, ...]]
    seen_ids: dict[str, int]
    calls: dict[str, int]
    answered: dict[str, int]
    stateless: bool
    source: Any = None


class InlineState(msgspec.Struct, kw_only=True, gc=False):
    """The last thread whose file pointers were loaded: before, after, and which records read
    a file (those are loaded again on every render, so a changed file is seen)."""

    messages: tuple[Any, ...]
    loaded_messages: tuple[Any, ...]
    reading_messages: list[int]
    message_charges: list[int]
    tool_calls: tuple[Any, ...]
    loaded_tool_calls: tuple[Any, ...]
    reading_tool_calls: list[int]
    call_charges: list[int]


class RenderMemo:
    """Everything a warm renderer reuses; see the module docstring. Thread-safe.

    :param tables: how many stage keys (and sweep keys) each table keeps.
    """

    def __init__(self, tables: int = 4) -> None:
        self.lock = threading.RLock()
        self._size = tables
        self.records: dict[str, BoundedTable[Hashable, RecordTable]] = {}
        self.timelines: BoundedTable[Hashable, TimelineState] = BoundedTable(tables)
        self.sweeps: BoundedTable[Hashable, SweepState] = BoundedTable(tables)
        self.body: BodyState | None = None
        self.inlined: InlineState | None = None
        self.handles: tuple[tuple[Any, ...], int, bool] | None = None
        # Where the last outputs came from, so the next stage need not scan what was built
        # from the previous output: loaded tuple -> (previous loaded tuple, kept, re-read
        # positions), and the last input -> (the token of its sweep, (the token of the sweep it
        # resumed, how many of that sweep's output items it kept)); ``swept``: the token of
        # the last sweep.
        self.loaded_from: dict[str, tuple[Any, Any, int, list[int]]] = {}
        self.input_from: tuple[Any, Any, tuple[Any, int] | None] | None = None
        self.swept: object | None = None
        # the leading system item of the last render (role, text, item), when not instructions
        self.head: tuple[str, str, Any] | None = None
        # Record kind -> the stages its renders reached through their relay, as observed
        # (never a list kept by hand): what that kind's tables are keyed on.
        self.reached: dict[str, tuple[str, ...]] = {}
        # The records its renders checked (records built in code are checked once).
        self.checked = CheckedRecords()

    def record_table(self, kind: str, key: Hashable) -> RecordTable:
        tables = self.records.get(kind)
        if tables is None:
            tables = self.records[kind] = BoundedTable(self._size)
        table = tables.get(key)
        if table is None:
            table = RecordTable()
            tables.put(key, table)
        return table

    def rekey(self, kind: str, old: Hashable, new: Hashable | None) -> None:
        """Keep the table of ``kind`` that was under ``old`` under ``new`` instead; with
        ``new`` ``None`` (the kind is not memoised after all), forget it."""
        tables = self.records.get(kind)
        table = tables.get(old) if tables is not None else None
        if tables is None or table is None:
            return
        tables.discard(old)
        if new is not None:
            tables.put(new, table)
        elif not len(tables):
            del self.records[kind]

    def rekey_timelines(self, old: tuple[Any, ...], new: tuple[Any, ...]) -> None:
        """Keep the timelines kept under record keys ``old`` under ``new`` instead (with the
        same filter key); with ``new`` holding ``None``, forget them."""
        kept: dict[Any, TimelineState] = self.timelines._data
        for key in [key for key in kept if key[0] == old]:
            state = kept.pop(key)
            if None not in new:
                self.timelines.put((new, key[1]), state)

    def clear(self) -> None:
        """Forget everything rendered (the next render is cold). The records it checked stay
        checked: a frozen record that passed its check always does (``checked.clear()``
        forgets them too)."""
        with self.lock:
            self.reached.clear()
            self.records.clear()
            self.timelines.clear()
            self.sweeps.clear()
            self.body = None
            self.inlined = None
            self.handles = None
            self.loaded_from = {}
            self.input_from = None
            self.swept = None
            self.head = None

    def __repr__(self) -> str:
        kept = sum(len(t) for k in self.records.values() for t in k._data.values())
        return f"RenderMemo(records={kept}, sweeps={len(self.sweeps)})"
