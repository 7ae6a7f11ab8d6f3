"""MCP approvals through real runs on a local server: an approval request streamed by the server is
recorded, the user's decision goes after it in the next request, and a decision on anything but a
pending request fails before anything is sent; the command line shows and decides them."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import msgspec
import pytest

import turnwire
from turnwire.errors import ApprovalNotPendingError, ThreadFileError
from turnwire.model.approvals import Approval, pending_approvals
from turnwire.model.records import McpTool

from ..conftest import make_container, turnwire_process
from ..wire.test_hosted_tools import (
    FOLLOW_UP,
    HOSTED,
    MCP,
    QUESTION,
    SECRET,
    TOKEN,
    _checked,
    _config,
    _container,
    _run,
    _thread,
)
from .server import Reply, ScriptedServer
from .test_output_shapes import streamed

LIST_TOOLS = {
    "type": "mcp_list_tools",
    "id": "mcpl_1",
    "server_label": "deepwiki",
    "tools": [{"name": "ask_question", "input_schema": {"type": "object"}}],
}


APPROVAL_REQUEST = {
    "type": "mcp_approval_request",
    "id": "mcpr_1",
    "server_label": "deepwiki",
    "name": "ask_question",
    "arguments": '{"repoName":"openai/openai-python","question":"What is store?"}',
}


MCP_CALL = {
    "type": "mcp_call",
    "id": "mcp_1",
    "server_label": "deepwiki",
    "name": "ask_question",
    "arguments": APPROVAL_REQUEST["arguments"],
    "output": "It keeps the response server-side.",
    "approval_request_id": "mcpr_1",
    "status": "completed",
}


ANSWER = {
    "type": "message",
    "id": "msg_9",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "output_text", "text": "It is server-side state.", "annotations": []}],
}


# ------------------------------------------------------------------ declarations


def test_the_declarations_reach_the_body_the_server_receives(tmp_path):
    tools = [{"name": "get_weather", "parameters": {"type": "object", "properties": {}}}]
    path = _thread(tmp_path, tools=tools, hosted_tools=HOSTED)
    _, requests = _run(path, [Reply.sse(FOLLOW_UP)])
    body = _checked(requests[0])
    sent = body["tools"]
    assert [t["type"] for t in sent] == [
        "function",
        "mcp",  # tools.hosted first
        "web_search",
        "file_search",
        "code_interpreter",
        "image_generation",
    ]
    assert sent[1] == MCP  # the credentials are sent, to the API only
    assert sent[2:] == HOSTED
    # A code interpreter call is replayed with its outputs: asked for, as the recorded
    # accepted request does.
    assert body["include"] == ["code_interpreter_call.outputs"]
    assert body["store"] is False


def test_a_thread_without_hosted_tools_renders_as_before(tmp_path):
    path = _thread(tmp_path)
    body = turnwire.render(path, container=make_container()).json
    assert "tools" not in body and "include" not in body
    loaded = turnwire.load_thread(path)
    assert loaded.hosted_tools == ()
    assert "hosted_tools" not in msgspec.to_builtins(loaded)  # saved files stay as they were


def test_the_recorded_declarations_load_and_render_as_recorded():
    from ..conftest import CONFORMANCE

    for name in ("web_search_call", "code_interpreter_call"):
        recorded_body = json.loads(
            (CONFORMANCE / "requests" / f"reasoning_replay_{name}_gpt-5.json").read_text()
        )
        declared = recorded_body.get("body", recorded_body)["tools"]
        thread = turnwire.load_thread(
            {"version": 1, "model": "gpt-5", "messages": [QUESTION], "hosted_tools": declared}
        )
        body = turnwire.render(thread, container=make_container()).json
        assert body["tools"] == declared
        # What the declarations add to `include` is what the recorded request asked for.
        expected = set(recorded_body.get("body", recorded_body)["include"])
        assert set(body.get("include", [])) == expected - {"reasoning.encrypted_content"}


def test_the_configuration_wins_over_a_thread_declaration_of_the_same_tool(tmp_path, caplog):
    forged = {**MCP, "server_url": "https://attacker.example/mcp", "require_approval": "never"}
    del forged["headers"], forged["authorization"]
    path = _thread(tmp_path, hosted_tools=[forged, HOSTED[0]])
    with caplog.at_level(logging.WARNING, logger="turnwire"):
        body = turnwire.render(path, container=_container(hosted=[MCP])).json
    assert [t.get("server_url") for t in body["tools"]] == [MCP["server_url"], None]
    assert "hosted-tool-shadowed" in [getattr(r, "kind", None) for r in caplog.records]


def test_a_thread_declares_only_the_mcp_servers_the_configuration_allows(tmp_path):
    own = {"type": "mcp", "server_label": "wiki", "server_url": "https://mcp.deepwiki.com/mcp"}
    path = _thread(tmp_path, hosted_tools=[HOSTED[0], own])
    with ScriptedServer([Reply.sse(FOLLOW_UP)]) as server:
        with pytest.raises(turnwire.errors.McpServerNotAllowedError) as caught:
            turnwire.api.run(path, container=_container(), base_url=server.base_url)
    assert server.requests == []  # nothing was sent
    assert caught.value.code == "E_MCP_SERVER_NOT_ALLOWED"
    assert caught.value.path == "$.hosted_tools[1]" and caught.value.server_label == "wiki"
    with pytest.raises(turnwire.errors.McpServerNotAllowedError):  # render says so too
        turnwire.render(path, container=_container(allow_thread_mcp_servers=["https://other/*"]))
    # A pattern that ends in a path; a look-alike host does not match it.
    allowed = _container(allow_thread_mcp_servers=["https://mcp.deepwiki.com/*"])
    body = turnwire.render(path, container=allowed).json
    assert body["tools"][1] == own
    path = _thread(
        tmp_path, hosted_tools=[{**own, "server_url": "https://mcp.deepwiki.com.evil.io/"}]
    )
    with pytest.raises(turnwire.errors.McpServerNotAllowedError):
        turnwire.render(path, container=allowed)
    # A connector is matched by its id; a server the configuration shadows is not checked.
    connector = {"type": "mcp", "server_label": "drive", "connector_id": "connector_googledrive"}
    path = _thread(tmp_path, hosted_tools=[connector, {**own, "server_label": "deepwiki"}])
    body = turnwire.render(
        path,
        container=_container(hosted=[MCP], allow_thread_mcp_servers=["connector_googledrive"]),
    ).json
    assert [t["server_label"] for t in body["tools"]] == ["deepwiki", "drive"]


@pytest.mark.parametrize(
    ("declared", "message"),
    [
        ([HOSTED[0], HOSTED[0]], "'web_search' is declared twice"),
        ([{**MCP}, {**MCP, "headers": None}], "'mcp:deepwiki' is declared twice"),
        ([{"type": "mcp", "server_label": "x"}], "exactly one of `server_url` or `connector_id`"),
        ([{"type": "file_search", "vector_store_ids": []}], "$.hosted_tools[0].vector_store_ids"),
        ([{"type": "web_search", "searchcontextsize": "low"}], "unknown field"),
        ([{"type": "shell"}], "$.hosted_tools[0]"),
    ],
)
def test_bad_declarations_are_thread_file_errors(declared, message):
    with pytest.raises(ThreadFileError) as caught:
        turnwire.load_thread({"version": 1, "hosted_tools": declared})
    assert message in str(caught.value)
    assert SECRET not in str(caught.value)


def test_bad_configured_declarations_are_config_errors():
    with pytest.raises(turnwire.ConfigError) as caught:
        _container(hosted=[{"type": "code_interpreter"}])
    assert "$.tools.hosted[0]" in str(caught.value)


# ------------------------------------------------------------------ credentials


def test_mcp_credentials_never_reach_a_repr_an_error_or_a_log(tmp_path, caplog):
    tool = msgspec.convert(MCP, McpTool)
    for text in (
        repr(tool),
        str(tool),
        repr((tool,)),
        repr(turnwire.load_thread({"version": 1, "hosted_tools": [MCP]})),
    ):
        assert SECRET not in text and TOKEN not in text and "[redacted]" in text
    # Any error or log text that quotes them is redacted (the values are remembered).
    err = turnwire.ConfigError(f"server said: {SECRET} / Bearer {TOKEN}")
    assert SECRET not in str(err) and TOKEN not in str(err)
    caplog.set_level(logging.DEBUG)
    path = _thread(tmp_path)
    failing = Reply.json(400, {"error": {"message": f"bad header {SECRET}", "type": "x"}})
    with pytest.raises(turnwire.HttpError) as caught:
        _run(path, [failing])
    assert SECRET not in str(caught.value) and SECRET not in caplog.text
    assert TOKEN not in caplog.text


def test_turnwire_render_and_check_config_print_no_credentials(tmp_path):
    path = _thread(tmp_path, hosted_tools=[{**MCP, "server_label": "other"}])
    config = _config(
        tmp_path, hosted=[MCP], allow_thread_mcp_servers=["https://mcp.deepwiki.com/*"]
    )
    rendered = turnwire_process("render", str(path), "--config", str(config))
    assert rendered.returncode == 0, rendered.stderr
    body = json.loads(rendered.stdout)
    assert [t["headers"] for t in body["tools"]] == [{"X-Api-Token": "[redacted]"}] * 2
    assert [t["authorization"] for t in body["tools"]] == ["[redacted]"] * 2
    printed = turnwire_process("check-config", str(config), "--print")
    assert printed.returncode == 0, printed.stderr
    assert "X-Api-Token: '[redacted]'" in printed.stdout
    assert "authorization: '[redacted]'" in printed.stdout
    for done in (rendered, printed):
        assert SECRET not in done.stdout + done.stderr
        assert TOKEN not in done.stdout + done.stderr


def test_credentials_are_not_part_of_a_reasoning_fingerprint():
    from turnwire.stages.fingerprint import prefix_tail

    tool = msgspec.convert(MCP, McpTool)
    rotated = msgspec.structs.replace(tool, headers={"X-Api-Token": "another-secret-value"})
    assert prefix_tail("gpt-5", None, (tool,)) == prefix_tail("gpt-5", None, (rotated,))
    assert SECRET.encode() not in prefix_tail("gpt-5", None, (tool,))


# ------------------------------------------------------------------ approvals


def _ask_for_approval(tmp_path: Path) -> Path:
    """A first run whose answer waits for approval; the thread file saved."""
    path = _thread(tmp_path)
    _, requests = _run(path, [Reply.sse(streamed([LIST_TOOLS, APPROVAL_REQUEST]))])
    _checked(requests[0])
    saved = turnwire.load_thread(path)
    assert [(h.type, h.id) for h in saved.hosted_items] == [
        ("mcp_list_tools", "mcpl_1"),
        ("mcp_approval_request", "mcpr_1"),
    ]
    assert [r.id for r in pending_approvals(saved)] == ["mcpr_1"]
    return path


def _sent_after_question(seen: Any) -> list[dict[str, Any]]:
    return [i for i in _checked(seen)["input"] if i.get("type") != "message" and "role" not in i]


def test_an_approval_is_recorded_and_sent_after_its_request(tmp_path):
    path = _ask_for_approval(tmp_path)
    result, requests = _run(
        path, [Reply.sse(streamed([MCP_CALL, ANSWER]))], approvals={"mcpr_1": True}
    )
    (seen,) = requests
    assert _sent_after_question(seen) == [
        LIST_TOOLS,
        APPROVAL_REQUEST,
        {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": True},
    ]
    saved = turnwire.load_thread(path)
    response = next(h for h in saved.hosted_items if h.type == "mcp_approval_response")
    assert response.item == {
        "type": "mcp_approval_response",
        "approval_request_id": "mcpr_1",
        "approve": True,
    }
    assert response.id and "id" not in response.item  # a record id; the item has none
    assert response in result.records.hosted_items
    assert pending_approvals(saved) == ()
    timeline = [r.id for r in sorted(saved.hosted_items, key=lambda r: (r.created_at, r.seq))]
    assert timeline == ["mcpl_1", "mcpr_1", response.id, "mcp_1"]


def test_a_denial_carries_its_reason(tmp_path):
    path = _ask_for_approval(tmp_path)
    _, requests = _run(
        path,
        [Reply.sse(FOLLOW_UP)],
        approvals={"mcpr_1": Approval(approve=False, reason="not that repository")},
    )
    assert _sent_after_question(requests[0])[-1] == {
        "type": "mcp_approval_response",
        "approval_request_id": "mcpr_1",
        "approve": False,
        "reason": "not that repository",
    }


@pytest.mark.parametrize("request_id", ["mcpr_unknown", "mcpl_1"])
def test_an_id_that_is_not_pending_fails_before_anything_is_sent(tmp_path, request_id):
    path = _ask_for_approval(tmp_path)
    before = path.read_bytes()
    with pytest.raises(ApprovalNotPendingError) as caught:
        _run(path, [Reply.sse(FOLLOW_UP)], approvals={request_id: True})
    assert caught.value.code == "E_MCP_APPROVAL_NOT_PENDING"
    assert caught.value.item_id == request_id and caught.value.pending == ("mcpr_1",)
    assert "pending: mcpr_1" in str(caught.value)
    assert path.read_bytes() == before


def test_an_answered_request_cannot_be_decided_again(tmp_path):
    path = _ask_for_approval(tmp_path)
    _run(path, [Reply.sse(streamed([MCP_CALL, ANSWER]))], approvals={"mcpr_1": True})
    with pytest.raises(ApprovalNotPendingError, match="answered already"):
        _run(path, [Reply.sse(FOLLOW_UP)], approvals={"mcpr_1": False})


def test_the_cli_shows_pending_approvals_then_approves_and_denies(tmp_path):
    path = _thread(tmp_path)
    config = _config(tmp_path, hosted=[MCP])
    with ScriptedServer([Reply.sse(streamed([LIST_TOOLS, APPROVAL_REQUEST]))]) as server:
        first = turnwire_process(
            "run", str(path), "--base-url", server.base_url, "--config", str(config), "--save"
        )
    assert first.returncode == 0, first.stderr
    assert (
        "[approval pending mcpr_1: deepwiki ask_question("
        '{"repoName":"openai/openai-python","question":"What is store?"}); '
        "--approve or --deny it on the next run]"
    ) in first.stderr
    _checked(server.requests[0])

    unknown = turnwire_process(
        "run",
        str(path),
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--config",
        str(config),
        "--approve",
        "mcpr_nope",
    )
    assert unknown.returncode == 1  # `run` fails with 1, whatever the cause
    assert "error: E_MCP_APPROVAL_NOT_PENDING: cannot approve or deny 'mcpr_nope'" in unknown.stderr

    with ScriptedServer([Reply.sse(streamed([MCP_CALL, ANSWER]))]) as server:
        approved = turnwire_process(
            "run",
            str(path),
            "--base-url",
            server.base_url,
            "--config",
            str(config),
            "--save",
            "--approve",
            "mcpr_1",
            "--json",
        )
    assert approved.returncode == 0, approved.stderr
    assert _sent_after_question(server.requests[0])[-1] == {
        "type": "mcp_approval_response",
        "approval_request_id": "mcpr_1",
        "approve": True,
    }
    printed = json.loads(approved.stdout)
    assert "pending_approvals" not in printed
    assert [h["type"] for h in printed["records"]["hosted_items"]] == [
        "mcp_approval_response",
        "mcp_call",
    ]
    for done in (first, unknown, approved):
        assert SECRET not in done.stdout + done.stderr and TOKEN not in done.stdout + done.stderr

    # A second request waits; this time it is denied, with a reason.
    again = {**APPROVAL_REQUEST, "id": "mcpr_2"}
    with ScriptedServer([Reply.sse(streamed([again]))]) as server:
        waiting = turnwire_process(
            "run",
            str(path),
            "--base-url",
            server.base_url,
            "--config",
            str(config),
            "--save",
            "--json",
        )
    assert json.loads(waiting.stdout)["pending_approvals"] == [
        {
            "id": "mcpr_2",
            "server_label": "deepwiki",
            "name": "ask_question",
            "arguments": APPROVAL_REQUEST["arguments"],
        }
    ]
    with ScriptedServer([Reply.sse(FOLLOW_UP)]) as server:
        denied = turnwire_process(
            "run",
            str(path),
            "--base-url",
            server.base_url,
            "--config",
            str(config),
            "--deny",
            "mcpr_2",
            "--reason",
            "not now",
        )
    assert denied.returncode == 0, denied.stderr
    assert _sent_after_question(server.requests[0])[-1] == {
        "type": "mcp_approval_response",
        "approval_request_id": "mcpr_2",
        "approve": False,
        "reason": "not now",
    }


def test_a_reason_needs_a_decision_before_it(tmp_path):
    done = turnwire_process("run", str(_thread(tmp_path)), "--reason", "why")
    assert done.returncode == 2
    assert "--reason goes right after the --approve ID or --deny ID" in done.stderr


def test_a_pending_request_shown_by_the_cli_cannot_forge_terminal_output(tmp_path):
    from turnwire.cli.main import _print_pending

    hostile = {**APPROVAL_REQUEST, "arguments": '{"q":"\x1b[2J\nerror: fake"}', "name": "x\ry"}
    thread = turnwire.load_thread(
        {
            "version": 1,
            "hosted_items": [
                {
                    "id": "mcpr_1",
                    "type": "mcp_approval_request",
                    "item": hostile,
                    "created_at": "2026-01-01T10:00:01Z",
                }
            ],
        }
    )

    class Lines(list):
        def write(self, text: str) -> None:
            self.append(text)

    out = Lines()
    _print_pending(thread, out)
    shown = "".join(out)
    assert shown.count("\n") == 1 and "\x1b" not in shown and "\r" not in shown


def test_run_thread_records_the_decision_in_the_store(tmp_path):
    from turnwire.store import open_store

    with open_store(str(tmp_path / "threads.db")) as store:
        store.import_thread(
            turnwire.load_thread({"version": 1, "model": "gpt-5", "messages": [QUESTION]}),
            thread_id="t1",
        )
        with ScriptedServer([Reply.sse(streamed([LIST_TOOLS, APPROVAL_REQUEST]))]) as server:
            turnwire.run_thread(
                "t1", store=store, container=_container(hosted=[MCP]), base_url=server.base_url
            )
        with pytest.raises(ApprovalNotPendingError):
            turnwire.run_thread(
                "t1",
                store=store,
                container=_container(hosted=[MCP]),
                base_url=server.base_url,
                approvals={"mcpr_9": True},
            )
        with ScriptedServer([Reply.sse(streamed([MCP_CALL, ANSWER]))]) as server:
            turnwire.run_thread(
                "t1",
                store=store,
                container=_container(hosted=[MCP]),
                base_url=server.base_url,
                approvals={"mcpr_1": True},
            )
        sent = _sent_after_question(server.requests[0])
        assert sent[-1]["type"] == "mcp_approval_response"
        stored = store.load("t1")
    assert pending_approvals(stored) == ()
    assert [h.type for h in stored.hosted_items] == [
        "mcp_list_tools",
        "mcp_approval_request",
        "mcp_approval_response",
        "mcp_call",
    ]


def test_threads_show_hides_mcp_credentials_and_export_keeps_them(tmp_path):
    path = _thread(tmp_path, hosted_tools=[MCP])
    db = str(tmp_path / "threads.db")
    imported = turnwire_process("threads", "import", str(path), "--id", "t1", "--db", db)
    assert imported.returncode == 0, imported.stderr
    shown = turnwire_process("threads", "show", "t1", "--db", db)
    assert shown.returncode == 0, shown.stderr + shown.stdout
    declared = json.loads(shown.stdout)["hosted_tools"][0]
    assert declared["headers"] == {"X-Api-Token": "[redacted]"}
    assert declared["authorization"] == "[redacted]"
    assert SECRET not in shown.stdout and TOKEN not in shown.stdout
    exported = turnwire_process("threads", "export", "t1", "-", "--db", db)
    assert json.loads(exported.stdout)["hosted_tools"] == [MCP]  # lossless, as imported
