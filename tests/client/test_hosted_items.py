"""Hosted items through a real run: every recorded stream that has them, on a local server.

Each stream is answered to a one-question thread file; the saved thread must hold every hosted
item exactly as ``output_item.done`` gave it, and the next request (rendered from the saved
file, then sent on a second run) must replay each one in position, paired with the reasoning
item that preceded it, in the shape of the recorded accepted requests.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pytest

import turnwire
from turnwire.model.hosted import INPUT_FIELDS, input_item
from turnwire.model.records import Message

from ..conftest import CONFORMANCE, REPLAY, make_container
from ..oracle import validate_body
from .server import Reply, ScriptedServer, recorded
from .streams import payloads

HOSTED_STREAMS = (
    "web_search_reasoning_gpt-5.sse",
    "web_search_annotations_gpt-5.2.sse",
    "file_search_annotations_gpt-4o.sse",
    "code_interpreter_reasoning_gpt-5.sse",
    "mcp_call_o4-mini.sse",
    "tool_search_function_call_gpt-5.4.sse",
)
FOLLOW_UP = recorded("text_simple_gpt-4o-mini.sse")
SLOT_TYPES = {"message", "reasoning", "function_call"}


def _done_items(name: str) -> list[dict]:
    path = CONFORMANCE / "streams" / name
    return [p["item"] for p in payloads(path) if p["type"] == "response.output_item.done"]


def _question(tmp_path: Path) -> Path:
    path = tmp_path / "t.json"
    thread = {
        "version": 1,
        "model": "gpt-5",
        "messages": [
            {
                "id": "u1",
                "role": "user",
                "content": "Look it up.",
                "created_at": "2026-01-01T10:00:00Z",
            }
        ],
    }
    path.write_text(json.dumps(thread))
    return path


def _run(path: Path, stream: bytes) -> list:
    """One run of the thread file at ``path``; a function call the stream makes is answered
    (an unknown tool: an error result) and the follow-up answer ends the run."""
    with ScriptedServer([Reply.sse(stream), Reply.sse(FOLLOW_UP)]) as server:
        turnwire.api.run(
            path, container=make_container(REPLAY), base_url=server.base_url, save=True
        )
    return server.requests


def _ask(path: Path, question: str) -> None:
    saved = turnwire.load_thread(path)
    asked = Message(id="u2", role="user", content=question, created_at=datetime.now(UTC))
    updated = msgspec.structs.replace(saved, messages=(*saved.messages, asked))
    path.write_bytes(msgspec.json.encode(updated))


@pytest.mark.parametrize("name", HOSTED_STREAMS)
def test_every_hosted_item_is_recorded_whole_and_replayed_in_place(tmp_path, name):
    done = _done_items(name)
    path = _question(tmp_path)
    _run(path, recorded(name))
    saved = turnwire.load_thread(path)

    hosted = [item for item in done if item["type"] not in SLOT_TYPES]
    assert hosted, name
    assert [(h.type, h.id) for h in saved.hosted_items] == [(i["type"], i["id"]) for i in hosted]
    assert [h.item for h in saved.hosted_items] == hosted  # lossless

    # Every reasoning item names the item that followed it, hosted ones included.
    for thought in saved.thoughts:
        index = next(i for i, item in enumerate(done) if item.get("id") == thought.id)
        assert thought.payload is not None
        assert thought.payload.paired_item_id == done[index + 1]["id"]

    body = turnwire.render(saved, container=make_container(REPLAY)).json
    validate_body(body)
    sent = body["input"][1:]  # after the question
    # Output order, each hosted item with its id, every reasoning item kept; a message keeps
    # its id only right after its reasoning (function calls, pending here, are left out).
    expected = [
        (item["type"], item["id"] if item["type"] != "message" or after_reasoning else None)
        for item, after_reasoning in zip(
            done, [False] + [d["type"] == "reasoning" for d in done], strict=False
        )
        if item["type"] != "function_call"
    ]
    calls = ("function_call", "function_call_output")
    replayed = [(i.get("type"), i.get("id")) for i in sent if i.get("type") not in calls]
    assert replayed[: len(expected)] == expected
    for item in sent:
        if item["type"] in INPUT_FIELDS:
            original = next(h for h in hosted if h["id"] == item["id"])
            assert list(item) == [k for k in original if k in INPUT_FIELDS[item["type"]]]
            assert item == input_item(original)  # as emitted, within the input shape
            if item["type"] == "web_search_call":  # the API's own feeds are not sent back
                assert all(s["type"] == "url" for s in item["action"].get("sources", []))
    assert [i["type"] for i in sent].count("reasoning") == len(saved.thoughts)


@pytest.mark.parametrize(
    ("name", "accepted"),
    [
        ("web_search_reasoning_gpt-5.sse", "reasoning_replay_web_search_call_gpt-5.json"),
        (
            "code_interpreter_reasoning_gpt-5.sse",
            "reasoning_replay_code_interpreter_call_gpt-5.json",
        ),
    ],
)
def test_the_next_request_has_the_shape_the_api_accepted(tmp_path, name, accepted):
    """Field for field like the recorded accepted request: the same item types in the same
    order, each with the same keys (the values are another conversation's)."""
    path = _question(tmp_path)
    _run(path, recorded(name))
    _ask(path, "Thanks. And tomorrow?")
    requests = _run(path, FOLLOW_UP)
    assert len(requests) == 1  # no reasoning-free retry
    sent = requests[0].json["input"]
    validate_body(requests[0].json)
    recorded_input = json.loads((CONFORMANCE / "requests" / accepted).read_text())["input"]

    # This conversation made more calls than the recorded one: each item has the keys its
    # type has there, and each reasoning item is followed by its hosted call, as there.
    keys = {i.get("type", "message"): sorted(set(i) - {"phase"}) for i in recorded_input[1:-1]}
    first_turn = sent[1 : sent.index(next(i for i in sent[1:] if i.get("role") == "user"))]
    for item in first_turn:
        kind = item.get("type", "message")
        if kind in keys and "id" in item:
            assert sorted(set(item) - {"phase"}) == keys[kind], kind
    hosted_type = recorded_input[2]["type"]
    assert [i["type"] for i in first_turn[:2]] == ["reasoning", hosted_type]
    assert recorded_input[1]["type"] == "reasoning"


def test_a_stale_reasoning_item_sends_its_hosted_partner_as_text(tmp_path):
    """The API refuses a hosted call whose reasoning is missing: when the prefix changed, the
    reasoning goes and so does the call's item form; its text form stands in."""
    path = _question(tmp_path)
    _run(path, recorded("web_search_reasoning_gpt-5.sse"))
    saved = turnwire.load_thread(path)
    changed = msgspec.structs.replace(saved, system_prompt="Something else entirely.")
    body = turnwire.render(changed, container=make_container(REPLAY)).json
    kinds = [i.get("type") for i in body["input"]]
    assert "reasoning" not in kinds
    assert "web_search_call" not in kinds
    texts = [i["content"] for i in body["input"] if i.get("role") == "assistant"]
    assert any(t.startswith("[web_search_call ws_") and "San Francisco" in t for t in texts)
    assert all("id" not in i for i in body["input"])


def test_hosted_items_survive_the_store(tmp_path):
    """Through ``threads import`` and ``run --thread``: the store keeps them as turns."""
    from turnwire.store import open_store

    path = _question(tmp_path)
    _run(path, recorded("mcp_call_o4-mini.sse"))
    saved = turnwire.load_thread(path)
    with open_store(str(tmp_path / "db.sqlite")) as store:
        thread_id = store.import_thread(saved)
        loaded = store.load(thread_id)
        assert loaded.hosted_items == saved.hosted_items
        assert store.export_thread(thread_id).hosted_items == saved.hosted_items


@pytest.mark.parametrize(
    ("name", "as_items", "as_text"),
    [
        # one reasoning item, then three calls: each needs that reasoning
        ("code_interpreter_reasoning_gpt-5.sse", [], ["code_interpreter_call"] * 3),
        # the listing came before any reasoning: it needs none and stays an item
        ("mcp_call_o4-mini.sse", ["mcp_list_tools"], ["mcp_call"]),
        # no reasoning in the response at all: every call stays an item
        ("web_search_annotations_gpt-5.2.sse", ["web_search_call"] * 2, []),
    ],
)
def test_without_their_reasoning_only_the_items_that_needed_it_go_as_text(
    tmp_path, name, as_items, as_text
):
    path = _question(tmp_path)
    _run(path, recorded(name))
    saved = turnwire.load_thread(path)
    changed = msgspec.structs.replace(saved, system_prompt="A changed prefix.")
    body = turnwire.render(changed, container=make_container(REPLAY)).json
    assert "reasoning" not in [i.get("type") for i in body["input"]]
    assert [i["type"] for i in body["input"] if i.get("type") in INPUT_FIELDS] == as_items
    texts = [i["content"] for i in body["input"] if i.get("role") == "assistant"]
    shown = [t[1:].split(" ", 1)[0] for t in texts if t.startswith("[")]
    assert shown == as_text
    # and with the prefix unchanged, every one of them goes as an item
    body = turnwire.render(saved, container=make_container(REPLAY)).json
    kinds = [i["type"] for i in body["input"] if i.get("type") in INPUT_FIELDS]
    assert sorted(kinds) == sorted(as_items + as_text)


def test_what_a_run_records_is_sealed_and_an_edited_copy_is_not(tmp_path):
    from turnwire.model.hosted import is_sealed

    path = _question(tmp_path)
    _run(path, recorded("web_search_reasoning_gpt-5.sse"))
    saved = turnwire.load_thread(path)
    nonce = make_container(REPLAY).envelope_nonce()
    assert saved.hosted_items and all(is_sealed(h, nonce) for h in saved.hosted_items)
    (search,) = saved.hosted_items
    edited = msgspec.structs.replace(
        search, item={**search.item, "action": {"type": "search", "query": "something else"}}
    )
    body = turnwire.render(
        msgspec.structs.replace(saved, hosted_items=(edited,)), container=make_container(REPLAY)
    ).json
    assert "web_search_call" not in [i.get("type") for i in body["input"]]


def test_fingerprint_seal_hosted_makes_a_trusted_files_items_replay(tmp_path):
    from ..conftest import turnwire_process

    path = _question(tmp_path)
    _run(path, recorded("web_search_reasoning_gpt-5.sse"))
    saved = turnwire.load_thread(path)
    # the same thread as another system would hand it over: no seals
    bare = tuple(msgspec.structs.replace(h, seal=None) for h in saved.hosted_items)
    path.write_bytes(msgspec.json.encode(msgspec.structs.replace(saved, hosted_items=bare)))
    config = tmp_path / "c.yaml"
    config.write_text(
        "plugins: {load_entrypoints: false}\n"
        "render: {reasoning_replay: encrypted, "
        "replay_compatibility: [openai-responses-reasoning-v1]}\n"
    )
    before = turnwire_process("render", str(path), "--config", str(config))
    assert before.returncode == 0, before.stderr
    assert '"type":"web_search_call"' not in before.stdout.replace(" ", "")
    done = turnwire_process("fingerprint", str(path), "--config", str(config), "--seal-hosted")
    assert done.returncode == 0, done.stderr
    assert "sealed 1 hosted items" in done.stderr
    after = turnwire_process("render", str(path), "--config", str(config))
    assert '"type":"web_search_call"' in after.stdout.replace(" ", "")


def _cut_after_second_hosted_added(name: str) -> bytes:
    """``name``'s stream cut right after its second hosted item's ``output_item.added``."""
    cut, added = [], 0
    for event in payloads(CONFORMANCE / "streams" / name):
        cut.append(event)
        if event["type"] == "response.output_item.added" and event["item"]["type"] != "message":
            added += 1
            if added == 2:
                break
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in cut)


def test_a_hosted_call_the_stream_never_finished_is_not_recorded(tmp_path, caplog):
    """A stream cut after a web search's ``output_item.added``: the call as opened (no
    ``action``) is dropped with a warning, so the saved thread still renders a valid request."""
    path = _question(tmp_path)
    data = _cut_after_second_hosted_added("web_search_annotations_gpt-5.2.sse")
    with ScriptedServer([Reply.sse(data)]) as server:
        turnwire.api.run(
            path, container=make_container(REPLAY), base_url=server.base_url, save=True, once=True
        )
    saved = turnwire.load_thread(path)
    assert all(h.item.get("status") != "in_progress" for h in saved.hosted_items)
    assert any(r.__dict__.get("kind") == "unfinished-hosted-item" for r in caplog.records)
    validate_body(turnwire.render(saved, container=make_container(REPLAY)).json)


def _stream_with(item_json: str) -> bytes:
    """text_simple's stream with one more output item (raw JSON) before its message."""
    events = payloads(CONFORMANCE / "streams" / "text_simple_gpt-4o-mini.sse")
    completed = dict(events[-1], response={**events[-1]["response"], "output": []})
    message = next(e for e in events if e["type"] == "response.output_item.done")["item"]
    frames = [
        json.dumps(events[0]),
        '{"type":"response.output_item.added","output_index":0,"item":' + item_json + "}",
        '{"type":"response.output_item.done","output_index":0,"item":' + item_json + "}",
        json.dumps({"type": "response.output_item.done", "output_index": 1, "item": message}),
        json.dumps(completed),
    ]
    return b"".join(b"data: " + f.encode() + b"\n\n" for f in frames)


def _nested(depth: int) -> str:
    value = "1"
    for _ in range(depth):
        value = '{"a":' + value + "}"
    return value


@pytest.mark.parametrize(
    ("depth", "error"),
    [(62, "nested deeper than 64 levels"), (3000, "nested too deeply to decode")],
)
def test_a_hosted_item_nested_past_the_thread_file_limit_is_refused(tmp_path, depth, error):
    """An MCP listing whose schema nests past what the thread file reads is refused before it is
    recorded (else the saved file would no longer load), naming where it sits."""
    path = _question(tmp_path)
    before = path.read_bytes()
    tools = '{"type":"mcp_list_tools","id":"mcpl_1","server_label":"s","tools":['
    item = tools + _nested(depth) + "]}"
    with (
        ScriptedServer([Reply.sse(_stream_with(item))]) as server,
        pytest.raises(turnwire.errors.StreamError, match=error) as caught,
    ):
        turnwire.api.run(
            path, container=make_container(REPLAY), base_url=server.base_url, save=True, once=True
        )
    if depth == 62:
        assert caught.value.field == "$.hosted_items[+0].item"
    assert path.read_bytes() == before
    turnwire.load_thread(path)


def test_a_citation_nested_past_the_thread_file_limit_is_refused(tmp_path):
    events = payloads(CONFORMANCE / "streams" / "text_simple_gpt-4o-mini.sse")
    done = next(e for e in events if e["type"] == "response.output_item.done")
    message = json.loads(json.dumps(done["item"]))
    message["content"][0]["annotations"] = [json.loads(_nested(62))]
    completed = dict(events[-1], response={**events[-1]["response"], "output": []})
    frames = [events[0], {**done, "item": message}, completed]
    data = b"".join(b"data: " + json.dumps(f).encode() + b"\n\n" for f in frames)
    path = _question(tmp_path)
    with (
        ScriptedServer([Reply.sse(data)]) as server,
        pytest.raises(turnwire.errors.StreamError, match="nested deeper") as caught,
    ):
        turnwire.api.run(
            path, container=make_container(REPLAY), base_url=server.base_url, save=True, once=True
        )
    assert caught.value.field == "$.messages[+0].annotations[0]"


def test_a_function_a_tool_search_loaded_goes_back_with_its_namespace(tmp_path):
    """The API refuses such a call without it ("Missing namespace for function_call ...
    Round-trip the model's function_call item with its namespace field included")."""
    name = "tool_search_function_call_gpt-5.4.sse"
    (emitted,) = [item for item in _done_items(name) if item["type"] == "function_call"]
    assert emitted["namespace"] == "get_exchange_rate"
    path = _question(tmp_path)
    requests = _run(path, recorded(name))
    (call,) = turnwire.load_thread(path).tool_calls
    assert call.namespace == "get_exchange_rate"
    (sent,) = [i for i in requests[1].json["input"] if i["type"] == "function_call"]
    assert sent["call_id"] == emitted["call_id"]
    assert sent["namespace"] == "get_exchange_rate"
    validate_body(requests[1].json)
