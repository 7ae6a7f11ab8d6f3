"""Hosted items: typed views of the output items that are not messages, reasoning or function
calls, and which of them go back to the API as input items.

A :class:`~turnwire.model.records.HostedItem` keeps the item exactly as the API emitted it. The
views
here read it for the known types (``HostedItem.view``); every view tolerates fields the API adds
later, and an unknown type reads as its raw mapping.

:data:`INPUT_FIELDS` is the replay rule: for each type the API accepts back as an input item,
the fields the input schema allows (OpenAI's OpenAPI ``Item`` union and its ``...ItemParam``
shapes). An emitted field outside that list (``created_by`` on a compaction, say) is not
sent. A type absent from it (a shell call the API ran and answered itself, or a type added
after this release) is never sent as an item: the ``render_hosted_item`` stage renders it as
text instead. A call the client answers (``shell_call``, ``computer_call`` ...) is no hosted
item: it is recorded as a tool call (:mod:`turnwire.model.client_calls`).
"""

from __future__ import annotations

import hmac
from datetime import UTC
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import msgspec

from turnwire.wire.request import ReasoningEffort

if TYPE_CHECKING:
    from turnwire.model.records import HostedItem, Thread

__all__ = [
    "INPUT_FIELDS",
    "UNSEALED_REPLAY",
    "AdditionalTools",
    "CodeInterpreterCall",
    "Compaction",
    "ConfigurationUpdate",
    "FileSearchCall",
    "ImageGenerationCall",
    "McpApprovalRequest",
    "McpApprovalResponse",
    "McpCall",
    "McpListTools",
    "Program",
    "ProgramOutput",
    "Replay",
    "ToolSearchCall",
    "ToolSearchOutput",
    "WebSearchCall",
    "input_item",
    "input_problem",
    "is_sealed",
    "replay",
    "seal",
    "thread_anchor",
    "view",
]

INPUT_FIELDS: dict[str, tuple[str, ...]] = {
    "web_search_call": ("type", "id", "status", "action"),
    "file_search_call": ("type", "id", "status", "queries", "results"),
    "code_interpreter_call": ("type", "id", "status", "container_id", "code", "outputs"),
    "image_generation_call": ("type", "id", "status", "result"),
    "mcp_call": (
        "type",
        "id",
        "server_label",
        "name",
        "arguments",
        "output",
        "error",
        "status",
        "approval_request_id",
    ),
    "mcp_list_tools": ("type", "id", "server_label", "tools", "error"),
    "mcp_approval_request": ("type", "id", "server_label", "name", "arguments"),
    "mcp_approval_response": ("type", "id", "approval_request_id", "approve", "reason"),
    "tool_search_call": ("type", "id", "call_id", "execution", "arguments", "status"),
    "tool_search_output": ("type", "id", "call_id", "execution", "tools", "status"),
    "compaction": ("type", "id", "encrypted_content"),
    "program": ("type", "id", "call_id", "code", "fingerprint"),
    "program_output": ("type", "id", "call_id", "result", "status"),
    "additional_tools": ("type", "id", "role", "tools"),
    "configuration_update": ("type", "id", "reasoning", "text"),
}
"""For each replayable type, the fields of the emitted item that go back as input."""


UNSEALED_REPLAY = frozenset({"compaction"})
"""Types replayed as items even without a seal: opaque state only the API can read."""

_CANONICAL = msgspec.json.Encoder(order="sorted")


def thread_anchor(thread: Thread) -> str:
    """What a seal binds a hosted item to: the identity of the thread's opening record.

    The earliest (by ``created_at``, then ``seq``) of the first message, thought and tool call
    as the thread holds them (records are appended, so each kind's first is its earliest), named
    by its kind, id, instant (in UTC, so a store that returns another offset names the same
    one) and seq: none of which a later render, stamp or compaction changes. A copy of the
    thread (``threads copy``) keeps its seals; another thread has another opening record, so an
    item sealed in one does not replay in the other. Hosted items are not candidates (a thread
    opened by a copied item would be anchored on that item); a thread with none of the three
    kinds has the empty anchor ``""``.
    """
    best: tuple[Any, ...] | None = None
    for kind, records in (
        ("message", thread.messages),
        ("thought", thread.thoughts),
        ("tool_call", thread.tool_calls),
    ):
        if records:
            head = records[0]
            candidate = (head.created_at, head.seq, kind, head.id)
            if best is None or candidate[:2] < best[:2]:
                best = candidate
    if best is None:
        return ""
    moment, seq, kind, record_id = best
    return _ANCHOR.encode([kind, record_id, moment.astimezone(UTC).isoformat(), seq]).decode()


_ANCHOR = msgspec.json.Encoder()


def _sealed_bytes(record: HostedItem, anchor: str) -> bytes:
    # The anchor is JSON (or empty), so ``anchor \0 item`` splits one way only.
    return anchor.encode() + b"\0" + _CANONICAL.encode(record.item)


def seal(record: HostedItem, nonce: Any, anchor: str) -> HostedItem:
    """``record`` sealed under ``nonce``'s secret (an
    :class:`~turnwire.config.nonce.EnvelopeNonce`) for the thread whose
    :func:`thread_anchor` is ``anchor``: what the client does to every hosted item it records."""
    return msgspec.structs.replace(record, seal=nonce.seal(_sealed_bytes(record, anchor)))


def is_sealed(record: HostedItem, nonce: Any, anchor: str) -> bool:
    """Whether ``record`` carries the seal ``nonce``'s secret gives its item in the thread whose
    :func:`thread_anchor` is ``anchor``."""
    if record.seal is None:
        return False
    return hmac.compare_digest(record.seal, nonce.seal(_sealed_bytes(record, anchor)))


def input_item(item: dict[str, Any]) -> dict[str, Any] | None:
    """The input item that replays ``item``, or ``None`` when its type is not replayable.

    The fields keep the emitted order; only those :data:`INPUT_FIELDS` lists are kept, a
    ``null`` is left out where the input shape has the field optional (``mcp_call.error:
    null``, which some Responses servers refuse, goes back without ``error``; a required field
    such as ``code_interpreter_call.code`` keeps its ``null``), and of a web search's
    ``action.sources`` only those the input shape allows.
    """
    fields = INPUT_FIELDS.get(str(item.get("type")))
    if fields is None:
        return None
    optional = _OPTIONAL.get(item["type"], frozenset())
    kept = {
        key: value
        for key, value in item.items()
        if key in fields and (value is not None or key not in optional)
    }
    action = kept.get("action")
    if kept.get("type") == "web_search_call" and isinstance(action, dict) and "sources" in action:
        kept["action"] = _web_search_action(action)
    return kept


def _web_search_action(action: dict[str, Any]) -> dict[str, Any]:
    """``action`` with only the sources the input shape allows: ``{type: url, url}``.

    The API also emits sources of other types (``{type: api, name: oai-weather}`` for its
    own data feeds), which neither its input schema nor the official types accept back; a
    search whose sources are all of those goes back without ``sources``.
    """
    sources = action["sources"]
    if not isinstance(sources, list):
        return action  # the input shape check decides (a list is what it takes)
    kept = [
        {"type": "url", "url": source["url"]}
        for source in sources
        if isinstance(source, dict)
        and source.get("type") == "url"
        and isinstance(source.get("url"), str)
    ]
    return {
        key: (kept if key == "sources" else value)
        for key, value in action.items()
        if key != "sources" or kept
    }


# ---------------------------------------------------------------- the input shapes
# What the API's input schema requires of each replayable type's fields (OpenAPI `Item`
# members and the official types): a field without a default is required; a value of another
# type or outside an enum would fail the next request, so such an item goes as text instead.


class _In(msgspec.Struct, frozen=True, kw_only=True):
    type: str
    id: str


class _WebAction(msgspec.Struct, frozen=True, kw_only=True):
    type: Literal["search", "open_page", "find", "find_in_page"]
    query: str = ""
    queries: list[str] = []
    sources: list[dict[str, Any]] = []
    url: str | None = None
    pattern: str = ""


class _WebSearchIn(_In, frozen=True, kw_only=True):
    status: Literal["in_progress", "searching", "completed", "failed"]
    action: _WebAction


class _FileSearchIn(_In, frozen=True, kw_only=True):
    status: Literal["in_progress", "searching", "completed", "incomplete", "failed"]
    queries: list[str]
    results: list[dict[str, Any]] | None = None


class _CodeIn(_In, frozen=True, kw_only=True):
    status: Literal["in_progress", "completed", "incomplete", "interpreting", "failed"]
    container_id: str
    code: str | None
    outputs: list[dict[str, Any]] | None


class _ImageIn(_In, frozen=True, kw_only=True):
    status: Literal["in_progress", "completed", "generating", "failed"]
    result: str | None


class _McpCallIn(_In, frozen=True, kw_only=True):
    server_label: str
    name: str
    arguments: str
    output: str | None = None
    error: dict[str, Any] | None = None
    status: Literal["in_progress", "completed", "incomplete", "calling", "failed"] = "completed"
    approval_request_id: str | None = None


class _McpListIn(_In, frozen=True, kw_only=True):
    server_label: str
    tools: list[dict[str, Any]]
    error: str | None = None


class _McpRequestIn(_In, frozen=True, kw_only=True):
    server_label: str
    name: str
    arguments: str


class _McpResponseIn(msgspec.Struct, frozen=True, kw_only=True):
    type: str
    id: str | None = None
    approval_request_id: str
    approve: bool
    reason: str | None = None


_SearchStatus = Literal["in_progress", "completed", "incomplete"]


class _ToolSearchCallIn(msgspec.Struct, frozen=True, kw_only=True):
    type: str
    id: str | None = None
    call_id: str | None = None
    execution: Literal["server", "client"] = "server"
    arguments: Any
    status: _SearchStatus = "completed"


class _ToolSearchOutputIn(msgspec.Struct, frozen=True, kw_only=True):
    type: str
    id: str | None = None
    call_id: str | None = None
    execution: Literal["server", "client"] = "server"
    tools: list[dict[str, Any]]
    status: _SearchStatus = "completed"


class _CompactionIn(msgspec.Struct, frozen=True, kw_only=True):
    type: str
    id: str | None = None
    encrypted_content: str


class _ProgramIn(_In, frozen=True, kw_only=True):
    call_id: str
    code: str
    fingerprint: str


class _ProgramOutputIn(_In, frozen=True, kw_only=True):
    call_id: str
    result: str
    status: Literal["completed", "incomplete"]


class _AdditionalToolsIn(msgspec.Struct, frozen=True, kw_only=True):
    type: str
    id: str | None = None
    role: Literal["developer"]
    tools: list[dict[str, Any]]


class _ReasoningUpdate(msgspec.Struct, frozen=True, kw_only=True):
    effort: ReasoningEffort | None = None


class _TextFormat(msgspec.Struct, frozen=True, kw_only=True):
    type: Literal["text", "json_schema"]


class _TextUpdate(msgspec.Struct, frozen=True, kw_only=True):
    format: _TextFormat


class _ConfigurationUpdateIn(msgspec.Struct, frozen=True, kw_only=True):
    type: str
    id: str | None = None
    reasoning: _ReasoningUpdate | None = None
    text: _TextUpdate | None = None


_INPUT_SHAPES: dict[str, type[msgspec.Struct]] = {
    "web_search_call": _WebSearchIn,
    "file_search_call": _FileSearchIn,
    "code_interpreter_call": _CodeIn,
    "image_generation_call": _ImageIn,
    "mcp_call": _McpCallIn,
    "mcp_list_tools": _McpListIn,
    "mcp_approval_request": _McpRequestIn,
    "mcp_approval_response": _McpResponseIn,
    "tool_search_call": _ToolSearchCallIn,
    "tool_search_output": _ToolSearchOutputIn,
    "compaction": _CompactionIn,
    "program": _ProgramIn,
    "program_output": _ProgramOutputIn,
    "additional_tools": _AdditionalToolsIn,
    "configuration_update": _ConfigurationUpdateIn,
}

_OPTIONAL: dict[str, frozenset[str]] = {
    kind: frozenset(field.name for field in msgspec.structs.fields(shape) if not field.required)
    for kind, shape in _INPUT_SHAPES.items()
}
"""For each replayable type, the fields its input shape lets an item leave out: a ``null``
in one of them is not sent (derived from the shapes, the one statement of what is required)."""


class Replay(NamedTuple):
    """How a hosted record is replayed (:func:`replay`): as the input item ``fields``, or as
    its text form, with why (``unsealed``, or the input shape's ``problem``; neither when its
    type has no input form)."""

    fields: dict[str, Any] | None
    unsealed: bool = False
    problem: str | None = None


def replay(record: HostedItem, hosted_replay: str, nonce: Any, anchor: str) -> Replay:
    """How ``record`` is replayed in the thread whose :func:`thread_anchor` is ``anchor``: as
    an item when its type has an input form, it fits that form, and it is sealed by ``nonce``'s
    secret (or ``render.hosted_replay`` is ``all``, or the type is opaque state only the API
    reads, :data:`UNSEALED_REPLAY`); else as text."""
    fields = input_item(record.item)
    if fields is None:
        return Replay(None)
    if not (
        hosted_replay == "all" or record.type in UNSEALED_REPLAY or is_sealed(record, nonce, anchor)
    ):
        return Replay(None, unsealed=True)
    problem = input_problem(fields)
    return Replay(None, problem=problem) if problem is not None else Replay(fields)


def input_problem(fields: dict[str, Any]) -> str | None:
    """Why ``fields`` (what :func:`input_item` returned) would fail the API's input schema,
    or ``None`` when they would not: a required field missing, a value of another type, a
    status outside its enum (``$.action.queries[0]: expected str, got null``)."""
    shape = _INPUT_SHAPES.get(str(fields.get("type")))
    if shape is None:
        return None
    try:
        msgspec.convert(fields, shape)
    except msgspec.ValidationError as err:
        return str(err).replace("`", "")
    return None


class _View(msgspec.Struct, frozen=True, kw_only=True):
    """Base of the typed views: unknown fields are ignored, absent ones default."""

    id: str | None = None
    status: str | None = None


class WebSearchCall(_View, frozen=True, kw_only=True):
    """A web search the API ran: ``action`` is ``search`` (queries, sources), ``open_page``
    (url) or ``find`` (pattern, url)."""

    action: dict[str, Any] | None = None

    @property
    def query(self) -> str | None:
        """The search query, when the action was a search."""
        action = self.action or {}
        query = action.get("query")
        if isinstance(query, str):
            return query
        queries = action.get("queries")
        return queries[0] if isinstance(queries, list) and queries else None


class FileSearchCall(_View, frozen=True, kw_only=True):
    """A search of vector stores: the queries and, when included, the results."""

    queries: tuple[str, ...] = ()
    results: tuple[dict[str, Any], ...] | None = None


class CodeInterpreterCall(_View, frozen=True, kw_only=True):
    """Code the API ran in a container, with its outputs when included."""

    container_id: str | None = None
    code: str | None = None
    outputs: tuple[dict[str, Any], ...] | None = None


class ImageGenerationCall(_View, frozen=True, kw_only=True):
    """An image the API generated; ``result`` is its base64 data."""

    result: str | None = None


class McpCall(_View, frozen=True, kw_only=True):
    """A tool call on a remote MCP server, with its output or error."""

    server_label: str = ""
    name: str = ""
    arguments: str = ""
    output: str | None = None
    error: Any = None
    approval_request_id: str | None = None


class McpListTools(_View, frozen=True, kw_only=True):
    """The tools an MCP server offered."""

    server_label: str = ""
    tools: tuple[dict[str, Any], ...] = ()
    error: Any = None


class McpApprovalRequest(_View, frozen=True, kw_only=True):
    """A call on an MCP server waiting for the user's approval."""

    server_label: str = ""
    name: str = ""
    arguments: str = ""


class McpApprovalResponse(_View, frozen=True, kw_only=True):
    """The user's decision on an approval request."""

    approval_request_id: str = ""
    approve: bool = False
    reason: str | None = None


class ToolSearchCall(_View, frozen=True, kw_only=True):
    """A search of deferred tools."""

    call_id: str | None = None
    execution: str | None = None
    arguments: Any = None


class ToolSearchOutput(_View, frozen=True, kw_only=True):
    """The tools a tool search loaded."""

    call_id: str | None = None
    execution: str | None = None
    tools: tuple[dict[str, Any], ...] = ()


class Compaction(_View, frozen=True, kw_only=True):
    """The opaque summary of the turns before it, from the compact endpoint."""

    encrypted_content: str = ""


class Program(_View, frozen=True, kw_only=True):
    """A program the model wrote (programmatic tool calling): JavaScript the API runs, whose
    calls of the client's functions come back as function calls with this ``call_id`` as
    their ``caller``. ``fingerprint`` is opaque replay state, sent back as it came."""

    call_id: str | None = None
    code: str = ""
    fingerprint: str | None = None


class ProgramOutput(_View, frozen=True, kw_only=True):
    """What a program returned, when it ended (``completed`` or ``incomplete``)."""

    call_id: str | None = None
    result: str = ""


class AdditionalTools(_View, frozen=True, kw_only=True):
    """Tools made available from this point of the conversation on."""

    role: str | None = None
    tools: tuple[dict[str, Any], ...] = ()


class ConfigurationUpdate(_View, frozen=True, kw_only=True):
    """A change of the response configuration the API made (after a compaction, say), in
    effect for the answers after it until another replaces it: ``reasoning`` (its
    ``effort``) and ``text`` (its ``format``), each absent when this update leaves it as it
    was. Replayed in its place, so the next request carries the same configuration history."""

    reasoning: dict[str, Any] | None = None
    text: dict[str, Any] | None = None


_VIEWS: dict[str, type[_View]] = {
    "web_search_call": WebSearchCall,
    "file_search_call": FileSearchCall,
    "code_interpreter_call": CodeInterpreterCall,
    "image_generation_call": ImageGenerationCall,
    "mcp_call": McpCall,
    "mcp_list_tools": McpListTools,
    "mcp_approval_request": McpApprovalRequest,
    "mcp_approval_response": McpApprovalResponse,
    "tool_search_call": ToolSearchCall,
    "tool_search_output": ToolSearchOutput,
    "compaction": Compaction,
    "program": Program,
    "program_output": ProgramOutput,
    "additional_tools": AdditionalTools,
    "configuration_update": ConfigurationUpdate,
}


def view(record: HostedItem) -> Any:
    """``record.item`` as its typed view, else (unknown type, or a shape the view cannot read)
    the raw mapping."""
    shape = _VIEWS.get(record.type)
    if shape is None:
        return record.item
    try:
        return msgspec.convert(record.item, shape)
    except msgspec.ValidationError:
        return record.item
