"""Windows over a long conversation, and a plain-text transcript of it.

A window chooses which turns of the timeline a request sends; it is applied to the thread before
rendering (``context.window``), so a stored thread keeps its whole history. A turn starts at a
user message and holds everything after it up to the next one: the assistant's reasoning, its
tool calls with their results, its answer. Windows cut only between turns, so a call never loses
its output and a reasoning item never loses the item it produced, and the leading system content
(system prompt, standing instructions, memories, documents, tools) is always kept.

- ``all`` (the default): every turn.
- ``{last_turns: N}``: at most the last N turns.
- ``{token_budget: N}``: whole recent turns whose estimate fits in N tokens (the last turn is
  always kept, with a warning when it alone is over).
- ``{compact: {threshold: N}}``: every turn, and before a run (``turnwire run``,
  ``Client.run``) whose estimate (:func:`estimate_request_tokens`: the records a request would
  send, after the compaction cut) is over N tokens, the client first calls the compact
  endpoint on everything before the question being asked, stores the compaction, then sends
  the request (see :mod:`turnwire.rendering.compaction`). A render alone never calls it.

The three mappings exclude each other. A compaction item already in the thread is honoured
under every window: the window is applied first, then the render leaves out everything
before the latest compaction it kept (so ``last_turns`` counts stored turns, compacted or not).

``last_turns`` and ``token_budget`` cut with hysteresis. A cut changes the start of the input:
the prompt cache misses, and reasoning recorded after the old prefix is no longer replayed (its
fingerprint is stale: the API would refuse it anyway). So a window does not slide by a turn
each request; once over its limit it drops its oldest turns until it holds at most ``cut_to``
of the limit (half by default), then grows again, and each request until the next cut extends
the previous one byte for byte. With ``last_turns: 20`` the window holds 10 turns after a cut
and the next cut comes 11 turns later. ``cut_to: 1`` drops only what is over the limit.

A render has no memory of the previous request, so the start is a function of the thread
alone: the thread's growth is replayed record by record in timeline order (a turn's tool
calls are several requests), and wherever what the window holds goes over the limit, the
oldest turns are dropped until it holds at most ``cut_to`` of it, the turn being built always
kept (it grows on after the cut). That is where a client keeping the window from request to
request would be, and it costs one pass over the records. A cut that would start inside one
response (a user message sharing the response's timestamp) starts at the turn before.
:func:`window_cut` says where the latest cut is and whether it happened in the last turn.

The estimate is the one of :func:`estimate_tokens`: text by length (about four bytes a token),
each attachment a fixed 765 tokens (a high-detail 512x512 image), reasoning blobs by length.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import NamedTuple

import msgspec

from turnwire.config.settings import Window, WindowSettings
from turnwire.model.records import HostedItem, Message, Thought, Thread, ToolCall
from turnwire.model.timeline import Record, only_records, timeline

__all__ = [
    "WindowCut",
    "apply_window",
    "estimate_request_tokens",
    "estimate_tokens",
    "timeline_turns",
    "transcript",
    "window_cut",
]

logger = logging.getLogger("turnwire")

ATTACHMENT_TOKENS = 765
_BYTES_PER_TOKEN = 4


def timeline_turns(thread: Thread) -> list[list[Record]]:
    """The timeline cut into turns, each starting at a user message (the first may not)."""
    turns: list[list[Record]] = []
    for record in timeline(thread):
        if not turns or (isinstance(record, Message) and record.role == "user"):
            turns.append([])
        turns[-1].append(record)
    return turns


def _text_tokens(text: str | None) -> int:
    if not text:
        return 0
    return -(-len(text.encode()) // _BYTES_PER_TOKEN)


def _arguments_text(call: ToolCall) -> str:
    """A call's arguments as the model sent them (``raw_args``), else as JSON."""
    if call.raw_args is not None:
        return call.raw_args
    return msgspec.json.encode(call.args).decode()


def estimate_tokens(record: Record) -> int:
    """A quick estimate of what ``record`` costs in a request (see the module docstring)."""
    if isinstance(record, Message):
        return _text_tokens(record.content) + ATTACHMENT_TOKENS * len(record.attachments)
    if isinstance(record, Thought):
        blob = record.payload.item.encrypted_content if record.payload is not None else None
        return _text_tokens(record.content) + _text_tokens(blob)
    if isinstance(record, HostedItem):
        return _text_tokens(msgspec.json.encode(record.item).decode())
    result = record.result
    tokens = _text_tokens(record.tool) + _text_tokens(_arguments_text(record))
    if record.payload is not None:  # a client-executed call: what it asked
        tokens += _text_tokens(msgspec.json.encode(record.payload).decode())
    if result is not None:
        tokens += _text_tokens(result.text)
        for command in result.shell or ():
            tokens += _text_tokens(command.stdout) + _text_tokens(command.stderr)
        tokens += ATTACHMENT_TOKENS * len(result.media or ())
        artifacts = (result.artifact,) if result.artifact is not None else result.artifacts or ()
        tokens += sum(_text_tokens(artifact.text) for artifact in artifacts)
    return tokens


def estimate_request_tokens(thread: Thread) -> int:
    """:func:`estimate_tokens` summed over the records a render of ``thread`` sends: those
    from its latest compaction item on (every record when it has none)."""
    from turnwire.rendering.compaction import compacted

    rendered = compacted(thread)
    groups: tuple[tuple[Record, ...], ...] = (
        rendered.messages,
        rendered.thoughts,
        rendered.tool_calls,
        rendered.hosted_items,
    )
    return sum(estimate_tokens(record) for records in groups for record in records)


class WindowCut(msgspec.Struct, frozen=True, kw_only=True):
    """Where the latest cut of a window leaves a thread (:func:`window_cut`).

    :ivar first_turn: The index, in :func:`timeline_turns`, of the first turn sent; the turns
        before it are left out.
    :ivar dropped: How many turns the latest cut dropped (the turns before those went in
        earlier cuts).
    :ivar in_last_turn: Whether the latest cut happened in the thread's last turn, so the thread
        without that turn is sent from an earlier turn, and one request of the last turn did
        not extend the one before it. (A turn spans several requests when the model calls
        tools, and this stays true for those that follow the cut in it, which extend it.)
    """

    first_turn: int
    dropped: int
    in_last_turn: bool


class _Replay(NamedTuple):
    start: int  # the first turn sent
    before_cut: int  # the first turn sent before the latest cut
    cut_in: int  # the turn in which the latest cut happened, -1 for none
    last_turn_cost: int  # what the last turn alone adds to the window


def _record_costs(turns: Sequence[list[Record]], window: WindowSettings) -> list[list[int]]:
    """What each record adds to the window: ``last_turns`` counts a turn once (one step per
    turn), ``token_budget`` counts each record's estimate."""
    if window.last_turns is not None:
        return [[1] for _ in turns]
    return [[estimate_tokens(record) for record in turn] for turn in turns]


def _replay(turns: Sequence[list[Record]], window: WindowSettings) -> _Replay:
    """The thread's growth replayed record by record, cutting with hysteresis (see the module
    docstring): where the window starts, and where its latest cut happened."""
    limit = window.last_turns if window.last_turns is not None else window.token_budget
    assert limit is not None
    low = limit * window.cut_to
    # Where a cut at turn i starts: turn i, or the latest turn before it that does not open
    # inside one response (records sharing a timestamp): what a reasoning item of a response
    # produced cannot be kept without that reasoning.
    opening: list[int] = []
    for index, turn in enumerate(turns):
        inside = index > 0 and turn[0].created_at == turns[index - 1][-1].created_at
        opening.append(opening[-1] if inside else index)
    before: list[int] = []  # before[i]: what the turns before turn i add up to
    total = start = before_cut = reach = 0
    cut_in = -1
    for index, costs in enumerate(_record_costs(turns, window)):
        before.append(total)
        for cost in costs:
            total += cost
            if total - before[start] <= limit or start == index:
                continue
            # The first turn from which the window fits in ``low``; as the thread only grows,
            # it only moves on, so the whole replay is one pass.
            reach = max(reach, start)
            while reach < index and total - before[reach] > low:
                reach += 1
            if opening[reach] > start:
                before_cut, start, cut_in = start, opening[reach], index
    last_turn_cost = total - before[-1] if before else 0
    return _Replay(start, before_cut, cut_in, last_turn_cost)


def window_cut(thread: Thread, window: Window) -> WindowCut | None:
    """Where ``window`` cuts ``thread``: ``None`` when a request sends every turn, else the
    first turn sent and what the latest cut did, to report a reset of the request prefix."""
    if not isinstance(window, WindowSettings) or window.compact is not None:
        return None
    turns = timeline_turns(thread)
    replay = _replay(turns, window)
    if replay.start == 0:
        return None
    return WindowCut(
        first_turn=replay.start,
        dropped=replay.start - replay.before_cut,
        in_last_turn=replay.cut_in == len(turns) - 1,
    )


def apply_window(thread: Thread, window: Window) -> Thread:
    """``thread`` with only the turns ``window`` keeps (the header untouched)."""
    if window == "all":
        return thread
    assert isinstance(window, WindowSettings)
    if window.compact is not None:
        return thread  # the compaction cut windows it
    turns = timeline_turns(thread)
    replay = _replay(turns, window)
    if window.token_budget is not None and replay.last_turn_cost > window.token_budget:
        logger.warning(
            "the last turn alone is estimated at %d tokens, over context.window.token_budget "
            "(%d); it is sent whole",
            replay.last_turn_cost,
            window.token_budget,
            extra={"kind": "window-over-budget"},
        )
    if replay.start == 0:
        return thread
    kept = {id(record) for turn in turns[replay.start :] for record in turn}
    return only_records(thread, kept)


def _hosted_line(record: HostedItem) -> str:
    """One line about a hosted item: its type and what it did."""
    item = record.item
    action = item.get("action")
    detail: object = None
    if isinstance(action, dict):
        detail = action.get("query") or action.get("url") or action.get("type")
    detail = detail or item.get("code") or item.get("name") or item.get("queries")
    status = item.get("status")
    text = record.type + (f" {detail}" if detail else "")
    return text + (f" ({status})" if isinstance(status, str) else "")


def _speaker(message: Message) -> str:
    if message.identity is not None and message.identity.representation:
        return message.identity.representation
    return "User" if message.role == "user" else "Assistant"


def transcript(thread: Thread) -> str:
    """The conversation as plain text, one block per record, for people and helper calls.

    Messages show who spoke and what they said (attachments by file name), tool calls their
    arguments and result, thoughts their text; the header (system prompt, tools) is left out.
    """
    lines: list[str] = []
    for record in timeline(thread):
        if isinstance(record, Message):
            files = "".join(
                f" [attached {media.filename or media.id}]" for media in record.attachments
            )
            lines.append(f"{_speaker(record)}: {record.content or ''}{files}".rstrip())
        elif isinstance(record, Thought):
            if record.content:
                lines.append(f"(thinking) {record.content}")
        elif isinstance(record, HostedItem):
            lines.append(f"[{_hosted_line(record)}]")
        else:
            arguments = _arguments_text(record)
            if record.result is None:
                outcome = "(not run yet)"
            elif record.result.text is not None:
                outcome = record.result.text
            elif record.result.media:
                outcome = ", ".join(media.filename or media.id for media in record.result.media)
            else:
                outcome = "(artifact)"
            mark = " error" if record.is_error else ""
            lines.append(f"[tool {record.tool}({arguments}){mark}] {outcome}")
    return "\n".join(lines) + ("\n" if lines else "")
