"""The output-slot state machine over recorded streams: each gives the items its own terminal
response lists, in three chunkings, the official types parse the same result, and sequence-number
gaps are noted.

The recorded Responses API streams are in tests/data/conformance/streams. The streams of third-party
``/responses`` bridges in tests/data/thirdparty come from litellm's proxy and open-responses-server,
each run locally in front of a scripted chat-completions backend (scripts/record_thirdparty.py;
origins, versions and licences in tests/data/thirdparty/SOURCES.md). Each stream must give the
records its own terminal response implies: for every ``function_call`` in ``response.completed``'s
``output`` a tool call with the same ``call_id``, name and arguments, and for every ``message`` its
text.

open-responses-server never sends ``response.output_item.added`` / ``.done``: its items exist only
in the ``response.in_progress`` snapshots and the terminal response, from which turnwire rebuilds
them (with a warning); its function calls carry the status ``ready``, which the spec lacks and
turnwire keeps. litellm ends its streams with Chat Completions' ``data: [DONE]``, which turnwire
passes over in silence."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import msgspec
import pytest

from turnwire.client.sse import SSEDecoder
from turnwire.wire.accumulator import ResponseAccumulator
from turnwire.wire.events import TextDelta, decode_event
from turnwire.wire.response import (
    Generation,
    HostedOutput,
    MessageOutput,
    ReasoningOutput,
    ToolCallOutput,
)

from ..client.server import Reply, ScriptedServer
from ..client.streams import STREAMS, parse, payloads, wire_bytes
from ..conftest import REPO, turnwire_process

CHUNKS = (1, 7, 4096)


TERMINALS = {"response.completed": "completed", "response.incomplete": "incomplete"}


def expected_responses(path):
    """Per response on the stream: (terminal event payload or None, done items by index)."""
    responses, done = [], {}
    for payload in payloads(path):
        kind = payload["type"]
        if kind == "response.output_item.done":
            done[payload["output_index"]] = payload["item"]
        elif kind in TERMINALS or kind in ("response.failed", "error"):
            responses.append((payload, done))
            done = {}
    return responses


@pytest.mark.parametrize("chunk", CHUNKS)
@pytest.mark.parametrize("path", STREAMS, ids=[p.name for p in STREAMS])
def test_stream_gives_the_items_its_terminal_response_lists(path, chunk):
    generations = parse(wire_bytes(path), chunk)
    expected = expected_responses(path)
    if path.name.startswith("error_then_failed"):
        assert [g.terminal for g in generations] == ["error"]
        assert generations[0].error_code == "insufficient_quota"
        assert "quota" in generations[0].error_message
        return
    assert len(generations) == len(expected)
    for generation, (terminal, done) in zip(generations, expected, strict=True):
        response = terminal["response"]
        assert generation.terminal == TERMINALS[terminal["type"]]
        assert generation.response_id == response["id"]
        assert generation.model == response["model"]
        assert generation.usage == response["usage"]
        assert generation.sequence_gaps == 0
        ours = {o.output_index: o for o in generation.outputs}
        hosted = []
        for index, item in enumerate(response["output"]):
            kind = item["type"]
            if kind == "message":
                out = ours[index]
                assert isinstance(out, MessageOutput)
                texts = [p["text"] for p in item["content"] if p["type"] == "output_text"]
                assert out.text == "".join(texts)
                assert (out.item_id, out.status, out.phase) == (
                    item["id"],
                    item["status"],
                    item.get("phase"),
                )
            elif kind == "reasoning":
                out = ours[index]
                assert isinstance(out, ReasoningOutput)
                assert out.item_id == item["id"]
                assert list(out.summary) == [p["text"] for p in item["summary"]]
                final = done[index].get("encrypted_content")
                assert out.encrypted_content == final
                if item.get("encrypted_content"):
                    assert len(out.encrypted_content) == len(item["encrypted_content"])
            elif kind == "function_call":
                out = ours[index]
                assert isinstance(out, ToolCallOutput)
                assert (out.call_id, out.name, out.arguments, out.item_id, out.status) == (
                    item["call_id"],
                    item["name"],
                    item["arguments"],
                    item["id"],
                    item["status"],
                )
            else:
                hosted.append(kind)
                out = ours[index]
                assert isinstance(out, HostedOutput)
                # kept whole, as output_item.done gave it
                assert (out.type, out.item_id, out.item) == (kind, item["id"], done[index])
        assert list(generation.hosted) == hosted


def test_the_four_back_to_back_responses_are_four_generations():
    path = next(p for p in STREAMS if "4_sequential" in p.name)
    generations = parse(wire_bytes(path), 4096)
    assert [len(g.tool_calls) for g in generations] == [1, 1, 1, 0]
    assert generations[0].reasoning[0].encrypted_content
    assert generations[3].text


# ------------------------------------------------------------------ the official types agree


def _sdk_response(payload):
    """The terminal response as the SDK builds it (its lenient ``construct_type``)."""
    from openai._models import construct_type
    from openai.types.responses import Response

    return construct_type(type_=Response, value=payload["response"])


@pytest.mark.parametrize(
    "path",
    [p for p in STREAMS if p.suffix == ".sse"],
    ids=[p.name for p in STREAMS if p.suffix == ".sse"],
)
def test_the_official_types_parse_the_same_result(path):
    generations = parse(wire_bytes(path), 4096)
    completed = [_sdk_response(p) for p in payloads(path) if p["type"] in TERMINALS]
    assert len(completed) == len(generations)
    for generation, response in zip(generations, completed, strict=True):
        assert generation.response_id == response.id
        assert generation.status == response.status
        sdk_calls = [
            (o.call_id, o.name, o.arguments) for o in response.output if o.type == "function_call"
        ]
        assert [(c.call_id, c.name, c.arguments) for c in generation.tool_calls] == sdk_calls
        sdk_text = "".join(
            c.text
            for o in response.output
            if o.type == "message"
            for c in o.content
            if c.type == "output_text"
        )
        assert generation.text == sdk_text
        sdk_summaries = [
            [s.text for s in o.summary] for o in response.output if o.type == "reasoning"
        ]
        assert [list(r.summary) for r in generation.reasoning] == sdk_summaries


def test_sequence_number_gaps_are_noted():
    accumulator = ResponseAccumulator()
    created = decode_event(
        json.dumps(
            {
                "type": "response.created",
                "sequence_number": 0,
                "response": {"id": "resp_1", "status": "in_progress"},
            }
        )
    )
    added = decode_event(
        json.dumps(
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "sequence_number": 1,
                "item": {"type": "message", "id": "msg_1"},
            }
        )
    )
    deltas = [
        TextDelta(output_index=0, delta=word, sequence_number=seq)
        for seq, word in ((2, "a"), (5, "b"), (6, "c"))
    ]
    accumulator.feed([created, added, *deltas])
    generation = accumulator.close()
    assert generation.sequence_gaps == 1 and generation.text == "abc"
    assert generation.terminal == "eof"


THIRDPARTY = REPO / "tests" / "data" / "thirdparty"


THIRDPARTY_STREAMS = sorted(THIRDPARTY.glob("*.sse"))


THIRDPARTY_THREAD = """\
version: 1
model: scripted-chat
tools:
  - {name: get_weather, description: "Current weather for a city",
     parameters: {type: object, properties: {city: {type: string}}, required: [city]}}
messages:
  - {id: u1, role: user, content: "What's the weather in Paris?",
     created_at: "2026-01-01T10:00:00Z"}
"""


def _thirdparty_cases() -> list[object]:
    return [pytest.param(path, id=path.stem) for path in THIRDPARTY_STREAMS]


def thirdparty_payloads(path: Path) -> list[dict]:
    """Every JSON event payload in the file (``data: [DONE]`` left out)."""
    out = []
    for block in path.read_text().split("\n\n"):
        data = "\n".join(line[6:] for line in block.split("\n") if line.startswith("data: "))
        if data and data != "[DONE]":
            out.append(json.loads(data))
    return out


def thirdparty_terminal(path: Path) -> dict:
    completed = [p for p in thirdparty_payloads(path) if p["type"] == "response.completed"]
    assert len(completed) == 1
    return completed[0]["response"]


def thirdparty_expected(response: dict) -> tuple[list[tuple[str, str, str]], list[str]]:
    """(call_id, name, arguments) per function_call and the text per message, in order."""
    calls, texts = [], []
    for item in response["output"]:
        if item["type"] == "function_call":
            calls.append((item["call_id"], item["name"], item["arguments"]))
        elif item["type"] == "message":
            parts = [p["text"] for p in item["content"] if p["type"] == "output_text"]
            texts.append("".join(parts))
    return calls, texts


def parse_thirdparty(data: bytes, chunk: int) -> tuple[list[Generation], list[bytes]]:
    """The generations, and the frames skipped as not JSON (as the client skips them)."""
    decoder, accumulator = SSEDecoder(), ResponseAccumulator()
    generations: list[Generation] = []
    skipped: list[bytes] = []

    def apply(raw_events: list) -> None:
        events = []
        for raw in raw_events:
            try:
                events.append(decode_event(raw.data))
            except msgspec.DecodeError:
                skipped.append(bytes(raw.data))
        generations.extend(accumulator.feed(events))

    for start in range(0, len(data), chunk):
        apply(decoder.feed(data[start : start + chunk]))
    apply(decoder.close())
    tail = accumulator.close()
    if tail is not None:
        generations.append(tail)
    return generations, skipped


def test_every_server_and_scenario_was_recorded_with_its_request():
    names = {path.stem for path in THIRDPARTY_STREAMS}
    for server in ("litellm", "ors"):
        for scenario in ("text", "tool_call", "text_after_tool", "parallel_tool_calls"):
            assert f"{server}_{scenario}" in names
    for path in THIRDPARTY_STREAMS:
        request = json.loads(path.with_suffix(".request.json").read_bytes())
        assert (request["stream"], request["store"]) == (True, False)
        assert [t["type"] for t in request["tools"]] == ["function"]


def test_the_files_are_the_bytes_the_manifest_recorded():
    manifest = json.loads((THIRDPARTY / "manifest.json").read_text())
    rows = {row["file"]: row for server in manifest.values() for row in server["recordings"]}
    assert sorted(rows) == [path.name for path in THIRDPARTY_STREAMS]
    for path in THIRDPARTY_STREAMS:
        raw = path.read_bytes()
        row = rows[path.name]
        assert (row["status"], row["content_encoding"]) == (200, None)
        assert row["content_type"].startswith("text/event-stream")
        assert (len(raw), hashlib.sha256(raw).hexdigest()) == (row["bytes"], row["sha256"])


def test_each_file_is_attributed_with_version_and_licence():
    sources = (THIRDPARTY / "SOURCES.md").read_text()
    manifest = json.loads((THIRDPARTY / "manifest.json").read_text())
    assert [p.name for p in THIRDPARTY_STREAMS if f"`{p.name}`" not in sources] == []
    assert manifest["litellm"]["versions"]["litellm"] in sources
    assert manifest["ors"]["versions"]["open-responses-server"] in sources
    assert sources.count("MIT") >= 2


@pytest.mark.parametrize("chunk", CHUNKS)
@pytest.mark.parametrize("path", _thirdparty_cases())
def test_stream_gives_the_records_its_terminal_response_implies(path, chunk):
    generations, skipped = parse_thirdparty(path.read_bytes(), chunk)
    response = thirdparty_terminal(path)
    calls, texts = thirdparty_expected(response)
    assert calls or texts  # the stream has something to record
    assert set(skipped) <= {b"[DONE]"}
    assert len(generations) == 1
    generation = generations[0]
    assert generation.terminal == "completed"
    assert (generation.response_id, generation.status) == (response["id"], response["status"])
    assert (generation.model, generation.usage) == (response["model"], response["usage"])
    assert [(c.call_id, c.name, c.arguments) for c in generation.tool_calls] == calls
    assert [m.text for m in generation.messages] == texts


@pytest.mark.parametrize("path", _thirdparty_cases())
def test_run_once_json_records_what_the_terminal_response_implies(tmp_path, path):
    thread = tmp_path / "t.yaml"
    thread.write_text(THIRDPARTY_THREAD)
    config = tmp_path / "c.yaml"
    config.write_text("plugins: {load_entrypoints: false}\nclient: {retry: {max_retries: 0}}\n")
    with ScriptedServer([Reply.sse(path.read_bytes())]) as server:
        done = turnwire_process(
            "run", str(thread), "--base-url", server.base_url, "--config", str(config),
            "--once", "--json",
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    response = thirdparty_terminal(path)
    calls, texts = thirdparty_expected(response)
    assert printed["response"]["id"] == response["id"]
    assert printed["response"]["usage"] == response["usage"]
    assert printed["response"]["finish_reason"] == ("tool_calls" if calls else "stop")
    records = printed["records"]
    assert [m["content"] for m in records["messages"]] == [t for t in texts if t]
    recorded = [(c["id"].split("|")[0], c["tool"], c["args"]) for c in records["tool_calls"]]
    assert recorded == [(i, n, json.loads(a)) for i, n, a in calls]
    assert all("result" not in c for c in records["tool_calls"])  # --once: not run
    assert thread.read_text() == THIRDPARTY_THREAD


def test_the_closing_done_sentinel_is_not_reported_as_a_malformed_frame(tmp_path):
    path = THIRDPARTY / "litellm_text.sse"
    data = path.read_bytes()
    assert data.endswith(b"data: [DONE]\n\n")
    thread = tmp_path / "t.yaml"
    thread.write_text(THIRDPARTY_THREAD)
    config = tmp_path / "c.yaml"
    config.write_text("plugins: {load_entrypoints: false}\nclient: {retry: {max_retries: 0}}\n")
    with ScriptedServer([Reply.sse(data, chunk=len(data))]) as server:  # [DONE] in one read
        done = turnwire_process(
            "run", str(thread), "--base-url", server.base_url, "--config", str(config),
            "--once", "--json",
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "not JSON" not in done.stderr
    assert "WARNING" not in done.stderr
