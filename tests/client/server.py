"""A real HTTP/1.1 server on 127.0.0.1 that plays scripted answers, for transport tests.

Each request takes the next :class:`Reply` from the script (the last one repeats). Every
request is logged (method, path, headers, body) so tests can assert what the server saw.
Replies can stream a body in timed chunks, stop sending, close mid-body, or reset the
connection before any header.
"""

from __future__ import annotations

import gzip
import json
import socket
import struct
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    chunks: list[bytes] = field(default_factory=list)
    delay_s: float = 0.0  # between chunks
    content_type: str = "text/event-stream"
    stall_after: int | None = None  # stop sending (keep the socket open) after N chunks
    close_after: int | None = None  # close the connection after N chunks (no final chunk)
    reset: bool = False  # reset the connection before sending anything

    @classmethod
    def sse(cls, data: bytes, *, chunk: int = 4096, **extra: object) -> Reply:
        return cls(chunks=[data[i : i + chunk] for i in range(0, len(data), chunk)], **extra)  # type: ignore[arg-type]

    @classmethod
    def json(cls, status: int, value: object, **extra: object) -> Reply:
        return cls(
            status=status,
            chunks=[json.dumps(value).encode()],
            content_type="application/json",
            **extra,
        )  # type: ignore[arg-type]


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> dict:
        return json.loads(self.body)


class ScriptedServer:
    """``with ScriptedServer([Reply(...), ...]) as server: server.base_url``.

    ``answer``, when given, picks each reply from the request instead of the script (for
    concurrent runs, whose requests arrive in no fixed order).
    """

    def __init__(
        self,
        script: list[Reply] | None = None,
        *,
        answer: Callable[[Seen], Reply] | None = None,
        keep_alive: bool = False,
    ) -> None:
        self.script = list(script or [])
        self.answer = answer
        # HTTP/1.1 persistent connections: each connection serves requests until the client
        # closes it; ``connections`` counts how many the clients opened.
        self.keep_alive = keep_alive
        self.connections = 0
        self.requests: list[Seen] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(16)
        self._socket.settimeout(0.05)
        self.port = self._socket.getsockname()[1]
        self._threads: list[threading.Thread] = []
        self._acceptor = threading.Thread(target=self._accept, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> ScriptedServer:
        self._acceptor.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._acceptor.join(timeout=5)
        for thread in self._threads:
            thread.join(timeout=5)
        self._socket.close()

    def _next(self, seen: Seen) -> Reply:
        if self.answer is not None:
            return self.answer(seen)
        with self._lock:
            return self.script.pop(0) if len(self.script) > 1 else self.script[0]

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._socket.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                self.connections += 1
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _read_request(self, conn: socket.socket) -> Seen | None:
        # A persistent connection waits for its next request in short steps, to see a stop.
        conn.settimeout(0.2 if self.keep_alive else 5)
        data = b""
        while b"\r\n\r\n" not in data:
            try:
                part = conn.recv(65536)
            except TimeoutError:
                if self.keep_alive and not self._stop.is_set():
                    continue
                raise
            if not part:
                return None
            data += part
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        while len(rest) < length:
            part = conn.recv(65536)
            if not part:
                break
            rest += part
        return Seen(method, path, headers, rest[:length])

    def _serve(self, conn: socket.socket) -> None:
        try:
            while self._exchange(conn) and self.keep_alive and not self._stop.is_set():
                pass
        finally:
            conn.close()

    def _exchange(self, conn: socket.socket) -> bool:
        """One request and its reply; whether the connection may serve another."""
        try:
            seen = self._read_request(conn)
            if seen is None:
                return False
            with self._lock:
                self.requests.append(seen)
            reply = self._next(seen)
            if reply.reset:
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                return False
            head = [f"HTTP/1.1 {reply.status} X"]
            if reply.content_type:  # "" sends no Content-Type at all
                head.append(f"Content-Type: {reply.content_type}")
            head.append("Transfer-Encoding: chunked")
            if not self.keep_alive:
                head.append("Connection: close")
            head += [f"{name}: {value}" for name, value in reply.headers.items()]
            conn.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
            for index, chunk in enumerate(reply.chunks):
                if reply.close_after is not None and index >= reply.close_after:
                    return False
                if reply.stall_after is not None and index >= reply.stall_after:
                    self._stop.wait(30)
                    return False
                if index and reply.delay_s:
                    time.sleep(reply.delay_s)
                conn.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            if reply.stall_after is not None and reply.stall_after >= len(reply.chunks):
                self._stop.wait(30)
                return False
            if reply.close_after is not None and reply.close_after >= len(reply.chunks):
                return False  # every chunk sent, but never the final empty one
            conn.sendall(b"0\r\n\r\n")
            return True
        except OSError:
            return False


def free_port() -> int:
    """A port nothing listens on (for connection-refused tests)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def recorded(name: str) -> bytes:
    from .streams import STREAMS, wire_bytes

    return wire_bytes(next(p for p in STREAMS if p.name == name))


__all__ = ["Path", "Reply", "ScriptedServer", "Seen", "free_port", "recorded"]


# ---------------------------------------------------------------- encoded and endless bodies


class Lazy:
    """Chunks made on demand, afresh for every request that plays them: never held whole."""

    def __init__(self, make: Callable[[], Iterator[bytes]]) -> None:
        self._make = make

    def __iter__(self) -> Iterator[bytes]:
        return self._make()


def encode(data: bytes, encoding: str) -> bytes:
    """``data`` in ``encoding``: gzip, deflate (zlib-wrapped), raw-deflate, br or zstd."""
    if encoding == "gzip":
        return gzip.compress(data)
    if encoding == "deflate":
        return zlib.compress(data)
    if encoding == "raw-deflate":
        packer = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
        return packer.compress(data) + packer.flush()
    if encoding == "br":
        import brotli

        return bytes(brotli.compress(data))
    if encoding == "zstd":
        import zstandard

        return bytes(zstandard.ZstdCompressor().compress(data))
    raise ValueError(encoding)


def encoded(
    data: bytes, encoding: str, *, chunk: int = 4096, header: str | None = None, **extra: object
) -> Reply:
    """A reply whose body is ``data`` encoded, sent ``chunk`` encoded bytes at a time, with
    ``Content-Encoding: header`` (the encoding's name unless given)."""
    body = encode(data, encoding)
    name = header if header is not None else encoding.replace("raw-", "")
    reply = Reply(chunks=[body[i : i + chunk] for i in range(0, len(body), chunk)], **extra)  # type: ignore[arg-type]
    reply.headers = {**reply.headers, "Content-Encoding": name}
    return reply


def gzip_bomb(inflated_mib: int = 2048, **extra: object) -> Reply:
    """A gzip body of ``inflated_mib`` MiB of zeros, about 1 KiB per MiB on the wire (2 GiB
    fit in 2 MB), made as it is sent: one deflate block of 1 MiB of zeros, flushed so that
    every later one is the same bytes, repeated; the trailer's CRC only if it is reached."""
    zeros = bytes(1 << 20)
    packer = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    block = packer.compress(zeros) + packer.flush(zlib.Z_FULL_FLUSH)
    last = packer.flush()

    def chunks() -> Iterator[bytes]:
        yield b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"  # gzip header, no name, no time
        for _ in range(inflated_mib):
            yield block
        crc = 0
        for _ in range(inflated_mib):
            crc = zlib.crc32(zeros, crc)
        yield last + struct.pack("<II", crc, (inflated_mib << 20) & 0xFFFFFFFF)

    options: dict[str, object] = {"status": 500, "content_type": "application/json", **extra}
    reply = Reply(chunks=Lazy(chunks), **options)  # type: ignore[arg-type]
    reply.headers = {**reply.headers, "Content-Encoding": "gzip"}
    return reply


def endless(size_mib: int = 1024, **extra: object) -> Reply:
    """A plain body of ``size_mib`` MiB (``x`` repeated), made 64 KiB at a time as it is sent."""
    piece = b"x" * (64 << 10)

    def chunks() -> Iterator[bytes]:
        for _ in range(size_mib * 16):
            yield piece

    options: dict[str, object] = {"status": 500, "content_type": "application/json", **extra}
    return Reply(chunks=Lazy(chunks), **options)  # type: ignore[arg-type]


__all__ += ["Lazy", "encode", "encoded", "endless", "gzip_bomb"]
