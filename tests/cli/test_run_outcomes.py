"""``turnwire run`` exits 1 with the error line last when a run is no success: an answer whose
stream never finished (nothing saved or stored), and a run stopped at
``client.max_iterations`` with the model still calling tools (what it recorded saved or
stored first)."""

from __future__ import annotations

import json
from pathlib import Path

import turnwire

from ..client.server import Reply, ScriptedServer, recorded
from ..conftest import turnwire_process

TEXT = recorded("text_simple_gpt-4o-mini.sse")
CALL = recorded("function_call_legacy_noseq_gpt-4o.sse")

THREAD = """\
version: 1
model: gpt-4o
tools:
  - {name: get_capital, parameters: {type: object, properties: {country: {type: string}}}}
messages:
  - {id: u1, role: user, content: "What's the capital?", created_at: "2026-01-01T10:00:00Z"}
"""


def _config(folder: Path) -> Path:
    config = folder / "c.yaml"
    config.write_text(
        "plugins: {load_entrypoints: false}\nclient: {max_iterations: 2, retry: {max_retries: 2}}\n"
    )
    return config


def _unfinished() -> bytes:
    end = TEXT.index(b'"type":"response.output_text.done"')
    return TEXT[: TEXT.rindex(b"event: ", 0, end)]


def test_an_unfinished_stream_exits_1_and_saves_nothing(tmp_path):
    thread = tmp_path / "t.yaml"
    thread.write_text(THREAD)
    with ScriptedServer([Reply.sse(_unfinished())]) as server:
        done = turnwire_process(
            "run", str(thread), "--base-url", server.base_url, "--config", str(_config(tmp_path)),
            "--save",
        )  # fmt: skip
    assert done.returncode == 1, done.stderr
    last = done.stderr.splitlines()[-1]
    assert last.startswith("error: E_OPENAI_RESPONSES_STREAM_ERROR: stream error: the stream ")
    assert "nothing of it was recorded" in last
    assert "Traceback" not in done.stderr
    assert done.stdout.startswith("Hi in Portuguese")  # streamed as it came, never saved
    assert thread.read_text() == THREAD
    assert len(server.requests) == 1


def test_an_unfinished_stream_stores_no_turn(tmp_path):
    db = tmp_path / "t.db"
    from turnwire.store.sqlite import SQLiteStore

    with SQLiteStore(db) as store:
        thread_id = store.create_thread(turnwire.load_thread({"version": 1, "model": "gpt-4o"}))
    with ScriptedServer([Reply.sse(_unfinished())]) as server:
        done = turnwire_process(
            "run", "--thread", thread_id, "--store", str(db), "--prompt", "hi", "--json",
            "--base-url", server.base_url, "--config", str(_config(tmp_path)),
        )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1].startswith("error: E_OPENAI_RESPONSES_STREAM_ERROR: ")
    assert json.loads(done.stdout)["error"]["code"] == "E_OPENAI_RESPONSES_STREAM_ERROR"
    with SQLiteStore(db) as store:
        assert store.turns(thread_id) == []


def test_the_iteration_limit_saves_then_exits_1(tmp_path):
    thread = tmp_path / "t.yaml"
    thread.write_text(THREAD)
    with ScriptedServer([Reply.sse(CALL)]) as server:
        done = turnwire_process(
            "run", str(thread), "--base-url", server.base_url, "--config", str(_config(tmp_path)),
            "--save",
        )  # fmt: skip
    assert done.returncode == 1, done.stderr
    last = done.stderr.splitlines()[-1]
    assert last.startswith("error: E_MAX_ITERATIONS: the run stopped after 2 requests ")
    assert len(server.requests) == 2
    saved = turnwire.load_thread(thread)
    assert len(saved.tool_calls) == 2 and all(call.result for call in saved.tool_calls)


def test_the_iteration_limit_appends_to_a_stored_thread_then_exits_1(tmp_path):
    db = tmp_path / "t.db"
    from turnwire.store.sqlite import SQLiteStore

    header = turnwire.load_thread(
        {"version": 1, "model": "gpt-4o", "tools": [{"name": "get_capital"}]}
    )
    with SQLiteStore(db) as store:
        thread_id = store.create_thread(header)
    with ScriptedServer([Reply.sse(CALL)]) as server:
        done = turnwire_process(
            "run", "--thread", thread_id, "--store", str(db), "--prompt", "hi",
            "--base-url", server.base_url, "--config", str(_config(tmp_path)),
        )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines()[-1].startswith("error: E_MAX_ITERATIONS: ")
    with SQLiteStore(db) as store:
        stored = store.load(thread_id)
    assert stored.messages[0].content == "hi"
    assert len(stored.tool_calls) == 2 and all(call.result for call in stored.tool_calls)
