"""Turns: what the store keeps, and the only code that knows both shapes.

A :class:`Turn` is the stored unit: a user's question (text and uploaded file pointers) or
one assistant step (its reasoning, tool calls with their results, and the message that ends
it), with the model and usage of the response that produced it. :class:`TurnBuilder` converts
between turns and the thread records the renderer reads; it is pure (no I/O, no store).

:class:`ContextAssembler` reads the bytes behind file pointers just before a request is
rendered: a stored turn never holds file bytes, only pointers. A pointer is thread data, so it
is read only inside the roots the caller or the configuration chose (:func:`file_roots`).
"""

from __future__ import annotations

import errno
import os
import stat
import uuid
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from operator import is_
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from turnwire.errors import FileNotAllowedError, RenderError
from turnwire.model import (
    Artifact,
    HostedItem,
    Media,
    Message,
    Thought,
    Thread,
    ToolCall,
    ToolResult,
)
from turnwire.usage import GenerationStats, Usage

if TYPE_CHECKING:
    from turnwire.settings import FileSettings

__all__ = [
    "ContextAssembler",
    "FilePart",
    "HostedPart",
    "MessagePart",
    "Part",
    "TextPart",
    "ThoughtPart",
    "ToolCallPart",
    "Turn",
    "TurnBuilder",
    "file_roots",
    "located_pointers",
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
    """

    id: str
    role: Literal["user", "assistant"]
    parts: tuple[Part, ...]
    created_at: datetime
    model: str | None = None
    usage: dict[str, Any] | None = None
    request_fingerprint: str | None = None


def _now() -> datetime:
    moment = datetime.now(UTC)
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def _pointer_only(media: Media) -> Media | None:
    """The media without inline bytes; ``None`` when it has no pointer to keep."""
    if media.path is None:
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
        """The user's question: a text part unless the prompt is empty, a file part per pointer.

        :raises ValueError: a file has no pointer (``path``): bytes are never stored.
        """
        parts: list[Part] = [TextPart(text=prompt)] if prompt else []
        for media in files:
            if media.path is None:
                raise ValueError(f"file {media.id} has no path: a turn keeps pointers only")
            parts.append(FilePart(media=msgspec.structs.replace(media, data=None)))
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
    ) -> list[Turn]:
        """A run's records as assistant turns: one per answer, in order.

        Reasoning, tool calls and the messages that come with calls accumulate until the
        message that ends the step: a message followed by a tool call before the next message
        (text that comes with calls, ``--once`` included) does not end it, so an answer with
        pending calls is one turn. Every turn gets the model; the last one gets the usage.
        Inline file bytes are dropped (pointers kept), and a record left without anything to
        store is dropped. With ``without_final_answer`` (a blocked answer), the final message
        is not stored.

        With ``generations`` (the run's :class:`~turnwire.usage.GenerationStats`), each turn's
        usage is instead the summed :class:`~turnwire.usage.Usage` of the generations whose
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
                last_turn, usage=usage, request_fingerprint=request_fingerprint
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
        )
        return turns

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
        self, turns: Iterable[Turn], *, current: Turn | None = None, keep_all_files: bool = False
    ) -> tuple[tuple[Message, ...], tuple[Thought, ...], tuple[ToolCall, ...]]:
        """Stored turns as messages, thoughts and tool calls: :meth:`to_records` without the
        hosted items."""
        messages, thoughts, calls, _ = self.to_records(
            turns, current=current, keep_all_files=keep_all_files
        )
        return messages, thoughts, calls

    def to_records(
        self, turns: Iterable[Turn], *, current: Turn | None = None, keep_all_files: bool = False
    ) -> tuple[
        tuple[Message, ...], tuple[Thought, ...], tuple[ToolCall, ...], tuple[HostedItem, ...]
    ]:
        """Stored turns as thread records (messages, thoughts, tool calls, hosted items).

        A user turn built from a prompt becomes a message with the turn's id; its file parts
        are dropped, except those of ``current`` (or all of them with ``keep_all_files``, for
        an export), which stay as pointers for the :class:`ContextAssembler` to inline for this
        call. A turn left without anything to say is dropped. A tool call stored again later
        (run after a ``--once``) supersedes the earlier copy, in the earlier place.
        """
        messages: list[Message] = []
        thoughts: list[Thought] = []
        calls: dict[str, ToolCall] = {}
        hosted: list[HostedItem] = []
        for turn in turns:
            text = "".join(p.text for p in turn.parts if isinstance(p, TextPart))
            files = tuple(p.media for p in turn.parts if isinstance(p, FilePart))
            if not keep_all_files and (current is None or turn.id != current.id):
                files = ()
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
        return tuple(messages), tuple(thoughts), tuple(calls.values()), tuple(hosted)


# Pseudo-filesystems: their "regular" files (/proc/self/environ) report no size and hold the
# process's secrets. No configuration of roots makes them a pointer's target.
_NEVER = ("/proc", "/sys", "/dev")
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NOCTTY", 0)
)
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def file_roots(
    given: Iterable[str | os.PathLike[str]] | None,
    files: FileSettings,
    defaults: Iterable[str | os.PathLike[str]] = (),
) -> tuple[str, ...]:
    """The roots pointers may lead into: ``given`` (by the calling code), else ``files.roots``,
    else the ``defaults`` of where the thread came from (its file's folder; the store's files)."""
    chosen = given if given is not None else files.roots if files.roots is not None else defaults
    return tuple(os.fspath(root) for root in chosen)


def _shown(value: str, limit: int = 200) -> str:
    """A thread's value in a message: quoted, escaped onto one line, cut at ``limit``."""
    return repr(value[:limit]) + ("..." if len(value) > limit else "")


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def located_pointers(
    thread: Thread,
    media: Callable[[str, Media], Media],
    artifact: Callable[[str, Artifact], Artifact],
) -> Thread:
    """:func:`~turnwire.model.map_pointers`, with the ``$.path`` of each pointer's record.

    The path names the record (``$.messages[0].attachments[1]``); a pointer is its ``.path``.
    """
    replace = msgspec.structs.replace
    # A record whose pointers all come back as they were stays the same object.
    messages = []
    for i, message in enumerate(thread.messages):
        if message.attachments:
            attachments = tuple(
                media(f"$.messages[{i}].attachments[{j}]", a)
                for j, a in enumerate(message.attachments)
            )
            if not all(map(is_, attachments, message.attachments)):
                messages.append(replace(message, attachments=attachments))
                continue
        messages.append(message)
    calls = []
    for i, call in enumerate(thread.tool_calls):
        result = call.result
        if result is None or not (result.media or result.artifact or result.artifacts):
            calls.append(call)
            continue
        at = f"$.tool_calls[{i}].result"
        located = replace(
            result,
            media=None
            if result.media is None
            else tuple(media(f"{at}.media[{j}]", m) for j, m in enumerate(result.media)),
            artifact=None
            if result.artifact is None
            else artifact(f"{at}.artifact", result.artifact),
            artifacts=None
            if result.artifacts is None
            else tuple(artifact(f"{at}.artifacts[{j}]", a) for j, a in enumerate(result.artifacts)),
        )
        if _same_pointers(result, located):
            calls.append(call)
        else:
            calls.append(replace(call, result=located))
    retrievables = tuple(
        replace(r, artifact=artifact(f"$.retrievables[{i}].artifact", r.artifact))
        if r.artifact is not None
        else r
        for i, r in enumerate(thread.retrievables)
    )
    return replace(
        thread, messages=tuple(messages), tool_calls=tuple(calls), retrievables=retrievables
    )


def _same_pointers(before: ToolResult, after: ToolResult) -> bool:
    """Whether locating ``before``'s pointers gave back every one of them unchanged."""
    return (
        before.artifact is after.artifact
        and all(map(is_, before.media or (), after.media or ()))
        and all(map(is_, before.artifacts or (), after.artifacts or ()))
    )


class ContextAssembler:
    """Inlines file bytes for one render: confined to roots, regular files only, bounded.

    A pointer is read only when both its path and the path its symlinks lead to lie inside one
    of ``roots`` (a folder, or a file named on its own), never under ``/proc``, ``/sys`` or
    ``/dev``; anything else is :class:`~turnwire.errors.FileNotAllowedError` with the
    pointer's ``$.path``. The file is opened without following a final symlink and without
    blocking, checked with ``fstat`` (FIFOs, devices, directories and sockets are refused
    before a byte is read), and read up to its announced size. Inline ``data_base64`` counts
    against the same limits.

    :param roots: where pointers may lead; none (the default) allows no pointer.
    :param max_file_bytes: the largest single file that may be inlined.
    :param max_request_bytes: the most file bytes one render may inline in total.
    """

    def __init__(
        self,
        *,
        roots: Iterable[str | os.PathLike[str]] = (),
        max_file_bytes: int = 32 * 2**20,
        max_request_bytes: int = 64 * 2**20,
    ) -> None:
        given = [os.path.abspath(os.fspath(root)) for root in roots]
        self.roots = tuple(dict.fromkeys(given))
        self._real_roots = tuple(dict.fromkeys(os.path.realpath(root) for root in given))
        self.max_file_bytes = max_file_bytes
        self.max_request_bytes = max_request_bytes

    @classmethod
    def from_settings(
        cls, files: FileSettings, roots: Iterable[str | os.PathLike[str]]
    ) -> ContextAssembler:
        """An assembler with ``files:``'s limits and these ``roots``."""
        return cls(
            roots=roots,
            max_file_bytes=files.max_file_bytes,
            max_request_bytes=files.max_request_bytes,
        )

    def inline(self, thread: Thread) -> Thread:
        """``thread`` with every pointer's bytes loaded."""
        budget = [self.max_request_bytes]
        replace = msgspec.structs.replace

        def media(where: str, item: Media) -> Media:
            if item.data is not None:
                self._charge(len(item.data), f"{where}.data_base64", item.id, budget)
                return item
            if item.path is None:
                return item
            data = self.read(item.path, where=f"{where}.path", owner=item.id, budget=budget)
            return replace(item, data=data, path=None)

        def artifact(where: str, item: Artifact) -> Artifact:
            if item.text is not None or item.path is None:
                return item
            data = self.read(item.path, where=f"{where}.path", owner=item.path, budget=budget)
            return replace(item, text=data.decode("utf-8", "replace"), path=None)

        return located_pointers(thread, media, artifact)

    def check(self, thread: Thread) -> None:
        """Refuse, without reading, any pointer that leaves the roots or any oversized inline
        data: what :meth:`inline` would refuse first, checked before a run does anything."""

        def media(where: str, item: Media) -> Media:
            if item.data is not None:
                self._charge(len(item.data), f"{where}.data_base64", item.id, [len(item.data)])
            elif item.path is not None:
                self.resolve(item.path, where=f"{where}.path")
            return item

        def artifact(where: str, item: Artifact) -> Artifact:
            if item.text is None and item.path is not None:
                self.resolve(item.path, where=f"{where}.path")
            return item

        located_pointers(thread, media, artifact)

    def resolve(self, pointer: str, *, where: str) -> str:
        """The real path of ``pointer`` when it may be read.

        :raises FileNotAllowedError: empty, under a pseudo-filesystem, or outside the roots
            (literally or once its symlinks are followed).
        """
        if not pointer or "\x00" in pointer:
            raise FileNotAllowedError(
                f"{where}: {_shown(pointer)} names no file; point at a file inside the thread's "
                "folder or files.roots",
                path=where,
            )
        literal = os.path.abspath(pointer)
        real = os.path.realpath(pointer)
        if any(_inside(p, never) for p in (literal, real) for never in _NEVER):
            raise FileNotAllowedError(
                f"{where}: {_shown(pointer)} is under {', '.join(_NEVER)}, which are never read",
                path=where,
            )
        if not any(_inside(literal, root) for root in self.roots + self._real_roots) or not any(
            _inside(real, root) for root in self._real_roots
        ):
            allowed = ", ".join(self.roots) or "none"
            raise FileNotAllowedError(
                f"{where}: {_shown(pointer)} leads outside the allowed roots ({allowed}); move the "
                "file into the thread's folder or add its folder to files.roots",
                path=where,
            )
        return real

    def read(
        self, pointer: str, *, where: str, owner: str, budget: list[int] | None = None
    ) -> bytes:
        """The bytes of a regular file inside the roots, within the limits.

        :param budget: the request's remaining byte budget, decreased by the file's size.
        :raises FileNotAllowedError: see :meth:`resolve`; or not a regular file.
        :raises RenderError: the file cannot be read, or is over a limit.
        """
        real = self.resolve(pointer, where=where)
        try:
            fd = os.open(real, _OPEN_FLAGS)
        except OSError as err:
            if err.errno in (errno.ELOOP, errno.ENXIO, errno.EOPNOTSUPP):
                raise FileNotAllowedError(
                    f"{where}: {_shown(pointer)} is a symlink or a special file, not a "
                    "regular file",
                    path=where,
                ) from err
            raise RenderError(
                f"record {_shown(owner)} points at {_shown(pointer)}, which cannot be read: "
                f"{err.strerror}",
                stage="context",
                record=owner,
            ) from err
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise FileNotAllowedError(
                    f"{where}: {_shown(pointer)} is {_kind(info.st_mode)}; only regular files "
                    "are read",
                    path=where,
                )
            size = info.st_size
            self._charge(size, where, owner, [self.max_request_bytes] if budget is None else budget)
            chunks: list[bytes] = []
            left = size + 1  # one byte more than announced tells a file that grows
            while left > 0:
                chunk = os.read(fd, min(left, 2**20))
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
        except OSError as err:
            raise RenderError(
                f"record {_shown(owner)} points at {_shown(pointer)}, which cannot be read: "
                f"{err.strerror}",
                stage="context",
                record=owner,
            ) from err
        finally:
            os.close(fd)
        if left <= 0:
            raise RenderError(
                f"record {_shown(owner)} points at {_shown(pointer)}, which grew past its size of "
                f"{size} bytes "
                "while it was read",
                stage="context",
                record=owner,
            )
        return b"".join(chunks)

    def _charge(self, size: int, where: str, owner: str, budget: list[int]) -> None:
        if size > self.max_file_bytes:
            raise RenderError(
                f"{where}: record {_shown(owner)} has {size} bytes, over the per-file limit of "
                f"{self.max_file_bytes} bytes (files.max_file_bytes)",
                stage="context",
                record=owner,
            )
        if size > budget[0]:
            raise RenderError(
                f"{where}: record {_shown(owner)} has {size} bytes, which would pass the "
                f"per-request limit of {self.max_request_bytes} file bytes "
                "(files.max_request_bytes)",
                stage="context",
                record=owner,
            )
        budget[0] -= size
