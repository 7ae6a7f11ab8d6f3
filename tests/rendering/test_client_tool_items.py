"""Client-executed calls as input items: each kind renders its call and its answer from the record
alone (accepted by the official types, extra keys forbidden), the same bytes cold and warm, with
its item id kept only where its reasoning is sent (or its input shape requires it); and each
preflight rule of their pairing, and of tool names, refuses what it must, naming the rule."""

from __future__ import annotations

import base64
import copy
from typing import Any

import msgspec
import pytest

import turnwire
from turnwire import PreflightError
from turnwire.errors import ThreadFileError
from turnwire.rendering.body import checked_body
from turnwire.rendering.preflight import PREFLIGHT_RULES, preflight
from turnwire.wire import RequestBody
from turnwire.wire.items import CustomToolCall, CustomToolCallOutput

from ..conftest import at, make_container, render_body, thread, user
from ..oracle import validate_body, validate_open_responses, validate_openapi

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 24).decode()

CALLS: list[dict[str, Any]] = [
    {
        "id": "call_1|ctc_1",
        "tool": "run_sql",
        "payload": {"kind": "custom", "input": "SELECT 1"},
        "result": {"text": "1"},
    },
    {
        "id": "call_2|sh_1",
        "tool": "shell",
        "payload": {"kind": "shell", "commands": ["ls"], "timeout_ms": 100},
        "result": {"shell": [{"stdout": "a\n"}, {"stderr": "late", "timed_out": True}]},
    },
    {
        "id": "call_3|lsh_1",
        "tool": "local_shell",
        "payload": {"kind": "local_shell", "command": ["ls", "-l"], "env": {"A": "1"}},
        "result": {"text": "total 0"},
    },
    {
        "id": "call_4|apc_1",
        "tool": "apply_patch",
        "payload": {"kind": "apply_patch", "operation": "delete_file", "path": "old.py"},
        "is_error": True,
        "result": {"text": "no such file"},
    },
    {
        "id": "call_5|cu_1",
        "tool": "computer",
        "payload": {
            "kind": "computer",
            "batched": True,
            "actions": [
                {"type": "drag", "path": [{"x": 1, "y": 2}, {"x": 3, "y": 4}]},
                {"type": "type", "text": "hi"},
                {"type": "double_click", "x": 5, "y": 6},
            ],
            "pending_safety_checks": [{"id": "sc_1", "code": "c", "message": "m"}, {"id": "sc_2"}],
        },
        "result": {
            "media": [{"id": "s", "kind": "image", "mime_type": "image/png", "data_base64": PNG}],
            "acknowledged_safety_checks": ["sc_2"],
        },
    },
]

DECLARED = [
    {"type": "custom", "name": "run_sql", "format": {"type": "text"}},
    {"type": "shell"},
    {"type": "local_shell"},
    {"type": "apply_patch"},
    {"type": "computer"},
]


def _thread(calls: list[dict[str, Any]] = CALLS, **fields: Any) -> turnwire.Thread:
    dated = [{**call, "created_at": at(1), "seq": seq} for seq, call in enumerate(calls)]
    return thread(
        model="gpt-5", messages=[user()], hosted_tools=DECLARED, tool_calls=dated, **fields
    )


def _checked(body: dict[str, Any]) -> dict[str, Any]:
    validate_body(body)
    validate_openapi(body)
    validate_open_responses(body)
    return body


def test_each_kind_renders_its_call_and_answer_as_the_official_types_take_them():
    items = _checked(render_body(_thread()))["input"][1:]
    assert [item["type"] for item in items] == [
        "custom_tool_call",
        "custom_tool_call_output",
        "shell_call",
        "shell_call_output",
        "local_shell_call",
        "local_shell_call_output",
        "apply_patch_call",
        "apply_patch_call_output",
        "computer_call",
        "computer_call_output",
    ]
    assert items[3]["output"] == [
        {"stdout": "a\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}},
        {"stdout": "", "stderr": "late", "outcome": {"type": "timeout"}},
    ]
    assert items[4] == {
        "type": "local_shell_call",
        "id": "lsh_1",  # the input shape requires it: kept without a reasoning item
        "call_id": "call_3",
        "action": {"type": "exec", "command": ["ls", "-l"], "env": {"A": "1"}},
        "status": "completed",
    }
    assert items[5] == {"type": "local_shell_call_output", "id": "call_3", "output": "total 0"}
    assert items[6] == {
        "type": "apply_patch_call",
        "call_id": "call_4",
        "operation": {"type": "delete_file", "path": "old.py"},
        "status": "completed",
    }
    assert items[7]["status"] == "failed" and items[7]["output"] == "no such file"
    assert items[8]["id"] == "cu_1" and "action" not in items[8]
    assert items[8]["actions"][2] == {"type": "double_click", "x": 5, "y": 6, "keys": None}
    assert items[9]["acknowledged_safety_checks"] == [{"id": "sc_2"}]
    assert items[9]["output"]["image_url"] == f"data:image/png;base64,{PNG}"


def test_a_pending_call_renders_alone_and_the_body_is_refused_by_its_pairing_rule():
    pending = [{key: value for key, value in CALLS[1].items() if key != "result"}]
    with pytest.raises(PreflightError) as caught:
        render_body(_thread(pending))
    assert caught.value.rule == "shell-call-pairing"
    assert "shell_call 'call_2' has no shell_call_output" in str(caught.value)


def test_without_its_reasoning_a_call_goes_without_its_item_id():
    items = render_body(_thread())["input"]
    assert all(
        "id" not in item
        for item in items
        if item["type"] in {"shell_call", "apply_patch_call", "custom_tool_call"}
    )


def test_warm_renders_give_the_cold_bytes_as_the_thread_grows():
    container = make_container()
    grown = [_thread(CALLS[: count + 1]) for count in range(len(CALLS))]
    for current in grown:
        warm = turnwire.render(current, container=container, model="gpt-5").body
        cold = turnwire.render(current, container=make_container(), model="gpt-5").body
        assert warm == cold
    first = turnwire.render(grown[-2], container=make_container(), model="gpt-5").json["input"]
    last = turnwire.render(grown[-1], container=make_container(), model="gpt-5").json["input"]
    assert last[: len(first)] == first  # the next request extends the one before it


def test_a_payload_is_a_thread_file_contract():
    with pytest.raises(ThreadFileError, match=r"\$\.tool_calls\[0\]\.payload\.commands"):
        _thread([{**CALLS[1], "payload": {"kind": "shell", "commands": []}}])
    with pytest.raises(ThreadFileError, match="not one of the call's pending safety checks"):
        bad = copy.deepcopy(CALLS[4])
        bad["result"]["acknowledged_safety_checks"] = ["sc_9"]
        _thread([bad])
    with pytest.raises(ThreadFileError, match=r"\$\.hosted_tools\[0\]\.format\.syntax"):
        thread(
            hosted_tools=[
                {
                    "type": "custom",
                    "name": "x",
                    "format": {"type": "grammar", "syntax": "ebnf", "definition": "a"},
                }
            ]
        )
    with pytest.raises(ThreadFileError, match="a shell call's `tool` is 'shell'"):
        _thread([{**CALLS[1], "tool": "bash"}])
    with pytest.raises(ThreadFileError, match="answers shell calls only"):
        _thread([{**CALLS[0], "result": {"shell": [{"stdout": ""}]}}])


def test_an_old_thread_file_loads_and_encodes_unchanged():
    old = {
        "version": 1,
        "tool_calls": [
            {
                "id": "call_1|fc_1",
                "tool": "f",
                "args": {"a": 1},
                "result": {"text": "x"},
                "created_at": "2026-01-01T10:00:00Z",
            }
        ],
    }
    loaded = turnwire.load_thread(old)
    assert loaded.tool_calls[0].kind == "function" and loaded.tool_calls[0].payload is None
    assert msgspec.json.decode(msgspec.json.encode(loaded)) == {"tool_calls": old["tool_calls"]}


# ------------------------------------------------------------------------------ the rules


def _body(*items: dict[str, Any], tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "gpt-5", "store": False, "input": [user_item(), *items]}
    if tools is not None:
        body["tools"] = tools
    return body


def user_item() -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": "hi"}


SHELL_CALL = {"type": "shell_call", "call_id": "c1", "action": {"commands": ["ls"]}}
SHELL_OUT = {"type": "shell_call_output", "call_id": "c1", "output": []}

BROKEN = {
    "custom-call-pairing": _body(
        {"type": "custom_tool_call_output", "call_id": "c1", "output": "x"}
    ),
    "shell-call-pairing": _body(SHELL_CALL),
    "local-shell-call-pairing": _body(
        {"type": "local_shell_call_output", "id": "c1", "output": "x"}
    ),
    "apply-patch-call-pairing": _body(
        {"type": "apply_patch_call", "call_id": "c1", "operation": {}, "status": "completed"},
        {"type": "apply_patch_call_output", "call_id": "c2", "status": "completed"},
    ),
    "computer-call-pairing": _body(
        {"type": "computer_call", "id": "cu_1", "call_id": "c1", "pending_safety_checks": []}
    ),
    "unique-tool-names": _body(
        tools=[
            {"type": "function", "name": "run", "parameters": {}, "strict": False},
            {"type": "custom", "name": "run"},
        ]
    ),
}


@pytest.mark.parametrize("rule", sorted(BROKEN))
def test_each_client_rule_refuses_what_it_must(rule):
    assert rule in PREFLIGHT_RULES
    with pytest.raises(PreflightError) as caught:
        preflight(BROKEN[rule])
    assert caught.value.rule == rule


def test_an_output_pairs_only_with_a_call_of_its_own_type():
    body = _body(SHELL_CALL, {"type": "custom_tool_call_output", "call_id": "c1", "output": "x"})
    with pytest.raises(PreflightError) as caught:
        preflight(body)
    assert caught.value.rule == "custom-call-pairing"
    preflight(_body(SHELL_CALL, SHELL_OUT))


def test_a_call_id_used_twice_by_one_kind_is_a_duplicate():
    with pytest.raises(PreflightError) as caught:
        preflight(_body(SHELL_CALL, SHELL_OUT, SHELL_CALL, SHELL_OUT))
    assert caught.value.rule == "duplicate-id"


def test_an_unnamed_tool_type_declared_twice_is_refused():
    with pytest.raises(PreflightError, match="type shell again"):
        preflight(_body(tools=[{"type": "shell"}, {"type": "shell"}]))
    preflight(_body(tools=[{"type": "shell"}, {"type": "custom", "name": "a"}]))


def test_the_body_memo_checks_a_grown_body_as_the_exact_rules_do():
    container = make_container()
    memo = container.render_memo()
    call = CustomToolCall(call_id="c1", name="run_sql", input="SELECT 1")
    first = RequestBody(model="gpt-5", input=(call,), stream=True, store=False)
    with pytest.raises(PreflightError, match="custom-call-pairing"):
        checked_body(first, memo=memo)
    answered = msgspec.structs.replace(
        first, input=(call, CustomToolCallOutput(call_id="c1", output="1"))
    )
    checked_body(answered, memo=memo)
    again = msgspec.structs.replace(answered, input=(*answered.input, call))
    with pytest.raises(PreflightError, match="duplicate-id"):
        checked_body(again, memo=memo)


def test_the_window_estimate_counts_what_a_client_call_asked_and_printed():
    from turnwire.rendering.windows import estimate_tokens

    call = _thread([CALLS[1]]).tool_calls[0]
    bare = msgspec.structs.replace(
        call, payload=msgspec.structs.replace(call.payload, commands=("x",)), result=None
    )
    assert (
        estimate_tokens(call)
        > estimate_tokens(bare)
        > estimate_tokens(msgspec.structs.replace(bare, payload=None, tool="s"))
    )
