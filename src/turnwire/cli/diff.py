"""``turnwire diff A.json B.json``: does request B extend request A, and where not.

Both files are request bodies as ``turnwire render`` prints them (or as a server captured
them). The command compares them the way the API's reasoning replay and prompt cache do: the
same ``model``, ``instructions`` and ``tools``, and A's ``input`` as the first items of B's, byte
for byte (after decoding: key order counts, whitespace does not). It prints one line saying
so, or the first difference, by item, with both sides shown (cut, escaped); exit 0 when B
extends A, 1 when it does not.
"""

from __future__ import annotations

import argparse
from typing import Any

from turnwire.cli.printer import echo, plain, shown

__all__ = ["diff_command", "first_difference"]


def _load(path: str) -> dict[str, Any]:
    import msgspec

    from turnwire.errors import InputError

    try:
        with open(path, "rb") as stream:
            data = stream.read()
    except OSError as err:
        raise InputError(f"{path}: cannot read the request body: {err.strerror}") from err
    try:
        body = msgspec.json.decode(data)
    except msgspec.DecodeError as err:
        raise InputError(f"{path}: not a JSON request body: {err}") from err
    if not isinstance(body, dict) or not isinstance(body.get("input", []), list):
        raise InputError(f"{path}: not a request body (an object with an `input` array)")
    return body


def _canonical(value: Any) -> bytes:
    import msgspec

    return msgspec.json.encode(value)


def first_difference(before: dict[str, Any], after: dict[str, Any]) -> tuple[str, Any, Any] | None:
    """Where ``after`` stops extending ``before``: the field (``model``, ``instructions``,
    ``tools``, ``input[i]``) and both values there (``None``: it extends it)."""
    for field in ("model", "instructions", "tools"):
        if _canonical(before.get(field)) != _canonical(after.get(field)):
            return field, before.get(field), after.get(field)
    old, new = before.get("input", []), after.get("input", [])
    if isinstance(old, str) or isinstance(new, str):  # a bare string input: one item
        old, new = [old], [new]
    for index, item in enumerate(old):
        if index >= len(new):
            return f"input[{index}]", item, None
        if _canonical(item) != _canonical(new[index]):
            return f"input[{index}]", item, new[index]
    return None


def diff_command(args: argparse.Namespace) -> int:
    """Print whether the second body extends the first; exit 1 when it does not."""
    before, after = _load(args.before), _load(args.after)
    found = first_difference(before, after)
    old_items, new_items = len(before.get("input", [])), len(after.get("input", []))
    if found is None:
        echo(
            f"{args.after} extends {args.before}: all {old_items} input items kept, "
            f"{new_items - old_items} added; model, instructions and tools the same"
        )
        return 0
    where, was, now = found
    echo(f"{args.after} does not extend {args.before}: first difference at {plain(where)}")
    echo(f"  before: {_side(was)}")
    echo(f"  after:  {_side(now)}")
    return 1


def _side(value: Any) -> str:
    if value is None:
        return "(absent)"
    return shown(_canonical(value).decode(), limit=300)
