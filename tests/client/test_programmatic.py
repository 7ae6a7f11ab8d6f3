"""Programmatic tool calling through real runs on a local server.

The model answers with a ``program`` item; the API runs it, and each function the program calls
comes back as a function call whose ``caller`` names the program. The client runs those calls
as it runs the model's own, answers them with the same ``caller``, and replays the program
(with its opaque ``fingerprint``) so the API can resume it statelessly; the ``program_output``
that ends it is replayed too. We have no recording of this traffic: the streams below follow
the item shapes of the official types (``openai`` 3.57: ``Program``, ``ProgramOutput``,
``caller`` on ``ResponseFunctionToolCall``) and of the API's OpenAPI description, and every
request the server receives is checked against both.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

import turnwire
from turnwire.errors import PreflightError, StreamError, ThreadFileError

from ..conftest import REPLAY, make_container
from ..oracle import validate_body, validate_open_responses, validate_openapi
from .server import Reply, ScriptedServer
from .test_output_shapes import MESSAGE, REASONING, streamed

PROGRAM = {
    "type": "program",
    "id": "prog_1",
    "call_id": "call_prog_1",
    "code": "const rows = await tools.count_rows({table: 'orders'}); return `${rows} rows`;",
    "fingerprint": "pfp_opaque-state-0001",
}
CALL = {
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


def _thread(tmp_path: Path, **fields: Any) -> Path:
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
    path = _thread(tmp_path)
    first = streamed([REASONING, PROGRAM, CALL])
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
    path = _thread(tmp_path)
    direct = {key: value for key, value in CALL.items() if key != "caller"}
    from_program = {**CALL, "id": "fc_2", "call_id": "call_2", "name": "lookup"}
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
    path = _thread(tmp_path)
    before = path.read_bytes()
    with pytest.raises(StreamError) as caught:
        _run(path, [Reply.sse(streamed([{**CALL, "caller": caller}]))])
    assert where in str(caught.value)
    assert path.read_bytes() == before


def test_a_direct_caller_is_read_as_no_caller(tmp_path):
    path = _thread(tmp_path)
    direct = {**CALL, "name": "lookup", "arguments": "{}", "caller": {"type": "direct"}}
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
    thread = turnwire.load_thread(_thread(tmp_path, **fields))
    with pytest.raises(PreflightError) as caught:
        turnwire.render(thread, container=make_container())
    assert caught.value.rule == "programmatic-tools"
    assert message in str(caught.value)
    assert caught.value.where == "body"


def test_forcing_a_program_needs_the_tool(tmp_path):
    choice = {"request": {"tool_choice": {"type": "programmatic_tool_calling"}}}
    thread = turnwire.load_thread(_thread(tmp_path))
    body = turnwire.render(thread, container=make_container(choice)).json
    assert body["tool_choice"] == {"type": "programmatic_tool_calling"}

    plain = turnwire.load_thread(_thread(tmp_path, tools=[TOOLS[1]], hosted_tools=[]))
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
        turnwire.load_thread(_thread(tmp_path, tools=tools))
    assert where in str(caught.value)


def test_a_program_that_goes_as_text_leaves_a_warning_for_its_calls(tmp_path):
    path = _thread(tmp_path)
    first = streamed([REASONING, PROGRAM, CALL])
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
    from turnwire.model.hosted import seal
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
    thread = turnwire.load_thread(_thread(tmp_path))
    record = HostedItem(
        id="at_1", type="additional_tools", item=item, created_at=thread.messages[0].created_at
    )
    record = seal(msgspec.structs.replace(record, seq=1), container.envelope_nonce())
    sealed = msgspec.structs.replace(thread, hosted_items=(record,))
    rendered = turnwire.render(sealed, container=container)
    sent = rendered.json["input"][1]
    if replayed:
        assert sent == item
    else:
        assert sent["type"] == "message" and sent["role"] == "assistant"
        assert any("additional_tools" in w for w in rendered.rendered.warnings)
