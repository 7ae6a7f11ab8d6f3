"""Turns: what the store keeps, and the only code that knows both shapes.

A :class:`Turn` is the stored unit: a user's question (text and uploaded file pointers) or
one assistant step (its reasoning, tool calls with their results, and the message that ends
it), with the model and usage of the response that produced it. :class:`TurnBuilder` converts
between turns and the thread records the renderer reads; it is pure (no I/O, no store).

File pointers are read by :class:`turnwire.files.pointers.ContextAssembler`, never here.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from itertools import chain
from typing import Any, Literal

import msgspec

from turnwire.model.records import (
    HostedItem,
    Media,
    Message,
    Thought,
    Thread,
    ToolCall,
    latest,
)
from turnwire.model.usage import GenerationStats, Usage
from turnwire.rendering.ledger import Ledger

__all__ = [
    "CallPlaces",
    "FilePart",
    "HostedPart",
    "MessagePart",
    "Part",
    "TextPart",
    "ThoughtPart",
    "ToolCallPart",
    "Turn",
    "TurnBuilder",
    "TurnRecords",
]


class _Part(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    tag_field="kind",
    forbid_unknown_fields=True,
    omit_defaults=True,
):
    pass


class TextPart(_Part, frozen=True, kw_only=True, tag="text"):
    """The text of a user's question."""

    text: str


class FilePart(_Part, frozen=True, kw_only=True, tag="file"):
    """An uploaded file, by pointer only (its bytes are read per call, never stored)."""

    media: Media


class MessagePart(_Part, frozen=True, kw_only=True, tag="message"):
    """A whole message record (assistant answers; messages imported from a thread file)."""

    message: Message


class ThoughtPart(_Part, frozen=True, kw_only=True, tag="thought"):
    """A reasoning record, with its replay payload."""

    thought: Thought


class ToolCallPart(_Part, frozen=True, kw_only=True, tag="tool_call"):
    """A tool call, with its result once it ran."""

    call: ToolCall


class HostedPart(_Part, frozen=True, kw_only=True, tag="hosted"):
    """A hosted item (a hosted tool's call, an MCP listing or approval, a compaction ...)."""

    item: HostedItem


Part = TextPart | FilePart | MessagePart | ThoughtPart | ToolCallPart | HostedPart
Record = Message | Thought | ToolCall | HostedItem


class Turn(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True
):
    """One stored step of a conversation.

    :ivar model: the model that produced an assistant turn.
    :ivar usage: what the turn cost: a run's turns each hold the summed usage of the
        generations that produced them (see :meth:`TurnBuilder.build_assistant_turns`).
    :ivar request_fingerprint: the fingerprint of the request prefix the run was sent with.
    :ivar ledger: on a run's last turn, the :class:`~turnwire.rendering.ledger.Ledger` of the
        run's last request (digests only): what the next run's first request is compared with.
    """

    id: str
    role: Literal["user", "assistant"]
    parts: tuple[Part, ...]
    created_at: datetime
    model: str | None = None
    usage: dict[str, Any] | None = None
    request_fingerprint: str | None = None
    ledger: Ledger | None = None


class CallPlaces(Mapping[str, int]):
    """Each tool call's id → its place in a thread's ``tool_calls``, made of layers (dicts)
    that are never changed once made: extending shares them and adds one, then merges the
    newest layers while the one before is at most twice the last (as few as the bits of the
    count). A load that adds a few calls to a long thread then copies a few entries, never
    the whole map (about 1 ms at 25,000 calls); each entry is copied a few times over the
    life of a thread.

    :param layers: dicts of distinct ids, oldest first.
    """

    __slots__ = ("_layers", "_size")

    def __init__(self, layers: tuple[dict[str, int], ...] = ()) -> None:
        self._layers = layers
        self._size = sum(map(len, layers))

    def __getitem__(self, call_id: str) -> int:
        for layer in reversed(self._layers):
            place = layer.get(call_id)
            if place is not None:
                return place
        raise KeyError(call_id)

    def __contains__(self, call_id: object) -> bool:
        return any(call_id in layer for layer in self._layers)

    def __iter__(self) -> Iterator[str]:
        return chain.from_iterable(self._layers)

    def __len__(self) -> int:
        return self._size

    def __repr__(self) -> str:
        return f"CallPlaces({dict(self)!r})"

    def adding(self, places: dict[str, int]) -> CallPlaces:
        """These places and ``places`` (ids not among these)."""
        layers = [*self._layers, places]
        while len(layers) > 1 and len(layers[-2]) <= 2 * len(layers[-1]):
            layers[-2:] = [{**layers[-2], **layers[-1]}]
        return CallPlaces(tuple(layers))


class TurnRecords(msgspec.Struct, frozen=True, kw_only=True):
    """What a thread's turns, in order, give the renderer (:meth:`TurnBuilder.extend_records`).

    :ivar call_places: each tool call's id → its place in ``tool_calls`` (never changed once
        made: a record set extended shares its layers, see :class:`CallPlaces`).
    :ivar ledger: the ledger of the last request the turns recorded (``None``: none).
    :ivar latest: when the latest record is dated, as :func:`~turnwire.model.records.latest`
        gives it for a thread of these records (``None``: no record).
    """

    messages: tuple[Message, ...] = ()
    thoughts: tuple[Thought, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    hosted_items: tuple[HostedItem, ...] = ()
    call_places: Mapping[str, int] = msgspec.field(default_factory=CallPlaces)
    ledger: Ledger | None = None
    latest: datetime | None = None

    def as_thread(self, header: Thread) -> Thread:
        """``header`` holding these records."""
        return msgspec.structs.replace(
            header,
            messages=self.messages,
            thoughts=self.thoughts,
            tool_calls=self.tool_calls,
            hosted_items=self.hosted_items,
        )

    def __len__(self) -> int:
        """How many records."""
        return (
            len(self.messages) + len(self.thoughts) + len(self.tool_calls) + len(self.hosted_items)
        )


def _now() -> datetime:
    moment = datetime.now(UTC)
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def _pointer_only(media: Media) -> Media | None:
    """The media without inline bytes; ``None`` when it has no pointer to keep (a ``path``, or
    a reference the API resolves: ``file_id``, ``url``)."""
    if media.path is None and media.file_id is None and media.url is None:
        return None
    return msgspec.structs.replace(media, data=None) if media.data is not None else media


def _closing_messages(records: Sequence[Record]) -> set[int]:
    """The indices of the messages that end a step: those no tool call follows before the
    next message (or the end)."""
    closing: set[int] = set()
    call_follows = False
    for index in range(len(records) - 1, -1, -1):
        record = records[index]
        if isinstance(record, ToolCall):
            call_follows = True
        elif isinstance(record, Message):
            if not call_follows:
                closing.add(index)
            call_follows = False
    return closing


def _part_id(part: Part) -> str | None:
    if isinstance(part, MessagePart):
        return part.message.id
    if isinstance(part, ThoughtPart):
        return part.thought.id
    if isinstance(part, ToolCallPart):
        return part.call.id
    if isinstance(part, HostedPart):
        return part.item.id
    return None


def _with_generation_usage(turns: list[Turn], generations: Sequence[GenerationStats]) -> list[Turn]:
    """Each turn with the summed usage of the generations whose records it holds."""
    held: list[list[GenerationStats]] = [[] for _ in turns]
    for stats in generations:
        ids = set(stats.record_ids)
        owners = [
            index
            for index, turn in enumerate(turns)
            if any(_part_id(part) in ids for part in turn.parts)
        ] or [len(turns) - 1]
        held[owners[0]].append(stats)
    updated = []
    for turn, owned in zip(turns, held, strict=True):
        total = Usage.sum(stats.usage for stats in owned)
        if total is None:
            updated.append(turn)
            continue
        usage: dict[str, Any] = {
            "provider": owned[-1].provider,
            "model": owned[-1].model,
            **msgspec.to_builtins(total),
            "generations": len(owned),
        }
        updated.append(msgspec.structs.replace(turn, usage=usage))
    return updated


class TurnBuilder:
    """Converts between stored turns and thread records. Pure: no I/O, no store, no state.

    :param clock: "now" for new turns (tests inject a fixed one).
    :param new_id: a fresh turn id.
    """

    def __init__(
        self,
        *,
        clock: Callable[[], datetime] = _now,
        new_id: Callable[[], str] = lambda: f"turn_{uuid.uuid4().hex}",
    ) -> None:
        self.clock = clock
        self.new_id = new_id

    def build_user_turn(self, prompt: str, files: Sequence[Media] = ()) -> Turn:
        """The user's question: a text part unless the prompt is empty, a file part per pointer
        (a ``path``) or reference (a ``file_id`` or ``url``, kept as it is).

        :raises ValueError: a file is given by its bytes alone: bytes are never stored.
        """
        parts: list[Part] = [TextPart(text=prompt)] if prompt else []
        for media in files:
            kept = _pointer_only(media)
            if kept is None:
                raise ValueError(
                    f"file {media.id} has no path, file_id or url: a turn keeps pointers and "
                    "references only, never bytes"
                )
            parts.append(FilePart(media=kept))
        if not parts:
            raise ValueError("a user turn needs a prompt or at least one file")
        return Turn(id=self.new_id(), role="user", parts=tuple(parts), created_at=self.clock())

    def build_assistant_turns(
        self,
        run_records: Iterable[Record],
        *,
        model: str | None,
        usage: dict[str, Any] | None = None,
        request_fingerprint: str | None = None,
        without_final_answer: bool = False,
        generations: Sequence[GenerationStats] = (),
        ledger: Ledger | None = None,
    ) -> list[Turn]:
        """A run's records as assistant turns: one per answer, in order.

        Reasoning, tool calls and the messages that come with calls accumulate until the
        message that ends the step: a message followed by a tool call before the next message
        (text that comes with calls, ``--once`` included) does not end it, so an answer with
        pending calls is one turn. Every turn gets the model; the last one gets the usage.
        Inline file bytes are dropped (pointers kept), and a record left without anything to
        store is dropped. With ``without_final_answer`` (a blocked answer), the final message
        is not stored.

        With ``generations`` (the run's :class:`~turnwire.model.usage.GenerationStats`), each turn's
        usage is instead the summed :class:`~turnwire.model.usage.Usage` of the generations whose
        records it holds (a generation that left no stored record counts on the last turn),
        stored as a mapping with ``provider``, ``model`` and ``generations`` (how many).
        """
        records = list(run_records)
        if without_final_answer:
            last = max((i for i, r in enumerate(records) if isinstance(r, Message)), default=None)
            if last is not None:
                del records[last]
        turns = self._steps(records, model, lossless=False)
        if turns and generations:
            turns = _with_generation_usage(turns, generations)
            usage = turns[-1].usage
        if turns:
            last_turn = turns[-1]
            turns[-1] = msgspec.structs.replace(
                last_turn, usage=usage, request_fingerprint=request_fingerprint, ledger=ledger
            )
        return turns

    def build_run_turns(
        self,
        *,
        question: Turn | None,
        resolved: Sequence[ToolCall],
        records: Iterable[Record],
        model: str | None,
        usage: dict[str, Any] | None = None,
        request_fingerprint: str | None = None,
        generations: Sequence[GenerationStats] = (),
        ledger: Ledger | None = None,
    ) -> list[Turn]:
        """Every turn one run adds to a stored thread, in order: the user's ``question``
        (if any), one turn holding the calls a ``--once`` left pending that this run
        ``resolved`` (it supersedes their pending copies, see :meth:`to_messages`), then the
        run's own ``records`` (in timeline order) as :meth:`build_assistant_turns`."""
        turns = [question] if question is not None else []
        if resolved:
            parts: tuple[Part, ...] = tuple(ToolCallPart(call=call) for call in resolved)
            turns.append(
                Turn(id=self.new_id(), role="assistant", created_at=self.clock(), parts=parts)
            )
        ordered = sorted(records, key=lambda record: (record.created_at, record.seq))
        turns += self.build_assistant_turns(
            ordered,
            model=model,
            usage=usage,
            request_fingerprint=request_fingerprint,
            generations=generations,
            ledger=ledger,
        )
        return turns

    @staticmethod
    def last_ledger(turns: Sequence[Turn]) -> Ledger | None:
        """The ledger of the last request a thread's ``turns`` recorded (``None``: none)."""
        for turn in reversed(turns):
            if turn.ledger is not None:
                return turn.ledger
        return None

    def _assistant(self, parts: list[Part], created: datetime, model: str | None) -> Turn:
        return Turn(
            id=self.new_id(), role="assistant", parts=tuple(parts), created_at=created, model=model
        )

    def _steps(self, records: Iterable[Record], model: str | None, *, lossless: bool) -> list[Turn]:
        """Assistant records grouped into steps: each message closes the step before it.

        ``lossless`` (an import) keeps every record as it is; otherwise inline file bytes are
        dropped and a record left without anything to store is dropped.
        """
        turns: list[Turn] = []
        pending: list[Part] = []
        last: Record | None = None
        records = list(records)
        closing = _closing_messages(records)
        for index, record in enumerate(records):
            part = self._record_part(record) if lossless else self._part(record)
            if part is None:
                continue
            pending.append(part)
            last = record
            if index in closing:
                turns.append(self._assistant(pending, record.created_at, model))
                pending = []
        if pending and last is not None:
            turns.append(self._assistant(pending, last.created_at, model))
        return turns

    @staticmethod
    def _record_part(record: Record) -> Part:
        if isinstance(record, Message):
            return MessagePart(message=record)
        if isinstance(record, Thought):
            return ThoughtPart(thought=record)
        if isinstance(record, HostedItem):
            return HostedPart(item=record)
        return ToolCallPart(call=record)

    @classmethod
    def _part(cls, record: Record) -> Part | None:
        if isinstance(record, Message):
            kept = tuple(m for m in (_pointer_only(a) for a in record.attachments) if m)
            if not record.content and not kept and not record.refusal:
                return None
            return MessagePart(message=msgspec.structs.replace(record, attachments=kept))
        return cls._record_part(record)

    def records_as_turns(self, thread: Thread) -> list[Turn]:
        """A whole thread's records as turns, in timeline order (import; lossless)."""
        entries: list[tuple[datetime, int, int, int, Record]] = []
        entries += ((r.created_at, r.seq, 0, i, r) for i, r in enumerate(thread.messages))
        entries += ((r.created_at, r.seq, 1, i, r) for i, r in enumerate(thread.thoughts))
        entries += ((r.created_at, r.seq, 2, i, r) for i, r in enumerate(thread.tool_calls))
        entries += ((r.created_at, r.seq, 3, i, r) for i, r in enumerate(thread.hosted_items))
        entries.sort()
        turns: list[Turn] = []
        run: list[Record] = []
        for entry in entries:
            record = entry[4]
            if isinstance(record, Message) and record.role == "user":
                turns += self._steps(run, None, lossless=True)
                run = []
                turns.append(
                    Turn(
                        id=self.new_id(),
                        role="user",
                        parts=(MessagePart(message=record),),
                        created_at=record.created_at,
                    )
                )
            else:
                run.append(record)
        return turns + self._steps(run, None, lossless=True)

    def to_messages(
        self, turns: Iterable[Turn]
    ) -> tuple[tuple[Message, ...], tuple[Thought, ...], tuple[ToolCall, ...]]:
        """Stored turns as messages, thoughts and tool calls: :meth:`to_records` without the
        hosted items."""
        messages, thoughts, calls, _ = self.to_records(turns)
        return messages, thoughts, calls

    def to_records(
        self, turns: Iterable[Turn]
    ) -> tuple[
        tuple[Message, ...], tuple[Thought, ...], tuple[ToolCall, ...], tuple[HostedItem, ...]
    ]:
        """Stored turns as thread records (messages, thoughts, tool calls, hosted items).

        A user turn built from a prompt becomes a message with the turn's id, its file parts
        its attachments: pointers for the :class:`ContextAssembler` to inline. Every question
        keeps its files, so a file once sent is sent again, the same content block in the same
        place, on every later request (a request that left it out would not extend the one
        before: the API would drop the reasoning recorded after it, and the prompt cache would
        miss). A turn left without anything to say is dropped. A tool call stored again later
        (run after a ``--once``) supersedes the earlier copy, in the earlier place.
        """
        records = self.extend_records(TurnRecords(), turns)
        return records.messages, records.thoughts, records.tool_calls, records.hosted_items

    def extend_records(self, records: TurnRecords, turns: Iterable[Turn]) -> TurnRecords:
        """``records`` (what earlier turns gave) with the records of ``turns``, which follow
        them: :meth:`to_records` of all the turns is ``extend_records(TurnRecords(), ...)``,
        and extending in steps gives the same records (the same objects) as in one. ``records``
        is left as it was."""
        messages: list[Message] = []
        thoughts: list[Thought] = []
        calls: dict[str, ToolCall] = {}
        hosted: list[HostedItem] = []
        ledger = records.ledger
        for turn in turns:
            text = "".join(p.text for p in turn.parts if isinstance(p, TextPart))
            files = tuple(p.media for p in turn.parts if isinstance(p, FilePart))
            if text or files:
                messages.append(
                    Message(
                        id=turn.id,
                        role="user",
                        content=text or None,
                        attachments=files,
                        created_at=turn.created_at,
                    )
                )
            for part in turn.parts:
                if isinstance(part, MessagePart):
                    messages.append(part.message)
                elif isinstance(part, ThoughtPart):
                    thoughts.append(part.thought)
                elif isinstance(part, ToolCallPart):
                    calls[part.call.id] = part.call
                elif isinstance(part, HostedPart):
                    hosted.append(part.item)
            if turn.ledger is not None:
                ledger = turn.ledger
        if not (messages or thoughts or calls or hosted) and ledger is records.ledger:
            return records
        places = records.call_places
        tool_calls = records.tool_calls
        earlier = {call_id: places[call_id] for call_id in calls if call_id in places}
        if earlier:  # a call stored again supersedes its earlier copy, in the earlier place
            replaced = list(tool_calls)
            for call_id, place in earlier.items():
                replaced[place] = calls.pop(call_id)
            tool_calls = tuple(replaced)
        if calls:
            added = {c: len(tool_calls) + i for i, c in enumerate(calls)}
            shared = places if type(places) is CallPlaces else CallPlaces((dict(places),))
            places = shared.adding(added)
            tool_calls += tuple(calls.values())
        extended = TurnRecords(
            messages=records.messages + tuple(messages),
            thoughts=records.thoughts + tuple(thoughts),
            tool_calls=tool_calls,
            hosted_items=records.hosted_items + tuple(hosted),
            call_places=places,
            ledger=ledger,
        )
        if earlier:  # a superseded copy no longer counts: the whole thread's latest
            newest = latest(extended.as_thread(Thread()))
        else:  # the latest of the records before, or of the new ones
            newest = latest(
                Thread(
                    messages=tuple(messages),
                    thoughts=tuple(thoughts),
                    tool_calls=tuple(calls.values()),
                    hosted_items=tuple(hosted),
                )
            )
            if records.latest is not None and (newest is None or records.latest > newest):
                newest = records.latest
        return msgspec.structs.replace(extended, latest=newest)
