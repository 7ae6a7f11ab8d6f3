"""``turnwire demo``: a whole conversation, end to end, with no network and no API key.

A local HTTP server on 127.0.0.1 answers with recorded OpenAI Responses traffic (see
``demo/data/ATTRIBUTION.md``); everything else is the real stack: a thread in the SQLite
store, rendering, the preflight check, httpx over a socket, the SSE decoder, the output slots,
a tool call run by its handler, reasoning items recorded and replayed, an image attachment,
and the turns written back to the store.
"""

from __future__ import annotations

import contextlib
import json
import shlex
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["DemoServer", "run_demo"]


def _data(name: str) -> bytes:
    return resources.files("turnwire").joinpath("demo", "data", name).read_bytes()


def _frames(data: bytes) -> list[bytes]:
    return [frame + b"\n\n" for frame in data.split(b"\n\n") if frame.strip()]


class DemoServer:
    """Serves the recorded answers, choosing by what the request asks.

    A request that carries a tool result gets the recorded weather answer; one with an image
    gets the recorded image answer; any other gets the recorded weather tool call. Streams are
    sent event by event, a few milliseconds apart, as a live server sends them.
    """

    def __init__(self, *, pace_s: float = 0.004) -> None:
        self.requests: list[dict[str, Any]] = []
        demo = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                body = json.loads(self.rfile.read(length))
                demo.requests.append(body)
                kind, payload = demo.answer(body)
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Transfer-Encoding", "chunked")
                self.send_header("Connection", "close")
                self.end_headers()
                for chunk in payload:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
                    if pace_s and kind == "text/event-stream":
                        time.sleep(pace_s)
                self.wfile.write(b"0\r\n\r\n")

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def answer(self, body: dict[str, Any]) -> tuple[str, list[bytes]]:
        items = body.get("input", [])
        if any(item.get("type") == "function_call_output" for item in items[-2:]):
            return "text/event-stream", _frames(_data("weather_answer_gpt-5.sse"))
        last = items[-1] if items else {}
        content = last.get("content")
        parts: list[Any] = content if isinstance(content, list) else []
        if any(part.get("type") == "input_image" for part in parts):
            return "application/json", [_data("image_answer_gpt-4o.json")]
        return "text/event-stream", _frames(_data("weather_call_gpt-5.sse"))

    def __enter__(self) -> DemoServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


SETTINGS = {
    "render": {
        "reasoning_replay": "encrypted",
        "replay_compatibility": ["openai-responses-reasoning-v1"],
        "envelope_secret_env": "TURNWIRE_DEMO_ENVELOPE_SECRET",
    },
    "request": {"model": "gpt-5", "reasoning": {"effort": "medium", "summary": "auto"}},
    "client": {"retry": {"max_retries": 0}, "request_timeout_s": 60},
    "plugins": {"load_entrypoints": False},
    # The thread names the tool; the code that runs it is registered here, never in the thread.
    "tools": {"handlers": {"weather": "turnwire.examples.tools:get_weather"}},
}
WEATHER_TOOL = {
    "name": "weather",
    "description": "Get weather information for a location",
    "parameters": {
        "type": "object",
        "properties": {"location": {"type": "string", "description": "the city"}},
        "required": ["location"],
    },
}


def _request_summary(body: dict[str, Any]) -> str:
    items = body.get("input", [])
    reasoning = sum(1 for item in items if item.get("type") == "reasoning")
    paired = [
        items[i + 1].get("type")
        for i, item in enumerate(items[:-1])
        if item.get("type") == "reasoning"
    ]
    images = sum(
        1
        for item in items
        if isinstance(item.get("content"), list)
        for part in item["content"]
        if part.get("type") == "input_image"
    )
    text = (
        f"{len(items)} input items, store: {str(body.get('store')).lower()}, "
        f"{len(body.get('tools') or [])} tool(s)"
    )
    if reasoning:
        text += (
            f", replaying {reasoning} reasoning item(s) with encrypted_content "
            f"(each right before its {', '.join(sorted(set(paired)))})"
        )
    if images:
        text += f", {images} image(s) as input_image"
    return text


def _turnwire_command() -> str:
    """How the person who ran the demo runs turnwire again, as a command that works from where
    they are: ``uv run --no-dev turnwire`` in the checkout whose environment runs this demo
    (runtime dependencies only, as the README's demo command), else the ``turnwire`` on their
    PATH when it is this environment's, else this interpreter with ``-m turnwire``."""
    prefix = Path(sys.prefix)
    root = prefix.parent
    if (root / "pyproject.toml").is_file() and (root / "uv.lock").is_file():
        with contextlib.suppress(OSError):
            if Path.cwd().resolve().is_relative_to(root.resolve()):
                return "uv run --no-dev turnwire"
    found = shutil.which("turnwire")
    if found and Path(found).resolve().parent == (prefix / "bin").resolve():
        return "turnwire"
    return f"{shlex.quote(sys.executable)} -m turnwire"


def run_demo(
    *, db: str | None = None, out: Callable[[str], None] | None = None, pace_s: float = 0.004
) -> int:
    """Run the demo; print what a user should see; return the exit status.

    Everything the demo makes for itself (the image it attaches, the envelope secret, and,
    unless ``db`` names a store to keep, the store and its files) lives in one temporary folder
    that is deleted before it returns, whatever happens; with ``db``, the store and its
    ``files/`` are kept there and nothing else is written beside them.
    """
    from turnwire.errors import StoreError

    kept = Path(db) if db else None
    if kept is not None and not kept.parent.is_dir():
        # As every other --store: a typo must not quietly start a store somewhere else.
        raise StoreError(f"the store's folder {kept.parent} does not exist; create it first")
    with tempfile.TemporaryDirectory(prefix="turnwire-demo-") as scratch:
        thread_id, count = _converse(Path(scratch), kept, out or print, pace_s)
    say = out or print
    command = _turnwire_command()
    if kept is None:
        say(
            f"\nStored thread {thread_id} ({count} turns) in a temporary store, deleted now with "
            "its files and the demo's secret. To keep the thread:"
        )
        say(f"  keep it:  {command} demo --store demo.db")
        return 0
    store = shlex.quote(str(kept))
    say(f"\nStored thread {thread_id} ({count} turns) in {kept}")
    say(f"  see it:   {command} threads show {thread_id} --store {store}")
    say(
        f"  go on:    {command} run --thread {thread_id} --store {store} "
        "--prompt 'And in Rome?' "
        "--set 'tools.handlers={weather: turnwire.examples.tools:get_weather}'"
    )
    say("            (needs OPENAI_API_KEY: it asks the real API)")
    return 0


def _converse(
    scratch: Path, kept: Path | None, say: Callable[[str], None], pace_s: float
) -> tuple[str, int]:
    """The two turns of the demo, in a store at ``kept`` or in ``scratch``; the thread's id and
    its number of turns."""
    import turnwire
    from turnwire.api import run_thread
    from turnwire.config.settings import load_settings, merge
    from turnwire.hookspecs import hookimpl
    from turnwire.store.sqlite import SQLiteStore

    streamed = [False]

    def stream(delta: str) -> None:
        if not streamed[0]:
            sys.stdout.write("  assistant: ")
        streamed[0] = True
        sys.stdout.write(delta)
        sys.stdout.flush()

    store_path = kept or scratch / "threads.db"
    potato = scratch / "potato.png"
    potato.write_bytes(_data("potato.png"))

    class Narrator:
        @hookimpl
        def on_prompt_assembled(self, body: bytes, attempt_kind: str) -> None:
            say(f"  [request] POST /responses: {_request_summary(json.loads(body))}")

    # The demo's own secret lives in its temporary folder: never in the user's config folder,
    # never beside a store the user keeps.
    secret = {"render": {"envelope_secret_file": str(scratch / "envelope-secret")}}
    settings = load_settings(overrides=merge(SETTINGS, secret))
    container = turnwire.build_container(settings=settings, extra_plugins=[Narrator()])

    def on_tool(call: Any) -> None:
        result = call.result.text if call.result is not None else ""
        say(f"  [tool] {call.tool}({json.dumps(call.args)}) -> {result}")

    say(
        "turnwire demo: offline. A local server on 127.0.0.1 answers with RECORDED OpenAI "
        "Responses API traffic (not a live model); everything else is turnwire for real."
    )
    with DemoServer(pace_s=pace_s) as server, SQLiteStore(store_path) as store:
        header = turnwire.load_thread(
            {
                "version": 1,
                "model": "gpt-5",
                "system_prompt": "You are a helpful assistant.",
                "tools": [WEATHER_TOOL],
            }
        )
        thread_id = store.create_thread(header, title="turnwire demo")
        turns = [("What's the weather in Florence?", []), ("hello", [potato])]
        for number, (prompt, files) in enumerate(turns, 1):
            attached = "".join(f"  + {Path(f).name}" for f in files)
            say(f"\n[turn {number}] you: {prompt}{attached}")
            streamed[0] = False
            result = run_thread(
                thread_id,
                store=store,
                prompt=prompt,
                files=files,
                container=container,
                base_url=server.base_url,
                on_text=stream,
                on_tool_result=on_tool,
            )
            if not streamed[0] and result.records.messages:  # a JSON (non-streamed) answer
                sys.stdout.write(f"  assistant: {result.records.messages[-1].content or ''}")
            say("")
            usage = result.response.usage or {}
            say(
                f"  [response] {result.response.model}, {usage.get('total_tokens', '?')} "
                f"tokens, {result.iterations} request(s); recorded "
                f"{len(result.records.messages)} message(s), {len(result.records.thoughts)} "
                f"reasoning item(s), {len(result.records.tool_calls)} tool call(s)"
            )
        return thread_id, len(store.turns(thread_id))
