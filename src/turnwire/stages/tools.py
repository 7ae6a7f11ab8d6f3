"""Built-in ``tools_to_wire`` and ``description_to_json_schema``.

A function tool's ``strict`` flag is its own when it has one, else ``render.strict``; when
neither says (the default), it is ``true`` exactly when the schema qualifies for strict mode
(:func:`turnwire.model.structured.strict_problems` finds nothing: every object closed with
``additionalProperties: false`` and listing all its properties in ``required``, every schema
typed, only the keywords strict mode takes). A schema that does not qualify goes with
``strict: false``, as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from turnwire.hookspecs import hookimpl
from turnwire.model.records import Tool
from turnwire.model.structured import strict_problems
from turnwire.wire import FunctionTool, HostedTool, WireTool

__all__ = ["description_to_json_schema", "tools_to_wire"]


@hookimpl(trylast=True)
def description_to_json_schema(description: Mapping[str, Any] | None) -> dict[str, Any]:
    schema = dict(description or {})
    schema.setdefault("type", "object")
    if schema["type"] == "object":
        schema.setdefault("properties", {})
    return schema


@hookimpl(trylast=True)
def tools_to_wire(
    tools: tuple[Tool, ...],
    hosted_tools: tuple[HostedTool, ...],
    strict: bool | None,
    stages: Any,
) -> tuple[WireTool, ...]:
    declared: list[WireTool] = []
    for tool in tools:
        if tool.hidden:
            continue
        parameters = stages.description_to_json_schema(description=tool.parameters)
        flag = tool.strict if tool.strict is not None else strict
        if flag is None:  # strict whenever the schema qualifies
            flag = not strict_problems(parameters)
        declared.append(
            FunctionTool(
                name=tool.name,
                description=tool.description or None,
                parameters=parameters,
                strict=flag,
                allowed_callers=tool.allowed_callers,
            )
        )
    declared.extend(hosted_tools)
    return tuple(declared)
