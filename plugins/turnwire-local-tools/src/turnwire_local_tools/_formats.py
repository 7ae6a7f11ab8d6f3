"""One parser per format: ``(text, scope) -> TextToolCalls | None``, raising ``Malformed``.

Every parser reads the text once from left to right (``str.find``, bounded regular expressions,
a bracket scanner), so the work is linear in the text. Each is all-or-nothing: one malformed
block, unknown name or non-mapping argument and the whole text stays text.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from typing import Any

from turnwire.client.text_calls import TextToolCalls

from ._common import (
    Cuts,
    Malformed,
    Scope,
    arguments,
    balanced_spans,
    call_from_object,
    decode_json,
    decode_json_at,
    decode_value,
    matching_close,
    parse_python,
    python_call,
    skip_space,
)

__all__ = ["AUTO_MARKED", "AUTO_UNMARKED", "PARSERS"]

Parser = Callable[[str, Scope], TextToolCalls | None]


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


# --------------------------------------------------------------------------- hermes


_HERMES_OPEN, _HERMES_CLOSE = "<tool_call>", "</tool_call>"


def hermes(text: str, scope: Scope) -> TextToolCalls | None:
    """``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, as often as needed."""
    cuts = Cuts(text, scope)
    pos = 0
    while (start := text.find(_HERMES_OPEN, pos)) >= 0:
        body_start = start + len(_HERMES_OPEN)
        decoded, end = _hermes_json(text, body_start)
        if decoded is _NONE:
            # Not one JSON value closed by the tag: the body is what lies before the first
            # closing tag, a Python literal at best (markers inside strings need JSON).
            end = text.find(_HERMES_CLOSE, body_start)
            if end < 0:
                raise Malformed
            body = text[body_start:end]
            if _HERMES_OPEN in body:
                raise Malformed
            decoded = decode_value(body)
        for value in _listed(decoded):
            name, args, _ = call_from_object(value, scope, marked=True)
            cuts.call(name, args)
        pos = end + len(_HERMES_CLOSE)
        cuts.cut(start, pos)
    return cuts.result(leftover=(_HERMES_CLOSE,))


_NONE = object()


def _hermes_json(text: str, body_start: int) -> tuple[Any, int]:
    """The JSON value right after an opening tag and where its closing tag starts, when one
    follows it (a value's strings may hold either tag); ``(_NONE, -1)`` otherwise."""
    try:
        value, after = decode_json_at(text, skip_space(text, body_start))
    except Malformed:
        return _NONE, -1
    close = skip_space(text, after)
    if not text.startswith(_HERMES_CLOSE, close):
        return _NONE, -1
    return value, close


# --------------------------------------------------------------------------- qwen3_coder

_FUNCTION_OPEN, _FUNCTION_CLOSE = "<function=", "</function>"
_PARAMETER_OPEN, _PARAMETER_CLOSE = "<parameter=", "</parameter>"
_WRAP_BEFORE = re.compile(r"<tool_call>\s*\Z")
_WRAP_AFTER = re.compile(r"\s*</tool_call>")
_NOT_STRING = ("integer", "number", "boolean", "object", "array", "null")


def _typed(raw: str, schema: Any) -> Any:
    """A parameter's text as the type its schema declares (text when it declares none)."""
    value = raw[1:] if raw.startswith("\n") else raw
    value = value[:-1] if value.endswith("\n") else value
    declared = schema.get("type") if isinstance(schema, dict) else None
    types = [declared] if isinstance(declared, str) else list(declared or ())
    if "string" in types or not any(kind in _NOT_STRING for kind in types):
        return value
    try:
        return decode_json(value)
    except Malformed:
        if "boolean" in types and value.strip() in ("True", "False"):
            return value.strip() == "True"
        return value  # left for the tool's own argument checks to report


def _parameters(body: str, schema: Any) -> dict[str, Any]:
    properties = schema.get("properties") if isinstance(schema, dict) else None
    properties = properties if isinstance(properties, dict) else {}
    found: dict[str, Any] = {}
    pos = 0
    while True:
        start = body.find(_PARAMETER_OPEN, pos)
        if body[pos : start if start >= 0 else len(body)].strip():
            raise Malformed  # text between parameters
        if start < 0:
            return found
        name_end = body.find(">", start)
        if name_end < 0:
            raise Malformed
        key = body[start + len(_PARAMETER_OPEN) : name_end].strip()
        close = body.find(_PARAMETER_CLOSE, name_end)
        if not key or key in found or close < 0:
            raise Malformed
        raw = body[name_end + 1 : close]
        if _PARAMETER_OPEN in raw:
            raise Malformed  # an unclosed parameter swallowing the next
        found[key] = _typed(raw, properties.get(key))
        pos = close + len(_PARAMETER_CLOSE)


def _function_tags(text: str, scope: Scope, cuts: Cuts) -> None:
    """``<function=name>`` blocks: ``<parameter=k>v</parameter>`` bodies, or a JSON object."""
    pos = 0
    while (start := text.find(_FUNCTION_OPEN, pos)) >= 0:
        name_end = text.find(">", start)
        close = text.find(_FUNCTION_CLOSE, start)
        if name_end < 0 or close < 0 or close < name_end:
            raise Malformed
        name = scope.name(text[start + len(_FUNCTION_OPEN) : name_end], marked=True)
        body = text[name_end + 1 : close]
        if _FUNCTION_OPEN in body:
            raise Malformed
        if body.strip().startswith("{"):
            args = arguments(decode_json(body))  # Llama 3.1's <function=name>{...}</function>
        else:
            args = _parameters(body, scope.schemas.get(name))
        cuts.call(name, args)
        pos = close + len(_FUNCTION_CLOSE)
        window = text[max(0, start - 64) : start]
        wrapped = _WRAP_BEFORE.search(window)
        begin = start - len(window) + wrapped.start() if wrapped else start
        after = _WRAP_AFTER.match(text, pos)
        cuts.cut(begin, after.end() if after else pos)


_QWEN_MARKERS = (
    _HERMES_OPEN,
    _HERMES_CLOSE,
    _FUNCTION_OPEN,
    _FUNCTION_CLOSE,
    _PARAMETER_OPEN,
    _PARAMETER_CLOSE,
)


def qwen3_coder(text: str, scope: Scope) -> TextToolCalls | None:
    """``<tool_call><function=name><parameter=k>v</parameter></function></tool_call>``."""
    cuts = Cuts(text, scope)
    _function_tags(text, scope, cuts)
    return cuts.result(leftover=_QWEN_MARKERS)


# --------------------------------------------------------------------------- llama3_json

_PYTHON_TAG = "<|python_tag|>"
_LLAMA_END = ("<|eom_id|>", "<|eot_id|>")
_LLAMA_KEYS = frozenset({"name", "parameters", "arguments", "type"})


def llama3_json(text: str, scope: Scope) -> TextToolCalls | None:
    """``<|python_tag|>`` (optional), then ``{"name": ..., "parameters": {...}}``; ``;``
    between several. Without the tag the whole answer must be the calls."""
    cuts = Cuts(text, scope)
    if _FUNCTION_OPEN in text:
        _function_tags(text, scope, cuts)
        return cuts.result(leftover=_QWEN_MARKERS)
    tag = text.find(_PYTHON_TAG)
    marked = tag >= 0
    begin = tag if marked else skip_space(text, 0)
    pos = begin + len(_PYTHON_TAG) if marked else begin
    if not text.startswith("{", skip_space(text, pos)):
        raise Malformed
    while True:
        pos = skip_space(text, pos)
        if pos == len(text) or text.startswith(_LLAMA_END, pos):
            break
        if cuts.calls and text.startswith(";", pos):
            pos += 1
            continue
        value, pos = decode_json_at(text, pos)
        name, args, _ = call_from_object(
            value, scope, marked=marked, allowed_keys=None if marked else _LLAMA_KEYS
        )
        cuts.call(name, args)
    for end_token in _LLAMA_END:
        if text.startswith(end_token, pos):
            pos += len(end_token)
    if text[pos:].strip():
        raise Malformed
    cuts.cut(begin, len(text))
    return cuts.result(leftover=(_PYTHON_TAG,))


# --------------------------------------------------------------------------- mistral

_TOOL_CALLS, _ARGS, _CALL_ID = "[TOOL_CALLS]", "[ARGS]", "[CALL_ID]"


def mistral(text: str, scope: Scope) -> TextToolCalls | None:
    """``[TOOL_CALLS][{"name": ..., "arguments": {...}, "id": ...}]`` (v3 tokenizers) and
    ``[TOOL_CALLS]name[CALL_ID]id[ARGS]{...}`` (v11 and later; ``[CALL_ID]`` optional)."""
    first = text.find(_TOOL_CALLS)
    if first < 0:
        return None
    cuts = Cuts(text, scope)
    pos = first
    while text.startswith(_TOOL_CALLS, pos):
        pos = skip_space(text, pos + len(_TOOL_CALLS))
        if text.startswith(("[", "{"), pos):
            value, pos = decode_json_at(text, pos)
            for item in _listed(value):
                name, args, call_id = call_from_object(item, scope, marked=True)
                cuts.call(name, args, call_id)
        else:
            args_at = text.find(_ARGS, pos)
            if args_at < 0:
                raise Malformed
            head = text[pos:args_at]
            if _TOOL_CALLS in head:
                raise Malformed
            written, _, call_id = head.partition(_CALL_ID)
            name = scope.name(written, marked=True)
            value, pos = decode_json_at(text, skip_space(text, args_at + len(_ARGS)))
            cuts.call(name, arguments(value), call_id.strip())
        pos = skip_space(text, pos)
    if text.startswith("</s>", pos):
        pos += len("</s>")
    cuts.cut(first, pos)
    return cuts.result(leftover=(_TOOL_CALLS, _ARGS, _CALL_ID))


# --------------------------------------------------------------------------- phi

_PHI_OPEN, _PHI_CLOSE, _FUNCTOOLS = "<|tool_call|>", "<|/tool_call|>", "functools["
_PHI_START = re.compile(r"<\|tool_call\|>|functools\[")


def phi(text: str, scope: Scope) -> TextToolCalls | None:
    """``<|tool_call|>[{"name": ..., "arguments": {...}}]<|/tool_call|>`` or
    ``functools[{...}, ...]`` (Phi-4-mini)."""
    cuts = Cuts(text, scope)
    pos = 0
    while (match := _PHI_START.search(text, pos)) is not None:
        if match.group() == _PHI_OPEN:
            end = text.find(_PHI_CLOSE, match.end())
            if end < 0:
                raise Malformed
            body = text[match.end() : end]
            if _PHI_OPEN in body:
                raise Malformed
            value = decode_value(body)
            pos = end + len(_PHI_CLOSE)
        else:
            value, pos = decode_json_at(text, match.end() - 1)
            if not isinstance(value, list):
                raise Malformed
        for item in _listed(value):
            name, args, _ = call_from_object(item, scope, marked=True)
            cuts.call(name, args)
        cuts.cut(match.start(), pos)
    return cuts.result(leftover=(_PHI_OPEN, _PHI_CLOSE))


# --------------------------------------------------------------------------- gpt_oss

_HARMONY = re.compile(r"<\|(start|channel|constrain|message|end|call|return)\|>")
_RECIPIENT = re.compile(r"(?:^|\s)to=([^\s<]+)")
_HEADER_PARTS = {"start": "role", "channel": "channel", "constrain": "constrain"}


def gpt_oss(text: str, scope: Scope) -> TextToolCalls | None:
    """OpenAI harmony: ``<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>
    {...}<|call|>``; the recipient may also follow the role (``<|start|>assistant to=...``).

    The text kept is what a user may read: ``final`` messages, commentary without a recipient,
    and prose outside any message. ``analysis`` (the chain of thought) is dropped.
    """
    cuts = Cuts(text, scope)
    kept: list[str] = []
    header: dict[str, list[str]] = {}
    part = ""
    state = "outside"
    pos = 0

    def finish(content: str) -> None:
        role = "".join(header.get("role", ())).strip()
        channel = "".join(header.get("channel", ()))
        if role.startswith("functions."):
            return  # a tool's output echoed back: nothing to run, nothing to show
        found = _RECIPIENT.search(role) or _RECIPIENT.search(channel)
        if found is not None:
            recipient = found.group(1)
            if not recipient.startswith("functions."):
                raise Malformed  # a built-in harmony tool (browser, python): not ours to run
            name = scope.name(recipient.removeprefix("functions."), marked=True)
            cuts.call(name, arguments(decode_json(content)))
        elif (channel.split() or [""])[0] != "analysis":
            kept.append(content)

    for token in _HARMONY.finditer(text):
        segment, kind, pos = text[pos : token.start()], token.group(1), token.end()
        if state == "header":
            header.setdefault(part, []).append(segment)
            if kind == "message":
                state = "content"
            elif kind in ("channel", "constrain"):
                part = _HEADER_PARTS[kind]
            else:
                raise Malformed  # a header that never reaches its message
            continue
        if state == "content":
            finish(segment)
        else:
            kept.append(segment)
        state = "outside"  # <|end|>, <|call|>, <|return|>: a message ends (or a stray token)
        if kind in _HEADER_PARTS:
            header, part, state = {}, _HEADER_PARTS[kind], "header"
        elif kind == "message":
            header, state = {}, "content"
    rest = text[pos:]
    if state == "header":
        raise Malformed
    if state == "content":
        finish(rest)  # <|call|> is the stop token: servers often leave it out
    else:
        kept.append(rest)
    if not cuts.calls:
        return None
    return cuts.result(kept=kept)


# --------------------------------------------------------------------------- gemma

_TOOL_CODE = "```tool_code"


def _python_calls(source: str, scope: Scope, *, marked: bool) -> list[tuple[str, dict[str, Any]]]:
    """The calls of a block of Python: one call per statement, or lists of calls."""
    tree = parse_python(source, "exec")
    assert isinstance(tree, ast.Module)
    if not tree.body:
        raise Malformed
    calls: list[tuple[str, dict[str, Any]]] = []
    for statement in tree.body:
        if not isinstance(statement, ast.Expr):
            raise Malformed
        node = statement.value
        is_print = (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "print"
            and "print" not in scope.names
            and len(node.args) == 1
            and not node.keywords
        )
        if is_print:
            assert isinstance(node, ast.Call)
            node = node.args[0]
        elements = node.elts if isinstance(node, ast.List | ast.Tuple) else [node]
        calls.extend(python_call(element, scope, marked=marked) for element in elements)
    return calls


def gemma(text: str, scope: Scope) -> TextToolCalls | None:
    """Python calls in fenced ```` ```tool_code ```` blocks (Gemma's function-calling prompts)."""
    cuts = Cuts(text, scope)
    pos = 0
    while (start := text.find(_TOOL_CODE, pos)) >= 0:
        body_start = start + len(_TOOL_CODE)
        end = text.find("```", body_start)
        if end < 0:
            raise Malformed
        for name, args in _python_calls(text[body_start:end], scope, marked=True):
            cuts.call(name, args)
        pos = end + 3
        cuts.cut(start, pos)
    return cuts.result()


# --------------------------------------------------------------------------- pythonic

_LIST_OF_CALLS = re.compile(r"\[\s*[A-Za-z_]\w*\s*\(")
_PYTHON_START, _PYTHON_END = "<|python_start|>", "<|python_end|>"
_WRAP_PYTHON = re.compile(r"<\|python_start\|>\s*\Z")
_QUOTES = "'\""


def pythonic(text: str, scope: Scope) -> TextToolCalls | None:
    """A Python list of calls with literal keyword arguments: ``[f(a=1), g(b="x")]``
    (Llama 3.2 and 4, optionally inside ``<|python_start|>...<|python_end|>``)."""
    cuts = Cuts(text, scope)
    pos = 0
    while (match := _LIST_OF_CALLS.search(text, pos)) is not None:
        start = match.start()
        end = matching_close(text, start, _QUOTES)
        if end is None:
            raise Malformed
        tree = parse_python(text[start : end + 1], "eval")
        assert isinstance(tree, ast.Expression)
        if not isinstance(tree.body, ast.List):
            raise Malformed
        for element in tree.body.elts:
            cuts.call(*python_call(element, scope, marked=False))
        pos = end + 1
        window = text[max(0, start - 64) : start]
        opened = _WRAP_PYTHON.search(window)
        after = skip_space(text, pos)
        if opened is not None and text.startswith(_PYTHON_END, after):
            start, pos = start - len(window) + opened.start(), after + len(_PYTHON_END)
        cuts.cut(start, pos)
    return cuts.result(leftover=(_PYTHON_START, _PYTHON_END))


# --------------------------------------------------------------------------- bare_pythonic

_NAMED_CALL = re.compile(r"(?<![\w.])([A-Za-z_]\w*)[ \t]*\(")
_IN_LIST = re.compile(r"\[\s*\Z")


def bare_pythonic(text: str, scope: Scope) -> TextToolCalls | None:
    """``get_weather(city="Paris")`` written in the text, for declared tool names only."""
    if not any(name in text for name in scope.names):
        return None  # a quick pass in C before the scan in Python
    cuts = Cuts(text, scope)
    pos = 0
    while (match := _NAMED_CALL.search(text, pos)) is not None:
        if match.group(1) not in scope.names:
            pos = match.end()
            continue
        start = match.start()
        if _IN_LIST.search(text[max(0, start - 64) : start]):
            raise Malformed  # an element of a list: that is pythonic, not bare
        end = matching_close(text, match.end() - 1, _QUOTES)
        if end is None:
            raise Malformed
        tree = parse_python(text[start : end + 1], "eval")
        assert isinstance(tree, ast.Expression)
        cuts.call(*python_call(tree.body, scope, marked=False))
        pos = end + 1
        cuts.cut(start, pos)
    return cuts.result()


# --------------------------------------------------------------------------- loose_keyed

_LOOSE_NAMES = ("tool", "name", "tool_name")
_LOOSE_ARGUMENTS = ("arguments", "args", "parameters")
_LOOSE_EXTRA = frozenset({"id", "call_id", "type"})
_LOOSE_KEYS = frozenset(_LOOSE_NAMES + _LOOSE_ARGUMENTS) | _LOOSE_EXTRA
_LOOSE_LISTS = ("tool_calls", "calls")


def _keyed(value: Any) -> bool:
    """Whether ``value`` has the shape of a call: one name key, one argument key, no others."""
    return (
        isinstance(value, dict)
        and value.keys() <= _LOOSE_KEYS
        and sum(key in value for key in _LOOSE_NAMES) == 1
        and sum(key in value for key in _LOOSE_ARGUMENTS) == 1
    )


def _keyed_calls(value: Any) -> list[dict[str, Any]]:
    if _keyed(value):
        return [value]
    if isinstance(value, dict) and len(value) == 1:
        ((key, inner),) = value.items()
        if key in _LOOSE_LISTS and isinstance(inner, list):
            value = inner
    if isinstance(value, list) and value and all(_keyed(item) for item in value):
        return value
    return []


def loose_keyed(text: str, scope: Scope) -> TextToolCalls | None:
    """A JSON object with a ``tool``/``name`` key and an ``args``/``arguments``/``parameters``
    key anywhere in the text (in prose, in a ```` ```json ```` fence), or a list of them."""
    if not any(f'"{key}"' in text for key in _LOOSE_NAMES):
        return None  # a quick pass in C before the scan in Python
    cuts = Cuts(text, scope)
    for start, end in balanced_spans(text):
        try:
            value = decode_json(text[start:end])
        except Malformed:
            continue  # braces in prose
        found = _keyed_calls(value)
        for item in found:
            name, args, _ = call_from_object(
                item,
                scope,
                marked=False,
                name_keys=_LOOSE_NAMES,
                argument_keys=_LOOSE_ARGUMENTS,
                require_arguments=True,
            )
            cuts.call(name, args)
        if found:
            cuts.cut(start, end)
    return cuts.result()


# --------------------------------------------------------------------------- registry

PARSERS: dict[str, Parser] = {
    "hermes": hermes,
    "qwen3_coder": qwen3_coder,
    "llama3_json": llama3_json,
    "mistral": mistral,
    "phi": phi,
    "gpt_oss": gpt_oss,
    "gemma": gemma,
    "pythonic": pythonic,
    "bare_pythonic": bare_pythonic,
    "loose_keyed": loose_keyed,
}
"""Every format by its setting name."""

AUTO_MARKED: tuple[tuple[str, str], ...] = (
    ("gpt_oss", "<|message|>"),
    ("mistral", _TOOL_CALLS),
    ("phi", _PHI_OPEN),
    ("phi", _FUNCTOOLS),
    ("qwen3_coder", _FUNCTION_OPEN),
    ("hermes", _HERMES_OPEN),
    ("llama3_json", _PYTHON_TAG),
    ("gemma", _TOOL_CODE),
)
"""``auto``, first: the formats with their own markup. The first whose marker the text holds
decides alone (even when it finds the text malformed), so a half-broken block is never
half-read by a looser format."""

AUTO_UNMARKED: tuple[str, ...] = ("llama3_json", "pythonic", "bare_pythonic", "loose_keyed")
"""``auto``, then: the formats without markup, most specific first; the first to find calls
wins."""
