"""The request body of ``POST /responses``.

Field order is the order of the body on the wire. ``store`` has no default: a stateless client
must always say ``store: false``, and a default would let ``omit_defaults`` drop it.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from turnwire.wire.items import InputItem
from turnwire.wire.tools import WireTool

__all__ = [
    "FunctionToolChoice",
    "ProgrammaticToolChoice",
    "PromptCacheOptions",
    "ReasoningOptions",
    "RequestBody",
    "StreamOptions",
    "TextOptions",
    "ToolChoice",
]


class _Options(
    msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, forbid_unknown_fields=True
):
    pass


class ReasoningOptions(_Options, frozen=True, kw_only=True):
    effort: Literal["none", "minimal", "low", "medium", "high", "xhigh"] | None = None
    summary: Literal["auto", "concise", "detailed"] | None = None


class TextOptions(_Options, frozen=True, kw_only=True):
    format: dict[str, Any] | None = None
    verbosity: Literal["low", "medium", "high"] | None = None


class StreamOptions(_Options, frozen=True, kw_only=True):
    include_obfuscation: bool | None = None


class PromptCacheOptions(_Options, frozen=True, kw_only=True):
    """``prompt_cache_options`` (GPT-5.6 and later), its fields as the official types define
    them; a field left unset is left out of the body."""

    comparison_response_id: str | None = None
    mode: Literal["implicit", "explicit"] | None = None
    prewarm: bool | None = None
    ttl: Literal["30m", "12h"] | None = None


class FunctionToolChoice(_Options, frozen=True, kw_only=True, tag="function", tag_field="type"):
    name: str


class ProgrammaticToolChoice(
    _Options, frozen=True, kw_only=True, tag="programmatic_tool_calling", tag_field="type"
):
    """The model must answer with a program (programmatic tool calling)."""


ToolChoice = Literal["none", "auto", "required"] | FunctionToolChoice | ProgrammaticToolChoice
"""What ``tool_choice`` may say: a mode, one function by name, or a program."""


class RequestBody(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    """The exact body turnwire POSTs."""

    model: str
    input: tuple[InputItem, ...]
    stream: bool
    store: bool
    instructions: str | None = None
    include: tuple[str, ...] | None = None
    reasoning: ReasoningOptions | None = None
    max_output_tokens: int | None = None
    parallel_tool_calls: bool | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_logprobs: int | None = None
    truncation: Literal["auto", "disabled"] | None = None
    service_tier: Literal["auto", "default", "flex", "scale", "priority"] | None = None
    prompt_cache_key: str | None = None
    prompt_cache_retention: Literal["in_memory", "24h"] | None = None
    prompt_cache_options: PromptCacheOptions | None = None
    safety_identifier: str | None = None
    metadata: dict[str, str] | None = None
    text: TextOptions | None = None
    background: bool | None = None
    stream_options: StreamOptions | None = None
    tool_choice: ToolChoice | None = None
    tools: tuple[WireTool, ...] | None = None
