"""Hosted tool declarations: where they come from, and what a request needs for them.

A request declares the hosted tools of the configuration (``tools.hosted``) and of the thread
(``hosted_tools``). The configuration comes first and wins: a thread's declaration of a type
the configuration declares too (for an MCP server, the same ``server_label``) is left out,
with a warning, so a deployer's server, its credentials and its approval policy cannot be
replaced by a thread file. The thread's other declarations follow, in thread order.

A thread's own MCP server must match a pattern of ``tools.allow_thread_mcp_servers`` (its
``server_url``, or its ``connector_id``; empty, the default: none may), else
:class:`~turnwire.errors.McpServerNotAllowedError` before anything is sent: the API calls the
server a declaration names with whatever the model sends, and a thread file is untrusted
input. A URL pattern is matched as a URL (:func:`url_allowed`), never as text: the scheme,
the host (exactly, or ``*.`` and a suffix that must end on a label boundary), the port and the
path prefix (a pattern's path may end in ``*``) are compared after parsing, and a server URL
with a user name, a fragment, a ``.``/``..`` path segment, or an escaped or unusual character
in its host or path never matches; ``*`` alone allows every server. A connector id is matched
against a glob pattern without ``://`` (``connector_*``).

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
import re
from collections.abc import Iterable, Sequence
from urllib.parse import urlsplit

from turnwire.errors import McpServerNotAllowedError
from turnwire.wire.tools import HostedTool, McpTool, declaration_key

__all__ = [
    "HOSTED_INCLUDES",
    "check_thread_mcp_servers",
    "hosted_includes",
    "merge_hosted_tools",
    "redacted_tools",
    "url_allowed",
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
        if tool.server_url is not None:
            if any(url_allowed(tool.server_url, pattern) for pattern in allowed):
                continue
            server = tool.server_url
        else:
            server = tool.connector_id or ""
            if any("://" not in p and fnmatch.fnmatchcase(server, p) for p in allowed):
                continue
        raise McpServerNotAllowedError(
            f"$.hosted_tools[{index}]: the thread declares MCP server {tool.server_label!r} "
            f"({server!r}), which tools.allow_thread_mcp_servers does not allow; declare it "
            "in tools.hosted or allow it there; nothing was sent",
            path=f"$.hosted_tools[{index}]",
            server_label=tool.server_label,
        )


_HOST = re.compile(
    r"^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$"
)
_PATH = re.compile(r"^[A-Za-z0-9\-._~!$&'()+,;=:@/]*$")
_DEFAULT_PORTS = {"https": 443, "http": 80}


def url_allowed(server: str, pattern: str) -> bool:
    """Whether the MCP server URL ``server`` is one that the URL pattern ``pattern`` allows.

    Both are parsed: the schemes must be equal; the host equal to the pattern's, or, for a
    pattern host ``*.example.com``, end in ``.example.com`` (a label boundary, so
    ``evilexample.com`` does not); the ports equal (a missing one is the scheme's default);
    and the server's path start with the pattern's path up to a final ``*`` (equal to it
    when there is no ``*``). A server URL with a user name or password, a fragment, a host
    that is no plain DNS name, or a path with an escape (``%``), a backslash or a ``.``/``..``
    segment matches nothing. The pattern ``*`` alone allows every server (a deployment that
    trusts its threads says so); any other pattern without ``://`` matches no URL.
    """
    if pattern == "*":
        return True
    if "://" not in pattern:
        return False
    try:
        url, want = urlsplit(server), urlsplit(pattern.replace("*.", "wildcard.", 1))
        port, wanted_port = url.port, want.port
    except ValueError:
        return False
    if url.username is not None or url.password is not None or url.fragment or "#" in server:
        return False
    host = (url.hostname or "").lower()
    if not _HOST.match(host) or not _PATH.match(url.path):
        return False
    if any(segment in (".", "..") for segment in url.path.split("/")):
        return False
    scheme = url.scheme.lower()
    if scheme != want.scheme.lower() or scheme not in _DEFAULT_PORTS:
        return False
    if (port or _DEFAULT_PORTS[scheme]) != (wanted_port or _DEFAULT_PORTS[scheme]):
        return False
    wanted_host = (want.hostname or "").lower()
    if pattern.split("://", 1)[1].startswith("*."):
        suffix = wanted_host.removeprefix("wildcard")
        if not host.endswith(suffix) or host == suffix.lstrip("."):
            return False
    elif host != wanted_host:
        return False
    path = url.path or "/"
    wanted_path = want.path or "/"
    if wanted_path.endswith("*"):
        return path.startswith(wanted_path[:-1])
    return path == wanted_path


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
