"""One client, many runs at once: each run keeps its own render context, output schema,
event callback and request count, and nothing of one run reaches another's requests."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import msgspec

import turnwire
from turnwire.client.progress import ProgressEvent, ResponseDoneEvent

from ..conftest import make_container
from .server import Reply, ScriptedServer, Seen

TEMPLATE = {"render": {"system_prompt_template": True}}


class Ticket(msgspec.Struct):
    """A ticket for run A."""

    owner: str


class Invoice(msgspec.Struct):
    """An invoice for run B."""

    number: int


def _sse(*events: dict[str, Any]) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)


def _call(run: str) -> bytes:
    item = {
        "type": "function_call",
        "id": f"fc_{run}",
        "call_id": f"call_{run}",
        "name": "lookup",
        "arguments": json.dumps({"who": run}),
        "status": "completed",
    }
    response = {"id": f"resp_{run}_1", "status": "completed", "model": "gpt-4o"}
    return _sse(
        {"type": "response.created", "response": {**response, "status": "in_progress"}},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": response},
    )


def _answer(run: str, text: str) -> bytes:
    item = {
        "type": "message",
        "id": f"msg_{run}",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    response = {"id": f"resp_{run}_2", "status": "completed", "model": "gpt-4o"}
    return _sse(
        {"type": "response.created", "response": {**response, "status": "in_progress"}},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": response},
    )


def _reply(seen: Seen) -> Reply:
    """Run A's requests say "Help A." in their instructions, run B's "Help B.": the first
    request of each gets a tool call, the second (after the tool's output) the answer."""
    body = seen.json
    run = "A" if body["instructions"] == "Help A." else "B"
    if body["input"][-1].get("type") != "function_call_output":
        return Reply.sse(_call(run))
    answer = {"owner": "ana"} if run == "A" else {"number": 7}
    return Reply.sse(_answer(run, json.dumps(answer)))


def test_concurrent_runs_on_one_client_keep_their_own_state() -> None:
    thread = turnwire.load_thread(
        {
            "version": 1,
            "model": "gpt-4o",
            "system_prompt": "Help {user}.",
            "tools": [
                {
                    "name": "lookup",
                    "description": "Look someone up.",
                    "parameters": {
                        "type": "object",
                        "properties": {"who": {"type": "string"}},
                        "required": ["who"],
                        "additionalProperties": False,
                    },
                }
            ],
            "messages": [
                {"id": "u1", "role": "user", "content": "hi", "created_at": "2026-01-01T00:00:00Z"}
            ],
        }
    )
    started: list[str] = []

    async def lookup(who: str) -> str:
        started.append(who)
        # Hold each tool until both runs have one running, so the runs interleave.
        for _ in range(200):
            if {"A", "B"} <= set(started):
                break
            await asyncio.sleep(0.01)
        return f"found {who}"

    events: dict[str, list[ProgressEvent]] = {"A": [], "B": []}

    async def both(base_url: str) -> tuple[Any, Any]:
        container = make_container(TEMPLATE)
        async with turnwire.Client(container, base_url=base_url, handlers={"lookup": lookup}) as c:
            return await asyncio.gather(
                c.run(
                    thread,
                    render_context={"user": "A"},
                    output_schema=Ticket,
                    on_event=events["A"].append,
                ),
                c.run(
                    thread,
                    render_context={"user": "B"},
                    output_schema=Invoice,
                    on_event=events["B"].append,
                ),
            )

    with ScriptedServer(answer=_reply) as server:
        first, second = asyncio.run(both(server.base_url))

    assert sorted(started) == ["A", "B"]
    bodies = [seen.json for seen in server.requests]
    assert len(bodies) == 4
    for run, schema in (("A", "Ticket"), ("B", "Invoice")):
        sent = [b for b in bodies if b["instructions"] == f"Help {run}."]
        assert len(sent) == 2, run
        assert {b["text"]["format"]["name"] for b in sent} == {schema}
        outputs = [
            item for b in sent for item in b["input"] if item.get("type") == "function_call_output"
        ]
        assert len(outputs) == 1 and f"\nfound {run}\n" in outputs[0]["output"], outputs
    assert first.requests == 2 and second.requests == 2
    assert first.parsed == Ticket(owner="ana")
    assert second.parsed == Invoice(number=7)
    assert first.response.id == "resp_A_2" and second.response.id == "resp_B_2"
    for run, seen_events in events.items():
        done = [e.response_id for e in seen_events if isinstance(e, ResponseDoneEvent)]
        assert done == [f"resp_{run}_1", f"resp_{run}_2"]
