"""The preflight check: the rules a request body must meet before it is sent, each named.

Every rule is one the API enforces with a 400 (the recorded rejections in the conformance data
show their wording); :data:`PREFLIGHT_RULES` names them. :func:`preflight` checks a whole body;
the body memo (:func:`turnwire.rendering.body.checked_body`) checks only what a grown body
added, through the same rules, with a fast pass over the items that need no rule.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from turnwire.errors import PreflightError
from turnwire.model.tool_search import client_executed
from turnwire.wire import (
    FunctionCall,
    FunctionCallOutput,
    HostedInputItem,
    InputMessage,
    InputText,
    OutputMessage,
    ReasoningItem,
    RequestBody,
)
from turnwire.wire.items import (
    ApplyPatchCall,
    ApplyPatchCallOutput,
    ComputerCall,
    ComputerCallOutput,
    CustomToolCall,
    CustomToolCallOutput,
    LocalShellCall,
    LocalShellCallOutput,
    ShellCall,
    ShellCallOutput,
)
from turnwire.wire.tools import DEFERRABLE_TYPES

__all__ = ["ID_PREFIXES", "MAX_CALL_ID", "PREFLIGHT_RULES", "preflight"]

MAX_CALL_ID = 64
"""The longest ``call_id`` the API takes (the ``call-id-length`` rule)."""

PREFLIGHT_RULES: dict[str, str] = {
    "non-empty-input": "input must hold at least one item",
    "max-output-tokens": "max_output_tokens must be at least 16",
    "reasoning-partner": "a reasoning item must be followed by the output item it produced, "
    "carrying that item's id",
    "reasoning-encrypted": "under store: false a reasoning item must carry encrypted_content",
    "item-id-prefix": "item ids must start with the prefix of their type (msg_, fc_, rs_)",
    "call-id-length": f"call_id must be at most {MAX_CALL_ID} characters",
    "call-output-pairing": "every function_call_output needs an earlier function_call with its "
    "call_id, and every function_call needs its output",
    "duplicate-id": "an item id or a function_call call_id appears twice",
    "assistant-input-text": "assistant-role messages take output_text parts or string content, "
    "never input_text",
    "json-object-needs-json": "text.format json_object needs the word 'json' in the input",
    "programmatic-tools": "a function that only a program may call, and a tool_choice that "
    "forces a program, need the programmatic_tool_calling tool, which needs a function a "
    "program may call",
    "custom-call-pairing": "every custom_tool_call_output needs an earlier custom_tool_call "
    "with its call_id, and every custom_tool_call needs its output",
    "shell-call-pairing": "every shell_call_output needs an earlier shell_call with its "
    "call_id, and every shell_call needs its output",
    "local-shell-call-pairing": "every local_shell_call_output needs an earlier "
    "local_shell_call whose call_id is its id, and every local_shell_call needs its output",
    "apply-patch-call-pairing": "every apply_patch_call_output needs an earlier "
    "apply_patch_call with its call_id, and every apply_patch_call needs its output",
    "computer-call-pairing": "every computer_call_output needs an earlier computer_call with "
    "its call_id, and every computer_call needs its output",
    "tool-search-pairing": "a client-executed tool search (execution: client) is answered by "
    "the client: every such tool_search_output needs an earlier tool_search_call with its "
    "call_id, and every such tool_search_call needs its output",
    "unique-tool-names": "a tool name (a function's or a custom tool's) is declared once, and "
    "so is each tool type declared without a name (shell, apply_patch, computer, tool_search "
    "...), each namespace's name, and each tool name inside one namespace",
    "tool-choice-declared": "a tool_choice that names a tool other than a function (allowed_tools "
    "entries, a custom tool, an MCP server, shell, apply_patch, a built-in tool type) names "
    "one the request declares",
    "tool-search-needs-deferred": "the tool_search tool needs at least one deferred tool: a "
    "function, custom tool or MCP server with defer_loading: true, or a namespace holding a "
    "deferred function or custom tool",
    "deferred-needs-tool-search": "a deferred tool (defer_loading: true, on a function, a "
    "custom tool, an MCP server or a tool inside a namespace) needs the tool_search tool",
    "compaction-trigger-last": "a compaction_trigger item is the last input item",
    "namespaced-call": "a function or custom tool call of a tool declared only inside a "
    "namespace carries that namespace (the model's call sent back as it came)",
}

# The client-executed calls: call type → (output type, rule). Their call ids are kept in the
# rules' state as ``type:call_id``, so an output pairs only with a call of its own type (a
# function call's is kept bare).
_CLIENT_PAIRS: dict[str, tuple[str, str]] = {
    "custom_tool_call": ("custom_tool_call_output", "custom-call-pairing"),
    "shell_call": ("shell_call_output", "shell-call-pairing"),
    "local_shell_call": ("local_shell_call_output", "local-shell-call-pairing"),
    "apply_patch_call": ("apply_patch_call_output", "apply-patch-call-pairing"),
    "computer_call": ("computer_call_output", "computer-call-pairing"),
    "tool_search_call": ("tool_search_output", "tool-search-pairing"),
}


_CLIENT_OUTPUTS: dict[str, str] = {output: call for call, (output, _) in _CLIENT_PAIRS.items()}

# A tool search pairs only when the client runs it (``execution: client``).
_SEARCH_TYPES = frozenset({"tool_search_call", "tool_search_output"})


def _keyed(kind: str, call_id: Any) -> str | None:
    """The rules' key of a client-executed call or output's ``call_id`` (``None`` stays)."""
    if call_id is None:
        return None
    return f"{_CLIENT_OUTPUTS.get(kind, kind)}:{call_id}"


def _unkeyed(key: str) -> tuple[str | None, str]:
    """``(call type, call_id)`` of a rules' key; a function call's type is ``None``."""
    head, sep, tail = key.partition(":")
    if sep and head in _CLIENT_PAIRS:
        return head, tail
    return None, key


ID_PREFIXES = {"function_call": "fc_", "reasoning": "rs_", "message": "msg_"}
"""The prefix an item id of each type must start with (the ``item-id-prefix`` rule)."""


_PASSIVE_TYPES = {"reasoning", "function_call_output", "item_reference"}


# The item types the per-item rules treat by name (beyond the id rules every item has).
_CHECKED_TYPES = {*ID_PREFIXES, "function_call_output", "compaction_trigger"}


def _fail(rule: str, detail: str, index: int | None = None) -> PreflightError:
    where = "body" if index is None else f"input[{index}]"
    return PreflightError(
        f"{where}: {detail} (rule {rule}: {PREFLIGHT_RULES[rule]})", rule=rule, index=index
    )


# What the rules need to know about one input item, whatever its representation: a plain
# tuple (cheaper than a NamedTuple on the hot path) of
# (kind, item_id, call_id, assistant_input_text, has_encrypted_content).
_Facts = tuple[str, str | None, str | None, bool, bool]


def _input_message_facts(item: InputMessage) -> _Facts:
    content = item.content
    bad = (
        item.role == "assistant"
        and not isinstance(content, str)
        and any(isinstance(part, InputText) for part in content)
    )
    return ("message", None, None, bad, False)


_STRUCT_FACTS: dict[type, Callable[[Any], _Facts]] = {
    InputMessage: _input_message_facts,
    OutputMessage: lambda item: ("message", item.id, None, False, False),
    FunctionCall: lambda item: ("function_call", item.id, item.call_id, False, False),
    FunctionCallOutput: lambda item: ("function_call_output", None, item.call_id, False, False),
    ReasoningItem: lambda item: ("reasoning", item.id, None, False, bool(item.encrypted_content)),
    CustomToolCall: lambda item: (
        "custom_tool_call",
        item.id,
        _keyed("custom_tool_call", item.call_id),
        False,
        False,
    ),
    ShellCall: lambda item: (
        "shell_call",
        item.id,
        _keyed("shell_call", item.call_id),
        False,
        False,
    ),
    LocalShellCall: lambda item: (
        "local_shell_call",
        item.id,
        _keyed("local_shell_call", item.call_id),
        False,
        False,
    ),
    ApplyPatchCall: lambda item: (
        "apply_patch_call",
        item.id,
        _keyed("apply_patch_call", item.call_id),
        False,
        False,
    ),
    ComputerCall: lambda item: (
        "computer_call",
        item.id,
        _keyed("computer_call", item.call_id),
        False,
        False,
    ),
    CustomToolCallOutput: lambda item: (
        "custom_tool_call_output",
        None,
        _keyed("custom_tool_call_output", item.call_id),
        False,
        False,
    ),
    ShellCallOutput: lambda item: (
        "shell_call_output",
        None,
        _keyed("shell_call_output", item.call_id),
        False,
        False,
    ),
    LocalShellCallOutput: lambda item: (  # its ``id`` is the call's call_id
        "local_shell_call_output",
        None,
        _keyed("local_shell_call_output", item.id),
        False,
        False,
    ),
    ApplyPatchCallOutput: lambda item: (
        "apply_patch_call_output",
        None,
        _keyed("apply_patch_call_output", item.call_id),
        False,
        False,
    ),
    ComputerCallOutput: lambda item: (
        "computer_call_output",
        None,
        _keyed("computer_call_output", item.call_id),
        False,
        False,
    ),
}


_PLAIN_MESSAGE: _Facts = ("message", None, None, False, False)


def _facts_of(items: Sequence[Any]) -> list[_Facts]:
    """:func:`_struct_facts` of each item, the common types inline."""
    facts: list[_Facts] = []
    append = facts.append
    for item in items:
        kind = type(item)
        if kind is FunctionCallOutput:
            append(("function_call_output", None, item.call_id, False, False))
        elif kind is FunctionCall:
            append(("function_call", item.id, item.call_id, False, False))
        elif kind is OutputMessage:
            append(("message", item.id, None, False, False))
        elif kind is InputMessage and (item.role != "assistant" or type(item.content) is str):
            append(_PLAIN_MESSAGE)
        elif kind is ReasoningItem:
            append(("reasoning", item.id, None, False, bool(item.encrypted_content)))
        else:
            append(_struct_facts(item))
    return facts


# A stand-in for facts the fast pass (:func:`_fast_state`) did not write down: the facts of the
# item at that index are taken from the item itself when the warm path needs them. Compared by
# identity; no other facts tuple is this object.
_UNREAD: _Facts = ("unread", None, None, False, False)


def _item_facts(facts: list[_Facts], items: Sequence[Any], index: int) -> _Facts:
    """``facts[index]``, taken from ``items[index]`` (and kept) when it is :data:`_UNREAD`."""
    fact = facts[index]
    if fact is _UNREAD:
        fact = facts[index] = _facts_of((items[index],))[0]
    return fact


def _struct_facts(item: object) -> _Facts:
    extract = _STRUCT_FACTS.get(type(item))
    if extract is not None:
        return extract(item)
    return (str(getattr(item, "type", "unknown")), getattr(item, "id", None), None, False, False)


_Fast = tuple[dict[str, int], dict[str, int], dict[str, int]]


def _fast_state(items: Sequence[Any], *, stateless: bool) -> _Fast | None:
    """The ``seen_ids``, ``calls`` and ``answered`` the exact loop (:func:`_facts_of`,
    :func:`_check_from`, :func:`_check_answered`) leaves after ``items``, when it is certain
    that the loop raises nothing; ``None`` otherwise.

    One pass that builds the three dictionaries and no facts tuples. The rules that depend on
    order (a reasoning item's partner, a call before its output) are checked on the way, the
    others in bulk at the end: a dictionary smaller than the ids put into it holds a duplicate,
    and two counts over the joined ids of a type check their prefix. It only answers whether
    every rule holds; ``None`` (a rule may fail, an item of another type, a value of an
    unexpected type) sends the body to the exact loop, which finds and reports the first
    violation. Whatever the answer, the errors are the exact loop's.
    """
    try:
        return _fast_pass(items, stateless=stateless)
    except Exception:  # a value of an unexpected type (unhashable, say): the exact loop decides
        return None


def _fast_pass(items: Sequence[Any], *, stateless: bool) -> _Fast | None:
    """:func:`_fast_state`, raising what a value of an unexpected type raises."""
    seen_ids: dict[str, int] = {}
    calls: dict[str, int] = {}
    answered: dict[str, int] = {}
    message_ids: list[str] = []
    call_item_ids: list[str] = []
    reasoning_ids: list[str] = []
    hosted_ids: list[str] = []
    call_count = 0
    partnered = False  # the item before is a reasoning item: this one must carry an id
    # Local names: a global or builtin read per item would cost as much as a rule.
    input_message, output_message, hosted_item = InputMessage, OutputMessage, HostedInputItem
    call, output, reasoning = FunctionCall, FunctionCallOutput, ReasoningItem
    string, type_of, passive = str, type, _PASSIVE_TYPES
    for index, item in enumerate(items):
        kind = type_of(item)  # exact types, as in _facts_of; by frequency
        if kind is input_message:
            if partnered or (
                item.role == "assistant"  # read first, as in _facts_of: content is read less
                and type_of(item.content) is not string
                and _input_message_facts(item)[3]
            ):
                return None
            continue
        if kind is output:
            call_id = item.call_id
            if partnered or type_of(call_id) is not string or call_id not in calls:
                return None  # (not yet called: the loop says which rule)
            if call_id not in answered:
                answered[call_id] = index
            continue
        # The kinds with an id: what each rule of its own asks, then the id rules they share.
        if kind is call:
            call_id = item.call_id
            # (the loop reads None as "")
            if type_of(call_id) is not string or len(call_id) > MAX_CALL_ID:
                return None
            calls[call_id] = index
            call_count += 1
            ids = call_item_ids
        elif kind is reasoning:
            if partnered or (stateless and not item.encrypted_content):
                return None
            ids = reasoning_ids
        elif kind is output_message:
            ids = message_ids
        elif kind is hosted_item:
            # The rules of that type would apply (a client-run search pairs): the loop.
            if item.type in _CHECKED_TYPES or client_executed(item):
                return None
            ids = hosted_ids
        else:
            return None
        item_id = item.id
        if type_of(item_id) is string:
            seen_ids[item_id] = index
            ids.append(item_id)
        elif item_id is not None:
            return None
        if kind is reasoning:
            partnered = True
        elif partnered:
            if not item_id or (kind is hosted_item and item.type in passive):
                return None
            partnered = False
    named = len(message_ids) + len(call_item_ids) + len(reasoning_ids) + len(hosted_ids)
    if partnered or len(seen_ids) != named:
        return None  # the last item is a reasoning item, or an id is used twice
    if not (
        _all_prefixed(message_ids, ID_PREFIXES["message"])
        and _all_prefixed(call_item_ids, ID_PREFIXES["function_call"])
        and _all_prefixed(reasoning_ids, ID_PREFIXES["reasoning"])
    ):
        return None
    # Call ids: unique. Each output's call id is one of them, and every call is answered
    # (answered ⊆ calls).
    if len(calls) != call_count or len(answered) != call_count:
        return None
    return seen_ids, calls, answered


def _all_prefixed(ids: list[str], prefix: str) -> bool:
    """Whether every one of ``ids`` starts with ``prefix``, in two counts over their join.

    An id holding a NUL answers ``False`` (a doubt, not a verdict).
    """
    if not ids:
        return True
    joined = "\0".join(ids)
    gaps = len(ids) - 1
    return (
        joined.startswith(prefix)
        and joined.count("\0") == gaps
        and joined.count("\0" + prefix) == gaps
    )


def _mapping_facts(item: Mapping[str, Any]) -> _Facts:
    kind = item.get("type", "message")
    content = item.get("content")
    bad = (
        kind == "message"
        and item.get("role") == "assistant"
        and isinstance(content, Sequence)
        and not isinstance(content, str)
        and any(isinstance(part, Mapping) and part.get("type") == "input_text" for part in content)
    )
    call_id = item.get("call_id")
    item_id = item.get("id")
    key = None if call_id is None else str(call_id)
    if kind == "local_shell_call_output":  # its ``id`` is the call's call_id
        key, item_id = _keyed(kind, None if item_id is None else str(item_id)), None
    elif kind in _SEARCH_TYPES and not client_executed(item):
        # The API ran the search and answered it itself: no pairing rule of the client's.
        kind = f"{kind} (server)"
    elif kind in _CLIENT_PAIRS or kind in _CLIENT_OUTPUTS:
        key = _keyed(kind, key)
    return (kind, item_id, key, bad, bool(item.get("encrypted_content")))


def _hosted_facts(item: HostedInputItem) -> _Facts:
    """A replayed hosted item's facts: its type and id (as the fast pass reads them), and the
    pairing key of a tool search the client runs (a server-run one pairs with nothing of the
    client's, so its kind is told apart)."""
    kind = item.type
    if kind not in _SEARCH_TYPES:
        return (kind, item.id, None, False, False)
    if not client_executed(item):
        return (f"{kind} (server)", item.id, None, False, False)
    call_id = item.get("call_id")
    return (kind, item.id, _keyed(kind, None if call_id is None else str(call_id)), False, False)


_STRUCT_FACTS[HostedInputItem] = _hosted_facts


def _text_of(item: Any) -> str:
    content = item.get("content") if isinstance(item, Mapping) else getattr(item, "content", None)
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        texts = (
            part.get("text", "") if isinstance(part, Mapping) else getattr(part, "text", "")
            for part in content
        )
        return " ".join(t for t in texts if isinstance(t, str))
    return ""


_PROGRAMMATIC = "programmatic_tool_calling"


def _check_programmatic(tools: Sequence[Any] | None, tool_choice: Any) -> None:
    """The ``programmatic-tools`` rule over a body's ``tools`` and ``tool_choice`` (Structs
    or decoded JSON)."""
    field, kind = _field_of, _kind_of
    _check_tool_names(tools, field, kind)
    _check_tool_choice(tools, tool_choice, field, kind)
    _check_tool_search(tools, field, kind)
    declared = any(kind(tool) == _PROGRAMMATIC for tool in tools or ())
    eligible = only = None
    for tool in _with_namespaced(tools, field, kind):
        callers = field(tool, "allowed_callers")
        if kind(tool) != "function" or not isinstance(callers, Sequence):
            continue
        if "programmatic" in callers:
            eligible = eligible or field(tool, "name")
            if "direct" not in callers:
                only = only or field(tool, "name")
    if not declared and only is not None:
        raise _fail(
            "programmatic-tools",
            f"function {only!r} may be called by a program only, and no "
            "programmatic_tool_calling tool is declared",
        )
    if not declared and kind(tool_choice) == _PROGRAMMATIC:
        raise _fail(
            "programmatic-tools",
            "tool_choice forces a program, and no programmatic_tool_calling tool is declared",
        )
    if declared and eligible is None:
        raise _fail(
            "programmatic-tools",
            "the programmatic_tool_calling tool is declared, and no function lists "
            "programmatic in its allowed_callers",
        )


# A tool_choice type → the declared tool type(s) it may name (a computer tool answers to the
# three spellings the API's types carry; a preview web search to the dated one too).
_CHOICE_TYPES: dict[str, frozenset[str]] = {
    "computer": frozenset({"computer", "computer_use_preview"}),
    "computer_use": frozenset({"computer", "computer_use_preview"}),
    "computer_use_preview": frozenset({"computer", "computer_use_preview"}),
    "web_search_preview": frozenset(
        {"web_search", "web_search_preview", "web_search_preview_2025_03_11"}
    ),
    "web_search_preview_2025_03_11": frozenset(
        {"web_search", "web_search_preview", "web_search_preview_2025_03_11"}
    ),
}
# What names a declared tool of a type, besides the type itself.
_NAMED_BY = {"function": "name", "custom": "name", "mcp": "server_label"}


def _check_tool_choice(
    tools: Sequence[Any] | None, tool_choice: Any, field: Any, kind: Any
) -> None:
    """The ``tool-choice-declared`` rule: every tool a ``tool_choice`` names (an
    ``allowed_tools`` entry, a custom tool, an MCP server, a tool type) is declared. A forced
    function is the client's ``tool-choice-unavailable`` check (``client.strict_tool_choice``)."""
    chosen = kind(tool_choice)
    if chosen is None or chosen in {"function", _PROGRAMMATIC}:
        return
    if chosen == "allowed_tools":
        entries = field(tool_choice, "tools")
        wanted = [
            (f"tool_choice.tools[{index}]", entry)
            for index, entry in enumerate(entries if isinstance(entries, Sequence) else ())
        ]
    else:
        wanted = [("tool_choice", tool_choice)]
    declared = [(kind(tool), tool) for tool in tools or ()]
    for where, entry in wanted:
        wanted_kind = kind(entry)
        types = _CHOICE_TYPES.get(wanted_kind, frozenset({wanted_kind}))
        key = _NAMED_BY.get(wanted_kind)
        name = field(entry, key) if key else None
        if any(
            declared_kind in types and (key is None or field(tool, key) == name)
            for declared_kind, tool in declared
        ):
            continue
        shown = f"{wanted_kind} {name!r}" if key else f"the {wanted_kind} tool"
        raise _fail("tool-choice-declared", f"{where} names {shown}, which tools does not declare")


def _field_of(value: Any, name: str) -> Any:
    """``value``'s field ``name``: a decoded JSON object's key or a Struct's attribute."""
    return value.get(name) if isinstance(value, Mapping) else getattr(value, name, None)


def _kind_of(value: Any) -> Any:
    """``value``'s ``type``: a decoded JSON object's, or a Struct's tag (``None`` without)."""
    if isinstance(value, Mapping):
        return value.get("type")
    return getattr(getattr(value, "__struct_config__", None), "tag", None)


def _check_namespaced_calls(tools: Sequence[Any], items: Sequence[Any]) -> None:
    """The ``namespaced-call`` rule: a call of a tool that only a namespace declares (no
    function or custom tool of that name at the top level) names its namespace."""
    top = {_field_of(tool, "name") for tool in tools if _kind_of(tool) in ("function", "custom")}
    inside = {
        _field_of(member, "name")
        for tool in tools
        for member in _members(tool, _field_of, _kind_of)
    }
    only_inside = inside - top
    if not only_inside:
        return
    for index, item in enumerate(items):
        if _kind_of(item) not in ("function_call", "custom_tool_call"):
            continue
        name = _field_of(item, "name")
        if name in only_inside and not _field_of(item, "namespace"):
            raise _fail(
                "namespaced-call",
                f"Missing namespace for function_call {name!r}: it is declared only inside a "
                "namespace",
                index,
            )


def _members(tool: Any, field: Callable[[Any, str], Any], kind: Callable[[Any], Any]) -> list[Any]:
    """The tools inside a ``namespace`` declaration (none for any other tool)."""
    members = field(tool, "tools") if kind(tool) == "namespace" else None
    if isinstance(members, Sequence) and not isinstance(members, str):
        return list(members)
    return []


def _with_namespaced(
    tools: Sequence[Any] | None, field: Callable[[Any, str], Any], kind: Callable[[Any], Any]
) -> list[Any]:
    """``tools`` followed by the tools inside their namespaces."""
    declared = list(tools or ())
    return declared + [member for tool in declared for member in _members(tool, field, kind)]


def _check_tool_search(
    tools: Sequence[Any] | None, field: Callable[[Any, str], Any], kind: Callable[[Any], Any]
) -> None:
    """The ``tool-search-needs-deferred`` and ``deferred-needs-tool-search`` rules: the
    ``tool_search`` tool and the deferred tools (``defer_loading: true`` on a function, a
    custom tool, an MCP server, or a tool inside a namespace) come together."""
    search = deferred = None
    for index, tool in enumerate(tools or ()):
        tag = kind(tool)
        if tag == "tool_search":
            search = f"tools[{index}]" if search is None else search
        elif tag in DEFERRABLE_TYPES and field(tool, "defer_loading") is True:
            deferred = deferred or f"tools[{index}]"
        else:
            for place, member in enumerate(_members(tool, field, kind)):
                if kind(member) in DEFERRABLE_TYPES and field(member, "defer_loading") is True:
                    deferred = deferred or f"tools[{index}].tools[{place}]"
                    break
    if search is not None and deferred is None:
        raise _fail(
            "tool-search-needs-deferred",
            f"{search} declares the tool_search tool, and no tool is declared with "
            "defer_loading: true",
        )
    if deferred is not None and search is None:
        raise _fail(
            "deferred-needs-tool-search",
            f"{deferred} is declared with defer_loading: true, and no tool_search tool is declared",
        )


# The tool types a request declares at most once: those without a name or label of their own.
_UNNAMED_ONCE = frozenset(
    (
        "shell",
        "local_shell",
        "apply_patch",
        "computer",
        "computer_use_preview",
        "web_search",
        "file_search",
        "code_interpreter",
        "image_generation",
        "programmatic_tool_calling",
        "tool_search",
    )
)


def _check_tool_names(
    tools: Sequence[Any] | None,
    field: Callable[[Any, str], Any],
    kind: Callable[[Any], Any],
) -> None:
    """The ``unique-tool-names`` rule over a body's ``tools`` (and inside each namespace)."""
    seen: dict[str, int] = {}
    for index, tool in enumerate(tools or ()):
        tag = kind(tool)
        if tag in ("function", "custom"):
            key = f"name {field(tool, 'name')!r}"
        elif tag in _UNNAMED_ONCE:
            key = f"type {tag}"
        elif tag == "namespace":
            key = f"namespace {field(tool, 'name')!r}"
            inside: dict[str, int] = {}
            for place, member in enumerate(_members(tool, field, kind)):
                name = field(member, "name")
                if not isinstance(name, str):
                    continue
                if name in inside:
                    raise _fail(
                        "unique-tool-names",
                        f"tools[{index}].tools[{place}] declares the tool name {name!r} again "
                        f"in namespace {field(tool, 'name')!r} (tools[{index}].tools"
                        f"[{inside[name]}])",
                    )
                inside[name] = place
        else:
            continue
        if key in seen:
            raise _fail(
                "unique-tool-names",
                f"tools[{index}] declares the tool {key} again (tools[{seen[key]}])",
            )
        seen[key] = index


def preflight(body: RequestBody | Mapping[str, Any]) -> None:
    """Check ``body`` against the wire rules; raise the first violation, in input order.

    ``body`` is either turnwire's own :class:`~turnwire.wire.RequestBody` or any decoded JSON
    body (the rules are the same; recorded real requests are checked this way).
    """
    text_input = False
    passed = False  # the items passed the fast check: every per-item rule holds
    store: object
    max_tokens: object
    tools: Sequence[Any] | None
    tool_choice: Any
    if isinstance(body, RequestBody):
        items: Sequence[Any] = body.input
        passed = _fast_state(items, stateless=body.store is False) is not None
        facts = [] if passed else _facts_of(items)
        max_tokens, store = body.max_output_tokens, body.store
        format_type = body.text.format.get("type") if body.text and body.text.format else None
        tools, tool_choice = body.tools, body.tool_choice
    else:
        raw = body.get("input")
        text_input = isinstance(raw, str) and bool(raw)
        items = [item for item in raw or () if isinstance(item, Mapping)] if not text_input else []
        facts = [_mapping_facts(item) for item in items]
        max_tokens, store = body.get("max_output_tokens"), body.get("store")
        text = body.get("text")
        format_ = text.get("format") if isinstance(text, Mapping) else None
        format_type = format_.get("type") if isinstance(format_, Mapping) else None
        raw_tools = body.get("tools")
        tools = raw_tools if isinstance(raw_tools, list) else None
        tool_choice = body.get("tool_choice")
    if not items and not text_input:
        raise _fail("non-empty-input", "input is empty")
    if isinstance(max_tokens, int) and max_tokens < 16:
        raise _fail("max-output-tokens", f"max_output_tokens is {max_tokens}")
    if not passed:
        _check_items(facts, stateless=store is False)
    _check_programmatic(tools, tool_choice)
    if tools and any(_kind_of(tool) == "namespace" for tool in tools):
        _check_namespaced_calls(tools, items)
    if format_type == "json_object" and not any("json" in _text_of(i).lower() for i in items):
        raise _fail("json-object-needs-json", "no input item mentions JSON")


def _check_items(facts: Sequence[_Facts], *, stateless: bool) -> None:
    calls: dict[str, int] = {}
    answered: dict[str, int] = {}
    _check_from(facts, 0, {}, calls, answered, stateless=stateless)
    _check_answered(calls, answered)


def _check_from(
    facts: Sequence[_Facts],
    start: int,
    seen_ids: dict[str, int],
    calls: dict[str, int],
    answered: dict[str, int],
    *,
    stateless: bool,
) -> None:
    """The per-item rules for ``facts[start:]``, given the state the items before left.

    The state is updated in place: item id → index, ``function_call`` call id → index, call id
    → index of its first output.
    """
    prefixes = ID_PREFIXES
    plain = _PLAIN_MESSAGE
    for index, fact in enumerate(facts[start:], start):
        if fact is plain:  # most messages: no id, no call, nothing to check
            continue
        kind, item_id, fact_call_id, assistant_input_text, encrypted = fact
        if item_id is not None:
            if item_id in seen_ids:
                raise _fail(
                    "duplicate-id",
                    f"id {item_id!r} already used by input[{seen_ids[item_id]}]",
                    index,
                )
            seen_ids[item_id] = index
            prefix = prefixes.get(kind)
            if prefix and not str(item_id).startswith(prefix):
                raise _fail(
                    "item-id-prefix", f"{kind} id {item_id!r} does not start with {prefix}", index
                )
        # The kinds by frequency; only message facts can carry assistant_input_text.
        if kind == "message":
            if assistant_input_text:
                raise _fail("assistant-input-text", "assistant message has input_text parts", index)
        elif kind in {"function_call_output", "function_call"}:
            call_id = fact_call_id or ""
            if len(call_id) > MAX_CALL_ID:
                raise _fail("call-id-length", f"call_id is {len(call_id)} characters", index)
            if kind == "function_call":
                if call_id in calls:
                    raise _fail(
                        "duplicate-id",
                        f"call_id {call_id!r} already used by input[{calls[call_id]}]",
                        index,
                    )
                calls[call_id] = index
            elif call_id not in calls:
                raise _fail(
                    "call-output-pairing",
                    f"function_call_output {call_id!r} has no earlier function_call",
                    index,
                )
            elif call_id not in answered:
                answered[call_id] = index
        elif kind in _CLIENT_PAIRS or kind in _CLIENT_OUTPUTS:
            _check_client(kind, fact_call_id, index, calls, answered)
        elif kind == "compaction_trigger":
            if index != len(facts) - 1:
                raise _fail(
                    "compaction-trigger-last",
                    f"a compaction_trigger is input[{index}] of {len(facts)} items",
                    index,
                )
        elif kind == "reasoning":
            _check_partner(facts, index)
            if stateless and not encrypted:
                raise _fail(
                    "reasoning-encrypted",
                    f"reasoning item {item_id!r} has no encrypted_content",
                    index,
                )
        elif assistant_input_text:
            raise _fail("assistant-input-text", "assistant message has input_text parts", index)


def _check_client(
    kind: str, key: str | None, index: int, calls: dict[str, int], answered: dict[str, int]
) -> None:
    """The pairing rule of a client-executed call or output (``key``: its ``type:call_id``)."""
    call_type = _CLIENT_OUTPUTS.get(kind, kind)
    output_type, rule = _CLIENT_PAIRS[call_type]
    key = key or _keyed(kind, "")
    assert key is not None
    call_id = _unkeyed(key)[1]
    if len(call_id) > MAX_CALL_ID:
        raise _fail("call-id-length", f"call_id is {len(call_id)} characters", index)
    if kind == call_type:
        if key in calls:
            raise _fail(
                "duplicate-id",
                f"{call_type} call_id {call_id!r} already used by input[{calls[key]}]",
                index,
            )
        calls[key] = index
    elif key not in calls:
        raise _fail(rule, f"{output_type} {call_id!r} has no earlier {call_type}", index)
    elif key not in answered:
        answered[key] = index


def _check_partner(facts: Sequence[_Facts], index: int) -> None:
    following = facts[index + 1] if index + 1 < len(facts) else None
    if following is None or not following[1] or following[0] in _PASSIVE_TYPES:
        raise _fail(
            "reasoning-partner",
            f"reasoning item {facts[index][1]!r} is not followed by an output item with an id",
            index,
        )


def _check_answered(calls: dict[str, int], answered: dict[str, int]) -> None:
    if len(answered) == len(calls):  # every output answers a call: answered ⊆ calls
        return
    for key, index in calls.items():
        if key not in answered:
            call_type, call_id = _unkeyed(key)
            if call_type is not None:
                output_type, rule = _CLIENT_PAIRS[call_type]
                raise _fail(rule, f"{call_type} {call_id!r} has no {output_type}", index)
            raise _fail(
                "call-output-pairing",
                f"function_call {call_id!r} has no function_call_output",
                index,
            )
