"""Input items of the Responses wire: the elements of a request's ``input`` array.

Every item is tagged with its ``type`` literal, ``InputMessage`` included (``"type":
"message"``: OpenAI's schema allows it on the "easy" message and the Open Responses
specification requires it). A tool call and its output are two sibling items.

``InputMessage`` and ``OutputMessage`` share the tag ``message``: these types are encoded,
never decoded as one union.
"""

from __future__ import annotations

from typing import Any, Literal, NoReturn

from turnwire.wire.content import (
    InputContent,
    OutputText,
    ReasoningText,
    Refusal,
    SummaryText,
    WireStruct,
)

__all__ = [
    "FunctionCall",
    "FunctionCallOutput",
    "HostedInputItem",
    "InputItem",
    "InputMessage",
    "OutputMessage",
    "ReasoningItem",
]


class InputMessage(WireStruct, frozen=True, kw_only=True, tag="message"):
    """A message with a role and either string content or content blocks."""

    role: Literal["user", "assistant", "system", "developer"]
    content: str | tuple[InputContent, ...]
    phase: str | None = None


class OutputMessage(WireStruct, frozen=True, kw_only=True, tag="message"):
    """An assistant message replayed in the shape the API produced it, with its ``msg_`` id."""

    role: Literal["assistant"]
    status: Literal["completed", "in_progress", "incomplete"]
    id: str
    content: tuple[OutputText | Refusal, ...]
    phase: str | None = None


class FunctionCall(WireStruct, frozen=True, kw_only=True, tag="function_call"):
    """A call the model made; ``id`` (``fc_...``) is sent only when its reasoning precedes it."""

    call_id: str
    name: str
    arguments: str
    id: str | None = None


class FunctionCallOutput(WireStruct, frozen=True, kw_only=True, tag="function_call_output"):
    """The result of a call, as text or content blocks."""

    call_id: str
    output: str | tuple[InputContent, ...]


class ReasoningItem(WireStruct, frozen=True, kw_only=True, tag="reasoning"):
    """A reasoning item replayed with its ``encrypted_content`` (``store: false``)."""

    summary: tuple[SummaryText, ...]
    id: str | None = None
    content: tuple[ReasoningText, ...] | None = None
    encrypted_content: str | None = None


class HostedInputItem(dict[str, Any]):
    """A hosted item (web search, code interpreter, MCP, compaction ...) replayed as the API
    emitted it, restricted to the fields its input shape allows (see :mod:`turnwire.hosted`).

    It encodes as the mapping itself, in the emitted field order. It is read-only: it is shared
    between renders and its bytes feed the prefix fingerprint. ``unpaired`` is what is sent in
    its place when a reasoning item of its response came before it and that reasoning is not
    sent (the API refuses such an item without its reasoning); ``None``: nothing is sent then.
    ``recorded`` is the ``(created_at, seq)`` of the record it renders, set by the pipeline.
    """

    __slots__ = ("recorded", "unpaired")

    def __init__(self, fields: dict[str, Any], unpaired: InputItem | None = None) -> None:
        super().__init__(fields)
        self.unpaired = unpaired
        self.recorded: tuple[Any, int] | None = None

    @property
    def type(self) -> str:
        return str(self["type"])

    @property
    def id(self) -> str | None:
        value = self.get("id")
        return value if isinstance(value, str) else None

    def _read_only(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError("a HostedInputItem is read-only")

    __setitem__ = __delitem__ = _read_only
    clear = pop = popitem = setdefault = update = _read_only
    __ior__ = _read_only

    def __repr__(self) -> str:
        return f"HostedInputItem(type={self.get('type')!r}, id={self.get('id')!r})"


InputItem = (
    InputMessage
    | OutputMessage
    | FunctionCall
    | FunctionCallOutput
    | ReasoningItem
    | HostedInputItem
)
