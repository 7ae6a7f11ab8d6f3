"""Input items of the Responses wire: the elements of a request's ``input`` array.

Every item is tagged with its ``type`` literal, ``InputMessage`` included (``"type":
"message"``: OpenAI's schema allows it on the "easy" message and the Open Responses
specification requires it). A tool call and its output are two sibling items.

``InputMessage`` and ``OutputMessage`` share the tag ``message``: these types are encoded,
never decoded as one union.
"""

from __future__ import annotations

from typing import Literal

from turnwire.wire.content import (
    InputContent,
    OutputText,
    ReasoningText,
    SummaryText,
    WireStruct,
)

__all__ = [
    "FunctionCall",
    "FunctionCallOutput",
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
    content: tuple[OutputText, ...]
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


InputItem = InputMessage | OutputMessage | FunctionCall | FunctionCallOutput | ReasoningItem
