"""Input items of the Responses wire: the elements of a request's ``input`` array.

``InputMessage`` is the API's "easy" message and carries no ``type`` key; every other item is
tagged with its ``type`` literal. A tool call and its output are two sibling items.
"""

from __future__ import annotations

from typing import Literal

import msgspec

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


class InputMessage(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    """A message with a role and either string content or content blocks (no ``type`` key)."""

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
