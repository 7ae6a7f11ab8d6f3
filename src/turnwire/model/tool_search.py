"""Client-executed tool search: what the client answers a ``tool_search_call`` with.

A request that declares ``{type: tool_search, execution: client}`` lets the model ask the
client, not the API, to load deferred tools: the response holds a ``tool_search_call`` with
``execution: client``, and the next request must carry a ``tool_search_output`` with the same
``call_id`` and the loaded tools' declarations (the API then reads them as declared from
that point of the conversation on, which keeps the cached prefix). Without ``parameters``
the tool's arguments are the API's own ``{"paths": [...]}`` (the server-executed search uses
the same, as the recorded streams show); each path names what to load:

- a deferred function or custom tool declared at the top level, by its name;
- a namespace, by its name: the namespace with its deferred tools (the tools it declares
  without ``defer_loading`` are loaded already and are not declared again);
- one deferred tool of a namespace, as ``namespace.name``: the namespace with that tool;
- a deferred MCP server, by its ``server_label``.

:func:`load_paths` is that rule, over the declarations the request sent. A path that names
nothing deferred loads nothing (it is reported). The tools of one namespace found through
several paths go back as one namespace entry, where the first of them was named; a tool is
loaded once. A deferred MCP server declared with credentials (``headers``, ``authorization``)
is never loaded (reported apart): the answer is stored in the thread and replayed, and the
credentials belong in the request's ``tools`` alone. A search loads only what the request
declares, so every call of a loaded tool has its declaration (and its handler) in the request.

The answer is recorded as a :class:`~turnwire.model.records.HostedItem` of type
``tool_search_output`` (:func:`output_record`), dated as the response that made the call, after
its records, and replayed as it was sent on every later request.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import msgspec

from turnwire.model.records import HostedItem, Message, Thought, Thread, ToolCall
from turnwire.wire.tools import DEFERRABLE_TYPES

__all__ = [
    "SEARCH_CALL",
    "SEARCH_OUTPUT",
    "Loaded",
    "ToolSearch",
    "client_executed",
    "deferred_tools",
    "load_paths",
    "loaded_names",
    "output_item",
    "output_record",
    "paths_of",
    "search_paths",
    "waiting_searches",
]

SEARCH_CALL = "tool_search_call"
SEARCH_OUTPUT = "tool_search_output"


class ToolSearch(msgspec.Struct, frozen=True, kw_only=True):
    """A client-executed tool search the model asked for: what a ``tool_search`` handler is
    given.

    :ivar call_id: The search call's ``call_id``.
    :ivar arguments: Its arguments as the model sent them (a JSON value).
    :ivar paths: The paths of the API's own arguments (``{"paths": [...]}``), ``None`` when
        the arguments have another shape (the tool declared its own ``parameters``).
    :ivar declared: Every tool declaration the request sent, as sent (plain JSON values).
    """

    call_id: str | None
    arguments: Any
    paths: tuple[str, ...] | None
    declared: tuple[dict[str, Any], ...]

    @property
    def deferred(self) -> tuple[dict[str, Any], ...]:
        """The declarations a search can load: see :func:`deferred_tools`."""
        return deferred_tools(self.declared)

    def load(self, paths: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """What the built-in search loads for ``paths`` (default: the call's own paths;
        none when its arguments hold none): see :func:`load_paths`."""
        chosen = self.paths if paths is None else tuple(paths)
        return load_paths(chosen or (), self.declared).tools


def search_paths(arguments: Any) -> tuple[str, ...] | None:
    """The paths of the API's own search arguments, ``{"paths": ["name", ...]}``; ``None``
    when ``arguments`` is not that shape (a path that is not a non-empty string is left
    out)."""
    if not isinstance(arguments, Mapping):
        return None
    paths = arguments.get("paths")
    if not isinstance(paths, list):
        return None
    return tuple(path for path in paths if isinstance(path, str) and path)


def client_executed(item: Mapping[str, Any]) -> bool:
    """Whether ``item`` is a ``tool_search_call`` or ``tool_search_output`` of a search the
    client runs (``execution: client``; a search without ``execution`` is the server's)."""
    return item.get("type") in (SEARCH_CALL, SEARCH_OUTPUT) and item.get("execution") == "client"


def _deferred(tool: Mapping[str, Any]) -> bool:
    return tool.get("type") in DEFERRABLE_TYPES and tool.get("defer_loading") is True


def _credentialed(tool: Mapping[str, Any]) -> bool:
    """Whether ``tool`` is an MCP server declared with credentials (``headers`` or
    ``authorization``): what a client search never loads, since its answer is stored in the
    thread and replayed (the credentials belong in the request's ``tools`` alone)."""
    return tool.get("type") == "mcp" and bool(tool.get("headers") or tool.get("authorization"))


def deferred_tools(declared: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], ...]:
    """The declarations of ``declared`` a search can load: deferred top-level functions,
    custom tools and MCP servers (those without credentials), and each namespace that holds a
    deferred tool (with those tools only)."""
    found: list[dict[str, Any]] = []
    for tool in declared:
        if tool.get("type") == "namespace":
            members = [m for m in tool.get("tools") or () if _deferred(m)]
            if members:
                found.append({**tool, "tools": members})
        elif _deferred(tool) and not _credentialed(tool):
            found.append(dict(tool))
    return tuple(found)


class Loaded(NamedTuple):
    """What a search loads for its paths (:func:`load_paths`).

    :ivar tools: The declarations loaded, in the order named, each once.
    :ivar unknown: The paths that name nothing deferred.
    :ivar withheld: The paths that name a deferred MCP server declared with credentials,
        which a client search never loads.
    """

    tools: list[dict[str, Any]]
    unknown: list[str]
    withheld: list[str]


def _path_of(tool: Mapping[str, Any]) -> str:
    return str(tool.get("server_label") if tool.get("type") == "mcp" else tool.get("name"))


def load_paths(paths: Iterable[str], declared: Sequence[Mapping[str, Any]]) -> Loaded:
    """What ``paths`` load from the tools a request ``declared`` (see the module's
    description for what a path names)."""
    by_name: dict[str, list[dict[str, Any]]] = {}
    namespaces: dict[str, dict[str, Any]] = {}
    for tool in deferred_tools(declared):
        if tool.get("type") == "namespace":
            namespaces.setdefault(str(tool.get("name")), tool)
        else:
            by_name.setdefault(_path_of(tool), []).append(tool)
    secret = {_path_of(t) for t in declared if _deferred(t) and _credentialed(t)}
    loaded: list[dict[str, Any]] = []
    placed: dict[str, dict[str, Any]] = {}  # namespace name → its entry in ``loaded``
    taken: set[tuple[str, ...]] = set()
    unknown: list[str] = []
    withheld: list[str] = []

    def load_member(namespace: dict[str, Any], member: dict[str, Any]) -> None:
        key = ("member", str(namespace["name"]), str(member.get("name")))
        if key in taken:
            return
        taken.add(key)
        entry = placed.get(str(namespace["name"]))
        if entry is None:
            entry = placed[str(namespace["name"])] = {**namespace, "tools": []}
            loaded.append(entry)
        entry["tools"].append(member)

    for path in paths:
        found = False
        for tool in by_name.get(path, ()):
            found = True
            key = ("tool", str(tool.get("type")), path)
            if key not in taken:
                taken.add(key)
                loaded.append(tool)
        namespace = namespaces.get(path)
        if namespace is not None:
            found = True
            for member in namespace["tools"]:
                load_member(namespace, member)
        head, dot, tail = path.partition(".")
        if dot and head in namespaces:
            members = [m for m in namespaces[head]["tools"] if m.get("name") == tail]
            for member in members:
                found = True
                load_member(namespaces[head], member)
        if not found:
            (withheld if path in secret else unknown).append(path)
    return Loaded(loaded, unknown, withheld)


def paths_of(tool: Mapping[str, Any], declared: Sequence[Mapping[str, Any]]) -> list[str]:
    """The paths that load ``tool``, a declaration a search handler returned: one the request
    declared as deferred (a namespace: with deferred tools of that namespace, as declared).

    :raises ValueError: ``tool`` is no deferred declaration of the request (a search loads
        only what the request declares, so that every call of a loaded tool has its
        declaration, and its handler, in the request).
    """
    deferred = deferred_tools(declared)
    if tool.get("type") == "namespace":
        name = tool.get("name")
        home = next(
            (t for t in deferred if t.get("type") == "namespace" and t["name"] == name), None
        )
        members = tool.get("tools")
        if (
            home is not None
            and tool.get("description") == home.get("description")
            and isinstance(members, list)
            and members
            and all(member in home["tools"] for member in members)
        ):
            return [f"{name}.{member.get('name')}" for member in members]
    elif tool in deferred:
        return [_path_of(tool)]
    shown = tool.get("name") or tool.get("server_label") or tool.get("type")
    if _credentialed(tool) and any(dict(t) == tool for t in declared):
        raise ValueError(
            f"{shown!r} is declared with credentials (headers or authorization), which a "
            "client search never loads: its answer is stored in the thread"
        )
    raise ValueError(
        f"{shown!r} is no deferred tool the request declares, as declared (a search loads only "
        "those)"
    )


def loaded_names(tools: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """What an answer's ``tools`` declare, by name: ``namespace.tool`` for the tools of a
    namespace, an MCP server by its label, any other tool by its name."""
    names: list[str] = []
    for tool in tools:
        if tool.get("type") == "namespace":
            names += [f"{tool.get('name')}.{member.get('name')}" for member in tool["tools"]]
        else:
            names.append(_path_of(tool))
    return tuple(names)


def output_item(call_id: str | None, tools: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The ``tool_search_output`` that answers the client-executed search ``call_id`` with
    ``tools`` (declarations as the API takes them). No ``id``: the client does not mint
    the API's ids."""
    return {
        "type": SEARCH_OUTPUT,
        "call_id": call_id,
        "execution": "client",
        "status": "completed",
        "tools": [dict(tool) for tool in tools],
    }


def output_record(
    thread: Thread, call: HostedItem, tools: Sequence[Mapping[str, Any]]
) -> HostedItem:
    """The record of the answer to the search ``call`` (a hosted item of ``thread``): dated
    as the response that made the call (its ``created_at``), after every record of that
    instant. So it sorts right after that response, before anything recorded later (a
    question added after a ``--once`` run included), and it goes with the response's items:
    when the response's reasoning is not sent and its call goes as text, so does its answer.
    Not sealed: the caller seals what it records."""
    digest = hashlib.sha256(call.id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    stamp = call.created_at
    records: tuple[Message | Thought | ToolCall | HostedItem, ...] = (
        *thread.messages,
        *thread.thoughts,
        *thread.tool_calls,
        *thread.hosted_items,
    )
    seq = 1 + max(record.seq for record in records if record.created_at == stamp)
    return HostedItem(
        id=f"tsoc_{digest}",
        type=SEARCH_OUTPUT,
        item=output_item(call.item.get("call_id"), tools),
        created_at=stamp,
        seq=seq,
    )


def waiting_searches(items: Sequence[HostedItem], start: int = 0) -> list[int]:
    """The indexes of the client-executed ``tool_search_call`` items among ``items[start:]``
    that no client-executed ``tool_search_output`` of ``items`` answers (by ``call_id``), in
    order."""
    answered = {
        record.item.get("call_id")
        for record in items
        if record.type == SEARCH_OUTPUT and client_executed(record.item)
    }
    return [
        index
        for index in range(start, len(items))
        if items[index].type == SEARCH_CALL
        and client_executed(items[index].item)
        and items[index].item.get("call_id") not in answered
    ]
