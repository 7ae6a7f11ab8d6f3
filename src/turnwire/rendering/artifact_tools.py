"""The built-in artifact-reading tools a request declares while an artifact is shown as a
handle (see :func:`turnwire.rendering.renderer.with_declared_tools`); the client runs them
(:mod:`turnwire.client.tools`)."""

from __future__ import annotations

from typing import Any

from turnwire.model.records import Tool
from turnwire.stages.artifacts import ARTIFACT_TOOLS

__all__ = ["artifact_tools"]

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
