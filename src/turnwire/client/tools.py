"""The tool loop's executor: runs the thread's tool handlers and the built-in artifact tools.

Bad arguments (invalid JSON, not an object), unknown tools, missing handlers and handler
exceptions become error results the model reads on the next iteration; nothing here raises.
Results up to ``render.tool_result_inline_max_bytes`` are stored as text, larger ones as
artifacts (shown as handles, read with the ``artifact_*`` tools).
"""

from __future__ import annotations

import importlib
import inspect
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from turnwire._redact import redact
from turnwire.errors import InvalidToolCallArgs
from turnwire.model import Artifact, Thread, Tool, ToolCall, ToolResult
from turnwire.stages.artifacts import ARTIFACT_TOOLS

__all__ = ["ToolExecutor", "artifact_tools", "parse_arguments"]

_CALL_ID = {"type": "string", "description": "the callId shown in the artifact's handle"}
_SCHEMAS: dict[str, dict[str, Any]] = {
    "artifact_head": {"n": {"type": "integer", "description": "how many lines (default 20)"}},
    "artifact_tail": {"n": {"type": "integer", "description": "how many lines (default 20)"}},
    "artifact_grep": {
        "pattern": {"type": "string", "description": "a regular expression"},
        "max_lines": {"type": "integer", "description": "at most (default 50)"},
    },
    "artifact_cat": {
        "start": {"type": "integer", "description": "first line, from 1"},
        "end": {"type": "integer", "description": "last line, inclusive"},
    },
    "artifact_byte_length": {},
    "artifact_line_count": {},
    "artifact_estimate_tokens": {},
}


def artifact_tools() -> tuple[Tool, ...]:
    """The declarations of the built-in artifact-reading tools."""
    tools = []
    for name, what in ARTIFACT_TOOLS:
        properties = {"callId": _CALL_ID, **_SCHEMAS[name]}
        required = ["callId", "pattern"] if name == "artifact_grep" else ["callId"]
        tools.append(
            Tool(
                name=name,
                description=f"Return {what} of an artifact.",
                parameters={"type": "object", "properties": properties, "required": required},
                trusted=True,
            )
        )
    return tuple(tools)


def parse_arguments(raw: str) -> tuple[dict[str, Any], str | None]:
    """``(arguments, None)`` or ``({}, error text)`` for arguments the model got wrong."""
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        error = InvalidToolCallArgs(f"Tool arguments are not valid JSON. Raw value: {raw}")
        return {}, error.message
    if not isinstance(value, dict):
        kind = {list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
            type(value), "number"
        )
        error = InvalidToolCallArgs(
            f"Tool arguments must be a JSON object; received {kind}. Raw value: {raw}"
        )
        return {}, error.message
    return value, None


def _read_body(artifact: Artifact) -> str:
    """An artifact's body, read from its file when it is only a pointer."""
    if artifact.text is not None:
        return artifact.text
    assert artifact.path is not None
    return Path(artifact.path).read_text(encoding="utf-8", errors="replace")


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, msgspec.Struct):
        return msgspec.json.encode(value).decode()
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return str(value)


class ToolExecutor:
    """Runs one tool call at a time against a thread's tools.

    :param inline_max_bytes: results up to this size are stored as text.
    :param handlers: name → callable, overriding the tools' ``handler`` import paths.
    """

    def __init__(
        self, *, inline_max_bytes: int, handlers: dict[str, Callable[..., Any]] | None = None
    ) -> None:
        self.inline_max_bytes = inline_max_bytes
        self.handlers = dict(handlers or {})
        self._imported: dict[str, Callable[..., Any]] = {}

    async def execute(self, call: ToolCall, thread: Thread) -> ToolCall:
        """``call`` with its result (an error result when anything went wrong)."""
        name = call.tool
        if name in dict(ARTIFACT_TOOLS):
            text, failed = self._artifact(name, call.args, thread)
            return self._done(call, text, failed, inline=True)
        tool = thread.tool(name)
        if tool is None:
            names = sorted(t.name for t in thread.tools)
            text = (
                f"Tool not found: {name}. Available tools: {', '.join(names)}."
                if names
                else f"Tool not found: {name}. No tools are available this turn."
            )
            return self._done(call, text, True)
        try:
            handler = self._handler(tool)
        except (ImportError, AttributeError, ValueError) as err:
            return self._done(call, f"Tool {name} cannot run: {err}", True)
        try:
            value = handler(**call.args)
            if inspect.isawaitable(value):
                value = await value
        except Exception as err:
            failure = redact(f"Tool {name} failed: {type(err).__name__}: {err}")
            return self._done(call, failure, True)
        return self._done(call, _as_text(value), False)

    def _handler(self, tool: Tool) -> Callable[..., Any]:
        if tool.name in self.handlers:
            return self.handlers[tool.name]
        if not tool.handler:
            raise ValueError("it has no handler (set `handler: module:function`)")
        cached = self._imported.get(tool.handler)
        if cached is None:
            module_name, _, attribute = tool.handler.partition(":")
            if not attribute:
                raise ValueError(f"handler {tool.handler!r} is not `module:function`")
            target: Any = importlib.import_module(module_name)
            for part in attribute.split("."):
                target = getattr(target, part)
            if not callable(target):
                raise ValueError(f"handler {tool.handler!r} is not callable")
            cached = self._imported[tool.handler] = target
        return cached

    def _done(self, call: ToolCall, text: str, is_error: bool, *, inline: bool = False) -> ToolCall:
        if not (is_error or inline) and len(text.encode()) > self.inline_max_bytes:
            result = ToolResult(artifact=Artifact(text=text))
        else:
            result = ToolResult(text=text)
        return msgspec.structs.replace(call, result=result, is_error=is_error)

    @staticmethod
    def _artifact(name: str, args: dict[str, Any], thread: Thread) -> tuple[str, bool]:
        call_id = args.get("callId")
        bodies: list[Artifact] = []
        source = next((c for c in thread.tool_calls if c.id == call_id), None)
        result = source.result if source is not None else None
        if result is not None and result.artifact is not None:
            bodies = [result.artifact]
        elif result is not None and result.artifacts:
            bodies = list(result.artifacts)
        record = next((r for r in thread.retrievables if r.id == call_id), None)
        if not bodies and record is not None and record.artifact is not None:
            bodies = [record.artifact]  # a retrieved document shown as a handle
        if not bodies:
            return f"No artifact has callId {call_id!r}.", True
        try:
            text = "\n\n".join(_read_body(b) for b in bodies)
        except OSError as err:
            return f"The artifact {call_id!r} cannot be read: {err.strerror}", True
        artifact = Artifact(text=text)
        lines = artifact.body.splitlines()
        try:
            if name == "artifact_head":
                return artifact.head(int(args.get("n", 20))), False
            if name == "artifact_tail":
                return artifact.tail(int(args.get("n", 20))), False
            if name == "artifact_grep":
                pattern = re.compile(str(args["pattern"]))
                limit = int(args.get("max_lines", 50))
                hits = [f"{i}: {line}" for i, line in enumerate(lines, 1) if pattern.search(line)]
                return "\n".join(hits[:limit]) or "(no line matches)", False
            if name == "artifact_cat":
                start = max(int(args.get("start", 1)), 1)
                end = int(args.get("end", len(lines)))
                return "\n".join(lines[start - 1 : end]), False
            if name == "artifact_byte_length":
                return str(artifact.byte_length), False
            if name == "artifact_line_count":
                return str(artifact.line_count), False
            import toktok

            return str(toktok.batch_count([artifact.body], "o200k_base", threads=1)[0]), False
        except (KeyError, ValueError, TypeError, re.error) as err:
            return f"Bad arguments for {name}: {err}", True
