"""Windows over a long conversation, and a plain-text transcript of it.

A window chooses which turns of the timeline a request sends; it is applied to the thread before
rendering (``context.window``), so a stored thread keeps its whole history. A turn starts at a
user message and holds everything after it up to the next one: the assistant's reasoning, its
tool calls with their results, its answer. Windows cut only between turns, so a call never loses
its output and a reasoning item never loses the item it produced, and the leading system content
(system prompt, standing instructions, memories, documents, tools) is always kept.

- ``all`` (the default): every turn.
- ``{last_turns: N}``: the last N turns.
- ``{token_budget: N}``: the longest run of most recent whole turns whose estimate fits in N
  tokens (the last turn is always kept, with a warning when it alone is over).
- ``{compact: {threshold: N}}``: every turn, and before a run (``turnwire run``,
  ``Client.run``) whose estimate (:func:`estimate_request_tokens`: the records a request would
  send, after the compaction cut) is over N tokens, the client first calls the compact
  endpoint on everything before the question being asked, stores the compaction, then sends
  the request (see :mod:`turnwire.rendering.compaction`). A render alone never calls it.

The three mappings exclude each other. A compaction item already in the thread is honoured
under every window: the window is applied first, then the render leaves out everything
before the latest compaction it kept (so ``last_turns`` counts stored turns, compacted or not).

The estimate is the one of :func:`estimate_tokens`: text by length (about four bytes a token),
each attachment a fixed 765 tokens (a high-detail 512x512 image), reasoning blobs by length.
A cut changes the request prefix, so reasoning recorded after the old prefix is no longer
replayed (its fingerprint is stale): the API would refuse it anyway.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import msgspec

from turnwire.config.settings import Window, WindowSettings
from turnwire.model.records import HostedItem, Message, Thought, Thread, ToolCall
from turnwire.model.timeline import Record, only_records, timeline

__all__ = [
    "apply_window",
    "estimate_request_tokens",
    "estimate_tokens",
    "timeline_turns",
    "transcript",
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
    if result is not None:
        tokens += _text_tokens(result.text)
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


def _keep(turns: Sequence[list[Record]], window: WindowSettings) -> int:
    """How many trailing turns the window keeps."""
    if window.last_turns is not None:
        return min(window.last_turns, len(turns))
    assert window.token_budget is not None
    total, kept = 0, 0
    for turn in reversed(turns):
        total += sum(estimate_tokens(record) for record in turn)
        if total > window.token_budget and kept:
            break
        kept += 1
        if total > window.token_budget:
            logger.warning(
                "the last turn alone is estimated at %d tokens, over context.window.token_budget "
                "(%d); it is sent whole",
                total,
                window.token_budget,
                extra={"kind": "window-over-budget"},
            )
            break
    return kept


def apply_window(thread: Thread, window: Window) -> Thread:
    """``thread`` with only the turns ``window`` keeps (the header untouched)."""
    if window == "all":
        return thread
    assert isinstance(window, WindowSettings)
    if window.compact is not None:
        return thread  # the compaction cut windows it
    turns = timeline_turns(thread)
    kept = _keep(turns, window)
    cut = len(turns) - kept
    # Never inside one response (records sharing a timestamp): what a reasoning item of it
    # produced cannot be kept without that reasoning.
    while cut > 0 and turns[cut][0].created_at == turns[cut - 1][-1].created_at:
        cut -= 1
    if cut <= 0:
        return thread
    return only_records(thread, {id(record) for turn in turns[cut:] for record in turn})


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
