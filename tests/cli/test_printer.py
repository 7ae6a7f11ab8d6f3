"""A thread's text and a server's answer reach the terminal through ``turnwire.cli.printer``
only, and without a control character the terminal would act on: an escape sequence (a window
title, a cleared screen, OSC 52's clipboard write), a bell, a carriage return, a C1 code."""

from __future__ import annotations

import ast
import io
import json
import os
import subprocess
import sys
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from turnwire import load_thread
from turnwire.cli.main import main
from turnwire.cli.printer import Progress, echo, plain
from turnwire.cli.run import print_pending
from turnwire.client.progress import (
    ReasoningSummaryDeltaEvent,
    TextDeltaEvent,
    ToolSearchEvent,
)

from ..client.server import Reply, ScriptedServer
from ..client.test_reading import REASONING, SHAPES_CALL, sse, streamed
from ..conftest import REPO, SECRET

CLI = REPO / "src" / "turnwire" / "cli"


# ESC sequences (OSC 0 sets the window title, CSI 2J clears the screen, OSC 52 writes the
# clipboard), BEL, the C1 codes CSI, DCS and ST, a carriage return and a backspace.
HOSTILE = "Hi\x1b]0;owned\x07 there\x1b[2J\x1b]52;c;ZWNobyBvd25lZA==\x07 \x9b31m\x90q\x9c\r\x08done"


# What a terminal is given of it: the same text without the controls.
SHOWN = "Hi]0;owned there[2J]52;c;ZWNobyBvd25lZA== 31mqdone"


AT = "2026-01-01T10:00:00Z"


def raw_controls(data: bytes) -> list[str]:
    """The control characters in ``data`` a terminal acts on: every one but line feed and tab."""
    text = data.decode("utf-8")
    return sorted({f"U+{ord(c):04X}" for c in text if _control(c) and c not in "\n\t"})


def _control(char: str) -> bool:
    return unicodedata.category(char) == "Cc"  # C0, DEL and C1


# ------------------------------------------------------------------ the printer


@given(st.text())
def test_echo_writes_everything_but_the_controls_and_keeps_line_breaks_and_tabs(text: str):
    out = io.StringIO()
    echo(text, file=out, end="")
    assert out.getvalue() == "".join(c for c in text if c in "\n\t" or not _control(c))


@given(st.text())
def test_plain_gives_one_line_with_nothing_that_reorders_or_hides_text(text: str):
    shown = plain(text)
    unsafe = {"Cc", "Cf", "Zl", "Zp", "Cs"}
    assert not any(unicodedata.category(c) in unsafe for c in shown)
    assert shown.splitlines() in ([], [shown])


def test_no_module_of_the_command_line_writes_but_the_printer():
    """``print``, ``.write`` and ``.buffer`` appear in printer.py only: every other module
    writes through ``echo`` (text) or ``echo_json`` (JSON)."""
    found: list[str] = []
    modules = sorted(path for path in CLI.glob("*.py") if path.name != "printer.py")
    for path in modules:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Name) and node.id == "print":
                found.append(f"{path.name}:{node.lineno}: print")
            elif isinstance(node, ast.Attribute) and node.attr in ("write", "writelines", "buffer"):
                found.append(f"{path.name}:{node.lineno}: .{node.attr}")
    assert len(modules) >= 6  # main, options, render, run, threads, inspection
    assert found == []


# ------------------------------------------------------------------ threads show, threads list


THREAD: dict[str, Any] = {
    "version": 1,
    "model": "gpt-5",
    "tools": [{"name": "lookup"}],
    "messages": [
        {"id": "u1", "role": "user", "content": HOSTILE, "created_at": AT},
        {"id": "a1", "role": "assistant", "content": HOSTILE, "created_at": "2026-01-01T10:00:03Z"},
    ],
    "thoughts": [{"id": "rs_1", "content": HOSTILE, "created_at": "2026-01-01T10:00:01Z"}],
    "tool_calls": [
        {
            "id": "call_1",
            "tool": "lookup",
            "args": {"q": HOSTILE},
            "result": {"text": HOSTILE},
            "created_at": "2026-01-01T10:00:02Z",
        }
    ],
}


@pytest.fixture
def stored(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> str:
    """A store holding the thread ``h``, every text of it hostile, its title too."""
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(THREAD))
    db = str(tmp_path / "threads.db")
    imported = ["threads", "import", str(path), "--store", db, "--id", "h", "--title", HOSTILE]
    assert main(imported) == 0
    capsysbinary.readouterr()
    return db


def test_a_transcript_shows_the_text_without_its_controls(stored, capsysbinary):
    assert main(["threads", "show", "h", "--transcript", "--store", stored]) == 0
    out, err = capsysbinary.readouterr()
    assert raw_controls(out + err) == []
    lines = out.decode().splitlines()
    assert lines[0] == f"User: {SHOWN}"
    assert lines[1] == f"(thinking) {SHOWN}"
    assert lines[2].startswith("[tool lookup(") and lines[2].endswith(f"] {SHOWN}")
    assert lines[3] == f"Assistant: {SHOWN}"


def test_the_thread_list_shows_a_title_without_its_controls(stored, capsysbinary):
    assert main(["threads", "list", "--store", stored]) == 0
    out, _ = capsysbinary.readouterr()
    assert raw_controls(out) == []
    (line,) = out.decode().splitlines()
    assert line.startswith("h ") and line.endswith("done")


def test_a_shown_thread_is_json_with_its_c0_controls_escaped_and_its_text_whole(
    stored, capsysbinary
):
    assert main(["threads", "show", "h", "--store", stored]) == 0
    out, _ = capsysbinary.readouterr()
    assert [c for c in raw_controls(out) if c < "U+0080"] == []
    assert json.loads(out)["messages"][0]["content"] == HOSTILE


def test_a_shown_thread_carries_no_c1_control_and_the_same_json(stored, capsysbinary):
    """JSON escapes only C0; DEL and C1 (CSI, DCS, ST) go out as \\u00XX escapes: the same
    value, nothing a terminal acts on."""
    assert main(["threads", "show", "h", "--store", stored]) == 0
    out, _ = capsysbinary.readouterr()
    assert raw_controls(out) == []
    assert json.loads(out)["messages"][0]["content"] == HOSTILE


# ------------------------------------------------------------------ pending approvals


def test_a_pending_approval_is_one_line_without_controls(capsysbinary):
    request = {
        "type": "mcp_approval_request",
        "id": "mcpr_1",
        "server_label": HOSTILE,
        "name": HOSTILE,
        "arguments": '{"q":"' + HOSTILE + '"}',
    }
    thread = load_thread(
        {
            "version": 1,
            "hosted_items": [
                {"id": "mcpr_1", "type": "mcp_approval_request", "item": request, "created_at": AT}
            ],
        }
    )
    print_pending(thread, sys.stderr)
    _, err = capsysbinary.readouterr()
    assert raw_controls(err) == []
    (line,) = err.decode().splitlines()
    assert line.startswith("[approval pending mcpr_1: Hi ]0;owned  there")


# ------------------------------------------------------------------ the error line


def test_the_error_line_shows_a_thread_value_escaped(tmp_path, capsysbinary):
    path = tmp_path / "bad.json"
    message = {"id": "u1", "role": HOSTILE, "content": "x", "created_at": AT}
    path.write_text(json.dumps({"version": 1, "model": "m", "messages": [message]}))
    assert main(["render", str(path)]) == 2
    out, err = capsysbinary.readouterr()
    assert out == b"" and raw_controls(err) == []
    (line,) = err.decode().splitlines()
    assert line.startswith("error: E_THREAD_FILE_INVALID: $.messages[0].role: ")
    assert "Hi\\x1b]0;owned\\x07 there\\x1b[2J" in line


# ------------------------------------------------------------------ run, as a process

RUN_THREAD = f"""\
version: 1
model: gpt-5
tools:
  - {{name: lookup, parameters: {{type: object, properties: {{q: {{type: string}}}}}}}}
messages:
  - {{id: u1, role: user, content: "hello", created_at: "{AT}"}}
"""


def _run(tmp_path: Path, replies: list[Reply]) -> subprocess.CompletedProcess[bytes]:
    """``turnwire run`` on a one-question thread against ``replies``; its output as bytes."""
    (tmp_path / "hostile_tools.py").write_text(f"def lookup(q):\n    return {HOSTILE!r}\n")
    thread = tmp_path / "t.yaml"
    thread.write_text(RUN_THREAD)
    config = tmp_path / "c.yaml"
    config.write_text(
        "plugins: {load_entrypoints: false}\nclient: {retry: {max_retries: 0}}\n"
        "tools: {handlers: {lookup: 'hostile_tools:lookup'}}\n"
    )
    environment = {key: value for key, value in os.environ.items() if key != "OPENAI_API_KEY"} | {
        "TURNWIRE_ENVELOPE_SECRET": SECRET,
        "PYTHONPATH": str(tmp_path),
    }
    options = ("--config", str(config), "--base-url")
    with ScriptedServer(replies) as server:
        return subprocess.run(
            [sys.executable, "-m", "turnwire", "run", str(thread), *options, server.base_url],
            capture_output=True,
            env=environment,
            timeout=120,
            check=False,
        )


def _streamed_answer(text: str) -> bytes:
    """An answer streamed in deltas: a reasoning summary, then the text in three pieces."""
    thought = {**REASONING, "summary": [{"type": "summary_text", "text": text}]}
    message = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    third = len(text) // 3
    pieces = (text[:third], text[third : 2 * third], text[2 * third :])
    response = {"id": "resp_2", "object": "response", "model": "gpt-5", "status": "completed"}
    usage = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
    return sse(
        {"type": "response.created", "response": {**response, "status": "in_progress"}},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**thought, "summary": []},
        },
        *(
            {
                "type": "response.reasoning_summary_text.delta",
                "item_id": "rs_1",
                "output_index": 0,
                "summary_index": 0,
                "delta": piece,
            }
            for piece in pieces
        ),
        {"type": "response.output_item.done", "output_index": 0, "item": thought},
        {
            "type": "response.output_item.added",
            "output_index": 1,
            "item": {**message, "content": []},
        },
        *(
            {
                "type": "response.output_text.delta",
                "item_id": "msg_1",
                "output_index": 1,
                "content_index": 0,
                "delta": piece,
            }
            for piece in pieces
        ),
        {"type": "response.output_item.done", "output_index": 1, "item": message},
        {
            "type": "response.completed",
            "response": {**response, "output": [thought, message], "usage": usage},
        },
    )


def test_run_streams_the_answer_the_reasoning_and_the_tool_result_without_controls(tmp_path):
    call = {**SHAPES_CALL, "name": "lookup", "arguments": '{"q":"x"}'}
    done = _run(tmp_path, [Reply.sse(streamed([call])), Reply.sse(_streamed_answer(HOSTILE))])
    assert done.returncode == 0, done.stderr
    assert raw_controls(done.stdout) == [] and raw_controls(done.stderr) == []
    assert done.stdout.decode() == SHOWN + "\n"
    errors = done.stderr.decode()
    assert '[tool lookup({"q":"x"}) ok: Hi ]0;owned  there' in errors
    assert f"[reasoning] {SHOWN}" in errors  # stderr is no terminal here: prefixed, not dimmed


def test_a_server_error_body_reaches_the_log_and_the_error_line_without_controls(tmp_path):
    body = Reply(status=400, chunks=[HOSTILE.encode()], content_type="text/plain")
    done = _run(tmp_path, [body])
    assert done.returncode == 1
    assert done.stdout == b"" and raw_controls(done.stderr) == []
    lines = done.stderr.decode().splitlines()
    assert f"turnwire: ERROR: HTTP 400 (terminal): {SHOWN}" in lines
    assert lines[-1].startswith("error: E_OPENAI_RESPONSES_HTTP_ERROR: ")
    assert "\\x1b]0;owned\\x07" in lines[-1]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_cli_dims_reasoning_on_a_terminal_and_prefixes_it_elsewhere():
    events = [
        ReasoningSummaryDeltaEvent(output_index=0, delta="first\nsecond"),
        ReasoningSummaryDeltaEvent(output_index=0, summary_index=1, delta="third"),
        TextDeltaEvent(output_index=1, delta="Hi"),
    ]
    plain, terminal = io.StringIO(), _Terminal()
    for stream in (plain, terminal):
        show = Progress(stream)
        for event in events:
            show(event)
    assert plain.getvalue() == "[reasoning] first\n[reasoning] second\n[reasoning] third\n"
    assert terminal.getvalue() == "\x1b[2mfirst\nsecond\x1b[0m\n\x1b[2mthird\x1b[0m\n"


def test_a_tool_search_is_one_line_naming_what_it_loaded_without_controls():
    stream = io.StringIO()
    show = Progress(stream)
    show(ToolSearchEvent(call_id="call_1", loaded=("crm.lookup", "docs\x1b[31m")))
    show(ToolSearchEvent(call_id="call_2", loaded=()))
    assert stream.getvalue() == (
        "[tool search: loaded crm.lookup, docs [31m]\n[tool search: loaded nothing]\n"
    )
