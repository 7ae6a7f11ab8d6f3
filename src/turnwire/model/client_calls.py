"""Calls of client-executed tools: what the model asked, as the typed input a handler gets, and
what a handler may answer.

A ``custom_tool_call``, ``shell_call``, ``local_shell_call``, ``apply_patch_call`` or
``computer_call`` the client must answer is recorded as a
:class:`~turnwire.model.records.ToolCall` whose ``payload`` is one of the Structs here, tagged
by its ``kind``. The same Struct is the one argument its handler is called with:

- ``custom``: :class:`CustomToolInput` (``input``: the text), registered under the tool's
  ``name``; it returns what a function returns (text, JSON, media, an artifact);
- ``shell``: :class:`ShellAction` (``commands``, ``timeout_ms``, ``max_output_length``),
  registered as ``shell``; it returns a :class:`ShellCommandOutput`, one per command, or text
  (stdout, exit code 0);
- ``local_shell``: :class:`LocalShellAction` (``command``, ``env``, ...), registered as
  ``local_shell``; it returns its output as text;
- ``apply_patch``: :class:`PatchOperation` (``operation``, ``path``, ``diff``), registered as
  ``apply_patch``; it returns a :class:`PatchResult`, or a log text (the patch applied);
- ``computer``: :class:`ComputerAction` (``actions``, ``pending_safety_checks``), registered
  as ``computer``; it returns a :class:`ComputerResult` (the screenshot and the safety checks
  it acknowledges), or the screenshot alone (a :class:`~turnwire.model.records.Media` image).

Every Struct rejects unknown fields: a payload is part of the thread file (schema version 1).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

__all__ = [
    "CLIENT_CALL_TYPES",
    "CLIENT_OUTPUT_TYPES",
    "Click",
    "ClientPayload",
    "ComputerAction",
    "ComputerResult",
    "ComputerStep",
    "CustomToolInput",
    "DoubleClick",
    "Drag",
    "DragPoint",
    "Keypress",
    "LocalShellAction",
    "Move",
    "PatchOperation",
    "PatchResult",
    "PendingSafetyCheck",
    "Screenshot",
    "Scroll",
    "ShellAction",
    "ShellCommandOutput",
    "ToolKind",
    "TypeText",
    "Wait",
    "payload_from_item",
]

ToolKind = Literal["function", "custom", "shell", "local_shell", "apply_patch", "computer"]
"""What kind of tool a call is for: a function, or a client-executed tool of the API."""

CLIENT_CALL_TYPES: dict[str, ToolKind] = {
    "custom_tool_call": "custom",
    "shell_call": "shell",
    "local_shell_call": "local_shell",
    "apply_patch_call": "apply_patch",
    "computer_call": "computer",
}
"""The output item types of client-executed calls, and their kinds."""

CLIENT_OUTPUT_TYPES: dict[str, str] = {
    "custom_tool_call": "custom_tool_call_output",
    "shell_call": "shell_call_output",
    "local_shell_call": "local_shell_call_output",
    "apply_patch_call": "apply_patch_call_output",
    "computer_call": "computer_call_output",
}
"""Each client-executed call type, and the type of the item that answers it."""

NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]
Whole = Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]
Int32 = Annotated[int, msgspec.Meta(ge=-(2**31), le=2**31 - 1)]


class _Strict(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    forbid_unknown_fields=True,
    omit_defaults=True,
    gc=False,
):
    """Base: part of the thread file, so unknown fields are refused."""


class _Payload(_Strict, frozen=True, kw_only=True, tag_field="kind"):
    """Base of the payloads, tagged by the call's ``kind``."""


class CustomToolInput(_Payload, frozen=True, kw_only=True, tag="custom"):
    """A custom tool's call: the text the model wrote (following the tool's grammar, when it
    declares one).

    :ivar kind: `custom`.
    :ivar input: The text the model wrote: what the handler gets.
    """

    input: str


class ShellAction(_Payload, frozen=True, kw_only=True, tag="shell"):
    """A shell call: the commands to run, in order, and the limits the model asked for.

    :ivar kind: `shell`.
    :ivar commands: The commands to run, in order (at least one).
    :ivar timeout_ms: How long the model asked the commands to run at most, in milliseconds.
    :ivar max_output_length: How many characters of stdout and stderr together the model asked
        to read at most.
    """

    commands: Annotated[tuple[str, ...], msgspec.Meta(min_length=1)]
    timeout_ms: Whole | None = None
    max_output_length: Whole | None = None


class LocalShellAction(_Payload, frozen=True, kw_only=True, tag="local_shell"):
    """A local shell call: one command (its argv), its environment and where to run it.

    :ivar kind: `local_shell`.
    :ivar command: The command and its arguments (argv).
    :ivar env: Environment variables to set for it.
    :ivar timeout_ms: How long it may run, in milliseconds.
    :ivar user: The user to run it as.
    :ivar working_directory: Where to run it.
    """

    command: Annotated[tuple[str, ...], msgspec.Meta(min_length=1)]
    env: dict[str, str] = msgspec.field(default_factory=dict)
    timeout_ms: Whole | None = None
    user: str | None = None
    working_directory: str | None = None


class PatchOperation(_Payload, frozen=True, kw_only=True, tag="apply_patch"):
    """An apply_patch call: create, update or delete the file at ``path`` (``diff`` for the
    first two, in the V4A diff format the model writes).

    :ivar kind: `apply_patch`.
    :ivar operation: `create_file`, `update_file` or `delete_file`.
    :ivar path: The file, relative to where the handler applies patches.
    :ivar diff: The diff to apply (V4A format); none for `delete_file`.
    """

    operation: Literal["create_file", "update_file", "delete_file"]
    path: NonEmpty
    diff: str | None = None

    def __post_init__(self) -> None:
        if (self.operation == "delete_file") != (self.diff is None):
            needs = "no `diff`" if self.operation == "delete_file" else "a `diff`"
            raise ValueError(f"an apply_patch {self.operation} operation takes {needs}")


class _Step(_Strict, frozen=True, kw_only=True, tag_field="type"):
    """Base of the computer actions, tagged by the API's action ``type``."""


Keys = tuple[str, ...]


class Click(_Step, frozen=True, kw_only=True, tag="click"):
    """A click at (x, y).

    :ivar type: `click`.
    :ivar button: `left`, `right`, `wheel`, `back` or `forward`.
    :ivar x: The x coordinate.
    :ivar y: The y coordinate.
    :ivar keys: Keys held down during the click.
    """

    button: Literal["left", "right", "wheel", "back", "forward"]
    x: Int32
    y: Int32
    keys: Keys | None = None


class DoubleClick(_Step, frozen=True, kw_only=True, tag="double_click"):
    """A double click at (x, y).

    :ivar type: `double_click`.
    :ivar x: The x coordinate.
    :ivar y: The y coordinate.
    :ivar keys: Keys held down during the double click.
    """

    x: Int32
    y: Int32
    keys: Keys | None = None


class DragPoint(_Strict, frozen=True, kw_only=True):
    """One point of a drag.

    :ivar x: The x coordinate.
    :ivar y: The y coordinate.
    """

    x: Int32
    y: Int32


class Drag(_Step, frozen=True, kw_only=True, tag="drag"):
    """A drag along a path.

    :ivar type: `drag`.
    :ivar path: The points of the drag, from start to end.
    :ivar keys: Keys held down during the drag.
    """

    path: tuple[DragPoint, ...]
    keys: Keys | None = None


class Keypress(_Step, frozen=True, kw_only=True, tag="keypress"):
    """Keys pressed together.

    :ivar type: `keypress`.
    :ivar keys: The keys to press together.
    """

    keys: Keys


class Move(_Step, frozen=True, kw_only=True, tag="move"):
    """The pointer moved to (x, y).

    :ivar type: `move`.
    :ivar x: The x coordinate.
    :ivar y: The y coordinate.
    :ivar keys: Keys held down during the move.
    """

    x: Int32
    y: Int32
    keys: Keys | None = None


class Screenshot(_Step, frozen=True, kw_only=True, tag="screenshot"):
    """A screenshot, with no other action.

    :ivar type: `screenshot`.
    """


class Scroll(_Step, frozen=True, kw_only=True, tag="scroll"):
    """A scroll at (x, y).

    :ivar type: `scroll`.
    :ivar x: The x coordinate of the pointer.
    :ivar y: The y coordinate of the pointer.
    :ivar scroll_x: The horizontal distance to scroll.
    :ivar scroll_y: The vertical distance to scroll.
    :ivar keys: Keys held down during the scroll.
    """

    x: Int32
    y: Int32
    scroll_x: Int32
    scroll_y: Int32
    keys: Keys | None = None


class TypeText(_Step, frozen=True, kw_only=True, tag="type"):
    """Text typed.

    :ivar type: `type`.
    :ivar text: The text to type.
    """

    text: str


class Wait(_Step, frozen=True, kw_only=True, tag="wait"):
    """A pause.

    :ivar type: `wait`.
    """


ComputerStep = Click | DoubleClick | Drag | Keypress | Move | Screenshot | Scroll | TypeText | Wait
"""One computer action, by its ``type``."""


class PendingSafetyCheck(_Strict, frozen=True, kw_only=True):
    """A safety check the API raised on a computer call: the handler acknowledges it (by
    ``id``, in :class:`ComputerResult`) only when the deployer's code decided to go on.

    :ivar id: The check's id, which an acknowledgement names.
    :ivar code: The kind of check (`malicious_instructions`, `irrelevant_domain` ...).
    :ivar message: What the check found.
    """

    id: NonEmpty
    code: str | None = None
    message: str | None = None


class ComputerAction(_Payload, frozen=True, kw_only=True, tag="computer"):
    """A computer call: its actions, in order (``batched``: the call gave them as a list,
    ``actions``, rather than one ``action``), and the safety checks waiting for the deployer's
    acknowledgement.

    :ivar kind: `computer`.
    :ivar actions: The actions to perform, in order.
    :ivar batched: Whether the call gave its actions as a list (`actions`), rather than one
        `action`: replayed as it came.
    :ivar pending_safety_checks: The safety checks the API raised, waiting for the deployer's
        acknowledgement.
    """

    actions: Annotated[tuple[ComputerStep, ...], msgspec.Meta(min_length=1)]
    batched: bool = False
    pending_safety_checks: tuple[PendingSafetyCheck, ...] = ()

    def __post_init__(self) -> None:
        if not self.batched and len(self.actions) != 1:
            raise ValueError("a computer call that is not `batched` holds exactly one action")
        ids = [check.id for check in self.pending_safety_checks]
        if len(set(ids)) != len(ids):
            raise ValueError("a computer call names a pending safety check twice")


ClientPayload = CustomToolInput | ShellAction | LocalShellAction | PatchOperation | ComputerAction
"""What a client-executed call asked, by its ``kind``."""


class ShellCommandOutput(_Strict, frozen=True, kw_only=True):
    """What one command of a shell call printed and how it ended: its ``exit_code``, or
    ``timed_out``.

    :ivar stdout: What the command printed on standard output.
    :ivar stderr: What it printed on standard error.
    :ivar exit_code: Its exit code (when it did not time out).
    :ivar timed_out: Whether it ran past its time limit (then it has no exit code).
    """

    stdout: str = ""
    stderr: str = ""
    exit_code: Int32 = 0
    timed_out: bool = False


class PatchResult(_Strict, frozen=True, kw_only=True):
    """An apply_patch handler's answer: whether the operation was applied, and a log text."""

    status: Literal["completed", "failed"]
    output: str = ""


class ComputerResult(msgspec.Struct, frozen=True, kw_only=True):
    """A computer handler's answer: the screenshot after the actions (a
    :class:`~turnwire.model.records.Media` image), and the ids of the pending safety checks
    the deployer's code acknowledges (only those go back as acknowledged)."""

    screenshot: Any
    acknowledged_safety_checks: tuple[str, ...] = ()


def _picked(value: Any, fields: tuple[str, ...]) -> dict[str, Any]:
    """The entries of a mapping named in ``fields`` (the API adds fields over time)."""
    if not isinstance(value, dict):
        raise ValueError("expected an object")
    return {key: value[key] for key in fields if key in value and value[key] is not None}


_STEP_TYPES: dict[str, type[_Step]] = {
    str(kind.__struct_config__.tag): kind
    for kind in (Click, DoubleClick, Drag, Keypress, Move, Screenshot, Scroll, TypeText, Wait)
}


def _step(action: Any) -> dict[str, Any]:
    if not isinstance(action, dict):
        raise ValueError("expected an object")
    kind = _STEP_TYPES.get(str(action.get("type")))
    fields = ("type", *kind.__struct_fields__) if kind is not None else ("type",)
    step = _picked(action, fields)
    if isinstance(step.get("path"), list):
        step["path"] = [_picked(point, ("x", "y")) for point in step["path"]]
    return step


def payload_from_item(item: dict[str, Any]) -> ClientPayload:
    """The payload of a client-executed call item as the API emitted it (only the fields the
    payload holds are read: the API adds fields over time).

    :raises msgspec.ValidationError: a field is missing or of the wrong type (its path
        rooted at the payload).
    :raises ValueError: the item is not an object, or breaks a payload's rule.
    """
    kind = CLIENT_CALL_TYPES[str(item.get("type"))]
    fields: dict[str, Any]
    if kind == "custom":
        fields = {"input": item.get("input")}
    elif kind == "shell":
        fields = _picked(item.get("action"), ("commands", "timeout_ms", "max_output_length"))
    elif kind == "local_shell":
        fields = _picked(
            item.get("action"), ("command", "env", "timeout_ms", "user", "working_directory")
        )
    elif kind == "apply_patch":
        operation = _picked(item.get("operation"), ("type", "path", "diff"))
        fields = {
            "operation": operation.get("type"),
            **{key: operation[key] for key in ("path", "diff") if key in operation},
        }
    else:
        batched = item.get("actions") is not None
        raw = item.get("actions") if batched else [item.get("action")]
        if not isinstance(raw, list):
            raise ValueError("`actions` is not a list")
        checks = item.get("pending_safety_checks") or []
        if not isinstance(checks, list):
            raise ValueError("`pending_safety_checks` is not a list")
        fields = {
            "actions": [_step(action) for action in raw],
            "batched": batched,
            "pending_safety_checks": [_picked(c, ("id", "code", "message")) for c in checks],
        }
    payload: ClientPayload = msgspec.convert({"kind": kind, **fields}, ClientPayload)
    return payload
