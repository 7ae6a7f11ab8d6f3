"""What a response gives back: :class:`Generation` and its outputs, and the shapes of the
answer's items that are checked as they arrive (a mismatch is a :class:`StreamError` naming the
field). The slots that build each output live in :mod:`turnwire.wire.slots`, the state machine
that drives them in :mod:`turnwire.wire.accumulator`; what they do:

Slots are keyed by ``output_index``. A ``message`` item opens a text slot, ``reasoning`` a
thinking slot, ``function_call`` a tool-call slot; any other item type (hosted tools: web
search, code interpreter, MCP, tool search, a compaction, a type added later) a hosted slot,
which keeps the whole item as the API emitted it. Deltas append (a
delta for an index no item opened opens the slot it implies); ``.function_call_arguments.done``
replaces the arguments; ``output_item.done`` finalises a slot from the complete item, and is
the only place ``encrypted_content`` is captured (it is re-encrypted at every emission; the
``.done`` value is the one to keep), with a backfill from the terminal response for an item
whose ``.done`` lacked it.

A hosted item that neither an ``output_item.done`` nor the terminal response finished (a
stream cut after its ``output_item.added``) is dropped (warning kind
``unfinished-hosted-item``): the item as opened cannot be sent back as input.

Nothing else the server reported is lost: an item of the terminal response's ``output`` that no
``output_item.done`` finalised is built from the terminal copy (warning kind
``output-from-terminal-response``), and a terminal copy that disagrees with a streamed item is
logged (kind ``terminal-output-mismatch``; ``encrypted_content`` is never compared, it differs
by design).

Every item, part and response object is validated before it is used: a value of the wrong type
(an int id, an object ``phase``, a content part that is not an object, a ``call_id`` missing
from a finished call, an unknown status...) raises :class:`~turnwire.errors.StreamError`
naming the event and the field, such as ``response.output_item.done output[1].content[0].text:
expected str, got int``, so no such value can reach a thread.

A response ends at ``response.completed``, ``response.incomplete``, ``response.failed`` or an
``error`` event, or at end of stream (:meth:`ResponseAccumulator.close`, which drains what
arrived). Several responses may follow each other on one stream; each ``response.created``
starts a new one.
"""

from __future__ import annotations

import logging
import re
from typing import Annotated, Any, Literal, TypeVar

import msgspec

from turnwire.errors import StreamError

__all__ = [
    "Generation",
    "HostedOutput",
    "MessageOutput",
    "Output",
    "ReasoningOutput",
    "Terminal",
    "ToolCallOutput",
    "shape_error",
]


logger = logging.getLogger("turnwire")


Terminal = Literal["completed", "incomplete", "failed", "error", "eof"]


class MessageOutput(msgspec.Struct, frozen=True, kw_only=True):
    """An assistant message: its text (or refusal), id and ``phase`` when the API gave one."""

    output_index: int
    item_id: str | None
    text: str
    refusal: str = ""
    phase: str | None = None
    status: str | None = None
    annotations: tuple[dict[str, Any], ...] = ()
    logprobs: tuple[dict[str, Any], ...] = ()


class ReasoningOutput(msgspec.Struct, frozen=True, kw_only=True):
    """A reasoning item: summary parts, raw reasoning parts, the final encrypted content."""

    output_index: int
    item_id: str | None
    summary: tuple[str, ...] = ()
    content: tuple[str, ...] = ()
    encrypted_content: str | None = None

    @property
    def text(self) -> str:
        """What a plain-text thought shows: the reasoning text, else the summary."""
        return "\n\n".join(self.content) or "\n\n".join(self.summary)


class ToolCallOutput(msgspec.Struct, frozen=True, kw_only=True):
    """A function call: ``call_id``, name and the raw arguments string."""

    output_index: int
    item_id: str | None
    call_id: str
    name: str
    arguments: str
    status: str | None = None
    caller: str | None = None  # the call_id of the program that made it (programmatic calls)
    namespace: str | None = None  # the namespace of a function a tool search loaded


class HostedOutput(msgspec.Struct, frozen=True, kw_only=True):
    """Any other output item (a hosted tool's call, an MCP listing, a compaction ...), whole."""

    output_index: int
    item_id: str | None
    type: str
    item: dict[str, Any]


Output = MessageOutput | ReasoningOutput | ToolCallOutput | HostedOutput


class Generation(msgspec.Struct, frozen=True, kw_only=True):
    """One response as it was received.

    :ivar terminal: how it ended; ``eof`` means the stream closed (or another response began)
        without a terminal event: no answer, only ever the ``partial`` of a stream error.
    :ivar outputs: the slots in ``output_index`` order.
    :ivar hosted: the types of the hosted output items, in output order.
    :ivar sequence_gaps: how many times ``sequence_number`` skipped.
    :ivar from_terminal: the output indices built from the terminal response's ``output``
        because no ``output_item.done`` finalised them.
    """

    terminal: Terminal
    response_id: str | None = None
    status: str | None = None
    model: str | None = None
    usage: dict[str, Any] | None = None
    incomplete_reason: str | None = None
    error_code: str | None = None
    error_message: str | None = None
    outputs: tuple[Output, ...] = ()
    hosted: tuple[str, ...] = ()
    sequence_gaps: int = 0
    from_terminal: tuple[int, ...] = ()

    @property
    def messages(self) -> list[MessageOutput]:
        return [o for o in self.outputs if isinstance(o, MessageOutput)]

    @property
    def reasoning(self) -> list[ReasoningOutput]:
        return [o for o in self.outputs if isinstance(o, ReasoningOutput)]

    @property
    def tool_calls(self) -> list[ToolCallOutput]:
        return [o for o in self.outputs if isinstance(o, ToolCallOutput)]

    @property
    def hosted_items(self) -> list[HostedOutput]:
        return [o for o in self.outputs if isinstance(o, HostedOutput)]

    @property
    def text(self) -> str:
        return "".join(m.refusal or m.text for m in self.messages)


# ---------------------------------------------------------------------- shapes of the wire
# Unknown fields are allowed (the API grows); the fields turnwire reads are typed strictly.

# An item's status is informational (the response's status decides the outcome), and servers
# we did not write send values the spec lacks (open-responses-server's function calls say
# "ready"): any string is kept.
ItemStatus = str


ResponseStatus = Literal["queued", "in_progress", "completed", "incomplete", "failed", "cancelled"]


class _Shape(msgspec.Struct, frozen=True, kw_only=True):
    pass


class _AnyItem(_Shape, frozen=True, kw_only=True):
    type: str


class _MessageItem(_Shape, frozen=True, kw_only=True):
    id: str | None = None
    status: ItemStatus | None = None
    phase: str | None = None
    content: tuple[dict[str, Any], ...] | None = None


class _OutputTextPart(_Shape, frozen=True, kw_only=True):
    text: str = ""
    annotations: tuple[dict[str, Any], ...] | None = None
    logprobs: tuple[dict[str, Any], ...] | None = None


class _HostedItem(_Shape, frozen=True, kw_only=True):
    id: str | None = None
    status: ItemStatus | None = None


class _RefusalPart(_Shape, frozen=True, kw_only=True):
    refusal: str = ""


class _TextPart(_Shape, frozen=True, kw_only=True):
    text: str = ""


class _ReasoningItem(_Shape, frozen=True, kw_only=True):
    id: str | None = None
    status: ItemStatus | None = None
    summary: tuple[_TextPart, ...] | None = None
    content: tuple[_TextPart, ...] | None = None
    encrypted_content: str | None = None


class _DirectCaller(_Shape, frozen=True, kw_only=True, tag="direct", tag_field="type"):
    pass


class _ProgramCaller(_Shape, frozen=True, kw_only=True, tag="program", tag_field="type"):
    caller_id: Annotated[str, msgspec.Meta(min_length=1)]


class _CallItem(_Shape, frozen=True, kw_only=True):
    id: str | None = None
    status: ItemStatus | None = None
    call_id: str | None = None
    name: str | None = None
    arguments: str | None = None
    caller: _DirectCaller | _ProgramCaller | None = None
    namespace: str | None = None

    @property
    def program(self) -> str | None:
        """The ``call_id`` of the program that made the call, if a program did."""
        caller = self.caller
        return caller.caller_id if type(caller) is _ProgramCaller else None


class _ErrorObject(_Shape, frozen=True, kw_only=True):
    code: str | int | None = None
    message: str | None = None


class _IncompleteDetails(_Shape, frozen=True, kw_only=True):
    reason: str | None = None


# A model name is a printable name: a control character in one (NUL, an escape) is refused where
# the answer enters, before it reaches a store, a log or a terminal.
_ModelName = Annotated[str, msgspec.Meta(pattern="^[^\\x00-\\x1f\\x7f-\\x9f]*$")]


class _Response(_Shape, frozen=True, kw_only=True):
    id: str | None = None
    status: ResponseStatus | None = None
    model: _ModelName | None = None
    usage: dict[str, Any] | None = None
    output: tuple[dict[str, Any], ...] | None = None
    error: _ErrorObject | None = None
    incomplete_details: _IncompleteDetails | None = None


_EMPTY_RESPONSE = _Response()


_AT_PATH = re.compile(r" - at `\$([^`]*)`$")


_S = TypeVar("_S", bound=_Shape)


def shape_error(event: str, field: str, detail: str) -> StreamError:
    """The error for a value of the wrong shape at ``field`` of ``event``."""
    return StreamError(
        f"{event} {field}: {detail}; the server's output does not follow the Responses schema "
        "and nothing was recorded",
        event=event,
        field=field,
    )


def _validation_error(event: str, where: str, err: msgspec.ValidationError) -> StreamError:
    message = str(err)
    match = _AT_PATH.search(message)
    suffix = match.group(1) if match else ""
    detail = _AT_PATH.sub("", message).replace("`", "")
    detail = detail[:1].lower() + detail[1:]
    field = f"{where}{suffix}" if where else suffix.lstrip(".") or "(root)"
    return shape_error(event, field, detail)


def _convert(value: Any, shape: type[_S], event: str, where: str) -> _S:
    try:
        return msgspec.convert(value, shape)
    except msgspec.ValidationError as err:
        raise _validation_error(event, where, err) from None
