"""The model cannot hang or end the tool loop (issue 10, item 3).

Every handler call runs under ``tools.timeout_s``; every exception, ``SystemExit`` included,
and every result that cannot be serialised is an error result the model reads;
``artifact_grep`` uses RE2; numeric arguments are validated and clamped.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import turnwire
from turnwire.client.tools import ToolExecutor, parse_arguments
from turnwire.model.records import ToolCall

from .client.server import Reply, ScriptedServer, recorded
from .conftest import SECRET, at, make_container

REPO = Path(__file__).resolve().parents[1]
CALL = recorded("function_call_legacy_noseq_gpt-4o.sse")
AFTER_CALL = recorded("text_after_tool_legacy_noseq_gpt-4o.sse")
THREAD = {
    "version": 1,
    "model": "gpt-4o",
    "tools": [{"name": "get_capital", "parameters": {"type": "object", "properties": {}}}],
    "messages": [{"id": "u1", "role": "user", "content": "hi", "created_at": at(0)}],
}


def turnwire_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
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


def call_stream(name: str, arguments: dict[str, object]) -> bytes:
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
    path.write_text(json.dumps(THREAD))
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
    thread.write_text(json.dumps(THREAD))
    with ScriptedServer([Reply.sse(CALL), Reply.sse(AFTER_CALL)]) as server:
        done = turnwire_cli(
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
    thread.write_text(json.dumps(THREAD))
    with ScriptedServer([Reply.sse(CALL), Reply.sse(AFTER_CALL)]) as server:
        done = turnwire_cli(
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
    thread = turnwire.load_thread(THREAD)

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
    **THREAD,
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
    stream = call_stream("artifact_grep", {"callId": "call_log", "pattern": "(a+)+$"})
    with ScriptedServer([Reply.sse(stream), Reply.sse(AFTER_CALL)]) as server:
        done = turnwire_cli(  # today: backtracks past the process timeout
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
