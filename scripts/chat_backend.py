"""A tiny scripted OpenAI chat-completions server on 127.0.0.1, for recording bridges.

Third-party servers that offer ``POST /v1/responses`` on top of chat completions (litellm's
proxy, open-responses-server) are run in front of this backend; ``record_thirdparty.py``
records what they stream. The answer is chosen from the request alone, so any bridge gets the
same script whatever it sends:

- the last message has role ``tool``: a text answer that quotes the tool results (scenario
  ``text_after_tool``);
- else the last user text mentions ``Tokyo``: two parallel ``get_weather`` calls, Paris and
  Tokyo (``parallel_tool_calls``);
- else it mentions ``weather``: one ``get_weather`` call for Paris (``tool_call``);
- else a plain text answer (``text``).

A model name ending in ``-empty-content`` opens a streamed tool-call answer with
``"content": ""`` instead of ``null`` (as some OpenAI-compatible servers do).

Both ``stream: true`` (``data: {...}`` chunks, a usage chunk when
``stream_options.include_usage`` is set, then ``data: [DONE]``) and ``stream: false`` are
served. Ids and timestamps are fixed, so recordings differ only where the bridge differs.
Every request is kept in ``server.seen`` (method, path, JSON body; never headers) and, run as a
program, appended as one JSON line to ``--log`` when given.

Run: ``python scripts/chat_backend.py --port 18001 --log /tmp/backend.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

CREATED = 1767225600  # 2026-01-01T00:00:00Z
TEXT = "Hello! I am a scripted backend. How can I help you today?"
EMPTY_CONTENT_SUFFIX = "-empty-content"
CALLS = {
    "Paris": ("call_weather_paris", '{"city":"Paris"}'),
    "Tokyo": ("call_weather_tokyo", '{"city":"Tokyo"}'),
}


def _user_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            return " ".join(
                part.get("text", "") for part in content or () if isinstance(part, dict)
            )
    return ""


def _tool_texts(messages: list[dict[str, Any]]) -> list[str]:
    texts = []
    for message in messages:
        if message.get("role") == "tool":
            content = message.get("content")
            if not isinstance(content, str):
                content = "".join(p.get("text", "") for p in content or () if isinstance(p, dict))
            texts.append(content)
    return texts


def choose(body: dict[str, Any]) -> tuple[str, str | None, list[tuple[str, str, str]]]:
    """``(scenario, text, [(call_id, name, arguments)])`` for a chat-completions request."""
    messages = body.get("messages") or []
    if messages and messages[-1].get("role") == "tool":
        results = "; ".join(_tool_texts(messages))
        return "text_after_tool", f"The tool said: {results}. Enjoy your day!", []
    user = _user_text(messages)
    if "Tokyo" in user:
        calls = [(CALLS[c][0], "get_weather", CALLS[c][1]) for c in ("Paris", "Tokyo")]
        return "parallel_tool_calls", None, calls
    if "weather" in user.lower():
        return "tool_call", None, [(CALLS["Paris"][0], "get_weather", CALLS["Paris"][1])]
    return "text", TEXT, []


def _usage(text: str | None, calls: list[tuple[str, str, str]]) -> dict[str, int]:
    completion = len((text or "").split()) + 8 * len(calls)
    return {"prompt_tokens": 42, "completion_tokens": completion, "total_tokens": 42 + completion}


def _pieces(value: str, size: int) -> list[str]:
    return [value[i : i + size] for i in range(0, len(value), size)]


def stream_chunks(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``chat.completion.chunk`` objects of a streamed answer, in order."""
    scenario, text, calls = choose(body)
    model = body.get("model", "scripted")
    base = {
        "id": f"chatcmpl-{scenario}",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": model,
        "system_fingerprint": "fp_scripted",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {**base, "choices": [choice]}

    # OpenAI opens a tool-call answer with content null; some compatible servers send "".
    empty = text is not None or str(model).endswith(EMPTY_CONTENT_SUFFIX)
    chunks = [chunk({"role": "assistant", "content": "" if empty else None})]
    if text is not None:
        chunks += [chunk({"content": piece}) for piece in _pieces(text, 12)]
    for index, (call_id, name, arguments) in enumerate(calls):
        opening = {"index": index, "id": call_id, "type": "function"}
        opening["function"] = {"name": name, "arguments": ""}
        chunks.append(chunk({"tool_calls": [opening]}))
        for piece in _pieces(arguments, 5):
            chunks.append(
                chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            )
    chunks.append(chunk({}, "tool_calls" if calls else "stop"))
    if (body.get("stream_options") or {}).get("include_usage"):
        chunks.append({**base, "choices": [], "usage": _usage(text, calls)})
    return chunks


def completion(body: dict[str, Any]) -> dict[str, Any]:
    """The ``chat.completion`` object of a non-streamed answer."""
    scenario, text, calls = choose(body)
    message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
    if calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
            for i, n, a in calls
        ]
    choice = {
        "index": 0,
        "message": message,
        "logprobs": None,
        "finish_reason": "tool_calls" if calls else "stop",
    }
    return {
        "id": f"chatcmpl-{scenario}",
        "object": "chat.completion",
        "created": CREATED,
        "model": body.get("model", "scripted"),
        "system_fingerprint": "fp_scripted",
        "choices": [choice],
        "usage": _usage(text, calls),
    }


class Backend(ThreadingHTTPServer):
    """The HTTP server; ``seen`` lists every request it received, in order."""

    daemon_threads = True

    def __init__(self, port: int, log: Path | None = None) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.seen: list[dict[str, Any]] = []
        self.log = log
        self.lock = threading.Lock()

    def record(self, entry: dict[str, Any]) -> None:
        with self.lock:
            self.seen.append(entry)
            if self.log is not None:
                with self.log.open("a") as log:
                    log.write(json.dumps(entry) + "\n")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Backend

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _log(self, entry: dict[str, Any]) -> None:
        self.server.record(entry)

    def _send(self, status: int, content_type: str, payload: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self) -> None:
        self._log({"method": "GET", "path": self.path})
        if self.path.rstrip("/").endswith("/models"):
            models = {"object": "list", "data": [{"id": "scripted", "object": "model"}]}
            self._send(200, "application/json", json.dumps(models).encode())
        else:
            self._send(404, "application/json", b'{"error": {"message": "not found"}}')

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"unparsed": raw.decode("utf-8", "replace")}
        self._log({"method": "POST", "path": self.path, "body": body})
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, "application/json", b'{"error": {"message": "not found"}}')
            return
        if not body.get("stream"):
            self._send(200, "application/json", json.dumps(completion(body)).encode())
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for item in stream_chunks(body):
            self.wfile.write(b"data: " + json.dumps(item).encode() + b"\n\n")
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True


def serve(port: int, log: Path | None = None) -> Backend:
    """A started server on 127.0.0.1:``port`` (0 picks one); ``shutdown()`` stops it."""
    server = Backend(port, log)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=18001)
    parser.add_argument("--log", type=Path)
    args = parser.parse_args()
    server = Backend(args.port, args.log)
    print(f"chat backend on http://127.0.0.1:{server.server_port}/v1", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
