"""A scripted answer as the API gives it: the response object, and its stream of events.

The events follow the recorded streams in ``tests/data/conformance/streams``
(``text_simple_gpt-4o-mini.sse``, ``reasoning_summary_encrypted_function_call_gpt-5.sse``):
``response.created`` and ``response.in_progress``, then per output item its ``added`` event,
its parts and deltas and their ``done`` events, its ``output_item.done``, and
``response.completed``; each with its ``sequence_number``, and each text delta with an
``obfuscation`` string that pads it to 16 characters. A ``program`` or ``program_output`` item
has no parts or deltas (no recording shows any, and the official stream events name none): its
``added`` and ``done`` events carry the whole item.
"""

from __future__ import annotations

import random
import re
import secrets
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import msgspec

from turnwire.emulate.script import Answer, ProgramOutput, ToolCall

__all__ = ["build_output", "new_id", "response_object", "sse_events"]

_ENCODE = msgspec.json.Encoder()
_WORDS = re.compile(r"\s*\S+|\s+")
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def new_id(prefix: str) -> str:
    """A fresh id of the API's shape (``resp_``, ``rs_``, ``msg_``, ``fc_`` + 48 hex; the
    programs' ``pg_`` and ``pgo_`` are the emulator's, no recording shows the API's)."""
    return f"{prefix}_{secrets.token_hex(24)}"


class _ProgramNotFound(LookupError):
    """A scripted ``program_output`` names no program: neither a ``call_id`` nor a program of
    its own answer or of the request's input for it to end."""


def build_output(
    answer: Answer,
    *,
    seal_reasoning: Callable[[str, list[dict[str, Any]]], str] | None,
    seal_program: Callable[[str, list[dict[str, Any]]], str] | None = None,
    open_program: str | None = None,
) -> list[dict[str, Any]]:
    """The output items of ``answer``. ``seal_reasoning(id, output so far)`` mints a reasoning
    item's ``encrypted_content`` (``None``: the request did not include it), ``seal_program``
    a program's ``fingerprint`` (needed when ``answer`` holds a program). ``open_program`` is
    the ``call_id`` of the program of the request that no ``program_output`` ended yet, which
    a ``program_output`` without its own ``call_id`` ends.

    :raises _ProgramNotFound: ``answer`` ends a program, and none is named or open.
    """
    output: list[dict[str, Any]] = []
    ending = answer.program_output
    program = answer.program
    ends_own = (
        ending is not None and ending.call_id is None and program is not None and not program.calls
    )
    if ending is not None and not ends_own:
        target = ending.call_id or open_program
        if target is None:
            raise _ProgramNotFound("the answer's program_output has no program to end")
        output.append(_program_output(ending, target))
    if answer.reasoning is not None:
        item_id = new_id("rs")
        item: dict[str, Any] = {
            "id": item_id,
            "type": "reasoning",
            "summary": [
                {"type": "summary_text", "text": text} for text in answer.reasoning.summary
            ],
        }
        if seal_reasoning is not None:
            item["encrypted_content"] = seal_reasoning(item_id, output)
        output.append(item)
    content: list[dict[str, Any]] = []
    if answer.text is not None:
        content.append(
            {"type": "output_text", "annotations": [], "logprobs": [], "text": answer.text}
        )
    if answer.refusal is not None:
        content.append({"type": "refusal", "refusal": answer.refusal})
    if content:
        output.append(
            {
                "id": new_id("msg"),
                "type": "message",
                "status": "completed",
                "content": content,
                "role": "assistant",
            }
        )
    search = answer.tool_search
    if search is not None:
        output.append(
            {
                "id": new_id("tsc"),
                "type": "tool_search_call",
                "status": "completed",
                "arguments": (
                    search.arguments
                    if search.arguments is not None
                    else {"paths": list(search.paths)}
                ),
                "call_id": search.call_id or _call_id(),
                "execution": "client",
            }
        )
    if program is not None:
        if seal_program is None:
            raise ValueError("an answer with a program needs seal_program")
        program_id = new_id("pg")
        call_id = program.call_id or _call_id()
        output.append(
            {
                "id": program_id,
                "type": "program",
                "call_id": call_id,
                "code": program.code,
                "fingerprint": seal_program(program_id, output),
            }
        )
        if ending is not None and ends_own:
            output.append(_program_output(ending, call_id))
        output.extend(
            _function_call(call, caller={"type": "program", "caller_id": call_id})
            for call in program.calls
        )
    output.extend(_function_call(call) for call in answer.tool_calls)
    return output


def _call_id() -> str:
    return f"call_{secrets.token_urlsafe(18)}"


def _function_call(call: ToolCall, *, caller: dict[str, str] | None = None) -> dict[str, Any]:
    arguments = (
        call.arguments
        if isinstance(call.arguments, str)
        else _ENCODE.encode(call.arguments).decode()
    )
    item: dict[str, Any] = {
        "id": new_id("fc"),
        "type": "function_call",
        "status": "completed",
        "arguments": arguments,
        "call_id": call.call_id or _call_id(),
        "name": call.name,
    }
    if call.namespace is not None:
        item["namespace"] = call.namespace
    if caller is not None:
        item["caller"] = caller
    return item


def _program_output(ending: ProgramOutput, call_id: str) -> dict[str, Any]:
    return {
        "id": new_id("pgo"),
        "type": "program_output",
        "call_id": call_id,
        "result": ending.result,
        "status": ending.status,
    }


_ECHOED = (
    "instructions",
    "max_output_tokens",
    "max_tool_calls",
    "parallel_tool_calls",
    "previous_response_id",
    "prompt_cache_key",
    "safety_identifier",
    "temperature",
    "tool_choice",
    "top_logprobs",
    "top_p",
    "truncation",
    "user",
)
_DEFAULTS: dict[str, Any] = {
    "max_output_tokens": None,
    "max_tool_calls": None,
    "parallel_tool_calls": True,
    "previous_response_id": None,
    "prompt_cache_key": None,
    "safety_identifier": None,
    "temperature": 1.0,
    "tool_choice": "auto",
    "top_logprobs": 0,
    "top_p": 1.0,
    "truncation": "disabled",
    "user": None,
    "instructions": None,
}


def response_object(
    body: Mapping[str, Any],
    *,
    response_id: str,
    created_at: int,
    status: str,
    output: list[dict[str, Any]],
    usage: dict[str, Any] | None,
) -> dict[str, Any]:
    """The response object, in the field order of the recorded responses."""
    response: dict[str, Any] = {
        "id": response_id,
        "object": "response",
        "created_at": created_at,
        "status": status,
        "background": False,
        "completed_at": int(time.time()) if status == "completed" else None,
        "error": None,
        "incomplete_details": None,
    }
    for name in _ECHOED:
        response[name] = body.get(name, _DEFAULTS[name])
    response.update(
        {
            "model": body.get("model"),
            "output": output,
            "reasoning": body.get("reasoning") or {"effort": None, "summary": None},
            "service_tier": body.get("service_tier") or "default",
            "store": body.get("store", True),
            "text": body.get("text") or {"format": {"type": "text"}, "verbosity": "medium"},
            "tools": body.get("tools") or [],
            "usage": usage,
            "metadata": body.get("metadata") or {},
        }
    )
    return response


def _chunks(text: str) -> list[str]:
    return _WORDS.findall(text) or [text]


class _Events:
    def __init__(self) -> None:
        self.sequence = 0
        self._random = random.Random(secrets.randbits(64))

    def event(self, kind: str, **fields: Any) -> bytes:
        data = {"type": kind, **fields, "sequence_number": self.sequence}
        self.sequence += 1
        return b"event: " + kind.encode() + b"\ndata: " + _ENCODE.encode(data) + b"\n\n"

    def obfuscation(self, delta: str) -> str:
        return "".join(self._random.choices(_LETTERS, k=max(0, 16 - len(delta))))


def sse_events(response: dict[str, Any]) -> Iterator[bytes]:
    """The stream of ``response`` (already completed), event by event."""
    events = _Events()
    started = {**response, "status": "in_progress", "output": [], "usage": None}
    started["completed_at"] = None
    yield events.event("response.created", response=started)
    yield events.event("response.in_progress", response=started)
    for index, item in enumerate(response["output"]):
        yield from _item_events(events, index, item)
    yield events.event("response.completed", response=response)


def _item_events(events: _Events, index: int, item: dict[str, Any]) -> Iterator[bytes]:
    kind = item["type"]
    item_id = item["id"]
    if kind == "reasoning":
        yield events.event(
            "response.output_item.added", item={**item, "summary": []}, output_index=index
        )
        for number, part in enumerate(item["summary"]):
            where = {"item_id": item_id, "output_index": index, "summary_index": number}
            yield events.event(
                "response.reasoning_summary_part.added",
                **where,
                part={"type": "summary_text", "text": ""},
            )
            for delta in _chunks(part["text"]):
                yield events.event(
                    "response.reasoning_summary_text.delta",
                    **where,
                    delta=delta,
                    obfuscation=events.obfuscation(delta),
                )
            yield events.event("response.reasoning_summary_text.done", **where, text=part["text"])
            yield events.event("response.reasoning_summary_part.done", **where, part=part)
    elif kind == "message":
        added = {**item, "status": "in_progress", "content": []}
        yield events.event("response.output_item.added", item=added, output_index=index)
        for number, part in enumerate(item["content"]):
            where = {"item_id": item_id, "output_index": index, "content_index": number}
            if part["type"] == "output_text":
                empty = {**part, "text": ""}
                yield events.event("response.content_part.added", **where, part=empty)
                for delta in _chunks(part["text"]):
                    yield events.event(
                        "response.output_text.delta",
                        **where,
                        delta=delta,
                        logprobs=[],
                        obfuscation=events.obfuscation(delta),
                    )
                yield events.event(
                    "response.output_text.done", **where, logprobs=[], text=part["text"]
                )
            else:
                empty = {**part, "refusal": ""}
                yield events.event("response.content_part.added", **where, part=empty)
                yield events.event("response.refusal.delta", **where, delta=part["refusal"])
                yield events.event("response.refusal.done", **where, refusal=part["refusal"])
            yield events.event("response.content_part.done", **where, part=part)
    elif kind == "function_call":
        added = {**item, "status": "in_progress", "arguments": ""}
        yield events.event("response.output_item.added", item=added, output_index=index)
        where = {"item_id": item_id, "output_index": index}
        for delta in _chunks(item["arguments"]):
            yield events.event(
                "response.function_call_arguments.delta",
                **where,
                delta=delta,
                obfuscation=events.obfuscation(delta),
            )
        yield events.event(
            "response.function_call_arguments.done", **where, arguments=item["arguments"]
        )
    else:  # program, program_output: no events of their own (the official stream events
        # have none), the whole item when added and when done
        yield events.event("response.output_item.added", item=item, output_index=index)
    yield events.event("response.output_item.done", item=item, output_index=index)
