"""MCP approvals through real runs on a local server: an approval request streamed by the server is
recorded, the user's decision goes after it in the next request, and a decision on anything but a
pending request fails before anything is sent; the command line shows and decides them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import turnwire
from turnwire.errors import ApprovalNotPendingError
from turnwire.model.approvals import Approval, pending_approvals

from ..conftest import turnwire_process
from ..wire.test_hosted_tools import (
    FOLLOW_UP,
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
from .test_reading import streamed

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
    from turnwire.cli.run import print_pending

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
    print_pending(thread, out)
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
