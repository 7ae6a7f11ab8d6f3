"""Tool declarations of the Responses wire: function tools, the hosted tools the API runs
itself (web search, file search, code interpreter, remote MCP servers, image generation,
programmatic tool calling, tool search), namespaces of functions and custom tools, and the
tools declared by their type that the client runs (custom tools, ``shell``, ``local_shell``,
``apply_patch``, computer use: :data:`CLIENT_TOOL_TYPES`, each answered by a handler the
deployer registers).

Tool search: a function, a custom tool or an MCP server declared with ``defer_loading: true``
(or a namespace holding a deferred function or custom tool) is loaded only when the model
searches for it with the ``tool_search`` tool (:class:`ToolSearchTool`); see
``docs/tools.md``.

A hosted tool's declaration is the same Struct in a thread file (``hosted_tools``), in the
configuration (``tools.hosted``) and on the wire: its fields are the API's, typed, and an
unknown field is rejected (a field the API adds later needs a turnwire release). An MCP
server's ``headers`` and ``authorization`` usually hold credentials: they are sent in the
request body and nowhere else; their values are given to :func:`turnwire._redact.remember_secret`
when the declaration is built (so no log record or error message shows them), and ``repr``
hides them.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, TypeGuard

import msgspec

from turnwire._redact import MARK, remember_secret
from turnwire.wire.content import WireStruct

__all__ = [
    "CLIENT_TOOL_TYPES",
    "DEFERRABLE_TYPES",
    "HOSTED_TOOL_TYPES",
    "TOOL_NAME",
    "ApplyPatchTool",
    "ClientTool",
    "CodeInterpreterContainer",
    "CodeInterpreterTool",
    "ComputerTool",
    "ComputerUsePreviewTool",
    "CustomTool",
    "CustomToolGrammar",
    "CustomToolText",
    "FileSearchHybridSearch",
    "FileSearchRanking",
    "FileSearchTool",
    "FunctionTool",
    "HostedTool",
    "ImageGenerationTool",
    "LocalShellTool",
    "McpApprovalFilter",
    "McpTool",
    "McpToolFilter",
    "NamespaceFunction",
    "NamespaceTool",
    "ProgrammaticToolCallingTool",
    "ShellLocalEnvironment",
    "ShellTool",
    "ToolSearchTool",
    "WebSearchFilters",
    "WebSearchLocation",
    "WebSearchTool",
    "WireTool",
    "check_hosted_tools",
    "client_search",
    "client_tool_key",
    "declaration_key",
    "namespace_function",
]

NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]
TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""What a tool's name may be (``fullmatch``): the API's pattern, at most 64 characters."""
ToolName = Annotated[str, msgspec.Meta(pattern=rf"^{TOOL_NAME.pattern}(?!\n)$")]
"""A string :data:`TOOL_NAME` takes (the type a declaration's and a call's name have)."""
Grammar = Annotated[str, msgspec.Meta(min_length=1, max_length=100_000)]
Weight = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]


class FunctionTool(WireStruct, frozen=True, kw_only=True, tag="function"):
    """A function the model may call. ``strict`` is always sent (the spec requires it);
    ``defer_loading`` only when true (the function is loaded through a tool search)."""

    name: str
    parameters: dict[str, Any]
    strict: bool
    description: str | None = None
    allowed_callers: tuple[Literal["direct", "programmatic"], ...] | None = None
    defer_loading: bool = False


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
    defer_loading: bool = False

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


class CustomToolText(_Declared, frozen=True, kw_only=True, tag="text", tag_field="type"):
    """A custom tool's input is free text (the API's default).

    :ivar type: `text`.
    """


class CustomToolGrammar(_Declared, frozen=True, kw_only=True, tag="grammar", tag_field="type"):
    """A custom tool's input follows a grammar: ``lark`` (a Lark grammar) or ``regex`` (a
    regular expression). The API checks the grammar; turnwire sends it as it is.

    :ivar type: `grammar`.
    :ivar syntax: `lark` or `regex`.
    :ivar definition: The grammar, in that syntax.
    """

    syntax: Literal["lark", "regex"]
    definition: Grammar


class CustomTool(_HostedTool, frozen=True, kw_only=True, tag="custom"):
    """A freeform tool the client runs: the model answers with a ``custom_tool_call`` whose
    ``input`` is text (constrained by ``format`` when it is a grammar), and the handler
    registered under ``name`` answers it.

    :ivar type: `custom`.
    :ivar name: The tool's name (1 to 64 letters, digits, `_` or `-`), unique among the tools;
        its handler is registered under it.
    :ivar description: What the tool does, as the model reads it.
    :ivar format: What the input follows: free text (the default) or a grammar.
    :ivar allowed_callers: Who may call it: `direct` (the model), `programmatic` (a program), or
        both; unset, the model.
    :ivar defer_loading: Loaded only through a tool search (the `tool_search` tool): the model
        sees its name and description until it searches for it.
    """

    name: ToolName
    description: str | None = None
    format: CustomToolText | CustomToolGrammar | None = None
    allowed_callers: tuple[Literal["direct", "programmatic"], ...] | None = None
    defer_loading: bool = False


class ShellLocalEnvironment(_Declared, frozen=True, kw_only=True, tag="local", tag_field="type"):
    """The shell runs where the client runs it (the handler decides what that means).

    :ivar type: `local`.
    """


class ShellTool(_HostedTool, frozen=True, kw_only=True, tag="shell"):
    """The model asks for shell commands (``shell_call``); the ``shell`` handler runs them.

    Only the local environment is declared here: a container environment is a shell the API
    hosts, whose calls it answers itself.

    :ivar type: `shell`.
    :ivar environment: Where the commands run: `{type: local}` (the client's handler runs them).
    :ivar allowed_callers: Who may call it: `direct`, `programmatic`, or both; unset, the model.
    """

    environment: ShellLocalEnvironment | None = None
    allowed_callers: tuple[Literal["direct", "programmatic"], ...] | None = None


class LocalShellTool(_HostedTool, frozen=True, kw_only=True, tag="local_shell"):
    """The older local shell tool (``local_shell_call``, one command, answered with its text
    output by the ``local_shell`` handler).

    :ivar type: `local_shell`.
    """


class ApplyPatchTool(_HostedTool, frozen=True, kw_only=True, tag="apply_patch"):
    """The model creates, updates or deletes files with diffs (``apply_patch_call``); the
    ``apply_patch`` handler applies them.

    :ivar type: `apply_patch`.
    :ivar allowed_callers: Who may call it: `direct`, `programmatic`, or both; unset, the model.
    """

    allowed_callers: tuple[Literal["direct", "programmatic"], ...] | None = None


class ComputerTool(_HostedTool, frozen=True, kw_only=True, tag="computer"):
    """The model drives a computer (``computer_call``); the ``computer`` handler performs the
    actions and answers with a screenshot.

    :ivar type: `computer`.
    """


class ComputerUsePreviewTool(_HostedTool, frozen=True, kw_only=True, tag="computer_use_preview"):
    """The preview computer tool, with its display and environment; its calls are
    ``computer_call`` items too, answered by the ``computer`` handler.

    :ivar type: `computer_use_preview`.
    :ivar display_width: The display's width, in pixels.
    :ivar display_height: The display's height, in pixels.
    :ivar environment: `windows`, `mac`, `linux`, `ubuntu` or `browser`.
    """

    display_width: Annotated[int, msgspec.Meta(ge=1, le=2**31 - 1)]
    display_height: Annotated[int, msgspec.Meta(ge=1, le=2**31 - 1)]
    environment: Literal["windows", "mac", "linux", "ubuntu", "browser"]


class ToolSearchTool(_HostedTool, frozen=True, kw_only=True, tag="tool_search"):
    """The model searches the deferred tools (``defer_loading: true``: functions, custom tools,
    MCP servers, the tools of a namespace) and loads those it needs; a request that declares
    it declares at least one deferred tool, and a deferred tool needs it (preflight rules
    ``tool-search-needs-deferred`` and ``deferred-needs-tool-search``).

    :ivar type: `tool_search`.
    :ivar execution: Who runs the search: `server` (the API, the default) or `client`: the
        run answers each search with the deferred tools it loads (see
        :mod:`turnwire.model.tool_search`).
    :ivar description: What the model reads about the search, for a client-executed one.
    :ivar parameters: The JSON Schema of a client-executed search's arguments; without it the
        arguments are the API's own paths, which turnwire's built-in search answers. With it,
        a handler registered under `tool_search` answers.
    """

    execution: Literal["server", "client"] | None = None
    description: str | None = None
    parameters: dict[str, Any] | None = None


class NamespaceFunction(_Declared, frozen=True, kw_only=True, tag="function", tag_field="type"):
    """A function of a namespace. Its calls come back as ``function_call`` items carrying the
    namespace's name; its handler is registered under ``namespace.name`` (``crm.lookup``) or
    under its name alone.

    :ivar type: `function`.
    :ivar name: The function's name (1 to 64 letters, digits, `_` or `-`), unique in its
        namespace.
    :ivar description: What the function does, as the model reads it.
    :ivar parameters: A JSON Schema object describing the arguments (null: no arguments).
    :ivar strict: Its own `strict` flag; null defers to `render.strict`, then to whether the
        schema qualifies for strict mode (as a thread's function tools).
    :ivar defer_loading: Loaded only through a tool search (the `tool_search` tool): until the
        model searches, it sees the namespace's name and description only.
    :ivar allowed_callers: Who may call it: `direct`, `programmatic`, or both; unset, the model.
    """

    name: ToolName
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None
    defer_loading: bool = False
    allowed_callers: tuple[Literal["direct", "programmatic"], ...] | None = None


class NamespaceTool(_HostedTool, frozen=True, kw_only=True, tag="namespace"):
    """Functions and custom tools grouped under a name the model reads with its description;
    a call of one of them carries the namespace's name (``function_call.namespace``).
    ``defer_loading`` applies to the tools inside, not to the namespace: a namespace whose tools
    are deferred is loaded through a tool search.

    :ivar type: `namespace`.
    :ivar name: The namespace's name (1 to 64 letters, digits, `_` or `-`), as calls carry it.
    :ivar description: What the namespace holds, as the model reads it.
    :ivar tools: Its functions and custom tools (at least one), their names unique in it.
    """

    name: ToolName
    description: str
    tools: Annotated[tuple[NamespaceFunction | CustomTool, ...], msgspec.Meta(min_length=1)]

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for tool in self.tools:
            if tool.name in seen:
                raise ValueError(
                    f"namespace {self.name}: the tool name {tool.name!r} is declared twice"
                )
            seen.add(tool.name)


ClientTool = (
    CustomTool | ShellTool | LocalShellTool | ApplyPatchTool | ComputerTool | ComputerUsePreviewTool
)
"""A tool declared by its type whose calls the client answers, through a handler."""

HostedTool = (
    WebSearchTool
    | FileSearchTool
    | CodeInterpreterTool
    | McpTool
    | ImageGenerationTool
    | ProgrammaticToolCallingTool
    | ToolSearchTool
    | NamespaceTool
    | CustomTool
    | ShellTool
    | LocalShellTool
    | ApplyPatchTool
    | ComputerTool
    | ComputerUsePreviewTool
)
"""A tool declared by its ``type`` (what a thread's ``hosted_tools`` and ``tools.hosted``
hold): a hosted tool the API runs, or a client-executed one (:data:`ClientTool`)."""

WireTool = FunctionTool | HostedTool
"""A tool declaration of the request body's ``tools``."""

HOSTED_TOOL_TYPES: dict[str, type[Any]] = {
    "web_search": WebSearchTool,
    "file_search": FileSearchTool,
    "code_interpreter": CodeInterpreterTool,
    "mcp": McpTool,
    "image_generation": ImageGenerationTool,
    "programmatic_tool_calling": ProgrammaticToolCallingTool,
    "tool_search": ToolSearchTool,
    "namespace": NamespaceTool,
}
"""The hosted tool types turnwire declares, by their ``type`` (a namespace's functions are
the client's to answer, as any function's)."""

CLIENT_TOOL_TYPES: dict[str, type[Any]] = {
    "custom": CustomTool,
    "shell": ShellTool,
    "local_shell": LocalShellTool,
    "apply_patch": ApplyPatchTool,
    "computer": ComputerTool,
    "computer_use_preview": ComputerUsePreviewTool,
}
"""The client-executed tool types turnwire declares, by their ``type``."""


DEFERRABLE_TYPES = frozenset({"function", "custom", "mcp"})
"""The tool types that take ``defer_loading`` (a namespace's tools too): those a tool search
loads."""


def client_search(tool: object) -> TypeGuard[ToolSearchTool]:
    """Whether ``tool`` is a ``tool_search`` the client executes (``execution: client``):
    its searches are the client's to answer."""
    return isinstance(tool, ToolSearchTool) and tool.execution == "client"


def runs_on_server(tool: object) -> bool:
    """Whether the server runs ``tool`` (web search, file search, code interpreter, an MCP
    server, image generation, programs, a tool search it executes): what a provider without
    hosted tools cannot take. A namespace's functions, and client-executed tools, are the
    client's."""
    if isinstance(tool, NamespaceTool) or not isinstance(tool, tuple(HOSTED_TOOL_TYPES.values())):
        return False
    return not client_search(tool)


def client_tool_key(tool: ClientTool) -> str:
    """The name a client-executed tool's handler is registered under: a custom tool's
    ``name``, else its kind (``shell``, ``local_shell``, ``apply_patch``, ``computer``; the
    preview computer tool's too)."""
    if isinstance(tool, CustomTool):
        return tool.name
    if isinstance(tool, ComputerUsePreviewTool):
        return "computer"
    return str(tool.__struct_config__.tag)


def declaration_key(tool: HostedTool) -> str:
    """What makes a declaration unique in one request: its ``type``, and for an MCP server
    its ``server_label`` too (``mcp:deepwiki``), for a custom tool or a namespace its ``name``
    (``custom:code_exec``, ``namespace:crm``)."""
    if isinstance(tool, McpTool):
        return f"mcp:{tool.server_label}"
    if isinstance(tool, CustomTool | NamespaceTool):
        return f"{tool.__struct_config__.tag}:{tool.name}"
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


def namespace_function(
    tools: tuple[HostedTool, ...], namespace: str, name: str
) -> NamespaceFunction | CustomTool | None:
    """The tool ``name`` of the first namespace ``namespace`` among ``tools``, ``None`` when
    none declares it."""
    for tool in tools:
        if isinstance(tool, NamespaceTool) and tool.name == namespace:
            return next((member for member in tool.tools if member.name == name), None)
    return None
