"""Step 2 of ``build_input``, the timeline, and what a warm renderer reuses of it.

Every message, surfaced thought, tool call and hosted item goes through its stage, in
``(created_at, seq)`` order (:func:`turnwire.model.timeline.timeline`), and under
``render.context_placement: timeline`` every memory and retrieved record through
``render_timeline_context``, in its place among them
(:func:`turnwire.model.timeline.context_order_key`). Each record kind
renders through a relay of its own: the stages that relay reached are what the kind's memo
entries are keyed on (:func:`_note_reached`), so a changed implementation of any stage a
record's render touched renders it again. On top of that rule:

- a grown thread extends the last timeline's lists instead of building them anew;
- records the memo holds are not rendered again (their entries in a ``RecordTable``);
- a first render lays out each kind's outputs in one pass per kind (:func:`_timeline_in_bulk`).

The differential tests hold every one of these to the bytes a cold render gives.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from functools import partial
from itertools import compress, repeat
from itertools import count as count_from
from operator import is_, is_not
from typing import Any

import msgspec

from turnwire.config.options import RenderOptions
from turnwire.model.records import (
    HostedItem,
    Memory,
    Message,
    Retrievable,
    Thought,
    Thread,
    Tool,
    ToolCall,
)
from turnwire.model.timeline import CONTEXT_RANKS, context_order_key
from turnwire.rendering._incremental.identity import first_difference
from turnwire.rendering._incremental.memo import (
    Entry,
    RecordTable,
    RenderMemo,
    TimelineState,
    stage_key,
)
from turnwire.rendering.items import (
    _hosted_items,
    _thought_items,
    _thought_text_items,
    _tool_call_items,
)
from turnwire.rendering.relay import StagePlan, StageRelay, positional_caller
from turnwire.wire import InputItem

# The record kinds of the timeline, each rendered through a relay of its own: the stages a
# kind's renders reached through it (composites' sub-stages included) are what its memo entries
# are keyed on, as observed, never as listed. The pipeline itself reads ``reasoning_replay``
# for thoughts. Memories and retrieved records are kinds of their own (their ids may be the
# same), rendered only under ``context_placement: timeline``: under ``leading`` a render has
# the first four kinds alone (so it forks, keys and looks up nothing more than before).
_KINDS = ("message", "tool_call", "thought", "hosted", "memory", "retrievable")


_RECORD_KINDS = _KINDS[:4]


_PIPELINE_READS = {"thought": ("reasoning_replay",)}


_RECORD_ENCODER = msgspec.json.Encoder()


# How many differing positions ``_differences`` finds by bisection before it scans the rest
# element by element (a thread loaded anew differs everywhere).
_BISECTED_DIFFERENCES = 8


# How many rewritten thoughts a timeline takes over in place (re-rendered and compared) before
# it renders from the start.
_REWRITTEN_MAX = 16


# A record table forgets the records of other threads once it holds more than twice the
# current thread's records and this many.
_SPARE_RECORDS = 256


def _same_record(old: Any, new: Any) -> bool:
    """Whether a memoised record renders like ``new``: the same object, else the same content.

    Content is compared as encoded bytes, not with ``==``: ``1 == 1.0 == True`` in stored
    arguments, and equal datetimes in other offsets, render differently.
    """
    if old is new:
        return True
    if type(old) is not type(new):
        return False
    return bool(_RECORD_ENCODER.encode(old) == _RECORD_ENCODER.encode(new))


def _extends(
    old: tuple[Any, ...], new: tuple[Any, ...], lineage: tuple[Any, Any, int, list[int]] | None
) -> bool:
    """Whether ``new`` starts with the records of ``old``: the same objects, or, where a record
    was built again (a file pointer loaded anew), the same content.

    ``lineage`` is how pointer loading built ``new``: (``new``, the tuple it kept a prefix of,
    how many it kept, which kept positions it loaded again). When ``old`` is that tuple, only
    those positions and what follows the kept prefix are compared.
    """
    if new is old:
        return True
    size = len(old)
    if len(new) < size:
        return False
    known, suspects = 0, []
    if lineage is not None and lineage[0] is new and lineage[1] is old:
        known, suspects = min(lineage[2], size), lineage[3]
    if not all(_same_record(old[i], new[i]) for i in suspects if i < known):
        return False
    return all(_same_record(old[i], new[i]) for i in _differences(old, new, known, size))


def _differences(old: Sequence[Any], new: Sequence[Any], start: int, size: int) -> Iterator[int]:
    """The positions in ``[start, size)`` where ``old`` and ``new`` hold other objects, in
    order: the first few found by bisection (a grown thread differs nowhere, or where a few
    records were built again), the rest by one scan (a thread loaded anew differs
    everywhere)."""
    position = first_difference(old, new, start, size)
    for _ in range(_BISECTED_DIFFERENCES):
        if position == size:
            return
        yield position
        position = first_difference(old, new, position + 1, size)
    yield from compress(count_from(position), map(is_not, old[position:size], new[position:size]))


def _filters_each_thought(plan: StagePlan, options: RenderOptions) -> bool:
    """Whether ``filter_thoughts`` declares that it decides thought by thought, in order, for
    these options (``decides_each_thought``): then a grown thread's new thoughts are filtered
    alone."""
    decides = plan.declared("filter_thoughts", "decides_each_thought")
    return decides is not None and bool(decides(options.thought_surfacing))


def _surfaced_key(thought: Thought) -> tuple[Any, int, str]:
    return (thought.created_at, thought.seq, thought.id)


def _surface(
    thread: Thread,
    options: RenderOptions,
    stages: Any,
    plan: StagePlan,
    state: TimelineState | None,
) -> tuple[tuple[Thought, ...], bool, list[int]]:
    """``filter_thoughts`` of the thread, extended from the last timeline's when that is exact
    (the built-in filter decides thought by thought unless only the latest is surfaced),
    whether it was so extended, and which of the last timeline's thoughts the thread holds
    rewritten (positions in both; see :func:`_rewritten`)."""
    each = _filters_each_thought(plan, options)
    if state is not None:
        changed = _rewritten(state.thoughts, thread.thoughts)
        size = len(state.thoughts)
        if changed == [] and len(thread.thoughts) == size:
            return state.surfaced, True, []
        if changed == [] and each:
            added = tuple(stages.filter_thoughts(thoughts=thread.thoughts[size:]) or ())
            previous: tuple[Thought, ...] = state.surfaced
            if not added or not previous or _surfaced_key(added[0]) >= _surfaced_key(previous[-1]):
                return _joined(previous, added, state.thoughts, thread.thoughts), True, []
        elif changed and each and state.surfaced is state.thoughts:
            # Every thought was surfaced; so must the rewritten ones be, in the same places,
            # and the new ones after them.
            old, new = state.thoughts, thread.thoughts
            again = tuple(new[i] for i in changed) + new[size:]
            kept = tuple(stages.filter_thoughts(thoughts=again) or ())
            if (
                len(kept) == len(again)
                and all(map(is_, kept, again))
                and all(_surfaced_key(old[i]) == _surfaced_key(new[i]) for i in changed)
                and (size == len(new) or _surfaced_key(new[size]) >= _surfaced_key(old[-1]))
            ):
                return new, True, changed
    surfaced = tuple(stages.filter_thoughts(thoughts=thread.thoughts) or ())
    if len(surfaced) == len(thread.thoughts) and first_difference(surfaced, thread.thoughts) == len(
        surfaced
    ):
        surfaced = thread.thoughts  # every one: the thread's own tuple, known by identity
    return surfaced, False, []


def _rewritten(old: tuple[Any, ...], new: tuple[Any, ...]) -> list[int] | None:
    """The positions of ``old`` where ``new`` holds a record of other content (a run stamps the
    fingerprints of the reasoning it recorded once the next request is rendered), or ``None``
    when ``new`` is shorter or more than a few changed."""
    size = len(old)
    if len(new) < size:
        return None
    changed: list[int] = []
    for index in _differences(old, new, 0, size):
        if not _same_record(old[index], new[index]):
            if len(changed) == _REWRITTEN_MAX:
                return None
            changed.append(index)
    return changed


def _joined(
    previous: tuple[Thought, ...],
    added: tuple[Thought, ...],
    old: tuple[Thought, ...],
    new: tuple[Thought, ...],
) -> tuple[Thought, ...]:
    """``previous + added``; that is ``new`` itself when every thought was surfaced (no copy of
    a tuple that grows with the thread)."""
    size = len(previous)
    if (
        size == len(old)
        and size + len(added) == len(new)
        and first_difference(previous, old) == size
        and first_difference(added, new[size:]) == len(added)
    ):
        return new
    return previous + added


_Entry = tuple[
    Any, float, int, int, "Message | Thought | ToolCall | HostedItem | Memory | Retrievable"
]


# The first rank of the context items (memories 4, retrieved records 5), placed by
# ``context_order_key`` instead of their ``(created_at, seq)``: the sources' fifth and sixth.
_CONTEXT_RANK = CONTEXT_RANKS[0]


def _entries(
    sources: tuple[tuple[Any, ...], ...], starts: tuple[int, ...] = (0, 0, 0, 0, 0, 0)
) -> list[_Entry]:
    entries: list[_Entry] = []
    for rank, (records, start) in enumerate(zip(sources, starts, strict=True)):
        if rank < _CONTEXT_RANK:
            entries += [
                (r.created_at, r.seq, rank, i, r) for i, r in enumerate(records[start:], start)
            ]
        elif len(records) > start:
            entries += [
                (*context_order_key(r, rank, i), r) for i, r in enumerate(records[start:], start)
            ]
    entries.sort()  # the first four fields are unique, so records are never compared
    return entries


class _Timeline:
    """The timeline items of one render: items, reasoning candidates, and what they came from."""

    __slots__ = (
        "base_items",
        "base_size",
        "base_thoughts",
        "candidate_indexes",
        "candidate_thoughts",
        "items",
        "kept_thoughts",
        "rewrites",
    )

    def __init__(
        self,
        items: list[InputItem],
        indexes: list[int],
        thoughts: list[Thought],
        base: TimelineState | None = None,
        kept_thoughts: int = 0,
        rewrites: array[int] | None = None,
    ) -> None:
        self.items = items
        self.candidate_indexes = indexes
        self.candidate_thoughts = thoughts
        # The lists of the last timeline these extend, and how many of their leading elements
        # these begin with (the same objects): often the very same lists, grown in place.
        self.base_items: list[InputItem] | None = base.items if base is not None else None
        self.base_thoughts: list[Thought] | None = (
            base.candidate_thoughts if base is not None else None
        )
        self.base_size = base.sizes[0] if base is not None else 0
        self.kept_thoughts = kept_thoughts
        # Where ``thoughts`` was rewritten in place, in order (it travels with the list, which
        # whoever holds reads with it: see TimelineState).
        self.rewrites = rewrites if rewrites is not None else array("q")


def _grown(kept: list[Any], size: int) -> list[Any]:
    """``kept`` to append to in place when its length is still ``size`` (a list of the memo
    that only grows), else a copy of its first ``size`` elements."""
    return kept if len(kept) == size else kept[:size]


class _WarnSink:
    """The ``warn`` a render's stages are given: appends to the render's warnings and, while
    a kind of record is rendered in bulk, notes which record each warning came from."""

    __slots__ = ("batch", "positions", "warnings")

    def __init__(self, warnings: list[str]) -> None:
        self.warnings = warnings
        # the list the bulk render is filling (its length is the record being rendered)
        self.batch: list[Any] | None = None
        self.positions: list[int] = []

    def __call__(self, message: str) -> None:
        self.warnings.append(message)
        if self.batch is not None:
            self.positions.append(len(self.batch))


def _extend_is_incremental() -> bool:
    """Whether ``list.extend`` of an iterator appends each element before it asks for the next
    (CPython does), which is how :class:`_WarnSink` knows the record being rendered."""
    out: list[int] = []
    seen: list[int] = []

    def noted(value: int) -> int:
        seen.append(len(out))
        return value

    out.extend(map(noted, range(12)))
    return seen == list(range(12))


_BULK = _extend_is_incremental()


def _in_bulk(
    render: Callable[..., Any],
    columns: tuple[Iterable[Any], ...],
    sink: _WarnSink,
    as_tuples: bool = False,
) -> tuple[list[Any], dict[int, tuple[str, ...]]]:
    """``render`` of each row of ``columns`` (one call per record, in order), and the
    warnings each record's call gave, by row (taken out of the render's warnings: they are
    put back in timeline order).

    ``as_tuples``: each output made a tuple (a stage may return any iterable, or ``None``),
    with the warnings a lazy output gives as it is consumed still noted against its row.
    """
    outputs: list[Any] = []
    warnings = sink.warnings
    before = len(warnings)
    sink.batch, sink.positions = outputs, []
    try:
        outputs.extend(map(render, *columns))
        if as_tuples and any(map(is_not, map(type, outputs), repeat(tuple))):
            # a generator warns as it is consumed: consumed here, row by row, as a record
            # rendered on its own would be
            converted: list[Any] = []
            sink.batch = converted
            converted.extend(map(_as_tuple, outputs))
            outputs = converted
    finally:
        sink.batch = None
    said: dict[int, tuple[str, ...]] = {}
    if len(warnings) > before:
        for position, message in zip(sink.positions, warnings[before:], strict=True):
            said[position] = (*said.get(position, ()), message)
        del warnings[before:]
    return outputs, said


def _unseen(table: RecordTable | None, records: tuple[Any, ...]) -> bool:
    """Whether ``table`` holds none of ``records`` by id (a thread the memo never rendered, in
    a memo that may hold others): then they are all rendered in bulk."""
    return table is None or table.holds_none_of(records)


def _as_tuple(output: Any) -> tuple[Any, ...]:
    """A stage output as a tuple (a stage may return any iterable, or ``None``)."""
    return output if type(output) is tuple else tuple(output or ())


def _thoughts_in_bulk(
    surfaced: tuple[Thought, ...],
    replay: bool,
    render_reasoning: Callable[[Thought], Any],
    stages: Any,
    sink: _WarnSink,
) -> tuple[list[tuple[InputItem, ...]], list[bool], dict[int, tuple[str, ...]]]:
    """:func:`_thought_items` of each surfaced thought, in bulk: every reasoning item first,
    then the text form of the thoughts that have none; and what each thought's calls said."""
    if not replay:
        texts, said = _in_bulk(_thought_text_items, (surfaced, repeat(False), repeat(stages)), sink)
        return texts, [False] * len(texts), said
    found, said = _in_bulk(render_reasoning, (surfaced,), sink)
    rendered: list[tuple[InputItem, ...]] = [(item,) for item in found]
    candidates = [item is not None for item in found]
    missing = [position for position, item in enumerate(found) if item is None]
    if missing:
        texts, text_said = _in_bulk(
            _thought_text_items,
            ([surfaced[i] for i in missing], repeat(True), repeat(stages)),
            sink,
        )
        for position, text in zip(missing, texts, strict=True):
            rendered[position] = text
        for row, messages in text_said.items():
            said[missing[row]] = (*said.get(missing[row], ()), *messages)
    return rendered, candidates, said


def _not_placed(context_item: Any) -> Any:
    """The context renderer under ``context_placement: leading``: the timeline holds no
    memory or retrieved record then, so it is never called."""
    raise AssertionError(f"{context_item!r} is not placed in the timeline")


def _context_in_bulk(
    render: Callable[..., Any], items: tuple[Any, ...], sink: _WarnSink
) -> tuple[list[Any], dict[int, tuple[str, ...]]]:
    """``render_timeline_context`` of each memory or retrieved record, in bulk (nothing to do
    under ``context_placement: leading``, where the timeline holds none)."""
    if not items:
        return [], {}
    return _in_bulk(render, (items,), sink, as_tuples=True)


def _timeline_in_bulk(
    entries: list[_Entry],
    sources: tuple[tuple[Any, ...], ...],
    declaring: Callable[[ToolCall], Tool | None],
    renderers: tuple[Callable[..., Any], ...],
    relays: tuple[StageRelay, StageRelay],
    replay: bool,
    tables: tuple[RecordTable | None, ...],
    sink: _WarnSink,
    timeline: tuple[list[InputItem], list[int], list[Thought]],
) -> None:
    """The timeline of records none of which the memo holds: each kind rendered in one call
    per record, without a Python step of the pipeline's between two records, then the
    outputs laid out in timeline order (and the stages' warnings with them).

    ``renderers``: the message and tool-call-result stages, ``render_reasoning_item``, and
    ``render_timeline_context`` of memories and of retrieved records, by position; ``relays``:
    the thoughts' and the hosted items' own relays; ``tables``: the record tables of messages,
    thoughts, tool calls, hosted items, memories, retrieved records.
    """
    messages, surfaced, calls, hosted, memories, retrievables = sources
    render_message, render_result, render_reasoning, render_memory, render_retrievable = renderers
    thought_stages, hosted_stages = relays
    message_out, message_said = _in_bulk(render_message, (messages,), sink, as_tuples=True)
    thought_out, candidates, thought_said = _thoughts_in_bulk(
        surfaced, replay, render_reasoning, thought_stages, sink
    )
    call_tools = list(map(declaring, calls))
    call_out, call_said = _in_bulk(
        _tool_call_items, (calls, call_tools, repeat(render_result)), sink
    )
    hosted_out, hosted_said = _in_bulk(_hosted_items, (hosted, repeat(hosted_stages)), sink)
    memory_out, memory_said = _context_in_bulk(render_memory, memories, sink)
    retrievable_out, retrievable_said = _context_in_bulk(render_retrievable, retrievables, sink)

    message_table, thought_table, call_table, hosted_table, memory_table, retrievable_table = tables
    if message_table is not None:
        message_table.add_columns(messages, repeat(None), message_out, repeat(False), message_said)
    if thought_table is not None:
        thought_table.add_columns(surfaced, repeat(None), thought_out, candidates, thought_said)
    if call_table is not None:
        call_table.add_columns(calls, call_tools, call_out, repeat(False), call_said)
    if hosted_table is not None:
        hosted_table.add_columns(hosted, repeat(None), hosted_out, repeat(False), hosted_said)
    if memory_table is not None and memories:
        memory_table.add_columns(memories, repeat(None), memory_out, repeat(False), memory_said)
    if retrievable_table is not None and retrievables:
        retrievable_table.add_columns(
            retrievables, repeat(None), retrievable_out, repeat(False), retrievable_said
        )

    items, indexes, thoughts = timeline
    extend = items.extend
    outputs = (message_out, thought_out, call_out, hosted_out, memory_out, retrievable_out)
    said = (message_said, thought_said, call_said, hosted_said, memory_said, retrievable_said)
    warned = any(said)
    warnings = sink.warnings
    add_index, add_thought = indexes.append, thoughts.append
    for _, _, rank, position, record in entries:
        if rank == 1 and candidates[position]:
            add_index(len(items))
            add_thought(record)  # type: ignore[arg-type]  # rank 1: a thought
        extend(outputs[rank][position])
        if warned and position in said[rank]:
            warnings.extend(said[rank][position])


def _timeline(
    thread: Thread,
    options: RenderOptions,
    stages: Any,
    plan: StagePlan,
    injectable: dict[str, Any],
    memo: RenderMemo,
    warnings: list[str],
    sink: _WarnSink,
) -> _Timeline:
    kinds = _KINDS if options.context_placement == "timeline" else _RECORD_KINDS
    relays = tuple(stages.fork() for _ in kinds)
    keys = _kind_keys(plan, injectable, memo, kinds)
    try:
        return _timeline_through(
            thread, options, stages, relays, plan, injectable, memo, warnings, sink, keys
        )
    finally:
        _note_reached(relays, plan, injectable, memo, keys, kinds)
        for relay in relays:  # each holds itself: freed here, not by the collector
            relay.release()


def _kind_keys(
    plan: StagePlan, injectable: dict[str, Any], memo: RenderMemo, kinds: tuple[str, ...]
) -> tuple[Hashable | None, ...]:
    """Each record kind's memo key: the implementations of the stages its renders reached
    (and the options those read), or ``None`` when it is not memoised."""
    return tuple(
        stage_key(plan, memo.reached.get(kind, ()), injectable, _PIPELINE_READS.get(kind, ()))
        for kind in kinds
    )


def _note_reached(
    relays: tuple[StageRelay, ...],
    plan: StagePlan,
    injectable: dict[str, Any],
    memo: RenderMemo,
    keys: tuple[Hashable | None, ...],
    kinds: tuple[str, ...],
) -> None:
    """Add the stages each kind's relay reached to what that kind is keyed on; a table made
    under a key that lacked some is kept under the full key (its entries were made by this
    render, with these implementations) and the timelines kept under the old keys dropped."""
    grown = False
    for kind, relay in zip(kinds, relays, strict=True):
        known = memo.reached.get(kind, ())
        reached = relay.reached()
        if not set(reached) <= set(known):
            memo.reached[kind] = tuple(sorted({*known, *reached}))
            grown = True
    if not grown:
        return
    new_keys = _kind_keys(plan, injectable, memo, kinds)
    for kind, old, new in zip(kinds, keys, new_keys, strict=True):
        if old is not None and old != new:
            memo.rekey(kind, old, new)
    memo.rekey_timelines(keys, new_keys)


def _timeline_through(
    thread: Thread,
    options: RenderOptions,
    stages: Any,
    relays: tuple[StageRelay, ...],
    plan: StagePlan,
    injectable: dict[str, Any],
    memo: RenderMemo,
    warnings: list[str],
    sink: _WarnSink,
    keys: tuple[Hashable | None, ...],
) -> _Timeline:
    message_stages, call_stages, thought_stages, hosted_stages, *context_stages = relays
    message_table, call_table, thought_table, hosted_table, *context_tables = (
        None if key is None else memo.record_table(kind, key)
        for kind, key in zip(_KINDS, keys, strict=False)  # the first four kinds, or all six
    )
    filter_key = stage_key(plan, ("filter_thoughts",), injectable)
    timeline_key = None if None in keys or filter_key is None else (keys, filter_key)
    state = None if timeline_key is None else memo.timelines.get(timeline_key)

    surfaced, surfaced_extends, changed = _surface(thread, options, stages, plan, state)
    # the memories and retrieved records the timeline holds: all of them, or none (leading)
    memories, retrievables = (thread.memories, thread.retrievables) if context_stages else ((), ())
    sources = (
        thread.messages,
        surfaced,
        thread.tool_calls,
        thread.hosted_items,
        memories,
        retrievables,
    )
    first = len(warnings)

    entries: list[_Entry] | None = None
    if state is not None and (
        thread.tools is state.tools
        or (
            len(thread.tools) == len(state.tools)
            and all(map(_same_record, state.tools, thread.tools))
        )
    ):
        old = (
            state.messages,
            state.surfaced,
            state.tool_calls,
            state.hosted_items,
            state.memories,
            state.retrievables,
        )
        loaded_from = memo.loaded_from
        if (
            _extends(state.messages, thread.messages, loaded_from.get("messages"))
            and (surfaced_extends or _extends(state.surfaced, surfaced, None))
            and _extends(state.tool_calls, thread.tool_calls, loaded_from.get("tool_calls"))
            and _extends(state.hosted_items, thread.hosted_items, None)
            and _extends(state.memories, memories, None)
            and _extends(state.retrievables, retrievables, None)
        ):
            entries = _entries(sources, tuple(len(records) for records in old))
            if entries and state.last_key is not None and entries[0][:4] <= state.last_key:
                entries = None  # a new record sorts among the old ones
    render_reasoning = positional_caller(thought_stages, "render_reasoning_item", ("thought",))
    replay = options.reasoning_replay != "off"
    rewritten: dict[int, Thought] | None = {}
    if entries is not None and state is not None and changed:
        rewritten = _rerendered(
            [(state.surfaced[i], surfaced[i]) for i in changed],
            thought_table.entries if thought_table is not None else None,
            warnings,
            lambda thought: _thought_items(thought, replay, render_reasoning, thought_stages),
        )
        if rewritten is None:
            entries = None  # a rewritten thought renders otherwise: from the start
    if entries is not None and state is not None:
        items: list[InputItem] = _grown(state.items, state.sizes[0])
        indexes: list[int] = _grown(state.candidate_indexes, state.sizes[1])
        thoughts: list[Thought] = _grown(state.candidate_thoughts, state.sizes[2])
        rewrites = state.rewrites if thoughts is state.candidate_thoughts else array("q")
        kept_thoughts = len(thoughts)
        if rewritten:  # in place, logged: a sweep's checkpoints rest on the thoughts they saw
            kept_thoughts = _rewrite(thoughts, rewritten, rewrites)
        warnings.extend(state.warnings)
        last_key = state.last_key
        base = state
    else:
        base = None
        entries = _entries(sources)
        items, indexes, thoughts = [], [], []
        rewrites = array("q")
        kept_thoughts = 0
        last_key = None

    tools = {tool.name: tool for tool in thread.tools}
    declaring = partial(_declaring, tools, thread)
    render_message = positional_caller(message_stages, "render_timeline_message", ("message",))
    render_result = positional_caller(call_stages, "render_tool_call_result", ("tool_call", "tool"))
    memory_table, retrievable_table = context_tables or (None, None)
    render_memory = render_retrievable = _not_placed
    if context_stages:
        memory_stages, retrievable_stages = context_stages
        render_memory = positional_caller(
            memory_stages, "render_timeline_context", ("context_item",)
        )
        render_retrievable = positional_caller(
            retrievable_stages, "render_timeline_context", ("context_item",)
        )
    tables = (
        message_table,
        thought_table,
        call_table,
        hosted_table,
        memory_table,
        retrievable_table,
    )
    one_by_one = entries
    if base is None and _BULK and all(map(_unseen, tables, sources)):
        before_bulk = len(warnings)
        try:
            _timeline_in_bulk(
                entries,
                sources,
                declaring,
                (
                    render_message,
                    render_result,
                    render_reasoning,
                    render_memory,
                    render_retrievable,
                ),
                (thought_stages, hosted_stages),
                replay,
                tables,
                sink,
                (items, indexes, thoughts),
            )
            one_by_one = []
        except Exception:
            # A record failed: kind by kind is not timeline order, and the error must be the
            # one of the first record in the timeline that fails (as record by record): the
            # bulk pass left nothing in the memo or the lists; render record by record.
            del warnings[before_bulk:]
            del items[:], indexes[:], thoughts[:]
    extend = items.extend
    # Read only now: a table's entries are made from its columns when first read (see
    # RecordTable), and a render in bulk reads none.
    message_entries, thought_entries, call_entries, hosted_entries, *context_entries = (
        table.entries if table is not None and one_by_one else None for table in tables
    )
    for entry in one_by_one:
        record: Any = entry[4]  # dispatched on its exact type below
        before = len(warnings)
        kind = type(record)
        if kind is Message:
            hit = message_entries.get(record.id) if message_entries else None
            if hit is not None and _same_record(hit.record, record):
                extend(hit.rendered)
                warnings.extend(hit.said)
                continue
            rendered = render_message(record) or ()
            if type(rendered) is not tuple:
                rendered = tuple(rendered)
            if message_entries is not None:
                said = tuple(warnings[before:]) if len(warnings) > before else ()
                message_entries[record.id] = Entry(record, None, rendered, False, said)
            extend(rendered)
        elif kind is ToolCall:
            tool = declaring(record)
            hit = call_entries.get(record.id) if call_entries else None
            if hit is not None and _same_record(hit.record, record) and _same_tool(hit.tool, tool):
                extend(hit.rendered)
                warnings.extend(hit.said)
                continue
            rendered = _tool_call_items(record, tool, render_result)
            if call_entries is not None:
                said = tuple(warnings[before:]) if len(warnings) > before else ()
                call_entries[record.id] = Entry(record, tool, rendered, False, said)
            extend(rendered)
        elif kind is HostedItem:
            hit = hosted_entries.get(record.id) if hosted_entries else None
            if hit is not None and _same_record(hit.record, record):
                extend(hit.rendered)
                warnings.extend(hit.said)
                continue
            rendered = _hosted_items(record, hosted_stages)
            if hosted_entries is not None:
                said = tuple(warnings[before:]) if len(warnings) > before else ()
                hosted_entries[record.id] = Entry(record, None, rendered, False, said)
            extend(rendered)
        elif entry[2] >= _CONTEXT_RANK:  # a memory (rank 4) or a retrieved record (rank 5)
            memory = entry[2] == _CONTEXT_RANK
            found = context_entries[0 if memory else 1]
            hit = found.get(record.id) if found else None
            if hit is not None and _same_record(hit.record, record):
                extend(hit.rendered)
                warnings.extend(hit.said)
                continue
            rendered = _as_tuple((render_memory if memory else render_retrievable)(record))
            if found is not None:
                said = tuple(warnings[before:]) if len(warnings) > before else ()
                found[record.id] = Entry(record, None, rendered, False, said)
            extend(rendered)
        else:
            hit = thought_entries.get(record.id) if thought_entries else None
            if hit is not None and _same_record(hit.record, record):
                rendered, candidate = hit.rendered, hit.candidate
                warnings.extend(hit.said)
            else:
                rendered, candidate = _thought_items(
                    record, replay, render_reasoning, thought_stages
                )
                if thought_entries is not None:
                    said = tuple(warnings[before:]) if len(warnings) > before else ()
                    thought_entries[record.id] = Entry(record, None, rendered, candidate, said)
            if candidate:
                indexes.append(len(items))
                thoughts.append(record)
            extend(rendered)
    if entries:
        last_key = entries[-1][:4]

    kinds: tuple[tuple[Any, ...], ...] = sources
    for table, records in zip(tables, kinds, strict=True):
        if table is not None and len(table) > 2 * len(records) + _SPARE_RECORDS:
            table.keep_only(records)
    if timeline_key is not None:
        memo.timelines.put(
            timeline_key,
            TimelineState(
                messages=thread.messages,
                thoughts=thread.thoughts,
                surfaced=surfaced,
                tool_calls=thread.tool_calls,
                hosted_items=thread.hosted_items,
                memories=memories,
                retrievables=retrievables,
                tools=thread.tools,
                last_key=last_key,
                items=items,
                candidate_indexes=indexes,
                candidate_thoughts=thoughts,
                rewrites=rewrites,
                warnings=warnings[first:],
                sizes=(len(items), len(indexes), len(thoughts)),
            ),
        )
    return _Timeline(items, indexes, thoughts, base, kept_thoughts, rewrites)


def _rerendered(
    pairs: list[tuple[Thought, Thought]],
    entries: dict[str, Entry] | None,
    warnings: list[str],
    render: Callable[[Thought], tuple[tuple[InputItem, ...], bool]],
) -> dict[int, Thought] | None:
    """For each (memoised thought, its rewritten record): render the record again and keep the
    memoised items when they are the same (same candidacy, same warnings, the same bytes).
    Returns ``id(memoised candidate)`` → its rewritten record, or ``None`` if any renders
    otherwise."""
    if entries is None:
        return None
    replaced: dict[int, Thought] = {}
    for old, new in pairs:
        hit = entries.get(old.id)
        if new.id != old.id or hit is None or hit.record is not old:
            return None
        before = len(warnings)
        rendered, candidate = render(new)
        said = tuple(warnings[before:])
        del warnings[before:]
        if (
            candidate != hit.candidate
            or said != hit.said
            or _RECORD_ENCODER.encode(rendered) != _RECORD_ENCODER.encode(hit.rendered)
        ):
            return None
        entries[new.id] = Entry(new, None, hit.rendered, candidate, said)
        if candidate:
            replaced[id(old)] = new
    return replaced


def _rewrite(thoughts: list[Thought], rewritten: dict[int, Thought], log: array[int]) -> int:
    """Put each rewritten thought in its memoised candidate's place in ``thoughts``, noting each
    place in ``log``; return the first place (``len(thoughts)`` when none was found).

    In place, not in a copy (a copy of every candidate per request at 25,000 of them): a
    sweep that saw the list before reads ``log`` after the length it saw, so it knows which
    of the thoughts its checkpoints rest on changed since."""
    first, found = len(thoughts), 0
    for position in range(len(thoughts) - 1, -1, -1):  # a run's own thoughts: the latest ones
        new = rewritten.get(id(thoughts[position]))
        if new is not None:
            thoughts[position] = new
            log.append(position)
            first, found = position, found + 1
            if found == len(rewritten):
                break
    return first


def _declaring(tools: dict[str, Tool], thread: Thread, call: ToolCall) -> Tool | None:
    """The declaration a call's result is rendered with: the thread's function of its name
    (``tools``, by name), or, for a call into a namespace, that namespace's function
    (:func:`~turnwire.model.functions.called_tool`, the one rule the client runs handlers by):
    never a top-level tool that only shares the name, whose ``trusted`` flag is not the
    namespace's to borrow."""
    if call.namespace is None:
        return tools.get(call.tool)
    # Imported here: a thread without namespaced calls never needs it (start-up).
    from turnwire.model.functions import called_tool

    return called_tool(thread, call.tool, call.namespace)


def _same_tool(old: Tool | None, new: Tool | None) -> bool:
    if old is None or new is None:
        return old is new
    return _same_record(old, new)
