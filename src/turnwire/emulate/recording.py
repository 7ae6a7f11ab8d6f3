"""Record and replay: the emulator as a proxy that records what a real endpoint answers
(``turnwire emulate --record DIR``), and as the player of those recordings
(``turnwire emulate --replay DIR``).

**Recording.** A request to one of the three endpoints is forwarded as it came, unchecked:
the point is to capture what the real API says, its refusals included, so the emulator's own
rules are not applied (a body that is not a JSON object, which cannot be keyed, is refused
locally). The upstream is given the key from the recorder's own variable (never the client's
``Authorization``) and the client's ``Accept``, ``OpenAI-Organization``, ``OpenAI-Project``
and ``OpenAI-Beta`` headers; nothing else. A stream is relayed to the client as it arrives.
Each exchange is then written to one file in ``DIR``, named after the request's hash
(:func:`request_hash`): the endpoint, the request body, and the answers, each with its status,
the headers of :data:`KEPT_HEADERS` and its body (an event stream's text verbatim, a JSON body
as its JSON value, anything else as text). No request header is written, the key appears in
no file, log line, error or ``repr``. Not written: a 401, streamed or not (it is about the
key, not the request), and an answer that broke off or exceeded :data:`MAX_RECORDING_BYTES`.
The same request sent again in one recording session adds its answer after the first; the
first answer a session records for a request replaces what the file held before. Every write
is a temporary file renamed into place, readable by its owner only (mode ``0o600``: a
recording holds whole prompts). The recorder spends a real key, so the server serves it to
local clients only (:mod:`turnwire.emulate.server`).

**Replaying.** At start every ``*.json`` file of ``DIR`` is read and checked; a file named
otherwise than the recorder names its files (:data:`RECORDING_NAME`), one that is not a
regular file (a symbolic link, a FIFO, a directory: opened without following a link or
waiting for a writer), one over :data:`MAX_RECORDING_BYTES`, a malformed one, or two recording
the same request, is a :class:`~turnwire.errors.ConfigError` naming the file (its name
escaped when it holds a character that is not printable); recordings are data only, nothing in
them is run and only the headers of :data:`KEPT_HEADERS` are sent back. A request is answered
from the recording of the same hash, unchecked: the status, the headers and the body as
recorded (an event stream byte for byte, event by event), with the recording's file name in
``x-turnwire-emulate-recording``; the n-th time a request comes, the n-th answer recorded for
it (the last once there are no more). A request no recording answers is ``400 replay_miss``:
the message names the nearest recording (the longest run of leading input items in common,
then the fewest differences) and the first difference (``input[7].content[0].text differs:
recorded "..." sent "..."``), and the log says the same.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import re
import stat
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

import httpx
import msgspec

from turnwire.emulate.engine import (
    MAX_BODY_BYTES,
    Exchange,
    ExchangeLog,
    Reply,
    _StreamCut,
    error_reply,
    open_request,
)
from turnwire.emulate.rules import error_for
from turnwire.errors import ConfigError

__all__ = [
    "DEFAULT_UPSTREAM",
    "KEPT_HEADERS",
    "MAX_RECORDING_BYTES",
    "RECORDING_HEADER",
    "RECORDING_NAME",
    "RecordedAnswer",
    "Recorder",
    "Recording",
    "Replayer",
    "canonical_request",
    "first_difference",
    "recording_name",
    "request_hash",
]

log = logging.getLogger("turnwire.emulate")

DEFAULT_UPSTREAM = "https://api.openai.com/v1"
MAX_RECORDING_BYTES = 64 * 1024 * 1024
"""The largest recording file read, and the largest answer recorded (64 MiB)."""
RECORDING_HEADER = "x-turnwire-emulate-recording"
"""The header naming the recording a replayed answer came from."""
RECORDING_NAME = re.compile(r"responses(?:-compact|-input_tokens)?-[0-9a-f]{32}\.json")
"""The names :func:`recording_name` gives (matched whole): the only files ``--replay`` reads."""
KEPT_HEADERS = frozenset(
    {
        "content-type",
        "x-request-id",
        "openai-model",
        "openai-processing-ms",
        "openai-version",
        "retry-after",
        "retry-after-ms",
        "x-ratelimit-limit-requests",
        "x-ratelimit-limit-tokens",
        "x-ratelimit-remaining-requests",
        "x-ratelimit-remaining-tokens",
        "x-ratelimit-reset-requests",
        "x-ratelimit-reset-tokens",
        "x-turnwire-emulate-dropped-reasoning",
    }
)
"""The response headers recorded and replayed; no other (cookies, the organization or
project, framing headers such as ``content-length``) is written or sent back."""

_FORWARDED = ("accept", "openai-organization", "openai-project", "openai-beta")
_FORMAT = 1
_HEADER_VALUE = re.compile(r"[\t\x20-\x7e]*")
_EVENT_END = re.compile(rb"(?<=\n\n)|(?<=\r\n\r\n)")


class RecordedAnswer(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """One answer of a recording: its status, headers, and exactly one of ``json`` (a JSON
    body, as its value), ``sse`` (an event stream, verbatim) or ``text`` (any other body)."""

    status: int
    headers: dict[str, str] = {}
    json: Any = msgspec.UNSET
    sse: str | msgspec.UnsetType = msgspec.UNSET
    text: str | msgspec.UnsetType = msgspec.UNSET


class Recording(msgspec.Struct, forbid_unknown_fields=True):
    """One recording file: the request (its endpoint and body) and its answers in order."""

    turnwire_recording: int
    endpoint: str
    request: dict[str, Any]
    answers: list[RecordedAnswer]


_ENCODER = msgspec.json.Encoder(order="sorted")


def canonical_request(endpoint: str, body: Mapping[str, Any]) -> bytes:
    """What a request's hash covers: the endpoint, a newline, and the body as compact JSON
    with every object's keys sorted. Nothing of the body is left out (``stream`` included:
    a streamed answer and a JSON one are different recordings)."""
    return endpoint.encode() + b"\n" + _ENCODER.encode(body)


def request_hash(endpoint: str, body: Mapping[str, Any]) -> str:
    """The SHA-256 of :func:`canonical_request`, in hex."""
    return hashlib.sha256(canonical_request(endpoint, body)).hexdigest()


def recording_name(endpoint: str, digest: str) -> str:
    """The file a request's recording is kept in: ``responses-<32 hex>.json``,
    ``responses-compact-...``, ``responses-input_tokens-...``."""
    return f"{endpoint.replace('/', '-')}-{digest[:32]}.json"


def _content_type(headers: Mapping[str, str]) -> str:
    return headers.get("content-type", "").split(";", 1)[0].strip().lower()


# ----------------------------------------------------------------------------- recording


class Recorder:
    """Forwards each request to ``upstream`` and records the exchange in ``directory``.

    It spends a real key (:attr:`spends_key`): an :class:`~turnwire.emulate.EmulatorServer`
    serves it on a loopback address to local clients only, unless told otherwise.

    :param directory: where the recordings go (created if missing).
    :param upstream: the base URL requests go to (``{upstream}/responses`` ...).
    :param api_key: the key sent to the upstream as ``Authorization: Bearer``; kept in this
        object only, never recorded, logged or shown.
    :param transport: an :mod:`httpx` transport (tests).
    """

    spends_key: ClassVar[bool] = True
    """Requests it answers are forwarded with the owner's key."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        upstream: str = DEFAULT_UPSTREAM,
        api_key: str | None,
        max_body_bytes: int = MAX_BODY_BYTES,
        timeout_s: float = 600.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        parts = urlsplit(upstream)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(
                f"--upstream {upstream!r} is not an http(s) URL with a host", path="$.upstream"
            )
        if parts.username is not None or parts.password is not None:
            raise ConfigError(
                "--upstream holds credentials; give the key in the environment variable instead",
                path="$.upstream",
            )
        self.directory = Path(directory)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ConfigError(
                f"--record {self.directory}: cannot create the directory ({err.strerror})",
                path="$.record",
            ) from None
        self.upstream = upstream.rstrip("/")
        self.max_body_bytes = max_body_bytes
        self.exchanges = ExchangeLog()
        self.__key = api_key
        self._client = httpx.Client(
            timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 30.0)),
            transport=transport,
            follow_redirects=False,
        )
        self._lock = threading.Lock()
        self._session: set[str] = set()  # the hashes this session has written

    def __repr__(self) -> str:
        return f"Recorder({str(self.directory)!r}, upstream={self.upstream!r})"

    def close(self) -> None:
        """Close the connections to the upstream."""
        self._client.close()

    def handle(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> Reply:
        """Forward one request (``headers`` with lower-case names) and record its answer."""
        reply = self._handle(method, path, headers, body)
        self.exchanges.append(Exchange.of(method, path, body, reply))
        return reply

    def _handle(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> Reply:
        opened = open_request(method, path, body, max_body_bytes=self.max_body_bytes)
        if isinstance(opened, Reply):
            return opened
        endpoint, request = opened
        sent = {name: headers[name] for name in _FORWARDED if name in headers}
        sent["content-type"] = "application/json"
        if self.__key:
            sent["authorization"] = f"Bearer {self.__key}"
        url = f"{self.upstream}/{endpoint}"
        try:
            answer = self._client.send(
                self._client.build_request("POST", url, content=body, headers=sent), stream=True
            )
        except httpx.HTTPError as err:
            return self._failed(f"{type(err).__name__} on POST {url}")
        kept = {
            name.lower(): value
            for name, value in answer.headers.items()
            if name.lower() in KEPT_HEADERS and _HEADER_VALUE.fullmatch(value)
        }
        reply_headers = list(kept.items())
        if _content_type(kept) == "text/event-stream":
            relayed = self._relay(answer, endpoint, request, kept)
            return Reply(answer.status_code, reply_headers, events=_Relayed(relayed, answer))
        try:
            received = _read_bounded(answer)
        except httpx.HTTPError as err:
            return self._failed(f"{type(err).__name__} reading the answer")
        finally:
            answer.close()
        if received is None:
            return self._failed(f"an answer over {MAX_RECORDING_BYTES} bytes")
        self._store(endpoint, request, _answer(answer.status_code, kept, received))
        return Reply(answer.status_code, reply_headers, received)

    def _failed(self, reason: str) -> Reply:
        log.warning("not recorded: %s", reason)
        return error_reply(error_for("upstream-failed", upstream=self.upstream, reason=reason))

    def _relay(
        self,
        answer: httpx.Response,
        endpoint: str,
        request: dict[str, Any],
        headers: dict[str, str],
    ) -> Iterator[bytes]:
        """The upstream's stream, chunk by chunk as it comes; recorded once it has ended."""
        received = bytearray()
        try:
            for chunk in answer.iter_bytes():
                if len(received) <= MAX_RECORDING_BYTES:
                    received += chunk
                yield chunk
        except httpx.HTTPError as err:
            log.warning("not recorded: the upstream stream broke off (%s)", type(err).__name__)
            raise _StreamCut from None
        finally:
            answer.close()
        if len(received) > MAX_RECORDING_BYTES:
            log.warning("not recorded: a stream over %d bytes", MAX_RECORDING_BYTES)
            return
        try:
            text = received.decode("utf-8")
        except UnicodeDecodeError:
            log.warning("not recorded: the stream is not UTF-8")
            return
        self._store(endpoint, request, RecordedAnswer(answer.status_code, headers, sse=text))

    def _store(self, endpoint: str, request: dict[str, Any], answer: RecordedAnswer) -> None:
        """Record ``answer``: every answer, streamed or not, comes through here."""
        if answer.status == 401:
            log.warning("not recorded: the upstream answered 401 (the key, not the request)")
            return
        digest = request_hash(endpoint, request)
        path = self.directory / recording_name(endpoint, digest)
        try:
            self._write(endpoint, request, answer, digest, path)
        except OSError as err:
            log.warning("not recorded: cannot write %s (%s)", path.name, err.strerror)

    def _write(
        self,
        endpoint: str,
        request: dict[str, Any],
        answer: RecordedAnswer,
        digest: str,
        path: Path,
    ) -> None:
        with self._lock:
            answers = [answer]
            if digest in self._session:
                try:
                    answers = [*read_recording(path).answers, answer]
                except ConfigError as err:
                    log.warning("%s; its earlier answers are not kept", err)
            self._session.add(digest)
            recording = Recording(_FORMAT, endpoint, request, answers)
            _write_atomically(path, msgspec.json.format(msgspec.json.encode(recording)) + b"\n")
        log.info("recorded %s (%d answer%s)", path.name, len(answers), "s"[: len(answers) > 1])


class _Relayed(Iterator[bytes]):
    """The relayed stream; closing it (even before it started) closes the upstream's."""

    def __init__(self, chunks: Iterator[bytes], answer: httpx.Response) -> None:
        self._chunks = chunks
        self._answer = answer

    def __next__(self) -> bytes:
        return next(self._chunks)

    def close(self) -> None:
        close = getattr(self._chunks, "close", None)
        if close is not None:
            close()
        self._answer.close()


def _read_bounded(answer: httpx.Response) -> bytes | None:
    received = bytearray()
    for chunk in answer.iter_bytes():
        received += chunk
        if len(received) > MAX_RECORDING_BYTES:
            return None
    return bytes(received)


def _answer(status: int, headers: dict[str, str], body: bytes) -> RecordedAnswer:
    if _content_type(headers) == "application/json":
        try:
            return RecordedAnswer(status, headers, json=msgspec.json.decode(body))
        except (msgspec.DecodeError, RecursionError):
            pass
    return RecordedAnswer(status, headers, text=body.decode("utf-8", errors="replace"))


def _write_atomically(path: Path, data: bytes) -> None:
    handle, temporary = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


# ----------------------------------------------------------------------------- reading


def _printable(text: str) -> str:
    """``text`` as it is, or escaped when it holds a character that is not printable (a line
    break, a control character): a file name quoted in an error or a log line."""
    return text if text.isprintable() else ascii(text)[1:-1]


_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)


class _NotRegular(Exception):
    pass


def _read_regular(path: str | os.PathLike[str]) -> bytes:
    """At most ``MAX_RECORDING_BYTES + 1`` bytes of the regular file ``path``, opened without
    following a symbolic link or waiting for a FIFO's writer: :class:`_NotRegular` when it is
    another kind of file, :class:`OSError` when it cannot be opened (``ELOOP``: a link)."""
    handle = os.open(path, _OPEN_FLAGS)
    try:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            raise _NotRegular
        file = os.fdopen(handle, "rb")
    except BaseException:
        os.close(handle)
        raise
    with file:
        return file.read(MAX_RECORDING_BYTES + 1)


def read_recording(path: str | os.PathLike[str]) -> Recording:
    """The recording in ``path``, checked: a :class:`~turnwire.errors.ConfigError` naming the
    file when it is not one (not a regular file, too large, not JSON, not the shape, a header
    not kept)."""
    name = _printable(os.fspath(path))

    def bad(problem: str) -> ConfigError:
        return ConfigError(f"recording {name}: {problem}", path=name)

    try:
        data = _read_regular(path)
    except _NotRegular:
        raise bad("not a regular file; recordings are read from regular files only") from None
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise bad("a symbolic link; recordings are read from regular files only") from None
        raise bad(f"cannot be read ({err.strerror})") from None
    if len(data) > MAX_RECORDING_BYTES:
        raise bad(f"larger than {MAX_RECORDING_BYTES} bytes")
    try:
        recording = msgspec.json.decode(data, type=Recording)
    except (msgspec.DecodeError, RecursionError) as err:
        raise bad(f"not a recording ({err})") from None
    if recording.turnwire_recording != _FORMAT:
        raise bad(f"format {recording.turnwire_recording}; this emulator reads format {_FORMAT}")
    if recording.endpoint not in ("responses", "responses/compact", "responses/input_tokens"):
        raise bad(f"endpoint {recording.endpoint[:100]!r} is not one the emulator serves")
    if not recording.answers:
        raise bad("no answers")
    for number, answer in enumerate(recording.answers):
        where = f"answers[{number}]"
        if not 100 <= answer.status <= 599:
            raise bad(f"{where}.status {answer.status} is not an HTTP status")
        for header, value in answer.headers.items():
            if header not in KEPT_HEADERS:
                raise bad(f"{where}.headers: {header[:100]!r} is not a header recordings keep")
            if not _HEADER_VALUE.fullmatch(value):
                raise bad(f"{where}.headers.{header}: a control character in the value")
        given = [
            name
            for name, value in (("json", answer.json), ("sse", answer.sse), ("text", answer.text))
            if value is not msgspec.UNSET
        ]
        if len(given) != 1:
            raise bad(f"{where}: give exactly one of json, sse and text")
    return recording


# ----------------------------------------------------------------------------- replaying


@dataclass(frozen=True, slots=True)
class _Loaded:
    name: str
    recording: Recording


class Replayer:
    """Answers each request from the recording of the same hash in ``directory``.

    :raises ConfigError: the directory is missing, or a ``*.json`` file in it is not named as
        the recorder names its files (:data:`RECORDING_NAME`), is not a regular file, is
        malformed or records the same request as another.
    """

    def __init__(
        self, directory: str | os.PathLike[str], *, max_body_bytes: int = MAX_BODY_BYTES
    ) -> None:
        self.directory = Path(directory)
        if not self.directory.is_dir():
            raise ConfigError(
                f"--replay {self.directory}: not a directory of recordings", path="$.replay"
            )
        self.max_body_bytes = max_body_bytes
        self.exchanges = ExchangeLog()
        self._recordings: dict[str, _Loaded] = {}
        for path in sorted(self.directory.glob("*.json")):
            if not RECORDING_NAME.fullmatch(path.name):
                shown = _printable(str(path))
                raise ConfigError(
                    f"recording {shown}: not a name the recorder gives (responses-<32 hex "
                    "digits>.json, responses-compact-..., responses-input_tokens-...); rename "
                    "or remove it",
                    path=shown,
                )
            recording = read_recording(path)
            digest = request_hash(recording.endpoint, recording.request)
            earlier = self._recordings.get(digest)
            if earlier is not None:
                raise ConfigError(
                    f"recording {path}: records the same request as {earlier.name}; keep one",
                    path=str(path),
                )
            self._recordings[digest] = _Loaded(path.name, recording)
        self._served: dict[str, int] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Replayer({str(self.directory)!r}, recordings={len(self._recordings)})"

    def __len__(self) -> int:
        return len(self._recordings)

    def close(self) -> None:
        """Nothing to release (for symmetry with :class:`Recorder`)."""

    def handle(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> Reply:
        """The recorded answer to one request, or ``400 replay_miss``."""
        reply = self._handle(method, path, body)
        self.exchanges.append(Exchange.of(method, path, body, reply))
        return reply

    def _handle(self, method: str, path: str, body: bytes) -> Reply:
        opened = open_request(method, path, body, max_body_bytes=self.max_body_bytes)
        if isinstance(opened, Reply):
            return opened
        endpoint, request = opened
        digest = request_hash(endpoint, request)
        loaded = self._recordings.get(digest)
        if loaded is None:
            return self._miss(endpoint, request, digest)
        answers = loaded.recording.answers
        with self._lock:
            served = self._served.get(digest, 0)
            self._served[digest] = served + 1
        answer = answers[min(served, len(answers) - 1)]
        headers = [*answer.headers.items(), (RECORDING_HEADER, loaded.name)]
        if isinstance(answer.sse, str):
            if "content-type" not in answer.headers:
                headers.insert(0, ("content-type", "text/event-stream; charset=utf-8"))
            events = [piece for piece in _EVENT_END.split(answer.sse.encode()) if piece]
            return Reply(answer.status, headers, events=iter(events))
        if isinstance(answer.text, str):
            return Reply(answer.status, headers, answer.text.encode())
        if "content-type" not in answer.headers:
            headers.insert(0, ("content-type", "application/json"))
        return Reply(answer.status, headers, msgspec.json.encode(answer.json))

    def _miss(self, endpoint: str, request: dict[str, Any], digest: str) -> Reply:
        said = f"No recording in {self.directory.name or self.directory} answers this "
        said += f"POST /v1/{endpoint} (request hash {digest[:12]})"
        candidates = [
            loaded for loaded in self._recordings.values() if loaded.recording.endpoint == endpoint
        ]
        param = "input"
        if not candidates:
            said += f": it holds no recording of /v1/{endpoint}."
        else:
            nearest, common = _nearest(candidates, request)
            recorded = nearest.recording.request
            found = first_difference(recorded, request)
            said += f". Nearest: {nearest.name}"
            recorded_items, sent_items = _items(recorded), _items(request)
            if recorded_items is not None and sent_items is not None:
                said += (
                    f" (its first {common} of {len(recorded_items)} input items match; "
                    f"{len(sent_items)} sent)"
                )
            if found is not None:
                param, difference = found
                count = count_differences(recorded, request)
                said += f"; first difference: {difference}"
                if count > 1:
                    said += f" ({count} differences in all)"
            said += "."
        log.warning("replay miss: %s", said)
        return error_reply(error_for("replay-miss", param=param, detail=said))


def _items(body: Mapping[str, Any]) -> list[Any] | None:
    raw = body.get("input")
    return raw if isinstance(raw, list) else None


def _common_prefix(recorded: Mapping[str, Any], sent: Mapping[str, Any]) -> int:
    first, second = _items(recorded), _items(sent)
    if first is None or second is None:
        return int(recorded.get("input") == sent.get("input"))
    count = 0
    for one, other in zip(first, second, strict=False):
        if one != other:
            break
        count += 1
    return count


def _nearest(candidates: Sequence[_Loaded], request: Mapping[str, Any]) -> tuple[_Loaded, int]:
    """The recording with the most leading input items in common, then the fewest
    differences, then the first by name."""
    best: tuple[int, int, str] | None = None
    chosen = candidates[0]
    for loaded in candidates:
        common = _common_prefix(loaded.recording.request, request)
        score = (-common, count_differences(loaded.recording.request, request), loaded.name)
        if best is None or score < best:
            best, chosen = score, loaded
    assert best is not None
    return chosen, -best[0]


def _keys(recorded: Mapping[str, Any], sent: Mapping[str, Any], top: bool) -> list[str]:
    keys = list(recorded) + [key for key in sent if key not in recorded]
    if top and "input" in keys:  # the input, item by item, before every other field
        keys.remove("input")
        keys.insert(0, "input")
    return keys


def first_difference(recorded: Any, sent: Any, path: str = "") -> tuple[str, str] | None:
    """Where ``sent`` first differs from ``recorded`` (``input`` first, item by item, then the
    other fields in the recording's order): ``(path, what differs)``, or ``None``."""
    if recorded == sent:
        return None
    if isinstance(recorded, dict) and isinstance(sent, dict):
        for key in _keys(recorded, sent, top=not path):
            where = f"{path}.{key}" if path else key
            if key not in sent:
                return where, f"{where} is in the recording ({_shown(recorded[key])}), not sent"
            if key not in recorded:
                return where, f"{where} is sent ({_shown(sent[key])}), not in the recording"
            found = first_difference(recorded[key], sent[key], where)
            if found is not None:
                return found
    if isinstance(recorded, list) and isinstance(sent, list):
        for index, (one, other) in enumerate(zip(recorded, sent, strict=False)):
            found = first_difference(one, other, f"{path}[{index}]")
            if found is not None:
                return found
        index = min(len(recorded), len(sent))
        where = f"{path}[{index}]"
        if len(sent) > len(recorded):
            return where, (
                f"{path} has {len(sent)} entries, the recording {len(recorded)}: {where} is new "
                f"({_shown(sent[index])})"
            )
        return where, (
            f"{path} has {len(sent)} entries, the recording {len(recorded)}: {where} is missing "
            f"({_shown(recorded[index])})"
        )
    if isinstance(recorded, str) and isinstance(sent, str):
        return path, f"{path} differs: {_strings(recorded, sent)}"
    return path, f"{path} differs: recorded {_shown(recorded)} sent {_shown(sent)}"


def count_differences(recorded: Any, sent: Any) -> int:
    """How many values differ between two bodies (a field or entry present on one side only
    counts once)."""
    if recorded == sent:
        return 0
    if isinstance(recorded, dict) and isinstance(sent, dict):
        return sum(
            count_differences(recorded[key], sent[key]) if key in recorded and key in sent else 1
            for key in _keys(recorded, sent, top=False)
        )
    if isinstance(recorded, list) and isinstance(sent, list):
        paired = sum(
            count_differences(one, other) for one, other in zip(recorded, sent, strict=False)
        )
        return paired + abs(len(recorded) - len(sent))
    return 1


_SHOWN = 60


def _shown(value: Any) -> str:
    """A value as JSON, abbreviated to about 60 characters."""
    text = msgspec.json.encode(value).decode()
    return text if len(text) <= _SHOWN else f"{text[:44]}...{text[-12:]}"


def _strings(recorded: str, sent: str) -> str:
    """Two strings, abbreviated around the first character where they differ."""
    at = 0
    for one, other in zip(recorded, sent, strict=False):
        if one != other:
            break
        at += 1
    start = max(0, at - 20)

    def window(text: str) -> str:
        shown = msgspec.json.encode(text[start : at + 30]).decode()[1:-1]
        return f'"{"..." if start else ""}{shown}{"..." if len(text) > at + 30 else ""}"'

    return f"recorded {window(recorded)} sent {window(sent)} (from character {at})"
