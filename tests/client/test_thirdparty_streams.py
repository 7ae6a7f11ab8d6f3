"""Streams recorded from third-party ``/responses`` bridges, through the decoder and the CLI.

The files in tests/data/thirdparty come from litellm's proxy and open-responses-server, each
run locally in front of a scripted chat-completions backend (scripts/record_thirdparty.py;
origins, versions and licences in tests/data/thirdparty/SOURCES.md). Each stream must give the
records its own terminal response implies: for every ``function_call`` in
``response.completed``'s ``output`` a tool call with the same ``call_id``, name and arguments,
and for every ``message`` its text.

open-responses-server never sends ``response.output_item.added`` / ``.done``: its items exist
only in the ``response.in_progress`` snapshots and the terminal response, from which turnwire
rebuilds them (with a warning); its function calls carry the status ``ready``, which the spec
lacks and turnwire keeps. litellm ends its streams with Chat Completions' ``data: [DONE]``,
which turnwire passes over in silence.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import msgspec
import pytest

from turnwire.client.sse import SSEDecoder
from turnwire.wire.accumulator import ResponseAccumulator
from turnwire.wire.events import decode_event
from turnwire.wire.response import Generation

from ..conftest import turnwire_process
from .server import Reply, ScriptedServer

THIRDPARTY = Path(__file__).resolve().parents[1] / "data" / "thirdparty"
STREAMS = sorted(THIRDPARTY.glob("*.sse"))
CHUNKS = (1, 7, 4096)
THREAD = """\
version: 1
model: scripted-chat
tools:
  - {name: get_weather, description: "Current weather for a city",
     parameters: {type: object, properties: {city: {type: string}}, required: [city]}}
messages:
  - {id: u1, role: user, content: "What's the weather in Paris?",
     created_at: "2026-01-01T10:00:00Z"}
"""


def _cases() -> list[object]:
    return [pytest.param(path, id=path.stem) for path in STREAMS]


def payloads(path: Path) -> list[dict]:
    """Every JSON event payload in the file (``data: [DONE]`` left out)."""
    out = []
    for block in path.read_text().split("\n\n"):
        data = "\n".join(line[6:] for line in block.split("\n") if line.startswith("data: "))
        if data and data != "[DONE]":
            out.append(json.loads(data))
    return out


def terminal(path: Path) -> dict:
    completed = [p for p in payloads(path) if p["type"] == "response.completed"]
    assert len(completed) == 1
    return completed[0]["response"]


def expected(response: dict) -> tuple[list[tuple[str, str, str]], list[str]]:
    """(call_id, name, arguments) per function_call and the text per message, in order."""
    calls, texts = [], []
    for item in response["output"]:
        if item["type"] == "function_call":
            calls.append((item["call_id"], item["name"], item["arguments"]))
        elif item["type"] == "message":
            parts = [p["text"] for p in item["content"] if p["type"] == "output_text"]
            texts.append("".join(parts))
    return calls, texts


def parse(data: bytes, chunk: int) -> tuple[list[Generation], list[bytes]]:
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
    names = {path.stem for path in STREAMS}
    for server in ("litellm", "ors"):
        for scenario in ("text", "tool_call", "text_after_tool", "parallel_tool_calls"):
            assert f"{server}_{scenario}" in names
    for path in STREAMS:
        request = json.loads(path.with_suffix(".request.json").read_bytes())
        assert (request["stream"], request["store"]) == (True, False)
        assert [t["type"] for t in request["tools"]] == ["function"]


def test_the_files_are_the_bytes_the_manifest_recorded():
    manifest = json.loads((THIRDPARTY / "manifest.json").read_text())
    rows = {row["file"]: row for server in manifest.values() for row in server["recordings"]}
    assert sorted(rows) == [path.name for path in STREAMS]
    for path in STREAMS:
        raw = path.read_bytes()
        row = rows[path.name]
        assert (row["status"], row["content_encoding"]) == (200, None)
        assert row["content_type"].startswith("text/event-stream")
        assert (len(raw), hashlib.sha256(raw).hexdigest()) == (row["bytes"], row["sha256"])


def test_each_file_is_attributed_with_version_and_licence():
    sources = (THIRDPARTY / "SOURCES.md").read_text()
    manifest = json.loads((THIRDPARTY / "manifest.json").read_text())
    assert [p.name for p in STREAMS if f"`{p.name}`" not in sources] == []
    assert manifest["litellm"]["versions"]["litellm"] in sources
    assert manifest["ors"]["versions"]["open-responses-server"] in sources
    assert sources.count("MIT") >= 2


@pytest.mark.parametrize("chunk", CHUNKS)
@pytest.mark.parametrize("path", _cases())
def test_stream_gives_the_records_its_terminal_response_implies(path, chunk):
    generations, skipped = parse(path.read_bytes(), chunk)
    response = terminal(path)
    calls, texts = expected(response)
    assert calls or texts  # the stream has something to record
    assert set(skipped) <= {b"[DONE]"}
    assert len(generations) == 1
    generation = generations[0]
    assert generation.terminal == "completed"
    assert (generation.response_id, generation.status) == (response["id"], response["status"])
    assert (generation.model, generation.usage) == (response["model"], response["usage"])
    assert [(c.call_id, c.name, c.arguments) for c in generation.tool_calls] == calls
    assert [m.text for m in generation.messages] == texts


@pytest.mark.parametrize("path", _cases())
def test_run_once_json_records_what_the_terminal_response_implies(tmp_path, path):
    thread = tmp_path / "t.yaml"
    thread.write_text(THREAD)
    config = tmp_path / "c.yaml"
    config.write_text("plugins: {load_entrypoints: false}\nclient: {retry: {max_retries: 0}}\n")
    with ScriptedServer([Reply.sse(path.read_bytes())]) as server:
        done = turnwire_process(
            "run", str(thread), "--base-url", server.base_url, "--config", str(config),
            "--once", "--json",
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    response = terminal(path)
    calls, texts = expected(response)
    assert printed["response"]["id"] == response["id"]
    assert printed["response"]["usage"] == response["usage"]
    assert printed["response"]["finish_reason"] == ("tool_calls" if calls else "stop")
    records = printed["records"]
    assert [m["content"] for m in records["messages"]] == [t for t in texts if t]
    recorded = [(c["id"].split("|")[0], c["tool"], c["args"]) for c in records["tool_calls"]]
    assert recorded == [(i, n, json.loads(a)) for i, n, a in calls]
    assert all("result" not in c for c in records["tool_calls"])  # --once: not run
    assert thread.read_text() == THREAD


def test_the_closing_done_sentinel_is_not_reported_as_a_malformed_frame(tmp_path):
    path = THIRDPARTY / "litellm_text.sse"
    data = path.read_bytes()
    assert data.endswith(b"data: [DONE]\n\n")
    thread = tmp_path / "t.yaml"
    thread.write_text(THREAD)
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
