"""HTTP transport: ``POST {base_url}/responses`` over httpx, with the official SDK's retry rules.

Retries happen only before the first byte of an answer is read: on connection errors and
timeouts before the headers, and on 408, 409, 429 and 5xx answers (or as ``x-should-retry``
says). The delay is the server's (``retry-after-ms``, then ``retry-after`` in seconds or as an
HTTP date) when it is between 0 and 120 s; longer than that, there is no retry at all;
otherwise ``min(0.5 * 2**n, 8)`` seconds minus up to 25 % jitter. Once an answer streams, a
failure is never retried.

``client.request_timeout_s`` bounds each attempt from the request to the last byte;
``client.stream_idle_timeout_s`` bounds the wait for each chunk (the stall watchdog).
The API key travels only in the ``Authorization`` header: it never appears in a ``repr``, a log
record or an error.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import math
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import httpx
import msgspec

from turnwire._redact import redact, remember_secret
from turnwire.errors import HttpError, RequestTimeoutError, StreamError, StreamStalledError

__all__ = ["Answer", "RetryPolicy", "Transport"]

logger = logging.getLogger("turnwire")

_DEFAULT_STATUSES = frozenset({408, 409, 429})


class RetryPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """When and how long to wait before trying again (the official SDK's rules by default).

    :ivar max_retries: retries after the first attempt.
    :ivar statuses: statuses to retry; ``None`` means 408, 409, 429 and every 5xx.
    """

    max_retries: int = 2
    initial_delay_s: float = 0.5
    max_delay_s: float = 8.0
    max_retry_after_s: float = 120.0
    statuses: frozenset[int] | None = None

    def retriable_status(self, status: int) -> bool:
        if self.statuses is not None:
            return status in self.statuses
        return status in _DEFAULT_STATUSES or status >= 500

    def server_delay(self, headers: Mapping[str, str], now: float | None = None) -> float | None:
        """The delay the server asks for, in seconds, or ``None`` when it asks for none."""
        value = headers.get("retry-after-ms")
        if value is not None:
            try:
                return float(value) / 1000
            except ValueError:
                pass
        value = headers.get("retry-after")
        if value is None:
            return None
        try:
            return float(value)
        except ValueError:
            pass
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        if parsed is None:
            return None
        return parsed.timestamp() - (time.time() if now is None else now)

    def decide(
        self, status: int, headers: Mapping[str, str], retries_taken: int, jitter: float
    ) -> float | None:
        """The delay before the next attempt, or ``None`` to stop here."""
        if retries_taken >= self.max_retries:
            return None
        server = self.server_delay(headers)
        if server is not None and (server > self.max_retry_after_s or math.isnan(server)):
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


class Answer:
    """A 2xx answer whose body has not been read yet (see :meth:`Transport.exchange`)."""

    def __init__(self, response: httpx.Response, chunks: AsyncIterator[bytes]) -> None:
        self.response = response
        self.chunks = chunks

    @property
    def is_event_stream(self) -> bool:
        content_type = str(self.response.headers.get("content-type", ""))
        return content_type.startswith("text/event-stream")


Sleep = Callable[[float], Awaitable[Any]]


class Transport:
    """Sends request bodies to a Responses endpoint.

    :param client: an ``httpx.AsyncClient`` to use (turnwire makes one, and closes it, if not).
    :param sleep: awaited between attempts (tests inject a recorder).
    :param jitter: returns a float in [0, 1) for the backoff jitter.
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
    ) -> None:
        self.url = base_url.rstrip("/") + "/responses"
        self._api_key = api_key
        remember_secret(api_key)  # an error raised far from here (a stream's error) hides it too
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

    def __repr__(self) -> str:
        key = "set" if self._api_key else "none"
        return f"Transport(url={self.url!r}, api_key={key})"

    def headers(self, *, stream: bool) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "User-Agent": self.user_agent}
        if stream:
            headers["Accept"] = "text/event-stream"
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
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
            self._client = httpx.AsyncClient(timeout=timeout)
        return self._client

    def shared_client(self) -> httpx.AsyncClient:
        """The HTTP client, for another transport to share (this one keeps closing it)."""
        return self._http()

    async def aclose(self) -> None:
        if self._owns_client and self._client is not None:
            await self._client.aclose()
            self._client = None

    @asynccontextmanager
    async def exchange(self, body: bytes, *, stream: bool) -> AsyncIterator[Answer]:
        """POST ``body`` (exact bytes), retrying before any answer byte is read.

        Yields the 2xx :class:`Answer`; raises :class:`HttpError` (status 0 for transport
        failures) or :class:`RequestTimeoutError` when every attempt failed.
        """
        headers = self.headers(stream=stream)
        client = self._http()
        retries = 0
        while True:
            attempt = retries + 1
            deadline = time.monotonic() + self.request_timeout_s if self.request_timeout_s else None
            request = client.build_request("POST", self.url, content=body, headers=headers)
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
                text = await self._read_error(response, deadline)
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
                    raise HttpError(status=response.status_code, body=text, attempts=attempt)
                await self._wait(delay, attempt, reason=f"http-{response.status_code}")
                retries += 1
                continue
            chunks = self._chunks(response, deadline)
            try:
                yield Answer(response, chunks)
            finally:
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

    async def _read_error(self, response: httpx.Response, deadline: float | None) -> str:
        try:
            if deadline is None:
                raw = await response.aread()
            else:
                async with asyncio.timeout_at(self._loop_deadline(deadline)):
                    raw = await response.aread()
        except (httpx.HTTPError, TimeoutError):
            raw = b""
        finally:
            await response.aclose()
        return self.redact(raw.decode("utf-8", "replace"))

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
        self, response: httpx.Response, deadline: float | None
    ) -> AsyncIterator[bytes]:
        """The answer's bytes, under the idle watchdog and the request deadline."""
        idle = self.stream_idle_timeout_s or None
        iterator = response.aiter_raw().__aiter__()
        while True:
            limit = idle
            phase = "idle"
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise RequestTimeoutError(
                        seconds=self.request_timeout_s, phase="while reading the answer"
                    )
                if limit is None or remaining < limit:
                    limit, phase = remaining, "deadline"
            try:
                if limit is None:
                    chunk = await iterator.__anext__()
                else:
                    chunk = await asyncio.wait_for(iterator.__anext__(), limit)
            except StopAsyncIteration:
                return
            except TimeoutError as err:
                if phase == "idle":
                    logger.warning(
                        "the stream sent nothing for %.3g s; cancelling",
                        idle,
                        extra={"kind": "stream-idle-timeout"},
                    )
                    raise StreamStalledError(seconds=idle or 0.0) from err
                logger.warning(
                    "the answer outlasted request_timeout_s", extra={"kind": "request-timeout"}
                )
                raise RequestTimeoutError(
                    seconds=self.request_timeout_s, phase="while reading the answer"
                ) from err
            except httpx.HTTPError as err:
                raise StreamError(
                    f"the connection failed mid-answer: {type(err).__name__}: {err}"
                ) from err
            yield chunk
