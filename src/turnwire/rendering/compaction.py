"""Compaction: the compact endpoint's answer as a thread record, and the cut it makes.

``POST {base_url}/responses/compact`` takes what a request would send (``model``, ``input``,
``instructions`` and the prompt-cache and service-tier options, the thread's
``prompt_cache_key`` included; no ``tools``, ``stream``, ``store`` or sampling options, which
its body does not have) and answers a
``response.compaction`` object whose ``output`` is the compacted window: the user messages it
retained, then one ``compaction`` item whose ``encrypted_content`` stands for everything sent.

What is kept: the ``compaction`` item alone, as a :class:`~turnwire.model.records.HostedItem`
placed in
the timeline right after the last record it covers (:func:`compaction_record`). The retained
user messages are not stored again: the thread already holds them, and the request the API
accepted after a compaction (``[compaction, new user message]``) does not send them. They are
still validated and returned (:attr:`Compacted.output`).

The cut (:func:`compacted`), applied by every render (``build_input``, step 0): every timeline
record that sorts before the latest compaction item -- messages, thoughts, tool calls, hosted
items, earlier compactions -- is left out, and the compaction item is replayed in their place.
The header (system prompt, standing instructions, memories, documents, tools) is untouched.
Nothing is deleted: the stored thread, ``threads show`` and an export keep every record.

:func:`covered` says which records an automatic compaction (``context.window: {compact: ...}``)
covers: every record before the last user message, so the question being asked stays after
the compaction, where the model sees it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import msgspec

from turnwire.model.records import HostedItem, Message, Thread
from turnwire.model.timeline import Record, only_records, order_key, timeline
from turnwire.wire.response import shape_error

__all__ = [
    "COMPACT_FIELDS",
    "CompactResult",
    "Compacted",
    "compact_body",
    "compacted",
    "compaction_record",
    "covered",
    "latest_compaction",
    "parse_compacted",
]

COMPACT_FIELDS = (
    "model",
    "input",
    "instructions",
    "prompt_cache_key",
    "prompt_cache_retention",
    "prompt_cache_options",
    "service_tier",
)
"""The fields of a rendered request body the compact endpoint's body has (OpenAPI
``CompactResponseMethodPublicBody``; ``previous_response_id`` aside, which turnwire never sends)."""

_COMPACT_CACHE_OPTIONS: dict[str, tuple[str, ...] | None] = {"mode": None, "ttl": ("30m",)}
"""The ``prompt_cache_options`` the compact endpoint takes (the official types'
``response_compact_params.PromptCacheOptions``): ``mode``, and ``ttl`` only as ``30m`` (its
default); ``prewarm`` and ``comparison_response_id`` belong to a response, not a compaction."""

_EVENT = "response.compaction"


def latest_compaction(thread: Thread) -> tuple[HostedItem, int] | None:
    """The compaction item that sorts last in the timeline, and its index among the hosted
    items; ``None`` when the thread has none."""
    best: tuple[HostedItem, int] | None = None
    for index, item in enumerate(thread.hosted_items):
        if item.type != "compaction":
            continue
        if best is None or order_key(item, 3, index) > order_key(best[0], 3, best[1]):
            best = (item, index)
    return best


def compacted(thread: Thread) -> Thread:
    """``thread`` as a render reads it: without the timeline records that sort before its
    latest compaction item (ordered as the timeline is, by ``(created_at, seq)``, then
    messages, thoughts, tool calls, hosted items). The same object when nothing is cut."""
    latest = latest_compaction(thread)
    if latest is None:
        return thread
    cut = order_key(latest[0], 3, latest[1])
    groups: tuple[tuple[Record, ...], ...] = (
        thread.messages,
        thread.thoughts,
        thread.tool_calls,
        thread.hosted_items,
    )
    kept: list[tuple[Any, ...]] = [
        tuple(r for i, r in enumerate(records) if order_key(r, rank, i) >= cut)
        for rank, records in enumerate(groups)
    ]
    if all(len(k) == len(g) for k, g in zip(kept, groups, strict=True)):
        return thread
    return msgspec.structs.replace(
        thread, messages=kept[0], thoughts=kept[1], tool_calls=kept[2], hosted_items=kept[3]
    )


def covered(thread: Thread) -> Thread | None:
    """What an automatic compaction covers: the rendered timeline (after the cut) up to, not
    including, its last user message; ``None`` when nothing would be covered (no user
    message, or nothing before the last one but an earlier compaction)."""
    rendered = compacted(thread)
    records = timeline(rendered)
    last_user = max(
        (i for i, r in enumerate(records) if isinstance(r, Message) and r.role == "user"),
        default=None,
    )
    if last_user is None:
        return None
    before = records[:last_user]
    if not before or all(isinstance(r, HostedItem) and r.type == "compaction" for r in before):
        return None
    return only_records(rendered, {id(record) for record in before})


def compact_body(request_body: bytes) -> bytes:
    """The compact endpoint's body for a rendered request body: its :data:`COMPACT_FIELDS`,
    in their order there (``input`` byte for byte as the request would send it, breakpoints
    included), the same ``prompt_cache_key``, and of ``prompt_cache_options`` what the compact
    endpoint takes (``mode``; ``ttl`` when ``30m``); left out when nothing of it is left."""
    decoded = msgspec.json.decode(request_body)
    assert isinstance(decoded, dict)
    body = {k: v for k, v in decoded.items() if k in COMPACT_FIELDS}
    options = body.get("prompt_cache_options")
    if isinstance(options, dict):
        kept = {}
        for key, value in options.items():
            allowed = _COMPACT_CACHE_OPTIONS.get(key, ())
            if allowed is None or value in allowed:
                kept[key] = value
        if kept:
            body["prompt_cache_options"] = kept
        else:
            del body["prompt_cache_options"]
    return msgspec.json.encode(body)


class _Usage(msgspec.Struct, frozen=True, kw_only=True):
    input_tokens: int
    output_tokens: int
    total_tokens: int
    input_tokens_details: dict[str, Any] | None = None
    output_tokens_details: dict[str, Any] | None = None


class _Item(msgspec.Struct, frozen=True, kw_only=True):
    type: str


class _CompactionItem(msgspec.Struct, frozen=True, kw_only=True):
    type: str
    id: str
    encrypted_content: str


class _MessageItem(msgspec.Struct, frozen=True, kw_only=True):
    type: str
    role: str
    content: str | tuple[dict[str, Any], ...]
    id: str | None = None


class _Resource(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    object: str
    output: tuple[dict[str, Any], ...]
    created_at: int
    usage: _Usage


class CompactResult(msgspec.Struct, frozen=True, kw_only=True):
    """What :meth:`turnwire.client.dispatch.Client.compact` returns.

    :ivar thread: the thread with the compaction record added (every other record kept).
    :ivar record: the compaction record (a ``compaction`` hosted item).
    :ivar compacted: the endpoint's validated answer.
    """

    thread: Thread
    record: HostedItem
    compacted: Compacted


class Compacted(msgspec.Struct, frozen=True, kw_only=True):
    """A validated answer of the compact endpoint.

    :ivar id: the compaction's response id.
    :ivar created_at: when it was made (Unix seconds).
    :ivar compaction: the ``compaction`` output item, as the API gave it.
    :ivar output: every output item, as the API gave them (retained messages included).
    :ivar usage: the compaction pass's token usage, as the API gave it.
    """

    id: str
    created_at: int
    compaction: dict[str, Any]
    output: tuple[dict[str, Any], ...]
    usage: dict[str, Any]


def parse_compacted(value: object) -> Compacted:
    """The compact endpoint's answer, checked field by field.

    :raises turnwire.errors.StreamError: naming the field (``output[2].encrypted_content``...)
        when the answer is not a ``response.compaction`` object, an item has a shape the
        schema does not allow, or the output holds no compaction item or more than one.
    """
    if not isinstance(value, dict):
        kind = "null" if value is None else type(value).__name__
        raise shape_error(_EVENT, "(root)", f"expected a response.compaction object, got {kind}")
    resource = _convert(value, _Resource, "")
    if resource.object != "response.compaction":
        raise shape_error(
            _EVENT, "object", f"expected 'response.compaction', got {resource.object!r}"
        )
    found: list[dict[str, Any]] = []
    for index, item in enumerate(resource.output):
        where = f"output[{index}]"
        kind = _convert(item, _Item, where).type
        if kind == "compaction":
            shaped = _convert(item, _CompactionItem, where)
            if not shaped.id:
                raise shape_error(_EVENT, f"{where}.id", "expected a non-empty str")
            if not shaped.encrypted_content:
                raise shape_error(_EVENT, f"{where}.encrypted_content", "expected a non-empty str")
            found.append(item)
        elif kind == "message":
            _convert(item, _MessageItem, where)
    if len(found) != 1:
        detail = "no compaction item" if not found else f"{len(found)} compaction items"
        raise shape_error(_EVENT, "output", f"expected exactly one compaction item, got {detail}")
    return Compacted(
        id=resource.id,
        created_at=resource.created_at,
        compaction=found[0],
        output=resource.output,
        usage=value["usage"],
    )


def compaction_record(
    compacted: Compacted,
    after: Sequence[Record],
    now: datetime,
    *,
    before: Record | None = None,
) -> HostedItem | None:
    """The compaction as a hosted item that sorts right after ``after`` (the records it
    covers) and before ``before`` (the first record it does not cover, if any).

    Stamped ``now`` when that sorts after every covered record and before ``before``; else at
    the last covered record's time with the next ``seq``. ``None`` when no stamp fits (the
    first uncovered record has that very time and ``seq``).
    """
    item = dict(compacted.compaction)
    last = max(((r.created_at, r.seq) for r in after), default=None)
    limit = None if before is None else (before.created_at, before.seq)
    stamp = (now, 0)
    if (last is not None and stamp <= last) or (limit is not None and stamp >= limit):
        if last is None:
            return None
        stamp = (last[0], last[1] + 1)
        if limit is not None and stamp >= limit:
            return None
    created_at, seq = stamp
    return HostedItem(id=item["id"], type="compaction", item=item, created_at=created_at, seq=seq)


def _convert(value: Any, shape: type[Any], where: str) -> Any:
    from turnwire.errors import validation_location

    try:
        return msgspec.convert(value, shape)
    except msgspec.ValidationError as err:
        path, detail = validation_location(err, root="")
        missing = _MISSING.search(detail)
        if missing is not None:
            path += f".{missing.group(1)}"
        field = f"{where}{path}".lstrip(".") or "(root)"
        detail = detail.replace("`", "")
        raise shape_error(_EVENT, field, detail[:1].lower() + detail[1:]) from None


_MISSING = re.compile(r"missing required field `([^`]+)`")
