"""Tool declarations of the Responses wire."""

from __future__ import annotations

from typing import Any

from turnwire.wire.content import WireStruct

__all__ = ["FunctionTool"]


class FunctionTool(WireStruct, frozen=True, kw_only=True, tag="function"):
    """A function the model may call. ``strict`` is always sent (the spec requires it)."""

    name: str
    parameters: dict[str, Any]
    strict: bool
    description: str | None = None
