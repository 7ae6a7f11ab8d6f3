"""A tool loop end to end on one local server: turnwire's Client against the raw SDK and two
agent libraries, per request and against a bare HTTP floor, with the TCP connections each opens.

The loop: a conversation of 1,000 prior items (``--prior``: user and assistant messages in
turn), then a question; the model calls one function tool (``lookup``) 20 times, one call per
answer, then answers in text: 21 requests per run, each carrying the whole conversation so far.

The server: a real HTTP/1.1 server on 127.0.0.1 (keep-alive, a separate process, so it never
competes with the subjects for the interpreter's lock), the same for every subject. It answers
``POST /v1/responses`` from the request's content: while the ``input`` holds fewer than 20
``function_call_output`` items, a ``function_call`` of ``lookup``; then an assistant message. A
request with ``stream: true`` gets a complete Responses event stream (``response.created`` ...
``response.completed``, ``benchmarks/conversation.py``'s events), one without it the response
as JSON. It counts the TCP connections that carried a request.

The subjects, each made once and reused for every run, as a program would:

* turnwire: one ``turnwire.Client`` (``tools=[lookup]``, ``client.max_iterations: 30``),
  ``await client.run(thread)`` per run (streams);
* raw SDK: one ``openai.AsyncOpenAI``, a loop written here: ``responses.create(stream=True)``,
  the events iterated to ``response.completed``, its output items and the tool's results
  appended to ``input``, until an answer without calls;
* openai-agents: ``Runner.run`` of an ``Agent`` (``OpenAIResponsesModel`` on one
  ``AsyncOpenAI``, ``function_tool`` ``lookup``, ``max_turns=30``, tracing off), the prior items
  and the question as its input (it does not stream);
* pydantic-ai: ``agent.run(question, message_history=prior)`` of an ``Agent`` on
  ``OpenAIResponsesModel`` (one ``AsyncOpenAI``), ``lookup`` a ``tool_plain`` (it does not
  stream);
* the floor: a bare ``httpx.Client`` POSTing the 21 request bodies turnwire sent in a run
  before the timed ones (the server keeps the last 21 it received: the very bytes, captured
  by a turnwire client of its own, made and closed before the subjects run) and reading each
  answer whole: the HTTP and the server's work for the same bytes, nothing else; and the same
  with ``httpx.AsyncClient`` on the event loop. A floor must send what turnwire sends: its
  bodies are about 1.5x the plain Responses items of the same conversation (each message in
  its envelope, each tool result fenced, the tool's whole docstring), and on this machine the
  HTTP and the server's work grow with the bytes;
* the minimal body, for reference: the same ``httpx.Client`` POSTing the conversation as
  plain Responses items (built beforehand: the messages' texts, ``lookup`` described in one
  line, each call and its output bare), what a hand-written loop would send. Its ratio is
  what turnwire's extra bytes cost in HTTP and server work, not part of the target.

Every subject runs once per round, in an order rotated round by round (the peers, much slower,
in the first rounds only); per-request time is a run's time over its 21 requests, medians over
rounds; each ratio is the median of the rounds' ratios against the floor (the peers' against
turnwire). Targets: turnwire at most 2x the floor per request, 1 TCP connection per client.
The header line gives the mean body of each: turnwire's (the floor's) and the minimal one.

TCP connections are counted by the server (those that carried a request): over each client's
first two runs, back to back and untimed, and per timed run. Between two timed runs of one
client the others run, often longer than httpx's keep-alive expiry (5 s), so a pool that keeps
its connection still opens one per alternated run; more than one in a run is what counts.

Run: ``uv run --group bench python benchmarks/client_loop.py`` (``--quick``: 100 prior items,
fewer rounds). Without the bench group the two libraries print that they are skipped.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import urllib.request
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import msgspec
from _rounds import Samples, alternate, ms, skipped, verdict

CALLS = 20
REQUESTS = CALLS + 1
MODEL = "gpt-5"
KEY = "sk-local-benchmark"
QUESTION = "Look the thing up, twenty times, then tell me."
TOOL = {
    "type": "function",
    "name": "lookup",
    "description": "Look up entry n.",
    "parameters": {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
        "additionalProperties": False,
    },
    "strict": True,
}


def lookup(n: int) -> str:
    """Look up entry n.

    :param n: the entry's number.
    """
    return f"entry {n}: found, nothing unusual."


def prior_texts(count: int) -> list[tuple[str, str]]:
    """The prior conversation: ``count`` (role, text) pairs, user and assistant in turn."""
    return [
        ("user" if i % 2 == 0 else "assistant", f"Message {i}: " + "some words here " * 6)
        for i in range(count)
    ]


# ---------------------------------------------------------------- the server


def serve() -> None:
    """The server process: prints its port, serves until stdin closes."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from conversation import answer_events

    decode = msgspec.json.decode
    lock = threading.Lock()
    connections = [0]
    answered = [0]
    received: deque[bytes] = deque(maxlen=REQUESTS)  # the last run's bodies, for the floor

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        counted = False

        def setup(self) -> None:
            super().setup()
            # The status line and headers go in one write, the body in another: without this,
            # Nagle's algorithm holds the body for the client's delayed ACK (40 ms a request).
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_GET(self) -> None:  # the counters, on a connection of their own
            if self.path.endswith("/bodies"):  # the last 21 bodies received, exactly
                with lock:
                    kept = list(received)
                self._send(200, "application/msgpack", msgspec.msgpack.encode(kept))
                return
            payload = json.dumps({"connections": connections[0], "requests": answered[0]})
            self._send(200, "application/json", payload.encode())

        def do_POST(self) -> None:
            if not self.counted:
                self.counted = True
                with lock:
                    connections[0] += 1
            raw = self._body()
            body = decode(raw)
            items = body.get("input") or []
            done = sum(
                1 for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"
            )
            with lock:
                answered[0] += 1
                n = answered[0]
                received.append(raw)
            if done < CALLS:
                item: dict[str, Any] = {
                    "id": f"fc_{n}",
                    "type": "function_call",
                    "status": "completed",
                    "call_id": f"call_{n}",
                    "name": "lookup",
                    "arguments": json.dumps({"n": done}),
                }
            else:
                item = {
                    "id": f"msg_{n}",
                    "type": "message",
                    "role": "assistant",
                    "status": "completed",
                    "content": [
                        {"type": "output_text", "text": "All twenty found.", "annotations": []}
                    ],
                }
            events = answer_events(f"resp_{n}", [item], raw)
            if body.get("stream"):
                frames = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
                self._send(200, "text/event-stream", frames.encode())
            else:
                self._send(200, "application/json", json.dumps(events[-1]["response"]).encode())

        def _body(self) -> bytes:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                data = b""
                while True:
                    size = int(self.rfile.readline().strip().split(b";")[0], 16)
                    if not size:
                        self.rfile.readline()
                        return data
                    data += self.rfile.read(size)
                    self.rfile.readline()
            return self.rfile.read(int(self.headers.get("Content-Length", "0")))

        def _send(self, status: int, kind: str, payload: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(server.server_address[1], flush=True)
    sys.stdin.read()  # until the parent closes it
    server.shutdown()


class Server:
    """The server process, seen from the benchmark."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        self.port = int(self.process.stdout.readline())
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    def counters(self) -> dict[str, int]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/stats", timeout=10) as got:
            return dict(json.load(got))

    def bodies(self) -> list[bytes]:
        """The last 21 request bodies the server received, as they came."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/bodies", timeout=10) as got:
            kept = msgspec.msgpack.decode(got.read(), type=list[bytes])
        assert len(kept) == REQUESTS
        return kept

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=10)


# ---------------------------------------------------------------- the subjects


class Subject:
    """One program's client, kept across runs; ``run`` is one 21-request loop."""

    name = ""
    what = ""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop

    def run(self) -> None:
        self.loop.run_until_complete(self.arun())

    async def arun(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        return


class Turnwire(Subject):
    name = "turnwire"
    what = "Client.run(thread): renders, streams, runs the tool, records, loops"

    def __init__(self, loop: asyncio.AbstractEventLoop, base_url: str, prior: int) -> None:
        super().__init__(loop)
        import turnwire
        from turnwire.model.records import Message, Thread

        self.client = turnwire.Client(
            base_url=base_url,
            api_key=KEY,
            tools=[lookup],
            overrides={"client": {"max_iterations": CALLS + 10}},
        )
        start = datetime(2026, 1, 1, tzinfo=UTC)
        messages = [
            Message(id=f"m{i}", role=role, content=text, created_at=start + timedelta(seconds=i))
            for i, (role, text) in enumerate(prior_texts(prior))
        ]
        messages.append(
            Message(
                id="question",
                role="user",
                content=QUESTION,
                created_at=start + timedelta(seconds=prior + 1),
            )
        )
        self.thread = Thread(model=MODEL, messages=tuple(messages))

    async def arun(self) -> None:
        result = await self.client.run(self.thread)
        assert len(result.thread.tool_calls) == CALLS, "20 calls, then the answer"

    def close(self) -> None:
        self.loop.run_until_complete(self.client.aclose())


class RawSDK(Subject):
    name = "raw SDK"
    what = "AsyncOpenAI.responses.create(stream=True) in a hand-written loop"

    def __init__(self, loop: asyncio.AbstractEventLoop, base_url: str, prior: int) -> None:
        super().__init__(loop)
        from openai import AsyncOpenAI

        self.client = AsyncOpenAI(base_url=base_url, api_key=KEY, max_retries=0)
        self.start: list[dict[str, Any]] = [
            {"role": role, "content": text} for role, text in prior_texts(prior)
        ]
        self.start.append({"role": "user", "content": QUESTION})

    async def arun(self) -> None:
        items = list(self.start)
        calls = 0
        while True:
            stream = await self.client.responses.create(
                model=MODEL, input=items, tools=[TOOL], stream=True, store=False
            )
            response = None
            async for event in stream:
                if event.type == "response.completed":
                    response = event.response
            assert response is not None
            asked = [o for o in response.output if o.type == "function_call"]
            items += [o.model_dump(exclude_none=True) for o in response.output]
            for call in asked:
                output = lookup(**json.loads(call.arguments))
                items.append(
                    {"type": "function_call_output", "call_id": call.call_id, "output": output}
                )
            calls += len(asked)
            if not asked:
                break
        assert calls == CALLS

    def close(self) -> None:
        self.loop.run_until_complete(self.client.close())


class Agents(Subject):
    name = "openai-agents"
    what = "Runner.run(agent, prior + question), its own loop; no streaming"

    def __init__(self, loop: asyncio.AbstractEventLoop, base_url: str, prior: int) -> None:
        super().__init__(loop)
        from agents import Agent, ModelSettings, RunConfig, function_tool, set_tracing_disabled
        from agents.models.openai_responses import OpenAIResponsesModel
        from openai import AsyncOpenAI

        set_tracing_disabled(True)
        self.client = AsyncOpenAI(base_url=base_url, api_key=KEY, max_retries=0)
        self.agent = Agent(
            name="looker",
            instructions="Look things up.",
            model=OpenAIResponsesModel(MODEL, self.client),
            tools=[function_tool(lookup)],
            model_settings=ModelSettings(store=False),
        )
        self.config = RunConfig(tracing_disabled=True)
        self.start: list[Any] = [
            {"role": role, "content": text} for role, text in prior_texts(prior)
        ]
        self.start.append({"role": "user", "content": QUESTION})

    async def arun(self) -> None:
        from agents import Runner

        result = await Runner.run(
            self.agent, list(self.start), max_turns=CALLS + 10, run_config=self.config
        )
        assert result.final_output

    def close(self) -> None:
        self.loop.run_until_complete(self.client.close())


class PydanticAI(Subject):
    name = "pydantic-ai"
    what = "agent.run(question, message_history=prior), its own loop; no streaming"

    def __init__(self, loop: asyncio.AbstractEventLoop, base_url: str, prior: int) -> None:
        super().__init__(loop)
        from openai import AsyncOpenAI
        from pydantic_ai import Agent
        from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart
        from pydantic_ai.models.openai import OpenAIResponsesModel, OpenAIResponsesModelSettings
        from pydantic_ai.providers.openai import OpenAIProvider

        self.client = AsyncOpenAI(base_url=base_url, api_key=KEY, max_retries=0)
        model = OpenAIResponsesModel(MODEL, provider=OpenAIProvider(openai_client=self.client))
        self.agent = Agent(
            model,
            instructions="Look things up.",
            model_settings=OpenAIResponsesModelSettings(openai_store=False),
        )
        self.agent.tool_plain(lookup)
        self.history: list[Any] = [
            ModelRequest(parts=[UserPromptPart(content=text)])
            if role == "user"
            else ModelResponse(parts=[TextPart(content=text)])
            for role, text in prior_texts(prior)
        ]

    async def arun(self) -> None:
        result = await self.agent.run(QUESTION, message_history=list(self.history))
        assert result.output

    def close(self) -> None:
        self.loop.run_until_complete(self.client.close())


def minimal_bodies(prior: int) -> list[bytes]:
    """The 21 bodies of the conversation as plain Responses items, encoded beforehand: what
    the minimal-body line POSTs."""
    items: list[dict[str, Any]] = [
        {"type": "message", "role": role, "content": text} for role, text in prior_texts(prior)
    ]
    items.append({"type": "message", "role": "user", "content": QUESTION})
    bodies = []
    for n in range(REQUESTS):
        body = {"model": MODEL, "input": items, "tools": [TOOL], "stream": True, "store": False}
        bodies.append(msgspec.json.encode(body))
        items = [
            *items,
            {"type": "function_call", "call_id": f"c{n}", "name": "lookup", "arguments": "{}"},
            {"type": "function_call_output", "call_id": f"c{n}", "output": lookup(n)},
        ]
    return bodies


class Floor(Subject):
    name = "floor"
    what = "httpx.Client: POST each of turnwire's bodies, read the answer whole"

    def __init__(self, loop: asyncio.AbstractEventLoop, base_url: str, bodies: list[bytes]) -> None:
        super().__init__(loop)
        self.url = base_url + "/responses"
        self.bodies = bodies
        self.client = httpx.Client(timeout=60)
        self.headers = {"Content-Type": "application/json", "Authorization": f"Bearer {KEY}"}

    def run(self) -> None:
        for body in self.bodies:
            answer = self.client.post(self.url, content=body, headers=self.headers)
            assert answer.status_code == 200 and answer.content

    def close(self) -> None:
        self.client.close()


class AsyncFloor(Floor):
    name = "async floor"
    what = "httpx.AsyncClient on the event loop: the same"

    def __init__(self, loop: asyncio.AbstractEventLoop, base_url: str, bodies: list[bytes]) -> None:
        super().__init__(loop, base_url, bodies)
        self.client.close()
        self.aclient = httpx.AsyncClient(timeout=60)

    def run(self) -> None:
        self.loop.run_until_complete(self.arun())

    async def arun(self) -> None:
        for body in self.bodies:
            answer = await self.aclient.post(self.url, content=body, headers=self.headers)
            assert answer.status_code == 200 and answer.content

    def close(self) -> None:
        self.loop.run_until_complete(self.aclient.aclose())


class MinimalBody(Floor):
    name = "minimal body"
    what = "httpx.Client: POST the conversation as plain Responses items (reference)"


PEERS: dict[str, tuple[type[Subject], str]] = {
    "raw SDK": (RawSDK, "openai"),
    "openai-agents": (Agents, "agents"),
    "pydantic-ai": (PydanticAI, "pydantic_ai"),
}


def counted(server: Server, subject: Subject, opened: dict[str, list[int]]) -> Callable[[], None]:
    """``subject.run``, noting the TCP connections the server saw it open."""

    def run() -> None:
        before = server.counters()["connections"]
        subject.run()
        opened[subject.name].append(server.counters()["connections"] - before)

    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 prior items, fewer rounds")
    parser.add_argument("--prior", type=int, help="prior items (default 1000)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve()
        return 0
    os.environ.setdefault("TURNWIRE_ENVELOPE_SECRET", "benchmark-secret")
    prior = args.prior if args.prior is not None else (100 if args.quick else 1_000)
    rounds, peer_rounds = (2, 1) if args.quick else (15, 3)

    import importlib.util

    server = Server()
    loop = asyncio.new_event_loop()
    capture = Turnwire(loop, server.base_url, prior)  # one run: the bodies the floor sends
    capture.run()
    capture.close()
    sent = server.bodies()
    minimal = minimal_bodies(prior)
    subjects: list[Subject] = [
        Turnwire(loop, server.base_url, prior),
        Floor(loop, server.base_url, sent),
        AsyncFloor(loop, server.base_url, sent),
        MinimalBody(loop, server.base_url, minimal),
    ]
    peers: list[Subject] = []
    missing: list[tuple[str, str]] = []
    for name, (kind, module) in PEERS.items():
        if importlib.util.find_spec(module) is None:
            missing.append((name, f"{module} is not installed: uv sync --group bench"))
        else:
            peers.append(kind(loop, server.base_url, prior))
    try:
        opened: dict[str, list[int]] = {s.name: [] for s in [*subjects, *peers]}
        back_to_back: dict[str, int] = {}
        for subject in [*subjects, *peers]:  # two untimed runs each, one after the other
            before = server.counters()["connections"]
            subject.run()
            subject.run()
            back_to_back[subject.name] = server.counters()["connections"] - before
        everyone = {s.name: counted(server, s, opened) for s in [*subjects, *peers]}
        alone = {s.name: everyone[s.name] for s in subjects}
        samples: Samples = alternate(everyone, min(peer_rounds, rounds))
        later = alternate(alone, max(0, rounds - peer_rounds))
        for name, values in later.items():
            samples[name] += values
    finally:
        for subject in [*subjects, *peers]:
            subject.close()
        loop.close()
        server.close()

    def per_request(name: str) -> str:
        return ms([t / REQUESTS for t in samples[name]])

    def over(name: str, floor: str) -> float:
        return statistics.median(s / f for s, f in zip(samples[name], samples[floor], strict=False))

    print(
        f"client loop benchmark (Python {sys.version.split()[0]}; {prior} prior items, "
        f"{CALLS} tool calls then an answer: {REQUESTS} requests a run; {rounds} rounds, the "
        f"peers in the first {min(peer_rounds, rounds)}; per-request ms median (min); ratios "
        "the median of each round's; TCP connections the server saw each client open; bodies "
        f"{statistics.mean(map(len, sent)) / 1e3:.0f} KB a request on average, turnwire's and "
        f"the floor's, {statistics.mean(map(len, minimal)) / 1e3:.0f} KB the minimal one's)"
    )
    for subject in [*subjects, *peers]:
        name = subject.name
        line = f"  {name:<14} {per_request(name)}"
        if name != "floor":
            ratio = over(name, "floor")
            line += f"  {ratio:.2f}x the floor"
            if name == "turnwire":
                line += f" ({verdict(ratio, 2)})"
        if subject in peers:
            line += f", {over(name, 'turnwire'):.0f}x turnwire"
        line += (
            f"; TCP connections: {back_to_back[name]} over its first two runs back to back, "
            f"{statistics.median(opened[name]):g} per alternated run"
        )
        if name == "turnwire":
            met = back_to_back[name] == 1 and max(opened[name]) <= 1
            line += f" (target 1 per client: {'met' if met else 'MISSED'})"
        print(line + f"  [{subject.what}]")
    for name, why in missing:
        skipped(name, why)
    return 0


if __name__ == "__main__":
    sys.exit(main())
