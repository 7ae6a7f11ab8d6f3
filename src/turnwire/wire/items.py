"""Input items of the Responses wire: the elements of a request's ``input`` array.

Every item is tagged with its ``type`` literal, ``InputMessage`` included (``"type":
"message"``: OpenAI's schema allows it on the "easy" message and the Open Responses
specification requires it). A tool call and its output are two sibling items.

``InputMessage`` and ``OutputMessage`` share the tag ``message``: these types are encoded,
never decoded as one union.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any, Literal, NoReturn

import msgspec

from turnwire.wire.content import (
    InputContent,
    OutputText,
    ReasoningText,
    Refusal,
    SummaryText,
    WireStruct,
)

__all__ = [
    "ApplyPatchCall",
    "ApplyPatchCallOutput",
    "ClientCall",
    "ClientCallOutput",
    "ComputerCall",
    "ComputerCallOutput",
    "ComputerScreenshot",
    "CustomToolCall",
    "CustomToolCallOutput",
    "FrozenDict",
    "FrozenList",
    "FunctionCall",
    "FunctionCallOutput",
    "HostedInputItem",
    "InputItem",
    "InputMessage",
    "LocalShellAction",
    "LocalShellCall",
    "LocalShellCallOutput",
    "OutputMessage",
    "PatchOperation",
    "ProgramCaller",
    "ReasoningItem",
    "SafetyCheck",
    "ShellCall",
    "ShellCallAction",
    "ShellCallOutput",
    "ShellCommandResult",
    "ShellExit",
    "ShellTimeout",
    "frozen_tree",
]


class InputMessage(WireStruct, frozen=True, kw_only=True, tag="message"):
    """A message with a role and either string content or content blocks."""

    role: Literal["user", "assistant", "system", "developer"]
    content: str | tuple[InputContent, ...]
    phase: str | None = None


class OutputMessage(WireStruct, frozen=True, kw_only=True, tag="message"):
    """An assistant message replayed in the shape the API produced it, with its ``msg_`` id."""

    role: Literal["assistant"]
    status: Literal["completed", "in_progress", "incomplete"]
    id: str
    content: tuple[OutputText | Refusal, ...]
    phase: str | None = None


class ProgramCaller(WireStruct, frozen=True, kw_only=True, tag="program"):
    """Who made a call that a program made (programmatic tool calling): the ``call_id`` of
    the ``program`` item. A call the model made directly carries no caller."""

    caller_id: str


class FunctionCall(WireStruct, frozen=True, kw_only=True, tag="function_call"):
    """A call the model made; ``id`` (``fc_...``) is sent only when its reasoning precedes it."""

    call_id: str
    name: str
    arguments: str
    id: str | None = None
    caller: ProgramCaller | None = None
    namespace: str | None = None


class FunctionCallOutput(WireStruct, frozen=True, kw_only=True, tag="function_call_output"):
    """The result of a call, as text or content blocks; a program's call is answered with
    its ``caller`` too."""

    call_id: str
    output: str | tuple[InputContent, ...]
    caller: ProgramCaller | None = None


class CustomToolCall(WireStruct, frozen=True, kw_only=True, tag="custom_tool_call"):
    """A custom tool's call: its freeform ``input``; ``id`` as a function call's."""

    call_id: str
    name: str
    input: str
    id: str | None = None
    caller: ProgramCaller | None = None
    namespace: str | None = None


class CustomToolCallOutput(WireStruct, frozen=True, kw_only=True, tag="custom_tool_call_output"):
    """The answer to a custom tool's call, as text or content blocks."""

    call_id: str
    output: str | tuple[InputContent, ...]
    caller: ProgramCaller | None = None


class ShellCallAction(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    """The commands a ``shell_call`` asks for, with its limits."""

    commands: tuple[str, ...]
    timeout_ms: int | None = None
    max_output_length: int | None = None


class ShellCall(WireStruct, frozen=True, kw_only=True, tag="shell_call"):
    """A shell call: the commands to run."""

    call_id: str
    action: ShellCallAction
    id: str | None = None
    status: Literal["in_progress", "completed", "incomplete"] | None = None
    caller: ProgramCaller | None = None


class ShellExit(WireStruct, frozen=True, kw_only=True, tag="exit"):
    """A command that ended, with its exit code."""

    exit_code: int


class ShellTimeout(WireStruct, frozen=True, kw_only=True, tag="timeout"):
    """A command that ran past its time limit."""


class ShellCommandResult(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """What one command of a shell call printed, and how it ended."""

    stdout: str
    stderr: str
    outcome: ShellExit | ShellTimeout


class ShellCallOutput(WireStruct, frozen=True, kw_only=True, tag="shell_call_output"):
    """The answer to a shell call: one result per command."""

    call_id: str
    output: tuple[ShellCommandResult, ...]
    max_output_length: int | None = None
    caller: ProgramCaller | None = None


class LocalShellAction(WireStruct, frozen=True, kw_only=True, tag="exec"):
    """The one command of a local shell call (its argv), its environment and where to run."""

    command: tuple[str, ...]
    env: dict[str, str]
    timeout_ms: int | None = None
    user: str | None = None
    working_directory: str | None = None


class LocalShellCall(WireStruct, frozen=True, kw_only=True, tag="local_shell_call"):
    """A local shell call (``id`` is required by its input shape)."""

    id: str
    call_id: str
    action: LocalShellAction
    status: Literal["in_progress", "completed", "incomplete"]


class LocalShellCallOutput(WireStruct, frozen=True, kw_only=True, tag="local_shell_call_output"):
    """The answer to a local shell call; ``id`` is the call's ``call_id``."""

    id: str
    output: str


class PatchOperation(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    """What an ``apply_patch_call`` asks: create, update or delete the file at ``path``."""

    type: Literal["create_file", "update_file", "delete_file"]
    path: str
    diff: str | None = None


class ApplyPatchCall(WireStruct, frozen=True, kw_only=True, tag="apply_patch_call"):
    """A call to apply one patch operation."""

    call_id: str
    operation: PatchOperation
    status: Literal["in_progress", "completed"]
    id: str | None = None
    caller: ProgramCaller | None = None


class ApplyPatchCallOutput(WireStruct, frozen=True, kw_only=True, tag="apply_patch_call_output"):
    """Whether the patch was applied (``completed``) or not (``failed``), with a log text."""

    call_id: str
    status: Literal["completed", "failed"]
    output: str | None = None
    caller: ProgramCaller | None = None


class SafetyCheck(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    """A safety check the API raised on a computer call."""

    id: str
    code: str | None = None
    message: str | None = None


class ComputerCall(WireStruct, frozen=True, kw_only=True, tag="computer_call"):
    """A computer call: one ``action`` or a batch of ``actions`` (``id`` is required by its
    input shape)."""

    id: str
    call_id: str
    pending_safety_checks: tuple[SafetyCheck, ...]
    status: Literal["in_progress", "completed", "incomplete"]
    action: dict[str, Any] | None = None
    actions: tuple[dict[str, Any], ...] | None = None


class ComputerScreenshot(WireStruct, frozen=True, kw_only=True, tag="computer_screenshot"):
    """A screenshot answering a computer call, by data URL or URL, or by uploaded file."""

    image_url: str | None = None
    file_id: str | None = None


class ComputerCallOutput(WireStruct, frozen=True, kw_only=True, tag="computer_call_output"):
    """The screenshot after a computer call's actions, and the safety checks the deployer's
    handler acknowledged (only those)."""

    call_id: str
    output: ComputerScreenshot
    acknowledged_safety_checks: tuple[SafetyCheck, ...] | None = None


ClientCall = CustomToolCall | ShellCall | LocalShellCall | ApplyPatchCall | ComputerCall
"""A call of a client-executed tool, replayed."""

ClientCallOutput = (
    CustomToolCallOutput
    | ShellCallOutput
    | LocalShellCallOutput
    | ApplyPatchCallOutput
    | ComputerCallOutput
)
"""The answer to a call of a client-executed tool."""


class ReasoningItem(WireStruct, frozen=True, kw_only=True, tag="reasoning"):
    """A reasoning item replayed with its ``encrypted_content`` (``store: false``)."""

    summary: tuple[SummaryText, ...]
    id: str | None = None
    content: tuple[ReasoningText, ...] | None = None
    encrypted_content: str | None = None


def _read_only(self: object, *args: object, **kwargs: object) -> NoReturn:
    raise TypeError(f"a {type(self).__name__} is read-only")


class FrozenList(list[Any]):
    """A list that refuses to change: a nested array of a :class:`HostedInputItem`.

    It is a ``list`` (it compares equal to one and encodes as a JSON array). Its elements are
    set when it is made; every method of its own refuses a change after (``__init__`` called
    again too). This guards against a mistake, not against code set on a change: ``list``'s
    methods called on it directly (``list.append(value, x)``) still work. A copy made with
    :func:`copy.deepcopy` or :mod:`pickle` is a plain, mutable ``list`` of plain values;
    :func:`copy.copy` makes the top level plain only.
    """

    __slots__ = ("_made",)
    _made: bool

    def __new__(cls, values: Iterable[Any] = ()) -> FrozenList:
        made = super().__new__(cls)
        list.extend(made, values)
        made._made = False
        return made

    def __init__(self, values: Iterable[Any] = ()) -> None:
        # list.__init__ would empty the list: filled in __new__, refused when called again
        if self._made:
            _read_only(self)
        self._made = True

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _read_only
    append = extend = insert = pop = remove = clear = sort = reverse = _read_only

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (list(self),))

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return copy.deepcopy(list(self), memo)


class FrozenDict(dict[str, Any]):
    """A dict that refuses to change: a nested object of a :class:`HostedInputItem`.

    It is a ``dict`` (it compares equal to one and encodes as a JSON object, in its order).
    Its entries are set when it is made; every method of its own refuses a change after, as a
    :class:`FrozenList`'s do (with the same limit). A copy made with :func:`copy.deepcopy` or
    :mod:`pickle` is a plain, mutable ``dict`` of plain values; :func:`copy.copy` makes the top
    level plain only.
    """

    __slots__ = ("_made",)
    _made: bool

    def __new__(cls, fields: Mapping[str, Any] | None = None, /, **entries: Any) -> Any:
        made = super().__new__(cls)
        dict.update(made, fields or {}, **entries)
        made._made = False
        return made

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if self._made:
            _read_only(self)
        self._made = True

    __setitem__ = __delitem__ = __ior__ = _read_only
    clear = pop = popitem = setdefault = update = _read_only

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (dict(self),))

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return copy.deepcopy(dict(self), memo)


def frozen_tree(value: Any) -> Any:
    """``value`` with every list (or tuple) and dict in it copied as a :class:`FrozenList` or
    :class:`FrozenDict`: JSON values no one can change in place, the same on the wire."""
    if isinstance(value, dict):
        return FrozenDict({key: frozen_tree(item) for key, item in value.items()})
    if isinstance(value, list | tuple):
        return FrozenList([frozen_tree(item) for item in value])
    return value


class HostedInputItem(FrozenDict):
    """A hosted item (web search, code interpreter, MCP, compaction ...) replayed as the API
    emitted it, restricted to the fields its input shape allows (see :mod:`turnwire.model.hosted`).

    It encodes as the mapping itself, in the emitted field order. It is read-only, nested
    values too (copied as :class:`FrozenDict` and :class:`FrozenList`, so the record it came
    from is not shared either): it is shared between renders and its bytes feed the prefix
    fingerprint. ``unpaired`` is what is sent in its place when a reasoning item of its
    response came before it and that reasoning is not sent (the API refuses such an item
    without its reasoning); ``None``: nothing is sent then. ``recorded`` is the
    ``(created_at, seq)`` of the record it renders, set by the pipeline. Copies are as a
    :class:`FrozenDict`'s: plain all the way down from :func:`copy.deepcopy` and
    :mod:`pickle`, plain at the top only from :func:`copy.copy`.
    """

    __slots__ = ("recorded", "unpaired")

    def __new__(cls, fields: Mapping[str, Any], unpaired: InputItem | None = None) -> Any:
        return super().__new__(cls, {key: frozen_tree(value) for key, value in fields.items()})

    def __init__(self, fields: Mapping[str, Any], unpaired: InputItem | None = None) -> None:
        super().__init__()  # refused when called again
        self.unpaired = unpaired
        self.recorded: tuple[Any, int] | None = None

    @property
    def type(self) -> str:
        return str(self["type"])

    @property
    def id(self) -> str | None:
        value = self.get("id")
        return value if isinstance(value, str) else None

    def __repr__(self) -> str:
        return f"HostedInputItem(type={self.get('type')!r}, id={self.get('id')!r})"


InputItem = (
    InputMessage
    | OutputMessage
    | FunctionCall
    | FunctionCallOutput
    | ReasoningItem
    | HostedInputItem
    | CustomToolCall
    | CustomToolCallOutput
    | ShellCall
    | ShellCallOutput
    | LocalShellCall
    | LocalShellCallOutput
    | ApplyPatchCall
    | ApplyPatchCallOutput
    | ComputerCall
    | ComputerCallOutput
)
