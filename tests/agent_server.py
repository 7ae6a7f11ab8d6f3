"""A local Responses server that answers any agent plausibly, for the tests of the documentation's
agent code (``docs/agent.md``), which runs as written against it.

It reads each request as the API would and answers from what it holds: a ``json_schema`` text
format gets a message that follows the schema; after a tool's output comes a message that says
what the tool found; a user message that names a declared function tool (a word of its name,
``order`` for ``lookup_order``) gets a call of that tool, its arguments built from the tool's
schema (a number from the user's text for an integer); anything else gets a message. Every
answer starts with a reasoning item, which carries ``encrypted_content`` when the request
``include``\\s it, as the API's does; each is minted once, so a test can tell which request's
reasoning a later request replays.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from typing import Any

from .client.server import Reply, ScriptedServer, Seen

__all__ = ["AgentServer"]


class AgentServer(ScriptedServer):
    """``with AgentServer() as server:`` then point a client at ``server.base_url``."""

    def __init__(self) -> None:
        super().__init__(answer=self._respond, keep_alive=True)
        self._counter = itertools.count(1)
        self._mint = threading.Lock()
        self.reasoning: list[str] = []  # every encrypted_content minted, in order

    def _respond(self, seen: Seen) -> Reply:
        body = seen.json
        with self._mint:
            n = next(self._counter)
        items: list[dict[str, Any]] = [self._reasoning(n, body)]
        last = body["input"][-1] if body.get("input") else {}
        text_format = (body.get("text") or {}).get("format") or {}
        tool = _named_tool(body, last)
        if text_format.get("type") == "json_schema":
            asked = _unwrapped(_text(last))
            items.append(_message(n, json.dumps(_example(text_format["schema"], asked))))
        elif last.get("type") == "function_call_output":
            items.append(_message(n, f"Here is what I found: {_unwrapped(last['output'])}"))
        elif tool is not None:
            arguments = json.dumps(_example(tool.get("parameters") or {}, _unwrapped(_text(last))))
            items.append(
                {
                    "type": "function_call",
                    "id": f"fc_{n}",
                    "call_id": f"call_{n}",
                    "name": tool["name"],
                    "arguments": arguments,
                    "status": "completed",
                }
            )
        else:
            seen_image = "input_image" in json.dumps(last)
            said = "I see your picture. " if seen_image else ""
            items.append(_message(n, f"{said}You said: {_unwrapped(_text(last))}"))
        return Reply.sse(_stream(n, body, items))

    def _reasoning(self, n: int, body: dict[str, Any]) -> dict[str, Any]:
        item: dict[str, Any] = {
            "type": "reasoning",
            "id": f"rs_{n}",
            "summary": [{"type": "summary_text", "text": "Considering the request."}],
        }
        if "reasoning.encrypted_content" in (body.get("include") or []):
            item["encrypted_content"] = f"enc-{n}-opaque"
            with self._mint:
                self.reasoning.append(item["encrypted_content"])
        return item


def _named_tool(body: dict[str, Any], last: dict[str, Any]) -> dict[str, Any] | None:
    if last.get("role") != "user":
        return None
    words = set(re.findall(r"[a-z]+", _text(last).lower()))
    for tool in body.get("tools") or []:
        if tool.get("type") == "function" and set(tool["name"].lower().split("_")) & words:
            return dict(tool)
    return None


def _text(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def _unwrapped(text: str) -> str:
    """The text inside the envelope lines (``<tag ...>`` and ``</tag>``), one line."""
    lines = [line for line in text.splitlines() if not re.match(r"\s*</?[\w-]+[ >]", line)]
    kept = [line for line in lines if line.strip() and not line.startswith("[media id")]
    return " ".join(kept).strip()


def _example(schema: dict[str, Any], text: str, root: dict[str, Any] | None = None) -> Any:
    """A value that follows ``schema``: the first of an enum, a number found in ``text`` for a
    number, ``"example"`` for a string, every property of an object."""
    root = root or schema
    if "$ref" in schema:
        target: Any = root
        for part in schema["$ref"].lstrip("#/").split("/"):
            target = target[part]
        return _example(target, text, root)
    if "enum" in schema:
        return schema["enum"][0]
    if "anyOf" in schema:
        kinds = [option for option in schema["anyOf"] if option.get("type") != "null"]
        return _example(kinds[0], text, root) if kinds else None
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    number = re.search(r"\d+", text)
    if kind == "object":
        return {
            name: _example(value, text, root)
            for name, value in (schema.get("properties") or {}).items()
        }
    if kind == "array":
        return [_example(schema.get("items") or {}, text, root)]
    if kind == "integer":
        return int(number.group()) if number else 1
    if kind == "number":
        return float(number.group()) if number else 1.5
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return "example"


def _message(n: int, text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": f"msg_{n}",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def _stream(n: int, body: dict[str, Any], items: list[dict[str, Any]]) -> bytes:
    response = {"id": f"resp_{n}", "model": body.get("model", "gpt-5")}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {**response, "status": "in_progress"}}
    ]
    for index, item in enumerate(items):
        events.append({"type": "response.output_item.added", "output_index": index, "item": item})
        if item["type"] == "message":
            text = item["content"][0]["text"]
            for piece in re.findall(r"\S+\s*", text):
                events.append(
                    {"type": "response.output_text.delta", "output_index": index, "delta": piece}
                )
        elif item["type"] == "function_call":
            events.append(
                {
                    "type": "response.function_call_arguments.delta",
                    "output_index": index,
                    "delta": item["arguments"],
                }
            )
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    sent = len(json.dumps(body.get("input", []))) // 4
    usage = {
        "input_tokens": sent,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 24,
        "output_tokens_details": {"reasoning_tokens": 8},
        "total_tokens": sent + 24,
    }
    done = {**response, "status": "completed", "usage": usage}
    events.append({"type": "response.completed", "response": done})
    return b"".join(b"data: " + json.dumps(event).encode() + b"\n\n" for event in events)
