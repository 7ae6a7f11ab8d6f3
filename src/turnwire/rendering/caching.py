"""Prompt caching: the ``prompt_cache_key`` a request carries and where its breakpoint goes.

**The key** (``request.prompt_cache_key``): ``thread``, the default, sends a key derived from
the thread's identity, so every request of a thread is routed to the same cache and two
threads never share one by accident. The identity is a stored thread's id (what
:func:`turnwire.api.run_thread` passes as ``cache_identity``), else, for a thread file, which
has no id, :func:`~turnwire.model.hosted.thread_anchor`: the identity of its opening record,
which no later turn, stamp or compaction changes (a copy of the file keeps it; ``""``, a
thread with no record yet, sends no key). The key is ``tw-`` and the first 32 hex digits of a
SHA-256 over a domain string and the identity (:func:`thread_cache_key`): stable, short, and
never the id itself. ``none`` (or null) sends no key; any other string is sent as it is.

**The breakpoint** (``request.prompt_cache_breakpoints``, GPT-5.6 and later): ``off`` (the
default) sends none; ``auto`` marks one content block with ``prompt_cache_breakpoint: {mode:
explicit}`` (:func:`with_breakpoint`): the last block of the stable leading prefix, i.e. of the
leading developer or system items when the system prompt goes as an item, else the last input
content block before the newest user message. One breakpoint stays well inside the API's
budget (four writes per request; three explicit ones beside the implicit breakpoint). Only
input blocks (``input_text``, ``input_image``, ``input_file``) of a message that is not the
assistant's, or of a tool output, can carry one: string contents, assistant output and hosted
items are passed over, so no item is rewritten into another shape. It is added after the
render, so the prefix fingerprints of reasoning replay never see it; the marked item is kept
per render memo, so a warm render reuses it and the body memo keeps the bytes around it.
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from collections.abc import Sequence
from typing import Any, Literal

import msgspec

from turnwire.model.hosted import thread_anchor
from turnwire.model.records import Thread
from turnwire.rendering._incremental.chunked import InputItems
from turnwire.wire.content import CacheBreakpointCarrier, PromptCacheBreakpoint
from turnwire.wire.items import FunctionCallOutput, InputItem, InputMessage

__all__ = [
    "BREAKPOINT",
    "KEY_DOMAIN",
    "breakpoint_target",
    "cache_identity",
    "prompt_cache_key",
    "thread_cache_key",
    "with_breakpoint",
]

KEY_DOMAIN = b"turnwire/prompt_cache_key/v1\0"
"""What the key's hash begins with: no other hash of the same identity gives the same key."""

BREAKPOINT = PromptCacheBreakpoint(mode="explicit")
"""The breakpoint ``auto`` puts (its TTL that of ``prompt_cache_options.ttl``)."""


def cache_identity(thread: Thread, thread_id: str | None = None) -> str:
    """The identity ``prompt_cache_key: thread`` derives its key from: ``thread_id`` (a stored
    thread's id) when given, else the thread's :func:`~turnwire.model.hosted.thread_anchor`."""
    return thread_id if thread_id is not None else thread_anchor(thread)


def thread_cache_key(identity: str) -> str | None:
    """``tw-`` and the first 32 hex digits of SHA-256 over :data:`KEY_DOMAIN` and
    ``identity``; ``None`` for the empty identity (a thread with no record yet)."""
    if not identity:
        return None
    return "tw-" + hashlib.sha256(KEY_DOMAIN + identity.encode()).hexdigest()[:32]


def prompt_cache_key(setting: str | None, identity: str) -> str | None:
    """The ``prompt_cache_key`` a request sends under ``request.prompt_cache_key``."""
    if setting is None or setting == "none":
        return None
    if setting == "thread":
        return thread_cache_key(identity)
    return setting


def _blocks(item: object) -> tuple[Any, ...] | None:
    """The content blocks of an item that may carry a breakpoint (``None``: none may)."""
    if isinstance(item, InputMessage):
        if item.role != "assistant" and isinstance(item.content, tuple):
            return item.content
    elif isinstance(item, FunctionCallOutput) and isinstance(item.output, tuple):
        return item.output
    return None


def _last_carrier(item: object) -> int | None:
    blocks = _blocks(item)
    if not blocks or not isinstance(blocks[-1], CacheBreakpointCarrier):
        return None
    return len(blocks) - 1


def _leading(item: object) -> bool:
    return isinstance(item, InputMessage) and item.role in ("developer", "system")


def _user(item: object) -> bool:
    return isinstance(item, InputMessage) and item.role == "user"


def breakpoint_target(items: Sequence[InputItem]) -> tuple[int, int] | None:
    """Where ``auto`` puts the breakpoint: ``(item index, block index)``, or ``None``.

    The last block of the last leading developer or system item when the input begins with
    one; else the last block of the nearest item before the newest user message whose last
    block can carry one.
    """
    lead = 0
    while lead < len(items) and _leading(items[lead]):
        lead += 1
    if lead:
        block = _last_carrier(items[lead - 1])
        if block is not None:
            return lead - 1, block
    newest = next((i for i in range(len(items) - 1, -1, -1) if _user(items[i])), None)
    for index in range((newest or 0) - 1, -1, -1):
        block = _last_carrier(items[index])
        if block is not None:
            return index, block
    return None


def _marked(item: InputItem, block: int) -> InputItem:
    replace = msgspec.structs.replace
    blocks = _blocks(item)
    assert blocks is not None
    marked = (*blocks[:block], replace(blocks[block], prompt_cache_breakpoint=BREAKPOINT))
    marked += blocks[block + 1 :]
    if isinstance(item, InputMessage):
        return replace(item, content=marked)
    assert isinstance(item, FunctionCallOutput)
    return replace(item, output=marked)


# memo -> (the item last marked, block, the marked copy): a warm render marks the same item
# again, and gives the body memo the same object as before (it compares items by identity).
_KEPT: weakref.WeakKeyDictionary[Any, tuple[Any, int, InputItem]] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def with_breakpoint(
    items: InputItems, policy: Literal["off", "auto"], *, memo: Any = None
) -> InputItems:
    """``items`` with the breakpoint ``policy`` asks for; the same object when it asks for none
    (``off``, or no block can carry one). ``memo`` (a render memo) keeps the marked item, so
    the next render of the same item reuses it."""
    if policy == "off":
        return items
    target = breakpoint_target(items)
    if target is None:
        return items
    index, block = target
    original = items[index]
    marked: InputItem | None = None
    if memo is not None:
        with _LOCK:
            kept = _KEPT.get(memo)
        if kept is not None and kept[0] is original and kept[1] == block:
            marked = kept[2]
    if marked is None:
        marked = _marked(original, block)
        if memo is not None:
            with _LOCK:
                _KEPT[memo] = (original, block, marked)
    return items.replacing(index, marked)
