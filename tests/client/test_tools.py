"""The tool loop's executor: tool calls run in the loop until the model answers, their failures and
results the model reads (images, several media, artifacts and handles readable with the artifact
tools, results over the limits), and what the model cannot do to the loop.

A thread names tools, never the code that runs them: handlers come from ``handlers=``,
``tools.handlers`` or the ``turnwire.tools`` entry points, a thread's own ``handler:`` only under
``tools.allow_thread_handlers``; anything else is E_HANDLER_NOT_ALLOWED before a pending call runs.
The model cannot hang or end the loop: every handler call runs under ``tools.timeout_s``; every
exception, ``SystemExit`` included, and every result that cannot be serialised is an error result
the model reads; ``artifact_grep`` uses RE2; numeric arguments are validated and clamped; a result
enters the thread as text a request can carry. Programmatic tool calling: a ``program`` item's calls
run as the model's own, each answered to the caller that made it, and a caller a tool does not allow
gets an error instead."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
import pytest

import turnwire
from turnwire.client.tools import ToolExecutor, parse_arguments
from turnwire.errors import (
    HandlerNotAllowedError,
    PreflightError,
    StreamError,
    ThreadFileError,
)
from turnwire.files.pointers import ContextAssembler
from turnwire.model.records import Artifact, ToolCall, ToolResult

from ..conftest import REPLAY, REPO, SECRET, at, make_container
from ..files.test_pointers import _artifact_thread, secret_outside
from ..oracle import validate_body, validate_open_responses, validate_openapi
from .conftest import AFTER_CALL, CALL, TEXT, THREAD, assert_unchanged, run
from .server import Reply, ScriptedServer, free_port
from .test_reading import MESSAGE, REASONING, streamed


def test_the_artifact_tools_read_pointers_only_inside_the_roots(tmp_path):
    import asyncio

    from turnwire.client.tools import ToolExecutor
    from turnwire.model.records import ToolCall

    (tmp_path / "out.log").write_text("one\ntwo\nthree\n")
    secret = secret_outside(tmp_path)
    head = ToolCall(
        id="c9", tool="artifact_head", args={"callId": "call_log", "n": 2}, created_at=at(2)
    )
    executor = ToolExecutor(inline_max_bytes=4096)
    inside = ContextAssembler(roots=[tmp_path / "out.log"])
    done = asyncio.run(
        executor.execute(head, _artifact_thread(str(tmp_path / "out.log")), files=inside)
    )
    assert (done.result.text, done.is_error) == ("one\ntwo", False)
    refused = asyncio.run(executor.execute(head, _artifact_thread(str(secret)), files=inside))
    assert refused.is_error and "leaked" not in refused.result.text
    assert refused.result.text.startswith(
        "The artifact 'call_log' cannot be read: $.tool_calls[0].result.artifact.path: "
    )


# ------------------------------------------------------------------ the tool loop


def test_tool_calls_run_and_loop_until_the_model_answers(thread_file):
    with ScriptedServer([Reply.sse(CALL), Reply.sse(AFTER_CALL)]) as server:
        result = run(server, thread_file)
    assert result.iterations == 2 and len(server.requests) == 2
    call = result.records.tool_calls[0]
    assert call.id.startswith("call_") and "|fc_" in call.id
    assert call.result.text.startswith("the capital of")
    second = server.requests[1].json
    kinds = [i.get("type") for i in second["input"]]
    assert kinds[-2:] == ["function_call", "function_call_output"]
    assert "the capital of" in second["input"][-1]["output"]
    saved = turnwire.load_thread(thread_file)
    assert saved.tool_calls[0].result == call.result
    assert saved.messages[-1].content == result.records.messages[-1].content
    records = [*saved.messages, *saved.tool_calls]
    assert sorted(r.seq for r in records if r.created_at == call.created_at) == sorted(
        {r.seq for r in records if r.created_at == call.created_at}
    )


@pytest.mark.parametrize(
    ("handlers", "arguments", "expected"),
    [
        ({}, None, "Tool get_capital cannot run: it has no handler"),
        ({"get_capital": lambda **kw: 1 / 0}, None, "Tool get_capital failed: ZeroDivisionError"),
        (None, '{"city": ', 'Tool arguments are not valid JSON. Raw value: {"city": '),
        (None, '["Paris"]', "Tool arguments must be a JSON object; received array."),
        (
            None,
            '{"country": 5}',
            "Tool arguments do not match the parameters of get_capital: $.country: expected string",
        ),
    ],
)
def test_tool_failures_become_error_results_the_model_sees(
    thread_file, handlers, arguments, expected
):
    stream = CALL
    if arguments is not None:
        original = json.loads(
            next(
                line[6:]
                for line in CALL.decode().splitlines()
                if line.startswith("data: ") and '"response.output_item.done"' in line
            )
        )
        raw = original["item"]["arguments"]
        stream = CALL.replace(json.dumps(raw).encode(), json.dumps(arguments).encode())
    with ScriptedServer([Reply.sse(stream), Reply.sse(AFTER_CALL)]) as server:
        result = run(server, thread_file, handlers=handlers if handlers is not None else None)
    call = result.records.tool_calls[0]
    assert call.is_error and call.result.text.startswith(expected)
    assert expected in server.requests[1].json["input"][-1]["output"]


def _emulated_call(name: str, arguments: str) -> dict[str, Any]:
    """A script for ``turnwire emulate``: the model calls ``name`` with ``arguments`` (JSON
    text), then answers once it reads the result."""
    return {
        "answers": [
            {"match": {"last_item": "function_call_output"}, "text": "Done."},
            {"tool_calls": [{"name": name, "arguments": arguments}]},
        ]
    }


def _accepted(api: Any) -> list[dict[str, Any]]:
    """The bodies the emulator was sent, every one accepted: no API rule broken."""
    exchanges = list(api.emulator.exchanges)
    assert [(seen.status, seen.rule) for seen in exchanges] == [(200, None)] * len(exchanges)
    return [seen.json() for seen in exchanges]


def test_arguments_that_break_the_schema_never_reach_the_handler(thread_file, turnwire_emulator):
    ran: list[dict] = []
    turnwire_emulator.script(_emulated_call("get_capital", '{"country":["France"]}'))
    result = run(
        turnwire_emulator, thread_file, handlers={"get_capital": lambda **kw: ran.append(kw)}
    )
    assert ran == []
    call = result.records.tool_calls[0]
    assert call.is_error and call.args == {"country": ["France"]}
    _, second = _accepted(turnwire_emulator)
    assert "$.country: expected string" in second["input"][-1]["output"]
    assert result.text == "Done."


def _tiny_png() -> bytes:
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8-bit RGB
    pixels = zlib.compress(b"\x00\xff\x00\x00")  # filter byte, one red pixel
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def test_a_handler_that_returns_an_image_sends_it_as_input_image_next(thread_file):
    import base64

    png = _tiny_png()

    def chart(**kw):
        return turnwire.Media(id="chart", kind="image", mime_type="image/png", data=png)

    with ScriptedServer([Reply.sse(CALL), Reply.sse(AFTER_CALL)]) as server:
        result = run(server, thread_file, handlers={"get_capital": chart})
    call = result.records.tool_calls[0]
    assert not call.is_error and call.result.media[0].data == png
    output = server.requests[1].json["input"][-1]["output"]
    images = [part for part in output if part.get("type") == "input_image"]
    assert [part["image_url"] for part in images] == [
        "data:image/png;base64," + base64.b64encode(png).decode()
    ]
    assert turnwire.load_thread(thread_file).tool_calls[0].result.media[0].data == png


def test_a_handler_may_return_several_media_or_an_artifact(thread_file):
    pdf = turnwire.Media(id="doc", kind="document", mime_type="application/pdf", data=b"%PDF-1.4")
    png = turnwire.Media(id="img", kind="image", mime_type="image/png", data=_tiny_png())
    with ScriptedServer([Reply.sse(CALL), Reply.sse(AFTER_CALL)]) as server:
        result = run(server, thread_file, handlers={"get_capital": lambda **kw: [png, pdf]})
    assert [m.id for m in result.records.tool_calls[0].result.media] == ["img", "doc"]
    kinds = [p.get("type") for p in server.requests[1].json["input"][-1]["output"]]
    assert "input_image" in kinds and "input_file" in kinds
    artifact = turnwire.Artifact(text="a long report\n" * 500)
    thread_file.write_text(THREAD)
    with ScriptedServer([Reply.sse(CALL), Reply.sse(AFTER_CALL)]) as server:
        result = run(server, thread_file, handlers={"get_capital": lambda **kw: artifact})
    assert result.records.tool_calls[0].result.artifact == artifact
    assert 'kind="artifact-handle"' in server.requests[1].json["input"][-1]["output"]


def test_a_media_result_pointing_outside_the_roots_is_an_error_result(thread_file, tmp_path):
    outside = tmp_path.parent / "elsewhere.png"
    pointer = turnwire.Media(id="p", kind="image", mime_type="image/png", path=str(outside))
    with ScriptedServer([Reply.sse(CALL), Reply.sse(AFTER_CALL)]) as server:
        result = run(server, thread_file, handlers={"get_capital": lambda **kw: pointer})
    call = result.records.tool_calls[0]
    assert call.is_error and "leads outside the allowed roots" in call.result.text
    assert len(server.requests) == 2  # the run went on; the model read the error


def test_an_artifact_result_is_named_by_its_own_path_and_an_unreadable_one_is_an_error_result(
    thread_file, tmp_path
):
    outside = turnwire.Artifact(path=str(tmp_path.parent / "elsewhere.txt"))
    missing = turnwire.Artifact(path=str(thread_file.parent / "no-such-file.txt"))
    for value, expected in (
        (outside, "result.artifact.path: "),
        (missing, "which cannot be read"),
    ):
        with ScriptedServer([Reply.sse(CALL), Reply.sse(AFTER_CALL)]) as server:
            result = run(
                server, thread_file, handlers={"get_capital": lambda value=value, **kw: value}
            )
        call = result.records.tool_calls[0]
        assert call.is_error and expected in call.result.text, call.result.text
        assert "result.media" not in call.result.text
        assert len(server.requests) == 2  # the run went on; the model read the error


def test_media_over_the_result_limit_are_an_error_result(thread_file):
    big = turnwire.Media(id="big", kind="image", mime_type="image/png", data=b"x" * 2048)
    settings = {"tools": {"max_result_bytes": 1024}}
    with ScriptedServer([Reply.sse(CALL), Reply.sse(AFTER_CALL)]) as server:
        result = run(
            server, thread_file, settings=settings, handlers={"get_capital": lambda **kw: big}
        )
    call = result.records.tool_calls[0]
    assert call.is_error and "its media are over 1024 bytes" in call.result.text


def test_an_unknown_tool_lists_the_available_ones(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text(THREAD.replace("get_capital", "get_time"))
    with ScriptedServer([Reply.sse(CALL), Reply.sse(AFTER_CALL)]) as server:
        result = run(server, path)
    assert result.records.tool_calls[0].result.text == (
        "Tool not found: get_capital. Available tools: get_time."
    )


def test_large_results_become_artifacts_readable_with_the_artifact_tools(thread_file):
    big = "line of log\n" * 1000
    with ScriptedServer([Reply.sse(CALL), Reply.sse(AFTER_CALL)]) as server:
        result = run(server, thread_file, handlers={"get_capital": lambda **kw: big})
    call = result.records.tool_calls[0]
    assert call.result.artifact is not None and call.result.artifact.text == big
    second = server.requests[1].json
    assert 'kind="artifact-handle"' in second["input"][-1]["output"]
    assert {"artifact_head", "artifact_grep"} <= {t["name"] for t in second["tools"]}


def test_a_small_result_forced_to_a_handle_still_gets_the_artifact_tools(tmp_path):
    """The client declares the artifact tools by the same rule the stage shows handles by."""
    path = tmp_path / "t.yaml"
    path.write_text(
        THREAD
        + """tool_calls:
  - {id: "call_0", tool: get_capital, created_at: "2026-01-01T10:00:01Z", inline: false,
     result: {artifact: {text: "tiny"}}}
"""
    )
    with ScriptedServer([Reply.sse(TEXT)]) as server:
        run(server, path)
    sent = server.requests[0].json
    assert 'kind="artifact-handle"' in sent["input"][2]["output"]
    assert "artifact_head" in {t["name"] for t in sent["tools"]}


def test_a_retrieved_document_handle_is_readable_with_the_artifact_tools(tmp_path):
    log = tmp_path / "report.txt"
    log.write_text("alpha\nbeta\ngamma\n")
    path = tmp_path / "t.yaml"
    path.write_text(
        THREAD
        + f"""retrievables:
  - {{id: doc-1, trust_tier: first-party, artifact: {{path: {log}}}}}
"""
    )
    head_call = CALL.replace(b"get_capital", b"artifact_grep").replace(
        b'{\\"country\\":\\"France\\"}', b'{\\"callId\\":\\"doc-1\\",\\"pattern\\":\\"be\\"}'
    )
    assert b"artifact_grep" in head_call and b"doc-1" in head_call
    with ScriptedServer([Reply.sse(head_call), Reply.sse(AFTER_CALL)]) as server:
        result = run(server, path)
    first = server.requests[0].json
    assert "This retrieved record is large" in first["instructions"]
    assert "artifact_grep" in {t["name"] for t in first["tools"]}
    call = result.records.tool_calls[0]
    assert (call.tool, call.is_error, call.result.text) == ("artifact_grep", False, "2: beta")


def turnwire_cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "TURNWIRE_ENVELOPE_SECRET": SECRET}
    environment.pop("OPENAI_API_KEY", None)
    return subprocess.run(
        [sys.executable, "-m", "turnwire", *args],
        capture_output=True,
        text=True,
        env=environment,
        cwd=cwd,
        timeout=60,
        check=False,
    )


def call_stream(name: str, arguments: dict[str, object]) -> bytes:
    """The recorded function-call stream, calling ``name`` with ``arguments``."""
    done = next(
        json.loads(line[6:])
        for line in CALL.decode().splitlines()
        if line.startswith("data: ") and '"response.output_item.done"' in line
    )
    raw = done["item"]["arguments"]
    stream = CALL.replace(json.dumps(raw).encode(), json.dumps(json.dumps(arguments)).encode())
    return stream.replace(b'"name":"get_capital"', b'"name":"' + name.encode() + b'"')


def shell_thread(folder: Path, *, pending: bool) -> Path:
    """A thread whose tool names os:system as its code, with a call that writes PWNED."""
    marker = folder / "PWNED"
    call = {
        "id": "call_1|fc_1",
        "tool": "shell",
        "args": {"command": f"id > {marker}"},
        "created_at": at(1),
    }
    thread = {
        "version": 1,
        "model": "gpt-4o",
        "tools": [{"name": "shell", "handler": "os:system"}],
        "messages": [{"id": "u1", "role": "user", "content": "hi", "created_at": at(0)}],
        "tool_calls": [call] if pending else [],
    }
    path = folder / "thread.json"
    path.write_text(json.dumps(thread))
    return path


def test_a_pending_call_with_a_thread_named_handler_never_runs(tmp_path):
    path = shell_thread(tmp_path, pending=True)
    done = turnwire_cli("run", str(path), "--base-url", f"http://127.0.0.1:{free_port()}/v1")
    assert not (tmp_path / "PWNED").exists()
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "error: E_HANDLER_NOT_ALLOWED: $.tools[0].handler: the thread names 'os:system'"
    )


def test_a_model_issued_call_never_runs_a_thread_named_handler(tmp_path):
    path = shell_thread(tmp_path, pending=False)
    marker = tmp_path / "PWNED"
    stream = call_stream("shell", {"command": f"id > {marker}"})
    with ScriptedServer([Reply.sse(stream), Reply.sse(AFTER_CALL)]) as server:
        done = turnwire_cli("run", str(path), "--base-url", server.base_url)
    assert not marker.exists()
    assert done.returncode == 1 and "error: E_HANDLER_NOT_ALLOWED: " in done.stderr
    assert server.requests == []  # refused before anything was sent


def test_the_executor_itself_never_imports_a_thread_handler_it_was_not_allowed(tmp_path):
    """Even a call that reaches the executor (a caller that skipped the check) is refused."""
    marker = tmp_path / "PWNED"
    thread = turnwire.load_thread(json.loads(shell_thread(tmp_path, pending=True).read_text()))
    call = ToolCall(id="c9", tool="shell", args={"command": f"id > {marker}"}, created_at=at(2))
    finished = asyncio.run(ToolExecutor(inline_max_bytes=4096).execute(call, thread))
    assert not marker.exists()
    assert finished.is_error
    assert finished.result.text == (
        "Tool shell cannot run: its handler 'os:system' tools.allow_thread_handlers does not allow"
    )


def test_the_python_api_refuses_before_sending(tmp_path):
    path = shell_thread(tmp_path, pending=True)
    with ScriptedServer([Reply.sse(AFTER_CALL)]) as server:
        with pytest.raises(HandlerNotAllowedError) as caught:
            turnwire.run(path, container=make_container(), base_url=server.base_url)
    assert server.requests == [] and not (tmp_path / "PWNED").exists()
    assert caught.value.code == "E_HANDLER_NOT_ALLOWED"
    assert caught.value.path == "$.tools[0].handler"
    assert caught.value.tool == "shell" and caught.value.handler == "os:system"


WEATHER = {
    "version": 1,
    "model": "gpt-4o",
    "tools": [{"name": "get_capital", "handler": "turnwire.examples.tools:get_weather"}],
    "messages": [{"id": "u1", "role": "user", "content": "hi", "created_at": at(0)}],
}


def _run_weather(tmp_path, settings, handlers=None, thread=WEATHER):
    path = tmp_path / "thread.json"
    path.write_text(json.dumps(thread))
    stream = call_stream("get_capital", {"city": "Oslo"})
    with ScriptedServer([Reply.sse(stream), Reply.sse(AFTER_CALL)]) as server:
        result = turnwire.run(
            path,
            container=make_container(settings),
            base_url=server.base_url,
            handlers=handlers,
        )
    return result.records.tool_calls[0]


def test_an_allowed_thread_handler_runs(tmp_path):
    allowed = {"tools": {"allow_thread_handlers": ["turnwire.examples.*"]}}
    call = _run_weather(tmp_path, allowed)
    assert not call.is_error and call.result.text == "-3C and snow in Oslo"


def test_the_examples_profile_allows_the_example_thread():
    done = turnwire_cli(
        "run",
        "examples/weather.yaml",
        "--once",
        "--config",
        "config/examples.yaml",
        "--base-url",
        f"http://127.0.0.1:{free_port()}/v1",
        "--set",
        "client.retry.max_retries=0",
    )
    # Past the handler check, the run fails only at the connection.
    assert done.returncode == 1 and "E_OPENAI_RESPONSES_HTTP_ERROR" in done.stderr, done.stderr
    refused = turnwire_cli("run", "examples/weather.yaml", "--once")
    assert "error: E_HANDLER_NOT_ALLOWED: $.tools[0].handler" in refused.stderr


def test_a_configured_handler_runs_whatever_the_thread_names(tmp_path):
    thread = {**WEATHER, "tools": [{"name": "get_capital", "handler": "os:system"}]}
    registered = {"tools": {"handlers": {"get_capital": "turnwire.examples.tools:get_weather"}}}
    call = _run_weather(tmp_path, registered, thread=thread)
    assert not call.is_error and call.result.text == "-3C and snow in Oslo"


def test_a_python_handler_wins_over_configuration(tmp_path):
    registered = {"tools": {"handlers": {"get_capital": "turnwire.examples.tools:get_weather"}}}
    python = {"get_capital": lambda city: f"hello {city}"}
    call = _run_weather(tmp_path, registered, handlers=python)
    assert call.result.text == "hello Oslo"


def test_an_entry_point_registers_a_handler(tmp_path, monkeypatch):
    site = tmp_path / "site"
    (site / "weather_plugin_demo-1.0.dist-info").mkdir(parents=True)
    (site / "weather_plugin_demo-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: weather-plugin-demo\nVersion: 1.0\n"
    )
    (site / "weather_plugin_demo-1.0.dist-info" / "entry_points.txt").write_text(
        "[turnwire.tools]\nget_capital = weather_plugin_demo:capital\n"
    )
    (site / "weather_plugin_demo.py").write_text("def capital(city):\n    return 'ep ' + city\n")
    monkeypatch.syspath_prepend(str(site))
    thread = {**WEATHER, "tools": [{"name": "get_capital"}]}
    call = _run_weather(tmp_path, {}, thread=thread)
    assert call.result.text == "ep Oslo"
    unplugged = _run_weather(tmp_path, {"tools": {"load_entrypoints": False}}, thread=thread)
    assert unplugged.is_error and "it has no handler" in unplugged.result.text


@pytest.mark.parametrize(
    ("handler", "reason"),
    [
        # allowed by the pattern, but imported into the module, not defined there
        ("turnwire.api:load_thread", "is not defined in turnwire.api"),
        ("turnwire.examples.tools:get_weather.__globals__", "public names only"),
        ("turnwire.examples.tools", "public names only"),
    ],
)
def test_an_allowed_pattern_reaches_only_public_functions_of_the_module_named(handler, reason):
    thread = turnwire.load_thread({**WEATHER, "tools": [{"name": "t", "handler": handler}]})
    executor = ToolExecutor(inline_max_bytes=4096, allow_thread_handlers=["turnwire.*"])
    call = ToolCall(id="c1", tool="t", args={}, created_at=at(1))
    finished = asyncio.run(executor.execute(call, thread))
    assert finished.is_error and reason in finished.result.text


def test_a_model_call_to_a_tool_without_a_handler_is_an_error_result_the_model_reads(tmp_path):
    thread = {**WEATHER, "tools": [{"name": "get_capital"}]}
    call = _run_weather(tmp_path, {"tools": {"load_entrypoints": False}}, thread=thread)
    assert call.is_error and call.result.text.startswith(
        "Tool get_capital cannot run: it has no handler (register one"
    )


def test_tools_handlers_must_name_module_and_function():
    with pytest.raises(turnwire.ConfigError) as caught:
        turnwire.load_settings(overrides={"tools": {"handlers": {"get_capital": "os.system"}}})
    assert caught.value.path == "$.tools.handlers"


BOUNDED_THREAD = {
    "version": 1,
    "model": "gpt-4o",
    "tools": [{"name": "get_capital", "parameters": {"type": "object", "properties": {}}}],
    "messages": [{"id": "u1", "role": "user", "content": "hi", "created_at": at(0)}],
}


def bounded_turnwire_cli(
    *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    environment = {**os.environ, "TURNWIRE_ENVELOPE_SECRET": SECRET, **(env or {})}
    environment.pop("OPENAI_API_KEY", None)
    return subprocess.run(
        [sys.executable, "-m", "turnwire", *args],
        capture_output=True,
        text=True,
        env=environment,
        cwd=REPO,
        timeout=20,  # a tool that hangs fails the test here
        check=False,
    )


def bounded_call_stream(name: str, arguments: dict[str, object]) -> bytes:
    done = next(
        json.loads(line[6:])
        for line in CALL.decode().splitlines()
        if line.startswith("data: ") and '"response.output_item.done"' in line
    )
    raw = done["item"]["arguments"]
    stream = CALL.replace(json.dumps(raw).encode(), json.dumps(json.dumps(arguments)).encode())
    return stream.replace(b'"name":"get_capital"', b'"name":"' + name.encode() + b'"')


def run_tool(tmp_path, handler, settings=None):
    """One model-issued call of get_capital, run by ``handler``, through a real server."""
    path = tmp_path / "thread.json"
    path.write_text(json.dumps(BOUNDED_THREAD))
    with ScriptedServer([Reply.sse(CALL), Reply.sse(AFTER_CALL)]) as server:
        result = turnwire.run(
            path,
            container=make_container(settings),
            base_url=server.base_url,
            handlers={"get_capital": handler},
        )
    call = result.records.tool_calls[0]
    assert call.result.text in server.requests[1].json["input"][-1]["output"]
    assert result.records.messages[-1].content == "The capital of France is Paris."
    return call


# ---------------------------------------------------------------- time


@pytest.fixture
def release():
    """Lets a handler abandoned after its timeout finish when the test ends."""
    event = threading.Event()
    yield event
    event.set()


def test_a_hanging_sync_handler_ends_within_the_timeout_as_an_error_result(tmp_path, release):
    call = run_tool(tmp_path, lambda **kw: release.wait(20), settings={"tools": {"timeout_s": 0.5}})
    assert call.is_error
    assert call.result.text == "Tool get_capital failed: it did not finish within 0.5 s"


def test_a_hanging_async_handler_ends_within_the_timeout_as_an_error_result(tmp_path):
    async def hang(**kw):
        await asyncio.sleep(20)

    call = run_tool(tmp_path, hang, settings={"tools": {"timeout_s": 0.5}})
    assert call.is_error
    assert call.result.text == "Tool get_capital failed: it did not finish within 0.5 s"


def test_a_handler_that_hangs_for_ever_does_not_keep_the_process_alive(tmp_path):
    (tmp_path / "stuck_tool.py").write_text(
        "import threading\ndef stuck(**kw):\n    threading.Event().wait()\n"
    )
    thread = tmp_path / "thread.json"
    thread.write_text(json.dumps(BOUNDED_THREAD))
    with ScriptedServer([Reply.sse(CALL), Reply.sse(AFTER_CALL)]) as server:
        done = bounded_turnwire_cli(
            "run",
            str(thread),
            "--base-url",
            server.base_url,
            "--set",
            "tools.timeout_s=0.5",
            "--set",
            "tools.handlers={get_capital: 'stuck_tool:stuck'}",
            env={"PYTHONPATH": str(tmp_path)},
        )
    assert done.returncode == 0, done.stderr
    assert "did not finish within 0.5 s" in done.stderr
    assert done.stdout.strip() == "The capital of France is Paris."


# ---------------------------------------------------------------- exits and exceptions


def test_sys_exit_in_a_handler_is_an_error_result_not_the_end_of_the_process(tmp_path):
    (tmp_path / "exit_tool.py").write_text("import sys\ndef leave(**kw):\n    sys.exit(0)\n")
    thread = tmp_path / "thread.json"
    thread.write_text(json.dumps(BOUNDED_THREAD))
    with ScriptedServer([Reply.sse(CALL), Reply.sse(AFTER_CALL)]) as server:
        done = bounded_turnwire_cli(
            "run",
            str(thread),
            "--base-url",
            server.base_url,
            "--set",
            "tools.handlers={get_capital: 'exit_tool:leave'}",
            env={"PYTHONPATH": str(tmp_path)},
        )
    assert done.returncode == 0, done.stderr
    assert "error: Tool get_capital failed: SystemExit: 0]" in done.stderr
    assert done.stdout.strip() == "The capital of France is Paris."
    assert len(server.requests) == 2


def test_sys_exit_sync_or_async_is_an_error_result(tmp_path):
    async def leave_async(**kw):
        sys.exit(3)

    def leave(**kw):
        raise SystemExit(4)

    assert run_tool(tmp_path, leave).result.text == "Tool get_capital failed: SystemExit: 4"
    assert run_tool(tmp_path, leave_async).result.text == "Tool get_capital failed: SystemExit: 3"


def test_keyboard_interrupt_still_stops_the_run_but_other_exits_do_not():
    thread = turnwire.load_thread(BOUNDED_THREAD)

    def interrupt(**kw):
        raise KeyboardInterrupt

    def ends(**kw):
        raise GeneratorExit("gone")

    call = ToolCall(id="c1", tool="get_capital", args={}, created_at=at(1))
    executor = ToolExecutor(inline_max_bytes=4096, handlers={"get_capital": interrupt})
    with pytest.raises(KeyboardInterrupt):
        asyncio.run(executor.execute(call, thread))
    executor = ToolExecutor(inline_max_bytes=4096, handlers={"get_capital": ends})
    finished = asyncio.run(executor.execute(call, thread))
    assert (
        finished.is_error and finished.result.text == "Tool get_capital failed: GeneratorExit: gone"
    )


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (object(), "its result, a object (TypeError), cannot be serialised"),
        (float("nan"), "its result, a float (ValueError), cannot be serialised"),
        ({"a": {1, 2}}, "its result, a dict (TypeError), cannot be serialised"),
    ],
)
def test_a_result_that_cannot_be_serialised_is_an_error_result(tmp_path, value, words):
    call = run_tool(tmp_path, lambda **kw: value)
    assert call.is_error and call.result.text == f"Tool get_capital failed: {words}"


def test_a_result_over_the_size_limit_is_an_error_result(tmp_path):
    call = run_tool(tmp_path, lambda **kw: "x" * 101, settings={"tools": {"max_result_bytes": 100}})
    assert call.is_error and call.result.text == (
        "Tool get_capital failed: its result is over 100 bytes (tools.max_result_bytes)"
    )


def test_arguments_with_an_integer_too_long_to_parse_are_an_error_result():
    raw = '{"n": ' + "9" * 5000 + "}"
    args, error = parse_arguments(raw)
    assert args == {} and error.startswith("Tool arguments are out of bounds. Raw value: {")


# ---------------------------------------------------------------- artifact tools

LOG = "\n".join(["a" * 40 + "!", "error: disk full", "ok", "b" * 3, "error: again"] * 20) + "\n"


LOG_THREAD = {
    **BOUNDED_THREAD,
    "tools": [{"name": "read_log"}],
    "tool_calls": [
        {
            "id": "call_log",
            "tool": "read_log",
            "args": {},
            "created_at": at(1),
            "result": {"artifact": {"text": LOG, "inline": False}},
        }
    ],
}


def artifact(name: str, **args: object) -> ToolCall:
    call = ToolCall(id="c9", tool=name, args={"callId": "call_log", **args}, created_at=at(2))
    finished = asyncio.run(
        ToolExecutor(inline_max_bytes=4096).execute(call, turnwire.load_thread(LOG_THREAD))
    )
    assert finished.result is not None
    return finished


def test_artifact_grep_with_a_catastrophic_pattern_ends_quickly_through_the_loop(tmp_path):
    thread = tmp_path / "thread.json"
    thread.write_text(json.dumps(LOG_THREAD))
    stream = bounded_call_stream("artifact_grep", {"callId": "call_log", "pattern": "(a+)+$"})
    with ScriptedServer([Reply.sse(stream), Reply.sse(AFTER_CALL)]) as server:
        done = bounded_turnwire_cli(  # a backtracking engine would run past the timeout
            "run", str(thread), "--base-url", server.base_url
        )
    assert done.returncode == 0, done.stderr
    assert "[tool artifact_grep(" in done.stderr and "ok: (no line matches)]" in done.stderr
    assert "\n(no line matches)\n" in server.requests[1].json["input"][-1]["output"]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"pattern": "(a)\\1"}, "Bad arguments for artifact_grep: pattern is not a valid RE2"),
        ({"pattern": 5}, "Bad arguments for artifact_grep: pattern must be a string"),
        ({"pattern": "a" * 1001}, "Bad arguments for artifact_grep: pattern is longer than 1000"),
        ({}, "Bad arguments for artifact_grep: pattern is required"),
    ],
)
def test_artifact_grep_refuses_what_re2_cannot_do(args, expected):
    finished = artifact("artifact_grep", **args)
    assert finished.is_error and finished.result.text.startswith(expected)


def test_artifact_grep_matches_with_re2_and_caps_its_lines():
    capped = artifact("artifact_grep", pattern="^error: (disk full|again)$", max_lines=2)
    assert capped.result.text == "2: error: disk full\n5: error: again"
    uncapped = artifact("artifact_grep", pattern="^error", max_lines=1e400)
    assert len(uncapped.result.text.splitlines()) == 40 and not uncapped.is_error


LINES = LOG.splitlines()


@pytest.mark.parametrize(
    ("n", "expected", "is_error"),
    [
        (float("inf"), "\n".join(LINES), False),  # 1e400 in JSON: clamped, not OverflowError
        (-5, "", False),
        ("x", 'Bad arguments for artifact_head: n must be a whole number, not "x"', True),
        (True, "Bad arguments for artifact_head: n must be a whole number, not true", True),
        (None, "Bad arguments for artifact_head: n must be a whole number, not a value", True),
    ],
)
def test_artifact_head_validates_and_clamps_n(n, expected, is_error):
    finished = artifact("artifact_head", n=n)
    assert (finished.result.text, finished.is_error) == (expected, is_error)


def test_a_whole_float_counts_as_a_number_and_a_fraction_does_not():
    assert artifact("artifact_head", n=2.0).result.text == "\n".join(LINES[:2])
    assert artifact("artifact_head", n=2.5).result.text == (
        "Bad arguments for artifact_head: n must be a whole number, not 2.5"
    )


def test_a_huge_but_finite_count_is_clamped_end_to_end():
    args, error = parse_arguments('{"callId": "call_log", "n": 1e300}')
    assert error is None
    finished = artifact("artifact_tail", **{k: v for k, v in args.items() if k != "callId"})
    assert finished.result.text == "\n".join(LINES) and not finished.is_error


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ('{"n": 1e400}', "1e400 is beyond the range of a float"),
        ('{"n": NaN}', "NaN is not a JSON number"),
        ('{"n": -Infinity}', "-Infinity is not a JSON number"),
        ('{"n": 1' + "0" * 100 + "}", "outside the 64-bit range"),
        ('{"a": ' * 70 + "1" + "}" * 70, "nested deeper than 64 levels"),
        ('{"a": "\\ud800", "b": 2}', "a lone surrogate"),
    ],
)
def test_arguments_a_thread_file_could_not_hold_are_an_error_result_never_recorded(raw, problem):
    """A value JSON has not (Python's json reads NaN and turns 1e400 into inf) or one the
    thread file refuses on load: recorded, the thread could never be read again."""
    args, error = parse_arguments(raw)
    assert args == {}
    reason, _, shown = error.partition("). Raw value: ")
    assert reason.startswith("Tool arguments are out of bounds (") and problem in reason
    assert shown == raw[:2000]


def test_artifact_cat_clamps_its_range():
    assert artifact("artifact_cat", start=-3, end=2).result.text == "\n".join(LINES[:2])
    assert artifact("artifact_cat", start=99, end=10**9).result.text == "\n".join(LINES[98:])
    assert artifact("artifact_cat", start=False).is_error


def test_an_artifact_tool_answer_is_bounded_too():
    call = ToolCall(id="c9", tool="artifact_cat", args={"callId": "call_log"}, created_at=at(2))
    executor = ToolExecutor(inline_max_bytes=4096, max_result_bytes=100)
    finished = asyncio.run(executor.execute(call, turnwire.load_thread(LOG_THREAD)))
    assert finished.is_error and finished.result.text == (
        "artifact_cat: the answer is over 100 bytes (tools.max_result_bytes); ask for fewer lines"
    )
    head = ToolCall(
        id="c9", tool="artifact_head", args={"callId": "call_log", "n": 1}, created_at=at(2)
    )
    assert not asyncio.run(executor.execute(head, turnwire.load_thread(LOG_THREAD))).is_error


AT = datetime(2026, 1, 1, tzinfo=UTC)


def _thread(*calls: ToolCall) -> turnwire.Thread:
    thread = turnwire.load_thread(
        {
            "version": 1,
            "model": "gpt-5",
            "tools": [
                {
                    "name": "echo",
                    "description": "Echo.",
                    "parameters": {"type": "object", "properties": {}},
                }
            ],
        }
    )
    import msgspec

    return msgspec.structs.replace(thread, tool_calls=calls)


def test_a_lone_surrogate_in_a_result_or_an_error_becomes_a_replacement_character() -> None:
    def handler() -> str:
        return "half \ud800 of a pair"

    def failing() -> str:
        raise ValueError("broken \udcff message")

    call = ToolCall(id="call_1", tool="echo", args={}, created_at=AT)
    for function, expected, is_error in (
        (handler, "half \ufffd of a pair", False),
        (failing, "broken \ufffd message", True),
    ):
        executor = ToolExecutor(inline_max_bytes=4096, handlers={"echo": function})
        done = asyncio.run(executor.execute(call, _thread()))
        assert done.is_error is is_error
        assert done.result is not None and expected in (done.result.text or "")
        done.result.text.encode()  # well-formed: it encodes


def test_a_rendered_request_carries_the_replaced_result() -> None:
    call = ToolCall(id="call_1", tool="echo", args={}, created_at=AT)
    executor = ToolExecutor(inline_max_bytes=4096, handlers={"echo": lambda: "x\ud800y"})
    done = asyncio.run(executor.execute(call, _thread()))
    body = turnwire.render(_thread(done)).body
    assert "x\ufffdy".encode() in body


def test_artifact_grep_is_held_to_the_tool_timeout() -> None:
    huge = "\n".join(f"line {n} of a long artifact" for n in range(400_000))
    earlier = ToolCall(
        id="call_big",
        tool="echo",
        args={},
        created_at=AT,
        result=ToolResult(artifact=Artifact(text=huge)),
    )
    grep = ToolCall(
        id="call_grep",
        tool="artifact_grep",
        args={"callId": "call_big", "pattern": "matches no line"},
        created_at=AT,
    )
    executor = ToolExecutor(inline_max_bytes=4096, timeout_s=0.001)
    done = asyncio.run(executor.execute(grep, _thread(earlier)))
    assert done.is_error
    assert "did not finish within" in (done.result.text or "")
    # with time to finish, the same call answers
    relaxed = asyncio.run(
        ToolExecutor(inline_max_bytes=4096, timeout_s=60).execute(grep, _thread(earlier))
    )
    assert not relaxed.is_error


PROGRAM = {
    "type": "program",
    "id": "prog_1",
    "call_id": "call_prog_1",
    "code": "const rows = await tools.count_rows({table: 'orders'}); return `${rows} rows`;",
    "fingerprint": "pfp_opaque-state-0001",
}


PROGRAM_CALL = {
    "type": "function_call",
    "id": "fc_1",
    "call_id": "call_1",
    "name": "count_rows",
    "arguments": '{"table":"orders"}',
    "status": "completed",
    "caller": {"type": "program", "caller_id": "call_prog_1"},
}


PROGRAM_OUTPUT = {
    "type": "program_output",
    "id": "prog_out_1",
    "call_id": "call_prog_1",
    "result": "42 rows",
    "status": "completed",
}


TOOLS = [
    {
        "name": "count_rows",
        "parameters": {"type": "object", "properties": {"table": {"type": "string"}}},
        "allowed_callers": ["programmatic"],
    },
    {"name": "lookup", "parameters": {"type": "object", "properties": {}}},
]


def _program_thread(tmp_path: Path, **fields: Any) -> Path:
    path = tmp_path / "t.json"
    tree = {
        "version": 1,
        "model": "gpt-5",
        "tools": TOOLS,
        "hosted_tools": [{"type": "programmatic_tool_calling"}],
        "messages": [
            {
                "id": "u1",
                "role": "user",
                "content": "How many orders?",
                "created_at": "2026-01-01T10:00:00Z",
            }
        ],
        **fields,
    }
    path.write_text(json.dumps(tree))
    return path


def _run(path: Path, replies: list[Reply], **options: Any) -> tuple[Any, list[Any], list[Any]]:
    ran: list[dict[str, Any]] = []

    def count_rows(table: str) -> int:
        ran.append({"table": table})
        return 42

    with ScriptedServer(replies) as server:
        result = turnwire.api.run(
            path,
            container=make_container({**REPLAY, "client": {"retry": {"max_retries": 0}}}),
            base_url=server.base_url,
            handlers={"count_rows": count_rows, "lookup": lambda: "found"},
            save=True,
            **options,
        )
    for seen in server.requests:
        validate_body(seen.json)
        validate_open_responses(seen.json)
        validate_openapi(seen.json)
    return result, [seen.json for seen in server.requests], ran


def test_a_program_call_runs_and_the_program_resumes_from_its_replayed_items(tmp_path):
    path = _program_thread(tmp_path)
    first = streamed([REASONING, PROGRAM, PROGRAM_CALL])
    second = streamed([PROGRAM_OUTPUT, MESSAGE])
    result, bodies, ran = _run(path, [Reply.sse(first), Reply.sse(second)])

    assert ran == [{"table": "orders"}]  # the program's call ran, once
    declared = bodies[0]["tools"]
    assert declared[0]["allowed_callers"] == ["programmatic"]
    assert "allowed_callers" not in declared[1]  # unset: left out, the API's default
    assert declared[2] == {"type": "programmatic_tool_calling"}

    # The second request resumes the program: its reasoning, the program item whole (the
    # opaque fingerprint as it came), the call and its answer, both with the program's caller.
    resumed = bodies[1]["input"][1:]
    assert [item["type"] for item in resumed] == [
        "reasoning",
        "program",
        "function_call",
        "function_call_output",
    ]
    assert resumed[0]["id"] == "rs_1"
    assert resumed[1] == PROGRAM
    caller = {"type": "program", "caller_id": "call_prog_1"}
    assert resumed[2]["call_id"] == "call_1" and resumed[2]["caller"] == caller
    assert resumed[3]["call_id"] == "call_1" and resumed[3]["caller"] == caller
    assert "42" in resumed[3]["output"]

    saved = turnwire.load_thread(path)
    assert result.thread == saved
    (call,) = saved.tool_calls
    assert call.caller == "call_prog_1" and not call.is_error
    assert [(h.type, h.item) for h in saved.hosted_items] == [
        ("program", PROGRAM),
        ("program_output", PROGRAM_OUTPUT),
    ]
    assert saved.thoughts[0].payload.paired_item_id == "prog_1"

    # The saved thread renders the same items again, the program's output after its call.
    again = turnwire.render(saved, container=make_container(REPLAY)).json["input"][1:]
    assert again[:4] == resumed
    assert again[4] == PROGRAM_OUTPUT
    assert again[5]["role"] == "assistant"


def test_a_call_from_a_caller_the_tool_does_not_allow_gets_an_error_and_does_not_run(tmp_path):
    path = _program_thread(tmp_path)
    direct = {key: value for key, value in PROGRAM_CALL.items() if key != "caller"}
    from_program = {**PROGRAM_CALL, "id": "fc_2", "call_id": "call_2", "name": "lookup"}
    from_program["arguments"] = "{}"
    first = streamed([PROGRAM, direct, from_program])
    _, bodies, ran = _run(path, [Reply.sse(first), Reply.sse(streamed([MESSAGE]))])

    assert ran == []  # neither ran
    outputs = {
        item["call_id"]: item
        for item in bodies[1]["input"]
        if item["type"] == "function_call_output"
    }
    assert "cannot be called by the model directly" in outputs["call_1"]["output"]
    assert "allowed_callers are programmatic" in outputs["call_1"]["output"]
    assert "caller" not in outputs["call_1"]
    assert "cannot be called by a program" in outputs["call_2"]["output"]
    assert outputs["call_2"]["caller"] == {"type": "program", "caller_id": "call_prog_1"}
    saved = turnwire.load_thread(path)
    assert [(c.id.split("|")[0], c.is_error) for c in saved.tool_calls] == [
        ("call_1", True),
        ("call_2", True),
    ]


@pytest.mark.parametrize(
    ("caller", "where"),
    [
        ({"type": "program"}, "output[0].caller"),
        ({"type": "program", "caller_id": ""}, "caller_id"),
        ({"type": "shell"}, "output[0].caller"),
    ],
)
def test_a_caller_of_another_shape_is_a_stream_error_and_nothing_is_stored(tmp_path, caller, where):
    path = _program_thread(tmp_path)
    before = path.read_bytes()
    with pytest.raises(StreamError) as caught:
        _run(path, [Reply.sse(streamed([{**PROGRAM_CALL, "caller": caller}]))])
    assert where in str(caught.value)
    assert path.read_bytes() == before


def test_a_direct_caller_is_read_as_no_caller(tmp_path):
    path = _program_thread(tmp_path)
    direct = {**PROGRAM_CALL, "name": "lookup", "arguments": "{}", "caller": {"type": "direct"}}
    _, bodies, _ = _run(path, [Reply.sse(streamed([direct])), Reply.sse(streamed([MESSAGE]))])
    sent = [item for item in bodies[1]["input"] if item["type"].startswith("function_call")]
    assert [("caller" in item) for item in sent] == [False, False]
    assert turnwire.load_thread(path).tool_calls[0].caller is None


# ------------------------------------------------------------------ declarations


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"hosted_tools": []},
            "function 'count_rows' may be called by a program only, and no "
            "programmatic_tool_calling tool is declared",
        ),
        (
            {"tools": [TOOLS[1]]},
            "no function lists programmatic in its allowed_callers",
        ),
    ],
)
def test_a_declaration_no_program_could_use_fails_before_anything_is_sent(
    tmp_path, fields, message
):
    thread = turnwire.load_thread(_program_thread(tmp_path, **fields))
    with pytest.raises(PreflightError) as caught:
        turnwire.render(thread, container=make_container())
    assert caught.value.rule == "programmatic-tools"
    assert message in str(caught.value)
    assert caught.value.where == "body"


def test_forcing_a_program_needs_the_tool(tmp_path):
    choice = {"request": {"tool_choice": {"type": "programmatic_tool_calling"}}}
    thread = turnwire.load_thread(_program_thread(tmp_path))
    body = turnwire.render(thread, container=make_container(choice)).json
    assert body["tool_choice"] == {"type": "programmatic_tool_calling"}

    plain = turnwire.load_thread(_program_thread(tmp_path, tools=[TOOLS[1]], hosted_tools=[]))
    with pytest.raises(PreflightError, match="tool_choice forces a program"):
        turnwire.render(plain, container=make_container(choice))


@pytest.mark.parametrize(
    ("callers", "where"),
    [
        ([], "$.tools[0].allowed_callers"),
        (["programmatic", "programmatic"], "$.tools[0]"),
        (["model"], "$.tools[0].allowed_callers[0]"),
    ],
)
def test_allowed_callers_of_a_thread_file_are_checked_where_they_are(tmp_path, callers, where):
    tools = [{**TOOLS[0], "allowed_callers": callers}]
    with pytest.raises(ThreadFileError) as caught:
        turnwire.load_thread(_program_thread(tmp_path, tools=tools))
    assert where in str(caught.value)


def test_a_program_that_goes_as_text_leaves_a_warning_for_its_calls(tmp_path):
    path = _program_thread(tmp_path)
    first = streamed([REASONING, PROGRAM, PROGRAM_CALL])
    _run(path, [Reply.sse(first), Reply.sse(streamed([PROGRAM_OUTPUT, MESSAGE]))])
    saved = turnwire.load_thread(path)
    container = make_container(REPLAY)
    assert not [
        w for w in turnwire.render(saved, container=container).rendered.warnings if "program" in w
    ]

    unsealed = msgspec.structs.replace(
        saved,
        hosted_items=tuple(
            msgspec.structs.replace(h, seal=None) if h.type == "program" else h
            for h in saved.hosted_items
        ),
    )
    rendered = turnwire.render(unsealed, container=container).rendered
    assert "program" not in [getattr(i, "get", lambda _: None)("type") for i in rendered.input]
    (warning,) = [w for w in rendered.warnings if "call_prog_1" in w]
    assert "the program is not sent as an item" in warning


@pytest.mark.parametrize(("role", "replayed"), [("developer", True), ("assistant", False)])
def test_an_additional_tools_item_replays_when_its_input_shape_allows(tmp_path, role, replayed):
    """The input shape takes role developer only; another role goes as its text form."""
    from turnwire.model.hosted import seal, thread_anchor
    from turnwire.model.records import HostedItem

    item = {
        "type": "additional_tools",
        "id": "at_1",
        "role": role,
        "tools": [
            {
                "type": "function",
                "name": "lookup",
                "parameters": {"type": "object", "properties": {}},
                "strict": False,
            }
        ],
    }
    container = make_container(REPLAY)
    thread = turnwire.load_thread(_program_thread(tmp_path))
    record = HostedItem(
        id="at_1", type="additional_tools", item=item, created_at=thread.messages[0].created_at
    )
    record = seal(
        msgspec.structs.replace(record, seq=1), container.envelope_nonce(), thread_anchor(thread)
    )
    sealed = msgspec.structs.replace(thread, hosted_items=(record,))
    rendered = turnwire.render(sealed, container=container)
    sent = rendered.json["input"][1]
    if replayed:
        assert sent == item
    else:
        assert sent["type"] == "message" and sent["role"] == "assistant"
        assert any("additional_tools" in w for w in rendered.rendered.warnings)


# ------------------------------------------------------------------ tools from typed functions

NO_TOOLS = """\
version: 1
model: gpt-4o
messages:
  - {id: u1, role: user, content: "What's the weather?", created_at: "2026-01-01T10:00:00Z"}
"""


def _calling(name: str, arguments: str) -> bytes:
    """The recorded call, of tool ``name`` with ``arguments`` (JSON text)."""
    recorded = json.dumps('{"country":"France"}').encode()[1:-1]
    stream = CALL.replace(b'"get_capital"', json.dumps(name).encode())
    assert recorded in stream
    return stream.replace(recorded, json.dumps(arguments).encode()[1:-1])


def _no_tools(tmp_path: Path) -> Path:
    path = tmp_path / "plain.yaml"
    path.write_text(NO_TOOLS)
    assert "tools" not in NO_TOOLS
    return path


def _checked(body: dict[str, Any]) -> dict[str, Any]:
    validate_body(body)
    validate_open_responses(body)
    validate_openapi(body)
    return body


class Place(msgspec.Struct):
    """A point on the map."""

    lat: float
    lon: float


def test_a_function_tool_is_declared_from_its_signature_run_and_answered(
    tmp_path, caplog, turnwire_emulator
):
    ran: list[tuple[Any, ...]] = []

    @turnwire.tool
    def get_weather(
        city: Annotated[str, "The city"], unit: Literal["c", "f"] = "c", near: Place | None = None
    ) -> str:
        """The current weather in a city."""
        ran.append((city, unit, near, threading.current_thread().name))
        return f"12 degrees {unit} in {city}"

    path = _no_tools(tmp_path)
    arguments = '{"city":"Paris","unit":null,"near":{"lat":48.8,"lon":2.3}}'
    turnwire_emulator.script(_emulated_call("get_weather", arguments))
    result = run(turnwire_emulator, path, handlers={}, tools=[get_weather])
    first, second = (_checked(body) for body in _accepted(turnwire_emulator))
    declared = {
        "type": "function",
        "name": "get_weather",
        "description": "The current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"description": "The city", "type": "string"},
                "unit": {"anyOf": [{"enum": ["c", "f"], "type": "string"}, {"type": "null"}]},
                "near": {"anyOf": [{"$ref": "#/$defs/Place"}, {"type": "null"}]},
            },
            "required": ["city", "unit", "near"],
            "additionalProperties": False,
            "$defs": {
                "Place": {
                    "title": "Place",
                    "description": "A point on the map.",
                    "type": "object",
                    "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
                    "required": ["lat", "lon"],
                    "additionalProperties": False,
                }
            },
        },
        "strict": True,
    }
    assert first["tools"] == [declared] and second["tools"] == [declared]
    # converted: the default for a null, a Struct for an object; a sync function in a thread
    assert ran == [("Paris", "c", Place(lat=48.8, lon=2.3), "turnwire-tool")]
    call = result.records.tool_calls[0]
    assert (call.tool, call.is_error, call.result.text) == (
        "get_weather",
        False,
        "12 degrees c in Paris",
    )
    assert "\n12 degrees c in Paris\n" in second["input"][-1]["output"]
    # the declaration is the run's: neither the result nor the saved file holds it
    assert result.thread.tools == () and turnwire.load_thread(path).tools == ()
    assert turnwire.load_thread(path).tool_calls[0].result == call.result
    assert result.text == "Done."
    assert not [r for r in caplog.records if r.name == "turnwire" and r.levelname == "WARNING"]


def test_an_async_function_tool_is_awaited_on_the_loop_and_a_loose_schema_is_not_strict(tmp_path):
    seen: list[tuple[Any, ...]] = []

    async def lookup_order(order_id: int, fields: dict[str, bool] | None = None) -> dict[str, Any]:
        """Look an order up."""
        await asyncio.sleep(0)
        seen.append((order_id, fields, threading.current_thread().name))
        return {"order": order_id, "status": "shipped"}

    path = _no_tools(tmp_path)
    stream = _calling("lookup_order", '{"order_id":42}')
    with ScriptedServer([Reply.sse(stream), Reply.sse(AFTER_CALL)]) as server:
        result = run(server, path, handlers={}, tools=[lookup_order])
    first = _checked(server.requests[0].json)
    assert first["tools"] == [
        {
            "type": "function",
            "name": "lookup_order",
            "description": "Look an order up.",
            "parameters": {
                "type": "object",
                "properties": {
                    "order_id": {"type": "integer"},
                    "fields": {
                        "anyOf": [
                            {"type": "object", "additionalProperties": {"type": "boolean"}},
                            {"type": "null"},
                        ],
                        "default": None,
                    },
                },
                "required": ["order_id"],
                "additionalProperties": False,
            },
            "strict": False,
        }
    ]
    assert seen == [(42, None, threading.main_thread().name)]
    assert result.records.tool_calls[0].result.text == '{"order":42,"status":"shipped"}'
    assert '{"order":42,"status":"shipped"}' in server.requests[1].json["input"][-1]["output"]


def test_a_function_tool_that_raises_logs_its_traceback_and_the_model_reads_the_error(
    tmp_path, caplog
):
    @turnwire.tool
    async def get_weather(city: str) -> str:
        """The weather."""
        raise LookupError(f"no station near {city}")

    path = _no_tools(tmp_path)
    with ScriptedServer(
        [Reply.sse(_calling("get_weather", '{"city":"Atlantis"}')), Reply.sse(AFTER_CALL)]
    ) as server:
        result = run(server, path, handlers={}, tools=[get_weather])
    call = result.records.tool_calls[0]
    text = "Tool get_weather failed: LookupError: no station near Atlantis"
    assert call.is_error and call.result.text == text
    assert f"\n{text}\n" in server.requests[1].json["input"][-1]["output"]
    [record] = [r for r in caplog.records if r.name == "turnwire" and r.levelname == "WARNING"]
    assert record.kind == "tool-error"
    message = record.getMessage()
    assert message.startswith("tool get_weather raised LookupError; the call is an error result")
    assert "Traceback (most recent call last):" in message
    assert 'raise LookupError(f"no station near {city}")' in message
    assert message.endswith("LookupError: no station near Atlantis")


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        # an argument the signature has not: the schema is closed
        ('{"city":"Paris","zip":"75001"}', "$: unexpected field zip"),
        # a value of the wrong type
        ('{"city":["Paris"]}', "$.city: expected string"),
        # a missing one
        ('{"when":"2026-01-02T10:00:00Z"}', "$.city: required, but missing"),
        # one the schema lets through and the conversion refuses (formats are not checked)
        ('{"city":"Paris","when":"tomorrow"}', "$.when: Invalid RFC3339 encoded datetime"),
    ],
)
def test_arguments_a_function_cannot_take_are_an_error_result_naming_the_mismatch(
    tmp_path, caplog, arguments, named
):
    ran: list[Any] = []

    def get_weather(city: str, when: datetime | None = None) -> str:
        ran.append(city)
        return city

    path = _no_tools(tmp_path)
    with ScriptedServer(
        [Reply.sse(_calling("get_weather", arguments)), Reply.sse(AFTER_CALL)]
    ) as server:
        result = run(server, path, handlers={}, tools=[get_weather])
    assert ran == []
    call = result.records.tool_calls[0]
    assert call.is_error
    assert call.result.text.startswith("Tool arguments do not match the parameters of get_weather")
    assert named in call.result.text
    assert named in server.requests[1].json["input"][-1]["output"]
    [record] = [r for r in caplog.records if r.name == "turnwire" and r.levelname == "WARNING"]
    assert record.kind == "tool-arguments" and named in record.getMessage()
    assert record.getMessage().startswith("tool get_weather cannot take the model's arguments")


def test_a_handler_whose_signature_cannot_take_the_arguments_is_an_error_result(
    thread_file, caplog
):
    ran: list[str] = []

    def get_capital(city: str) -> str:  # the thread's tool sends `country`
        ran.append(city)
        return city

    with ScriptedServer([Reply.sse(CALL), Reply.sse(AFTER_CALL)]) as server:
        result = run(server, thread_file, handlers={"get_capital": get_capital})
    assert ran == []
    call = result.records.tool_calls[0]
    assert call.is_error and call.result.text == (
        "Tool get_capital cannot take these arguments: missing a required argument: 'city'. "
        "Call it again with arguments that follow its schema."
    )
    [record] = [r for r in caplog.records if r.name == "turnwire" and r.levelname == "WARNING"]
    assert record.kind == "tool-arguments" and "'city'" in record.getMessage()


def test_a_plain_handler_that_raises_logs_its_traceback_too(thread_file, caplog):
    def get_capital(country: str) -> str:
        raise RuntimeError(f"{country}: the atlas is closed")

    with ScriptedServer([Reply.sse(CALL), Reply.sse(AFTER_CALL)]) as server:
        result = run(server, thread_file, handlers={"get_capital": get_capital})
    assert result.records.tool_calls[0].result.text == (
        "Tool get_capital failed: RuntimeError: France: the atlas is closed"
    )
    [record] = [r for r in caplog.records if r.name == "turnwire" and r.levelname == "WARNING"]
    assert record.kind == "tool-error" and "Traceback" in record.getMessage()


def test_a_function_tool_named_like_a_thread_tool_is_an_error_before_anything_is_sent(
    thread_file,
):
    def get_capital(country: str) -> str:
        return country

    with ScriptedServer([Reply.sse(CALL), Reply.sse(AFTER_CALL)]) as server:
        with pytest.raises(turnwire.InputError) as caught:
            run(server, thread_file, handlers={}, tools=[get_capital])
    assert server.requests == []
    assert caught.value.code == "E_INVALID_INPUT"
    assert caught.value.message.startswith(
        "$.tools[0]: the thread declares a tool named 'get_capital', and tools= gives a "
        "function of that name too; rename one (@turnwire.tool(name=...))"
    )
    assert_unchanged(thread_file)
    # renamed, it is a second tool
    renamed = turnwire.tool(get_capital, name="capital_of")
    with ScriptedServer([Reply.sse(TEXT)]) as server:
        run(server, thread_file, handlers={}, tools=[renamed])
    assert [t["name"] for t in server.requests[0].json["tools"]] == ["get_capital", "capital_of"]
    # a handler of the same name, or a built-in tool's name, clash too
    with pytest.raises(turnwire.InputError, match="handlers= gives a handler of that name"):
        turnwire.Client(
            make_container(), api_key="x", handlers={"capital_of": len}, tools=[renamed]
        )
    with pytest.raises(turnwire.InputError, match="a built-in artifact tool has that name"):
        turnwire.Client(
            make_container(), api_key="x", tools=[turnwire.tool(len, name="artifact_head")]
        )


def test_the_clients_tools_serve_every_run_and_a_run_may_add_its_own(tmp_path):
    calls: list[str] = []

    @turnwire.tool
    def get_weather(city: str) -> str:
        """The weather."""
        calls.append(f"weather {city}")
        return "sunny"

    @turnwire.tool(name="get_time", strict=False)
    async def clock(city: str) -> str:
        """The time."""
        calls.append(f"time {city}")
        return "noon"

    thread = turnwire.load_thread(_no_tools(tmp_path))

    async def main(server: ScriptedServer) -> list[turnwire.RunResult]:
        async with turnwire.Client(
            make_container(), base_url=server.base_url, tools=[get_weather]
        ) as client:
            first = await client.run(thread)
            second = await client.run(thread, tools=[clock])
            with pytest.raises(turnwire.InputError, match="another function of that name"):
                await client.run(thread, tools=[turnwire.tool(len, name="get_weather")])
            return [first, second]

    replies = [
        Reply.sse(_calling("get_weather", '{"city":"Oslo"}')),
        Reply.sse(AFTER_CALL),
        Reply.sse(_calling("get_time", '{"city":"Oslo"}')),
        Reply.sse(AFTER_CALL),
    ]
    with ScriptedServer(replies) as server:
        first, second = asyncio.run(main(server))
    declared = [[(t["name"], t["strict"]) for t in seen.json["tools"]] for seen in server.requests]
    assert declared == [
        [("get_weather", True)],
        [("get_weather", True)],
        [("get_weather", True), ("get_time", False)],
        [("get_weather", True), ("get_time", False)],
    ]
    assert calls == ["weather Oslo", "time Oslo"]
    assert first.thread.tools == second.thread.tools == ()
    # render.strict: false turns auto-strict off, for this run too
    with ScriptedServer([Reply.sse(TEXT)]) as server:
        run(
            server,
            thread,
            handlers={},
            tools=[get_weather],
            container=make_container({"render": {"strict": False}}),
        )
    assert server.requests[0].json["tools"][0]["strict"] is False


def test_a_stored_threads_run_takes_function_tools_and_stores_no_declaration(tmp_path):
    from turnwire.store import open_store

    @turnwire.tool
    def get_weather(city: str) -> str:
        """The weather."""
        return f"rain in {city}"

    with open_store(str(tmp_path / "threads.db")) as store:
        store.import_thread(turnwire.load_thread(_no_tools(tmp_path)), thread_id="t1")
        with ScriptedServer(
            [Reply.sse(_calling("get_weather", '{"city":"Bergen"}')), Reply.sse(AFTER_CALL)]
        ) as server:
            result = turnwire.run_thread(
                "t1",
                store=store,
                container=make_container(),
                base_url=server.base_url,
                tools=[get_weather],
            )
        assert result.records.tool_calls[0].result.text == "rain in Bergen"
        assert server.requests[0].json["tools"][0]["name"] == "get_weather"
        stored = store.load("t1")
        assert stored.tools == () and stored.tool_calls[0].result.text == "rain in Bergen"
