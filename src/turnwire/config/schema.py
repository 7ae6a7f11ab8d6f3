"""JSON Schema (draft 2020-12) of the thread file and of a configuration file.

Both schemas are generated from the msgspec Structs that validate the files
(:class:`~turnwire.model.records.Thread`, :class:`~turnwire.config.settings.Settings`), so they
cannot drift
from what :func:`~turnwire.load_thread` and :func:`~turnwire.load_settings` accept. What
msgspec emits is completed here:

- the root is the top-level Struct itself, beside ``$defs``, with ``$schema`` naming draft
  2020-12; one-value enums become ``const`` (``version: 1``, the ``type`` / ``variant`` tags),
  and a tag is optional wherever msgspec's decoder does not need it (msgspec's own schema
  says required);
- every field gets a description: its entry in :data:`FIELD_DOCS`, else the
  ``msgspec.Meta(description=...)`` of its annotation, else an ``:ivar name:`` line of its
  Struct's docstring (the test suite fails when a field has none); docstring markup becomes
  Markdown;
- the cross-field rules the Structs check in ``__post_init__`` (exactly one of ``path`` or
  ``data_base64``, a message needs content or attachments, ...) become ``oneOf`` / ``anyOf`` /
  ``if``-``then`` keywords, and timestamps must carry a time zone, as the loader requires;
- in the configuration schema every value may also be one ``${ENV}`` / ``${ENV:default}``
  placeholder, which the loader expands before it validates.

Two rules stay outside the schemas: tool names are unique within a thread, and (in the
configuration) ``context.context_window`` is required once ``context.token_encoding`` is set,
which may come from another profile. Plugin settings are checked by each plugin's own Struct
when it loads.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import msgspec
import msgspec.inspect as mi

from turnwire.config.settings import Settings
from turnwire.model.records import Thread

__all__ = ["DIALECT", "FIELD_DOCS", "config_schema", "thread_schema"]

DIALECT = "https://json-schema.org/draft/2020-12/schema"
"""The ``$schema`` of both schemas."""

_DEF = "#/$defs/{name}"

FIELD_DOCS: dict[str, dict[str, str]] = {
    # ----------------------------------------------------------------- the thread file
    "Thread": {
        "version": "The schema version of the file; only `1` exists.",
        "model": "The model to ask; `--model` overrides it, `request.model` applies when it is "
        "null.",
        "output_schema": "The JSON Schema the answer must follow (structured outputs); "
        "`output_schema=` and `--output-schema` override it, and it overrides "
        "`request.output_schema`.",
        "system_prompt": "The system prompt, sent through `render.system_prompt_channel`.",
        "standing_instructions": "Rules the agent always follows, rendered as developer "
        "rules in the system prompt (bucket `standing_instructions`).",
        "tools": "The function tools the model may call; names are unique.",
        "memories": "What the agent remembers about the user or the task (bucket `memories`; "
        "under `render.context_placement: timeline`, each in the timeline at its `created_at`).",
        "retrievables": "Retrieved documents, each with the trust tier of its channel "
        "(bucket `retrievables`; under `render.context_placement: timeline`, each in the "
        "timeline at its `created_at`).",
        "messages": "User and assistant messages of the timeline.",
        "thoughts": "Reasoning records of the timeline: text, a replayable reasoning "
        "item, or both.",
        "tool_calls": "The calls the model made, each with its result once it ran.",
        "hosted_items": "Output items of hosted tools (web search, file search, code "
        "interpreter, MCP, tool search, image generation), MCP listings and approvals, "
        "compactions, and item types added later, each kept as the API emitted it.",
        "hosted_tools": "The tools that are not functions, declared after the function tools: "
        "the hosted ones the API runs itself (web search, file search, code interpreter, MCP "
        "servers, image generation, tool search), namespaces of functions and custom tools, "
        "and the client-executed ones a deployer's handler runs (custom tools, shell, local "
        "shell, apply_patch, computer use); one per type (per `server_label` for MCP, per "
        "`name` for a custom tool or a namespace). The configuration's "
        "`tools.hosted` come first and win over a thread's declaration of the same tool; a "
        "thread's own MCP server must be allowed by `tools.allow_thread_mcp_servers`.",
    },
    "OutputSchema": {
        "name": "The format's name: 1 to 64 letters, digits, `_` or `-`.",
        "schema": "The JSON Schema of the answer; its root is an object. Under `strict` "
        "every object says `additionalProperties: false` and lists every property in "
        "`required`, and only the strict subset of keywords appears (checked when loaded).",
        "strict": "Strict schema adherence: the model's answer always follows the schema.",
        "description": "What the format is for, as the model reads it.",
    },
    "HostedItem": {
        "id": "The item's id (`ws_...`, `ci_...`, `mcp_...`, `cmp_...`); a reasoning item "
        "paired with it names it as `paired_item_id`.",
        "type": "The item's `type`, as the API named it.",
        "item": "The whole item as the API emitted it at `response.output_item.done`; the "
        "fields its input shape allows are replayed.",
        "seal": "The HMAC of `item` under the envelope secret, set when this deployment "
        "recorded it; without a valid seal the item is sent as text (`render.hosted_replay`).",
        "created_at": "When it was produced; the timeline sorts by `(created_at, seq)`.",
        "seq": "Breaks ties between records with the same `created_at`.",
    },
    "WebSearchTool": {
        "type": "`web_search`.",
        "search_context_size": "How much of the search results the model reads: `low`, "
        "`medium` (the API's default) or `high`.",
        "user_location": "The user's approximate location, to localise the results.",
        "filters": "Which sites the search may use.",
    },
    "WebSearchLocation": {
        "type": "`approximate`, the only kind.",
        "city": "A city, such as `San Francisco`.",
        "country": "A two-letter ISO country code, such as `US`.",
        "region": "A region, such as `California`.",
        "timezone": "An IANA time zone, such as `America/Los_Angeles`.",
    },
    "WebSearchFilters": {
        "allowed_domains": "The domains a search may return results from (subdomains included).",
    },
    "FileSearchTool": {
        "type": "`file_search`.",
        "vector_store_ids": "The vector stores to search (at least one).",
        "max_num_results": "The most results a search returns, 1 to 50.",
        "filters": "An attribute filter, as the API defines it: a comparison "
        "(`{type: eq, key: region, value: us}`) or a compound `and` / `or` of filters.",
        "ranking_options": "How results are ranked.",
    },
    "FileSearchRanking": {
        "ranker": "The ranker: `auto` or `default-2024-11-15`.",
        "score_threshold": "The lowest score a result may have, 0 to 1.",
        "hybrid_search": "How embedding and keyword matches are weighed.",
    },
    "FileSearchHybridSearch": {
        "embedding_weight": "The weight of dense embedding matches.",
        "text_weight": "The weight of sparse keyword matches.",
    },
    "CodeInterpreterTool": {
        "type": "`code_interpreter`.",
        "container": "A container id (`cntr_...`), or `{type: auto}` for a container the API "
        "creates. Declaring it adds `code_interpreter_call.outputs` to the request's "
        "`include`: a code interpreter call is replayed with its outputs.",
    },
    "CodeInterpreterContainer": {
        "type": "`auto`: the API creates the container.",
        "file_ids": "Uploaded files the code may read.",
        "memory_limit": "The container's memory: `1g`, `4g`, `16g` or `64g`.",
    },
    "McpTool": {
        "type": "`mcp`.",
        "server_label": "The server's label, as `mcp_*` items name it; unique within a "
        "request (a thread's server with the label of one in `tools.hosted` is not sent).",
        "server_url": "The URL of a remote MCP server (or give `connector_id`).",
        "connector_id": "A service connector, such as `connector_googledrive` (or give "
        "`server_url`).",
        "server_description": "What the server offers, as the model reads it.",
        "allowed_tools": "The server's tools the model may call: a list of names, or a "
        "filter (null: all of them).",
        "require_approval": "Which calls wait for the user's approval: `always`, `never`, or "
        "a filter naming the tools of each. A call waiting for approval ends the turn with an "
        "`mcp_approval_request` item; `turnwire run --approve ID` / `--deny ID` answers it.",
        "headers": "HTTP headers for the MCP server (credentials, usually). Sent in the "
        "request body only: never logged, shown in an error, a `repr`, `turnwire render` or "
        "`check-config --print`, nor part of a reasoning fingerprint. In a configuration "
        "file, write them as `${ENV}` placeholders.",
        "authorization": "An OAuth access token for the server or connector; kept like `headers`.",
        "defer_loading": "Load the server's tools only through a tool search (the "
        "`tool_search` tool, which the request then needs): the model sees the server's "
        "label and description until it searches.",
    },
    "McpToolFilter": {
        "tool_names": "Tools by name.",
        "read_only": "The tools the server marks read-only (`readOnlyHint`).",
    },
    "McpApprovalFilter": {
        "always": "The tools whose calls always wait for approval.",
        "never": "The tools whose calls never do.",
    },
    "ImageGenerationTool": {
        "type": "`image_generation`.",
        "model": "The image model (the API's default when null).",
        "action": "`generate`, `edit` or `auto`.",
        "quality": "`low`, `medium`, `high`, `xhigh`, `max` or `auto`.",
        "size": "`WIDTHxHEIGHT` (`1024x1024`...) or `auto`.",
        "output_format": "`png`, `webp`, `jpeg`, `gif` or `svg`.",
        "output_compression": "The compression level of the output, 0 to 100.",
        "background": "`transparent`, `opaque` or `auto`.",
        "moderation": "`auto` or `low`.",
        "input_fidelity": "How closely edits keep the input images' features: `high` or `low`.",
        "partial_images": "Partial images streamed before the final one, 0 to 3.",
    },
    "ProgrammaticToolCallingTool": {
        "type": "`programmatic_tool_calling`: the model may answer with a program that the "
        "API runs and that calls the functions whose `allowed_callers` include "
        "`programmatic`; the client runs those calls as it runs the model's own.",
    },
    "Tool": {
        "name": "The function name the model calls.",
        "description": "What the tool does, as the model reads it.",
        "parameters": "A JSON Schema object describing the arguments (null: no arguments).",
        "trusted": "Wrap the tool's results in the trusted envelope instead of the untrusted one.",
        "hidden": "Callable, but never declared to the model.",
        "strict": "The tool's own `strict` flag; null defers to `render.strict` "
        "(false when that is null too).",
        "handler": "The Python callable that runs the tool, `module:function` "
        "(async functions too); used by `turnwire run`.",
        "allowed_callers": "Who may call it: `direct` (the model), `programmatic` (a "
        "program the model wrote, which needs the `programmatic_tool_calling` hosted tool), "
        "or both; null: the model only. A call from a caller not listed gets an error "
        "result and does not run.",
        "defer_loading": "Deferred: loaded only through a tool search (the `tool_search` "
        "hosted tool, which the request then needs); the model sees the name and description "
        "until it searches, the parameters after.",
    },
    "Memory": {
        "id": "A stable id, unique within the thread (it seeds the envelope nonce).",
        "content": "The remembered fact.",
        "confidence": "How sure the agent is, from 0 to 1; kept with the record, not rendered.",
        "importance": "How much it matters, from 0 to 1; kept with the record, not rendered.",
        "created_at": "When it was learnt; rendered as `createdAt` when set. Under "
        "`render.context_placement: timeline`, where the memory goes in the timeline (after "
        "the records of the same instant; unset: at the head, before every record).",
    },
    "Retrievable": {
        "id": "A stable id, unique within the thread.",
        "content": "The document body; exactly one of `content` and `artifact` is set.",
        "artifact": "A large body, shown as a handle the artifact tools read unless "
        "`inline` is true.",
        "trust_tier": "Where the document came from; selects the envelope and its "
        "section of the `retrievables` bucket.",
        "source": "Where it was found (a path or URL), rendered as an attribute.",
        "kind": "A free label (policy, faq, ...), rendered as an attribute.",
        "score": "The retrieval score, from 0 to 1, rendered as an attribute.",
        "inline": "Show an `artifact` body inline instead of as a handle.",
        "created_at": "When the document was retrieved or written. Under "
        "`render.context_placement: timeline`, where it goes in the timeline (after the "
        "records of the same instant; unset: at the head, before every record).",
    },
    "Artifact": {
        "text": "The body; exactly one of `text` and `path` is set.",
        "path": "A file holding the body (relative to the thread file), read when a "
        "request is rendered.",
        "inline": "true: the model sees the body; false: a handle; null: inline up to "
        "`render.tool_result_inline_max_bytes`.",
        "kind": "The artifact's kind, shown on its handle.",
    },
    "Message": {
        "id": "A stable id, unique within the thread. An assistant message's `msg_` id is "
        "replayed when its reasoning item precedes it.",
        "role": "`user` or `assistant` (system text belongs in `system_prompt`).",
        "content": "The text; a message needs `content`, `attachments` or both.",
        "identity": "Who wrote it; defaults to the role. An assistant message whose "
        "identifier is not `render.self_identity` is another agent's (a peer).",
        "attachments": "Images, documents, audio or video sent with the message.",
        "phase": "The API's label of an assistant message (`commentary`, "
        "`final_answer`), replayed as it came.",
        "refusal": "An assistant's refusal, replayed as a `refusal` part (assistant "
        "messages only).",
        "annotations": "The citations on the text (`url_citation`, `file_citation`, "
        "`container_file_citation`, `file_path`), as the API sent them; indexes count into "
        "`content` (assistant messages only).",
        "logprobs": "The token log-probabilities of the text, as the API sent them "
        "(assistant messages only).",
        "created_at": "When it was written; the timeline sorts by `(created_at, seq)`.",
        "seq": "Breaks ties between records with the same `created_at`.",
    },
    "Identity": {
        "identifier": "The system key, compared with `render.self_identity`.",
        "representation": "The name the model is shown (falls back to the identifier).",
    },
    "Media": {
        "id": "A stable id, unique within the thread, shown in the marker before the attachment.",
        "kind": "`image` and `document` become input blocks; `audio` and `video` follow "
        "`render.unsupported_media_policy`.",
        "mime_type": "The media type (`image/png`, `application/pdf`, ...); sanitised "
        "where it is interpolated.",
        "filename": "The file name shown to the model; sanitised where it is interpolated.",
        "trust_tier": "How far the content is trusted; a stash fallback takes the lower "
        "of this and the stash entry's tier.",
        "modality_hazard": "How the content can carry instructions; null defaults by kind "
        "(`extractable-instructions` for documents, else `opaque-perceptual`).",
        "source": "Where the file came from; kept with the record, not rendered.",
        "path": "A file pointer (relative to the thread file), read within the roots when a "
        "request is rendered; exactly one of `path`, `data_base64`, `file_id` and `url` is set.",
        "data_base64": "The bytes inline, base64-encoded (held to the file limits).",
        "stash": "Texts derived from the media (a transcript, a caption), used by the "
        "`fallback-stash` policy.",
    },
    "StashEntry": {
        "key": "The entry's name, matched against `render.media_stash_keys` "
        "(`text:transcript`, `text:caption`, ...).",
        "value": "The derived text.",
        "trust_tier": "How far the derived text is trusted.",
    },
    "Thought": {
        "id": "A stable id, unique within the thread.",
        "content": "The reasoning as text; required when there is no `payload`.",
        "identity": "Whose reasoning it is; defaults to the agent itself.",
        "replay_compatibility": "The replay tag of the payload "
        "(`openai-responses-reasoning-v1`); required with a `payload`.",
        "payload": "What replays the thought as a native reasoning item.",
        "created_at": "When it was produced; it sorts before the item it belongs to.",
        "seq": "Breaks ties between records with the same `created_at`.",
    },
    "ReasoningPayload": {
        "variant": "The payload's kind; only `responses-reasoning` exists.",
        "item": "The reasoning item as it will be replayed, with its `encrypted_content`.",
        "paired_item_id": "The id of the output item that followed it in the response "
        "(`msg_...`, `fc_...` or a hosted item's id); it is replayed only right before that item.",
        "prefix_fingerprint": "The fingerprint of the request prefix it was produced "
        "after; it is replayed only while that prefix is unchanged.",
    },
    "ReasoningItem": {
        "type": "Always `reasoning`.",
        "summary": "The reasoning summary parts.",
        "id": "The item's `rs_` id.",
        "content": "Raw reasoning text, when the model emitted it.",
        "encrypted_content": "The opaque reasoning state; without it, under `store: "
        "false`, the item cannot be replayed.",
    },
    "SummaryText": {
        "type": "Always `summary_text`.",
        "text": "One part of the summary.",
    },
    "ReasoningText": {
        "type": "Always `reasoning_text`.",
        "text": "Raw reasoning text.",
    },
    "ToolCall": {
        "id": "`call_id`, or `call_id|item_id` when the response gave the call an `fc_` item id.",
        "tool": "The name of the tool called.",
        "args": "The arguments, a JSON object.",
        "raw_args": "The arguments exactly as the model sent them, when they are not a JSON "
        "object `args` can hold (not JSON, an array, nested too deeply): the call is sent "
        "back with this text, `args` stays empty and the result is an error.",
        "is_error": "The result is an error text (bad arguments, an unknown tool, an "
        "exception in the handler).",
        "inline": "Overrides the result's inlining: true inlines, false shows a handle.",
        "result": "The result, once the call ran; a call without one is run by the next "
        "`turnwire run`.",
        "checksum": "SHA-256 of the canonical JSON of `{tool, args}`; computed when absent.",
        "caller": "The `call_id` of the `program` item that made the call (programmatic "
        "tool calling); null when the model made it directly. Sent back with the call and "
        "its output.",
        "namespace": "The namespace the API put the function in (one a tool search loaded); "
        "sent back with the call, which the API refuses without it.",
        "created_at": "When the model made the call.",
        "seq": "Breaks ties between records with the same `created_at`.",
    },
    "ToolResult": {
        "text": "A plain answer or an error text.",
        "artifact": "One body with a line-oriented view.",
        "artifacts": "Several bodies.",
        "media": "One or more attachments (images, documents, ...).",
    },
    # ------------------------------------------------- configuration: the wire options
    # (the settings Structs describe their own fields, in `:ivar:` lines)
    "ReasoningOptions": {
        "effort": "How much the model reasons.",
        "summary": "Which reasoning summary to return.",
    },
    "TextOptions": {
        "format": "The output format (`{type: json_schema, ...}`, `{type: json_object}`).",
        "verbosity": "How long the answer should be.",
    },
    "StreamOptions": {
        "include_obfuscation": "Whether stream events carry obfuscation padding.",
    },
    "PromptCacheOptions": {
        "comparison_response_id": "An earlier response to compare with: the answer then "
        "carries prompt cache diagnostics (why the cache missed).",
        "mode": "`implicit` (the default): one implicit breakpoint and up to three explicit "
        "ones; `explicit`: the explicit breakpoints only (none: no caching).",
        "prewarm": "Warm the prompt cache without generating output.",
        "ttl": "The least time each breakpoint the request writes is kept: `30m` (the "
        "default) or `12h`.",
    },
    "FunctionToolChoice": {
        "type": "Always `function`.",
        "name": "The function the model must call.",
    },
    "ProgrammaticToolChoice": {
        "type": "Always `programmatic_tool_calling`: the model must answer with a program.",
    },
    "ContextManagement": {
        "type": "Always `compaction`: the API compacts the input server-side.",
        "compact_threshold": "The input size, in tokens, at which it compacts.",
    },
    "AllowedTools": {
        "type": "Always `allowed_tools`: only the tools listed may be called.",
        "mode": "`auto`: the model may call one of them or answer; `required`: it must call one.",
        "tools": "The declared tools allowed, as the API names them: `{type: function, name: "
        "...}`, `{type: custom, name: ...}`, `{type: mcp, server_label: ...}`, or a type "
        "alone (`{type: image_generation}`). The declarations stay as they are, so the "
        "prompt cache holds across turns that allow different tools.",
    },
    "CustomToolChoice": {
        "type": "Always `custom`.",
        "name": "The custom (freeform) tool the model must call.",
    },
    "McpToolChoice": {
        "type": "Always `mcp`.",
        "server_label": "The MCP server whose tool the model must call.",
        "name": "That server's tool, when one is forced.",
    },
    **{
        name: {"type": f"Always `{tag}`: the model must call that tool."}
        for name, tag in (
            ("ShellToolChoice", "shell"),
            ("ApplyPatchToolChoice", "apply_patch"),
            ("FileSearchChoice", "file_search"),
            ("WebSearchPreviewChoice", "web_search_preview"),
            ("WebSearchPreviewDatedChoice", "web_search_preview_2025_03_11"),
            ("ComputerChoice", "computer"),
            ("ComputerUseChoice", "computer_use"),
            ("ComputerUsePreviewChoice", "computer_use_preview"),
            ("ImageGenerationChoice", "image_generation"),
            ("CodeInterpreterChoice", "code_interpreter"),
        )
    },
}
"""Field descriptions by Struct name, then field name (as the file spells it): the thread
file's records and the wire options the configuration shares."""

_PLACEHOLDER_PATTERN = r"^\$\{[A-Za-z_][A-Za-z0-9_]*(:[^}]*)?\}$"
# RFC 3339 with a mandatory offset: msgspec rejects times without a time zone.
_AWARE_DATETIME = r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:?\d{2})$"


def _present(field: str) -> dict[str, Any]:
    """Matches an object whose ``field`` is present and not null."""
    return {"required": [field], "properties": {field: {"not": {"type": "null"}}}}


def _filled(field: str) -> dict[str, Any]:
    """Matches an object whose ``field`` is a non-empty string or array."""
    return {
        "required": [field],
        "properties": {
            field: {"anyOf": [{"type": "string", "minLength": 1}, {"type": "array", "minItems": 1}]}
        },
    }


def _exactly_one(*fields: str) -> dict[str, Any]:
    return {"oneOf": [_present(field) for field in fields]}


_RULES: dict[str, dict[str, Any]] = {
    "Media": _exactly_one("path", "data_base64", "file_id", "url"),
    "Artifact": _exactly_one("text", "path"),
    "Retrievable": _exactly_one("content", "artifact"),
    "ToolResult": _exactly_one("text", "artifact", "artifacts", "media"),
    "Message": {"anyOf": [_filled("content"), _filled("attachments"), _filled("refusal")]},
    "McpTool": _exactly_one("server_url", "connector_id"),
    "Thought": {
        "if": _present("payload"),
        "then": _filled("replay_compatibility"),
        "else": _filled("content"),
    },
}
"""The ``__post_init__`` rules of the thread's Structs, as schema keywords."""

_CONFIG_RULES: dict[str, dict[str, Any]] = {
    "McpTool": _exactly_one("server_url", "connector_id"),
    "RenderSettings": {
        "properties": {"bucket_order": {"uniqueItems": True, "contains": {"const": "timeline"}}}
    },
}

_NON_EMPTY_ARRAYS = {"ToolResult": ("artifacts", "media")}


def _markdown(text: str) -> str:
    """Docstring markup as Markdown: ``literal`` → `literal`, Sphinx roles as code."""
    text = re.sub(r":(?:class|func|mod|data|attr|meth|exc|obj):`~?([^`]+)`", r"`\1`", text)
    return text.replace("``", "`")


_IVAR = re.compile(r"^\s*:ivar (\w+):\s*(.*)$")


def _split_ivars(docstring: str) -> tuple[str, dict[str, str]]:
    """A Struct docstring's prose, and its ``:ivar name:`` entries (continuation lines joined)."""
    prose: list[str] = []
    fields: dict[str, str] = {}
    current: str | None = None
    for line in docstring.splitlines():
        match = _IVAR.match(line)
        if match:
            current = match.group(1)
            fields[current] = match.group(2)
        elif current is not None and line.startswith((" ", "\t")) and line.strip():
            fields[current] += " " + line.strip()
        else:
            current = None
            prose.append(line)
    return _markdown("\n".join(prose).strip()), {k: _markdown(v) for k, v in fields.items()}


def _walk(node: Any, visit: Any) -> None:
    if isinstance(node, dict):
        visit(node)
        for value in node.values():
            _walk(value, visit)
    elif isinstance(node, list):
        for value in node:
            _walk(value, visit)


def _const(node: dict[str, Any]) -> None:
    enum = node.get("enum")
    if isinstance(enum, list) and len(enum) == 1:
        node["const"] = node.pop("enum")[0]


def _standalone_tags(root: type[msgspec.Struct]) -> dict[str, str]:
    """``{struct name: tag field}`` of the tagged Structs reached outside a tagged union.

    msgspec's schema marks a tag as required, but its decoder accepts a Struct without its
    tag wherever the Struct is the only one a value can be (the tag still must match when
    given), so there the tag is optional in the file.
    """
    tags: dict[str, str] = {}
    in_unions: set[str] = set()
    seen: set[type] = set()

    def visit(info: Any) -> None:
        if isinstance(info, mi.StructType):
            if info.cls in seen:
                return
            seen.add(info.cls)
            if info.tag_field is not None:
                tags[info.cls.__name__] = info.tag_field
            for field in info.fields:
                visit(field.type)
        elif isinstance(info, mi.UnionType):
            structs = [t for t in info.types if isinstance(t, mi.StructType)]
            if len(structs) > 1:
                in_unions.update(t.cls.__name__ for t in structs)
            for member in info.types:
                visit(member)
        elif isinstance(info, mi.DictType):
            visit(info.key_type)
            visit(info.value_type)
        elif isinstance(info, mi.TupleType):
            for member in info.item_types:
                visit(member)
        elif isinstance(info, mi.Metadata):
            visit(info.type)
        elif hasattr(info, "item_type"):
            visit(info.item_type)

    visit(mi.type_info(root))
    return {name: field for name, field in tags.items() if name not in in_unions}


def _build(root: type[msgspec.Struct], comment: str) -> dict[str, Any]:
    (ref,), defs = msgspec.json.schema_components((root,), ref_template=_DEF)
    # A round trip through JSON: plain lists and dicts, no tuples, nothing shared.
    defs = msgspec.json.decode(msgspec.json.encode(defs))
    for name, field in _standalone_tags(root).items():
        defs[name]["required"].remove(field)
    for name, definition in defs.items():
        prose, ivars = _split_ivars(definition.get("description", ""))
        if prose:
            definition["description"] = prose
        else:
            definition.pop("description", None)
        docs = FIELD_DOCS.get(name, {})
        for field, schema in definition.get("properties", {}).items():
            if field in docs:
                schema["description"] = docs[field]
            elif "description" in schema:
                schema["description"] = _markdown(schema["description"])
            elif field in ivars:
                schema["description"] = ivars[field]
    _walk(defs, _const)
    name = ref["$ref"].rsplit("/", 1)[-1]
    top = defs.pop(name)
    return {"$schema": DIALECT, "$comment": comment, **top, "$defs": defs}


def _merge_rules(schema: dict[str, Any], rules: dict[str, dict[str, Any]]) -> None:
    defs = schema["$defs"]
    # A copy: later passes edit the schema in place, and callers may edit what they get.
    for name, rule in copy.deepcopy(rules).items():
        target = defs[name]
        keywords = {key: value for key, value in rule.items() if key != "properties"}
        for field, extra in rule.get("properties", {}).items():
            target["properties"][field].update(extra)
        if keywords:
            target.setdefault("allOf", []).append(keywords)


def thread_schema() -> dict[str, Any]:
    """The JSON Schema of a thread file, schema version 1 (YAML or JSON).

    :returns: a fresh draft 2020-12 schema; the root is the thread, its records are in
        ``$defs``.
    """
    schema = _build(
        Thread,
        "Generated from turnwire.model.records.Thread (`turnwire schema thread`). Relative `path` "
        "pointers are resolved against the thread file's folder; tool names are unique.",
    )
    _merge_rules(schema, _RULES)
    for name, fields in _NON_EMPTY_ARRAYS.items():
        for field in fields:
            branch = schema["$defs"][name]["properties"][field]["anyOf"][0]
            branch["minItems"] = 1

    def aware(node: dict[str, Any]) -> None:
        if node.get("format") == "date-time":
            node["pattern"] = _AWARE_DATETIME

    _walk(schema, aware)
    return schema


def _placeholders(schema: dict[str, Any]) -> None:
    """Let every value of a configuration be one ``${ENV}`` placeholder too."""
    allowed = {"$ref": "#/$defs/EnvPlaceholder"}

    def widen(value: dict[str, Any]) -> dict[str, Any]:
        widened: dict[str, Any] = {"anyOf": [value, allowed]}
        for key in ("description", "default"):
            if key in value:
                widened[key] = value.pop(key)
        return widened

    def visit(node: dict[str, Any]) -> None:
        for field, value in list(node.get("properties", {}).items()):
            node["properties"][field] = widen(value)
        for key in ("items", "additionalProperties"):
            if isinstance(node.get(key), dict):
                node[key] = widen(node[key])

    nodes: list[dict[str, Any]] = []
    _walk(schema, nodes.append)
    for node in nodes:
        if node.get("type") == "object" or "properties" in node:
            visit(node)
        elif node.get("type") == "array" and isinstance(node.get("items"), dict):
            node["items"] = widen(node["items"])
    schema["$defs"]["EnvPlaceholder"] = {
        "title": "EnvPlaceholder",
        "description": "`${NAME}` or `${NAME:default}`: replaced by the environment variable "
        "(or the default) before the configuration is validated, and parsed as YAML.",
        "type": "string",
        "pattern": _PLACEHOLDER_PATTERN,
    }


def config_schema() -> dict[str, Any]:
    """The JSON Schema of a configuration file (a profile merged over the defaults).

    :returns: a fresh draft 2020-12 schema; the root is the whole configuration, its sections
        are in ``$defs``.
    """
    schema = _build(
        Settings,
        "Generated from turnwire.config.settings.Settings (`turnwire schema config`). Every key is "
        "optional: a profile is merged over the packaged defaults.",
    )
    _merge_rules(schema, _CONFIG_RULES)
    _placeholders(schema)
    return schema
