"""What every format shares: which names count, decoding values, cutting calls out of the text.

A format parser either finds a well-formed set of calls or raises :class:`Malformed`, which
:func:`turnwire_local_tools.parse` turns into ``None``: the text is then left exactly as the
model wrote it. Nothing here evaluates code: Python calls are read with :mod:`ast` and only
literals are accepted.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from turnwire.client.text_calls import TextToolCall, TextToolCalls
from turnwire.model.records import Tool
from turnwire.stages.artifacts import ARTIFACT_TOOLS

__all__ = [
    "PYTHON_MAX_CHARS",
    "Cuts",
    "Malformed",
    "Scope",
    "arguments",
    "balanced_spans",
    "call_from_object",
    "decode_json",
    "decode_json_at",
    "decode_value",
    "literal",
    "matching_close",
    "parse_python",
    "python_call",
    "skip_space",
]


class Malformed(Exception):
    """The text is not a well-formed set of calls in the format being tried."""


# A name a model may write when no tools are declared (the client then answers "tool not found").
# The API's rule for function names: a call under any other name could never be replayed.
_LOOSE_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
# Ids are kept only when they look like ids; anything else and the client makes one.
_CALL_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_ARTIFACT_NAMES = frozenset(name for name, _ in ARTIFACT_TOOLS)


@dataclass(frozen=True, slots=True)
class Scope:
    """What a parser may accept.

    :ivar names: the declared tool names, plus turnwire's artifact-reading tools (the client
        declares those itself when a thread shows handles, and the hook does not see them).
    :ivar declared: whether the thread declares any tool.
    :ivar schemas: each declared tool's JSON Schema (``qwen3_coder`` types its values by it).
    :ivar max_calls: more calls than this and the text is not parsed.
    """

    names: frozenset[str]
    declared: bool
    schemas: Mapping[str, Mapping[str, Any]]
    max_calls: int

    @classmethod
    def of(cls, tools: Sequence[Tool], max_calls: int) -> Scope:
        return cls(
            names=frozenset(tool.name for tool in tools) | _ARTIFACT_NAMES,
            declared=bool(tools),
            schemas={tool.name: tool.parameters or {} for tool in tools},
            max_calls=max_calls,
        )

    def name(self, value: object, *, marked: bool) -> str:
        """``value`` as a tool name this text may call.

        A declared name always passes. When the thread declares no tool, a format with its own
        markup (``marked``) may call any plausible name; a format without markup never may.
        """
        if not isinstance(value, str):
            raise Malformed
        name = value.strip()
        if name in self.names:
            return name
        if marked and not self.declared and _LOOSE_NAME.fullmatch(name):
            return name
        raise Malformed


def skip_space(text: str, pos: int) -> int:
    """The first index at or after ``pos`` that is not whitespace."""
    length = len(text)
    while pos < length and text[pos].isspace():
        pos += 1
    return pos


# --------------------------------------------------------------------------- values

_DECODER = json.JSONDecoder(strict=False)  # models write raw newlines inside strings


def decode_json_at(text: str, pos: int) -> tuple[Any, int]:
    """The JSON value starting at ``pos`` and the index just after it."""
    try:
        return _DECODER.raw_decode(text, pos)
    except (ValueError, RecursionError) as err:
        raise Malformed from err


def decode_json(body: str) -> Any:
    """``body`` (surrounding whitespace allowed) as one JSON value, nothing after it."""
    start = skip_space(body, 0)
    value, end = decode_json_at(body, start)
    if body[end:].strip():
        raise Malformed
    return value


# Python's parser is slow on huge sources; calls written as Python are small.
PYTHON_MAX_CHARS = 65_536


def parse_python(source: str, mode: str) -> ast.AST:
    """``source`` parsed (never run); invalid source, too deep or too long, is malformed."""
    if len(source) > PYTHON_MAX_CHARS:
        raise Malformed
    try:
        with warnings.catch_warnings():
            # "\d" in a model's string is an invalid escape: a warning, not our business.
            warnings.simplefilter("ignore")
            return ast.parse(source, mode=mode)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as err:
        raise Malformed from err


_JSON_NAMES: dict[str, Any] = {"true": True, "false": False, "null": None}


def literal(node: ast.AST) -> Any:
    """The JSON value a Python literal expression stands for (``true``/``null`` allowed too)."""
    if isinstance(node, ast.Constant):
        value = node.value
        if value is None or isinstance(value, str | bool | int | float):
            return value
        raise Malformed  # bytes, complex, Ellipsis
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub | ast.UAdd)
        and isinstance(node.operand, ast.Constant)
        and isinstance(node.operand.value, int | float)
        and not isinstance(node.operand.value, bool)
    ):
        number = node.operand.value
        return -number if isinstance(node.op, ast.USub) else number
    if isinstance(node, ast.List | ast.Tuple):
        return [literal(element) for element in node.elts]
    if isinstance(node, ast.Dict):
        mapping: dict[str, Any] = {}
        for key_node, value_node in zip(node.keys, node.values, strict=True):
            if key_node is None:  # {**spread}
                raise Malformed
            key = literal(key_node)
            if not isinstance(key, str):
                raise Malformed
            mapping[key] = literal(value_node)
        return mapping
    if isinstance(node, ast.Name) and node.id in _JSON_NAMES:
        return _JSON_NAMES[node.id]
    raise Malformed


def decode_value(body: str) -> Any:
    """``body`` as JSON, or else as a Python literal (single-quoted dicts, ``True``)."""
    try:
        return decode_json(body)
    except Malformed:
        tree = parse_python(body.strip(), "eval")
        assert isinstance(tree, ast.Expression)
        return literal(tree.body)


def arguments(value: object) -> dict[str, Any]:
    """A call's arguments as a mapping: a mapping, a JSON string of one, or nothing at all."""
    if value is None:
        return {}
    if isinstance(value, str):
        value = decode_json(value) if value.strip() else {}
    if not isinstance(value, dict):
        raise Malformed
    return value


_NAME_KEYS = ("name",)
_ARGUMENT_KEYS = ("arguments", "parameters")


def call_from_object(
    value: object,
    scope: Scope,
    *,
    marked: bool,
    name_keys: tuple[str, ...] = _NAME_KEYS,
    argument_keys: tuple[str, ...] = _ARGUMENT_KEYS,
    allowed_keys: frozenset[str] | None = None,
    require_arguments: bool = False,
) -> tuple[str, dict[str, Any], object]:
    """``(name, arguments, id)`` of a call written as an object.

    Also reads the chat-completions shape ``{"type": "function", "function": {...}}``.
    ``allowed_keys``, when given, is every key the object may have.
    """
    if not isinstance(value, dict):
        raise Malformed
    wrapped = value.get("function")
    if isinstance(wrapped, dict) and "name" not in value:
        value = {**wrapped, "id": value.get("id")}
    if allowed_keys is not None and not value.keys() <= allowed_keys:
        raise Malformed
    names = [key for key in name_keys if key in value]
    given = [key for key in argument_keys if key in value]
    if len(names) != 1 or len(given) > 1 or (require_arguments and not given):
        raise Malformed
    name = scope.name(value[names[0]], marked=marked)
    return name, arguments(value[given[0]] if given else None), value.get("id")


def python_call(node: ast.AST, scope: Scope, *, marked: bool) -> tuple[str, dict[str, Any]]:
    """``(name, arguments)`` of ``name(key=literal, ...)``; positional arguments are refused."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name) or node.args:
        raise Malformed
    name = scope.name(node.func.id, marked=marked)
    found: dict[str, Any] = {}
    for keyword in node.keywords:
        if keyword.arg is None or keyword.arg in found:  # **spread, or a repeated key
            raise Malformed
        found[keyword.arg] = literal(keyword.value)
    return name, found


# --------------------------------------------------------------------------- scanning

_CLOSERS = {"(": ")", "[": "]", "{": "}"}
_OPENERS = {value: key for key, value in _CLOSERS.items()}


def matching_close(text: str, start: int, quotes: str) -> int | None:
    """The index of the bracket closing the one at ``start``, or ``None``.

    Brackets inside strings (delimited by any of ``quotes``, backslash escapes) do not count;
    a mismatched closer or the end of the text gives ``None``. Linear in what it reads.
    """
    stack: list[str] = []
    quote = ""
    pos = start
    length = len(text)
    while pos < length:
        char = text[pos]
        if quote:
            if char == "\\":
                pos += 1
            elif char == quote:
                quote = ""
        elif char in quotes:
            quote = char
        elif char in _CLOSERS:
            stack.append(_CLOSERS[char])
        elif char in _OPENERS:
            if not stack or stack.pop() != char:
                return None
            if not stack:
                return pos
        pos += 1
    return None


_JSON_CHARS = re.compile(r'[{}\[\]"\\]')


def balanced_spans(text: str) -> list[tuple[int, int]]:
    """Every outermost balanced ``{...}`` or ``[...]`` span, as ``(start, end)``.

    One pass over the text: JSON strings are skipped inside brackets, a mismatched closer
    forgets what was open, and a bracket never closed leaves the spans inside it outermost.
    """
    spans: list[tuple[int, int]] = []
    stack: list[tuple[str, int]] = []
    in_string = False
    skip_to = -1
    for match in _JSON_CHARS.finditer(text):
        pos = match.start()
        if pos < skip_to:
            continue
        char = match.group()
        if in_string:
            if char == "\\":
                skip_to = pos + 2
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = bool(stack)
        elif char in "{[":
            stack.append((_CLOSERS[char], pos))
        elif char in "}]":
            if not stack or stack[-1][0] != char:
                stack.clear()
                continue
            _, opened = stack.pop()
            while spans and spans[-1][0] > opened:
                spans.pop()
            spans.append((opened, pos + 1))
    return spans


# --------------------------------------------------------------------------- the result

# A call alone in a fenced block takes the fence with it.
_FENCE_OPEN = re.compile(r"```[\w+-]{0,20}[ \t]*\n\s*\Z")
_FENCE_CLOSE = re.compile(r"[ \t]*\n\s*```[ \t]*(?=\n|\Z)")
_GAP = re.compile(r"[\s,;]*")


class Cuts:
    """The calls found so far, and the spans of text they came from."""

    def __init__(self, text: str, scope: Scope) -> None:
        self.text = text
        self.scope = scope
        self.calls: list[TextToolCall] = []
        self.spans: list[tuple[int, int]] = []

    def call(self, name: str, args: Mapping[str, Any], call_id: object = None) -> None:
        if len(self.calls) >= self.scope.max_calls:
            raise Malformed
        chosen = dict(args)
        try:
            msgspec.json.encode(chosen)  # the client encodes them; it must never fail there
        except (TypeError, ValueError, OverflowError) as err:
            raise Malformed from err
        kept = call_id if isinstance(call_id, str) and _CALL_ID.fullmatch(call_id) else None
        self.calls.append(TextToolCall(name=name, arguments=chosen, call_id=kept))

    def cut(self, start: int, end: int) -> None:
        self.spans.append((start, end))

    def result(
        self, *, leftover: Iterable[str] = (), kept: Iterable[str] | None = None
    ) -> TextToolCalls | None:
        """The calls and the text without their spans (or ``kept``, when the format chose).

        :param leftover: markers that must not remain in the text (an unmatched tag).
        """
        if not self.calls:
            return None
        pieces = list(kept) if kept is not None else self._pieces()
        remaining = "\n\n".join(piece.strip() for piece in pieces if piece.strip())
        if any(marker in remaining for marker in leftover):
            raise Malformed
        ids = [call.call_id for call in self.calls if call.call_id is not None]
        calls = self.calls
        if len(ids) != len(set(ids)):
            calls = [msgspec.structs.replace(call, call_id=None) for call in calls]
        return TextToolCalls(calls=tuple(calls), text=remaining)

    def _pieces(self) -> list[str]:
        text = self.text
        merged: list[tuple[int, int]] = []
        for start, end in sorted(self.spans):
            if merged and start < merged[-1][1]:
                raise Malformed  # overlapping: a parser bug would show here, not in the text
            gap = _GAP.match(text, merged[-1][1]) if merged else None
            if gap is not None and gap.end() >= start:
                merged[-1] = (merged[-1][0], end)
            else:
                merged.append((start, end))
        pieces, pos = [], 0
        for span in merged:
            start, end = self._fenced(*span)
            pieces.append(text[pos:start])
            pos = end
        pieces.append(text[pos:])
        return pieces

    def _fenced(self, start: int, end: int) -> tuple[int, int]:
        before = self.text[max(0, start - 64) : start]
        opening = _FENCE_OPEN.search(before)
        closing = _FENCE_CLOSE.match(self.text, end)
        if opening is None or closing is None:
            return start, end
        return start - len(before) + opening.start(), closing.end()
