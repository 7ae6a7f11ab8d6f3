"""HTTP transport: ``POST {base_url}/responses`` over httpx, with the official SDK's retry rules.

Retries happen only before the first byte of an answer is read: on connection errors and
timeouts before the headers, and on 408, 409, 429 and 5xx answers (or as ``x-should-retry``
says). The delay is the server's (``retry-after-ms``, then ``retry-after`` in seconds or as an
HTTP date) when it is between 0 and 120 s; longer than that, there is no retry at all;
otherwise ``min(0.5 * 2**n, 8)`` seconds minus up to 25 % jitter. Once an answer streams, a
failure is never retried.

``client.request_timeout_s`` bounds each attempt from the request to the last byte;
``client.stream_idle_timeout_s`` bounds the wait for each chunk (the stall watchdog).
The API key travels only in its header (``Authorization: Bearer KEY`` by default;
``client.auth_header`` and ``client.auth_scheme`` say otherwise, Azure's ``api-key: KEY``): it
never appears in a ``repr``, a log record or an error. Query parameters (``client.query``, and
a query written in the base URL, Azure's ``?api-version=``) go on every request's URL, after the
endpoint's path.

Answers are decoded here (``Content-Encoding`` gzip and deflate; br with ``brotli`` >= 1.2 and
zstd with ``zstandard`` installed), and ``Accept-Encoding`` offers exactly what can be decoded.
Memory stays bounded whatever the server sends: decoders hand out at most 64 KiB at a time
(zstd: a few MiB), an error body is read up to 1 MiB of decoded bytes (8 MiB on the wire) and
summarised, a body that is not an event stream is refused past ``max_body_bytes``, and an
event stream past ``max_stream_bytes`` (``client.max_stream_bytes``: the answer's text,
arguments and items are held until it ends, so an endless stream of deltas must end).
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import importlib
import logging
import math
import os
import random
import sys
import time
import urllib.parse
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import httpx
import msgspec

from turnwire._redact import (
    install_log_filter,
    redact,
    remember_secret,
    remember_url_secrets,
    url_userinfo,
)
from turnwire.errors import (
    AnswerTooLargeError,
    ConfigError,
    HttpError,
    RequestTimeoutError,
    StreamError,
    StreamStalledError,
)
from turnwire.rendering.body import EncodedBody

__all__ = ["Answer", "RetryPolicy", "Transport"]

logger = logging.getLogger("turnwire")

_DEFAULT_STATUSES = frozenset({408, 409, 429})

ERROR_BODY_LIMIT = 1 << 20  # decoded bytes of an error body that are read
ERROR_WIRE_LIMIT = 8 << 20  # bytes on the wire read for one error body, however little they inflate
MAX_BODY_BYTES = 64 << 20  # default limit of a body that is not an event stream
MAX_STREAM_BYTES = 256 << 20  # default limit of a whole event stream, decoded
_PIECE = 64 << 10  # the most a decoder hands out at once (zstd aside)


COALESCED_BYTES = 1 << 20
"""Consecutive pieces of a body are joined into one write up to this size (a piece that is
larger goes alone, as it is)."""


class _Pieces:
    """A body's pieces as httpx request content: iterable again for each attempt.

    Each write costs a trip through the event loop and a system call, more than copying a
    small piece: consecutive pieces go as one write of at most :data:`COALESCED_BYTES` (a
    larger piece alone, never copied), so the copying stays bounded by the small pieces.
    """

    __slots__ = ("_parts",)

    def __init__(self, parts: tuple[bytes | memoryview, ...]) -> None:
        self._parts = parts

    def __aiter__(self) -> AsyncIterator[bytes]:
        return _aiter(_writes(self._parts))


def _writes(parts: tuple[bytes | memoryview, ...]) -> list[bytes | memoryview]:
    """``parts`` as the writes :class:`_Pieces` makes: together the same bytes, in order."""
    writes: list[bytes | memoryview] = []
    pending: list[bytes | memoryview] = []
    size = 0
    for part in parts:
        if pending and size + len(part) > COALESCED_BYTES:
            writes.append(pending[0] if len(pending) == 1 else b"".join(pending))
            pending, size = [], 0
        pending.append(part)
        size += len(part)
    if pending:
        writes.append(pending[0] if len(pending) == 1 else b"".join(pending))
    return writes


async def _aiter(writes: list[bytes | memoryview]) -> AsyncIterator[bytes]:
    for write in writes:
        yield write  # type: ignore[misc]  # h11 writes any bytes-like object


def _post(
    client: httpx.AsyncClient, url: str, body: bytes | EncodedBody, headers: dict[str, str]
) -> httpx.Request:
    """The request for one attempt. A body of at most :data:`COALESCED_BYTES` goes as one
    piece of content (its pieces would be joined into one write anyway, and httpx sends bytes
    with fewer steps than an iterable); a larger one goes as its pieces, with an explicit
    ``Content-Length`` (httpx then sends no ``Transfer-Encoding: chunked``, which some servers
    refuse)."""
    if isinstance(body, EncodedBody):
        if len(body.parts) == 1:
            body = bytes(body)
        elif body.size <= COALESCED_BYTES:
            body = b"".join(body.parts)  # this attempt's, not kept on the rendered body
        else:
            sized = {**headers, "Content-Length": str(body.size)}
            return client.build_request("POST", url, content=_Pieces(body.parts), headers=sized)
    return client.build_request("POST", url, content=body, headers=headers)


class _Undecodable(Exception):
    """The body is corrupt for its ``Content-Encoding``, or encoded in a way we cannot decode."""


class _Identity:
    def feed(self, data: bytes) -> Iterator[bytes]:
        if data:
            yield data


class _Zlib:
    """gzip (every member), or deflate: zlib-wrapped as RFC 9110 says, or raw as some send it."""

    def __init__(self, *, gzip: bool) -> None:
        self._gzip = gzip
        self._wbits = zlib.MAX_WBITS | 16 if gzip else zlib.MAX_WBITS
        self._obj = zlib.decompressobj(self._wbits)
        self._head: bytes | None = None if gzip else b""  # deflate: until the header is known

    def feed(self, data: bytes) -> Iterator[bytes]:
        if self._head is not None:
            data = self._head + data
            if len(data) < 2:
                self._head = data
                return
            self._head = None
            # An RFC 1950 header: method 8, window <= 32 KiB, no preset dictionary, checksum.
            if (
                data[0] & 0x0F != 8
                or data[0] >> 4 > 7
                or data[1] & 0x20
                or (data[0] << 8 | data[1]) % 31
            ):
                self._obj = zlib.decompressobj(-zlib.MAX_WBITS)
        obj = self._obj
        try:
            while data or not obj.eof:
                if obj.eof:
                    if not (self._gzip and data.startswith(b"\x1f\x8b")):
                        return  # whatever follows the end of the stream is ignored
                    obj = self._obj = zlib.decompressobj(self._wbits)  # the next gzip member
                out = obj.decompress(data, _PIECE)
                if out:
                    yield out
                data = obj.unconsumed_tail or (obj.unused_data if obj.eof else b"")
                if not data and len(out) < _PIECE:
                    return
        except zlib.error as err:
            name = "gzip" if self._gzip else "deflate"
            raise _Undecodable(f"corrupt {name} data: {err}") from err


class _Brotli:
    def __init__(self, module: Any) -> None:
        self._obj = module.Decompressor()
        self._error: type[Exception] = module.error

    def feed(self, data: bytes) -> Iterator[bytes]:
        obj = self._obj
        try:
            out = obj.process(data, output_buffer_limit=_PIECE)
            while True:
                if out:
                    yield out
                if obj.is_finished() or obj.can_accept_more_data():
                    return
                out = obj.process(b"", output_buffer_limit=_PIECE)
        except self._error as err:
            raise _Undecodable(f"corrupt br data: {err}") from err


class _Zstd:
    # zstandard's decompressobj has no output limit: input goes in slices small enough that no
    # slice can inflate past a few MiB (a zstd block holds at most 128 KiB from 4 bytes).
    _SLICE = 64

    def __init__(self, module: Any) -> None:
        self._obj = module.ZstdDecompressor().decompressobj()
        self._error: type[Exception] = module.ZstdError

    def feed(self, data: bytes) -> Iterator[bytes]:
        try:
            for start in range(0, len(data), self._SLICE):
                if self._obj.eof:
                    return
                out = self._obj.decompress(data[start : start + self._SLICE])
                if out:
                    yield out
        except self._error as err:
            raise _Undecodable(f"corrupt zstd data: {err}") from err


def _optional(name: str, needs: str) -> Any:
    try:
        module = importlib.import_module(name)
    except ImportError:
        return None
    return module if hasattr(module, needs) else None


_BROTLI = _optional("brotli", "Decompressor")
if _BROTLI is not None and not hasattr(_BROTLI.Decompressor, "can_accept_more_data"):
    _BROTLI = None  # before 1.2 its output cannot be bounded
_ZSTD = _optional("zstandard", "ZstdDecompressor")

ACCEPT_ENCODING = ", ".join(
    ["gzip", "deflate"] + ["br"] * (_BROTLI is not None) + ["zstd"] * (_ZSTD is not None)
)


class _Decoder:
    """Decodes a body in its ``Content-Encoding`` (a list is undone right to left)."""

    def __init__(self, content_encoding: str) -> None:
        self._stages: list[Any] = []
        for name in reversed([part.strip().lower() for part in content_encoding.split(",")]):
            if name in ("", "identity"):
                continue
            if name in ("gzip", "x-gzip", "deflate"):
                self._stages.append(_Zlib(gzip=name != "deflate"))
            elif name == "br" and _BROTLI is not None:
                self._stages.append(_Brotli(_BROTLI))
            elif name == "zstd" and _ZSTD is not None:
                self._stages.append(_Zstd(_ZSTD))
            else:
                raise _Undecodable(f"the answer is encoded as {name!r}, which was not offered")
        self.identity = not self._stages
        if self.identity:
            self._stages.append(_Identity())

    def feed(self, data: bytes) -> Iterator[bytes]:
        return self._through(0, data)

    def _through(self, index: int, data: bytes) -> Iterator[bytes]:
        if index == len(self._stages) - 1:
            yield from self._stages[index].feed(data)
            return
        for piece in self._stages[index].feed(data):
            yield from self._through(index + 1, piece)


class RetryPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """When and how long to wait before trying again (the official SDK's rules by default).

    :ivar max_retries: retries after the first attempt.
    :ivar statuses: statuses to retry; ``None`` means 408, 409, 429 and every 5xx.
    :ivar honor_retry_after: follow the server's ``retry-after-ms`` / ``retry-after`` (else
        the backoff alone decides, and a long server delay no longer stops the retries).
    """

    max_retries: int = 2
    initial_delay_s: float = 0.5
    max_delay_s: float = 8.0
    max_retry_after_s: float = 120.0
    statuses: frozenset[int] | None = None
    honor_retry_after: bool = True

    def retriable_status(self, status: int) -> bool:
        if self.statuses is not None:
            return status in self.statuses
        return status in _DEFAULT_STATUSES or status >= 500

    def server_delay(self, headers: Mapping[str, str], now: float | None = None) -> float | None:
        """The delay the server asks for, in seconds, or ``None`` when it asks for none (or
        when ``honor_retry_after`` is off)."""
        if not self.honor_retry_after:
            return None
        milliseconds = _finite(headers.get("retry-after-ms"))
        if milliseconds is not None:
            return milliseconds / 1000
        value = headers.get("retry-after")
        if not value:
            return None
        seconds = _finite(value)
        if seconds is not None:
            return seconds
        # An HTTP date (IMF-fixdate, RFC 850 or asctime): always UTC, with or without a zone.
        # A value that parses as neither is no delay: the backoff applies.
        parsed = email.utils.parsedate_tz(value)
        if parsed is None:
            return None
        try:
            when = email.utils.mktime_tz(parsed)
        except (OverflowError, ValueError):
            return None
        return when - (time.time() if now is None else now)

    def decide(
        self, status: int, headers: Mapping[str, str], retries_taken: int, jitter: float
    ) -> float | None:
        """The delay before the next attempt, or ``None`` to stop here."""
        if retries_taken >= self.max_retries:
            return None
        server = self.server_delay(headers)
        if server is not None and server > self.max_retry_after_s:
            return None
        verdict = headers.get("x-should-retry")
        if verdict == "false":
            return None
        if verdict != "true" and not self.retriable_status(status):
            return None
        if server is not None and 0 < server <= self.max_retry_after_s:
            return server
        return self.backoff(retries_taken, jitter)

    def backoff(self, retries_taken: int, jitter: float) -> float:
        """Exponential backoff with up to 25 % taken off (``jitter`` in [0, 1))."""
        delay = min(self.initial_delay_s * 2.0**retries_taken, self.max_delay_s)
        return float(delay * (1 - 0.25 * jitter))


def _finite(value: str | None) -> float | None:
    """``value`` as a finite number, else ``None`` (absent, not a number, ``inf``, ``nan``)."""
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


class Answer:
    """A 2xx answer whose body has not been read yet (see :meth:`Transport.exchange`)."""

    def __init__(
        self, response: httpx.Response, chunks: AsyncIterator[bytes], *, events: bool
    ) -> None:
        self.response = response
        self.chunks = chunks
        self.is_event_stream = events
        """Whether the body is read as server-sent events: the answer to a streaming request
        that does not say it is JSON (see :func:`reads_as_events`); the size limit of
        :attr:`chunks` is that reading's."""


def reads_as_events(headers: Mapping[str, str]) -> bool:
    """Whether an answer to a streaming request is read as server-sent events: unless it says
    it is JSON, as the official SDK reads every such answer (media types compare without case,
    and a missing ``Content-Type`` is no reason to drop the stream)."""
    media = media_type(headers)
    return not (media == "application/json" or media.endswith("+json"))


def media_type(headers: Mapping[str, str]) -> str:
    """The ``Content-Type`` media type, lower case and without parameters ("" when absent)."""
    return str(headers.get("content-type", "")).partition(";")[0].strip().lower()


Sleep = Callable[[float], Awaitable[Any]]


class Transport:
    """Sends request bodies to a Responses endpoint.

    :param client: an ``httpx.AsyncClient`` to use (turnwire makes one, and closes it, if not).
    :param sleep: awaited between attempts (tests inject a recorder).
    :param jitter: returns a float in [0, 1) for the backoff jitter.
    :param max_body_bytes: the largest decoded body accepted when it is not an event stream.
    :param auth_header: the header that carries the API key.
    :param auth_scheme: the word before the key in that header (``None``: the key alone).
    :param query: query parameters of every request, over those ``base_url`` holds.
    """

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str | None = None,
        organization: str | None = None,
        project: str | None = None,
        headers: Mapping[str, str] | None = None,
        request_timeout_s: float = 600.0,
        connect_timeout_s: float = 5.0,
        stream_idle_timeout_s: float = 0.0,
        retry: RetryPolicy | None = None,
        client: httpx.AsyncClient | None = None,
        sleep: Sleep = asyncio.sleep,
        jitter: Callable[[], float] = random.random,
        user_agent: str = "turnwire",
        max_body_bytes: int = MAX_BODY_BYTES,
        max_stream_bytes: int = MAX_STREAM_BYTES,
        auth_header: str = "Authorization",
        auth_scheme: str | None = "Bearer",
        query: Mapping[str, str] | None = None,
    ) -> None:
        # A query in the base URL (Azure's ``?api-version=``) goes after the endpoint's path,
        # with ``query``'s parameters, on every request: never into the path.
        base, _, given = base_url.partition("?")
        params = dict(urllib.parse.parse_qsl(given, keep_blank_values=True))
        params.update(query or {})
        self.url = base.rstrip("/") + "/responses"
        self.query = params
        self._query = "?" + urllib.parse.urlencode(params) if params else ""
        remember_url_secrets(self.url + self._query, holder=self)
        # httpx logs each request's URL (its logger's INFO records): not their credentials.
        install_log_filter("httpx")
        authorization = (api_key and auth_header.lower() == "authorization") or any(
            name.lower() == "authorization" for name in headers or {}
        )
        if authorization and url_userinfo(base) is not None:
            # httpx would send the URL's user:password as the Authorization header, in place
            # of the one given: that one silently unsent.
            raise ConfigError(
                "the base URL holds credentials before its host, which httpx would turn into "
                "an Authorization header of its own, in place of the API key's (or of "
                "client.headers'): put the gateway's credentials in client.headers, send the "
                "key in another header (client.auth_header), or send no key "
                "(client.api_key_env: null) to send the URL's credentials alone"
            )
        self.auth_header = auth_header
        self.auth_scheme = auth_scheme
        self._api_key = api_key
        # An error raised far from here (a stream's error) hides it too, while this lives.
        remember_secret(api_key, holder=self)
        self.organization = organization
        self.project = project
        self.extra_headers = dict(headers or {})
        self.request_timeout_s = request_timeout_s
        self.connect_timeout_s = connect_timeout_s
        self.stream_idle_timeout_s = stream_idle_timeout_s
        self.retry = retry or RetryPolicy()
        self._client = client
        self._owns_client = client is None
        self._sleep = sleep
        self._jitter = jitter
        self.user_agent = user_agent
        self.max_body_bytes = max_body_bytes
        self.max_stream_bytes = max_stream_bytes

    def __repr__(self) -> str:
        key = "set" if self._api_key else "none"
        return f"Transport(url={redact(self.url)!r}, api_key={key})"

    def headers(self, *, stream: bool) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "User-Agent": self.user_agent,
            "Accept-Encoding": ACCEPT_ENCODING,
        }
        if stream:
            headers["Accept"] = "text/event-stream"
        if self._api_key:
            scheme = self.auth_scheme
            headers[self.auth_header] = f"{scheme} {self._api_key}" if scheme else self._api_key
        if self.organization:
            headers["OpenAI-Organization"] = self.organization
        if self.project:
            headers["OpenAI-Project"] = self.project
        headers.update(self.extra_headers)
        return headers

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            timeout = httpx.Timeout(
                self.request_timeout_s or None, connect=self.connect_timeout_s or None
            )
            try:
                self._client = httpx.AsyncClient(timeout=timeout)
            except (ImportError, ValueError) as err:  # the environment's proxy variables
                raise ConfigError(_proxy_problem(err)) from None
        return self._client

    def shared_client(self) -> httpx.AsyncClient:
        """The HTTP client, for another transport to share (this one keeps closing it)."""
        return self._http()

    async def aclose(self) -> None:
        if self._owns_client and self._client is not None:
            await self._client.aclose()
            self._client = None

    @asynccontextmanager
    async def exchange(
        self, body: bytes | EncodedBody, *, stream: bool, path: str = ""
    ) -> AsyncIterator[Answer]:
        """POST ``body`` (exact bytes), retrying before any answer byte is read.

        :param body: the bytes, or a rendered body's pieces (joined when the body is at most
            :data:`COALESCED_BYTES`, else sent one after another with the body's
            ``Content-Length``: small neighbours share a write, see :class:`_Pieces`).
        :param path: appended to :attr:`url` (``/compact``: the compact endpoint).

        Yields the 2xx :class:`Answer`; raises :class:`HttpError` (status 0 for transport
        failures) or :class:`RequestTimeoutError` when every attempt failed.
        """
        headers = self.headers(stream=stream)
        client = self._http()
        url = self.url + path + self._query
        retries = 0
        while True:
            attempt = retries + 1
            deadline = time.monotonic() + self.request_timeout_s if self.request_timeout_s else None
            request = _post(client, url, body, headers)
            try:
                response = await self._send(client, request, deadline)
            except (httpx.TransportError, RequestTimeoutError) as err:
                delay = (
                    self.retry.backoff(retries, self._jitter())
                    if retries < self.retry.max_retries
                    else None
                )
                timed_out = isinstance(err, RequestTimeoutError | httpx.TimeoutException)
                kind = "request-timeout" if timed_out else "transport-error"
                logger.warning(
                    "attempt %d failed before an answer: %s",
                    attempt,
                    type(err).__name__,
                    extra={"kind": kind},
                )
                if delay is None:
                    if timed_out:
                        raise RequestTimeoutError(
                            seconds=self.request_timeout_s, phase="before the answer's headers"
                        ) from err
                    raise HttpError(
                        status=0, body=f"{type(err).__name__}: {err}", attempts=attempt
                    ) from err
                await self._wait(delay, attempt, reason=kind)
                retries += 1
                continue
            if response.status_code >= 300:
                text, bytes_read = await self._read_error(response, deadline)
                delay = self.retry.decide(
                    response.status_code, response.headers, retries, self._jitter()
                )
                if delay is None:
                    logger.error(
                        "HTTP %d (terminal): %s",
                        response.status_code,
                        text[:256],
                        extra={"kind": "http-error"},
                    )
                    raise HttpError(
                        status=response.status_code,
                        body=text,
                        attempts=attempt,
                        bytes_read=bytes_read,
                    )
                await self._wait(delay, attempt, reason=f"http-{response.status_code}")
                retries += 1
                continue
            try:
                decoder = _Decoder(response.headers.get("content-encoding", ""))
            except _Undecodable as err:
                await response.aclose()
                raise StreamError(str(err)) from err
            # Read as events (the stream limit) exactly when read_answer reads it as events.
            events = stream and reads_as_events(response.headers)
            raw: list[AsyncIterator[bytes]] = []
            chunks = self._chunks(response, decoder, deadline, events=events, raw=raw)
            try:
                yield Answer(response, chunks, events=events)
            except BaseException:
                await response.aclose()
                raise
            # Read what the server still sends after the answer (the end of a chunked body,
            # a last event) so the connection goes back to the pool for the next request,
            # not closed halfway; bounded in bytes and time.
            await _drained(raw, response)
            await response.aclose()
            return

    async def _send(
        self, client: httpx.AsyncClient, request: httpx.Request, deadline: float | None
    ) -> httpx.Response:
        if deadline is None:
            return await client.send(request, stream=True)
        try:
            async with asyncio.timeout_at(self._loop_deadline(deadline)):
                return await client.send(request, stream=True)
        except TimeoutError as err:
            raise RequestTimeoutError(
                seconds=self.request_timeout_s, phase="before the answer's headers"
            ) from err

    @staticmethod
    def _loop_deadline(deadline: float) -> float:
        loop = asyncio.get_running_loop()
        return loop.time() + (deadline - time.monotonic())

    def redact(self, text: str) -> str:
        """``text`` without this transport's API key or anything that looks like a secret."""
        return redact(text, self._api_key)

    async def _read_error(
        self, response: httpx.Response, deadline: float | None
    ) -> tuple[str, int | None]:
        """The error body, decoded and redacted, and how many bytes were read if that stopped
        at a limit (``None``: the whole body)."""
        parts: list[bytes] = []
        size = wire = 0
        note = ""
        try:
            async with asyncio.timeout_at(
                None if deadline is None else self._loop_deadline(deadline)
            ):
                decoder = _Decoder(response.headers.get("content-encoding", ""))
                async for raw in response.aiter_raw():
                    wire += len(raw)
                    for piece in decoder.feed(raw):
                        parts.append(piece[: ERROR_BODY_LIMIT - size])
                        size += len(piece)
                        if size >= ERROR_BODY_LIMIT:
                            break
                    if size >= ERROR_BODY_LIMIT or wire >= ERROR_WIRE_LIMIT:
                        break
                else:
                    size = -1  # read to the end
        except _Undecodable as err:
            note = f" ({err})"
        except (httpx.HTTPError, TimeoutError):
            pass
        finally:
            await response.aclose()
        text = b"".join(parts).decode("utf-8", "replace") + note
        return self.redact(text), (None if size < 0 else size)

    async def _wait(self, delay: float, attempt: int, *, reason: str) -> None:
        logger.warning(
            "retrying (%s) in %.2f s after attempt %d of %d",
            reason,
            delay,
            attempt,
            self.retry.max_retries + 1,
            extra={"kind": "retry-attempt", "delay_s": delay, "attempt": attempt},
        )
        await self._sleep(delay)

    async def _chunks(
        self,
        response: httpx.Response,
        decoder: _Decoder,
        deadline: float | None,
        *,
        events: bool,
        raw: list[AsyncIterator[bytes]],
    ) -> AsyncIterator[bytes]:
        """The answer's decoded bytes, under the idle watchdog and the request deadline, and
        the size limit of what they are read as: an event stream (``events``), else one body.
        ``raw`` receives the wire iterator (what :func:`_drained` reads the rest from)."""
        idle = self.stream_idle_timeout_s or None
        stalls, idle_s = idle is not None, idle or 0.0
        limit_total = self.max_stream_bytes if events else self.max_body_bytes
        limit_name = "client.max_stream_bytes" if events else "the transport's max_body_bytes"
        total = 0
        # The wire bytes as response.aiter_raw() gives them, without its generator (and list)
        # per chunk: the response's own stream, empty chunks skipped, a RequestError told its
        # request, the response closed at the end.
        if response.is_stream_consumed:
            raise httpx.StreamConsumed()
        if response.is_closed:
            raise httpx.StreamClosed()
        stream = response.stream
        if not isinstance(stream, httpx.AsyncByteStream):
            raise RuntimeError("Attempted to call an async iterator on an sync stream.")
        response.is_stream_consumed = True
        iterator = stream.__aiter__()
        raw.append(iterator)
        watchdog: _Watchdog | None = None
        loop = asyncio.get_running_loop()
        if idle is not None or deadline is not None:
            watchdog = _Watchdog()
        # The deadline on the loop's clock, once: each wait under it expires there.
        at_deadline = 0.0 if deadline is None else self._loop_deadline(deadline)
        monotonic, current_task = time.monotonic, _current_task
        next_chunk, identity = iterator.__anext__, decoder.identity
        try:
            while True:
                stall = stalls  # this wait ends as a stall (else at the deadline)
                if deadline is not None:
                    remaining = deadline - monotonic()
                    if remaining <= 0:
                        raise RequestTimeoutError(
                            seconds=self.request_timeout_s, phase="while reading the answer"
                        )
                    if stall and remaining < idle_s:
                        stall = False
                try:
                    if watchdog is None:
                        chunk = await next_chunk()
                        while not chunk:
                            chunk = await next_chunk()
                    else:  # watchdog.wait, inline: no coroutine made per chunk
                        if stall:
                            watchdog.expire_at(loop.time() + idle_s)
                        elif watchdog.expiry != at_deadline or watchdog.handle is None:
                            watchdog.expire_at(at_deadline)  # else the timer stands for it
                        task = watchdog.task = current_task(loop)
                        cancelling = task.cancelling() if task is not None else 0
                        try:
                            chunk = await next_chunk()
                            while not chunk:
                                chunk = await next_chunk()
                        except asyncio.CancelledError:
                            if watchdog.fired(cancelling):
                                raise TimeoutError from None
                            raise
                        finally:
                            watchdog.task = None
                except StopAsyncIteration:
                    try:
                        await response.aclose()  # where aiter_raw ends
                    except httpx.HTTPError as err:
                        raise _failed_mid_answer(err) from err
                    return
                except TimeoutError as err:
                    if stall:
                        logger.warning(
                            "the stream sent nothing for %.3g s; cancelling",
                            idle,
                            extra={"kind": "stream-idle-timeout"},
                        )
                        raise StreamStalledError(seconds=idle_s) from err
                    logger.warning(
                        "the answer outlasted request_timeout_s", extra={"kind": "request-timeout"}
                    )
                    raise RequestTimeoutError(
                        seconds=self.request_timeout_s, phase="while reading the answer"
                    ) from err
                except httpx.HTTPError as err:
                    if isinstance(err, httpx.RequestError):
                        err.request = response.request  # as aiter_raw tells it
                    raise _failed_mid_answer(err) from err
                if identity:  # no decoder to go through: the chunk is the piece
                    total += len(chunk)
                    if total > limit_total:
                        raise AnswerTooLargeError(limit=limit_total, setting=limit_name)
                    yield chunk
                    continue
                try:
                    for piece in decoder.feed(chunk):
                        total += len(piece)
                        if total > limit_total:
                            raise AnswerTooLargeError(limit=limit_total, setting=limit_name)
                        yield piece
                except _Undecodable as err:
                    raise StreamError(f"the answer cannot be decoded: {err}") from err
        finally:
            if watchdog is not None:
                watchdog.close()


def _failed_mid_answer(err: httpx.HTTPError) -> StreamError:
    return StreamError(f"the connection failed mid-answer: {type(err).__name__}: {err}")


# What asyncio.current_task(loop) answers: on 3.11 that function is Python around this dict
# (some 80 ns a call, once per chunk); from 3.12 on it is C.
_current_task: Callable[[asyncio.AbstractEventLoop], asyncio.Task[Any] | None] = (
    getattr(asyncio.tasks, "_current_tasks").get  # noqa: B009  # private on 3.11, unchanging
    if sys.version_info < (3, 12)
    else asyncio.current_task
)


class _Watchdog:
    """The time limit of each wait for a chunk, with one timer for a whole answer (not one
    per chunk, as ``asyncio.timeout`` or ``wait_for`` make: their timers cost more than
    reading a small chunk).

    Each wait says when it expires (:meth:`expire_at`); a wait never expires earlier than the
    one before it (the idle limit moves on, the deadline stays), so the timer, set for an
    earlier wait, fires early at worst: then it is set again for the wait under way, or left
    off when none is (the next wait sets it). A wait it outlasts has its task cancelled, and
    raises :class:`TimeoutError` (a cancellation from elsewhere goes on as one).

    :meth:`wait` is one wait; :meth:`Transport._chunks` makes the same steps inline for each
    chunk (no coroutine or call per chunk): :meth:`expire_at` when the expiry changed or no
    timer is set, :attr:`task` set while it waits, :meth:`fired` on a cancellation.
    """

    __slots__ = ("_at", "_fired", "_loop", "expiry", "handle", "task")

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.handle: asyncio.TimerHandle | None = None
        """The timer, while one is set."""
        self._at = 0.0  # when the timer fires
        self.expiry = 0.0
        """When the wait under way (or the last one) expires, on the loop's clock."""
        self.task: asyncio.Task[Any] | None = None
        """The task waiting, while it waits."""
        self._fired = False

    async def wait(self, awaitable: Awaitable[bytes], seconds: float) -> bytes:
        """``awaitable``'s value, or :class:`TimeoutError` once ``seconds`` have passed."""
        loop = self._loop
        self.expire_at(loop.time() + seconds)
        task = self.task = asyncio.current_task(loop)
        cancelling = task.cancelling() if task is not None else 0
        try:
            return await awaitable
        except asyncio.CancelledError:
            if self.fired(cancelling):
                raise TimeoutError from None
            raise
        finally:
            self.task = None

    def expire_at(self, expiry: float) -> None:
        """The next wait expires at ``expiry`` (the loop's time): the timer is set for it
        unless one is set already to fire no later."""
        self.expiry = expiry
        if self.handle is None or expiry < self._at:
            if self.handle is not None:
                self.handle.cancel()
            self._at = expiry
            self.handle = self._loop.call_at(expiry, self._check)

    def fired(self, cancelling: int) -> bool:
        """After the wait of :attr:`task` raised :class:`asyncio.CancelledError`: whether the
        cancellation was this watchdog's (then it is taken back), not one from elsewhere
        (``cancelling``: the task's pending cancellations when the wait began)."""
        task = self.task
        if not self._fired or task is None:
            return False
        self._fired = False
        return task.uncancel() <= cancelling

    def _check(self) -> None:
        self.handle = None
        task = self.task
        if task is None:
            return
        if self._loop.time() < self.expiry:
            self._at = self.expiry
            self.handle = self._loop.call_at(self.expiry, self._check)
            return
        self._fired = True
        task.cancel()

    def close(self) -> None:
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None


DRAIN_BYTES = 64 << 10
"""The most bytes read after an answer to hand its connection back to the pool."""
DRAIN_SECONDS = 0.25
"""The longest wait for them: a server that keeps the answer open costs its connection."""


async def _drained(raw: list[AsyncIterator[bytes]], response: httpx.Response) -> None:
    """Read the rest of an answer whose reader stopped at its end (bounded by
    :data:`DRAIN_BYTES` and :data:`DRAIN_SECONDS`): once httpx has seen the whole body, the
    connection is reusable; closing it earlier closes the connection."""
    if response.is_closed:
        return
    iterator = raw[0] if raw else response.aiter_raw().__aiter__()
    read = 0
    with contextlib.suppress(httpx.HTTPError, TimeoutError, StopAsyncIteration, RuntimeError):
        async with asyncio.timeout(DRAIN_SECONDS):
            async for piece in iterator:
                read += len(piece)
                if read > DRAIN_BYTES:
                    return


_PROXY_VARIABLES = (
    "ALL_PROXY",
    "all_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
)


def _proxy_problem(err: Exception) -> str:
    """What is wrong with the proxy the environment names, in one sentence (the variables'
    values are not shown: a proxy URL may carry a password)."""
    named = [name for name in _PROXY_VARIABLES if os.environ.get(name)]
    where = ", ".join(named) or "the proxy variables"
    if isinstance(err, ImportError):
        return (
            f"{where} names a SOCKS proxy, which needs the socksio package: "
            "pip install 'httpx[socks]', or unset the variable"
        )
    return (
        f"{where} names a proxy httpx cannot use ({str(err).split(' URL(')[0]}); proxies "
        "must be http://, https:// or socks5:// URLs"
    )
