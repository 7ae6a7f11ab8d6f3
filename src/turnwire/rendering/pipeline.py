"""``build_input``: a stored thread → the Responses ``instructions``, ``input`` and ``tools``.

The four steps of the seed, each through the stage relay, after the compaction cut:

0. the compaction cut (:func:`turnwire.rendering.compaction.compacted`): when the thread holds a
   ``compaction`` hosted item, every timeline record that sorts before the latest one
   (messages, thoughts, tool calls, hosted items, earlier compactions) is left out, and the
   compaction item is replayed in their place; the header (system prompt, buckets, tools) is
   untouched. It is a rule, not a stage: the memo sees the cut thread (a new compaction drops
   records from the front, so the timeline is rebuilt from the per-record entries, and the
   sweep restarts), and a thread without compaction is the same object as before;
1. leading system content (prompt + buckets before ``timeline``), placed by
   ``system_prompt_channel``;
2. the timeline: messages, surfaced thoughts, tool calls and hosted items ordered by
   ``(created_at, seq)`` (stable: on a full tie messages, then thoughts, then tool calls, then
   hosted items), a tool call as a ``function_call`` and its ``function_call_output``
   sibling, a hosted item through ``render_hosted_item``;
3. the reasoning-pairing sweep, one left-to-right pass over the final input: a reasoning item is
   kept only when its fingerprint matches the prefix before it and the next item is its
   recorded partner carrying an id; an output item keeps its id only right after a kept
   reasoning item (everywhere else the API could not check it); a hosted item, whose id the
   API requires, goes as its text form instead when a reasoning item of its response came
   before it and that reasoning was not kept;
4. trailing buckets (after ``timeline``) as one system item, outside every fingerprint.

The three load-bearing invariants: the sweep sees only the prefix ``fingerprintable_length``
marks; a reasoning item must sort strictly before its partner; ``tools`` is ``None``, never
empty, when nothing is declared.
"""

from __future__ import annotations

import bisect
import hashlib
import logging
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from itertools import compress, repeat
from itertools import count as count_from
from operator import attrgetter, is_, is_not
from typing import Any, Literal

import msgspec

from turnwire.config.options import RenderOptions, bucket_order_problem
from turnwire.errors import ConfigError
from turnwire.model.canonical import canonical_json
from turnwire.model.records import REPLAY_TAG, HostedItem, Message, Thought, Thread, Tool, ToolCall
from turnwire.rendering._incremental.identity import first_difference
from turnwire.rendering._incremental.memo import (
    Checkpoint,
    Entry,
    RecordTable,
    RenderMemo,
    SweepState,
    TimelineState,
    common_prefix,
    stage_key,
)
from turnwire.rendering.compaction import compacted
from turnwire.rendering.relay import StagePlan, StageRelay, positional_caller
from turnwire.stages.system_prompt import render_bucket
from turnwire.stages.thoughts import thought_text
from turnwire.stages.timeline import item_id_matcher
from turnwire.wire import (
    FunctionCall,
    FunctionCallOutput,
    HostedInputItem,
    InputItem,
    InputMessage,
    InputText,
    OutputMessage,
    OutputText,
    ProgramCaller,
    WireTool,
)

__all__ = [
    "PENDING_FINGERPRINT",
    "RenderedInput",
    "build_input",
    "output_item_id",
    "prefix_fingerprint",
    "short_call_id",
    "strip_item_id",
]

logger = logging.getLogger("turnwire")

PENDING_FINGERPRINT = "pending"
"""The ``prefix_fingerprint`` of a reasoning item recorded by a run and not yet stamped: its
render (with the thought's id in ``pending``) keeps it as fresh and computes its fingerprint."""

_MAX_CALL_ID = 64
_CARRIERS = frozenset((OutputMessage, FunctionCall, HostedInputItem))  # the types with an item id
_STRIPPED = frozenset((OutputMessage, FunctionCall))  # the carriers stripped of their id
_CALL_ITEM_ID = item_id_matcher("fc_")  # valid_item_id(item_id, "fc_"), without the lookup
_STALE = "the request prefix changed since it was produced (stale fingerprint)"
_ENCODER = msgspec.json.Encoder()


class RenderedInput(msgspec.Struct, frozen=True, kw_only=True):
    """What ``build_input`` returns.

    :ivar instructions: the leading system text, when the channel is ``instructions``.
    :ivar input: the input items.
    :ivar tools: the declarations, or ``None`` when there are none (never empty).
    :ivar fingerprintable_length: how many leading items the pairing sweep saw.
    :ivar warnings: what the stages reported (also logged).
    :ivar stamped: for each pending reasoning item this render kept (see
        :data:`PENDING_FINGERPRINT`), its thought id and the fingerprint of its prefix here.
    """

    instructions: str | None
    input: tuple[InputItem, ...]
    tools: tuple[WireTool, ...] | None
    fingerprintable_length: int
    warnings: tuple[str, ...] = ()
    stamped: tuple[tuple[str, str], ...] = ()


def short_call_id(call_id: str) -> str:
    """A ``call_id`` the API accepts: unchanged up to 64 characters, else a stable digest."""
    if len(call_id) <= _MAX_CALL_ID:
        return call_id
    return "call_" + hashlib.sha256(call_id.encode()).hexdigest()[:40]


def output_item_id(item: object) -> str | None:
    """The id that pairs an output item with a preceding reasoning item, if it carries one."""
    if isinstance(item, OutputMessage | FunctionCall | HostedInputItem):
        return item.id
    return None


def strip_item_id(item: InputItem) -> InputItem:
    """The item without its id (an output message becomes assistant string content)."""
    if isinstance(item, OutputMessage):
        parts = item.content
        if len(parts) == 1 and type(parts[0]) is OutputText:  # what an answer is: one text
            return InputMessage(role="assistant", content=parts[0].text, phase=item.phase)
        text = "\n\n".join(
            part.text if isinstance(part, OutputText) else part.refusal
            for part in item.content
            if (part.text if isinstance(part, OutputText) else part.refusal)
        )
        return InputMessage(role="assistant", content=text, phase=item.phase)
    if isinstance(item, FunctionCall) and item.id is not None:
        return msgspec.structs.replace(item, id=None)
    return item


_PLAIN = frozenset((str, bool, type(None)))


def _needs_js_numbers(value: Any) -> bool:
    """Whether msgspec would print a number of ``value`` unlike ``JSON.stringify``."""
    if type(value) is dict and _PLAIN.issuperset(map(type, value.values())):
        return False  # the usual arguments: strings, flags, nulls
    if isinstance(value, float):
        return True
    if isinstance(value, int):
        return abs(value) >= 2**53
    if isinstance(value, dict):
        return any(_needs_js_numbers(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_needs_js_numbers(v) for v in value)
    return False


def _arguments(tool_call: ToolCall) -> str:
    """``JSON.stringify`` of the stored arguments (compact, insertion order, JS numbers)."""
    args = tool_call.args
    # the usual arguments (strings, flags, nulls) tested here, without a call
    if (type(args) is dict and _PLAIN.issuperset(map(type, args.values()))) or (
        not _needs_js_numbers(args)
    ):
        return _ENCODER.encode(args).decode()
    return canonical_json(args, sort_keys=False)


def _tool_call_items(
    call: ToolCall, tool: Tool | None, render_result: Callable[..., Any]
) -> tuple[InputItem, ...]:
    """The items of one tool call; ``render_result(call, tool)`` is its
    ``render_tool_call_result``."""
    raw_call_id, raw_item_id = call.split_id()
    call_id = raw_call_id if len(raw_call_id) <= _MAX_CALL_ID else short_call_id(raw_call_id)
    item_id = raw_item_id if raw_item_id and _CALL_ITEM_ID(raw_item_id) else None
    caller = None if call.caller is None else ProgramCaller(caller_id=call.caller)
    function_call = FunctionCall(
        call_id=call_id,
        name=call.tool,
        arguments=_arguments(call),
        id=item_id,
        caller=caller,
        namespace=call.namespace,
    )
    if call.result is None:
        return (function_call,)
    output = render_result(call, tool) or ""
    return (function_call, FunctionCallOutput(call_id=call_id, output=output, caller=caller))


def _hosted_items(record: HostedItem, stages: Any) -> tuple[InputItem, ...]:
    """The items of one hosted record, each item form marked with the record's position."""
    rendered = tuple(stages.render_hosted_item(hosted_item=record) or ())
    for item in rendered:
        if type(item) is HostedInputItem and item.recorded is None:
            item.recorded = (record.created_at, record.seq)
    return rendered


def _thought_items(
    thought: Thought, replay: bool, render_reasoning: Callable[[Thought], Any], stages: Any
) -> tuple[tuple[InputItem, ...], bool]:
    """The items of one surfaced thought (``replay``: reasoning replay is not ``off``;
    ``render_reasoning(thought)`` is its ``render_reasoning_item``), and whether the first is
    a reasoning candidate."""
    if replay:
        item = render_reasoning(thought)
        if item is not None:
            return (item,), True
    return _thought_text_items(thought, replay, stages), False


def _thought_text_items(thought: Thought, replay: bool, stages: Any) -> tuple[InputItem, ...]:
    """The text form of a thought that goes without a reasoning item (if it has text)."""
    if (thought.payload is None or replay) and thought_text(thought):
        text = stages.render_thought(thought=thought)
        return (InputMessage(role="assistant", content=text),)
    return ()


# The record kinds of the timeline, each rendered through a relay of its own: the stages a
# kind's renders reached through it (composites' sub-stages included) are what its memo entries
# are keyed on, as observed, never as listed. The pipeline itself reads ``reasoning_replay``
# for thoughts.
_KINDS = ("message", "tool_call", "thought", "hosted")
_PIPELINE_READS = ((), (), ("reasoning_replay",), ())
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
_POSITION = attrgetter("position")
# Which candidates the sweep keeps a checkpoint of when it hashes with the built-in stage (a
# checkpoint then holds the hash state of its prefix): every eighth, and every one of the last
# sixteen (where the next render of a growing thread resumes). A resume or a prefix
# fingerprint between two starts from the one before. Any other fingerprint stage keeps a
# checkpoint of every candidate.
_SNAPSHOT_EVERY = 8
_DENSE_TAIL = 16


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


def _declared(plan: StagePlan, stage: str, capability: str) -> Any:
    """What the one implementation of ``stage`` declares as ``capability`` (an attribute of
    the function), or ``None``. The warm path asks implementations what they promise; it never
    recognises one, so a replacement that declares the same takes the same path."""
    kind, target = plan.targets[stage]
    if kind not in ("only", "override"):
        return None
    return getattr(target[0], capability, None)


def _filters_each_thought(plan: StagePlan, options: RenderOptions) -> bool:
    """Whether ``filter_thoughts`` declares that it decides thought by thought, in order, for
    these options (``decides_each_thought``): then a grown thread's new thoughts are filtered
    alone."""
    decides = _declared(plan, "filter_thoughts", "decides_each_thought")
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


_Entry = tuple[Any, int, int, int, "Message | Thought | ToolCall | HostedItem"]


def _entries(
    sources: tuple[tuple[Any, ...], ...], starts: tuple[int, ...] = (0, 0, 0, 0)
) -> list[_Entry]:
    entries: list[_Entry] = []
    for rank, (records, start) in enumerate(zip(sources, starts, strict=True)):
        entries += [(r.created_at, r.seq, rank, i, r) for i, r in enumerate(records[start:], start)]
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
    )

    def __init__(
        self,
        items: list[InputItem],
        indexes: list[int],
        thoughts: list[Thought],
        base: TimelineState | None = None,
        kept_thoughts: int = 0,
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


_TOOL = attrgetter("tool")


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


def _timeline_in_bulk(
    entries: list[_Entry],
    sources: tuple[tuple[Any, ...], ...],
    tools: dict[str, Tool],
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

    ``renderers``: the message and tool-call-result stages, and ``render_reasoning_item``, by
    position; ``relays``: the thoughts' and the hosted items' own relays; ``tables``: the
    record tables of messages, thoughts, tool calls, hosted items.
    """
    messages, surfaced, calls, hosted = sources
    render_message, render_result, render_reasoning = renderers
    thought_stages, hosted_stages = relays
    message_out, message_said = _in_bulk(render_message, (messages,), sink, as_tuples=True)
    thought_out, candidates, thought_said = _thoughts_in_bulk(
        surfaced, replay, render_reasoning, thought_stages, sink
    )
    call_tools = list(map(tools.get, map(_TOOL, calls)))
    call_out, call_said = _in_bulk(
        _tool_call_items, (calls, call_tools, repeat(render_result)), sink
    )
    hosted_out, hosted_said = _in_bulk(_hosted_items, (hosted, repeat(hosted_stages)), sink)

    message_table, thought_table, call_table, hosted_table = tables
    if message_table is not None:
        message_table.add_columns(messages, repeat(None), message_out, repeat(False), message_said)
    if thought_table is not None:
        thought_table.add_columns(surfaced, repeat(None), thought_out, candidates, thought_said)
    if call_table is not None:
        call_table.add_columns(calls, call_tools, call_out, repeat(False), call_said)
    if hosted_table is not None:
        hosted_table.add_columns(hosted, repeat(None), hosted_out, repeat(False), hosted_said)

    items, indexes, thoughts = timeline
    extend = items.extend
    outputs = (message_out, thought_out, call_out, hosted_out)
    said = (message_said, thought_said, call_said, hosted_said)
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
    relays = tuple(stages.fork() for _ in _KINDS)
    keys = _kind_keys(plan, injectable, memo)
    try:
        return _timeline_through(
            thread, options, stages, relays, plan, injectable, memo, warnings, sink, keys
        )
    finally:
        _note_reached(relays, plan, injectable, memo, keys)


def _kind_keys(
    plan: StagePlan, injectable: dict[str, Any], memo: RenderMemo
) -> tuple[Hashable | None, ...]:
    """Each record kind's memo key: the implementations of the stages its renders reached
    (and the options those read), or ``None`` when it is not memoised."""
    return tuple(
        stage_key(plan, memo.reached.get(kind, ()), injectable, reads)
        for kind, reads in zip(_KINDS, _PIPELINE_READS, strict=True)
    )


def _note_reached(
    relays: tuple[StageRelay, ...],
    plan: StagePlan,
    injectable: dict[str, Any],
    memo: RenderMemo,
    keys: tuple[Hashable | None, ...],
) -> None:
    """Add the stages each kind's relay reached to what that kind is keyed on; a table made
    under a key that lacked some is kept under the full key (its entries were made by this
    render, with these implementations) and the timelines kept under the old keys dropped."""
    grown = False
    for kind, relay in zip(_KINDS, relays, strict=True):
        known = memo.reached.get(kind, ())
        reached = relay.reached()
        if not set(reached) <= set(known):
            memo.reached[kind] = tuple(sorted({*known, *reached}))
            grown = True
    if not grown:
        return
    new_keys = _kind_keys(plan, injectable, memo)
    for kind, old, new in zip(_KINDS, keys, new_keys, strict=True):
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
    message_stages, call_stages, thought_stages, hosted_stages = relays
    message_table, call_table, thought_table, hosted_table = (
        None if key is None else memo.record_table(kind, key)
        for kind, key in zip(_KINDS, keys, strict=True)
    )
    filter_key = stage_key(plan, ("filter_thoughts",), injectable)
    timeline_key = None if None in keys or filter_key is None else (keys, filter_key)
    state = None if timeline_key is None else memo.timelines.get(timeline_key)

    surfaced, surfaced_extends, changed = _surface(thread, options, stages, plan, state)
    sources = (thread.messages, surfaced, thread.tool_calls, thread.hosted_items)
    first = len(warnings)

    entries: list[_Entry] | None = None
    if state is not None and (
        thread.tools is state.tools
        or (
            len(thread.tools) == len(state.tools)
            and all(map(_same_record, state.tools, thread.tools))
        )
    ):
        old = (state.messages, state.surfaced, state.tool_calls, state.hosted_items)
        loaded_from = memo.loaded_from
        if (
            _extends(state.messages, thread.messages, loaded_from.get("messages"))
            and (surfaced_extends or _extends(state.surfaced, surfaced, None))
            and _extends(state.tool_calls, thread.tool_calls, loaded_from.get("tool_calls"))
            and _extends(state.hosted_items, thread.hosted_items, None)
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
        kept_thoughts = len(thoughts)
        if rewritten:  # a copy: the sweep's checkpoints rest on the thoughts they saw
            thoughts, kept_thoughts = _replaced(state.candidate_thoughts, state.sizes[2], rewritten)
        warnings.extend(state.warnings)
        last_key = state.last_key
        base = state
    else:
        base = None
        entries = _entries(sources)
        items, indexes, thoughts = [], [], []
        kept_thoughts = 0
        last_key = None

    tools = {tool.name: tool for tool in thread.tools}
    render_message = positional_caller(message_stages, "render_timeline_message", ("message",))
    render_result = positional_caller(call_stages, "render_tool_call_result", ("tool_call", "tool"))
    tables = (message_table, thought_table, call_table, hosted_table)
    one_by_one = entries
    if base is None and _BULK and all(map(_unseen, tables, sources)):
        before_bulk = len(warnings)
        try:
            _timeline_in_bulk(
                entries,
                sources,
                tools,
                (render_message, render_result, render_reasoning),
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
    message_entries, thought_entries, call_entries, hosted_entries = (
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
            tool = tools.get(record.tool)
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
                tools=thread.tools,
                last_key=last_key,
                items=items,
                candidate_indexes=indexes,
                candidate_thoughts=thoughts,
                warnings=warnings[first:],
                sizes=(len(items), len(indexes), len(thoughts)),
            ),
        )
    return _Timeline(items, indexes, thoughts, base, kept_thoughts)


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


def _replaced(
    thoughts: list[Thought], size: int, rewritten: dict[int, Thought]
) -> tuple[list[Thought], int]:
    """A copy of ``thoughts[:size]`` with the rewritten ones in their places, and how many
    leading thoughts it keeps unchanged."""
    copy = thoughts[:size]
    first, found = size, 0
    for position in range(size - 1, -1, -1):  # a run's own thoughts: the latest ones
        new = rewritten.get(id(copy[position]))
        if new is not None:
            copy[position] = new
            first, found = position, found + 1
            if found == len(rewritten):
                break
    return copy, first


def _same_tool(old: Tool | None, new: Tool | None) -> bool:
    if old is None or new is None:
        return old is new
    return _same_record(old, new)


def _strip_ids(
    out: list[InputItem],
    items: list[InputItem],
    start: int,
    stop: int,
    reasoned: dict[Any, int],
    governing: Any,
) -> None:
    """Append ``items[start:stop]`` to ``out``, :func:`strip_item_id` applied to each id
    carrier.

    A hosted item keeps its item form unless a reasoning item of its own response came before
    it (``reasoned``: each response's timestamp → the ``seq`` of its first reasoning record)
    and the last reasoning item the sweep kept is not of that response (``governing``: its
    timestamp, ``None`` when the last one was dropped): then its text form goes instead (the
    API refuses the item without its reasoning), or nothing.
    """
    append = out.append
    for item in items[start:stop]:
        kind = type(item)
        if kind not in _CARRIERS:
            append(item)
        elif kind is HostedInputItem:
            assert isinstance(item, HostedInputItem)
            recorded = item.recorded
            if recorded is not None and reasoned:
                first = reasoned.get(recorded[0])
                # on a full tie a thought sorts first
                if first is not None and first <= recorded[1] and governing != recorded[0]:
                    if item.unpaired is not None:
                        append(item.unpaired)
                    continue
            append(item)
        else:
            append(strip_item_id(item))


def _check_programs(thread: Thread, items: Sequence[InputItem], warnings: list[str]) -> None:
    """Warn about the calls whose ``caller`` names a program that ``items`` do not hold as a
    ``program`` item (it went as its text form: not sealed, or its reasoning not sent)."""
    callers = dict.fromkeys(call.caller for call in thread.tool_calls if call.caller is not None)
    if not callers:
        return
    hosted = HostedInputItem
    sent = {
        item.get("call_id")
        for item in items
        if type(item) is hosted and item.get("type") == "program"
    }
    missing = [caller for caller in callers if caller not in sent]
    for program in missing:
        warnings.append(
            f"the calls of program {program!r} go with their caller, but the program is not "
            "sent as an item (it is not sealed, or its reasoning is not sent): the API may "
            "refuse the request"
        )


def _sweep_key(
    plan: StagePlan,
    injectable: dict[str, Any],
    instructions: str | None,
    tools: tuple[WireTool, ...] | None,
    options: RenderOptions,
) -> tuple[Any, Any] | None:
    """The sweep's memo key, and the ``resumable`` hashing that the ``fingerprint_prefix``
    implementation declares for these options (``None``: the stage is called)."""
    resumable = _declared(plan, "fingerprint_prefix", "resumable")
    hashing = (
        resumable
        if resumable is not None and resumable.applies(options.fingerprint_binding)
        else None
    )
    # A declared implementation promises its output follows from its arguments (its scratch
    # is a cache): keyed by the function. Any other is keyed as a stage.
    stage: Any = (
        ("declared", plan.targets["fingerprint_prefix"][1][0])
        if resumable is not None
        else stage_key(plan, ("fingerprint_prefix",), injectable)
    )
    if stage is None:
        return None
    key = (
        stage,
        options.model,
        options.fingerprint_binding,
        options.unfingerprinted_reasoning,
        _RECORD_ENCODER.encode(options.endpoint),
        instructions,
        None if tools is None else _RECORD_ENCODER.encode(tools),
    )
    return key, hashing


def _sweep(
    items: list[InputItem],
    timeline: _Timeline,
    offset: int,
    *,
    instructions: str | None,
    tools: tuple[WireTool, ...] | None,
    options: RenderOptions,
    stages: Any,
    plan: StagePlan,
    injectable: dict[str, Any],
    memo: RenderMemo,
    warnings: list[str],
    reasoned: dict[Any, int],
    pending: frozenset[str],
    stamped: dict[str, str],
) -> tuple[list[InputItem], tuple[object, int] | None]:
    """The pairing sweep, resumed from the last checkpoint whose inputs are unchanged; and
    (the token of the sweep it resumed, how many of its output items were kept) when
    resumed. ``memo.swept`` is set to this sweep's token."""
    keyed = _sweep_key(plan, injectable, instructions, tools, options)
    key, hashing = keyed if keyed is not None else (None, None)
    indexes, thoughts = timeline.candidate_indexes, timeline.candidate_thoughts
    out: list[InputItem] = []
    done, count = 0, len(items)  # items[:done] are settled
    checkpoints: list[Checkpoint] = []
    checkpoint_indexes: list[int] = []
    checkpoint_hashed: list[int] = []
    sweep_warnings: list[str] = []
    hasher: Any = hashlib.sha256(hashing.head) if hashing else None
    hashed, position = 0, 0
    snapshot: Any = hasher.copy() if hashing else None
    state = kept = memo.sweeps.get(key) if key is not None else None
    resumed_from: tuple[object, int] | None = None
    governing: Any = None  # the timestamp of the last kept reasoning item's record
    if state is not None and state.checkpoints and not _same_responses(state.reasoned, reasoned):
        state = None  # which hosted items need their reasoning changed for earlier responses
    if state is not None and state.checkpoints:
        head = items[:offset]
        # The timeline was built on the one this state swept (the same list, or a copy of its
        # prefix): what the sweep saw of it is known to be unchanged.
        built_on = (
            timeline.base_items is not None
            and state.timeline_items is timeline.base_items
            and state.timeline_size <= timeline.base_size
            and len(state.head) == offset
            and all(map(is_, state.head, head))
        )
        known = offset + state.timeline_size if built_on else 0
        shared = common_prefix(state.items, items, known, state.item_count)
        last = bisect.bisect_left(state.indexes, shared - 1) - 1
        # A decision also rests on the candidates themselves (the thoughts' fingerprints and
        # partners), not only on the items: those up to the checkpoint must be the same too.
        old_indexes, old_thoughts, old_offset = state.candidates
        if last >= 0:
            same = old_thoughts is timeline.base_thoughts
            shared_thoughts = common_prefix(
                old_thoughts,
                thoughts,
                min(len(old_thoughts), timeline.kept_thoughts) if same else 0,
            )
            # Only the checkpoints of candidates before the first changed one still hold (a
            # run's stamped reasoning changes the latest candidates).
            unchanged = bisect.bisect_left(state.checkpoints, shared_thoughts, key=_POSITION)
            last = min(last, unchanged - 1)
        if last >= 0:
            through = state.checkpoints[last].position + 1
            if old_offset != offset or (
                # the same list only ever grew: its first `through` did not change
                old_indexes is not indexes and old_indexes[:through] != indexes[:through]
            ):
                last = -1
        if last >= 0 and state.pending_from is not None:
            # A marked candidate is decided by the pending ids and stamps its fingerprint in
            # this render's `stamped`: resume before it.
            before = bisect.bisect_left(state.checkpoints, state.pending_from, key=_POSITION)
            last = min(last, before - 1)
        if last >= 0:
            # The state's own lists, cut back to the checkpoint and grown from there: the
            # state leaves the memo now (a sweep that fails leaves none) and a new one is
            # put back below.
            assert key is not None
            memo.sweeps.discard(key)
            resumed = state.checkpoints[last]
            checkpoints, checkpoint_indexes = state.checkpoints, state.indexes
            checkpoint_hashed, out, sweep_warnings = state.hashed, state.out, state.warnings
            del checkpoints[last + 1 :], checkpoint_indexes[last + 1 :]
            del checkpoint_hashed[last + 1 :], out[resumed.out_length :]
            del sweep_warnings[resumed.warning_count :]
            done = resumed.done
            hashed = resumed.hashed
            resumed_from = (state.run, resumed.out_length)
            if hashing:
                snapshot = resumed.hasher
                hasher = snapshot.copy()
            position = bisect.bisect_right(indexes, resumed.index - offset)
            if resumed.done == resumed.index + 2:  # that candidate was kept
                governing = thoughts[resumed.position].created_at
    warnings.extend(sweep_warnings)
    pending_from: int | None = None  # a resumed sweep starts before any marked candidate
    tail = b""
    if hashing:
        tail = (
            kept.tail
            if kept is not None and kept.tail
            else hashing.tail(options.model, instructions, tools)
        )
    dense_from = len(indexes) - _DENSE_TAIL
    resumed_checkpoints = len(checkpoints)
    add_checkpoint, add_index = checkpoints.append, checkpoint_indexes.append
    add_hashed, add = checkpoint_hashed.append, out.append
    type_of, stripped_kinds = type, _STRIPPED
    for at in range(position, len(indexes)):
        index = indexes[at] + offset
        if index < done:  # the partner of the previous kept candidate
            continue
        if index > done:
            if reasoned:
                _strip_ids(out, items, done, index, reasoned, governing)
            else:  # _strip_ids without hosted items to decide on, inline
                for item in items[done:index]:
                    add(strip_item_id(item) if type_of(item) in stripped_kinds else item)
        thought = thoughts[at]
        payload = thought.payload
        assert payload is not None
        recorded_fingerprint = payload.prefix_fingerprint
        partner: Any = items[index + 1] if index + 1 < count else None
        partner_id = partner.id if type(partner) in _CARRIERS else output_item_id(partner)
        recorded = payload.paired_item_id
        reason = None
        if (
            partner_id is not None
            and (recorded is None or recorded == partner_id)
            and recorded_fingerprint is not None
        ):
            if hashing:
                through = len(out)
                if through > hashed:
                    if hashed:
                        hasher.update(b",")
                    hasher.update(hashing.items(out[hashed:through]))
                    hashed = through
                    snapshot = None  # taken below if this candidate keeps a checkpoint
                final = hasher.copy()
                final.update(tail)
                fingerprint = final.hexdigest()
            else:
                fingerprint = stages.fingerprint_prefix(
                    model=options.model,
                    instructions=instructions,
                    tools=tools,
                    input=out,
                    through_item=len(out),
                )
            if recorded_fingerprint == PENDING_FINGERPRINT:
                if pending_from is None:
                    pending_from = at  # decided by `pending`: the next sweep resumes before it
                if thought.id in pending:
                    # its prefix: what the next render checks
                    stamped[thought.id] = str(fingerprint)
                elif recorded_fingerprint != fingerprint:
                    reason = _STALE
            elif recorded_fingerprint != fingerprint:
                reason = _STALE
        else:
            if recorded_fingerprint == PENDING_FINGERPRINT and pending_from is None:
                pending_from = at
            reason = _unpaired(partner, partner_id, recorded, recorded_fingerprint, options)
        if reason is None:
            add(items[index])
            add(partner)
            done = index + 2
            governing = thought.created_at
        else:
            message = f"dropping the reasoning item of thought {thought.id}: {reason}"
            warnings.append(message)
            sweep_warnings.append(message)
            done = index + 1
            governing = None
        # With the built-in hasher a checkpoint is of use only with its hash state: those of
        # every eighth candidate and of the last sixteen are kept (see _SNAPSHOT_EVERY).
        if not hashing or at >= dense_from or not at % _SNAPSHOT_EVERY:
            if hashing and snapshot is None:
                snapshot = hasher.copy()  # the state over out[:hashed]
            add_checkpoint(
                Checkpoint(
                    at,
                    index,
                    done,
                    len(out),
                    len(sweep_warnings),
                    snapshot if hashing else None,
                    hashed,
                )
            )
            add_index(index)
            add_hashed(hashed)
    _strip_ids(out, items, done, count, reasoned, governing)
    if hashing and resumed_checkpoints:
        _thin(checkpoints, checkpoint_indexes, checkpoint_hashed, resumed_checkpoints, dense_from)
    if key is None:
        memo.swept = object()
    else:
        kept_state = SweepState(
            items,
            (indexes, thoughts, offset),
            out,
            checkpoints,
            sweep_warnings,
            (items[:offset], timeline.items),
            reasoned,
            pending_from,
            (checkpoint_indexes, checkpoint_hashed),
            tail,
        )
        memo.swept = kept_state.run
        memo.sweeps.put(key, kept_state)
    return out, resumed_from


def _thin(
    checkpoints: list[Checkpoint],
    indexes: list[int],
    hashed: list[int],
    kept: int,
    dense_from: int,
) -> None:
    """Drop the checkpoints (and their entries in the bisection lists ``indexes`` and
    ``hashed``) that a resumed sweep's new candidates pushed out of the dense tail: those of
    candidates before ``dense_from``, all but every :data:`_SNAPSHOT_EVERY`-th. After growth
    the kept ones are those a sweep from the start would keep; after a thread lost
    candidates, the new dense tail may lack some a sweep from the start would have (only
    ever dropped, never added back: a later resume then starts from an earlier one).
    ``kept``: how many checkpoints the sweep resumed with (only the last :data:`_DENSE_TAIL`
    of those can be in the dense tail)."""
    first = max(0, kept - _DENSE_TAIL)
    keep = [
        at
        for at in range(first, kept)
        if checkpoints[at].position >= dense_from or not checkpoints[at].position % _SNAPSHOT_EVERY
    ]
    if len(keep) == kept - first:
        return
    keep += range(kept, len(checkpoints))  # the new ones are kept by the sweep's own rule
    checkpoints[first:] = [checkpoints[at] for at in keep]
    indexes[first:] = [indexes[at] for at in keep]
    hashed[first:] = [hashed[at] for at in keep]


def _unpaired(
    partner: Any,
    partner_id: str | None,
    recorded: str | None,
    recorded_fingerprint: str | None,
    options: RenderOptions,
) -> str | None:
    """Why a candidate whose pairing or fingerprint the sweep cannot check is dropped (or
    ``None``: it has no fingerprint, and the options trust such reasoning)."""
    if partner is None:
        return "no output item follows it"
    if partner_id is None:
        return "the item after it carries no id the API can pair"
    if recorded is not None and recorded != partner_id:
        return f"the item after it is {partner_id}, not its recorded partner {recorded}"
    if options.unfingerprinted_reasoning != "trust":
        return (
            "it has no prefix_fingerprint (imported reasoning: run `turnwire "
            "fingerprint`, or set render.unfingerprinted_reasoning: trust)"
        )
    return None


def _same_responses(old: dict[Any, int], new: dict[Any, int]) -> bool:
    """Whether ``new`` only adds later responses to ``old`` (what a growing thread does), so
    every decision an earlier sweep made about a hosted item still holds."""
    if old is new or not (old or new):
        return True
    if len(new) < len(old) or any(new.get(stamp) != seq for stamp, seq in old.items()):
        return False
    latest = max(old, default=None)
    return latest is None or all(stamp > latest for stamp in new if stamp not in old)


_LOGGED_WARNINGS = 5


def _log_warnings(warnings: list[str]) -> None:
    """Log what the stages reported: the first few in full, then how many more (all are kept in
    ``RenderedInput.warnings``), so a long thread cannot flood the log on every render."""
    for message in warnings[:_LOGGED_WARNINGS]:
        logger.warning(message, extra={"kind": "helper-warning"})
    if len(warnings) > _LOGGED_WARNINGS:
        logger.warning(
            "... and %d more render warnings (see RenderedInput.warnings)",
            len(warnings) - _LOGGED_WARNINGS,
            extra={"kind": "helper-warning"},
        )


def build_input(
    thread: Thread,
    *,
    plan: StagePlan,
    options: RenderOptions,
    render_memo: RenderMemo | None = None,
    pending: frozenset[str] = frozenset(),
) -> RenderedInput:
    """Render ``thread`` into the Responses ``instructions``, ``input`` and ``tools``.

    :param thread: the stored conversation (media and artifact bytes already loaded).
    :param plan: the resolved stages (plugin manager plus container overrides).
    :param options: every option of the signature, one per container provider.
    :param render_memo: what earlier renders left to reuse (see
    :mod:`turnwire.rendering._incremental.memo`); the
        result is the same with or without it. ``None``: a cold render.
    :param pending: ids of reasoning thoughts a run recorded whose ``prefix_fingerprint`` is
        still :data:`PENDING_FINGERPRINT`: kept as fresh when they pair, their fingerprints in
        ``RenderedInput.stamped`` (what the client stores before the request is sent).
    """
    problem = bucket_order_problem(options.bucket_order)
    if problem is not None:
        raise ConfigError(f"render.bucket_order: {problem}", path="$.render.bucket_order")
    memo = render_memo if render_memo is not None else RenderMemo()
    with memo.lock:
        return _build_input(thread, plan, options, memo, pending)


def _build_input(
    thread: Thread,
    plan: StagePlan,
    options: RenderOptions,
    memo: RenderMemo,
    pending: frozenset[str] = frozenset(),
) -> RenderedInput:
    thread = compacted(thread)
    warnings: list[str] = []
    injectable = options.injectable()
    sink = _WarnSink(warnings)
    stages = StageRelay(plan, {**injectable, "warn": sink, "scratch": {}})
    declared = tuple(
        stages.tools_to_wire(tools=thread.tools, hosted_tools=thread.hosted_tools) or ()
    )
    tools = declared or None
    leading = stages.render_system_prompt(
        system_prompt=thread.system_prompt,
        standing_instructions=thread.standing_instructions,
        memories=thread.memories,
        retrievables=thread.retrievables,
    )
    instructions: str | None = None
    head: list[InputItem] = []
    if leading:
        channel = options.system_prompt_channel
        if channel == "instructions":
            instructions = leading
        else:
            role: Literal["developer", "system"] = (
                "developer" if channel == "developer-item" else "system"
            )
            # The same object as the last render's when it says the same: the sweep and the
            # body memo recognise the items they kept by identity, starting with this one.
            kept_head = memo.head
            if (
                kept_head is not None
                and kept_head[0] == role
                and type(leading) is str
                and kept_head[1] == leading
            ):
                head.append(kept_head[2])
            else:
                item = InputMessage(role=role, content=(InputText(text=leading),))
                memo.head = (role, leading, item) if type(leading) is str else None
                head.append(item)

    if (
        options.reasoning_replay != "off"
        and REPLAY_TAG not in options.replay_compatibility
        and any(t.replay_compatibility == REPLAY_TAG for t in thread.thoughts)
    ):
        warnings.append(
            f"reasoning_replay is {options.reasoning_replay!r} but render.replay_compatibility "
            f"does not list {REPLAY_TAG}; reasoning items are not replayed"
        )
    timeline = _timeline(thread, options, stages, plan, injectable, memo, warnings, sink)
    # Each response's timestamp → the seq of its first reasoning record: a hosted item after it
    # needs that reasoning sent (only looked at when the thread has hosted items).
    stamped: dict[str, str] = {}
    reasoned: dict[Any, int] = {}
    if thread.hosted_items:
        for t in thread.thoughts:
            if t.payload is not None:
                first = reasoned.get(t.created_at)
                if first is None or t.seq < first:
                    reasoned[t.created_at] = t.seq
    swept, resumed_from = _sweep(
        head + timeline.items if head else timeline.items,  # read, never changed
        timeline,
        len(head),
        instructions=instructions,
        tools=tools,
        options=options,
        stages=stages,
        plan=plan,
        injectable=injectable,
        memo=memo,
        warnings=warnings,
        reasoned=reasoned,
        pending=pending,
        stamped=stamped,
    )
    fingerprintable_length = len(swept)
    if thread.hosted_items and any(h.type == "program" for h in thread.hosted_items):
        _check_programs(thread, swept, warnings)

    position = options.bucket_order.index("timeline")
    trailing = [
        render_bucket(
            label, stages, thread.standing_instructions, thread.memories, thread.retrievables
        )
        for label in options.bucket_order[position + 1 :]
    ]
    trailing_text = "\n\n".join(part for part in trailing if part)
    if trailing_text:
        items = (*swept, InputMessage(role="system", content=(InputText(text=trailing_text),)))
    else:
        items = tuple(swept)
    memo.input_from = (items, memo.swept, resumed_from)

    _log_warnings(warnings)
    return RenderedInput(
        instructions=instructions,
        input=items,
        tools=tools,
        fingerprintable_length=fingerprintable_length,
        warnings=tuple(warnings),
        stamped=tuple(stamped.items()),
    )


def prefix_fingerprint(
    rendered: RenderedInput,
    through_item: int,
    *,
    plan: StagePlan,
    options: RenderOptions,
    render_memo: RenderMemo | None = None,
) -> str:
    """The ``fingerprint_prefix`` of ``rendered.input[:through_item]``, as the stage gives it.

    With a stage that declares its hashing resumable (the built-in, ``prefix`` binding: see
    :class:`~turnwire.stages.fingerprint.PrefixHashing`) the hash resumes from the memo's sweep
    checkpoints: from the last one whose hashed items are the very first items of this input,
    so a request fingerprint, or the fingerprints of a run's new reasoning items, cost what
    follows the last reasoning item of the previous render, not the whole prefix. Any other
    implementation is called through the relay, as the sweep calls it.

    :param rendered: what :func:`build_input` returned (any render, wildcard ones included).
    :param through_item: how many leading items the fingerprint covers.
    """
    items = rendered.input
    instructions, tools = rendered.instructions, rendered.tools
    injectable = options.injectable()
    keyed = _sweep_key(plan, injectable, instructions, tools, options)
    if keyed is None or not keyed[1]:
        stages = StageRelay(plan, {**injectable, "warn": lambda _: None, "scratch": {}})
        return str(
            stages.fingerprint_prefix(
                model=options.model,
                instructions=instructions,
                tools=tools,
                input=items,
                through_item=through_item,
            )
        )
    hashing = keyed[1]
    hasher, hashed, tail = hashlib.sha256(hashing.head), 0, b""
    if render_memo is not None:
        with render_memo.lock:  # a sweep grows the state's lists in place
            state = render_memo.sweeps.get(keyed[0])
            if state is not None and state.checkpoints:
                shared = min(common_prefix(state.out, items), through_item)
                last = bisect.bisect_right(state.hashed, shared) - 1
                if last >= 0:
                    hasher = state.checkpoints[last].hasher.copy()
                    hashed = state.hashed[last]
            if state is not None:
                tail = state.tail
    if through_item > hashed:
        if hashed:
            hasher.update(b",")
        hasher.update(hashing.items(items[hashed:through_item]))
    hasher.update(tail or hashing.tail(options.model, instructions, tools))
    digest: str = hasher.hexdigest()
    return digest
