"""``build_input``: a stored thread → the Responses ``instructions``, ``input`` and ``tools``.

The reference system's four steps, each through the stage relay, after the compaction cut:

0. the compaction cut (:func:`turnwire.rendering.compaction.compacted`): when the thread holds a
   ``compaction`` hosted item, every timeline record that sorts before the latest one
   (messages, thoughts, tool calls, hosted items, earlier compactions) is left out, and the
   compaction item is replayed in their place; the header (system prompt, buckets, tools) is
   untouched, and so are the memories and retrieved records under ``context_placement:
   timeline`` (the agent's state, not the conversation: those dated before the compaction
   keep their places, before its item). It is a rule, not a stage: the memo sees the cut
   thread (a new compaction drops records from the front, so the timeline is rebuilt from the
   per-record entries, and the sweep restarts), and a thread without compaction is the same
   object as before;
1. leading system content (prompt + buckets before ``timeline``; under ``context_placement:
   timeline`` without the ``memories`` and ``retrievables`` buckets), placed by
   ``system_prompt_channel``;
2. the timeline: messages, surfaced thoughts, tool calls and hosted items ordered by
   ``(created_at, seq)`` (stable: on a full tie messages, then thoughts, then tool calls, then
   hosted items), a tool call as a ``function_call`` and its ``function_call_output``
   sibling, a hosted item through ``render_hosted_item``; under ``context_placement:
   timeline`` each memory and retrieved record too, through ``render_timeline_context``, at
   its ``created_at`` after the records of the same instant (undated ones at the head), so
   one added later extends the input instead of rewriting its start;
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

This module sequences the steps; step 2 is :mod:`turnwire.rendering._incremental.timeline`
(with one record's items in :mod:`turnwire.rendering.items`), step 3
:mod:`turnwire.rendering.sweep`. What a warm render reuses of each is checked against a cold
render by the differential tests.
"""

from __future__ import annotations

import bisect
import hashlib
import logging
from collections.abc import Sequence
from typing import Any, Literal

import msgspec

from turnwire.config.options import Bucket, RenderOptions, bucket_order_problem
from turnwire.errors import ConfigError
from turnwire.model.hosted import thread_anchor
from turnwire.model.records import REPLAY_TAG, Thread
from turnwire.rendering._incremental.chunked import InputItems
from turnwire.rendering._incremental.memo import RenderMemo, common_prefix
from turnwire.rendering._incremental.timeline import _timeline, _WarnSink
from turnwire.rendering.compaction import compacted
from turnwire.rendering.relay import StagePlan, StageRelay
from turnwire.rendering.sweep import _sweep, _sweep_key
from turnwire.stages.system_prompt import render_bucket
from turnwire.wire import HostedInputItem, InputItem, InputMessage, InputText, WireTool

__all__ = ["InputItems", "RenderedInput", "build_input", "prefix_fingerprint"]


logger = logging.getLogger("turnwire")


class RenderedInput(msgspec.Struct, frozen=True, kw_only=True):
    """What ``build_input`` returns.

    :ivar instructions: the leading system text, when the channel is ``instructions``.
    :ivar input: the input items: a read-only sequence that never changes (an
        :class:`~turnwire.rendering._incremental.chunked.InputItems`, which shares its pieces
        with the inputs of the renders before and after it; a slice of it is a tuple).
    :ivar tools: the declarations, or ``None`` when there are none (never empty).
    :ivar fingerprintable_length: how many leading items the pairing sweep saw.
    :ivar warnings: what the stages reported (also logged).
    :ivar stamped: for each pending reasoning item this render kept (see
        :data:`PENDING_FINGERPRINT`), its thought id and the fingerprint of its prefix here.
    """

    instructions: str | None
    input: InputItems
    tools: tuple[WireTool, ...] | None
    fingerprintable_length: int
    warnings: tuple[str, ...] = ()
    stamped: tuple[tuple[str, str], ...] = ()


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


_LOGGED_WARNINGS = 5


_CONTEXT_BUCKETS = frozenset(("memories", "retrievables"))


def _header_buckets(options: RenderOptions) -> tuple[Bucket, ...]:
    """The bucket order without ``memories`` and ``retrievables`` (``context_placement:
    timeline``: they are in the timeline)."""
    return tuple(label for label in options.bucket_order if label not in _CONTEXT_BUCKETS)


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
    relays: list[StageRelay] = []
    with memo.lock:
        try:
            return _build_input(thread, plan, options, memo, pending, relays)
        finally:
            for relay in relays:  # each holds itself: freed here, not by the collector
                relay.release()


def _build_input(
    thread: Thread,
    plan: StagePlan,
    options: RenderOptions,
    memo: RenderMemo,
    pending: frozenset[str],
    relays: list[StageRelay],
) -> RenderedInput:
    warnings: list[str] = []
    injectable = options.injectable()
    if thread.hosted_items:  # anchored before compaction leaves the opening records out
        injectable["thread_anchor"] = thread_anchor(thread)
    thread = compacted(thread)
    sink = _WarnSink(warnings)
    stages = StageRelay(plan, {**injectable, "warn": sink, "scratch": {}})
    relays.append(stages)
    declared = tuple(
        stages.tools_to_wire(tools=thread.tools, hosted_tools=thread.hosted_tools) or ()
    )
    tools = declared or None
    # Under ``context_placement: timeline`` the memories and retrieved records render in the
    # timeline (step 2), so neither the leading content nor a trailing bucket holds them.
    in_timeline = options.context_placement == "timeline"
    memories = () if in_timeline else thread.memories
    retrievables = () if in_timeline else thread.retrievables
    order = _header_buckets(options) if in_timeline else options.bucket_order
    leading = stages.render_system_prompt(
        system_prompt=thread.system_prompt,
        standing_instructions=thread.standing_instructions,
        memories=memories,
        retrievables=retrievables,
        bucket_order=order,
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
    # Read by the timeline alone: let go of the loaded tuples of the render before the last
    # now, or the next render frees them (the caller dropped them long ago), touching every
    # record of the thread inside the render.
    memo.loaded_from = {}
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

    position = order.index("timeline")
    trailing = [
        render_bucket(label, stages, thread.standing_instructions, memories, retrievables)
        for label in order[position + 1 :]
    ]
    trailing_text = "\n\n".join(part for part in trailing if part)
    if trailing_text:
        items = swept.with_tail(
            (InputMessage(role="system", content=(InputText(text=trailing_text),)),)
        )
    else:
        items = swept  # the sweep's own: never changed by a later render
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
        try:
            return str(
                stages.fingerprint_prefix(
                    model=options.model,
                    instructions=instructions,
                    tools=tools,
                    input=items,
                    through_item=through_item,
                )
            )
        finally:
            stages.release()
    hashing = keyed[1]
    hasher, hashed, tail = hashlib.sha256(hashing.head), 0, b""
    if render_memo is not None:
        with render_memo.lock:  # a sweep grows the state's lists in place
            state = render_memo.sweeps.get(keyed[0])
            if state is not None and state.checkpoints:
                shared = min(common_prefix(state.swept, items), through_item)
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
