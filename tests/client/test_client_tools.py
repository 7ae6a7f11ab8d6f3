"""Client-executed tools over a real local server: a scripted answer with a ``custom_tool_call``,
a ``shell_call`` and an ``apply_patch_call`` runs each registered handler with its typed input,
and the next request sends the paired outputs (every body checked by the official types with
extra keys forbidden); the calls replay byte for byte; a call with no handler is never dropped;
computer calls acknowledge only what the handler acknowledged."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest

import turnwire
from turnwire.errors import StreamError, ToolHandlerMissingError
from turnwire.model.client_calls import (
    Click,
    ComputerAction,
    ComputerResult,
    CustomToolInput,
    PatchOperation,
    PatchResult,
    ShellAction,
    ShellCommandOutput,
)
from turnwire.model.functions import client_tool, custom_tool
from turnwire.model.records import Media
from turnwire.wire.tools import ShellTool

from ..oracle import validate_body, validate_open_responses, validate_openapi
from .conftest import run
from .server import Reply, ScriptedServer
from .streams import items_answer, text_answer

THREAD = """\
version: 1
model: gpt-5
hosted_tools:
  - {type: custom, name: run_sql, format: {type: grammar, syntax: regex, definition: "SELECT .+"}}
  - {type: shell, environment: {type: local}}
  - {type: apply_patch}
messages:
  - {id: u1, role: user, content: "Fix the bug.", created_at: "2026-01-01T10:00:00Z"}
"""

CUSTOM = {
    "type": "custom_tool_call",
    "id": "ctc_1",
    "call_id": "call_sql",
    "name": "run_sql",
    "input": "SELECT 1",
    "status": "completed",
}
SHELL = {
    "type": "shell_call",
    "id": "sh_1",
    "call_id": "call_sh",
    "action": {"commands": ["ls", "false"], "timeout_ms": 5000, "max_output_length": 4096},
    "status": "completed",
    "created_by": "model",  # a field the input shape lacks: never sent back
}
PATCH = {
    "type": "apply_patch_call",
    "id": "apc_1",
    "call_id": "call_patch",
    "operation": {"type": "update_file", "path": "app.py", "diff": "@@\n-a\n+b\n"},
    "status": "completed",
}


def answer(*items: dict[str, Any], response_id: str = "resp_1") -> bytes:
    """A streamed answer whose output is ``items``, each announced, then finished."""
    return items_answer(*items, response_id=response_id, added=True)


@pytest.fixture
def thread_file(tmp_path: Path) -> Path:
    path = tmp_path / "thread.yaml"
    path.write_text(THREAD)
    return path


def _checked(body: dict[str, Any]) -> dict[str, Any]:
    validate_body(body)
    validate_openapi(body)
    validate_open_responses(body)
    return body


class Handlers:
    """The deployer's handlers, recording what each was given."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    def sql(self, call: CustomToolInput) -> str:
        self.seen.append(call)
        return "1 row"

    def shell(self, action: ShellAction) -> list[ShellCommandOutput]:
        self.seen.append(action)
        return [ShellCommandOutput(stdout="app.py\n"), ShellCommandOutput(exit_code=1)]

    async def patch(self, operation: PatchOperation) -> PatchResult:
        self.seen.append(operation)
        return PatchResult(status="completed", output="patched app.py")


def test_each_handler_runs_and_the_paired_outputs_are_sent(thread_file):
    handlers = Handlers()
    script = [Reply.sse(answer(CUSTOM, SHELL, PATCH)), Reply.sse(text_answer("Fixed."))]
    with ScriptedServer(script) as server:
        result = run(
            server,
            thread_file,
            handlers={
                "run_sql": handlers.sql,
                "shell": handlers.shell,
                "apply_patch": handlers.patch,
            },
        )
    assert handlers.seen == [
        CustomToolInput(input="SELECT 1"),
        ShellAction(commands=("ls", "false"), timeout_ms=5000, max_output_length=4096),
        PatchOperation(operation="update_file", path="app.py", diff="@@\n-a\n+b\n"),
    ]
    first, second = (_checked(seen.json) for seen in server.requests)
    assert [t["type"] for t in first["tools"]] == ["custom", "shell", "apply_patch"]
    assert first["tools"][0]["format"] == {
        "type": "grammar",
        "syntax": "regex",
        "definition": "SELECT .+",
    }
    sent = second["input"][1:]
    assert [item["type"] for item in sent] == [
        "custom_tool_call",
        "custom_tool_call_output",
        "shell_call",
        "shell_call_output",
        "apply_patch_call",
        "apply_patch_call_output",
    ]
    assert sent[0] == {
        "type": "custom_tool_call",
        "call_id": "call_sql",
        "name": "run_sql",
        "input": "SELECT 1",
    }
    assert sent[1]["call_id"] == "call_sql" and "1 row" in sent[1]["output"]
    assert sent[2] == {
        "type": "shell_call",
        "call_id": "call_sh",
        "action": {"commands": ["ls", "false"], "timeout_ms": 5000, "max_output_length": 4096},
        "status": "completed",
    }
    assert sent[3] == {
        "type": "shell_call_output",
        "call_id": "call_sh",
        "output": [
            {"stdout": "app.py\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}},
            {"stdout": "", "stderr": "", "outcome": {"type": "exit", "exit_code": 1}},
        ],
        "max_output_length": 4096,
    }
    assert sent[5] == {
        "type": "apply_patch_call_output",
        "call_id": "call_patch",
        "status": "completed",
        "output": "patched app.py",
    }
    assert result.text == "Fixed." and result.iterations == 2
    kinds = [(call.kind, call.tool) for call in result.records.tool_calls]
    assert kinds == [("custom", "run_sql"), ("shell", "shell"), ("apply_patch", "apply_patch")]
    saved = turnwire.load_thread(thread_file)
    assert [call.payload for call in saved.tool_calls] == handlers.seen
    assert not saved.hosted_items  # recorded as tool calls, not as hosted items


def test_the_calls_replay_byte_for_byte_on_the_next_request(thread_file):
    handlers = Handlers()
    again = answer({**CUSTOM, "id": "ctc_2", "call_id": "call_sql2"}, response_id="resp_2")
    script = [
        Reply.sse(answer(CUSTOM, SHELL, PATCH)),
        Reply.sse(again),
        Reply.sse(text_answer("ok")),
    ]
    with ScriptedServer(script) as server:
        run(
            server,
            thread_file,
            handlers={
                "run_sql": handlers.sql,
                "shell": handlers.shell,
                "apply_patch": handlers.patch,
            },
        )
    second, third = (seen.body for seen in server.requests[1:])
    head = second[: second.index(b'"tools"')] if b'"tools"' in second else second
    prefix = head[: head.rindex(b"]")]  # the input array of the second request, unclosed
    assert third.startswith(prefix)
    assert len(json.loads(third)["input"]) == len(json.loads(second)["input"]) + 2


def test_tools_given_in_python_declare_and_answer(tmp_path):
    seen: list[Any] = []

    @custom_tool(grammar=("regex", "SELECT .+"))
    def run_sql(call: CustomToolInput) -> str:
        """Run one query."""
        seen.append(call.input)
        return "42"

    def shell(action: ShellAction) -> str:
        seen.append(action.commands)
        return "hello\n"

    path = tmp_path / "t.yaml"
    path.write_text(COMPUTER_THREAD.replace("hosted_tools: [{type: computer}]\n", ""))
    with ScriptedServer(
        [Reply.sse(answer(CUSTOM, SHELL)), Reply.sse(text_answer("done"))]
    ) as server:
        result = run(server, path, handlers={}, tools=[run_sql, client_tool(ShellTool(), shell)])
    first, second = (_checked(s.json) for s in server.requests)
    assert first["tools"] == [
        {
            "type": "custom",
            "name": "run_sql",
            "description": "Run one query.",
            "format": {"type": "grammar", "syntax": "regex", "definition": "SELECT .+"},
        },
        {"type": "shell"},
    ]
    assert seen == ["SELECT 1", ("ls", "false")]
    assert second["input"][-1]["output"][0]["stdout"] == "hello\n"
    assert result.text == "done"
    # The declarations are the run's: the thread it gives back (and a --save) holds none.
    assert result.thread.hosted_tools == () and result.thread.tools == ()


def test_a_declared_tool_without_a_handler_is_refused_before_anything_is_sent(thread_file):
    with ScriptedServer([]) as server, pytest.raises(ToolHandlerMissingError) as caught:
        run(server, thread_file, handlers={"run_sql": lambda call: "x", "shell": lambda a: "x"})
    error = caught.value
    assert error.code == "E_TOOL_HANDLER_MISSING"
    assert (error.path, error.tool, error.kind) == (
        "$.hosted_tools[2]",
        "apply_patch",
        "apply_patch",
    )
    assert "handlers={'apply_patch': ...}" in str(error) and "tools.handlers.apply_patch" in str(
        error
    )
    assert server.requests == []


def test_a_pending_call_without_a_handler_stays_and_a_run_with_one_answers_it(thread_file):
    all_three = {"run_sql": lambda c: "1", "shell": lambda a: "", "apply_patch": lambda o: "ok"}
    with ScriptedServer([Reply.sse(answer(SHELL))]) as server:
        run(server, thread_file, handlers=all_three, once=True)
    pending = turnwire.load_thread(thread_file).tool_calls
    assert [(c.kind, c.result) for c in pending] == [("shell", None)]
    no_shell = {"run_sql": lambda c: "1", "apply_patch": lambda o: "ok"}
    with ScriptedServer([]) as server, pytest.raises(ToolHandlerMissingError) as caught:
        run(server, thread_file, handlers=no_shell, settings={}, once=False)
    assert caught.value.path == "$.tool_calls[0]" and caught.value.call_id == "call_sh"
    assert "shell call 'call_sh'" in str(caught.value)
    assert turnwire.load_thread(thread_file).tool_calls == pending  # nothing lost
    with ScriptedServer([Reply.sse(text_answer("ok"))]) as server:
        result = run(server, thread_file, handlers=all_three)
    assert _checked(server.requests[0].json)["input"][-1]["type"] == "shell_call_output"
    assert result.thread.tool_calls[0].result is not None


def test_an_undeclared_call_without_a_handler_stops_the_run_and_waits_for_one(thread_file):
    local = {
        "type": "local_shell_call",
        "id": "lsh_1",
        "call_id": "call_local",
        "action": {"type": "exec", "command": ["ls"], "env": {}},
        "status": "completed",
    }
    handlers = {"run_sql": lambda c: "1", "shell": lambda a: "", "apply_patch": lambda o: "ok"}
    with ScriptedServer([Reply.sse(answer(local))]) as server:
        with pytest.raises(ToolHandlerMissingError) as caught:
            run(server, thread_file, handlers=handlers)
    assert len(server.requests) == 1  # no request holds the call without its answer
    error = caught.value
    assert (error.kind, error.tool, error.call_id) == ("local_shell", "local_shell", "call_local")
    assert error.path == "$.tool_calls[0]" and "local_shell" in str(error)
    waiting = error.result.thread.tool_calls[0]
    assert waiting.result is None and waiting.kind == "local_shell"
    # Saved with the call waiting (the model did answer); a run with a handler answers it.
    saved = turnwire.load_thread(thread_file)
    assert [call.result for call in saved.tool_calls] == [None]
    ran: list[Any] = []
    with_local = {**handlers, "local_shell": lambda action: ran.append(action) or "a b"}
    with ScriptedServer([Reply.sse(text_answer("ok"))]) as server:
        result = run(server, thread_file, handlers=with_local)
    assert len(ran) == 1 and result.text == "ok"
    output = _checked(server.requests[0].json)["input"][-1]
    assert output["type"] == "local_shell_call_output" and output["id"] == "call_local"


def test_a_failing_handler_is_an_error_result_under_the_same_bounds(thread_file, caplog):
    def broken(action: ShellAction) -> str:
        raise RuntimeError("disk on fire")

    async def slow(operation: PatchOperation) -> str:
        await asyncio.sleep(30)
        return "never"

    handlers = {"run_sql": lambda c: "1", "shell": broken, "apply_patch": slow}
    script = [Reply.sse(answer(SHELL, PATCH)), Reply.sse(text_answer("ok"))]
    with ScriptedServer(script) as server:
        with caplog.at_level(logging.WARNING, logger="turnwire"):
            # 1.5 s: time enough for the failing handler's worker on a loaded machine, while
            # the slow one (30 s) still runs past it
            run(server, thread_file, handlers=handlers, settings={"tools": {"timeout_s": 1.5}})
    kinds = [r.kind for r in caplog.records]
    assert "tool-error" in kinds and "tool-timeout" in kinds
    sent = _checked(server.requests[1].json)["input"]
    shell_output = next(i for i in sent if i["type"] == "shell_call_output")
    assert shell_output["output"][0]["outcome"] == {"type": "exit", "exit_code": 1}
    assert "disk on fire" in shell_output["output"][0]["stderr"]
    patch_output = next(i for i in sent if i["type"] == "apply_patch_call_output")
    assert patch_output["status"] == "failed" and "did not finish" in patch_output["output"]


def test_a_shell_result_over_the_cap_is_an_error(thread_file):
    handlers = {
        "run_sql": lambda c: "1",
        "shell": lambda a: "x" * 2000,
        "apply_patch": lambda o: "ok",
    }
    with ScriptedServer([Reply.sse(answer(SHELL)), Reply.sse(text_answer("ok"))]) as server:
        run(server, thread_file, handlers=handlers, settings={"tools": {"max_result_bytes": 1000}})
    output = server.requests[1].json["input"][-1]["output"][0]
    assert output["stdout"] == "" and "tools.max_result_bytes" in output["stderr"]


COMPUTER = {
    "type": "computer_call",
    "id": "cu_1",
    "call_id": "call_cu",
    "action": {"type": "click", "button": "left", "x": 10, "y": 20},
    "pending_safety_checks": [
        {"id": "sc_1", "code": "malicious_instructions", "message": "odd page"},
        {"id": "sc_2", "code": "irrelevant_domain", "message": "elsewhere"},
    ],
    "status": "completed",
}
COMPUTER_THREAD = """\
version: 1
model: gpt-5
hosted_tools: [{type: computer}]
messages:
  - {id: u1, role: user, content: hi, created_at: "2026-01-01T10:00:00Z"}
"""
PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 32


@pytest.mark.parametrize(
    ("acknowledged", "sent"),
    [
        ((), None),
        (("sc_2",), [{"id": "sc_2", "code": "irrelevant_domain", "message": "elsewhere"}]),
    ],
)
def test_a_computer_call_acknowledges_only_what_its_handler_did(tmp_path, acknowledged, sent):
    path = tmp_path / "t.yaml"
    path.write_text(COMPUTER_THREAD)
    seen: list[ComputerAction] = []

    def computer(action: ComputerAction) -> ComputerResult:
        seen.append(action)
        shot = Media(id="shot", kind="image", mime_type="image/png", data=PNG)
        return ComputerResult(screenshot=shot, acknowledged_safety_checks=acknowledged)

    with ScriptedServer([Reply.sse(answer(COMPUTER)), Reply.sse(text_answer("ok"))]) as server:
        run(server, path, handlers={"computer": computer})
    assert seen[0].actions == (Click(button="left", x=10, y=20),)
    assert [c.id for c in seen[0].pending_safety_checks] == ["sc_1", "sc_2"]
    output = _checked(server.requests[1].json)["input"][-1]
    assert output["type"] == "computer_call_output" and output["call_id"] == "call_cu"
    assert output["output"]["image_url"].startswith("data:image/png;base64,")
    assert output.get("acknowledged_safety_checks") == sent


def test_a_computer_handler_cannot_acknowledge_a_check_the_call_did_not_raise(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text(COMPUTER_THREAD)

    def computer(action: ComputerAction) -> ComputerResult:
        shot = Media(id="shot", kind="image", mime_type="image/png", data=PNG)
        return ComputerResult(screenshot=shot, acknowledged_safety_checks=("sc_9",))

    with ScriptedServer([Reply.sse(answer(COMPUTER)), Reply.sse(text_answer("ok"))]) as server:
        result = run(server, path, handlers={"computer": computer})
    output = server.requests[1].json["input"][-1]
    assert "acknowledged_safety_checks" not in output
    assert "image_url" not in output["output"]
    assert "not pending" in result.thread.tool_calls[0].result.text


def test_a_malformed_client_call_is_a_stream_error_naming_the_field(thread_file):
    bad = {**SHELL, "action": {"commands": "ls"}}
    with ScriptedServer([Reply.sse(answer(bad))]) as server, pytest.raises(StreamError) as caught:
        run(
            server,
            thread_file,
            handlers={"run_sql": lambda c: "", "shell": lambda a: "", "apply_patch": lambda o: ""},
        )
    assert caught.value.field == "output[0].action.commands"


def test_a_shell_the_api_ran_and_answered_stays_a_hosted_item(thread_file):
    hosted = {**SHELL, "environment": {"type": "container_reference", "container_id": "cntr_1"}}
    output = {
        "type": "shell_call_output",
        "id": "sho_1",
        "call_id": "call_sh",
        "output": [{"stdout": "", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}],
        "status": "completed",
    }
    handlers = {
        "run_sql": lambda c: "",
        "shell": lambda a: pytest.fail("ran"),
        "apply_patch": lambda o: "",
    }
    with ScriptedServer([Reply.sse(answer(hosted, output, text_item()))]) as server:
        result = run(server, thread_file, handlers=handlers)
    assert [h.type for h in result.thread.hosted_items] == ["shell_call", "shell_call_output"]
    assert result.thread.tool_calls == ()


def text_item() -> dict[str, Any]:
    return {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "done", "annotations": []}],
    }


def test_a_call_after_its_reasoning_goes_back_with_its_item_id(thread_file):
    reasoning = {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [],
        "encrypted_content": "gAAAA-opaque",
    }
    handlers = {"run_sql": lambda c: "", "shell": lambda a: "ok", "apply_patch": lambda o: ""}
    replay = {
        "render": {
            "reasoning_replay": "encrypted",
            "replay_compatibility": ["openai-responses-reasoning-v1"],
        }
    }
    script = [Reply.sse(answer(reasoning, SHELL)), Reply.sse(text_answer("ok"))]
    with ScriptedServer(script) as server:
        run(server, thread_file, handlers=handlers, settings=replay)
    sent = _checked(server.requests[1].json)["input"]
    kinds = [(item["type"], item.get("id")) for item in sent[1:]]
    assert kinds == [("reasoning", "rs_1"), ("shell_call", "sh_1"), ("shell_call_output", None)]


def test_a_shell_call_is_answered_by_its_handler_not_recorded_as_answered(tmp_path):
    # Before client-executed tools, this answer was a hosted item and the run stopped there
    # (one request, no handler run, the call sent back as assistant text).
    path = tmp_path / "t.yaml"
    path.write_text(COMPUTER_THREAD.replace("hosted_tools: [{type: computer}]\n", ""))
    ran: list[Any] = []
    with ScriptedServer([Reply.sse(answer(SHELL)), Reply.sse(text_answer("ok"))]) as server:
        result = run(server, path, handlers={"shell": lambda action: ran.append(action) or "hi"})
    assert len(ran) == 1 and len(server.requests) == 2 and result.iterations == 2
    assert [i["type"] for i in server.requests[1].json["input"][1:]] == [
        "shell_call",
        "shell_call_output",
    ]


def test_a_configured_client_tool_without_a_handler_is_refused_naming_the_setting(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text(COMPUTER_THREAD.replace("hosted_tools: [{type: computer}]\n", ""))
    settings = {"tools": {"hosted": [{"type": "web_search"}, {"type": "shell"}]}}
    with ScriptedServer([]) as server, pytest.raises(ToolHandlerMissingError) as caught:
        run(server, path, handlers={}, settings=settings)
    assert (caught.value.path, caught.value.kind) == ("$.tools.hosted[1]", "shell")
    assert server.requests == []
    with ScriptedServer([Reply.sse(text_answer("ok"))]) as server:
        run(
            server,
            path,
            handlers={},
            settings={
                "tools": {
                    **settings["tools"],
                    "handlers": {"shell": "turnwire.examples.tools:get_weather"},
                }
            },
        )
    assert [t["type"] for t in _checked(server.requests[0].json)["tools"]] == [
        "web_search",
        "shell",
    ]
