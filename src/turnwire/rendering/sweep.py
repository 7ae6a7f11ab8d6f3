"""Step 3 of ``build_input``: the reasoning-pairing sweep, resumable.

One left-to-right pass over the input: a reasoning item is kept only when its fingerprint
matches the prefix before it and the next item is its recorded partner carrying an id; an
output item keeps its id only right after a kept reasoning item; a hosted item whose
response's reasoning was not kept goes as text. A sweep keeps checkpoints (with SHA-256 states
when the fingerprint stage declares its hashing resumable), and the next render's sweep
resumes from the last one whose inputs are unchanged.
"""

from __future__ import annotations

import bisect
import hashlib
from operator import attrgetter, is_
from typing import Any

import msgspec

from turnwire.config.options import RenderOptions
from turnwire.rendering._incremental.chunked import CHUNK_SHIFT, InputItems, grow_chunks
from turnwire.rendering._incremental.memo import (
    Checkpoint,
    RenderMemo,
    SweepState,
    common_prefix,
    stage_key,
)
from turnwire.rendering._incremental.timeline import _Timeline
from turnwire.rendering.items import _CARRIERS, _STRIPPED, output_item_id, strip_item_id
from turnwire.rendering.relay import StagePlan
from turnwire.wire import HostedInputItem, InputItem, WireTool

__all__ = ["PENDING_FINGERPRINT"]

PENDING_FINGERPRINT = "pending"


"""The ``prefix_fingerprint`` of a reasoning item recorded by a run and not yet stamped: its
render (with the thought's id in ``pending``) keeps it as fresh and computes its fingerprint."""


_STALE = "the request prefix changed since it was produced (stale fingerprint)"


_POSITION = attrgetter("position")


# Which candidates the sweep keeps a checkpoint of when it hashes with the built-in stage (a
# checkpoint then holds the hash state of its prefix): every eighth, and every one of the last
# sixteen (where the next render of a growing thread resumes). A resume or a prefix
# fingerprint between two starts from the one before. Any other fingerprint stage keeps a
# checkpoint of every candidate.
_SNAPSHOT_EVERY = 8


_DENSE_TAIL = 16


_SWEEP_ENCODER = msgspec.json.Encoder()


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


def _sweep_key(
    plan: StagePlan,
    injectable: dict[str, Any],
    instructions: str | None,
    tools: tuple[WireTool, ...] | None,
    options: RenderOptions,
) -> tuple[Any, Any] | None:
    """The sweep's memo key, and the ``resumable`` hashing that the ``fingerprint_prefix``
    implementation declares for these options (``None``: the stage is called)."""
    resumable = plan.declared("fingerprint_prefix", "resumable")
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
        _SWEEP_ENCODER.encode(options.endpoint),
        instructions,
        None if tools is None else _SWEEP_ENCODER.encode(tools),
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
) -> tuple[InputItems, tuple[object, int] | None]:
    """The pairing sweep, resumed from the last checkpoint whose inputs are unchanged (after
    a sweep that saw no candidate, after the leading items both hold: see
    :func:`_strips_only`); and (the token of the sweep it resumed, how many of its output
    items were kept) when resumed. ``memo.swept`` is set to this sweep's token.

    The output is an :class:`InputItems` made of the state's full chunks, which a resumed
    sweep cuts back to its checkpoint and grows (the chunks themselves never change: an
    earlier render's input that holds them stays as it was)."""
    keyed = _sweep_key(plan, injectable, instructions, tools, options)
    key, hashing = keyed if keyed is not None else (None, None)
    indexes, thoughts = timeline.candidate_indexes, timeline.candidate_thoughts
    out: list[InputItem] = []
    chunks: list[tuple[InputItem, ...]] = []  # out's full chunks (see InputItems)
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
        shared = _shared_items(state, items, timeline, offset)
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
            # and where its list was rewritten in place since (the same list: not seen above)
            log, seen = state.rewrites
            if len(log) > seen:
                shared_thoughts = min(shared_thoughts, *log[seen:])
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
            chunks = state.chunks
            del checkpoints[last + 1 :], checkpoint_indexes[last + 1 :]
            del checkpoint_hashed[last + 1 :], out[resumed.out_length :]
            del chunks[resumed.out_length >> CHUNK_SHIFT :]
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
    elif state is not None and not reasoned and _strips_only(state):
        # The last sweep had no candidate and no hosted item waited on a response's
        # reasoning: its output is _strip_ids of each item, one for one, a function of the
        # item alone. So is this sweep's up to its first candidate: the items both hold there
        # (the very objects) keep the last sweep's output items, and the sweep resumes after
        # them, as from a checkpoint.
        assert key is not None
        first = indexes[0] + offset if indexes else count
        shared = min(_shared_items(state, items, timeline, offset), first)
        if shared:
            memo.sweeps.discard(key)
            out, chunks = state.out, state.chunks
            del out[shared:], chunks[shared >> CHUNK_SHIFT :]
            done = shared
            resumed_from = (state.run, shared)
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
    swept = grow_chunks(chunks, out)
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
            (chunks, swept),
            (timeline.rewrites, len(timeline.rewrites)),
        )
        memo.swept = kept_state.run
        memo.sweeps.put(key, kept_state)
    return swept, resumed_from


def _strips_only(state: SweepState) -> bool:
    """Whether ``state``'s sweep saw no candidate and no hosted item to decide on: then its
    ``out`` is :func:`_strip_ids` of each swept item, one for one."""
    indexes, _, offset = state.candidates  # maybe a timeline's list, grown since
    return (
        not state.reasoned
        and not state.checkpoints
        and (not indexes or indexes[0] + offset >= state.item_count)
        and len(state.out) == state.item_count
    )


def _shared_items(
    state: SweepState, items: list[InputItem], timeline: _Timeline, offset: int
) -> int:
    """How many leading items of ``items`` are the very objects ``state`` swept first."""
    # The timeline was built on the one this state swept (the same list, or a copy of its
    # prefix): what the sweep saw of it is known to be unchanged.
    built_on = (
        timeline.base_items is not None
        and state.timeline_items is timeline.base_items
        and state.timeline_size <= timeline.base_size
        and len(state.head) == offset
        and all(map(is_, state.head, items[:offset]))
    )
    known = offset + state.timeline_size if built_on else 0
    return common_prefix(state.items, items, known, state.item_count)


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
