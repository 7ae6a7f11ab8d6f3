"""What a long conversation's requests share with the ones before: turnwire against two agent
libraries, on the same scripted conversation, measured at the server.

The conversation: 30 turns (10 with ``--quick``) of a support agent with one function tool
(``lookup_order``). Before every question a retrieved document is added (one per turn, kept
from then on: a document once retrieved stays part of what the agent knows); after every fourth
answer a memory is added; every third question asks for an order, so the model calls the tool
and answers after its result; two questions carry an image (a 16x16 PNG made here); one
compaction (``POST /responses/compact``) comes before the question two thirds of the way in.

The server: a local HTTP server on 127.0.0.1, the same code for every subject (a fresh one
each). It records every POST body and answers ``/responses`` from the body alone: a reasoning
item with a 1 KB ``encrypted_content`` blob and an id unique to that response, then a
``function_call`` when the question since the model last spoke asks for an order and no tool
result came since, else an assistant message. A request with ``stream: true`` (turnwire's) gets
a complete stream the official SDK accepts (``response.created`` ... ``response.completed``);
one without (``Runner.run`` and ``agent.run`` do not stream) gets the same response as JSON.
``/responses/compact`` is answered with a ``response.compaction`` holding one compaction item
(no retained user messages), the same for every subject.

The subjects, each driving the same 30 turns with its own idioms:

* turnwire, default: a thread in a SQLite store (``turnwire.store.sqlite.SQLiteStore``), one
  ``turnwire.run_thread`` per question (``files=[png]`` on the image questions, the tool's handler
  given by ``handlers=``), documents and memories added to the thread's header
  (``store.update_header``: ``Retrievable`` and ``Memory`` records with ``created_at`` now, to
  the millisecond as turnwire stamps a run's records; the clock is let pass 2 ms after a
  document, since a question stamped in the same millisecond would come before it), the
  compaction by ``turnwire.compact_thread``. Settings: the defaults plus
  ``render.reasoning_replay: encrypted`` and ``render.replay_compatibility:
  [openai-responses-reasoning-v1]``, so reasoning is replayed; memories and documents go where
  the default ``render.context_placement: leading`` puts them.
* turnwire, cache-stable: the same plus ``render.context_placement: timeline`` (each memory and
  document sent once, in the timeline at its ``created_at``).
* openai-agents (``agents``): ``Agent(model=OpenAIResponsesModel("gpt-5", AsyncOpenAI(...)),
  tools=[function_tool lookup_order], model_settings=ModelSettings(store=False,
  response_include=["reasoning.encrypted_content"]))``, ``Runner.run`` once per question with a
  ``RunConfig(tracing_disabled=True)`` (and tracing disabled globally: nothing leaves the
  machine). The history is the library's own: an in-memory ``SQLiteSession`` wrapped in
  ``OpenAIResponsesCompactionSession(model="gpt-5", should_trigger_compaction=never)``, whose
  ``run_compaction({"force": True, "compaction_mode": "input"})`` makes the one compaction
  (stateless: the session's items go as ``input`` to ``responses.compact`` and are replaced by
  its output). No ``previous_response_id`` or ``conversation_id``; reasoning item ids kept
  (``reasoning_item_id_policy`` unset, i.e. ``preserve``). Memories and documents go in the
  agent's instructions (a dynamic ``instructions`` function: the system prompt, then every
  memory, then every document), where the library's users put context. The image goes as an
  ``input_image`` part with a ``data:`` URL.
* pydantic-ai: ``Agent(OpenAIResponsesModel("gpt-5", provider=OpenAIProvider(openai_client=
  AsyncOpenAI(...))), instructions=<system prompt>, model_settings=
  OpenAIResponsesModelSettings(openai_store=False), capabilities=[OpenAICompaction(trigger=...)])``
  with ``@agent.instructions`` adding the memories and documents and ``@agent.tool_plain``
  ``lookup_order``; ``agent.run(question, message_history=history)`` per question and
  ``history = result.all_messages()``. Stateless: ``openai_previous_response_id`` unset (no
  chaining) and ``openai_store=False``; ``openai_send_reasoning_ids`` is left at its default,
  which is on for gpt-5 (its profile supports encrypted reasoning): turned off, pydantic-ai sends
  no reasoning item at all, only its summary as text. The compaction is the library's stateless
  ``OpenAICompaction`` capability, its ``trigger`` true once, before the first request of the
  compaction turn. The image goes as ``BinaryContent(png, media_type="image/png")``.

All four send ``model: gpt-5`` to ``http://127.0.0.1:<port>/v1`` with a placeholder key. The
same tool result, memories, documents and questions, word for word, go to each.

Printed per subject, from the bodies the server captured (the same code for every subject):

* requests: ``POST /responses`` sent (and compactions);
* extend: requests that extend the previous one exactly (same ``model``, ``instructions`` and
  ``tools``, the previous ``input`` a prefix of this one, compared item by item as canonical
  JSON: keys sorted, no whitespace), out of the requests that have a previous one; for the others,
  the first field that differs, counted (``input: A -> B`` names the item kinds at the first
  differing position; ``at compaction`` marks the request right after the compaction);
* reasoning replayed: for each reasoning item the server produced (found by id or by
  ``encrypted_content``), the later requests up to the compaction (or to the end, for one
  produced after it) that carry it, summed, against the number of such requests (what full
  replay would give); items on every later: the produced items carried by every such request,
  out of those that have one;
* already sent: the mean, over the requests that have a previous one, of the share of the
  prompt's bytes (canonical JSON of ``tools``, ``instructions`` and each ``input`` item, in that
  order: the order of a prefix cache) that the previous request sent first, in the same place:
  the longest common byte prefix of the two prompts (0 if the model differs).

Last, the issue's condition is checked as measured, for the cache-stable configuration: every
request extends the previous one except at the compaction, and every reasoning item produced is
replayed on every later request until the compaction. Nothing is asserted: a "no" is printed.

Run: ``uv run --group bench python benchmarks/conversation.py`` (``--quick`` for 10 turns).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import itertools
import json
import re
import struct
import sys
import tempfile
import threading
import time
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import msgspec

import turnwire
from turnwire.errors import ConfigError

MODEL = "gpt-5"
API_KEY = "sk-local-benchmark"
SYSTEM = "You are the support agent of a small online shop. Answer briefly and precisely."
TOOL_NAME = "lookup_order"
TOOL_DESCRIPTION = "Look up an order by its id: its status and where it is."
TOOL_PARAMETERS = {
    "type": "object",
    "properties": {"order_id": {"type": "string", "description": "the order id, like A-1001"}},
    "required": ["order_id"],
    "additionalProperties": False,
}
ORDER = re.compile(r"look up order (A-\d+)")
# turnwire's two configurations: reasoning replayed, then the same with context in the timeline.
REPLAY = {
    "reasoning_replay": "encrypted",
    "replay_compatibility": ["openai-responses-reasoning-v1"],
}
DEFAULT = {"render": REPLAY}
CACHE_STABLE = {"render": {**REPLAY, "context_placement": "timeline"}}


# ---------------------------------------------------------------- the conversation


@dataclass(frozen=True)
class Turn:
    """One question, and what comes with it."""

    index: int
    question: str
    document: tuple[str, str]  # (id, content): retrieved before the question
    memory: tuple[str, str] | None  # (id, content): added after the answer
    image: bool
    compact_before: bool


def conversation(turns: int) -> list[Turn]:
    """The scripted conversation: tool questions every third turn, a document per turn, a
    memory after every fourth answer, the image on two questions, one compaction."""
    topics = ("shipping", "returns", "sizes", "payment", "warranty", "gift cards", "delivery")
    compact_at = turns * 2 // 3
    images = {2, turns // 3 + 1}
    plan = []
    for k in range(turns):
        topic = topics[k % len(topics)]
        if k % 3 == 1:
            question = f"Question {k}: please look up order A-{1000 + k} and tell me where it is."
        elif k in images:
            question = f"Question {k}: what is wrong with the item in this photo ({topic})?"
        else:
            question = f"Question {k}: what is your policy on {topic}, in one sentence?"
        document = (
            f"doc-{k}",
            f"Knowledge base article {k} on {topic}. "
            + " ".join(
                f"Paragraph {p}: the {topic} rule number {k}.{p} applies." for p in range(8)
            ),
        )
        memory = (
            (f"mem-{k}", f"The customer said at turn {k} that they prefer {topic} by e-mail.")
            if k % 4 == 3
            else None
        )
        plan.append(Turn(k, question, document, memory, k in images, k == compact_at))
    return plan


def tool_result(order_id: str) -> str:
    """The tool's answer, the same text for every subject."""
    return f"Order {order_id}: shipped, at the Lyon sorting centre, delivery expected in 2 days."


def tiny_png(size: int = 16) -> bytes:
    """A ``size`` x ``size`` RGB PNG: a diagonal gradient."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    rows = b"".join(
        b"\x00" + bytes(v for x in range(size) for v in (x * 16 % 256, y * 16 % 256, 128))
        for y in range(size)
    )
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def context_text(memories: list[tuple[str, str]], documents: list[tuple[str, str]]) -> str:
    """Memories and documents as the peers' instructions carry them."""
    parts = []
    if memories:
        parts.append(
            "What you remember about the customer:\n" + "\n".join(f"- {m}" for _, m in memories)
        )
    if documents:
        parts.append(
            "Retrieved documents:\n" + "\n\n".join(f"[{i}] {text}" for i, text in documents)
        )
    return "\n\n".join(parts)


# ---------------------------------------------------------------- the server


@dataclass
class Seen:
    """One request the server got, and the reasoning item its answer held (if any)."""

    path: str
    body: dict[str, Any]
    produced: dict[str, Any] | None = None


class Server:
    """A Responses server on 127.0.0.1 that answers every request from its body (see the
    module's docstring) and keeps every body it got."""

    def __init__(self) -> None:
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        self._count = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                raw = _read_body(self)
                status, content_type, payload = owner.answer(self.path, raw)
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                return

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._http.daemon_threads = True
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._http.server_address[1]}/v1"

    def __enter__(self) -> Server:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(timeout=5)

    def answer(self, path: str, raw: bytes) -> tuple[int, str, bytes]:
        body = json.loads(raw)
        with self._lock:
            self._count += 1
            n = self._count
            seen = Seen(path, body)
            self.seen.append(seen)
        if path.endswith("/responses/compact"):
            return 200, "application/json", json.dumps(compaction(n)).encode()
        if not path.endswith("/responses"):
            return 404, "application/json", b'{"error": {"message": "not found"}}'
        reasoning, item = reply_items(n, body.get("input") or [])
        seen.produced = reasoning
        events = answer_events(f"resp_{n}", [reasoning, item], raw)
        if body.get("stream"):
            frames = (f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
            return 200, "text/event-stream", "".join(frames).encode()
        return 200, "application/json", json.dumps(events[-1]["response"]).encode()


def _read_body(handler: BaseHTTPRequestHandler) -> bytes:
    if handler.headers.get("Transfer-Encoding", "").lower() == "chunked":
        data = b""
        while True:
            size = int(handler.rfile.readline().strip().split(b";")[0], 16)
            if not size:
                handler.rfile.readline()
                return data
            data += handler.rfile.read(size)
            handler.rfile.readline()
    return handler.rfile.read(int(handler.headers.get("Content-Length", "0")))


def reply_items(n: int, items: list[Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The answer's reasoning item and the item after it: a function call if the question
    since the model last spoke asks for an order and no tool result came since, else a message."""
    asked = ""
    for item in reversed(items):
        if not isinstance(item, dict):
            continue
        what = item.get("type", "message")
        if what == "function_call_output":
            asked = ""
            break
        if what != "message" or item.get("role") == "assistant":
            break
        if item.get("role") == "user":
            asked = json.dumps(item.get("content")) + asked
    blob = base64.b64encode(
        b"".join(hashlib.sha256(f"{n}:{i}".encode()).digest() for i in range(24))
    ).decode()
    reasoning = {
        "id": f"rs_{n}",
        "type": "reasoning",
        "summary": [],
        "encrypted_content": f"gAAAA{blob}",
    }
    found = ORDER.search(asked)
    if found:
        item = {
            "id": f"fc_{n}",
            "type": "function_call",
            "status": "completed",
            "call_id": f"call_{n}",
            "name": TOOL_NAME,
            "arguments": json.dumps({"order_id": found.group(1)}),
        }
    else:
        text = f"Answer {n}: " + "here is what I found, in short. " * 4
        item = {
            "id": f"msg_{n}",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text.strip(), "annotations": []}],
        }
    return reasoning, item


def answer_events(
    response_id: str, output: list[dict[str, Any]], request: bytes
) -> list[dict[str, Any]]:
    """The events of a complete Responses stream of ``output``, as the API sends them (the
    last one's ``response`` is the answer to a request that does not stream)."""
    response: dict[str, Any] = {
        "id": response_id,
        "object": "response",
        "created_at": 1_780_000_000,
        "status": "in_progress",
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "model": "gpt-5-2025-08-07",
        "output": [],
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": "medium", "summary": None},
        "service_tier": "auto",
        "store": False,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": None,
        "user": None,
        "metadata": {},
    }
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": response},
        {"type": "response.in_progress", "response": response},
    ]
    for index, item in enumerate(output):
        at = {"output_index": index}
        if item["type"] == "message":
            part = item["content"][0]
            text = part["text"]
            ids = {"item_id": item["id"], **at, "content_index": 0}
            events += [
                {
                    "type": "response.output_item.added",
                    **at,
                    "item": {**item, "status": "in_progress", "content": []},
                },
                {
                    "type": "response.content_part.added",
                    **ids,
                    "part": {"type": "output_text", "text": "", "annotations": []},
                },
                {"type": "response.output_text.delta", **ids, "delta": text, "logprobs": []},
                {"type": "response.output_text.done", **ids, "text": text, "logprobs": []},
                {"type": "response.content_part.done", **ids, "part": part},
            ]
        elif item["type"] == "function_call":
            ids = {"item_id": item["id"], **at}
            events += [
                {
                    "type": "response.output_item.added",
                    **at,
                    "item": {**item, "status": "in_progress", "arguments": ""},
                },
                {
                    "type": "response.function_call_arguments.delta",
                    **ids,
                    "delta": item["arguments"],
                },
                {
                    "type": "response.function_call_arguments.done",
                    **ids,
                    "name": item["name"],
                    "arguments": item["arguments"],
                },
            ]
        else:
            events.append({"type": "response.output_item.added", **at, "item": item})
        events.append({"type": "response.output_item.done", **at, "item": item})
    tokens = len(request) // 4
    events.append(
        {
            "type": "response.completed",
            "response": {
                **response,
                "status": "completed",
                "output": output,
                "usage": {
                    "input_tokens": tokens,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens": 60,
                    "output_tokens_details": {"reasoning_tokens": 40},
                    "total_tokens": tokens + 60,
                },
            },
        }
    )
    for number, event in enumerate(events):
        event["sequence_number"] = number
    return events


def compaction(n: int) -> dict[str, Any]:
    """The compact endpoint's answer: one compaction item."""
    return {
        "id": f"resp_{n}",
        "object": "response.compaction",
        "created_at": 1_780_000_000,
        "output": [{"id": f"cmp_{n}", "type": "compaction", "encrypted_content": f"gAAAA-cmp-{n}"}],
        "usage": {
            "input_tokens": 2000,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 300,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 2300,
        },
    }


# ---------------------------------------------------------------- the subjects


def millisecond() -> datetime:
    """Now, to the millisecond (as turnwire stamps the records of a run)."""
    moment = datetime.now(UTC)
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def drive_turnwire(plan: list[Turn], png: Path, base_url: str, settings: dict[str, Any]) -> None:
    """The conversation through a stored thread, one ``run_thread`` per question."""
    from turnwire.model.records import Memory, Retrievable
    from turnwire.store.sqlite import SQLiteStore

    container = turnwire.build_container(settings=turnwire.load_settings(overrides=settings))
    header = turnwire.load_thread(
        {
            "version": 1,
            "model": MODEL,
            "system_prompt": SYSTEM,
            "tools": [
                {
                    "name": TOOL_NAME,
                    "description": TOOL_DESCRIPTION,
                    "parameters": TOOL_PARAMETERS,
                }
            ],
        }
    )
    handlers = {TOOL_NAME: tool_result}
    remote = {"base_url": base_url, "api_key": API_KEY}
    with tempfile.TemporaryDirectory() as folder:
        store = SQLiteStore(Path(folder) / "threads.db")
        try:
            thread_id = store.create_thread(header)

            def add(**records: Any) -> None:
                now = store.header(thread_id)
                store.update_header(
                    thread_id,
                    msgspec.structs.replace(
                        now, **{key: (*getattr(now, key), *new) for key, new in records.items()}
                    ),
                )

            for turn in plan:
                if turn.compact_before:
                    turnwire.compact_thread(thread_id, store=store, container=container, **remote)
                doc_id, text = turn.document
                add(
                    retrievables=[
                        Retrievable(
                            id=doc_id,
                            content=text,
                            trust_tier="first-party",
                            source=f"kb/{doc_id}.md",
                            created_at=millisecond(),
                        )
                    ]
                )
                # The store stamps the question to the millisecond, and a document of the same
                # instant goes after it in the timeline: let the clock pass the document's.
                time.sleep(0.002)
                turnwire.run_thread(
                    thread_id,
                    store=store,
                    prompt=turn.question,
                    files=[png] if turn.image else [],
                    container=container,
                    handlers=handlers,
                    **remote,
                )
                if turn.memory:
                    mem_id, text = turn.memory
                    add(memories=[Memory(id=mem_id, content=text, created_at=millisecond())])
        finally:
            store.close()


def drive_agents(plan: list[Turn], png: bytes, base_url: str) -> None:
    """The conversation through openai-agents (configuration: the module's docstring)."""
    from agents import (
        Agent,
        ModelSettings,
        RunConfig,
        Runner,
        SQLiteSession,
        function_tool,
        set_tracing_disabled,
    )
    from agents.memory import OpenAIResponsesCompactionSession
    from agents.models.openai_responses import OpenAIResponsesModel
    from openai import AsyncOpenAI

    set_tracing_disabled(True)
    memories: list[tuple[str, str]] = []
    documents: list[tuple[str, str]] = []

    def instructions(context: Any, agent: Any) -> str:
        known = context_text(memories, documents)
        return f"{SYSTEM}\n\n{known}" if known else SYSTEM

    @function_tool(name_override=TOOL_NAME, description_override=TOOL_DESCRIPTION)
    def lookup_order(order_id: str) -> str:
        """Look up an order.

        Args:
            order_id: the order id, like A-1001
        """
        return tool_result(order_id)

    image = "data:image/png;base64," + base64.b64encode(png).decode()

    async def main() -> None:
        client = AsyncOpenAI(base_url=base_url, api_key=API_KEY, max_retries=0)
        agent = Agent(
            name="support",
            instructions=instructions,
            model=OpenAIResponsesModel(MODEL, client),
            tools=[lookup_order],
            model_settings=ModelSettings(
                store=False, response_include=["reasoning.encrypted_content"]
            ),
        )
        session = OpenAIResponsesCompactionSession(
            "benchmark",
            SQLiteSession("benchmark"),
            client=client,
            model=MODEL,
            should_trigger_compaction=lambda context: False,
        )
        config = RunConfig(tracing_disabled=True)
        for turn in plan:
            if turn.compact_before:
                await session.run_compaction({"force": True, "compaction_mode": "input"})
            documents.append(turn.document)
            content: list[dict[str, Any]] = [{"type": "input_text", "text": turn.question}]
            if turn.image:
                content.append({"type": "input_image", "image_url": image, "detail": "auto"})
            await Runner.run(
                agent,
                [{"role": "user", "content": content}],
                session=session,
                run_config=config,
            )
            if turn.memory:
                memories.append(turn.memory)
        await client.close()

    asyncio.run(main())


def drive_pydantic_ai(plan: list[Turn], png: bytes, base_url: str) -> None:
    """The conversation through pydantic-ai (configuration: the module's docstring)."""
    from openai import AsyncOpenAI
    from pydantic_ai import Agent, BinaryContent
    from pydantic_ai.models.openai import (
        OpenAICompaction,
        OpenAIResponsesModel,
        OpenAIResponsesModelSettings,
    )
    from pydantic_ai.providers.openai import OpenAIProvider

    memories: list[tuple[str, str]] = []
    documents: list[tuple[str, str]] = []
    compact_now = [False]

    def trigger(messages: list[Any]) -> bool:
        fire, compact_now[0] = compact_now[0], False
        return fire

    async def main() -> None:
        client = AsyncOpenAI(base_url=base_url, api_key=API_KEY, max_retries=0)
        model = OpenAIResponsesModel(MODEL, provider=OpenAIProvider(openai_client=client))
        agent = Agent(
            model,
            instructions=SYSTEM,
            model_settings=OpenAIResponsesModelSettings(openai_store=False),
            capabilities=[OpenAICompaction(trigger=trigger)],
        )

        @agent.instructions
        def known() -> str:
            return context_text(memories, documents)

        @agent.tool_plain(name=TOOL_NAME, description=TOOL_DESCRIPTION)
        def lookup_order(order_id: str) -> str:
            return tool_result(order_id)

        history: list[Any] = []
        for turn in plan:
            compact_now[0] = turn.compact_before
            documents.append(turn.document)
            prompt: Any = turn.question
            if turn.image:
                prompt = [turn.question, BinaryContent(data=png, media_type="image/png")]
            result = await agent.run(prompt, message_history=history)
            history = result.all_messages()
            if turn.memory:
                memories.append(turn.memory)
        await client.close()

    asyncio.run(main())


# ---------------------------------------------------------------- the measures


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def kind(item: Any) -> str:
    if not isinstance(item, dict):
        return type(item).__name__
    name = item.get("type", "message")
    return f"{name}/{item['role']}" if name == "message" and "role" in item else name


def difference(previous: dict[str, Any], body: dict[str, Any]) -> str | None:
    """The first field in which ``body`` does not extend ``previous``, or ``None``."""
    for key in ("model", "instructions", "tools"):
        if canonical(previous.get(key)) != canonical(body.get(key)):
            return key
    old, new = previous.get("input") or [], body.get("input") or []
    for index, item in enumerate(old):
        if index >= len(new):
            return f"input: {kind(item)} -> (none)"
        if canonical(item) != canonical(new[index]):
            return f"input: {kind(item)} -> {kind(new[index])}"
    return None


def pieces(body: dict[str, Any]) -> list[bytes]:
    """The prompt in a prefix cache's order, each piece as canonical JSON: the model (counted
    as no bytes: it only has to match), the tools, the instructions, then each input item."""
    return [
        canonical(body.get("model")).encode(),
        canonical(body.get("tools")).encode(),
        canonical(body.get("instructions")).encode(),
        *(canonical(item).encode() for item in body.get("input") or []),
    ]


def common_prefix(a: bytes, b: bytes) -> int:
    """The length of the longest common prefix of ``a`` and ``b``."""
    low, high = 0, min(len(a), len(b))
    while low < high:  # a[:low] == b[:low]; find the largest such low by halving
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def already_sent(previous: dict[str, Any], body: dict[str, Any]) -> float:
    """The share of ``body``'s prompt bytes that ``previous`` sent first, in the same place:
    the longest common prefix of the two prompts' bytes, piece by piece."""
    old, new = pieces(previous), pieces(body)
    if old[0] != new[0]:
        return 0.0
    total = sum(len(piece) for piece in new[1:])
    shared = 0
    for index in range(1, len(new)):
        if index >= len(old):
            break
        if old[index] == new[index]:
            shared += len(new[index])
            continue
        shared += common_prefix(old[index], new[index])
        break
    return shared / total if total else 1.0


@dataclass
class Measure:
    subject: str
    requests: int = 0
    compactions: int = 0
    compared: int = 0
    extend: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    broken_outside_compaction: int = 0
    replayed: int = 0
    expected: int = 0
    produced: int = 0
    complete: int = 0  # produced items with a later request, carried on every one
    followed: int = 0  # produced items with a later request (in their segment)
    shares: list[float] = field(default_factory=list)


def measure(subject: str, seen: list[Seen]) -> Measure:
    result = Measure(subject)
    segment = 0
    requests: list[tuple[int, Seen]] = []  # (segment, request)
    for entry in seen:
        if entry.path.endswith("/responses/compact"):
            result.compactions += 1
            segment += 1
        elif entry.path.endswith("/responses"):
            requests.append((segment, entry))
    result.requests = len(requests)
    for (old_segment, previous), (new_segment, current) in itertools.pairwise(requests):
        result.compared += 1
        result.shares.append(already_sent(previous.body, current.body))
        reason = difference(previous.body, current.body)
        if reason is None:
            result.extend += 1
        elif new_segment != old_segment:
            result.reasons[f"at compaction: {reason}"] += 1
        else:
            result.reasons[reason] += 1
            result.broken_outside_compaction += 1
    for index, (produced_segment, entry) in enumerate(requests):
        if entry.produced is None:
            continue
        result.produced += 1
        rid, blob = entry.produced["id"], entry.produced["encrypted_content"]
        expected = carried = 0
        for later_segment, later in requests[index + 1 :]:
            if later_segment != produced_segment:
                break
            expected += 1
            carried += any(
                isinstance(item, dict)
                and item.get("type") == "reasoning"
                and (item.get("id") == rid or item.get("encrypted_content") == blob)
                for item in later.body.get("input") or []
            )
        result.expected += expected
        result.replayed += carried
        result.followed += expected > 0
        result.complete += expected > 0 and carried == expected
    return result


def report(results: list[Measure]) -> None:
    print(
        f"{'subject':<22} {'requests':>8} {'compactions':>11} {'extend':>7} "
        f"{'reasoning replayed':>18} {'items on every later':>20} {'already sent':>12}"
    )
    for r in results:
        share = sum(r.shares) / len(r.shares) if r.shares else 0.0
        ratio = f"{r.replayed / r.expected:.0%}" if r.expected else "-"
        print(
            f"{r.subject:<22} {r.requests:>8} {r.compactions:>11} "
            f"{f'{r.extend}/{r.compared}':>7} {f'{r.replayed}/{r.expected} {ratio}':>18} "
            f"{f'{r.complete}/{r.followed}':>20} {share:>12.1%}"
        )
    print()
    for r in results:
        print(f"{r.subject}: {r.produced} reasoning items produced; requests that do not extend:")
        for reason, count in sorted(r.reasons.items(), key=lambda pair: (-pair[1], pair[0])):
            print(f"  {count:>3} x {reason}")
        if not r.reasons:
            print("    none")
    stable = next((r for r in results if r.subject == "turnwire cache-stable"), None)
    if stable is None:
        return
    extends = stable.broken_outside_compaction == 0 and stable.compactions == 1
    replays = stable.replayed == stable.expected
    print()
    print(
        "context_placement: timeline, every request extends the previous one except at the "
        f"compaction: {'yes' if extends else 'no'} ({stable.extend} of {stable.compared} extend; "
        f"not: {', '.join(stable.reasons) or 'none'})"
    )
    print(
        "context_placement: timeline, every reasoning item produced replayed on every later "
        f"request until the compaction: {'yes' if replays else 'no'} "
        f"({stable.replayed} of {stable.expected})"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 turns instead of 30")
    parser.add_argument(
        "--only",
        action="append",
        choices=("default", "cache-stable", "openai-agents", "pydantic-ai"),
        help="run only this subject (repeatable)",
    )
    args = parser.parse_args()
    turns = 10 if args.quick else 30
    plan = conversation(turns)
    png_bytes = tiny_png()

    with tempfile.TemporaryDirectory() as folder:
        png = Path(folder) / "photo.png"
        png.write_bytes(png_bytes)
        subjects: list[tuple[str, str, Callable[[str], None]]] = [
            ("default", "turnwire default", lambda url: drive_turnwire(plan, png, url, DEFAULT)),
            (
                "cache-stable",
                "turnwire cache-stable",
                lambda url: drive_turnwire(plan, png, url, CACHE_STABLE),
            ),
            ("openai-agents", "openai-agents", lambda url: drive_agents(plan, png_bytes, url)),
            ("pydantic-ai", "pydantic-ai", lambda url: drive_pydantic_ai(plan, png_bytes, url)),
        ]
        results, skipped = [], []
        for key, subject, drive in subjects:
            if args.only and key not in args.only:
                continue
            with Server() as server:
                try:
                    drive(server.base_url)
                except ImportError as error:  # a peer not installed: uv sync --group bench
                    skipped.append(f"{subject} skipped: {error} (uv sync --group bench)")
                    continue
                except ConfigError as error:  # a turnwire without render.context_placement
                    skipped.append(f"{subject} skipped: {error}")
                    continue
            results.append(measure(subject, server.seen))

    print(
        f"turnwire conversation benchmark (Python {sys.version.split()[0]}, {turns} turns: "
        f"{sum(1 for t in plan if ORDER.search(t.question))} with a tool call, "
        f"{sum(1 for t in plan if t.image)} with an image, {len(plan)} documents, "
        f"{sum(1 for t in plan if t.memory)} memories, compaction before turn "
        f"{next(t.index for t in plan if t.compact_before)})"
    )
    for line in skipped:
        print(line)
    report(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
