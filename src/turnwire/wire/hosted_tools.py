"""Hosted tool declarations: where they come from, and what a request needs for them.

A request declares the hosted tools of the configuration (``tools.hosted``) and of the thread
(``hosted_tools``). The configuration comes first and wins: a thread's declaration of a type
the configuration declares too (for an MCP server, the same ``server_label``) is left out,
with a warning, so a deployer's server, its credentials and its approval policy cannot be
replaced by a thread file. The thread's other declarations follow, in thread order.

A thread's own MCP server must match a glob pattern of ``tools.allow_thread_mcp_servers``
(its ``server_url``, or its ``connector_id``; empty, the default: none may), else
:class:`~turnwire.errors.McpServerNotAllowedError` before anything is sent: the API calls the
server a declaration names with whatever the model sends, and a thread file is untrusted
input. End a URL pattern with ``/`` and a path (``https://mcp.deepwiki.com/*``): ``*``
matches any character, dots included.

:data:`HOSTED_INCLUDES` is what each declared type adds to the body's ``include`` so that its
items can be replayed statelessly: a ``code_interpreter_call`` input item requires its
``outputs`` (OpenAI's ``CodeInterpreterToolCall``; the recorded accepted requests send
``code_interpreter_call.outputs``), which a ``store: false`` response gives only when asked.
The other types' items replay without their optional extras (``file_search_call.results``,
``web_search_call.action.sources``); add those to ``request.include`` to keep them too.
"""

from __future__ import annotations

import fnmatch
import logging
from collections.abc import Iterable, Sequence

from turnwire.errors import McpServerNotAllowedError
from turnwire.wire.tools import HostedTool, McpTool, declaration_key

__all__ = [
    "HOSTED_INCLUDES",
    "check_thread_mcp_servers",
    "hosted_includes",
    "merge_hosted_tools",
    "redacted_tools",
]

logger = logging.getLogger("turnwire")

HOSTED_INCLUDES: dict[str, tuple[str, ...]] = {
    "code_interpreter": ("code_interpreter_call.outputs",),
}
"""For each hosted tool type, the ``include`` values its stateless replay needs."""


def merge_hosted_tools(
    configured: tuple[HostedTool, ...], declared: tuple[HostedTool, ...]
) -> tuple[HostedTool, ...]:
    """The configuration's declarations, then the thread's that it does not shadow."""
    if not configured:
        return declared
    if not declared:
        return configured
    taken = {declaration_key(tool) for tool in configured}
    kept = []
    for tool in declared:
        key = declaration_key(tool)
        if key in taken:
            logger.warning(
                "the thread declares hosted tool %r, which tools.hosted declares too: the "
                "configuration's declaration is sent",
                key,
                extra={"kind": "hosted-tool-shadowed"},
            )
            continue
        kept.append(tool)
    return (*configured, *kept)


def check_thread_mcp_servers(
    declared: tuple[HostedTool, ...],
    allowed: Sequence[str],
    configured: tuple[HostedTool, ...] = (),
) -> None:
    """Raise :class:`~turnwire.errors.McpServerNotAllowedError` for the first MCP server of a
    thread's ``declared`` tools that no pattern of ``allowed`` matches (one that a
    ``configured`` declaration shadows is not sent, and not checked)."""
    shadowed = {declaration_key(tool) for tool in configured}
    for index, tool in enumerate(declared):
        if not isinstance(tool, McpTool) or declaration_key(tool) in shadowed:
            continue
        server = tool.server_url or tool.connector_id or ""
        if any(fnmatch.fnmatchcase(server, pattern) for pattern in allowed):
            continue
        raise McpServerNotAllowedError(
            f"$.hosted_tools[{index}]: the thread declares MCP server {tool.server_label!r} "
            f"({server!r}), which tools.allow_thread_mcp_servers does not allow; declare it "
            "in tools.hosted or allow it there; nothing was sent",
            path=f"$.hosted_tools[{index}]",
            server_label=tool.server_label,
        )


def hosted_includes(tools: Iterable[object] | None) -> list[str]:
    """The ``include`` values the declared hosted tools need, in declaration order."""
    needed: list[str] = []
    for tool in tools or ():
        tag = getattr(type(tool), "__struct_config__", None)
        for value in HOSTED_INCLUDES.get(str(getattr(tag, "tag", "")), ()):
            if value not in needed:
                needed.append(value)
    return needed


def redacted_tools(tools: Sequence[object]) -> list[object]:
    """``tools`` with every MCP server's header values and token replaced by ``[redacted]``."""
    return [tool.masked() if isinstance(tool, McpTool) else tool for tool in tools]
