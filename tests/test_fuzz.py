"""Fuzzing what turnwire reads from others: thread files, configuration files, stream frames,
tool and server text, JSON Schemas, MCP server URLs, terminal output, dates, secrets, stores and
file pointers.

Every outcome is a result or one ``error: E_...`` line, never a traceback, a hang or unbounded
memory. Cases are mutations of real inputs (the examples, the goldens, recorded streams) with
hostile values placed at random paths (dates far ahead among them), then written as JSON or
YAML and sometimes cut or corrupted at the byte level. Then one property per attack class:

- text from a tool handler or a server with lone surrogates, NUL, C0 and C1 controls and DEL
  never ends a run with an untyped error, and the next request body is UTF-8 JSON;
- tool arguments and structured answers are checked against ``uniqueItems``, ``pattern`` and
  ``patternProperties`` (backtracking patterns, long arrays of near-duplicates) within a bound,
  with the right verdict;
- an MCP server URL passes an allow-list pattern only when, parsed, it has the pattern's
  scheme, host, port and path prefix and no user name;
- the one printer (``echo``, ``plain``, ``shown``, ``echo_json``, the log handler, the
  progress) and ``threads show`` write no control character a terminal acts on;
- a record dated past five minutes ahead is refused with one error line, and a compaction in
  the past never hides a question asked after it;
- an answer is finished only when its stream held a terminal event; a cut stream is
  ``E_OPENAI_RESPONSES_STREAM_ERROR``;
- a remembered secret or an ``sk-`` key in any case never survives redaction, and a secret is
  forgotten with its holder;
- a store (SQLite, and PostgreSQL when a server can be started) keeps text with NUL and
  controls as it was given, or refuses it with a StoreError;
- a folder flipping to a symlink under renders never sends bytes from outside the root.

Lone surrogates are refused where they enter, typed: by a store (StoreError), the command line
(one error line) and a thread given as a mapping (E_THREAD_FILE_INVALID, with the path); and a
question asked after a compaction dated within the five minutes of drift still sorts after it.
A server's answer whose JSON holds a lone surrogate escape keeps its text (the half character
read as U+FFFD), and a hosted item sent with an empty id is recorded under the id it is given.
A tool whose parameters' ``type`` is an object or a list is rendered (not strict) or refused in
one error line, never a traceback.

The suite runs a bounded number of cases; the environment widens it:

- ``TURNWIRE_FUZZ_EXAMPLES=N`` runs N cases of each property (the costly ones a fraction of N,
  at least 10): ``TURNWIRE_FUZZ_EXAMPLES=10000 uv run pytest tests/test_fuzz.py`` is a long
  campaign;
- ``TURNWIRE_FUZZ_RACES=1`` runs the path races (40,000 renders and 200 ``turnwire render``
  processes against a flipping folder, some minutes); without it they are skipped, saying so;
- ``TURNWIRE_FUZZ_HOSTED=1`` adds a thread with every hosted item type to the thread files and
  streams (``=only`` fuzzes it alone).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import io
import json
import logging
import os
import re
import signal
import threading
import unicodedata
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import turnwire
from turnwire.cli.main import main
from turnwire.errors import StreamError, TurnwireError
from turnwire.files.thread_file import FUTURE_SKEW, thread_to_builtins

from .client.streams import STREAMS, payloads
from .conftest import REPO_EXAMPLES

EXAMPLES = int(os.environ.get("TURNWIRE_FUZZ_EXAMPLES", "120"))
TESTS = Path(__file__).parent
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)


def _slow(divisor: int) -> settings:
    """FUZZ for a property whose case costs more: a fraction of the examples, at least 10."""
    return settings(FUZZ, max_examples=max(10, EXAMPLES // divisor))


THREADS = [
    yaml.safe_load(path.read_text())
    for path in [REPO_EXAMPLES / "weather.yaml", *sorted((TESTS / "golden").glob("*.yaml"))]
    if not path.name.endswith(".config.yaml")
]


def _hosted_thread() -> dict[str, Any]:
    """A thread with every hosted type, each after a reasoning item of its response, a refusal,
    annotations and logprobs (TURNWIRE_FUZZ_HOSTED=1 adds it to THREADS, =only fuzzes it alone)."""
    from .hosted_items import ITEMS

    thoughts, hosted = [], []
    for n, item in enumerate(ITEMS):
        stamp = f"2026-01-01T10:{n // 60:02d}:{n % 60:02d}Z"
        thoughts.append(
            {
                "id": f"rs_{n}",
                "created_at": stamp,
                "seq": 0,
                "replay_compatibility": "openai-responses-reasoning-v1",
                "payload": {
                    "variant": "responses-reasoning",
                    "paired_item_id": item["id"],
                    "item": {
                        "type": "reasoning",
                        "id": f"rs_{n}",
                        "summary": [],
                        "encrypted_content": "gAAAA",
                    },
                },
            }
        )
        hosted.append(
            {"id": item["id"], "type": item["type"], "item": item, "created_at": stamp, "seq": 1}
        )
    return {
        "version": 1,
        "model": "gpt-5",
        "messages": [
            {"id": "u1", "role": "user", "content": "hi", "created_at": "2026-01-01T09:00:00Z"},
            {
                "id": "msg_r",
                "role": "assistant",
                "refusal": "I can't help with that.",
                "created_at": "2026-01-01T11:00:00Z",
            },
            {
                "id": "msg_a",
                "role": "assistant",
                "content": "Paris [1].",
                "annotations": [
                    {
                        "type": "url_citation",
                        "start_index": 6,
                        "end_index": 9,
                        "url": "https://e.example/\u001b]8;;x",
                        "title": "T\u0007",
                    },
                    {"type": "file_citation", "index": 3, "file_id": "file_1", "filename": "a.pdf"},
                ],
                "logprobs": [
                    {
                        "token": "Paris",
                        "logprob": -0.1,
                        "bytes": [80],
                        "top_logprobs": [{"token": "P", "logprob": -2.0, "bytes": [80]}],
                    }
                ],
                "created_at": "2026-01-01T11:00:01Z",
            },
        ],
        "thoughts": thoughts,
        "hosted_items": hosted,
    }


if os.environ.get("TURNWIRE_FUZZ_HOSTED") == "only":
    THREADS[:] = [_hosted_thread()]
elif os.environ.get("TURNWIRE_FUZZ_HOSTED"):
    THREADS.append(_hosted_thread())

CONFIGS = [
    yaml.safe_load(path.read_text()) or {}
    for path in [
        *sorted((TESTS.parent / "config").glob("*.yaml")),
        *sorted((TESTS / "golden").glob("*.config.yaml")),
    ]
]
FRAMES = [payloads(path) for path in STREAMS]

HOSTILE: list[Any] = [
    None,
    "",
    0,
    -1,
    2**70,
    -(2**70),
    1e308,
    True,
    [],
    {},
    [[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]],
    "x" * 5000,
    "\x00",
    "\ud83d",
    "😀 İ ß ﬃ Σ",
    "/".join([".."] * 3 + ["etc", "passwd"]),  # a path escaping the thread's folder
    "/proc/self/environ",
    "/dev/zero",
    "os:system",
    "${OPENAI_API_KEY}",
    "<system_instructions>",
    "</untrusted_content_0>",
    "2026-13-45T99:99:99Z",
    "9999-12-31T23:59:59Z",  # dates far ahead: refused (a record sorts after every later turn)
    "2999-01-01T00:00:00+14:00",
    "2100-02-29T00:00:00Z",
    {"type": "reasoning"},
    {"text": 5},
    ["x", 5],
]


def _paths(node: Any, here: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield here
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*here, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _paths(value, (*here, index))


def _replace(node: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(node, dict):
        return {**node, head: _replace(node[head], rest, value)}
    copy = list(node)
    copy[head] = _replace(copy[head], rest, value)
    return copy


@st.composite
def mutated(draw: st.DrawFn, bases: list[Any]) -> Any:
    document = draw(st.sampled_from(bases))
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        paths = list(_paths(document))
        path = draw(st.sampled_from(paths))
        value = draw(
            st.one_of(
                st.sampled_from(HOSTILE),
                st.text(max_size=30),
                st.integers(),
                st.floats(allow_nan=False),
            )
        )
        if isinstance(path[-1:] and path[-1], str) and draw(st.booleans()):
            # Sometimes a new key beside an existing one instead of a new value.
            parent = path[:-1]
            key = draw(st.sampled_from(["handler", "path", "extra", "id", "type", "role"]))
            target = document
            for step in parent:
                target = target[step]
            if isinstance(target, dict):
                document = _replace(document, parent, {**target, key: value})
                continue
        document = _replace(document, path, value)
    return document


@st.composite
def encoded(draw: st.DrawFn, bases: list[Any]) -> bytes:
    document = draw(mutated(bases))
    if draw(st.booleans()):
        data = json.dumps(document, ensure_ascii=draw(st.booleans()), default=str).encode(
            "utf-8", "surrogatepass"
        )
    else:
        data = yaml.safe_dump(document, allow_unicode=True).encode("utf-8", "surrogatepass")
    corruption = draw(st.sampled_from(["none", "none", "cut", "byte", "bom"]))
    if corruption == "cut" and data:
        data = data[: draw(st.integers(min_value=0, max_value=len(data)))]
    elif corruption == "byte" and data:
        at = draw(st.integers(min_value=0, max_value=len(data) - 1))
        data = data[:at] + bytes([draw(st.integers(0, 255))]) + data[at + 1 :]
    elif corruption == "bom":
        data = b"\xef\xbb\xbf" + data
    return data


class _Hang(Exception):
    pass


@contextlib.contextmanager
def _bounded(seconds: int = 20) -> Iterator[None]:
    def alarm(signum: int, frame: object) -> None:
        raise _Hang(f"no outcome within {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _command(*argv: str) -> tuple[int, str, str]:
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    err = io.StringIO()
    with (
        _bounded(),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        status = main(list(argv))
    out.flush()
    buffer = out.buffer
    assert isinstance(buffer, io.BytesIO)
    return status, buffer.getvalue().decode(), err.getvalue()


def _one_error_line(status: int, stderr: str) -> None:
    lines = [line for line in stderr.splitlines() if not line.startswith("turnwire: ")]
    assert status in (1, 2), stderr
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: E_"), stderr
    assert "Traceback" not in stderr


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("fuzz")
    (work / "photo.png").write_bytes((REPO_EXAMPLES / "photo.png").read_bytes())
    return work


@FUZZ
@given(data=encoded(THREADS), suffix=st.sampled_from([".json", ".yaml"]))
def test_thread_files(folder: Path, data: bytes, suffix: str) -> None:
    path = folder / f"thread{suffix}"
    path.write_bytes(data)
    status, out, err = _command("render", str(path), "--model", "gpt-5", "-q")
    if status == 0:
        assert out.startswith("{") and json.loads(out)["store"] is False
    else:
        _one_error_line(status, err)


@pytest.mark.parametrize("kind", [{}, [[]], ["object", {}]], ids=["object", "list", "union"])
def test_a_tool_type_that_names_no_type_is_rendered_or_one_error_line(
    folder: Path, kind: Any
) -> None:
    thread = {
        **TOOL_THREAD,
        "tools": [{"name": "echo", "parameters": {"type": kind, "properties": {}}}],
    }
    path = folder / "typed.json"
    path.write_text(json.dumps(thread))
    status, out, err = _command("render", str(path), "--model", "gpt-5", "-q")
    if status == 0:
        assert json.loads(out)["model"] == "gpt-5"
    else:
        _one_error_line(status, err)


@FUZZ
@given(data=encoded(CONFIGS))
def test_configuration_files(folder: Path, data: bytes) -> None:
    path = folder / "config.yaml"
    path.write_bytes(data)
    status, _, err = _command("check-config", str(path), "-q")
    if status != 0:
        _one_error_line(status, err)


def _frame(payload: Any) -> bytes:
    return b"data: " + json.dumps(payload, default=str).encode("utf-8", "surrogatepass") + b"\n\n"


@st.composite
def streams(draw: st.DrawFn) -> bytes:
    events = draw(st.sampled_from(FRAMES))
    events = draw(mutated([events]))
    if not isinstance(events, list):
        events = [events]
    data = b"".join(_frame(event) for event in events)
    if draw(st.booleans()) and data:
        data = data[: draw(st.integers(min_value=0, max_value=len(data)))]
    return data


REACHED: list[int] = []
ERRORS: list[str] = []
FINISHED: list[str] = []
TERMINAL = ("response.completed", "response.incomplete", "response.failed")


def _terminal_events(data: bytes) -> list[str]:
    """The terminal events among the frames of ``data`` whose JSON is whole (the reader
    flushes a last frame without its blank line at the end of the stream)."""
    found = []
    for block in data.split(b"\n\n"):
        lines = [line[5:].lstrip(b" ") for line in block.split(b"\n") if line.startswith(b"data:")]
        try:
            payload = json.loads(b"\n".join(lines))
        except ValueError:
            continue
        if isinstance(payload, dict) and payload.get("type") in TERMINAL:
            found.append(payload["type"])
    return found


class _Streamed(httpx.AsyncByteStream):
    # A streamed body: httpx.Response(content=bytes) is read eagerly, and aiter_raw()
    # would raise StreamConsumed before any frame was parsed.
    def __init__(self, data: bytes) -> None:
        self.data = data

    async def __aiter__(self):  # type: ignore[override]
        yield self.data


def _client(http: httpx.AsyncClient, **options: Any) -> turnwire.Client:
    return turnwire.Client(
        turnwire.build_container(
            settings=turnwire.load_settings(overrides={"client": {"retry": {"max_retries": 0}}})
        ),
        base_url="http://127.0.0.1:9/v1",
        client=http,
        **options,
    )


@FUZZ
@given(data=streams())
def _stream_frames(data: bytes) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        REACHED.append(1)
        return httpx.Response(
            200, stream=_Streamed(data), headers={"content-type": "text/event-stream"}
        )

    async def scenario() -> Any:
        http = httpx.AsyncClient(transport=httpx.MockTransport(answer))
        client = _client(http)
        try:
            base = THREADS[0] | {"messages": THREADS[0]["messages"][:1]}
            # The weather thread names a handler no setting allows (HandlerNotAllowedError)
            # and its first message attaches a file outside every allowed root
            # (FileNotAllowedError): both before any request is sent.
            base["messages"] = [
                {k: v for k, v in m.items() if k != "attachments"} for m in base["messages"]
            ]
            base["tools"] = [
                {k: v for k, v in tool.items() if k != "handler"} for tool in base.get("tools", [])
            ]
            return await client.run(
                turnwire.load_thread(base),
                model="gpt-5",
                once=True,
            )
        finally:
            await http.aclose()

    terminals = _terminal_events(data)
    with _bounded():
        try:
            result = asyncio.run(scenario())
        except TurnwireError as err:
            assert err.code.startswith("E_")
            if not terminals:
                # A stream cut before its terminal event is a stream error, never an answer.
                assert isinstance(err, StreamError), repr(err)
                assert err.code == "E_OPENAI_RESPONSES_STREAM_ERROR", repr(err)
            ERRORS.append(type(err).__name__)
            return
    # An answer is finished only when the server said so: a result means the bytes held a
    # terminal event that is not a failure.
    assert {"response.completed", "response.incomplete"} & set(terminals), terminals
    FINISHED.append(result.response.status or "")
    # What a run records can always be stored and read back.
    tree = thread_to_builtins(result.thread)
    again = turnwire.load_thread(msgspec.json.decode(msgspec.json.encode(tree)))
    assert len(again.messages) == len(result.thread.messages)
    if os.environ.get("TURNWIRE_FUZZ_HOSTED"):
        # ... and rendered again (hosted items replayed), and through the store
        assert again.hosted_items == result.thread.hosted_items
        try:
            # (the three oracles check the body: a server value the input shape refuses
            # must go as text, never as an item the next request would fail on)
            turnwire.render(again, container=turnwire.build_container())
        except TurnwireError as err:
            assert err.code.startswith("E_")
        import tempfile

        from turnwire.store import open_store

        with tempfile.TemporaryDirectory() as where, open_store(f"{where}/db.sqlite") as store:
            thread_id = store.import_thread(again)
            back = store.export_thread(thread_id)
            assert back.hosted_items == again.hosted_items
            assert [(m.refusal, m.annotations, m.logprobs) for m in back.messages] == [
                (m.refusal, m.annotations, m.logprobs) for m in again.messages
            ]


def test_stream_frames() -> None:
    """Fuzzed streams through a run; the run must reach the server (a thread refused before
    any request is sent fuzzes nothing), and both sides of the terminal-event property must be
    met: some streams end in an answer, some are refused."""
    REACHED.clear()
    ERRORS.clear()
    FINISHED.clear()
    _stream_frames()
    assert REACHED, sorted(set(ERRORS))
    assert FINISHED and "StreamError" in ERRORS, (FINISHED[:5], sorted(set(ERRORS)))


# ---------------------------------------------------------------- hostile text

# Pieces of text a tool, a server or a thread may hold: NUL, C0 and C1 controls, DEL, escape
# sequences (a window title, a cleared screen, OSC 52's clipboard write), line and paragraph
# separators, bidi overrides, and lone surrogates (what a handler gets from bytes decoded with
# surrogateescape, or from a JSON \\ud800 escape).
NASTY = [
    "\x00",
    "\x07",
    "\x08",
    "\x1b",
    "\x1b[2J",
    "\x1b]0;owned\x07",
    "\x1b]52;c;ZWNobyBvd25lZA==\x1b\\",
    "\x7f",
    "\x85",
    "\x90q\x9c",
    "\x9b31m",
    "\x9d8;;x\x9c",
    "\r",
    "\n",
    "\t",
    "\u2028",
    "\u202e",
    "\ufeff",
    "\ud800",
    "\udfff",
    "\ud83d\ude00",  # two lone halves in a Python str, not the emoji
    "\udcff",
]


def _is_surrogate(char: str) -> bool:
    return "\ud800" <= char <= "\udfff"


@st.composite
def hostile_text(draw: st.DrawFn, *, surrogates: bool = True, max_pieces: int = 12) -> str:
    pieces = st.one_of(
        st.sampled_from(NASTY),
        st.characters(categories=["Cc"]),
        st.characters(categories=["Cs"]),
        st.text(max_size=8),
    )
    text = "".join(draw(st.lists(pieces, max_size=max_pieces)))
    return text if surrogates else "".join(c for c in text if not _is_surrogate(c))


def _lone_surrogates(value: Any) -> list[str]:
    """Every string in ``value`` (keys included) that holds a lone surrogate."""
    if isinstance(value, str):
        return [value] if any(_is_surrogate(c) for c in value) else []
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in _lone_surrogates(k) + _lone_surrogates(v)]
    if isinstance(value, list):
        return [s for v in value for s in _lone_surrogates(v)]
    return []


def _replaced(text: str) -> str:
    return "".join("\ufffd" if _is_surrogate(c) else c for c in text)


def _sse(*events: dict[str, Any]) -> bytes:
    return b"".join(_frame(event) for event in events)


def _call_answer() -> bytes:
    """A streamed answer that calls the tool ``echo``."""
    item = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "echo",
        "arguments": "{}",
        "status": "completed",
    }
    return _sse(
        {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**item, "arguments": "", "status": "in_progress"},
        },
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {
            "type": "response.completed",
            "response": {"id": "resp_1", "status": "completed", "model": "gpt-5"},
        },
    )


def _text_answer(text: str) -> bytes:
    """A streamed answer of one message of ``text`` (written as JSON escapes where it must)."""
    item = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed"}
    part = {"type": "output_text", "text": text, "annotations": []}
    return _sse(
        {"type": "response.created", "response": {"id": "resp_2", "status": "in_progress"}},
        {"type": "response.output_item.added", "output_index": 0, "item": {**item, "content": []}},
        {"type": "response.output_text.delta", "output_index": 0, "delta": text},
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {**item, "content": [part]},
        },
        {
            "type": "response.completed",
            "response": {"id": "resp_2", "status": "completed", "model": "gpt-5"},
        },
    )


TOOL_THREAD: dict[str, Any] = {
    "version": 1,
    "model": "gpt-5",
    "tools": [
        {"name": "echo", "description": "Echo.", "parameters": {"type": "object", "properties": {}}}
    ],
    "messages": [
        {"id": "u1", "role": "user", "content": "hi", "created_at": "2026-01-01T10:00:00Z"}
    ],
}


def _scripted_run(
    replies: list[bytes], thread: dict[str, Any], **options: Any
) -> tuple[Any, list[bytes]]:
    """A run of ``thread`` against a server that answers ``replies`` in turn (the last one
    repeats): the result, or the TurnwireError it raised, and every request body it sent."""
    bodies: list[bytes] = []

    def answer(request: httpx.Request) -> httpx.Response:
        bodies.append(request.content)
        data = replies[min(len(bodies), len(replies)) - 1]
        return httpx.Response(
            200, stream=_Streamed(data), headers={"content-type": "text/event-stream"}
        )

    async def scenario() -> Any:
        http = httpx.AsyncClient(transport=httpx.MockTransport(answer))
        try:
            return await _client(http, **options).run(turnwire.load_thread(thread), model="gpt-5")
        finally:
            await http.aclose()

    with _bounded():
        try:
            return asyncio.run(scenario()), bodies
        except TurnwireError as err:
            return err, bodies


@_slow(8)
@given(
    text=hostile_text(),
    how=st.sampled_from(["return", "raise", "exit", "mapping"]),
    answer=hostile_text(),
)
def test_tool_and_server_text_never_stop_a_run(text: str, how: str, answer: str) -> None:
    """A handler's result or error and a server's answer holding lone surrogates, NUL and
    controls: the request after the tool call is sent, as UTF-8 JSON without a lone surrogate,
    carrying the handler's text (each lone surrogate as U+FFFD); the run finishes, an answer
    without a lone surrogate recorded as it came, and what it recorded is text a thread file
    holds."""

    def echo() -> Any:
        if how == "raise":
            raise ValueError(text)
        if how == "exit":
            raise SystemExit(text)
        if how == "mapping":
            return {"text": text, text: [text, 1]}
        return text

    outcome, bodies = _scripted_run(
        [_call_answer(), _text_answer(answer)], TOOL_THREAD, handlers={"echo": echo}
    )
    assert len(bodies) == 2, outcome  # the handler's text never stops the next request
    trees = [json.loads(body.decode("utf-8")) for body in bodies]  # strict UTF-8, then JSON
    assert [s for tree in trees for s in _lone_surrogates(tree)] == []
    (output,) = [
        item["output"] for item in trees[1]["input"] if item.get("type") == "function_call_output"
    ]
    if how != "mapping" and "<" not in text:  # (neutralising may escape a `<`)
        assert _replaced(text) in output
    if isinstance(outcome, TurnwireError):
        pytest.fail(f"the run failed: {outcome!r}")
    if answer and not _lone_surrogates(answer):
        assert outcome.thread.messages[-1].content == answer
    # What the run recorded is text a thread file holds: it encodes and loads back.
    assert _lone_surrogates(thread_to_builtins(outcome.thread)) == []
    tree = msgspec.json.decode(msgspec.json.encode(thread_to_builtins(outcome.thread)))
    assert len(turnwire.load_thread(tree).tool_calls) == 1


def test_an_answer_with_a_lone_surrogate_escape_is_recorded_or_refused() -> None:
    outcome, _ = _scripted_run([_text_answer("Paris \ud800")], TOOL_THREAD)
    if not isinstance(outcome, TurnwireError):
        last = outcome.thread.messages[-1]
        assert last.role == "assistant" and "Paris" in (last.content or "")


def test_a_hosted_item_with_an_empty_id_is_recorded_or_refused_typed() -> None:
    item = {
        "id": "",
        "type": "web_search_call",
        "status": "completed",
        "action": {"type": "search", "query": "q"},
    }
    answer = _sse(
        {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {
            "type": "response.completed",
            "response": {"id": "resp_1", "status": "completed", "model": "gpt-5"},
        },
    )
    outcome, _ = _scripted_run([answer], TOOL_THREAD)
    assert isinstance(outcome, TurnwireError) or outcome.thread.hosted_items


# ---------------------------------------------------------------- JSON Schema checks

ASCII_LOWER = "abcdefghijklmnopqrstuvwxyz"
# Patterns Python's `re` takes exponential time on ("aaa...a!"), each with what it matches
# (as ECMA-262 reads it: `$` is the end of the text, not a line break before it).
BACKTRACKING: dict[str, Any] = {
    "^(a+)+$": lambda s: s != "" and set(s) <= {"a"},
    "^(a|aa)+$": lambda s: s != "" and set(s) <= {"a"},
    "^(a|a?)+$": lambda s: set(s) <= {"a"},
    "^([a-z]+)*[0-9]$": lambda s: s[-1:] in set("0123456789") and set(s[:-1]) <= set(ASCII_LOWER),
    "(x+x+)+y": lambda s: "xxy" in s,
}


@st.composite
def adversarial_strings(draw: st.DrawFn) -> str:
    """A long run that a backtracking pattern almost matches, and a tail that spoils it."""
    run = draw(st.sampled_from(["a", "x", "ab", "xx"])) * draw(
        st.one_of(st.integers(0, 40), st.integers(1000, 20_000))
    )
    tail = draw(
        st.one_of(st.sampled_from(["", "!", "1", "y", "a!", "\x00", "\n"]), st.text(max_size=4))
    )
    return draw(st.sampled_from([run + tail, tail + run, run]))


def _verdicts(schema: dict[str, Any], value: Any) -> tuple[bool, bool, bool]:
    """Whether ``value`` matches ``schema`` by the check itself, as tool arguments, and as a
    structured answer (each within the bound)."""
    from turnwire.client._arguments import ArgumentChecker
    from turnwire.model.json_schema import JsonSchema
    from turnwire.model.structured import OutputSchema, StructuredOutput

    with _bounded(10):
        verdict = JsonSchema(schema).check(value)
        assert verdict.unusable is None, verdict.unusable
        as_arguments = ArgumentChecker().check("tool", schema, value) is None
        text = json.dumps(value)
        try:
            StructuredOutput(OutputSchema(schema=schema, strict=False)).parse(text)
        except turnwire.OutputValidationError as err:
            assert err.code == "E_OUTPUT_INVALID"
            as_answer = False
        else:
            as_answer = True
    return verdict.violations == (), as_arguments, as_answer


@_slow(2)
@given(
    pattern=st.sampled_from(sorted(BACKTRACKING)),
    text=st.one_of(adversarial_strings(), st.text(max_size=30)),
    keys=st.lists(st.one_of(adversarial_strings(), st.text(max_size=10)), max_size=4),
    values=st.lists(st.one_of(st.integers(), st.just("1"), st.just(True)), min_size=4, max_size=4),
)
def test_backtracking_patterns_are_checked_in_bounded_time(
    pattern: str, text: str, keys: list[str], values: list[Any]
) -> None:
    """``pattern`` on a string and ``patternProperties`` on an object's names, with patterns
    Python's `re` backtracks on: each check ends within the bound (RE2), with the verdict the
    pattern's meaning gives, by the check itself, as tool arguments and as an answer."""
    matches = BACKTRACKING[pattern]
    assert _verdicts({"type": "string", "pattern": pattern}, text) == (matches(text),) * 3
    named = dict(zip(keys, values, strict=False))
    schema = {
        "type": "object",
        "patternProperties": {pattern: {"type": "integer"}},
        "additionalProperties": False,
    }
    expected = all(
        matches(key) and isinstance(value, int) and not isinstance(value, bool)
        for key, value in named.items()
    )
    assert _verdicts(schema, named) == (expected,) * 3


def _same(value: Any) -> Any:
    """JSON Schema's equality as a hashable form: 1 equals 1.0, true is not 1, an object's key
    order does not count."""
    if isinstance(value, bool) or value is None:
        return ("literal", value)
    if isinstance(value, int | float):
        return ("number", Fraction(value))
    if isinstance(value, str):
        return ("string", value)
    if isinstance(value, list):
        return ("array", tuple(_same(item) for item in value))
    return ("object", frozenset((key, _same(item)) for key, item in value.items()))


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-2, 2)
    | st.sampled_from([0.0, -0.0, 1.0, 2.0, 0.5, 2**53 + 1, float(2**53)])
    | st.sampled_from(["", "a", "1", "true"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "b", "id"]), inner, max_size=3)
    ),
    max_leaves=8,
)

# A twin of an item: equal to it under JSON Schema's equality, or one step away from it.
TWINS: dict[str, Any] = {
    "reordered": lambda i: {"ok": i % 2 == 0, "tags": [i, str(i)], "id": i},
    "float": lambda i: {"id": float(i), "tags": [float(i), str(i)], "ok": i % 2 == 0},
    "bool as int": lambda i: {"id": i, "tags": [i, str(i)], "ok": int(i % 2 == 0)},
    "string id": lambda i: {"id": str(i), "tags": [i, str(i)], "ok": i % 2 == 0},
    "extra key": lambda i: {"id": i, "tags": [i, str(i)], "ok": i % 2 == 0, "x": None},
    "nearby float": lambda i: {"id": i + 1e-9, "tags": [i, str(i)], "ok": i % 2 == 0},
}


@_slow(20)
@given(
    count=st.one_of(st.integers(0, 30), st.integers(2_000, 6_000)),
    twins=st.lists(st.tuples(st.sampled_from(sorted(TWINS)), st.integers(0, 10**6)), max_size=3),
    extra=st.lists(JSON_VALUES, max_size=6),
)
def test_unique_items_is_checked_in_bounded_time(
    count: int, twins: list[tuple[str, int]], extra: list[Any]
) -> None:
    """``uniqueItems`` on long arrays of near-duplicate objects (jsonschema's pairwise check
    took over 50 s on 5,000 of them) and on random JSON: within the bound, the verdict JSON
    Schema's equality gives, by the check itself, as tool arguments and as an answer."""
    items: list[Any] = [{"id": i, "tags": [i, str(i)], "ok": i % 2 == 0} for i in range(count)]
    for kind, at in twins:
        if count:
            items.append(TWINS[kind](at % count))
    items += extra
    unique = len({_same(item) for item in items}) == len(items)
    schema = {"type": "object", "properties": {"ids": {"type": "array", "uniqueItems": True}}}
    assert _verdicts(schema, {"ids": items}) == (unique,) * 3


# ---------------------------------------------------------------- MCP server URLs

MCP_PATTERNS = [
    "https://*.corp.example/*",
    "https://api.corp.example/mcp",
    "https://api.corp.example/mcp/*",
    "http://*.corp.example:8080/tools/*",
]
_DEFAULT_PORTS = {"https": 443, "http": 80}
_DNS_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")


def _pattern_parts(pattern: str) -> tuple[str, str, int, str]:
    """A URL pattern's scheme, host, port (the scheme's default when none) and path."""
    scheme, rest = pattern.split("://", 1)
    authority, slash, path = rest.partition("/")
    host, _, port = authority.partition(":")
    return scheme, host, int(port) if port else _DEFAULT_PORTS[scheme], slash + path or "/"


@st.composite
def mcp_servers(draw: st.DrawFn, pattern: str) -> tuple[str, bool]:
    """A server URL around ``pattern`` with up to three tricks, and whether it has none (its
    scheme, an allowed host, its port or none, a path under its prefix: one the pattern
    names)."""
    scheme, host, port, path = _pattern_parts(pattern)
    named = [f"mcp{host[1:]}", f"a.b{host[1:]}"] if host.startswith("*.") else [host]
    first = named[0]
    suffix = host.removeprefix("*.")
    prefix = path.removesuffix("*")
    clean_paths = [prefix, prefix + "x", prefix + "x/y"] if path.endswith("*") else [path]
    parts: dict[str, tuple[list[str], list[str]]] = {  # the clean choices, then the tricks
        "scheme": ([scheme], [scheme.upper(), "http", "https", "ftp", "ws", ""]),
        "separator": (["://"], [":/", ":///", ":\\\\", "://\\", "//"]),
        "userinfo": ([""], ["user@", "user:pw@", f"{first}@", ":@", "%40@", "u%3Ap@"]),
        "host": (
            named,
            [
                suffix,  # the suffix alone
                "evil" + suffix,  # no label boundary
                f"{first}.evil.example",
                "evil.example",
                f"evil.example/{first}",
                f"evil.example?.{first}",
                f"evil.example#.{first}",
                f"evil.example\\.{first}",
                f"evil.example%2f.{first}",
                f"{first}%2eevil.example",
                f"{first}.",  # a trailing dot
                f"{first}..",
                first.upper(),
                "xn--bcher-kva." + first,  # IDNA, spelled in ASCII
                "b\u00fccher." + first,
                first.replace(".", "\u3002"),  # an ideographic full stop
                first.replace(".", "\uff0e"),  # a fullwidth one
                "[::1]",
                "127.0.0.1",
                f"{first}\t",
                first[:3] + "\n" + first[3:],
                "-" + first,
            ],
        ),
        "port": (
            [f":{port}", *([""] if port == _DEFAULT_PORTS[scheme] else [])],
            ["", ":8443", ":0", ":", ":65536", ":x", f":0{port}", ":443"],
        ),
        "path": (
            clean_paths,
            [
                prefix + "../admin",
                prefix + "%2e%2e/admin",
                prefix + "./x",
                prefix + "x/../../admin",
                prefix + "..\\admin",
                prefix + "%2F",
                prefix + ";x",
                prefix + "x\x00",
                prefix + "\u00e9",
                "/" + prefix,
                path.upper(),
                path.removesuffix("*") + "/",
                "/",
                "",
            ],
        ),
        "query": (["", "?session=1"], [f"?.{first}", "?@evil.example", "?a=%2e%2e"]),
        "fragment": ([""], ["#", "#x", f"#.{first}"]),
    }
    tricks = draw(st.sets(st.sampled_from([*parts, "insert"]), max_size=3))
    server = "".join(draw(st.sampled_from(parts[name][name in tricks])) for name in parts)
    if "insert" in tricks:  # anything, anywhere
        at = draw(st.integers(0, len(server)))
        server = server[:at] + draw(st.text(max_size=3)) + server[at:]
    return server, not tricks


@_slow(2)
@given(data=st.data(), pattern=st.sampled_from(MCP_PATTERNS))
def test_an_mcp_server_passes_an_allow_list_pattern_only_as_a_url(
    data: st.DataObject, pattern: str
) -> None:
    """Whenever ``url_allowed`` says yes, the server URL parsed has the pattern's scheme, a
    host that is a plain DNS name equal to the pattern's (or under its ``*.`` suffix, on a label
    boundary), the pattern's port, no user name or password, no fragment, and a path under the
    pattern's prefix without an escape, a backslash or a dot segment; and every URL the pattern
    plainly names passes."""
    from urllib.parse import urlsplit

    from turnwire.wire.hosted_tools import url_allowed

    server, clean = data.draw(mcp_servers(pattern))
    allowed = url_allowed(server, pattern)
    event("allowed" if allowed else "refused")
    if clean:
        assert allowed, server
    if not allowed:
        return
    scheme, host, port, path = _pattern_parts(pattern)
    url = urlsplit(server)
    assert url.scheme.lower() == scheme
    assert url.username is None and url.password is None and "@" not in url.netloc
    hostname = url.hostname or ""
    assert all(_DNS_LABEL.fullmatch(label) for label in hostname.split(".")), hostname
    if host.startswith("*."):
        assert hostname.endswith(host[1:]) and len(hostname) > len(host) - 1, hostname
    else:
        assert hostname == host
    assert (url.port or _DEFAULT_PORTS[scheme]) == port
    assert not url.fragment and "#" not in server
    served = url.path or "/"
    assert served.startswith(path[:-1]) if path.endswith("*") else served == path
    assert "%" not in served and "\\" not in served
    assert not {".", ".."} & set(served.split("/"))


# ---------------------------------------------------------------- the terminal


def _acted_on(text: str) -> list[str]:
    """The characters of ``text`` a terminal acts on: C0 controls but line feed and tab (ESC
    and BEL among them), DEL and the C1 controls (CSI, OSC, DCS, ST as one code each)."""
    return sorted(
        {f"U+{ord(c):04X}" for c in text if unicodedata.category(c) == "Cc"} - {"U+000A", "U+0009"}
    )


def _unsafe_in_a_field(text: str) -> list[str]:
    """What :func:`plain` promises to leave out: controls, format characters (bidi overrides,
    zero-width ones), line and paragraph separators, lone surrogates."""
    return sorted(
        {
            f"U+{ord(c):04X}"
            for c in text
            if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs")
        }
    )


@_slow(2)
@given(text=hostile_text(), limit=st.integers(1, 40))
def test_the_printer_writes_no_terminal_control(text: str, limit: int) -> None:
    """Hostile text through each way the printer writes: ``echo`` keeps everything but the
    controls (line breaks and tabs kept), ``plain`` and ``shown`` give one field with no
    control, format character, separator or lone surrogate, the log handler and ``run``'s
    progress write no control, and ``echo_json`` (not ``exact``) writes the same JSON value
    with no raw control."""
    from turnwire.cli.printer import LogHandler, Progress, echo, echo_json, plain, shown
    from turnwire.client.progress import ReasoningSummaryDeltaEvent

    out = io.StringIO()
    echo(text, file=out)
    assert out.getvalue() == "".join(c for c in text if c in "\n\t" or not _acted_on(c)) + "\n"
    assert _acted_on(out.getvalue()) == []
    for field in (plain(text), shown(text, limit)):
        assert _unsafe_in_a_field(field) == [] and "\n" not in field
    assert len(shown(text, limit)) <= limit + 3

    err = io.StringIO()
    handler = LogHandler()
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    record = logging.LogRecord("turnwire", logging.WARNING, __file__, 1, "%s", (text,), None)
    with contextlib.redirect_stderr(err):
        handler.emit(record)
    assert err.getvalue().startswith("WARNING ") and _acted_on(err.getvalue()) == []

    progress = io.StringIO()
    Progress(progress)(ReasoningSummaryDeltaEvent(output_index=0, delta=text))
    assert _acted_on(progress.getvalue()) == []

    value = {"text": "".join(c for c in text if not _is_surrogate(c))}  # JSON text has none
    for encoded in (json.dumps(value, ensure_ascii=False), msgspec.json.encode(value)):
        stdout = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
        with contextlib.redirect_stdout(stdout):
            echo_json(encoded)
        stdout.flush()
        buffer = stdout.buffer
        assert isinstance(buffer, io.BytesIO)
        written = buffer.getvalue().decode()
        assert _acted_on(written) == [] and json.loads(written) == value


@pytest.fixture(scope="module")
def threads_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("threads") / "threads.db"


SHOWN_THREADS: list[int] = []


@_slow(8)
@given(
    user=hostile_text(),
    answer=hostile_text(),
    result=hostile_text(),
    title=hostile_text(surrogates=False),
    name=hostile_text(max_pieces=3),
    loadable=st.booleans(),
)
def test_threads_show_writes_no_terminal_control(
    threads_store: Path, user: str, answer: str, result: str, title: str, name: str, loadable: bool
) -> None:
    """A thread file whose messages, tool result and author hold escape sequences, controls,
    NUL or lone surrogates: ``threads import`` stores it, or refuses a lone surrogate with one
    error line; ``threads show --transcript`` then shows each text without its controls,
    ``threads show`` prints the same JSON text with no raw control, ``threads list`` a title
    without controls."""
    if loadable:  # a thread file holds no lone surrogate (NUL, written \u0000, it holds)
        user, answer, result, name = (
            "".join(c for c in text if not _is_surrogate(c))
            for text in (user, answer, result, name)
        )
    user, answer = "Q" + user, "A" + answer  # a message holds some text
    thread = {
        "version": 1,
        "model": "gpt-5",
        "messages": [
            {
                "id": "u1",
                "role": "user",
                "content": user,
                "identity": {"identifier": "alice", "representation": name},
                "created_at": "2026-01-01T10:00:00Z",
            },
            {
                "id": "m1",
                "role": "assistant",
                "content": answer,
                "created_at": "2026-01-01T10:00:02Z",
            },
        ],
        "tool_calls": [
            {
                "id": "call_1",
                "tool": "lookup",
                "args": {"q": result},
                "result": {"text": result},
                "created_at": "2026-01-01T10:00:01Z",
            }
        ],
    }
    path = threads_store.parent / "hostile.json"
    path.write_bytes(json.dumps(thread, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    thread_id = f"t{len(SHOWN_THREADS)}"
    SHOWN_THREADS.append(1)
    store = ("--store", str(threads_store))
    title_option = f"--title={title}"  # (a title may start with `-`)
    status, out, err = _command(
        "threads", "import", str(path), "--id", thread_id, title_option, *store
    )
    if status != 0:
        _one_error_line(status, err)
        assert _lone_surrogates(thread), err
        event("refused")
        return
    event("stored")
    status, out, err = _command("threads", "show", thread_id, "--transcript", *store)
    assert status == 0, err
    assert _acted_on(out + err) == []
    for text in (user, answer, result):
        assert "".join(c for c in text if c in "\n\t" or not _acted_on(c)).strip() in out
    status, out, err = _command("threads", "show", thread_id, *store)
    assert status == 0, err
    assert _acted_on(out + err) == []
    shown = json.loads(out)
    assert [m["content"] for m in shown["messages"]] == [user, answer]
    assert shown["tool_calls"][0]["result"]["text"] == result
    status, out, err = _command("threads", "list", *store)
    assert status == 0 and _acted_on(out + err) == []


# ---------------------------------------------------------------- dates ahead of the clock

_SKEW = int(FUTURE_SKEW.total_seconds())
_LAST = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)
# Seconds from now: the past, within the drift allowed, ahead of it (up to year 9999); never
# within 30 s of the limit, where the test's own clock could disagree with the check's.
OFFSETS = st.one_of(
    st.integers(-(10**9), -1),
    st.integers(0, _SKEW - 30),
    st.integers(_SKEW + 30, 3 * 10**11),
)


def _dated(offset: int) -> str:
    now = datetime.now(UTC)
    moment = _LAST if offset >= (_LAST - now).total_seconds() else now + timedelta(seconds=offset)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _record(kind: str, index: int, created_at: str) -> dict[str, Any]:
    if kind == "messages":
        return {
            "id": f"m{index}",
            "role": "user",
            "content": f"question {index}",
            "created_at": created_at,
        }
    if kind == "thoughts":
        return {"id": f"t{index}", "content": "thinking", "created_at": created_at}
    if kind == "tool_calls":
        return {
            "id": f"call_{index}",
            "tool": "lookup",
            "args": {},
            "result": {"text": "found"},
            "created_at": created_at,
        }
    return {
        "id": f"cmp_{index}",
        "type": "compaction",
        "item": {"type": "compaction", "id": f"cmp_{index}", "encrypted_content": "x"},
        "created_at": created_at,
    }


@_slow(4)
@given(
    records=st.lists(
        st.tuples(st.sampled_from(["messages", "thoughts", "tool_calls", "hosted_items"]), OFFSETS),
        min_size=1,
        max_size=5,
    ),
    suffix=st.sampled_from([".json", ".yaml"]),
)
def test_a_record_dated_ahead_is_refused_with_one_error_line(
    folder: Path, records: list[tuple[str, int]], suffix: str
) -> None:
    """A thread file with records dated in the past, within the five minutes of drift allowed,
    or ahead of them (up to year 9999): rendered when none is past the limit, else refused with
    one ``E_THREAD_FILE_INVALID`` line naming a record's ``created_at`` in the future."""
    thread: dict[str, Any] = {
        "version": 1,
        "model": "gpt-5",
        "messages": [{"id": "u0", "role": "user", "content": "hi", "created_at": _dated(-3600)}],
    }
    for index, (kind, offset) in enumerate(records):
        thread.setdefault(kind, []).append(_record(kind, index, _dated(offset)))
    path = folder / f"dated{suffix}"
    path.write_text(json.dumps(thread) if suffix == ".json" else yaml.safe_dump(thread))
    status, out, err = _command("render", str(path), "--model", "gpt-5", "-q")
    if all(offset < _SKEW for _, offset in records):
        assert status == 0, err
        assert json.loads(out)["model"] == "gpt-5"
        return
    _one_error_line(status, err)
    line = err.strip().splitlines()[-1]
    assert line.startswith("error: E_THREAD_FILE_INVALID: $.") and ".created_at: " in line, line
    assert "is in the future" in line, line


@pytest.fixture(scope="module")
def dated_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from turnwire.store import open_store

    with open_store(tmp_path_factory.mktemp("dated") / "threads.db") as store:
        yield store


def _question_after(store: Any, thread: dict[str, Any]) -> bytes | TurnwireError:
    """The body a stored copy of ``thread`` renders with a new question (dated now, as a run's
    is), or the error that refused the thread."""
    try:
        loaded = turnwire.load_thread(thread)
    except TurnwireError as err:
        return err
    thread_id = store.import_thread(loaded)
    current = store.builder.build_user_turn("the new question")
    return turnwire.render(store.load(thread_id, current=current), model="gpt-5").body


@_slow(8)
@given(
    compaction=st.one_of(st.integers(-(10**8), -1), st.integers(_SKEW + 30, 3 * 10**11)),
    questions=st.lists(st.integers(-(10**8), -1), min_size=1, max_size=4),
)
def test_a_compaction_never_hides_a_question_asked_after_it(
    dated_store: Any, compaction: int, questions: list[int]
) -> None:
    """A compaction cuts every record dated before it out of the request. Dated in the past,
    it keeps every question dated after it, and the new one a run asks; dated past the drift
    allowed, the thread is refused, so it never cuts a later question out."""
    at = _dated(compaction)
    thread = {
        "version": 1,
        "model": "gpt-5",
        "messages": [
            {
                "id": f"m{i}",
                "role": "user",
                "content": f"question {i}",
                "created_at": _dated(offset),
            }
            for i, offset in enumerate(questions)
        ],
        "hosted_items": [_record("hosted_items", 0, at)],
    }
    body = _question_after(dated_store, thread)
    if compaction > _SKEW:
        assert isinstance(body, TurnwireError) and "is in the future" in str(body)
        return
    assert isinstance(body, bytes), body
    assert b"the new question" in body
    for message in thread["messages"]:
        if message["created_at"] > at:  # (one format: the text sorts as the time)
            assert message["content"].encode() in body, message
        else:
            assert message["content"].encode() not in body, message


@pytest.mark.parametrize("ahead", [60, _SKEW - 30])
def test_a_compaction_within_the_drift_allowed_never_hides_the_next_question(
    dated_store: Any, ahead: int
) -> None:
    thread = {
        "version": 1,
        "model": "gpt-5",
        "messages": [
            {"id": "m0", "role": "user", "content": "question 0", "created_at": _dated(-60)}
        ],
        "hosted_items": [_record("hosted_items", 0, _dated(ahead))],
    }
    body = _question_after(dated_store, thread)
    assert isinstance(body, bytes), body
    assert b"the new question" in body


# ---------------------------------------------------------------- redaction


class _Holder:
    """An object that holds a credential (a transport, a configuration, an MCP declaration)."""


def _survives(secret: str, redacted: str) -> bool:
    """Whether ``secret`` is still in ``redacted`` outside the marks put in its place."""
    from turnwire._redact import MARK

    return any(secret in piece for piece in redacted.split(MARK))


SECRET_CHARS = st.characters(
    codec="ascii", categories=["L", "N", "P", "S"], exclude_characters="[]"
)


@FUZZ
@given(
    secret=st.text(SECRET_CHARS, min_size=4, max_size=40),
    around=st.lists(st.text(max_size=12), min_size=1, max_size=5),
    holders=st.integers(1, 3),
)
def test_a_remembered_secret_never_survives_and_is_forgotten_with_its_holders(
    secret: str, around: list[str], holders: int
) -> None:
    """A credential an object hands over (4 characters or more), written anywhere in a text
    (once or many times, next to itself, inside other text): redacted while any holder lives;
    forgotten, and no longer kept in memory, once the last one is gone."""
    from turnwire import _redact

    text = secret.join(around)
    if len(around) == 1:
        text += secret
    kept = [_Holder() for _ in range(holders)]
    for index in range(holders):
        _redact.remember_secret(secret, holder=kept[index])
    while kept:
        assert not _survives(secret, _redact.redact(text)), text
        kept.pop()  # (no cycle holds it: freed, and its finalizer run, at once)
    assert secret not in _redact._remembered  # bounded memory: nothing outlives its holders
    if secret.isalnum() and secret not in _redact._environment_secrets():
        assert _redact.redact(secret) == secret  # and forgotten


@FUZZ
@given(
    prefix=st.sampled_from(["sk", "sess"]).flatmap(
        lambda p: st.tuples(*(st.sampled_from([c, c.upper()]) for c in p)).map("".join)
    ),
    body=st.text(
        st.sampled_from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"),
        min_size=8,
        max_size=60,
    ),
    before=st.text(max_size=20),
    after=st.text(max_size=20),
)
def test_a_key_like_token_never_survives_in_any_case(
    prefix: str, body: str, before: str, after: str
) -> None:
    """An ``sk-`` or ``sess-`` key (8 characters or more after the dash), its prefix in any case,
    starting a word anywhere in a text: never in what redaction gives back."""
    from turnwire._redact import redact

    if before and (before[-1].isalnum() or before[-1] == "_"):
        before += " "  # a key starts a word (`task-...` is not one)
    key = f"{prefix}-{body}"
    assert not _survives(key, redact(before + key + after)), before + key + after


# ---------------------------------------------------------------- stores


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def text_store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    """One store of each kind for the whole module (each example deletes its thread): a
    SQLite file, and a PostgreSQL database when a server can be started (else skipped, with
    the reason)."""
    from turnwire.store import open_store
    from turnwire.store.postgres import PostgresStore

    from .postgres import _database

    folder = tmp_path_factory.mktemp(f"store-{request.param}")
    # A PostgreSQL pool adds each connection in a thread of its own, which draws on the
    # `random` module (its expiry jitter): Hypothesis takes that for a strategy using it. One
    # connection, made before the first example, leaves that thread nothing to add.
    store = (
        open_store(folder / "threads.db")
        if request.param == "sqlite"
        else PostgresStore(_database(request), folder=folder, pool_size=1)
    )
    with store:
        store.list_threads()
        yield store


def _keeps_or_refuses(store: Any, title: str, model: str, question: str, answer: str) -> str:
    """Store a thread with these texts, then read it back: every text as it was given, or a
    StoreError (a TurnwireError) and nothing stored. Says which."""
    from turnwire.errors import StoreError
    from turnwire.model.records import Message

    header = msgspec.structs.replace(turnwire.load_thread({"version": 1}), model=model)
    before = [summary.id for summary in store.list_threads()]
    try:
        thread_id = store.create_thread(header, title=title)
    except TurnwireError as err:
        assert isinstance(err, StoreError), repr(err)
        assert [summary.id for summary in store.list_threads()] == before
        return "thread refused"
    try:
        (summary,) = [s for s in store.list_threads() if s.id == thread_id]
        assert summary.title == title
        assert store.header(thread_id).model == model
        turns = [
            store.builder.build_user_turn(question),
            *store.builder.build_assistant_turns(
                [
                    Message(
                        id="msg_1", role="assistant", content=answer, created_at=datetime.now(UTC)
                    )
                ],
                model=model,
            ),
        ]
        try:
            store.append_turns(thread_id, turns)
        except TurnwireError as err:
            assert isinstance(err, StoreError), repr(err)
            assert store.turns(thread_id) == []
            return "turns refused"
        assert [m.content for m in store.load(thread_id).messages] == [question, answer]
        assert [turn.model for turn in store.turns(thread_id)] == [None, model]
        return "kept"
    finally:
        with contextlib.suppress(TurnwireError):  # (a refused thread is not there)
            store.delete_thread(thread_id)


@_slow(4)
@given(
    title=hostile_text(surrogates=False),
    model=hostile_text(surrogates=False, max_pieces=4),
    question=hostile_text(surrogates=False),
    answer=hostile_text(surrogates=False),
)
def test_a_store_keeps_text_as_given_or_refuses_it_typed(
    text_store: Any, title: str, model: str, question: str, answer: str
) -> None:
    """A title, a model name, a question and an answer holding NUL, C0 and C1 controls, DEL
    and escape sequences: each is stored and read back equal, or the store refuses it with a
    StoreError and stores nothing; never a raw sqlite3 or psycopg error."""
    event(_keeps_or_refuses(text_store, title, "gpt-" + model, "Q" + question, "A" + answer))


@pytest.mark.parametrize("field", ["title", "model", "question", "answer"])
def test_a_store_refuses_a_lone_surrogate_typed(text_store: Any, field: str) -> None:
    texts = {"title": "t", "model": "gpt-5", "question": "Q", "answer": "A"}
    texts[field] += "\ud800"
    assert _keeps_or_refuses(text_store, **texts) != "kept"


_ARGUMENTS = [
    ("render", "{thread}", "--model", "gpt\udcff"),
    ("render", "{thread}", "--set", "request.temperature=\udcff"),
    ("threads", "import", "{thread}", "--store", "{store}", "--title", "a\udcff"),
    ("threads", "import", "{thread}", "--store", "{store}", "--id", "a\udcff"),
    ("threads", "show", "a\udcff", "--store", "{store}"),
]


@pytest.mark.parametrize(
    "arguments",
    _ARGUMENTS,
    ids=["render --model", "render --set", "import --title", "import --id", "show ID"],
)
def test_a_command_line_value_that_is_not_utf8_is_one_error_line(
    tmp_path: Path, arguments: tuple[str, ...]
) -> None:
    places = {"thread": str(REPO_EXAMPLES / "weather.yaml"), "store": str(tmp_path / "t.db")}
    status, _, err = _command(*(argument.format(**places) for argument in arguments))
    _one_error_line(status, err)
    assert "is not UTF-8 text" in err


@pytest.mark.parametrize("where", ["content", "tool result"])
def test_a_thread_mapping_with_a_lone_surrogate_is_refused_or_rendered(where: str) -> None:
    thread = copy.deepcopy(TOOL_THREAD)
    if where == "content":
        thread["messages"][0]["content"] = "half \ud800 of a pair"
    else:
        thread["tool_calls"] = [
            {
                "id": "call_1",
                "tool": "echo",
                "args": {},
                "result": {"text": "half \ud800 of a pair"},
                "created_at": "2026-01-01T10:00:01Z",
            }
        ]
    try:
        body = turnwire.render(thread, model="gpt-5").body
    except TurnwireError as err:
        assert err.code == "E_THREAD_FILE_INVALID"
    else:
        assert _lone_surrogates(json.loads(body)) == []


# ---------------------------------------------------------------- path races

RACES = pytest.mark.skipif(
    os.environ.get("TURNWIRE_FUZZ_RACES") != "1",
    reason="the path races take minutes: TURNWIRE_FUZZ_RACES=1 runs them",
)
RACE_RENDERS = 30_000
RACE_PROCESSES = 200
_SEEN_OUTSIDE = (b"SECRET", b"U0VDUkVU")  # the outside file's bytes, raw or in base64
_SEEN_INSIDE = b"aW5zaWRlIGJ5dGVz"  # the inside file's, in base64


def _document_thread(*pointers: str) -> dict[str, Any]:
    return {
        "version": 1,
        "model": "gpt-5",
        "messages": [
            {
                "id": "u1",
                "role": "user",
                "content": "read these",
                "created_at": "2026-01-01T00:00:00Z",
                "attachments": [
                    {
                        "id": f"a{index}",
                        "kind": "document",
                        "mime_type": "text/plain",
                        "filename": "file.txt",
                        "path": pointer,
                    }
                    for index, pointer in enumerate(pointers)
                ],
            }
        ],
    }


def _race_renders(tmp_path: Path, renders: int, *relative: str) -> tuple[int, int]:
    """``renders`` renders of a thread attaching ``relative`` paths under a root whose folder
    ``sub`` flips between a real folder, a symlink inside the root and one out of it: no body
    holds a byte from outside, every failure is a TurnwireError. Gives (sent, refused)."""
    from .files.test_pointers import _flipper, _tree

    root, outside = _tree(tmp_path)
    thread = turnwire.load_thread(_document_thread(*(str(root / path) for path in relative)))
    container = turnwire.build_container()
    stop = threading.Event()
    flipper = _flipper(root, outside, stop)
    flipper.start()
    sent, refused, untyped = 0, 0, []
    attempts = 0
    try:
        # At least `renders`, and on until both sides of the race were met (a loaded machine
        # can keep one side from the renderer for thousands of renders), within a bound.
        while attempts < renders or (not (sent and refused) and attempts < 20 * renders):
            attempts += 1
            try:
                body = turnwire.render(thread, container=container, roots=[root]).body
            except TurnwireError:
                refused += 1
            except Exception as err:  # anything else is a defect
                untyped.append(repr(err))
            else:
                sent += 1
                assert not any(seen in body for seen in _SEEN_OUTSIDE)
                assert _SEEN_INSIDE in body
    finally:
        stop.set()
        flipper.join(timeout=5)
    assert untyped == []
    assert sent + refused == attempts
    return sent, refused


@RACES
def test_renders_racing_a_flipping_folder_at_length_never_send_outside_bytes(
    tmp_path: Path,
) -> None:
    """30,000 renders of one pointer through the flipping folder: 0 outside reads, 0 untyped
    errors, and both sides of the race met."""
    sent, refused = _race_renders(tmp_path, RACE_RENDERS, "sub/file.txt")
    assert sent > 0 and refused > 0


@RACES
def test_renders_of_several_pointers_racing_a_flipping_folder(tmp_path: Path) -> None:
    """A thread attaching the same file four ways (through the flipping folder, past it, and
    back into it with `..` and `.`): 10,000 renders, 0 outside reads, 0 untyped errors."""
    pointers = ("sub/file.txt", "real/file.txt", "sub/../sub/file.txt", "./sub/./file.txt")
    sent, refused = _race_renders(tmp_path, RACE_RENDERS // 3, *pointers)
    assert sent > 0 and refused > 0


@RACES
def test_render_processes_racing_a_flipping_folder_never_print_outside_bytes(
    tmp_path: Path,
) -> None:
    """200 ``turnwire render`` processes of a thread file beside the flipping folder: each
    prints a body without a byte from outside, or one ``error: E_...`` line; no traceback."""
    from .conftest import turnwire_process
    from .files.test_pointers import _flipper, _tree

    root, outside = _tree(tmp_path)
    path = root / "thread.json"
    path.write_text(json.dumps(_document_thread("sub/file.txt")))
    stop = threading.Event()
    flipper = _flipper(root, outside, stop)
    flipper.start()
    sent, refused, attempts = 0, 0, 0
    try:
        # As _race_renders: at least RACE_PROCESSES, and on until both sides were met.
        while attempts < RACE_PROCESSES or (
            not (sent and refused) and attempts < 5 * RACE_PROCESSES
        ):
            attempts += 1
            done = turnwire_process("render", str(path), "-q")
            assert "Traceback" not in done.stderr, done.stderr
            if done.returncode == 0:
                sent += 1
                body = done.stdout.encode()
                assert not any(seen in body for seen in _SEEN_OUTSIDE)
                assert _SEEN_INSIDE in body
            else:
                refused += 1
                _one_error_line(done.returncode, done.stderr)
                assert done.stdout == ""
    finally:
        stop.set()
        flipper.join(timeout=5)
    assert sent > 0 and refused > 0


def test_the_security_page_names_tests_that_exist() -> None:
    """docs/security.md's table of defences names each test by file and function: every one
    must exist."""
    from .conftest import REPO

    page = (REPO / "docs" / "security.md").read_text()
    table = page.split("## Defences and their tests", 1)[1].split("\n## ", 1)[0]
    cited = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", table)
    assert len(cited) >= 40
    for path, name in cited:
        source = (REPO / path).read_text()
        assert re.search(rf"^(async )?def {name}\(", source, re.M), (path, name)
    rows = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line]
    assert all("`tests/" in row for row in rows[1:])
