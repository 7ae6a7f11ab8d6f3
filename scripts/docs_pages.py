"""The generated pages of the documentation, and the MkDocs hook that adds them to a build.

The reference pages are rendered from the code at every build, so they cannot drift from it:

- ``thread-file.md`` and ``configuration.md`` from the JSON Schemas of :mod:`turnwire.config.schema`
  (themselves generated from the msgspec Structs that validate the files), with one example
  per record and per section, which the test suite validates against the same schemas;
- ``cli.md`` from the ``argparse`` parser of :mod:`turnwire.cli.main`;
- ``hooks.md`` from the hookspecs in :mod:`turnwire.hookspecs`, in pipeline order, each
  rendered from its docstring by mkdocstrings;
- ``errors.md`` from the error classes of :mod:`turnwire.errors` (code, status, fatal flag,
  docstring);
- ``schema/thread.json`` and ``schema/config.json``, the schemas themselves.

``mkdocs.yml`` lists this file under ``hooks:``; ``python scripts/docs_pages.py OUT`` writes the
same pages into a folder, to read them without building the site.
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from turnwire import errors, hookspecs
from turnwire.cli.main import _parser
from turnwire.config.schema import config_schema, thread_schema

PAGES: dict[str, Callable[[], str]] = {}


def page(name: str) -> Callable[[Callable[[], str]], Callable[[], str]]:
    def register(render: Callable[[], str]) -> Callable[[], str]:
        PAGES[name] = render
        return render

    return register


# ------------------------------------------------------------------------------ types


def _name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def _without_placeholder(schema: dict[str, Any]) -> dict[str, Any]:
    """A configuration value's own schema, without the ``${ENV}`` alternative."""
    options = schema.get("anyOf")
    if options and {"$ref": "#/$defs/EnvPlaceholder"} in options:
        rest = [option for option in options if option != {"$ref": "#/$defs/EnvPlaceholder"}]
        return rest[0] if len(rest) == 1 else {"anyOf": rest}
    return schema


def _literal(value: Any) -> str:
    return f"`{json.dumps(value)}`"


def type_text(schema: dict[str, Any], link: Callable[[str], str]) -> str:
    """A schema as a short phrase: ``"first-party"`` | ``"third-party-public"``, list of ..."""
    schema = _without_placeholder(schema)
    if "$ref" in schema:
        return link(_name(schema["$ref"]))
    if "anyOf" in schema:
        # Several shapes of one key link to the same section: named once.
        shown = dict.fromkeys(type_text(option, link) for option in schema["anyOf"])
        return " or ".join(shown)
    if "const" in schema:
        return _literal(schema["const"])
    if "enum" in schema:
        return " \\| ".join(_literal(value) for value in schema["enum"])
    kind = schema.get("type")
    bounds = _bounds(schema)
    if kind == "string":
        if schema.get("format") == "date-time":
            return "timestamp (RFC 3339, with a time zone)"
        if schema.get("contentEncoding") == "base64":
            return "base64 string"
        return "non-empty string" if schema.get("minLength") else "string"
    if kind == "array":
        items = type_text(schema.get("items", {}), link)
        prefix = "non-empty list" if schema.get("minItems") else "list"
        unique = ", no repeats" if schema.get("uniqueItems") else ""
        return f"{prefix} of {items}{unique}"
    if kind == "object":
        values = schema.get("additionalProperties")
        if isinstance(values, dict):
            names = schema.get("propertyNames", {}).get("enum")
            keys = " \\| ".join(_literal(n) for n in names) if names else "string"
            return f"mapping of {keys} to {type_text(values, link)}"
        return "object"
    if kind in ("integer", "number"):
        return f"{kind}{bounds}"
    if kind == "boolean":
        return "boolean"
    if kind == "null":
        return "null"
    return "any value"


def _bounds(schema: dict[str, Any]) -> str:
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None and high is not None:
        return f", {low:g} to {high:g}"
    if low is not None:
        return f" ≥ {low:g}"
    return ""


def _cell(text: str) -> str:
    """Text for one table cell: one line, pipes outside code spans escaped."""
    parts = " ".join(text.split()).split("`")
    for index in range(0, len(parts), 2):
        parts[index] = re.sub(r"(?<!\\)\|", r"\\|", parts[index])
    return "`".join(parts)


def _default(schema: dict[str, Any], required: bool) -> str:
    if required:
        return "**required**"
    if "default" in schema:
        return _literal(schema["default"])
    return "see below"


def _anchor(name: str) -> str:
    return name.lower()


# ------------------------------------------------------------------------- thread file

THREAD_EXAMPLES: dict[str, str] = {
    "Thread": """\
version: 1
model: gpt-5
system_prompt: "You are a support agent."
standing_instructions: ["Be terse."]
hosted_tools:
  - {type: web_search, search_context_size: low}
messages:
  - {id: u1, role: user, content: "Where is my order?", created_at: "2026-01-01T10:00:00Z"}
""",
    "Tool": """\
name: get_weather
description: Current weather for a city
parameters: {type: object, properties: {city: {type: string}}, required: [city]}
handler: "my_package.tools:get_weather"
""",
    "Memory": """\
{id: m1, content: "Prefers tea", confidence: 0.9, created_at: "2026-01-01T00:00:00Z"}
""",
    "Retrievable": """\
{id: kb-1, content: "Refunds within 30 days.", trust_tier: first-party, source: kb/refunds.md,
 score: 0.75}
""",
    "Artifact": """\
{text: "ERROR disk full\\nERROR disk full\\n", inline: false}
""",
    "Message": """\
id: msg_2
role: assistant
content: "Let me check the weather."
phase: commentary
identity: {identifier: assistant}
created_at: "2026-01-01T10:00:05Z"
seq: 1
""",
    "Identity": """\
{identifier: logistics-bot, representation: Logistics}
""",
    "Media": """\
id: photo-1
kind: image
mime_type: image/jpeg
filename: van.jpg
file_id: file-6F2ksmvXxt4VdaqjVAGamQ
detail: low
""",
    "StashEntry": """\
{key: "text:caption", value: "A delivery van at a door", trust_tier: first-party}
""",
    "Thought": """\
id: rs_1
replay_compatibility: openai-responses-reasoning-v1
payload:
  variant: responses-reasoning
  item: {type: reasoning, id: rs_1, summary: [], encrypted_content: "gAAAAB..."}
  paired_item_id: fc_1
  prefix_fingerprint: 4f6c0c1d3b9e2a7d8c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1f0e9d8c7b6a5f4e3d
created_at: "2026-01-01T10:00:06Z"
seq: 1
""",
    "HostedItem": """\
id: ws_1
type: web_search_call
item:
  type: web_search_call
  id: ws_1
  status: completed
  action: {type: search, query: "weather: San Francisco, CA"}
created_at: "2026-01-01T10:00:06Z"
seq: 2
""",
    "WebSearchTool": """\
type: web_search
search_context_size: medium
user_location: {type: approximate, city: Paris, country: FR, timezone: Europe/Paris}
filters: {allowed_domains: [meteofrance.com]}
""",
    "WebSearchLocation": """\
{type: approximate, city: San Francisco, region: California, country: US}
""",
    "WebSearchFilters": """\
{allowed_domains: [docs.python.org, peps.python.org]}
""",
    "FileSearchTool": """\
type: file_search
vector_store_ids: [vs_68f0c2b1]
max_num_results: 8
filters: {type: eq, key: region, value: eu}
ranking_options: {ranker: auto, score_threshold: 0.4}
""",
    "FileSearchRanking": """\
{ranker: auto, hybrid_search: {embedding_weight: 0.7, text_weight: 0.3}}
""",
    "FileSearchHybridSearch": """\
{embedding_weight: 0.7, text_weight: 0.3}
""",
    "CodeInterpreterTool": """\
{type: code_interpreter, container: {type: auto, memory_limit: 4g}}
""",
    "CodeInterpreterContainer": """\
{type: auto, file_ids: [file_6e1c9a]}
""",
    "McpTool": """\
type: mcp
server_label: deepwiki
server_url: https://mcp.deepwiki.com/mcp
allowed_tools: [ask_question, read_wiki_structure]
require_approval: {never: {tool_names: [read_wiki_structure]}}
""",
    "McpToolFilter": """\
{read_only: true}
""",
    "McpApprovalFilter": """\
{always: {tool_names: [create_issue]}, never: {read_only: true}}
""",
    "ImageGenerationTool": """\
{type: image_generation, quality: low, size: 1024x1024, output_format: webp}
""",
    "ProgrammaticToolCallingTool": """\
{type: programmatic_tool_calling}
""",
    "ToolSearchTool": """\
{type: tool_search}
""",
    "NamespaceTool": """\
type: namespace
name: crm
description: CRM tools for customer lookup and order management.
tools:
  - {type: function, name: list_open_orders, defer_loading: true,
     parameters: {type: object, properties: {customer_id: {type: string}}}}
""",
    "NamespaceFunction": """\
{type: function, name: list_open_orders, description: List open orders for a customer ID.,
 defer_loading: true, parameters: {type: object, properties: {customer_id: {type: string}}}}
""",
    "OutputSchema": """\
name: invoice
schema:
  type: object
  properties:
    total: {type: number}
    currency: {type: string, enum: [EUR, USD]}
    note: {type: [string, "null"]}
  required: [total, currency, note]
  additionalProperties: false
""",
    "ReasoningPayload": """\
{variant: responses-reasoning, item: {type: reasoning, summary: [], encrypted_content: "gAAAAB..."},
 paired_item_id: msg_2}
""",
    "ReasoningItem": """\
{type: reasoning, id: rs_1, summary: [{type: summary_text, text: "Checked the carrier."}],
 encrypted_content: "gAAAAB..."}
""",
    "SummaryText": """\
{type: summary_text, text: "Checked the carrier."}
""",
    "ReasoningText": """\
{type: reasoning_text, text: "The user wants the weather."}
""",
    "ToolCall": """\
{id: "call_1|fc_1", tool: get_weather, args: {city: Paris}, result: {text: "21C"},
 created_at: "2026-01-01T10:00:06Z", seq: 2}
""",
    "ToolResult": """\
{media: [{id: shot-1, kind: image, mime_type: image/png, filename: web-3.png, path: web-3.png}]}
""",
    "CustomTool": """\
type: custom
name: run_sql
description: Run one read-only SQL query.
format: {type: grammar, syntax: regex, definition: "SELECT [^;]+"}
""",
    "CustomToolText": "{type: text}\n",
    "CustomToolGrammar": """\
{type: grammar, syntax: lark, definition: "start: /[0-9]+/"}
""",
    "ShellTool": "{type: shell, environment: {type: local}}\n",
    "ShellLocalEnvironment": "{type: local}\n",
    "LocalShellTool": "{type: local_shell}\n",
    "ApplyPatchTool": "{type: apply_patch}\n",
    "ComputerTool": "{type: computer}\n",
    "ComputerUsePreviewTool": """\
{type: computer_use_preview, display_width: 1024, display_height: 768, environment: browser}
""",
    "CustomToolInput": "{kind: custom, input: SELECT count(*) FROM orders}\n",
    "ShellAction": "{kind: shell, commands: [ls -la, git status], timeout_ms: 10000}\n",
    "LocalShellAction": """\
{kind: local_shell, command: [ls, -la], env: {LANG: C}, working_directory: /srv/app}
""",
    "PatchOperation": """\
{kind: apply_patch, operation: update_file, path: app.py, diff: "@@\\n-print(1)\\n+print(2)\\n"}
""",
    "ComputerAction": """\
kind: computer
actions: [{type: click, button: left, x: 120, y: 48}]
pending_safety_checks: [{id: cu_sc_1, code: malicious_instructions}]
""",
    "Click": "{type: click, button: left, x: 120, y: 48}\n",
    "DoubleClick": "{type: double_click, x: 120, y: 48}\n",
    "Drag": "{type: drag, path: [{x: 0, y: 0}, {x: 40, y: 30}]}\n",
    "DragPoint": "{x: 40, y: 30}\n",
    "Keypress": "{type: keypress, keys: [CTRL, L]}\n",
    "Move": "{type: move, x: 300, y: 200}\n",
    "Screenshot": "{type: screenshot}\n",
    "Scroll": "{type: scroll, x: 300, y: 200, scroll_x: 0, scroll_y: 400}\n",
    "TypeText": "{type: type, text: hello}\n",
    "Wait": "{type: wait}\n",
    "PendingSafetyCheck": """\
{id: cu_sc_1, code: malicious_instructions, message: "The page asks to ignore instructions."}
""",
    "ShellCommandOutput": '{stdout: "README.md\\n", exit_code: 0}\n',
}
"""One example per record of the thread file (YAML), validated by the test suite."""

_THREAD_INTRO = """\
# The thread file

A thread file holds one stored conversation: the system prompt, tools, memories, retrieved
documents and the timeline (messages, thoughts and tool calls). It is YAML or JSON; this page
describes schema version 1, the only one so far. It is generated from the msgspec Structs of
`turnwire.model.records` that validate the file, so it lists exactly what `turnwire.load_thread`
accepts.

- Every mapping rejects keys it does not list; every error names its place
  (`E_THREAD_FILE_INVALID: $.messages[1].role: Invalid enum value 'system'`).
- Timeline records (messages, thoughts, tool calls) sort by `(created_at, seq)`. Timestamps
  are RFC 3339 with a time zone (`2026-01-01T10:00:00Z`); in YAML they may be left unquoted.
- A relative `path` (attachments, artifacts) is resolved against the thread file's folder
  when the file is loaded, and read when a request is rendered. It must stay inside that
  folder (or `files.roots`) and name a regular file: an absolute path elsewhere, a `..` or a
  symlink that leaves the folder, `/proc`, a FIFO or a directory fails with
  `E_FILE_NOT_ALLOWED: $.messages[0].attachments[0].path: ...`
  ([Security](security.md#file-roots)).
- A tool's `handler:` names code, which the thread may not run unless the configuration's
  `tools.allow_thread_handlers` allows it ([Running against the API](running.md#tools)).
- Ids are stable strings; envelope nonces are derived from them, so changing an id changes
  the rendered request.

`examples/weather.yaml` in the repository is a whole thread: a tool, a memory, a document,
a question with an image, a tool call with its result and the answer.

The JSON Schema of this file is printed by `turnwire schema thread` (and is
[`schema/thread.json`](schema/thread.json) on this site); point an editor at it, for
instance with a first line `# yaml-language-server: $schema=thread.json` in a YAML file.
Two rules are checked by the loader alone: tool names are unique within a thread, and a
timestamp's calendar date must exist.
"""


def _definitions_in_order(schema: dict[str, Any], root: str) -> list[str]:
    """Definition names reachable from the root, breadth first, each once."""
    order = [root]
    definitions = {root: schema, **schema["$defs"]}
    index = 0
    while index < len(order):
        for ref in _refs(definitions[order[index]]):
            name = _name(ref)
            if name not in order and name in schema["$defs"] and name != "EnvPlaceholder":
                order.append(name)
        index += 1
    return order


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value
            elif key != "$defs":
                yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def _rules(definition: dict[str, Any]) -> list[str]:
    """The cross-field rules of a record, in words."""
    sentences = []
    for rule in definition.get("allOf", []):
        if "oneOf" in rule:
            fields = [f"`{option['required'][0]}`" for option in rule["oneOf"]]
            sentences.append(f"Exactly one of {', '.join(fields)} is set.")
        elif "anyOf" in rule:
            fields = [f"`{option['required'][0]}`" for option in rule["anyOf"]]
            sentences.append(f"At least one of {' or '.join(fields)} is non-empty.")
        elif "if" in rule:
            given = rule["if"]["required"][0]
            then, otherwise = rule["then"]["required"][0], rule["else"]["required"][0]
            sentences.append(
                f"With a `{given}`, `{then}` is required; without one, `{otherwise}` must not "
                "be empty."
            )
    return sentences


def _field_table(
    definition: dict[str, Any], link: Callable[[str], str], key: Callable[[str], str]
) -> list[str]:
    required = set(definition.get("required", []))
    lines = ["| field | type | default | meaning |", "|---|---|---|---|"]
    for field, schema in definition.get("properties", {}).items():
        lines.append(
            f"| {key(field)} | {_cell(type_text(schema, link))} | "
            f"{_default(schema, field in required)} | {_cell(schema.get('description', ''))} |"
        )
    return lines


@page("thread-file.md")
def thread_reference() -> str:
    schema = thread_schema()
    definitions = {"Thread": schema, **schema["$defs"]}

    def link(name: str) -> str:
        return f"[{name}](#{_anchor(name)})"

    lines = [_THREAD_INTRO]
    for name in _definitions_in_order(schema, "Thread"):
        definition = definitions[name]
        lines += [f"## {name}", "", definition.get("description", ""), ""]
        lines += _field_table(definition, link, lambda field: f"`{field}`")
        rules = _rules(definition)
        if rules:
            lines += ["", " ".join(rules)]
        if name in THREAD_EXAMPLES:
            lines += ["", "```yaml", THREAD_EXAMPLES[name].rstrip(), "```"]
        lines.append("")
    return "\n".join(lines)


# ------------------------------------------------------------------------ configuration

CONFIG_EXAMPLES: dict[str, str] = {
    "render": """\
render:
  reasoning_replay: encrypted
  replay_compatibility: [openai-responses-reasoning-v1]
  unsupported_media_policy: {audio: fallback-stash, video: synthetic-description}
  image_detail: low
  tool_result_inline_max_bytes: 1024
""",
    "request": """\
request:
  model: "${TURNWIRE_MODEL:gpt-5}"
  max_output_tokens: 4096
  reasoning: {effort: medium, summary: auto}
  text: {verbosity: low}
  tool_choice: {type: function, name: get_weather}
""",
    "client": """\
client:
  base_url: "${TURNWIRE_BASE_URL:http://127.0.0.1:8080/v1}"
  request_timeout_s: 120
  stream_idle_timeout_s: 90
  headers: {X-Team: support}
  retry: {max_retries: 5, max_delay_s: 20}
""",
    "context": """\
context:
  window: {compact: {threshold: 200000}}
  token_encoding: o200k_base
  context_window: 400000
""",
    "plugins": """\
plugins:
  allow: [redact]
  trace: true
  settings:
    redact: {phones: false}
""",
    "store": """\
store: {location: /var/lib/turnwire/threads.db}
""",
    "tools": """\
tools:
  handlers: {get_weather: "mycompany.tools:get_weather"}
  allow_thread_handlers: ["turnwire.examples.*"]
  timeout_s: 20
  hosted:
    - {type: web_search, search_context_size: medium}
    - type: mcp
      server_label: tickets
      server_url: https://mcp.example.com/tickets
      require_approval: always
      headers: {Authorization: "Bearer ${TICKETS_MCP_TOKEN:}"}
""",
    "files": """\
files:
  roots: [/srv/agent/uploads]
  max_file_bytes: 16777216
""",
    "provider": """\
provider:
  name: my-gateway
  lacks:
    compact: "the gateway forwards POST /responses only"
    prompt_cache_options: "the gateway drops unknown request fields"
""",
}
"""One example per section of the configuration (YAML), validated by the test suite."""

_CONFIG_INTRO = """\
# Configuration

One YAML schema covers the whole configuration. Every key has a default, listed below: the
field defaults of the `turnwire.config.settings` Structs, which also hold each key's
description, so this page is generated from them. A configuration is built in this order:

1. those defaults, with the packaged `config/default.yaml` (shipped in the wheel) on top, which
   only reads `client.base_url`, `client.organization` and `client.project` from
   `$OPENAI_BASE_URL`, `$OPENAI_ORG_ID` and `$OPENAI_PROJECT_ID`, as the official SDK does;
2. each `--profile NAME` in order: the profiles shipped with turnwire (`production`,
   `local-dev`, `strict-media`, `examples`; from an installed wheel too);
3. each `--config FILE` in order (mappings merge key by key; any other value replaces);
4. each `--set KEY=VALUE` (`--set request.temperature=0.2`), one setting for one command,
   its value read as YAML;
5. `${ENV}` / `${ENV:default}` interpolation.

The merged tree is validated before anything is built: an unknown key, a bad value or a
rejected option fails naming its `$.path` (`E_INVALID_OPENAI_RESPONSES_OPTIONS`).
`turnwire check-config FILE...` checks profiles, and `turnwire check-config --print` prints
the merged, validated settings (credentials shown as `[redacted]`). From Python,
`turnwire.load_settings(config_files, overrides=...)` does the same.

Every key is optional in a profile. Any value may also be written as one placeholder,
`${NAME}` or `${NAME:default}`: it becomes the environment variable's value (or the default),
read as YAML, so `"${TIMEOUT:30}"` is a number. A placeholder inside a longer string is
replaced as text.

The request options turnwire manages itself cannot be set: `store` (always false),
`instructions`, `input`, `tools`, `stream` (use `client.stream`), `previous_response_id`,
`conversation`, `prompt`, `context_management`, and `background: true`.

The JSON Schema of a configuration file is printed by `turnwire schema config` (and is
[`schema/config.json`](schema/config.json) on this site).
"""


def _sections(
    schema: dict[str, Any], name: str, key: str, shared: frozenset[str] | None = None
) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """``(dotted key, Struct name, definition)`` of every section and nested mapping.

    A record the thread file has too (the hosted tool declarations of ``tools.hosted``) is
    not a section: the thread file's page documents it, and the configuration links there.
    """
    if shared is None:
        shared = frozenset(thread_schema()["$defs"])
    definition = schema if name == "Settings" else schema["$defs"][name]
    yield key, name, definition
    for field, value in definition.get("properties", {}).items():
        for ref in _refs(_without_placeholder(value)):
            if _name(ref) != "EnvPlaceholder" and _name(ref) not in shared:
                yield from _sections(schema, _name(ref), f"{key}.{field}".lstrip("."), shared)


def config_keys() -> list[str]:
    """Every dotted key of the configuration (``render.bucket_order``, ``client.retry``...)."""
    return [
        f"{key}.{field}".lstrip(".")
        for key, _, definition in _sections(config_schema(), "Settings", "")
        for field in definition.get("properties", {})
    ]


def _slug(key: str) -> str:
    """The anchor MkDocs gives a heading that is `key` in code."""
    return "".join(c for c in key.lower() if c.isalnum() or c in "-_")


@page("configuration.md")
def config_reference() -> str:
    schema = config_schema()
    sections = list(_sections(schema, "Settings", ""))
    where = {name: key for key, name, _ in sections}

    def link(name: str) -> str:
        if name not in where:  # a record of the thread file (a hosted tool declaration)
            return f"[{name}](thread-file.md#{_anchor(name)})"
        return f"[`{where[name]}`](#{_slug(where[name])})"

    # A key whose value is one of several shapes (``request.tool_choice``) is one section, a
    # table per shape, each under the ``type`` that selects it.
    grouped: dict[str, list[dict[str, Any]]] = {}
    for key, _, definition in sections[1:]:
        grouped.setdefault(key, []).append(definition)
    lines = [_CONFIG_INTRO]
    for key, definitions in grouped.items():
        lines += [f"## `{key}`", ""]
        for definition in definitions:
            tag = _without_placeholder(definition.get("properties", {}).get("type", {}))
            if len(definitions) > 1 and "const" in tag:
                lines += [f"`type: {tag['const']}`: {definition.get('description', '')}", ""]
            else:
                lines += [definition.get("description", ""), ""]
            lines += _field_table(definition, link, lambda field: f"`{field}`")
            lines.append("")
        if "bucket_order" in definitions[0].get("properties", {}):
            lines += ["`bucket_order` lists each bucket once and must contain `timeline`.", ""]
        if key in CONFIG_EXAMPLES:
            lines += ["```yaml", CONFIG_EXAMPLES[key].rstrip(), "```", ""]
    return "\n".join(lines)


# ------------------------------------------------------------------------- command line


def _formatter(prog: str) -> argparse.HelpFormatter:
    return argparse.HelpFormatter(prog, width=88)


def _commands(
    parser: argparse.ArgumentParser, name: str
) -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    """``(full name, help, parser)`` of the command and every subcommand, depth first."""
    yield name, parser.description or "", parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for sub_name, sub in action.choices.items():
                for full, help_text, found in _commands(sub, f"{name} {sub_name}"):
                    yield full, help_text or helps.get(sub_name, ""), found


def _argument_row(action: argparse.Action) -> str | None:
    if isinstance(action, argparse._SubParsersAction | argparse._HelpAction):
        return None
    if action.option_strings:
        value = f" {action.metavar or action.dest.upper()}" if action.nargs != 0 else ""
        names = ", ".join(f"`{option}{value}`" for option in action.option_strings)
    else:
        names = f"`{action.metavar or action.dest}`"
    details = []
    if action.choices:
        details.append("one of " + ", ".join(f"`{choice}`" for choice in action.choices))
    if isinstance(action, argparse._AppendAction) and "repeatable" not in (action.help or ""):
        details.append("repeatable")
    if action.nargs == "+":
        details.append("one or more")
    elif action.nargs == "*":
        details.append("zero or more")
    elif action.nargs != "?" and (action.required or not action.option_strings):
        # argparse marks a positional `*` required; only a value that must be given is
        details.append("required")
    if isinstance(action, argparse._VersionAction):
        help_text = "print the version and exit"
    else:
        help_text = action.help or ""
    if details:
        help_text = f"{help_text} ({'; '.join(details)})" if help_text else "; ".join(details)
    return f"| {names} | {_cell(help_text)} |"


def cli_commands() -> list[tuple[str, argparse.ArgumentParser]]:
    """Every command of ``turnwire`` with its parser (``turnwire``, ``turnwire render``...)."""
    return [(full, parser) for full, _, parser in _commands(_parser(), "turnwire")]


@page("cli.md")
def cli_reference() -> str:
    lines = [
        "# Command line",
        "",
        "Every command of `turnwire`, generated from its argument parser. Bad input exits 2",
        "with one line, `error: <CODE>: <message>`; a failed `run` exits 1.",
        "",
    ]
    for full, help_text, parser in _commands(_parser(), "turnwire"):
        parser.formatter_class = _formatter
        level = "#" * min(2 + full.count(" ") - 1, 4) if " " in full else "##"
        lines += [f"{level} `{full}`", ""]
        if help_text:
            sentence = help_text[0].upper() + help_text[1:]
            lines += [sentence if sentence.endswith(".") else sentence + ".", ""]
        lines += ["```text", parser.format_usage().strip(), "```", ""]
        rows = [row for row in map(_argument_row, parser._actions) if row]
        if rows:
            lines += ["| argument | meaning |", "|---|---|", *rows, ""]
    return "\n".join(lines)


# -------------------------------------------------------------------------------- hooks


def hook_names() -> list[str]:
    """Every hookspec of :mod:`turnwire.hookspecs`, in the order the file declares them."""
    specs = [
        value
        for value in vars(hookspecs).values()
        if inspect.isfunction(value) and hasattr(value, "turnwire_spec")
    ]
    specs.sort(key=lambda function: function.__code__.co_firstlineno)
    return [function.__name__ for function in specs]


def _runs(docstring: str) -> str:
    """The "Runs once per ..." sentence of a hookspec docstring."""
    text = " ".join(docstring.split())
    start = text.find("Runs ")
    if start < 0:
        return ""
    end = text.find(".", start)
    return text[start : end + 1]


_HOOKS_INTRO = """\
# Stages and hooks

Every step of rendering is a [pluggy](https://pluggy.readthedocs.io) hook declared in
`turnwire.hookspecs`, listed here in pipeline order, followed by the client's hooks. A plugin
implements a hook with a function of the same name marked `@turnwire.hookimpl`, asks for the
arguments it needs by name (never with defaults), returns a value to override the stage or
`None` to defer to the next implementation, and may wrap the result with
`@hookimpl(wrapper=True)`. The built-ins (`turnwire.stages`) are registered last. This page is
generated from the hookspecs' docstrings.

| hook | result | runs |
|---|---|---|
"""


@page("hooks.md")
def hooks_reference() -> str:
    lines = [_HOOKS_INTRO.rstrip()]
    names = hook_names()
    for name in names:
        function = getattr(hookspecs, name)
        calls = "first non-None" if function.turnwire_spec["firstresult"] else "all collected"
        lines.append(f"| [`{name}`](#{name}) | {calls} | {_runs(function.__doc__ or '')} |")
    lines += ["", "## The contract", "", "::: turnwire.hookspecs", "    options:"]
    lines += ["      members: false", "      show_root_heading: false", ""]
    for name in names:
        lines += [f"## `{name}` {{#{name}}}", "", f"::: turnwire.hookspecs.{name}"]
        lines += ["    options:", "      show_root_heading: false", ""]
    return "\n".join(lines)


# ------------------------------------------------------------------------------- errors

_ERRORS_INTRO = """\
# Errors

Every error turnwire raises on purpose is a `turnwire.TurnwireError` with a stable `code`, an
HTTP-like `status` and a `fatal` flag (fatal: the same input fails again, so retrying cannot
help). Errors under `InputError` mean the caller must change something; errors under
`ClientError` mean the exchange with the API failed, and the thread was left as it was. Each
error also carries the context that locates the problem, as attributes: a `$.path` in a thread
or configuration file, an `input[i]` in a request body, a stage, a plugin, an upstream HTTP
status.

On the command line a failure prints `error: <CODE>: <message>` as the last line of stderr.
`turnwire run` exits 1 for any failure; the other commands exit 2 for bad input (an
`InputError`) and 1 for anything else. With `turnwire run --json`, a failure also prints
`{"error": {"code", "message", "status", ...}}` on stdout, with the error's own fields when it
has them: `path` (bad input), `http_status` (an HTTP error), `event` and `field` (a stream's
value of the wrong shape) and `item_id`.

Messages are one line and say what was wrong, where, and what to do instead. No message, log
record or `repr` contains the API key, the envelope secret or a configured credential: every
message is redacted when the error is built ([Security](security.md#redaction)).

This page is generated from the classes of `turnwire.errors`.
"""


def _docstring_markdown(text: str) -> str:
    """Docstring markup as Markdown: ``literal`` and Sphinx roles become code."""
    text = re.sub(
        r":(?:class|func|mod|data|attr|meth|exc|obj):`(~?)([\w.]+)(?:\s*<[\w.]+>)?`",
        lambda role: f"`{role[2].rsplit('.', 1)[-1] if role[1] else role[2]}`",
        text,
    )
    return text.replace("``", "`")


def _docstring_parts(cls: type) -> tuple[str, list[tuple[str, str]]]:
    """A class docstring's prose and its ``:ivar name:`` entries, as Markdown."""
    prose: list[str] = []
    fields: list[list[str]] = []  # [role, name, text]
    for line in inspect.cleandoc(cls.__doc__ or "").splitlines():
        field = re.match(r":(ivar|param) (\w+):\s*(.*)", line)
        if field:
            fields.append(list(field.groups()))
        elif fields and line.startswith(" "):
            fields[-1][2] += " " + line.strip()
        elif not fields:
            prose.append(line)
    ivars = [(name, _docstring_markdown(text)) for role, name, text in fields if role == "ivar"]
    return _docstring_markdown("\n".join(prose).strip()), ivars


def error_classes() -> list[type[errors.TurnwireError]]:
    """Every error class of :mod:`turnwire.errors`, depth first from ``TurnwireError``, each
    class's subclasses in the order the module defines them."""
    defined = [
        value
        for value in vars(errors).values()
        if isinstance(value, type) and issubclass(value, errors.TurnwireError)
    ]

    def below(base: type) -> list[type[errors.TurnwireError]]:
        found = []
        for cls in defined:
            if cls.__bases__[0] is base:
                found += [cls, *below(cls)]
        return found

    return [errors.TurnwireError, *below(errors.TurnwireError)]


def _depth(cls: type) -> int:
    return len(cls.__mro__) - len(errors.TurnwireError.__mro__)


def error_tree() -> list[str]:
    """The error classes as a tree, each with its code: ``├── InputError  E_INVALID_INPUT``."""
    classes = error_classes()
    lines = []
    for index, cls in enumerate(classes):
        depth = _depth(cls)
        prefix = ""
        for level in range(1, depth + 1):
            later = next(
                (
                    _depth(other) == level
                    for other in classes[index + 1 :]
                    if _depth(other) <= level
                ),
                False,
            )
            if level == depth:
                prefix += "├── " if later else "└── "
            else:
                prefix += "│   " if later else "    "
        lines.append(f"{prefix}{cls.__name__}".ljust(41) + cls.code)
    return lines


@page("errors.md")
def errors_reference() -> str:
    classes = error_classes()
    lines = [_ERRORS_INTRO, "```text", *error_tree(), "```", ""]
    lines += ["| code | class | status | fatal |", "|---|---|---|---|"]
    for cls in classes:
        fatal = "yes" if cls.fatal else "no"
        lines.append(
            f"| `{cls.code}` | [`{cls.__name__}`](#{_anchor(cls.__name__)}) | {cls.status} "
            f"| {fatal} |"
        )
    lines.append("")
    for cls in classes:
        prose, ivars = _docstring_parts(cls)
        base = cls.__bases__[0]
        lines += [f"## `{cls.__name__}` {{#{_anchor(cls.__name__)}}}", ""]
        facts = f"`{cls.code}`, status {cls.status}, {'fatal' if cls.fatal else 'not fatal'}"
        if base is not Exception:
            facts += f"; a subclass of [`{base.__name__}`](#{_anchor(base.__name__)})"
        lines += [facts + ".", "", prose, ""]
        if ivars:
            lines += [f"- `{name}`: {text}" for name, text in ivars] + [""]
    return "\n".join(lines)


# ---------------------------------------------------------------------- JSON Schemas


def _json(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


PAGES["schema/thread.json"] = lambda: _json(thread_schema())
PAGES["schema/config.json"] = lambda: _json(config_schema())


# ----------------------------------------------------------------------- MkDocs hook


# A role names its target (``:meth:`~turnwire.Client.run```), or shows a title for it
# (``:meth:`Client.run <turnwire.client.dispatch.Client.run>```): the title is what is shown.
_ROLE = re.compile(
    r":(?:class|func|meth|attr|mod|data|exc|obj):<code>(~?)([\w.]+)(?:\s*&lt;[\w.]+&gt;)?</code>"
)


def _role(match: re.Match[str]) -> str:
    short, target = match.groups()
    return f"<code>{target.rsplit('.', 1)[-1] if short else target}</code>"


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    """Sphinx roles in docstrings (``:class:`~turnwire.Thread```, ``:meth:`title <target>```) as
    plain code (MkDocs event)."""
    return _ROLE.sub(_role, html)


def on_files(files: Any, config: Any) -> Any:
    """Add the generated pages to the build (MkDocs event)."""
    from mkdocs.structure.files import File

    for name, render in PAGES.items():
        files.append(File.generated(config, name, content=render()))
    return files


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs-generated")
    for name, render in PAGES.items():
        target = out / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(render())
        print(target)
