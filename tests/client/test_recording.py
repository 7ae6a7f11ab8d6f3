"""Recording: a generation into thread records, and the next request rendered from them. Reasoning
is paired and fingerprinted, the phase of a message kept, usage per generation and for the run, tool
call ids made unique (``filter_tool_call_id``), an incomplete answer recorded with its reason, and
every hosted item of every recorded stream that has them kept whole (as ``output_item.done`` gave
it) and replayed in place."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pytest

import turnwire
from turnwire import hookimpl
from turnwire.model.hosted import INPUT_FIELDS, input_item
from turnwire.model.records import Message

from ..conftest import CONFORMANCE, REPLAY, make_container, thread, user
from ..oracle import validate_body
from .conftest import AFTER_CALL, CALL, TEXT, run
from .server import Reply, ScriptedServer, recorded
from .streams import payloads


def test_usage_per_generation_and_for_the_run(thread_file):
    cached = CALL.replace(b'"cached_tokens":0', b'"cached_tokens":200')
    assert cached != CALL
    with ScriptedServer([Reply.sse(cached), Reply.sse(AFTER_CALL)]) as server:
        result = run(server, thread_file)
    first, second = result.generations
    assert (first.provider, first.model, first.finish_reason) == (
        "openai_responses",
        "gpt-4o-2024-08-06",
        "tool_calls",
    )
    assert second.finish_reason == "stop"
    assert (first.usage.input_tokens, first.usage.cached_tokens) == (255, 200)
    assert (first.usage.prompt_tokens, first.usage.completion_tokens) == (55, 16)
    assert first.usage.total_tokens == 271
    assert first.record_ids == (result.records.tool_calls[0].id,)
    assert second.record_ids == (result.records.messages[0].id,)
    assert result.usage.prompt_tokens == 55 + 278
    assert result.usage.completion_tokens == 16 + 9
    assert result.usage.total_tokens == 271 + 287


def test_hook_filter_tool_call_id(thread_file):
    """A plugin decides the id a tool call is stored under."""

    class Prefixer:
        @hookimpl
        def filter_tool_call_id(self, tool_call_id):
            return "x-" + tool_call_id

    container = make_container(extra_plugins=[Prefixer()])
    with ScriptedServer([Reply.sse(CALL), Reply.sse(AFTER_CALL)]) as server:
        result = run(server, thread_file, container=container)
    assert result.records.tool_calls[0].id.startswith("x-call_")


def test_an_incomplete_stream_is_recorded_with_its_reason(tmp_path):
    incomplete = (
        TEXT.replace(b"response.completed", b"response.incomplete")
        .replace(b'"status":"completed","background"', b'"status":"incomplete","background"')
        .replace(
            b'"incomplete_details":null,"instructions":null,"max_output_tokens":4000,"max_tool_calls'
            b'":null,"model":"gpt-4o-mini-2024-07-18","moderation":null,"output":[{',
            b'"incomplete_details":{"reason":"max_output_tokens"},"instructions":null,'
            b'"max_output_tokens":4000,"max_tool_calls":null,"model":"gpt-4o-mini-2024-07-18",'
            b'"moderation":null,"output":[{',
            1,
        )
    )
    assert b"response.incomplete" in incomplete and b'"reason":"max_output_tokens"' in incomplete
    t = thread(model="gpt-4o-mini", messages=[user()])
    with ScriptedServer([Reply.sse(incomplete)]) as server:
        result = turnwire.api.run(t, container=make_container(), base_url=server.base_url)
    assert result.response.finish_reason == "length"
    assert result.response.usage["output_tokens"] > 0
    assert result.records.messages


REASONING_THEN_CALL = recorded("reasoning_summary_encrypted_function_call_gpt-5.sse")


REASONING_THEN_TEXT = recorded("reasoning_summary_encrypted_text_turn2_gpt-5.sse")


ROUND_THREAD = {
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
    path.write_text(json.dumps(ROUND_THREAD))
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
    path.write_text(json.dumps(ROUND_THREAD))
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
    path.write_text(json.dumps({**ROUND_THREAD, "model": "gpt-5.5"}))
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

    def counted(thread, plan, options, memo, pending, *rest):
        renders.append(pending)
        return real(thread, plan, options, memo, pending, *rest)

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
        **ROUND_THREAD,
        "messages": [
            {**ROUND_THREAD["messages"][0], "id": "u0", "created_at": "2026-01-01T09:00:00Z"},
            {
                "id": "msg_old",
                "role": "assistant",
                "content": "Earlier answer.",
                "created_at": "2026-01-01T09:00:01Z",
                "seq": 1,
            },
            ROUND_THREAD["messages"][0],
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


def _hosted_run(path: Path, stream: bytes) -> list:
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
    _hosted_run(path, recorded(name))
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
            allowed = [k for k in original if k in INPUT_FIELDS[item["type"]]]
            assert list(item) == [k for k in allowed if k in item]
            # only a null is left out (where the input shape has the field optional)
            assert all(original[k] is None for k in allowed if k not in item)
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
    _hosted_run(path, recorded(name))
    _ask(path, "Thanks. And tomorrow?")
    requests = _hosted_run(path, FOLLOW_UP)
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
    _hosted_run(path, recorded("web_search_reasoning_gpt-5.sse"))
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
    _hosted_run(path, recorded("mcp_call_o4-mini.sse"))
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
    _hosted_run(path, recorded(name))
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
    from turnwire.model.hosted import is_sealed, thread_anchor

    path = _question(tmp_path)
    _hosted_run(path, recorded("web_search_reasoning_gpt-5.sse"))
    saved = turnwire.load_thread(path)
    nonce, anchor = make_container(REPLAY).envelope_nonce(), thread_anchor(saved)
    assert saved.hosted_items and all(is_sealed(h, nonce, anchor) for h in saved.hosted_items)
    (search,) = saved.hosted_items
    edited = msgspec.structs.replace(
        search, item={**search.item, "action": {"type": "search", "query": "something else"}}
    )
    body = turnwire.render(
        msgspec.structs.replace(saved, hosted_items=(edited,)), container=make_container(REPLAY)
    ).json
    assert "web_search_call" not in [i.get("type") for i in body["input"]]


def test_a_sealed_item_copied_into_another_thread_goes_as_text_a_copy_of_its_thread_keeps_it(
    tmp_path,
):
    """A seal binds an item to the thread it was recorded in (its opening record): moved into
    another thread it is text with a warning; the whole thread copied (a fork) still replays."""
    path = _question(tmp_path)
    _hosted_run(path, recorded("web_search_reasoning_gpt-5.sse"))
    saved = turnwire.load_thread(path)
    (search,) = saved.hosted_items
    container = make_container(REPLAY)

    def sent(thread) -> tuple[list, tuple]:
        rendered = turnwire.render(thread, container=container)
        types = [i.get("type") for i in rendered.json["input"]]
        return types, rendered.rendered.warnings

    types, _ = sent(saved)
    assert "web_search_call" in types
    fork = msgspec.structs.replace(saved)  # threads copy keeps every record
    assert "web_search_call" in sent(fork)[0]
    # another thread: its own opening question, the sealed search (and its reasoning) pasted in
    first = saved.messages[0]
    other = msgspec.structs.replace(
        saved,
        messages=(msgspec.structs.replace(first, id="someone-else"), *saved.messages[1:]),
    )
    types, warnings = sent(other)
    assert "web_search_call" not in types
    assert any(search.id in w and "in this thread" in w for w in warnings)
    # nor when the copy is dated otherwise
    later = msgspec.structs.replace(
        saved,
        messages=(
            msgspec.structs.replace(first, created_at=first.created_at.replace(year=2025)),
            *saved.messages[1:],
        ),
    )
    assert "web_search_call" not in sent(later)[0]


def test_fingerprint_seal_hosted_makes_a_trusted_files_items_replay(tmp_path):
    from ..conftest import turnwire_process

    path = _question(tmp_path)
    _hosted_run(path, recorded("web_search_reasoning_gpt-5.sse"))
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
    """A stream cut after a web search's ``output_item.added``: the answer never finished, so
    nothing of it is recorded, and the partial output on the error drops the call as opened
    (no ``action``) with a warning."""
    path = _question(tmp_path)
    before = path.read_bytes()
    data = _cut_after_second_hosted_added("web_search_annotations_gpt-5.2.sse")
    with (
        ScriptedServer([Reply.sse(data)]) as server,
        pytest.raises(turnwire.errors.StreamError) as caught,
    ):
        turnwire.api.run(
            path, container=make_container(REPLAY), base_url=server.base_url, save=True, once=True
        )
    partial = caught.value.partial
    assert partial.hosted_items  # the first search finished: it is in the partial output
    assert all(h.item.get("status") != "in_progress" for h in partial.hosted_items)
    assert any(r.__dict__.get("kind") == "unfinished-hosted-item" for r in caplog.records)
    assert path.read_bytes() == before


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
    requests = _hosted_run(path, recorded(name))
    (call,) = turnwire.load_thread(path).tool_calls
    assert call.namespace == "get_exchange_rate"
    (sent,) = [i for i in requests[1].json["input"] if i["type"] == "function_call"]
    assert sent["call_id"] == emitted["call_id"]
    assert sent["namespace"] == "get_exchange_rate"
    validate_body(requests[1].json)
