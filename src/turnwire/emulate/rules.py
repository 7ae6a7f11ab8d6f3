"""The emulator's rules: what it answers when a request breaks one, and the evidence for it.

Every rule is one entry of :data:`RULES`: the HTTP status, the error body's ``type``, ``code``,
``param`` and ``message`` (templates filled from the request), and ``evidence``: where the
wording comes from. The recorded rejections in ``tests/data/conformance`` come first; then
public issue threads quoting the API's answer; an entry whose wording nobody recorded says so
("no recording") rather than pretending.

The wire rules themselves live in one place, :mod:`turnwire.rendering.preflight`: the emulator
runs the client's own :func:`~turnwire.rendering.preflight.preflight` and only maps each of its
rules to the API's answer here. The rules only a server can see (unknown fields, sealed state,
stored items) are checked in :mod:`turnwire.emulate.checks` and answered from the same table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

__all__ = ["RULES", "ApiError", "Rule", "error_for"]


@dataclass(frozen=True, slots=True)
class ApiError:
    """One error answer: the HTTP status and the body ``{"error": {...}}``."""

    status: int
    type: str
    code: str | None
    param: str | None
    message: str
    rule: str
    headers: tuple[tuple[str, str], ...] = ()

    def body(self) -> bytes:
        """The JSON body, fields in the order the API's recorded bodies use."""
        return msgspec.json.encode(
            {
                "error": {
                    "message": self.message,
                    "type": self.type,
                    "param": self.param,
                    "code": self.code,
                }
            }
        )


@dataclass(frozen=True, slots=True)
class Rule:
    """A rule's answer. ``param`` and ``message`` are :meth:`str.format` templates over the
    fields the check supplies (``index``, ``id``, ``call_id``, ``prefix``, ``value`` ...)."""

    status: int
    type: str
    code: str | None
    param: str | None
    message: str
    evidence: str


_INVALID = "invalid_request_error"
_CONFORMANCE = "tests/data/conformance/"


def _unrecorded(param: str) -> Rule:
    """A preflight rule no recorded rejection shows: a 400 carrying the rule's own message."""
    return Rule(
        400, _INVALID, None, param, "{detail}", "no recording: the preflight rule's message"
    )


RULES: dict[str, Rule] = {
    # --- the preflight rules (turnwire.rendering.preflight), in its order -------------------
    "non-empty-input": Rule(
        400,
        _INVALID,
        None,
        "input",
        "Invalid 'input': empty array. Expected an array with minimum length 1, but got an "
        "empty array instead.",
        "no recording: the wording is the emulator's, modelled on the API's length errors "
        "(see call-id-length)",
    ),
    "max-output-tokens": Rule(
        400,
        _INVALID,
        "integer_below_min_value",
        "max_output_tokens",
        "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but "
        "got {value} instead.",
        "BerriAI/litellm#31451 quotes the message; the body's shape (code *_below_min_value, "
        f"param the field) is {_CONFORMANCE}responses/error_400_temperature_below_min.json",
    ),
    "reasoning-partner": Rule(
        400,
        _INVALID,
        None,
        "input",
        "Item '{id}' of type 'reasoning' was provided without its required following item.",
        f"{_CONFORMANCE}responses/error_400_reasoning_without_following_item.json, the answer "
        f"to {_CONFORMANCE}requests/rejected/reasoning_without_following_item_gpt-5.json",
    ),
    "reasoning-encrypted": Rule(
        404,
        _INVALID,
        None,
        "input",
        "Item with id '{id}' not found. Items are not persisted when `store` is set to false. "
        "Try again with `store` set to true, or remove this item from your input.",
        "router-for-me/CLIProxyAPI#2381 (the whole body); the status 404: can1357/oh-my-pi#41",
    ),
    "item-id-prefix": Rule(
        400,
        _INVALID,
        "invalid_id_prefix",
        "input[{index}].id",
        "Invalid 'input[{index}].id': '{id}'. Expected an ID that begins with '{prefix}'.",
        "openai/codex#33176 (message, param and code, as Codex prints them); "
        "jlcodes99/cockpit-tools#2090 (message)",
    ),
    "call-id-length": Rule(
        400,
        _INVALID,
        "string_above_max_length",
        "input[{index}].call_id",
        "Invalid 'input[{index}].call_id': string too long. Expected a string with maximum "
        "length 64, but got a string with length {length} instead.",
        "orchidfiles/ungate#26 (the whole body); AnswerDotAI/fastllm#45",
    ),
    "call-output-pairing": Rule(
        400,
        _INVALID,
        None,
        "input",
        "No tool call found for function call output with call_id {call_id}.",
        "microsoft/vscode#320060 and continuedev/continue#10092 (the whole body): an output "
        "without its call; a call without its output is call-without-output",
    ),
    "duplicate-id": Rule(
        400,
        _INVALID,
        None,
        "input",
        "Duplicate item found with id {id}. Remove duplicate items from your input and try again.",
        "OpenRouterTeam/ai-sdk-provider#254 and earendil-works/pi#5165 quote the first "
        "sentence; type, param and code: no recording (those of the other pairing errors)",
    ),
    "assistant-input-text": Rule(
        400,
        _INVALID,
        "invalid_value",
        "input[{index}].content[{part}]",
        "Invalid value: 'input_text'. Supported values are: 'output_text' and 'refusal'.",
        "public proxies quote the whole body (type, code invalid_value) and the param "
        "input[N].content[0]; no recording in tests/data/conformance",
    ),
    "json-object-needs-json": Rule(
        400,
        _INVALID,
        None,
        "text.format",
        "Response input messages must contain the word 'json' in some form to use "
        "'text.format' of type 'json_object'.",
        "a public proxy's test quotes the whole body as measured; no recording in "
        "tests/data/conformance",
    ),
    "programmatic-tools": Rule(
        400,
        _INVALID,
        None,
        "tools",
        "{detail}",
        "no recording: the message is the preflight rule's own",
    ),
    "custom-call-pairing": _unrecorded("input"),
    "shell-call-pairing": _unrecorded("input"),
    "local-shell-call-pairing": _unrecorded("input"),
    "apply-patch-call-pairing": _unrecorded("input"),
    "computer-call-pairing": _unrecorded("input"),
    "tool-search-pairing": _unrecorded("input"),
    "unique-tool-names": _unrecorded("tools"),
    "tool-choice-declared": _unrecorded("tool_choice"),
    "tool-search-needs-deferred": Rule(
        400,
        _INVALID,
        None,
        "tools",
        "Invalid Value: 'tools.tool_search'. tools.tool_search requires at least one deferred "
        "tool.",
        "justrach/codegraff#746 quotes the message; type, param and code: no recording",
    ),
    "deferred-needs-tool-search": Rule(
        400,
        _INVALID,
        None,
        "tools",
        "Invalid Value: 'tools.defer_loading'. Deferred tools require tools.tool_search.",
        "Wei-Shaw/sub2api#5942 quotes the message (the API's answer to a deferred function "
        "sent without tool_search); type, param and code: no recording",
    ),
    "compaction-trigger-last": Rule(
        400,
        _INVALID,
        None,
        "input",
        "The 'compaction_trigger' item must be the final input item.",
        "ranxianglei/billion-context PR #283 quotes the 400 and its message; "
        "james-6-23/codex2api PR #546 and router-for-me/CLIProxyAPI#4148 the message; param "
        "and code: no recording",
    ),
    "namespaced-call": Rule(
        400,
        _INVALID,
        None,
        "input[{index}].namespace",
        "Missing namespace for function_call '{name}'. It does not exist in the default "
        "namespace. Round-trip the model's function_call item with its namespace field "
        "included.",
        "earendil-works/pi#7709 quotes the message and the param input[N].namespace, "
        "github/copilot-cli#4519 and vercel/ai#20265 the message; type and code: no recording",
    ),
    # --- the rules only a server sees ------------------------------------------------------
    "call-without-output": Rule(
        400,
        _INVALID,
        None,
        "input",
        "No tool output found for function call {call_id}.",
        "the message as quoted in openai/openai-agents-python#673 and "
        "microsoft/agent-framework#4053 (the preflight's call-output-pairing, a call without "
        "its output); type, param and code: no recording, those of call-output-pairing",
    ),
    "invalid-item-type": Rule(
        400,
        _INVALID,
        "invalid_value",
        "input[{index}].type",
        "Invalid value: '{value}'. Supported values are the input item types of the API.",
        "no recording: modelled on assistant-input-text's invalid_value",
    ),
    "unknown-parameter": Rule(
        400,
        _INVALID,
        "unknown_parameter",
        "{path}",
        "Unknown parameter: '{path}'.",
        "1jehuang/jcode#1028 (the whole body, for input[3].status); the known fields are the "
        "official openai package's request types (turnwire/emulate/fields.json)",
    ),
    "missing-model": Rule(
        400,
        _INVALID,
        "missing_required_parameter",
        "model",
        "Missing required parameter: 'model'.",
        "no recording: the wording other OpenAI-compatible servers copy",
    ),
    "missing-parameter": Rule(
        400,
        _INVALID,
        "missing_required_parameter",
        "{path}",
        "Missing required parameter: '{path}'.",
        "no recording: missing-model's wording, for a field the official input type of an "
        "item requires (a program item's id, call_id, code and fingerprint)",
    ),
    "invalid-json": Rule(
        400,
        _INVALID,
        None,
        None,
        "We could not parse the JSON body of your request. (HINT: This likely means you "
        "aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but "
        "what was sent was not valid JSON.)",
        "a public security report quotes the API's answer; no recording in tests/data/conformance",
    ),
    "invalid-type": Rule(
        400,
        _INVALID,
        "invalid_type",
        "{path}",
        "Invalid type for '{path}': expected {expected}, but got {got} instead.",
        "no recording: modelled on the API's invalid-value errors",
    ),
    "body-too-large": Rule(
        413,
        _INVALID,
        None,
        None,
        "The request body is {length} bytes; this emulator accepts at most {limit}.",
        "no recording: the emulator's own limit (--max-body-bytes)",
    ),
    "length-required": Rule(
        411,
        _INVALID,
        None,
        None,
        "A POST needs a Content-Length header.",
        "no recording: the emulator reads no body of unknown length",
    ),
    "busy": Rule(
        503,
        "server_error",
        None,
        None,
        "The emulator is serving as many connections as it allows; try again.",
        "no recording: the emulator's own limit",
    ),
    "tool-name-pattern": Rule(
        400,
        _INVALID,
        "invalid_value",
        "{path}",
        "Invalid '{path}': string does not match pattern. Expected a string that matches the "
        "pattern '^[a-zA-Z0-9_-]+$'.",
        "openai/openai-dotnet#441 (the Responses API's 400 invalid_value for tools[0].name); "
        "the whole body as brekkylab/ailoy PR #109 and Vortiago/mcp-azure-devops PR #30 quote "
        "it for chat completions' tools[N].function.name",
    ),
    "unsupported-file": Rule(
        400,
        _INVALID,
        "unsupported_file",
        "input",
        "The file type you uploaded is not supported. Please try again with a pdf",
        "tests/data/conformance/responses/error_400_unsupported_file.json (the API's answer to "
        "an input_file whose file_url names an .mp3); the emulator refuses sound and video "
        "files by MIME type or extension",
    ),
    "stored-item": Rule(
        404,
        _INVALID,
        None,
        "input",
        "Item with id '{id}' not found. Items are not persisted when `store` is set to false. "
        "Try again with `store` set to true, or remove this item from your input.",
        "router-for-me/CLIProxyAPI#2381; the emulator persists nothing, so every "
        "item_reference is unknown to it",
    ),
    "previous-response": Rule(
        400,
        _INVALID,
        "previous_response_not_found",
        "previous_response_id",
        "Previous response with id '{id}' not found.",
        "a public proxy's test quotes the whole body; the emulator keeps no responses",
    ),
    "invalid-encrypted-content": Rule(
        400,
        _INVALID,
        "invalid_encrypted_content",
        None,
        "The encrypted content for item {id} could not be verified. Reason: {reason}",
        "openai/codex#35334 (the message with its reason); openai/codex#8128, #8145 (type, "
        "param null, code)",
    ),
    "reasoning-required": Rule(
        400,
        _INVALID,
        None,
        "input",
        "Item '{id}' of type '{kind}' was provided without its required 'reasoning' item: "
        "'{reasoning}'.",
        "quoted in pydantic/pydantic-ai#3230 and openai/openai-agents-python PR #2512 "
        "(message); type, param and code: those of reasoning-partner",
    ),
    "not-found": Rule(
        404,
        _INVALID,
        None,
        None,
        "Invalid URL ({method} {path})",
        "no recording: the emulator serves POST /v1/responses, /v1/responses/compact and "
        "/v1/responses/input_tokens only",
    ),
    "script-program-output": Rule(
        500,
        "server_error",
        "script_error",
        None,
        "The emulator's script answers with a program_output, and no program is there for it "
        "to end: give it a call_id, or replay the program in the request.",
        "no recording: the emulator's own answer to a script that ends a program neither it "
        "nor the request holds",
    ),
    # --- record and replay (turnwire.emulate.recording) -------------------------------------
    "replay-miss": Rule(
        400,
        _INVALID,
        "replay_miss",
        "{param}",
        "{detail}",
        "no recording: the emulator's own answer under --replay to a request it holds no "
        "recording of (the nearest recording and the first difference in the message)",
    ),
    "upstream-failed": Rule(
        502,
        "server_error",
        "upstream_failed",
        None,
        "The emulator could not get an answer from its upstream {upstream} ({reason}); "
        "nothing was recorded.",
        "no recording: the emulator's own answer under --record when the upstream cannot be "
        "reached or its answer breaks off",
    ),
    "forbidden-request": Rule(
        403,
        _INVALID,
        "forbidden_request",
        None,
        "{detail}",
        "no recording: the emulator's own refusal, unread, of what a web page could send (an "
        "Origin header, a body not declared application/json) and, under --record, of a Host "
        "other than a loopback address with the listening port",
    ),
}


# A preflight rule without an entry (one added to the preflight since) is answered as a plain
# 400 with the preflight's own message; a test keeps every rule in the table.
_FALLBACK = Rule(400, _INVALID, None, "input", "{detail}", "no recording")


class _Fields(dict[str, Any]):
    """Template fields; a missing one reads as ``?`` rather than failing the answer."""

    def __missing__(self, key: str) -> str:
        return "?"


def error_for(rule: str, /, **fields: Any) -> ApiError:
    """The answer of ``rule`` with its templates filled from ``fields``."""
    entry = RULES.get(rule, _FALLBACK)
    values: Mapping[str, Any] = _Fields(fields)
    param = entry.param.format_map(values) if entry.param is not None else None
    message = entry.message.format_map(values)
    return ApiError(entry.status, entry.type, entry.code, param, message, rule)
