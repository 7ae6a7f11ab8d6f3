"""Built-in client hook: ``filter_tool_call_id`` with de-collision."""

from __future__ import annotations

import uuid

from turnwire.hookspecs import hookimpl

__all__ = ["filter_tool_call_id"]


@hookimpl(trylast=True)
def filter_tool_call_id(tool_call_id: str, existing_ids: frozenset[str]) -> str:
    if tool_call_id not in existing_ids:
        return tool_call_id
    fresh = f"call_{uuid.uuid4().hex}"
    _, _, item_id = tool_call_id.partition("|")
    return f"{fresh}|{item_id}" if item_id.startswith("fc_") else fresh
