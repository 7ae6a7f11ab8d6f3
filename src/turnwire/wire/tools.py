"""Tool declarations of the Responses wire: function tools, and the hosted tools the API runs
itself (web search, file search, code interpreter, remote MCP servers, image generation,
programmatic tool calling).

A hosted tool's declaration is the same Struct in a thread file (``hosted_tools``), in the
configuration (``tools.hosted``) and on the wire: its fields are the API's, typed, and an
unknown field is rejected (a field the API adds later needs a turnwire release). An MCP
server's ``headers`` and ``authorization`` usually hold credentials: they are sent in the
request body and nowhere else; their values are given to :func:`turnwire._redact.remember_secret`
when the declaration is built (so no log record or error message shows them), and ``repr``
hides them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from turnwire._redact import MARK, remember_secret
from turnwire.wire.content import WireStruct

__all__ = [
    "HOSTED_TOOL_TYPES",
    "CodeInterpreterContainer",
    "CodeInterpreterTool",
    "FileSearchHybridSearch",
    "FileSearchRanking",
    "FileSearchTool",
    "FunctionTool",
    "HostedTool",
    "ImageGenerationTool",
    "McpApprovalFilter",
    "McpTool",
    "McpToolFilter",
    "ProgrammaticToolCallingTool",
    "WebSearchFilters",
    "WebSearchLocation",
    "WebSearchTool",
    "WireTool",
    "check_hosted_tools",
    "declaration_key",
]

NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]
Weight = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]


class FunctionTool(WireStruct, frozen=True, kw_only=True, tag="function"):
    """A function the model may call. ``strict`` is always sent (the spec requires it)."""

    name: str
    parameters: dict[str, Any]
    strict: bool
    description: str | None = None
    allowed_callers: tuple[Literal["direct", "programmatic"], ...] | None = None


class _Declared(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    omit_defaults=True,
    forbid_unknown_fields=True,
    gc=False,
):
    """Base of the parts of a hosted tool's declaration: unknown fields are rejected."""


class _HostedTool(_Declared, frozen=True, kw_only=True, tag_field="type"):
    """Base of the hosted tool declarations; the tag is the API's tool ``type``."""


class WebSearchLocation(_Declared, frozen=True, kw_only=True):
    """The user's approximate location, to localise web search results."""

    type: Literal["approximate"] = "approximate"
    city: str | None = None
    country: str | None = None
    region: str | None = None
    timezone: str | None = None


class WebSearchFilters(_Declared, frozen=True, kw_only=True):
    """Which sites a web search may use."""

    allowed_domains: tuple[NonEmpty, ...] | None = None


class WebSearchTool(_HostedTool, frozen=True, kw_only=True, tag="web_search"):
    """The API searches the web."""

    search_context_size: Literal["low", "medium", "high"] | None = None
    user_location: WebSearchLocation | None = None
    filters: WebSearchFilters | None = None


class FileSearchHybridSearch(_Declared, frozen=True, kw_only=True):
    """How dense embedding matches and sparse keyword matches are weighed."""

    embedding_weight: float
    text_weight: float


class FileSearchRanking(_Declared, frozen=True, kw_only=True):
    """How file search results are ranked."""

    ranker: Literal["auto", "default-2024-11-15"] | None = None
    score_threshold: Weight | None = None
    hybrid_search: FileSearchHybridSearch | None = None


class FileSearchTool(_HostedTool, frozen=True, kw_only=True, tag="file_search"):
    """The API searches uploaded files in vector stores."""

    vector_store_ids: Annotated[tuple[NonEmpty, ...], msgspec.Meta(min_length=1)]
    max_num_results: Annotated[int, msgspec.Meta(ge=1, le=50)] | None = None
    filters: dict[str, Any] | None = None
    ranking_options: FileSearchRanking | None = None


class CodeInterpreterContainer(_Declared, frozen=True, kw_only=True):
    """A container the API creates for the run (``type: auto``)."""

    type: Literal["auto"]
    file_ids: tuple[NonEmpty, ...] | None = None
    memory_limit: Literal["1g", "4g", "16g", "64g"] | None = None


class CodeInterpreterTool(_HostedTool, frozen=True, kw_only=True, tag="code_interpreter"):
    """The API runs Python code in a container."""

    container: NonEmpty | CodeInterpreterContainer


class McpToolFilter(_Declared, frozen=True, kw_only=True):
    """A set of an MCP server's tools: by name, or the read-only ones."""

    tool_names: tuple[NonEmpty, ...] | None = None
    read_only: bool | None = None


class McpApprovalFilter(_Declared, frozen=True, kw_only=True):
    """Which of an MCP server's tools need the user's approval (``always``) and which do not
    (``never``)."""

    always: McpToolFilter | None = None
    never: McpToolFilter | None = None


class McpTool(_HostedTool, frozen=True, kw_only=True, tag="mcp", gc=True, weakref=True):
    """The API calls the tools of a remote MCP server (``server_url``) or of a connector
    (``connector_id``): exactly one of them is set."""

    server_label: NonEmpty
    server_url: NonEmpty | None = None
    connector_id: NonEmpty | None = None
    server_description: str | None = None
    allowed_tools: tuple[NonEmpty, ...] | McpToolFilter | None = None
    require_approval: Literal["always", "never"] | McpApprovalFilter | None = None
    headers: dict[NonEmpty, str] | None = None
    authorization: str | None = None

    def __post_init__(self) -> None:
        if (self.server_url is None) == (self.connector_id is None):
            raise ValueError(
                f"mcp {self.server_label}: needs exactly one of `server_url` or `connector_id`"
            )
        for value in (*(self.headers or {}).values(), self.authorization or ""):
            remember_secret(value, holder=self)
            # the token after a scheme (`Bearer ...`)
            remember_secret(value.rpartition(" ")[2], holder=self)

    @property
    def has_secrets(self) -> bool:
        """Whether it carries ``headers`` or an ``authorization`` token."""
        return bool(self.headers) or self.authorization is not None

    def masked(self) -> McpTool:
        """This declaration with every header value and the token replaced by ``[redacted]``."""
        if not self.has_secrets:
            return self
        return msgspec.structs.replace(
            self,
            headers=None if self.headers is None else dict.fromkeys(self.headers, MARK),
            authorization=None if self.authorization is None else MARK,
        )

    def __repr__(self) -> str:
        shown = self.masked()
        fields = ", ".join(
            f"{name}={getattr(shown, name)!r}"
            for name in self.__struct_fields__
            if getattr(shown, name) is not None
        )
        return f"McpTool({fields})"

    __str__ = __repr__

    def __rich_repr__(self) -> Any:  # pragma: no cover - only rich calls it
        shown = self.masked()
        for name in self.__struct_fields__:
            yield name, getattr(shown, name)


class ImageGenerationTool(_HostedTool, frozen=True, kw_only=True, tag="image_generation"):
    """The API generates images (``image_generation_call`` items)."""

    model: NonEmpty | None = None
    action: Literal["generate", "edit", "auto"] | None = None
    quality: Literal["low", "medium", "high", "xhigh", "max", "auto"] | None = None
    size: NonEmpty | None = None
    output_format: Literal["png", "webp", "jpeg", "gif", "svg"] | None = None
    output_compression: Annotated[int, msgspec.Meta(ge=0, le=100)] | None = None
    background: Literal["transparent", "opaque", "auto"] | None = None
    moderation: Literal["auto", "low"] | None = None
    input_fidelity: Literal["high", "low"] | None = None
    partial_images: Annotated[int, msgspec.Meta(ge=0, le=3)] | None = None


class ProgrammaticToolCallingTool(
    _HostedTool, frozen=True, kw_only=True, tag="programmatic_tool_calling"
):
    """The model may answer with a program (a ``program`` item) that the API runs and that
    calls the functions whose ``allowed_callers`` include ``programmatic``; the calls it
    makes come back as function calls with a ``caller``, for the client to answer."""


HostedTool = (
    WebSearchTool
    | FileSearchTool
    | CodeInterpreterTool
    | McpTool
    | ImageGenerationTool
    | ProgrammaticToolCallingTool
)
"""A hosted tool declaration, by its ``type``."""

WireTool = FunctionTool | HostedTool
"""A tool declaration of the request body's ``tools``."""

HOSTED_TOOL_TYPES: dict[str, type[Any]] = {
    "web_search": WebSearchTool,
    "file_search": FileSearchTool,
    "code_interpreter": CodeInterpreterTool,
    "mcp": McpTool,
    "image_generation": ImageGenerationTool,
    "programmatic_tool_calling": ProgrammaticToolCallingTool,
}
"""The hosted tool types turnwire declares, by their ``type``."""


def declaration_key(tool: HostedTool) -> str:
    """What makes a declaration unique in one request: its ``type``, and for an MCP server
    its ``server_label`` too (``mcp:deepwiki``)."""
    if isinstance(tool, McpTool):
        return f"mcp:{tool.server_label}"
    return str(tool.__struct_config__.tag)


def check_hosted_tools(tools: tuple[HostedTool, ...]) -> None:
    """Raise ``ValueError`` when a hosted tool type (an MCP ``server_label``) is declared
    twice."""
    keys: set[str] = set()
    for tool in tools:
        key = declaration_key(tool)
        if key in keys:
            raise ValueError(f"hosted tool {key!r} is declared twice")
        keys.add(key)
