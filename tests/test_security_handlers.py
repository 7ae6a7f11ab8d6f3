"""A thread names tools, never the code that runs them (issue 10, item 1).

Handlers come from ``handlers=``, ``tools.handlers`` or the ``turnwire.tools`` entry points; a
thread's own ``handler:`` only under ``tools.allow_thread_handlers``. Anything else is
E_HANDLER_NOT_ALLOWED before a pending call runs or a request is sent.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import turnwire
from turnwire.client.tools import ToolExecutor
from turnwire.errors import HandlerNotAllowedError
from turnwire.model.records import ToolCall

from .client.server import Reply, ScriptedServer, free_port, recorded
from .conftest import SECRET, at, make_container

REPO = Path(__file__).resolve().parents[1]
CALL = recorded("function_call_legacy_noseq_gpt-4o.sse")
AFTER_CALL = recorded("text_after_tool_legacy_noseq_gpt-4o.sse")


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
