"""The prefix ledger: does a request extend the one sent before it?

The API replays reasoning, and serves a request from the prompt cache, only while everything
before it is unchanged: the same ``model``, ``instructions`` and ``tools``, and the previous
``input`` as the first items of this one, byte for byte. A :class:`Ledger` is what a request
leaves to compare the next one with: a digest of each of those parts and of each input item
(never their text: a ledger may be stored, and shown). :func:`compare` holds a new ledger
against the previous one and says whether the new request extends it and, when it does not, the
first difference and its cause: a :class:`PrefixReport`.

The client keeps the ledger of each request of a run and compares the next with it; a stored
thread keeps the ledger of its last request with the run's turns, so the first request of the
next run is compared too. A reset (a request that does not extend the previous one) is logged
as a ``prefix-reset`` warning; ``turnwire run`` prints it.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Iterable, Sequence
from typing import Any, Literal

import msgspec

from turnwire.rendering._incremental.identity import first_difference

__all__ = [
    "ItemDigests",
    "Ledger",
    "PrefixReport",
    "ResetCause",
    "compare",
    "is_compaction",
    "item_digest",
    "ledger_of",
    "settings_digest",
]

ResetCause = Literal[
    "model", "instructions", "tools", "configuration", "compaction", "window", "input"
]

_ENCODE = msgspec.json.Encoder().encode


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=12).hexdigest()


class Ledger(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=False):
    """What one request leaves to compare the next with (digests only).

    :ivar model: the model asked.
    :ivar instructions: the digest of ``instructions`` (``""``: none sent).
    :ivar tools: the digest of ``tools`` (``""``: none sent).
    :ivar items: the digest of each ``input`` item, in order.
    :ivar settings: the digest of the settings the request was rendered under (what a
        changed configuration is recognised by), ``""`` when unknown.
    :ivar compactions: how many ``compaction`` items the input held.
    :ivar window_start: the first turn a ``context.window`` kept (0: no cut).
    """

    model: str
    instructions: str = ""
    tools: str = ""
    items: tuple[str, ...] = ()
    settings: str = ""
    compactions: int = 0
    window_start: int = 0


class PrefixReport(msgspec.Struct, frozen=True, kw_only=True):
    """How a request relates to the one sent before it.

    :ivar previous_items: how many input items the previous request sent.
    :ivar kept: how many of them this one sends again first, unchanged.
    :ivar extends: whether this request extends the previous one (same model, instructions,
        tools, and every previous item first, unchanged): its reasoning replays and its
        prefix can be served from the prompt cache.
    :ivar cause: why it does not (``None`` when it does): ``model``, ``instructions``,
        ``tools``, ``configuration`` (the render settings changed), ``compaction`` (a new
        compaction replaced the history), ``window`` (``context.window`` cut older turns) or
        ``input`` (an item sent before changed or went away).
    :ivar first_difference: the index of the first input item that differs (``None`` when the
        input itself extends the previous one).
    """

    previous_items: int
    kept: int
    extends: bool
    cause: ResetCause | None = None
    first_difference: int | None = None

    def describe(self) -> str:
        """One line for a person: what was kept, or what broke and where."""
        if self.extends:
            return f"extends the previous request ({self.kept} of {self.previous_items} items)"
        where = (
            f" at input[{self.first_difference}]"
            if self.cause == "input" and self.first_difference is not None
            else ""
        )
        reason = {
            "model": "the model changed",
            "instructions": "the instructions changed",
            "tools": "the tools changed",
            "configuration": "the render settings changed",
            "compaction": "a compaction replaced the history",
            "window": "context.window cut older turns",
            "input": "an item sent before changed or went away",
        }[self.cause or "input"]
        return (
            f"prefix-reset: {reason}{where}; {self.kept} of {self.previous_items} earlier "
            "items kept (reasoning after the change is dropped, the prompt cache misses)"
        )


class ItemDigests:
    """Digests of input items, and how many are ``compaction`` items, remembered for the items
    a warm render hands back unchanged (a run's requests share most of their items): per run,
    never process-wide, and never more than the last request's items.

    The rule is :func:`item_digest` of each item and :func:`is_compaction`; what is remembered
    only skips work. A request whose input starts with the very objects of the last one (an
    agent loop's, almost always) reuses their digests and count as they are and works only on
    the items after them; any other reuses the digest of each item it still holds, by
    identity.
    """

    __slots__ = ("_compactions", "_digests", "_items")

    def __init__(self) -> None:
        self._items: tuple[Any, ...] = ()
        self._digests: tuple[str, ...] = ()
        self._compactions: tuple[int, ...] = ()  # where the compaction items are

    def of(self, items: Sequence[Any]) -> tuple[str, ...]:
        """The digest of each item of ``items``, in order."""
        return self.counted(items)[0]

    def counted(self, items: Sequence[Any]) -> tuple[tuple[str, ...], int]:
        """The digest of each item of ``items``, and how many of them are compactions."""
        items = tuple(items)
        last, digests, compactions = self._items, self._digests, self._compactions
        shared = first_difference(last, items)  # leading items that are the very objects
        known: dict[int, tuple[Any, str]] = {}
        if shared < len(last):  # the items after them, by identity wherever they are now
            known = {
                id(item): (item, digest)
                for item, digest in zip(last[shared:], digests[shared:], strict=True)
            }
            digests = digests[:shared]
            compactions = compactions[: bisect.bisect_left(compactions, shared)]
        fresh: list[str] = []
        at: list[int] = []
        for index in range(shared, len(items)):
            item = items[index]
            hit = known.get(id(item))
            fresh.append(hit[1] if hit is not None and hit[0] is item else item_digest(item))
            if is_compaction(item):
                at.append(index)
        if fresh:
            digests += tuple(fresh)
        if at:
            compactions += tuple(at)
        self._items, self._digests, self._compactions = items, digests, compactions
        return digests, len(compactions)


def item_digest(item: Any) -> str:
    """The digest of one input item (its encoded bytes')."""
    return _digest(_ENCODE(item))


def ledger_of(
    body: Any,
    *,
    settings: str = "",
    window_start: int = 0,
    digests: ItemDigests | None = None,
) -> Ledger:
    """The ledger of a request body (a :class:`~turnwire.wire.RequestBody`).

    :param settings: a digest of the settings it was rendered under (``""``: unknown).
    :param window_start: the first turn ``context.window`` kept.
    :param digests: item digests kept from the run's previous request.
    """
    tools = body.tools
    items, compactions = (digests or ItemDigests()).counted(body.input or ())
    return Ledger(
        model=body.model,
        instructions="" if body.instructions is None else _digest(body.instructions.encode()),
        tools="" if not tools else _digest(_ENCODE(tools)),
        items=items,
        settings=settings,
        compactions=compactions,
        window_start=window_start,
    )


def is_compaction(item: Any) -> bool:
    """Whether an input item is a ``compaction`` item."""
    get = getattr(item, "get", None)
    return bool(get is not None and get("type") == "compaction")


def settings_digest(parts: Iterable[Any]) -> str:
    """A digest of settings values (anything msgspec encodes)."""
    return _digest(_ENCODE(list(parts)))


def compare(previous: Ledger | None, current: Ledger) -> PrefixReport | None:
    """How ``current`` relates to ``previous`` (``None`` when there is no previous request)."""
    if previous is None:
        return None
    old, new = previous.items, current.items
    if new[: len(old)] == old:  # the usual case, compared in C (equal digests often the same)
        kept = len(old)
    else:
        kept = 0
        for a, b in zip(old, new, strict=False):
            if a != b:
                break
            kept += 1
    input_extends = kept == len(old)
    cause: ResetCause | None = None
    if current.model != previous.model:
        cause = "model"
    elif current.instructions != previous.instructions:
        cause = "instructions"
    elif current.tools != previous.tools:
        cause = "tools"
    elif not input_extends:
        if previous.settings and current.settings and previous.settings != current.settings:
            cause = "configuration"
        elif current.compactions > previous.compactions:
            cause = "compaction"
        elif current.window_start > previous.window_start:
            cause = "window"
        else:
            cause = "input"
    return PrefixReport(
        previous_items=len(old),
        kept=kept,
        extends=cause is None,
        cause=cause,
        first_difference=None if input_extends else kept,
    )
