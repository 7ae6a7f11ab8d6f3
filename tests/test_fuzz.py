"""Fuzzing what turnwire reads from others: thread files, configuration files, stream frames.

Every outcome is a result or one ``error: E_...`` line, never a traceback, a hang or unbounded
memory. Cases are mutations of real inputs (the examples, the goldens, recorded streams) with
hostile values placed at random paths, then written as JSON or YAML and sometimes cut or
corrupted at the byte level. The suite runs a bounded number of cases;
``TURNWIRE_FUZZ_EXAMPLES=10000 uv run pytest tests/test_fuzz.py`` runs a long campaign.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import turnwire
from turnwire.cli.main import main
from turnwire.errors import TurnwireError
from turnwire.files.thread_file import thread_to_builtins

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


@FUZZ
@given(data=streams())
def _stream_frames(data: bytes) -> None:
    class _Body(httpx.AsyncByteStream):
        # A streamed body: httpx.Response(content=bytes) is read eagerly, and aiter_raw()
        # would raise StreamConsumed before any frame was parsed.
        async def __aiter__(self):  # type: ignore[override]
            yield data

    def answer(request: httpx.Request) -> httpx.Response:
        REACHED.append(1)
        return httpx.Response(200, stream=_Body(), headers={"content-type": "text/event-stream"})

    async def scenario() -> Any:
        http = httpx.AsyncClient(transport=httpx.MockTransport(answer))
        client = turnwire.Client(
            turnwire.build_container(
                settings=turnwire.load_settings(overrides={"client": {"retry": {"max_retries": 0}}})
            ),
            base_url="http://127.0.0.1:9/v1",
            client=http,
        )
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

    with _bounded():
        try:
            result = asyncio.run(scenario())
        except TurnwireError as err:
            assert err.code.startswith("E_")
            ERRORS.append(type(err).__name__)
            return
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
    any request is sent fuzzes nothing) and most examples must get past the request."""
    REACHED.clear()
    ERRORS.clear()
    _stream_frames()
    assert REACHED, sorted(set(ERRORS))
