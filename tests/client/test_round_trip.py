"""A recorded response, recorded as thread records, rendered as the next request."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec

import turnwire

from ..conftest import REPLAY, make_container
from ..oracle import validate_body
from .server import Reply, ScriptedServer, recorded

REASONING_THEN_CALL = recorded("reasoning_summary_encrypted_function_call_gpt-5.sse")
REASONING_THEN_TEXT = recorded("reasoning_summary_encrypted_text_turn2_gpt-5.sse")
THREAD = {
    "version": 1,
    "model": "gpt-5",
    "system_prompt": "You are terse.",
    "tools": [
        {
            "name": "weather",
            "parameters": {"type": "object", "properties": {"location": {"type": "string"}}},
        }
    ],
    "messages": [
        {
            "id": "u1",
            "role": "user",
            "content": "Weather in Florence?",
            "created_at": "2026-01-01T10:00:00Z",
        }
    ],
}


def _run(tmp_path: Path, settings: dict) -> tuple[turnwire.Thread, list]:
    path = tmp_path / "t.json"
    path.write_text(json.dumps(THREAD))
    container = make_container(settings)
    with ScriptedServer([Reply.sse(REASONING_THEN_CALL), Reply.sse(REASONING_THEN_TEXT)]) as s:
        turnwire.api.run(
            path,
            container=container,
            base_url=s.base_url,
            save=True,
            handlers={"weather": lambda location: "40 C"},
        )
    return turnwire.load_thread(path), s.requests


def test_replayed_reasoning_is_paired_in_the_next_requests(tmp_path):
    saved, requests = _run(tmp_path, REPLAY)
    second = requests[1].json
    validate_body(second)
    kinds = [(i.get("type"), i.get("id", "")[:3]) for i in second["input"]]
    assert kinds == [
        ("message", ""),
        ("reasoning", "rs_"),
        ("function_call", "fc_"),
        ("function_call_output", ""),
    ]
    assert second["input"][1]["encrypted_content"].startswith("gAAAA")
    assert "reasoning.encrypted_content" in second["include"]

    # The thread on disk renders the same prefix, and the second reasoning item pairs too.
    thoughts = saved.thoughts
    assert [t.payload.paired_item_id[:4] for t in thoughts] == ["fc_0", "msg_"]
    assert all(len(t.payload.prefix_fingerprint) == 64 for t in thoughts)
    body = turnwire.render(saved, container=make_container(REPLAY)).json
    assert [i.get("type") for i in body["input"]] == [
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "reasoning",
        "message",
    ]
    assert body["input"][:4] == second["input"]
    assert body["input"][5]["id"] == thoughts[1].payload.paired_item_id


def test_a_changed_prefix_drops_the_reasoning_and_strips_the_partners_id(tmp_path):
    saved, _ = _run(tmp_path, REPLAY)
    changed = msgspec.structs.replace(saved, system_prompt="You are verbose.")
    body = turnwire.render(changed, container=make_container(REPLAY)).json
    validate_body(body)
    assert all(i.get("type") != "reasoning" for i in body["input"])
    assert all("id" not in i for i in body["input"])


def test_model_binding_survives_a_changed_prefix(tmp_path):
    settings = {"render": {**REPLAY["render"], "fingerprint_binding": "model"}}
    saved, _ = _run(tmp_path, settings)
    changed = msgspec.structs.replace(saved, system_prompt="You are verbose.")
    body = turnwire.render(changed, container=make_container(settings)).json
    assert [i.get("type") for i in body["input"]].count("reasoning") == 2


def test_with_replay_off_reasoning_is_kept_as_text_and_never_replayed(tmp_path):
    saved, requests = _run(tmp_path, {})
    assert all(t.payload is None and t.content for t in saved.thoughts)
    second = requests[1].json
    assert all(i.get("type") != "reasoning" and "id" not in i for i in second["input"])
    assert any("self-reasoning" in str(i.get("content")) for i in second["input"])


def test_records_of_one_response_have_strictly_increasing_seq_in_output_order(tmp_path):
    saved, _ = _run(tmp_path, REPLAY)
    records = sorted(
        [*saved.messages[1:], *saved.thoughts, *saved.tool_calls],
        key=lambda r: (r.created_at, r.seq),
    )
    first_response = [r for r in records if r.created_at == saved.thoughts[0].created_at]
    assert [type(r).__name__ for r in first_response] == ["Thought", "ToolCall"]
    seqs = [r.seq for r in first_response]
    assert seqs == sorted(set(seqs)) and len(seqs) == len(set(seqs))
    second = [r for r in records if r.created_at == saved.thoughts[1].created_at]
    assert [type(r).__name__ for r in second] == ["Thought", "Message"]
    assert second[0].seq < second[1].seq


def test_once_with_reasoning_replay_records_fingerprints_for_the_pending_call(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(THREAD))
    container = make_container(REPLAY)
    with ScriptedServer([Reply.sse(REASONING_THEN_CALL)]) as server:
        result = turnwire.api.run(
            path, container=container, base_url=server.base_url, save=True, once=True
        )
    (thought,) = result.records.thoughts
    assert len(thought.payload.prefix_fingerprint) == 64
    assert result.records.tool_calls[0].result is None
    with ScriptedServer([Reply.sse(REASONING_THEN_TEXT)]) as server:
        turnwire.api.run(
            path,
            container=container,
            base_url=server.base_url,
            save=True,
            handlers={"weather": lambda location: "40 C"},
        )
    kinds = [i.get("type") for i in server.requests[0].json["input"]]
    assert kinds == ["message", "reasoning", "function_call", "function_call_output"]


def test_the_phase_of_an_assistant_message_is_recorded_and_replayed(tmp_path):
    stream = recorded("phase_commentary_function_call_gpt-5.5.sse")
    path = tmp_path / "t.json"
    path.write_text(json.dumps({**THREAD, "model": "gpt-5.5"}))
    container = make_container(REPLAY)
    with ScriptedServer([Reply.sse(stream)]) as server:
        result = turnwire.api.run(
            path, container=container, base_url=server.base_url, save=True, once=True
        )
    (message,) = result.records.messages
    assert message.phase == "commentary"
    saved = msgspec.structs.replace(turnwire.load_thread(path), tool_calls=())  # call not run
    body = turnwire.render(saved, container=container).json
    validate_body(body)
    replayed = [i for i in body["input"] if i.get("role") == "assistant"]
    assert replayed and all(i["phase"] == "commentary" for i in replayed)


def test_each_request_is_rendered_once_and_stamps_the_reasoning_before_it(tmp_path, monkeypatch):
    """The render that builds a request also fingerprints the reasoning the last response
    brought: two requests, one more render to stamp the last answer's reasoning, no more."""
    from turnwire.rendering import pipeline

    renders = []
    real = pipeline._build_input

    def counted(thread, plan, options, memo, pending=frozenset()):
        renders.append(pending)
        return real(thread, plan, options, memo, pending)

    monkeypatch.setattr(pipeline, "_build_input", counted)
    saved, requests = _run(tmp_path, REPLAY)
    assert len(requests) == 2
    first, second = saved.thoughts
    assert [set(p) for p in renders] == [set(), {first.id}, {second.id}]
    # what the second request was checked against is what a fresh render computes
    from ..conftest import prefix_fingerprint

    before = msgspec.structs.replace(
        saved,
        messages=saved.messages[:1],
        thoughts=(),
        tool_calls=(),
    )
    assert first.payload.prefix_fingerprint == prefix_fingerprint(before, REPLAY)
    assert [i.get("type") for i in requests[1].json["input"]][1] == "reasoning"


def test_a_stale_old_reasoning_item_does_not_spoil_the_new_ones_fingerprint(tmp_path):
    """The new reasoning's fingerprint is taken over the prefix the next request really sends,
    in which an old, stale reasoning item is dropped (not over one that keeps it)."""
    stale = {
        **THREAD,
        "messages": [
            {**THREAD["messages"][0], "id": "u0", "created_at": "2026-01-01T09:00:00Z"},
            {
                "id": "msg_old",
                "role": "assistant",
                "content": "Earlier answer.",
                "created_at": "2026-01-01T09:00:01Z",
                "seq": 1,
            },
            THREAD["messages"][0],
        ],
        "thoughts": [
            {
                "id": "rs_old",
                "created_at": "2026-01-01T09:00:01Z",
                "replay_compatibility": "openai-responses-reasoning-v1",
                "payload": {
                    "variant": "responses-reasoning",
                    "paired_item_id": "msg_old",
                    "prefix_fingerprint": "0" * 64,
                    "item": {
                        "type": "reasoning",
                        "id": "rs_old",
                        "summary": [],
                        "encrypted_content": "gAAAA-old",
                    },
                },
            }
        ],
    }
    path = tmp_path / "t.json"
    path.write_text(json.dumps(stale))
    with ScriptedServer([Reply.sse(REASONING_THEN_CALL), Reply.sse(REASONING_THEN_TEXT)]) as s:
        turnwire.api.run(
            path,
            container=make_container(REPLAY),
            base_url=s.base_url,
            save=True,
            handlers={"weather": lambda location: "40 C"},
        )
    second = s.requests[1].json["input"]
    ids = [i.get("id") for i in second if i.get("type") == "reasoning"]
    assert ids == [turnwire.load_thread(path).thoughts[1].id]  # the new one, not rs_old
