"""Built-in ``tools_to_wire`` and ``description_to_json_schema``.

A function tool's ``strict`` flag is its own when it has one, else ``render.strict``; when
neither says (the default), it is ``true`` exactly when the schema qualifies for strict mode
(:func:`turnwire.model.structured.strict_problems` finds nothing: every object closed with
``additionalProperties: false`` and listing all its properties in ``required``, every schema
typed, only the keywords strict mode takes). A schema that does not qualify goes with
``strict: false``, as it is.

The functions of a namespace (a ``namespace`` hosted tool) are sent the same way: their
parameters through ``description_to_json_schema``, their ``strict`` flag decided by the same
rule. ``defer_loading`` is sent only when true.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from turnwire.hookspecs import hookimpl
from turnwire.model.records import Tool
from turnwire.model.structured import strict_problems
from turnwire.wire import FunctionTool, HostedTool, WireTool
from turnwire.wire.tools import NamespaceFunction, NamespaceTool

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
        parameters, flag = _schema(tool.parameters, tool.strict, strict, stages)
        declared.append(
            FunctionTool(
                name=tool.name,
                description=tool.description or None,
                parameters=parameters,
                strict=flag,
                allowed_callers=tool.allowed_callers,
                defer_loading=tool.defer_loading,
            )
        )
    declared.extend(
        _namespace(hosted, strict, stages) if isinstance(hosted, NamespaceTool) else hosted
        for hosted in hosted_tools
    )
    return tuple(declared)


def _schema(
    description: Mapping[str, Any] | None, own: bool | None, strict: bool | None, stages: Any
) -> tuple[dict[str, Any], bool]:
    """A function's parameters as sent, and its ``strict`` flag: its own, else
    ``render.strict``, else whether the schema qualifies."""
    parameters: dict[str, Any] = stages.description_to_json_schema(description=description)
    flag = own if own is not None else strict
    if flag is None:  # strict whenever the schema qualifies
        flag = not strict_problems(parameters)
    return parameters, flag


def _namespace(namespace: NamespaceTool, strict: bool | None, stages: Any) -> NamespaceTool:
    """``namespace`` with each function's parameters and ``strict`` flag as they are sent."""
    members: list[NamespaceFunction | Any] = []
    for member in namespace.tools:
        if isinstance(member, NamespaceFunction):
            parameters, flag = _schema(member.parameters, member.strict, strict, stages)
            members.append(msgspec.structs.replace(member, parameters=parameters, strict=flag))
        else:
            members.append(member)
    return msgspec.structs.replace(namespace, tools=tuple(members))
