"""The emulator itself, without a socket: a request in (method, path, headers, bytes), a
:class:`Reply` out.

What a request goes through, in order (the first failure answers):

1. the endpoint (``POST /v1/responses``, ``/v1/responses/compact``,
   ``/v1/responses/input_tokens``; the ``/v1`` may be left out), the body's size and JSON;
2. the fields: every field, every input item's field and every field of a part of an item
   (``message.content``, ``function_call_output.output`` ...) must be one the official request
   types know (``fields.json``), ``model`` must be given, and the emulator keeps nothing, so a
   ``previous_response_id`` or an ``item_reference`` is not found;
3. on ``/v1/responses`` and ``/v1/responses/compact``, the preflight rules the client runs
   (:func:`turnwire.rendering.preflight.preflight`), answered as the API answers them
   (:mod:`turnwire.emulate.rules`);
4. the opaque state: every ``encrypted_content`` of a reasoning or compaction item and every
   ``fingerprint`` of a program item (which the official types require) must be one this
   emulator minted, for this item, model and organization, still valid; an output item the
   emulator minted right after a reasoning item must come right after that reasoning item.

A replayed reasoning item whose preceding history (instructions and input items, as the model
reads them) differs from the one it was minted after is dropped, as the API drops it: the
answer says so in the ``x-turnwire-emulate-dropped-reasoning`` header and the log.
"""

from __future__ import annotations

import itertools
import logging
import re
import secrets
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import msgspec

from turnwire._redact import without_query_secrets
from turnwire.emulate.answers import (
    _ProgramNotFound,
    build_output,
    new_id,
    response_object,
    sse_events,
)
from turnwire.emulate.caching import PromptCache, count_tokens, prompt_text
from turnwire.emulate.rules import ApiError, error_for
from turnwire.emulate.script import Answer, Script, Scripted
from turnwire.emulate.state import Sealed, Sealer, history_hash
from turnwire.errors import PreflightError
from turnwire.rendering.preflight import ID_PREFIXES, preflight

__all__ = [
    "DROPPED_HEADER",
    "MAX_BODY_BYTES",
    "Emulator",
    "Exchange",
    "ExchangeLog",
    "Reply",
    "endpoint_of",
    "error_reply",
    "open_request",
]

log = logging.getLogger("turnwire.emulate")

DROPPED_HEADER = "x-turnwire-emulate-dropped-reasoning"
MAX_BODY_BYTES = 32 * 1024 * 1024
"""The largest request body the emulator reads (32 MiB; ``--max-body-bytes``)."""

_ENDPOINTS = ("responses", "responses/compact", "responses/input_tokens")
_JSON = ("content-type", "application/json")
_MINTED_IDS = 100_000


@dataclass(frozen=True, slots=True)
class _Known:
    """The fields the official request types know (``fields.json``): per endpoint, per input
    item type, and per part type of each list of parts an item holds (``message.content``,
    ``function_call_output.output`` ...)."""

    endpoints: dict[str, frozenset[str]]
    items: dict[str, frozenset[str]]
    parts: dict[tuple[str, str], dict[str, frozenset[str]]]


def _fields() -> _Known:
    table = msgspec.json.decode(
        resources.files("turnwire.emulate").joinpath("fields.json").read_bytes()
    )
    parts: dict[tuple[str, str], dict[str, frozenset[str]]] = {}
    for where, kinds in table["parts"].items():
        kind, _, name = where.partition(".")
        parts[kind, name] = {part: frozenset(names) for part, names in kinds.items()}
    return _Known(
        endpoints={name: frozenset(names) for name, names in table["endpoints"].items()},
        items={name: frozenset(names) for name, names in table["items"].items()},
        parts=parts,
    )


@dataclass(slots=True)
class Reply:
    """One answer: a status, headers and a body, or a stream of events.

    ``cut_after`` closes the connection after that many events; ``stall_after`` stops sending
    after that many and keeps the connection open.
    """

    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    events: Iterator[bytes] | None = None
    cut_after: int | None = None
    stall_after: int | None = None
    rule: str | None = None


class _StreamCut(Exception):
    """Raised by a :attr:`Reply.events` iterator: the connection closes mid-body, as when a
    stream breaks off (the relayed upstream stream of ``--record`` did)."""


@dataclass(frozen=True, slots=True)
class Exchange:
    """One request the emulator answered (kept in an :class:`ExchangeLog`, for tests to
    read)."""

    method: str
    path: str
    body: bytes
    status: int
    rule: str | None
    headers: tuple[tuple[str, str], ...]

    def json(self) -> Any:
        """The request body, decoded."""
        return msgspec.json.decode(self.body)

    def size(self) -> int:
        """What it weighs in an :class:`ExchangeLog`: its body, path and headers."""
        headers = sum(len(name) + len(value) for name, value in self.headers)
        return len(self.body) + len(self.path) + headers

    @classmethod
    def of(cls, method: str, path: str, body: bytes, reply: Reply) -> Exchange:
        """The exchange of ``reply`` to a request (a body over 1 MiB is not kept)."""
        kept = body if len(body) <= 1 << 20 else b""
        return cls(method, path, kept, reply.status, reply.rule, tuple(reply.headers))


MAX_EXCHANGES = 1000
"""The most exchanges an :class:`ExchangeLog` keeps."""
MAX_EXCHANGE_BYTES = 64 * 1024 * 1024
"""The most bytes (request bodies, paths and reply headers) an :class:`ExchangeLog` keeps."""


class ExchangeLog:
    """The last exchanges an emulator, recorder or player answered, for tests to read: at most
    ``max_count`` of them and at most ``max_bytes`` in all (their bodies, paths and headers),
    the oldest dropped first. The newest is always kept. Safe to append to from the server's
    threads; iterating reads a copy."""

    def __init__(
        self, *, max_count: int = MAX_EXCHANGES, max_bytes: int = MAX_EXCHANGE_BYTES
    ) -> None:
        self.max_count = max_count
        self.max_bytes = max_bytes
        self._kept: deque[tuple[Exchange, int]] = deque()
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def bytes(self) -> int:
        """What the kept exchanges weigh, as counted against ``max_bytes``."""
        return self._bytes

    def append(self, exchange: Exchange) -> None:
        """Keep ``exchange``, dropping the oldest ones past either bound."""
        size = exchange.size()
        with self._lock:
            self._kept.append((exchange, size))
            self._bytes += size
            while len(self._kept) > 1 and (
                len(self._kept) > self.max_count or self._bytes > self.max_bytes
            ):
                _, dropped = self._kept.popleft()
                self._bytes -= dropped

    def clear(self) -> None:
        """Forget every exchange."""
        with self._lock:
            self._kept.clear()
            self._bytes = 0

    def _list(self) -> list[Exchange]:
        with self._lock:
            return [exchange for exchange, _ in self._kept]

    def __iter__(self) -> Iterator[Exchange]:
        return iter(self._list())

    def __len__(self) -> int:
        return len(self._kept)

    def __getitem__(self, index: int) -> Exchange:
        return self._list()[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ExchangeLog):
            return self._list() == other._list()
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ExchangeLog({len(self)} exchanges, {self._bytes} bytes)"


def error_reply(error: ApiError) -> Reply:
    """The reply carrying ``error``."""
    return Reply(error.status, [_JSON, *error.headers], error.body(), rule=error.rule)


def endpoint_of(method: str, path: str) -> str | None:
    """The endpoint a request names (``responses``, ``responses/compact``,
    ``responses/input_tokens``), or ``None``: not one the emulator serves."""
    path = path.split("?", 1)[0].rstrip("/")
    for prefix in ("/v1/", "/"):
        if path.startswith(prefix) and path[len(prefix) :] in _ENDPOINTS:
            return path[len(prefix) :] if method == "POST" else None
    return None


def open_request(
    method: str, path: str, body: bytes, *, max_body_bytes: int
) -> tuple[str, dict[str, Any]] | Reply:
    """The endpoint and the decoded JSON object of a request, or the error reply: not an
    endpoint the emulator serves, a body over ``max_body_bytes``, not a JSON object."""
    endpoint = endpoint_of(method, path)
    if endpoint is None:
        shown = without_query_secrets(path[:2000])[:200]  # a query key is never echoed
        return error_reply(error_for("not-found", method=method, path=shown))
    if len(body) > max_body_bytes:
        return error_reply(error_for("body-too-large", length=len(body), limit=max_body_bytes))
    try:
        request = msgspec.json.decode(body)
    except (msgspec.DecodeError, RecursionError):
        return error_reply(error_for("invalid-json"))
    if not isinstance(request, dict):
        return error_reply(error_for("invalid-json"))
    return endpoint, request


def _type_name(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return "null"


# The fields the official input type of a program item requires (``Program`` of
# ``response_input_item_param``), in its order.
_PROGRAM_REQUIRED = ("id", "call_id", "code", "fingerprint")


class Emulator:
    """The Responses API, offline: scripted answers, the API's rules, sealed state, caching.

    :param script: the answers (:mod:`turnwire.emulate.script`); the default answer without.
    :param key: the key blobs are sealed under (a random one without: blobs from another
        emulator process are then foreign). Never logged.
    :param organization: the organization blobs are bound to (a request's
        ``OpenAI-Organization`` header overrides it for that request).
    :param state_ttl_s: how long a blob stays valid.
    :param cache: the prompt cache accounting (1,024-token minimum, 128-token blocks).
    """

    def __init__(
        self,
        *,
        script: Script | None = None,
        key: bytes | None = None,
        organization: str = "org-emulator",
        state_ttl_s: float | None = None,
        max_body_bytes: int = MAX_BODY_BYTES,
        cache: PromptCache | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.max_body_bytes = max_body_bytes
        self.scripted = Scripted(script)
        self.cache = cache or PromptCache()
        self._key = key if key is not None else secrets.token_bytes(32)
        self._organization = organization
        self._ttl_s = state_ttl_s
        self._clock = clock
        self._known = _fields()
        self._minted: OrderedDict[str, str] = OrderedDict()  # output item id → its reasoning's
        self._lock = threading.Lock()
        self.exchanges = ExchangeLog()

    def __repr__(self) -> str:
        return f"Emulator(organization={self._organization!r})"

    def _sealer(self, headers: Mapping[str, str]) -> Sealer:
        organization = headers.get("openai-organization") or self._organization
        return Sealer(self._key, organization=organization, ttl_s=self._ttl_s, clock=self._clock)

    # ------------------------------------------------------------------------- the entry

    def handle(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> Reply:
        """The answer to one request (``headers`` with lower-case names), kept in
        :attr:`exchanges`."""
        reply = self._handle(method, path, headers, body)
        self.exchanges.append(Exchange.of(method, path, body, reply))
        return reply

    def _handle(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> Reply:
        opened = open_request(method, path, body, max_body_bytes=self.max_body_bytes)
        if isinstance(opened, Reply):
            return opened
        endpoint, request = opened
        sealer = self._sealer(headers)
        checked = self._check(endpoint, request, sealer)
        if isinstance(checked, ApiError):
            return error_reply(checked)
        if endpoint == "responses/input_tokens":
            tokens = count_tokens(prompt_text(request))
            answer = {"object": "response.input_tokens", "input_tokens": tokens}
            return Reply(200, [_JSON], msgspec.json.encode(answer))
        if endpoint == "responses/compact":
            return self._compact(request, sealer)
        return self._respond(request, sealer, dropped=checked)

    # ------------------------------------------------------------------------- the checks

    def _check(self, endpoint: str, body: dict[str, Any], sealer: Sealer) -> ApiError | list[str]:
        """The first rule ``body`` breaks, or the ids of the reasoning items it drops."""
        known = self._known.endpoints[endpoint]
        for name in body:
            if name not in known:
                return error_for("unknown-parameter", path=name)
        model = body.get("model")
        if endpoint != "responses/input_tokens" and not model:
            return error_for("missing-model")
        if model is not None and not isinstance(model, str):
            return error_for(
                "invalid-type", path="model", expected="a string", got=_type_name(model)
            )
        raw = body.get("input")
        if raw is not None and not isinstance(raw, str | list):
            return error_for(
                "invalid-type", path="input", expected="a string or an array", got=_type_name(raw)
            )
        items: list[Any] = raw if isinstance(raw, list) else []
        failed = self._check_items(items) or _check_tool_names(body.get("tools"))
        if failed is not None:
            return failed
        if body.get("previous_response_id") is not None:
            return error_for("previous-response", id=body["previous_response_id"])
        if endpoint in ("responses", "responses/compact"):
            try:
                preflight(body)
            except PreflightError as err:
                return _preflight_answer(err, body, items)
        return self._check_state(body, items, sealer)

    def _check_items(self, items: Sequence[Any]) -> ApiError | None:
        for index, item in enumerate(items):
            if not isinstance(item, dict):
                return error_for(
                    "invalid-type",
                    path=f"input[{index}]",
                    expected="an object",
                    got=_type_name(item),
                )
            kind = item.get("type", "message")
            known = self._known.items.get(kind) if isinstance(kind, str) else None
            if known is None:
                return error_for("invalid-item-type", index=index, value=str(kind)[:100])
            for name in item:
                if name not in known:
                    return error_for("unknown-parameter", path=f"input[{index}].{name}")
                parts = self._known.parts.get((kind, name))
                if parts is not None and isinstance(item[name], list):
                    failed = _check_parts(item[name], parts, f"input[{index}].{name}")
                    if failed is not None:
                        return failed
            if kind == "item_reference":
                return error_for("stored-item", id=item.get("id"))
        return None

    def _check_state(
        self, body: Mapping[str, Any], items: Sequence[Any], sealer: Sealer
    ) -> ApiError | list[str]:
        model = str(body.get("model") or "")
        dropped: list[str] = []
        for index, item in enumerate(items):
            kind = item.get("type", "message")
            blob = item.get("encrypted_content")
            item_id = item.get("id") if isinstance(item.get("id"), str) else None
            if kind == "program":
                failed = _check_program(item, index, sealer, model)
                if failed is not None:
                    return failed
            if kind in ("reasoning", "compaction") and blob is not None:
                opened = sealer.open(blob, kind=kind, item_id=item_id, model=model)
                if isinstance(opened, str):
                    return error_for(
                        "invalid-encrypted-content", id=item_id or _abbreviated(blob), reason=opened
                    )
                if kind == "reasoning" and not self._same_history(opened, body, items, index):
                    dropped.append(item_id or f"input[{index}]")
            if item_id is not None:
                with self._lock:
                    reasoning = self._minted.get(item_id)
                before = items[index - 1] if index else None
                if reasoning is not None and (
                    not isinstance(before, Mapping) or before.get("id") != reasoning
                ):
                    return error_for(
                        "reasoning-required", id=item_id, kind=kind, reasoning=reasoning
                    )
        return dropped

    @staticmethod
    def _same_history(
        sealed: Sealed, body: Mapping[str, Any], items: Sequence[Any], index: int
    ) -> bool:
        return sealed.history == history_hash(body.get("instructions"), items[:index])

    # ------------------------------------------------------------------------- the answers

    def _usage(
        self, body: Mapping[str, Any], output: list[dict[str, Any]], dropped: Sequence[str]
    ) -> dict[str, Any]:
        cached_body = dict(body)
        if dropped and isinstance(body.get("input"), list):
            gone = set(dropped)
            cached_body["input"] = [
                item
                for item in body["input"]
                if not (item.get("type") == "reasoning" and item.get("id") in gone)
            ]
        key = body.get("prompt_cache_key")
        input_tokens, cached = self.cache.lookup(
            key if isinstance(key, str) else "", str(body.get("model")), prompt_text(cached_body)
        )
        texts: list[str] = []
        reasoning: list[str] = []
        for item in output:
            if item["type"] == "reasoning":
                reasoning.extend(part["text"] for part in item["summary"])
            elif item["type"] == "message":
                texts.extend(
                    part.get("text") or part.get("refusal") or "" for part in item["content"]
                )
            elif item["type"] == "function_call":
                texts.append(item["name"] + item["arguments"])
            elif item["type"] == "program":
                texts.append(item["code"])
        reasoning_tokens = count_tokens("\n".join(reasoning))
        output_tokens = count_tokens("\n".join(texts)) + reasoning_tokens
        written = input_tokens - cached if body.get("prompt_cache_options") is not None else 0
        return {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": written},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
            "total_tokens": input_tokens + output_tokens,
        }

    def _respond(self, body: dict[str, Any], sealer: Sealer, *, dropped: list[str]) -> Reply:
        answer = self.scripted.next_answer(body)
        if answer.error is not None:
            return _scripted_error(answer)
        include = body.get("include")
        items = body["input"] if isinstance(body.get("input"), list) else []
        if isinstance(body.get("input"), str):
            items = [{"role": "user", "content": body["input"]}]
        model = str(body.get("model"))

        def seal(item_id: str, output: list[dict[str, Any]]) -> str:
            history = history_hash(body.get("instructions"), [*items, *output])
            return sealer.seal(kind="reasoning", item_id=item_id, model=model, history=history)

        def seal_program(item_id: str, output: list[dict[str, Any]]) -> str:
            history = history_hash(body.get("instructions"), [*items, *output])
            return sealer.seal(kind="program", item_id=item_id, model=model, history=history)

        wants_state = isinstance(include, list) and "reasoning.encrypted_content" in include
        try:
            output = build_output(
                answer,
                seal_reasoning=seal if wants_state else None,
                seal_program=seal_program,
                open_program=_open_program(items),
            )
        except _ProgramNotFound:
            return error_reply(error_for("script-program-output"))
        self._remember_partners(output)
        response = response_object(
            body,
            response_id=new_id("resp"),
            created_at=int(self._clock()),
            status="completed",
            output=output,
            usage=self._usage(body, output, dropped),
        )
        headers = [("x-request-id", new_id("req"))]
        if dropped:
            headers.append((DROPPED_HEADER, ",".join(dropped)))
            log.warning(
                "dropped replayed reasoning %s: the history before it differs from the one it "
                "was minted after",
                ", ".join(dropped),
            )
        if body.get("stream") is True:
            return Reply(
                200,
                [("content-type", "text/event-stream; charset=utf-8"), *headers],
                events=sse_events(response),
                cut_after=answer.cut_after,
                stall_after=answer.stall_after,
            )
        return Reply(200, [_JSON, *headers], msgspec.json.encode(response))

    def _remember_partners(self, output: Sequence[Mapping[str, Any]]) -> None:
        with self._lock:
            for before, item in itertools.pairwise(output):
                if before["type"] == "reasoning":
                    self._minted[item["id"]] = before["id"]
            while len(self._minted) > _MINTED_IDS:
                self._minted.popitem(last=False)

    def _compact(self, body: dict[str, Any], sealer: Sealer) -> Reply:
        raw = body.get("input")
        items: list[Any] = [{"role": "user", "content": raw}] if isinstance(raw, str) else raw or []
        output: list[dict[str, Any]] = [
            {
                "id": new_id("msg"),
                "type": "message",
                "status": "completed",
                "role": "user",
                "content": _input_parts(item.get("content")),
            }
            for item in items
            if item.get("type", "message") == "message" and item.get("role") == "user"
        ]
        compaction_id = new_id("cmp")
        output.append(
            {
                "id": compaction_id,
                "type": "compaction",
                "encrypted_content": sealer.seal(
                    kind="compaction",
                    item_id=compaction_id,
                    model=str(body.get("model")),
                    history=history_hash(body.get("instructions"), items),
                ),
            }
        )
        compacted = {
            "id": new_id("resp"),
            "object": "response.compaction",
            "created_at": int(self._clock()),
            "output": output,
            "usage": self._usage(body, [], ()),
        }
        return Reply(200, [_JSON], msgspec.json.encode(compacted))


# The API's pattern for a function's or custom tool's name (quoted in its 400 answers).
_TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]+")


def _check_tool_names(tools: object) -> ApiError | None:
    """The first function or custom tool (a namespace's too) whose ``name`` is a string the
    API's pattern refuses, as the API answers it."""
    if not isinstance(tools, list):
        return None
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict):
            continue
        members = tool.get("tools") if tool.get("type") == "namespace" else None
        named = [(f"tools[{index}]", tool)]
        if isinstance(members, list):
            named += [(f"tools[{index}].tools[{n}]", m) for n, m in enumerate(members)]
        for where, declared in named:
            if not isinstance(declared, dict) or declared.get("type") not in ("function", "custom"):
                continue
            name = declared.get("name")
            if isinstance(name, str) and not _TOOL_NAME.fullmatch(name):
                return error_for("tool-name-pattern", path=f"{where}.name")
    return None


def _check_parts(
    parts: Sequence[Any], known: Mapping[str, frozenset[str]], where: str
) -> ApiError | None:
    """The first field of a part the official types do not know, as the API answers it (a
    part of a type they do not know is left to the rest of the checks)."""
    for number, part in enumerate(parts):
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        fields = known.get(kind) if isinstance(kind, str) else None
        if fields is None:
            continue
        for name in part:
            if name not in fields:
                return error_for("unknown-parameter", path=f"{where}[{number}].{name}")
        if kind == "input_file" and _audio_or_video(part):
            return error_for("unsupported-file")
    return None


# What an input_file may not hold: sound and moving pictures (the API answered an .mp3
# file_url with unsupported_file; turnwire's own media policy never sends them as files).
_AUDIO_VIDEO = frozenset(
    [
        "mp3",
        "wav",
        "m4a",
        "aac",
        "flac",
        "ogg",
        "oga",
        "opus",
        "weba",
        "webm",
        "mp4",
        "m4v",
        "mov",
        "avi",
        "mkv",
        "mpeg",
        "mpg",
        "3gp",
    ]
)


def _audio_or_video(part: Mapping[str, Any]) -> bool:
    """Whether an ``input_file`` part holds sound or video: by its ``file_data`` MIME type,
    else the extension of its ``filename`` or of its ``file_url``'s path."""
    data = part.get("file_data")
    if isinstance(data, str) and data[:11].lower().startswith(("data:audio/", "data:video/")):
        return True
    for name in (part.get("filename"), _url_path(part.get("file_url"))):
        if isinstance(name, str) and name.rpartition(".")[2].lower() in _AUDIO_VIDEO:
            return "." in name
    return False


def _url_path(url: object) -> str | None:
    if not isinstance(url, str):
        return None
    return url.split("?", 1)[0].split("#", 1)[0]


def _input_parts(content: object) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "input_text", "text": content}]
    return list(content) if isinstance(content, list) else []


def _check_program(
    item: Mapping[str, Any], index: int, sealer: Sealer, model: str
) -> ApiError | None:
    """A replayed program item's answer: each field the official type requires given, and its
    ``fingerprint`` one this emulator minted for this item, model and organization, still
    valid."""
    for name in _PROGRAM_REQUIRED:
        if name not in item:
            return error_for("missing-parameter", path=f"input[{index}].{name}")
    for name in _PROGRAM_REQUIRED:
        if not isinstance(item[name], str):
            return error_for(
                "invalid-type",
                path=f"input[{index}].{name}",
                expected="a string",
                got=_type_name(item[name]),
            )
    opened = sealer.open(item["fingerprint"], kind="program", item_id=item["id"], model=model)
    if isinstance(opened, str):
        return error_for("invalid-encrypted-content", id=item["id"], reason=opened)
    return None


def _open_program(items: Sequence[Any]) -> str | None:
    """The ``call_id`` of the last program of ``items`` that no ``program_output`` ended."""
    ended = {
        item.get("call_id")
        for item in items
        if isinstance(item, Mapping) and item.get("type") == "program_output"
    }
    for item in reversed(items):
        if isinstance(item, Mapping) and item.get("type") == "program":
            call_id = item.get("call_id")
            if isinstance(call_id, str) and call_id not in ended:
                return call_id
    return None


def _abbreviated(blob: object) -> str:
    text = str(blob)
    return text if len(text) <= 12 else f"{text[:4]}...{text[-4:]}"


def _scripted_error(answer: Answer) -> Reply:
    error = answer.error
    assert error is not None
    body = msgspec.json.encode(
        {
            "error": {
                "message": error.message,
                "type": error.type,
                "param": error.param,
                "code": error.code,
            }
        }
    )
    headers = [_JSON]
    if error.retry_after is not None:
        headers.append(("retry-after", f"{error.retry_after:g}"))
    return Reply(error.status, headers, body, rule="scripted-error")


def _preflight_answer(
    err: PreflightError, body: Mapping[str, Any], items: Sequence[Any]
) -> ApiError:
    """The API's answer to the preflight rule ``err`` names."""
    index = err.index
    item: Mapping[str, Any] = items[index] if index is not None and index < len(items) else {}
    fields: dict[str, Any] = {
        "index": index,
        "id": item.get("id"),
        "call_id": item.get("call_id"),
        "detail": err.message,
        "value": body.get("max_output_tokens"),
        "name": item.get("name"),
    }
    rule = err.rule
    if rule == "item-id-prefix":
        fields["prefix"] = ID_PREFIXES.get(str(item.get("type", "message")), "?").rstrip("_")
    elif rule == "call-id-length":
        fields["length"] = len(str(item.get("call_id") or ""))
    elif rule == "call-output-pairing" and item.get("type") == "function_call":
        rule = "call-without-output"
    elif rule == "duplicate-id" and "call_id" in err.message.split(" (rule ")[0]:
        fields["id"] = item.get("call_id")
    elif rule == "assistant-input-text":
        content = item.get("content")
        parts = content if isinstance(content, list) else []
        fields["part"] = next(
            (
                n
                for n, p in enumerate(parts)
                if isinstance(p, Mapping) and p.get("type") == "input_text"
            ),
            0,
        )
    return error_for(rule, **fields)
