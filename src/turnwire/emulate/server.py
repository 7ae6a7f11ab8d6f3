"""The emulator on a socket: an HTTP/1.1 server (keep-alive, chunked event streams) in the
standard library, one thread per connection.

A request cannot crash it, exhaust its memory or hang it: a body longer than the emulator's
limit is refused from its ``Content-Length`` before a byte of it is read, a connection idle for
``timeout_s`` is closed, at most ``max_connections`` are served at once (the next gets a 503),
and any failure inside the emulator is a 500 with the API's error body, logged without the
request's content. Nothing is logged of the headers (the API key among them) or the bodies
(but for a replay miss's first difference, abbreviated: :mod:`turnwire.emulate.recording`).

Nor can a web page drive it. A browser lets any page send a "simple" request to
``http://127.0.0.1:8787`` without asking the server first (a ``POST`` whose body is declared
``text/plain``, a form's type, or nothing); it always adds an ``Origin`` header. So in every
mode a request carrying ``Origin``, or a ``POST`` whose ``Content-Type`` is anything but
``application/json``, is refused with ``403 forbidden_request`` before its body is read
(the official SDK, openai-agents and turnwire send ``application/json`` and no ``Origin``).
An answerer that spends a real key (a true ``spends_key``: the recorder of ``--record``)
is held tighter: a ``POST`` must declare ``application/json`` (none is refused too), the
``Host`` header must name a loopback address or ``localhost`` with the listening port (a page
that rebound its own name to this machine sends its own), and the server listens on a loopback
address only, unless ``allow_remote`` (``--allow-remote``) says otherwise; the ``Host`` check
is then off, the others stay.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import re
import socket
import threading
from collections.abc import Iterator, Mapping
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Protocol

import msgspec

from turnwire._redact import without_query_secrets
from turnwire.emulate.engine import ExchangeLog, Reply, _StreamCut, error_reply
from turnwire.emulate.rules import error_for
from turnwire.errors import ConfigError

__all__ = ["Answerer", "EmulatorServer", "is_loopback"]

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
    player of :mod:`turnwire.emulate.recording`. One that forwards requests with a real key
    says so with a true ``spends_key`` attribute (optional; the recorder's), and is served to
    loopback clients only."""

    max_body_bytes: int
    exchanges: ExchangeLog
    """The requests it answered (the last 1,000, at most 64 MiB in all)."""

    def handle(
        self, method: str, path: str, headers: Mapping[str, str], body: bytes
    ) -> Reply: ...  # pragma: no cover - a protocol


def _shown(path: str) -> str:
    """A request path for the log: a query credential's value (a key some gateways take in
    the URL) never in it."""
    return without_query_secrets(path[:2000])[:200]


def _spends_key(answerer: Answerer) -> bool:
    """Whether ``answerer`` forwards requests with a real key (its optional ``spends_key``)."""
    return bool(getattr(answerer, "spends_key", False))


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or a name, as given to ``--host``) is ``localhost`` or a
    loopback address (``127.0.0.0/8``, ``::1``)."""
    name = host.strip().lower().removeprefix("[").removesuffix("]")
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


_HOST = re.compile(r"(?:\[(?P<v6>[0-9a-f:.]+)\]|(?P<name>[a-z0-9.-]+))(?::(?P<port>[0-9]{1,5}))?")


def _host_is_local(value: str, port: int) -> bool:
    """Whether a ``Host`` header names a loopback address or ``localhost`` with ``port``."""
    found = _HOST.fullmatch(value.strip().lower())
    if found is None:
        return False
    given = int(found["port"]) if found["port"] else 80
    return given == port and is_loopback(found["v6"] or found["name"])


def _media_type(value: str) -> str:
    return value.split(";", 1)[0].strip().lower()


def _refusal(method: str, headers: Message, *, strict: bool, port: int | None) -> str | None:
    """Why a request is refused before it is read (the ``403 forbidden_request`` message), or
    ``None``. ``strict``: the answerer spends a real key; ``port``: the ``Host`` header must
    name a loopback address with it (``None``: not checked)."""
    if headers.get_all("origin"):
        return (
            "The emulator refuses a request carrying an Origin header: a web page may not "
            "drive it. The official SDK and other HTTP clients send none."
        )
    if method == "POST":
        types = headers.get_all("content-type") or []
        declared = [_media_type(value) for value in types]
        if declared not in ([], ["application/json"]) or (strict and not declared):
            return (
                "The emulator takes a body declared as JSON only: send "
                "Content-Type: application/json."
            )
    if port is not None:
        hosts = headers.get_all("host") or []
        if len(hosts) != 1 or not _host_is_local(hosts[0], port):
            return (
                f"The recording emulator answers requests addressed to 127.0.0.1:{port} or "
                f"localhost:{port} only (the Host header); start it with --allow-remote to "
                "take others."
            )
    return None


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
        refused = _refusal(
            method, self.headers, strict=self.server.strict, port=self.server.host_port
        )
        if refused is not None:
            self.close_connection = True  # the body is not read
            reply = error_reply(error_for("forbidden-request", detail=refused))
            self._log(method, reply)
            self._send(reply)
            return
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
            log.error("%s %s failed: %s", method, _shown(self.path), type(err).__name__)
            reply = Reply(500, [("content-type", "application/json")], _SERVER_ERROR)
        self._log(method, reply)
        self._send(reply)

    def _log(self, method: str, reply: Reply) -> None:
        log.info(
            "%s %s %d%s",
            method,
            _shown(self.path),
            reply.status,
            f" ({reply.rule})" if reply.rule else "",
        )

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
        allow_remote: bool,
    ) -> None:
        self.emulator = emulator
        self.strict = _spends_key(emulator)
        self.host_port: int | None = None  # set once bound, when the Host header is checked
        self.timeout_s = timeout_s
        self.stall_s = stall_s
        self.stopping = threading.Event()
        self._slots = threading.BoundedSemaphore(max_connections)
        super().__init__(address, _Handler)
        if self.strict and not allow_remote:
            self.host_port = int(self.server_address[1])

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

    :param allow_remote: with an answerer that spends a real key (the recorder), listen on a
        ``host`` that is not a loopback address, and take any ``Host`` header.
    :raises ConfigError: such an answerer, a non-loopback ``host`` and no ``allow_remote``
        (checked before anything listens).
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
        allow_remote: bool = False,
    ) -> None:
        if _spends_key(emulator) and not allow_remote and not is_loopback(host):
            shown = ascii(host)[1:-1]
            raise ConfigError(
                f"--host {shown or '(all addresses)'} is not a loopback address: --record would "
                "forward the request of anyone who can reach it with your API key. Listen on "
                "127.0.0.1, or give --allow-remote (allow_remote=True) to mean it",
                path="$.host",
            )
        self.emulator = emulator
        self._server = _Server(
            (host, port),
            emulator,
            timeout_s=timeout_s,
            stall_s=stall_s,
            max_connections=max_connections,
            allow_remote=allow_remote,
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
