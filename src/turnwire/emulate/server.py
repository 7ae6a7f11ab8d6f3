"""The emulator on a socket: an HTTP/1.1 server (keep-alive, chunked event streams) in the
standard library, one thread per connection.

A request cannot crash it, exhaust its memory or hang it: a body longer than the emulator's
limit is refused from its ``Content-Length`` before a byte of it is read, a connection idle for
``timeout_s`` is closed, at most ``max_connections`` are served at once (the next gets a 503),
and any failure inside the emulator is a 500 with the API's error body, logged without the
request's content. Nothing is logged of the headers (the API key among them) or the bodies
(but for a replay miss's first difference, abbreviated: :mod:`turnwire.emulate.recording`).
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from collections import deque
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Protocol

import msgspec

from turnwire.emulate.engine import Exchange, Reply, _StreamCut
from turnwire.emulate.rules import error_for

__all__ = ["Answerer", "EmulatorServer"]

log = logging.getLogger("turnwire.emulate")

_SERVER_ERROR = msgspec.json.encode(
    {
        "error": {
            "message": "The server had an error while processing your request.",
            "type": "server_error",
            "param": None,
            "code": None,
        }
    }
)
_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n"
    b"connection: close\r\ncontent-length: %d\r\n\r\n%s"
)


class Answerer(Protocol):
    """What a server serves: the :class:`~turnwire.emulate.Emulator`, or the recorder or
    player of :mod:`turnwire.emulate.recording`."""

    max_body_bytes: int
    exchanges: deque[Exchange]
    """The requests it answered (the last 1,000)."""

    def handle(
        self, method: str, path: str, headers: Mapping[str, str], body: bytes
    ) -> Reply: ...  # pragma: no cover - a protocol


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        self.request.settimeout(self.server.timeout_s)  # an idle connection is closed
        super().setup()

    def log_message(self, format: str, *args: Any) -> None:  # our own lines, in _serve
        return

    def do_POST(self) -> None:
        self._serve("POST")

    def do_GET(self) -> None:
        self._serve("GET")

    def _serve(self, method: str) -> None:
        emulator = self.server.emulator
        raw_length = self.headers.get("content-length")
        if raw_length is None and method == "POST":
            error = error_for("length-required")
            self._send(Reply(error.status, [("content-type", "application/json")], error.body()))
            self.close_connection = True
            return
        try:
            length = int(raw_length or 0)
        except ValueError:
            length = -1
        if length < 0 or length > emulator.max_body_bytes:
            error = error_for("body-too-large", length=raw_length, limit=emulator.max_body_bytes)
            self.close_connection = True  # the body is not read
            self._send(Reply(error.status, [("content-type", "application/json")], error.body()))
            return
        body = self.rfile.read(length)
        if len(body) < length:
            self.close_connection = True
            return
        headers = {name.lower(): value for name, value in self.headers.items()}
        try:
            reply = emulator.handle(method, self.path, headers, body)
        except Exception as err:
            log.error("%s %s failed: %s", method, self.path[:200], type(err).__name__)
            reply = Reply(500, [("content-type", "application/json")], _SERVER_ERROR)
        log.info(
            "%s %s %d%s",
            method,
            self.path[:200],
            reply.status,
            f" ({reply.rule})" if reply.rule else "",
        )
        self._send(reply)

    def _send(self, reply: Reply) -> None:
        try:
            self.send_response(reply.status)
            for name, value in reply.headers:
                self.send_header(name, value)
            if reply.events is None:
                self.send_header("content-length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)
                return
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            self._stream(reply)
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            self.close_connection = True
        finally:
            close = getattr(reply.events, "close", None)
            if close is not None:  # a relayed upstream stream ends with it
                close()

    def _stream(self, reply: Reply) -> None:
        assert reply.events is not None
        try:
            self._send_events(reply, reply.events)
        except _StreamCut:
            self._drop()

    def _send_events(self, reply: Reply, events: Iterator[bytes]) -> None:
        for sent, event in enumerate(events):
            if reply.cut_after is not None and sent >= reply.cut_after:
                self._drop()
                return
            if reply.stall_after is not None and sent >= reply.stall_after:
                self.wfile.flush()
                self.server.stopping.wait(self.server.stall_s)
                self._drop()
                return
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def _drop(self) -> None:
        """Close the connection mid-body, as a cut stream is."""
        self.close_connection = True
        self.wfile.flush()
        with contextlib.suppress(OSError):  # the peer may have gone first
            self.connection.shutdown(socket.SHUT_RDWR)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        emulator: Answerer,
        *,
        timeout_s: float,
        stall_s: float,
        max_connections: int,
    ) -> None:
        self.emulator = emulator
        self.timeout_s = timeout_s
        self.stall_s = stall_s
        self.stopping = threading.Event()
        self._slots = threading.BoundedSemaphore(max_connections)
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            error = error_for("busy")
            body = error.body()
            with contextlib.suppress(OSError):  # the peer may have gone first
                request.sendall(_BUSY % (len(body), body))
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:  # pragma: no cover - a thread that could not start
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


class EmulatorServer:
    """An :class:`Emulator` (or any :class:`Answerer`) served on ``host:port`` (``port=0``: a
    free one).

    ``with EmulatorServer(emulator) as server:`` serves it from a thread until the block ends;
    :meth:`serve_forever` serves it in the calling thread until interrupted.
    """

    def __init__(
        self,
        emulator: Answerer,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        timeout_s: float = 60.0,
        stall_s: float = 300.0,
        max_connections: int = 64,
    ) -> None:
        self.emulator = emulator
        self._server = _Server(
            (host, port),
            emulator,
            timeout_s=timeout_s,
            stall_s=stall_s,
            max_connections=max_connections,
        )
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """The base URL a client is given (``http://host:port/v1``)."""
        host = str(self._server.server_address[0])
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}/v1"

    def serve_forever(self) -> None:
        """Serve in this thread until :meth:`close` or an interrupt."""
        try:
            self._server.serve_forever(poll_interval=0.2)
        finally:
            self._server.stopping.set()
            self._server.server_close()

    def start(self) -> EmulatorServer:
        """Serve from a daemon thread."""
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="turnwire-emulate", daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving: stalled streams end, the socket closes."""
        self._server.stopping.set()
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> EmulatorServer:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
