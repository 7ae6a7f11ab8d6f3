"""The request body of ``POST /responses``.

Field order is the order of the body on the wire. ``store`` has no default: a stateless client
must always say ``store: false``, and a default would let ``omit_defaults`` drop it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from turnwire.wire.items import InputItem
from turnwire.wire.tools import WireTool

__all__ = [
    "FunctionToolChoice",
    "ProgrammaticToolChoice",
    "PromptCacheOptions",
    "ReasoningEffort",
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


ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"]
"""How hard a reasoning model thinks (``reasoning.effort``, a ``configuration_update``'s)."""


class ReasoningOptions(_Options, frozen=True, kw_only=True):
    effort: ReasoningEffort | None = None
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


class ContextManagement(_Options, frozen=True, kw_only=True):
    """One ``context_management`` entry: server-side compaction (``type: compaction``) once the
    input reaches ``compact_threshold`` tokens."""

    type: Literal["compaction"]
    compact_threshold: Annotated[int, msgspec.Meta(ge=1)] | None = None


class FunctionToolChoice(_Options, frozen=True, kw_only=True, tag="function", tag_field="type"):
    """The model must call this function."""

    name: str


class ProgrammaticToolChoice(
    _Options, frozen=True, kw_only=True, tag="programmatic_tool_calling", tag_field="type"
):
    """The model must answer with a program (programmatic tool calling)."""


class CustomToolChoice(_Options, frozen=True, kw_only=True, tag="custom", tag_field="type"):
    """The model must call this custom (freeform) tool."""

    name: Annotated[str, msgspec.Meta(min_length=1)]


class McpToolChoice(_Options, frozen=True, kw_only=True, tag="mcp", tag_field="type"):
    """The model must call a tool of this MCP server (this one, when ``name`` is given)."""

    server_label: Annotated[str, msgspec.Meta(min_length=1)]
    name: str | None = None


class ShellToolChoice(_Options, frozen=True, kw_only=True, tag="shell", tag_field="type"):
    """The model must call the shell tool."""


class ApplyPatchToolChoice(
    _Options, frozen=True, kw_only=True, tag="apply_patch", tag_field="type"
):
    """The model must call the apply_patch tool."""


class _BuiltInChoice(_Options, frozen=True, kw_only=True, tag_field="type"):
    """The model must use this built-in tool (one class per type the API names)."""


class FileSearchChoice(_BuiltInChoice, frozen=True, kw_only=True, tag="file_search"):
    pass


class WebSearchPreviewChoice(_BuiltInChoice, frozen=True, kw_only=True, tag="web_search_preview"):
    pass


class WebSearchPreviewDatedChoice(
    _BuiltInChoice, frozen=True, kw_only=True, tag="web_search_preview_2025_03_11"
):
    pass


class ComputerChoice(_BuiltInChoice, frozen=True, kw_only=True, tag="computer"):
    pass


class ComputerUseChoice(_BuiltInChoice, frozen=True, kw_only=True, tag="computer_use"):
    pass


class ComputerUsePreviewChoice(
    _BuiltInChoice, frozen=True, kw_only=True, tag="computer_use_preview"
):
    pass


class ImageGenerationChoice(_BuiltInChoice, frozen=True, kw_only=True, tag="image_generation"):
    pass


class CodeInterpreterChoice(_BuiltInChoice, frozen=True, kw_only=True, tag="code_interpreter"):
    pass


class AllowedTools(_Options, frozen=True, kw_only=True, tag="allowed_tools", tag_field="type"):
    """Only these of the declared tools may be called (``mode: required``: one must be).

    Each entry names a declared tool as the API does: ``{type: function, name: ...}``,
    ``{type: custom, name: ...}``, ``{type: mcp, server_label: ...}``, or a tool type alone
    (``{type: image_generation}``). The declarations stay the same from request to request,
    so restricting tools this way keeps the prompt cache (changing ``tools`` would not).
    """

    mode: Literal["auto", "required"]
    tools: Annotated[tuple[dict[str, Any], ...], msgspec.Meta(min_length=1)]

    def __post_init__(self) -> None:
        for index, entry in enumerate(self.tools):
            kind = entry.get("type")
            if not isinstance(kind, str) or not kind:
                raise ValueError(f"tools[{index}].type: each allowed tool names its type")
            needs = {"function": "name", "custom": "name", "mcp": "server_label"}.get(kind)
            if needs and not (isinstance(entry.get(needs), str) and entry[needs]):
                raise ValueError(
                    f"tools[{index}].{needs}: an allowed {kind} tool names its {needs}"
                )


ToolChoice = (
    Literal["none", "auto", "required"]
    | FunctionToolChoice
    | ProgrammaticToolChoice
    | AllowedTools
    | CustomToolChoice
    | McpToolChoice
    | ShellToolChoice
    | ApplyPatchToolChoice
    | FileSearchChoice
    | WebSearchPreviewChoice
    | WebSearchPreviewDatedChoice
    | ComputerChoice
    | ComputerUseChoice
    | ComputerUsePreviewChoice
    | ImageGenerationChoice
    | CodeInterpreterChoice
)
"""What ``tool_choice`` may say, as the API's types do: a mode, one tool (a function, a custom
tool, an MCP server's tool, shell, apply_patch, a built-in tool by type), a program, or the
``allowed_tools`` subset of the declared tools."""


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
    context_management: tuple[ContextManagement, ...] | None = None
    tool_choice: ToolChoice | None = None
    tools: tuple[WireTool, ...] | None = None
