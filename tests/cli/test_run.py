"""``turnwire run`` as a process, against a local server playing every recorded stream: what it
prints, saves and shows on the terminal, and what it needs to start."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from ..client import conftest as client
from ..client.server import Reply, ScriptedServer, recorded
from ..client.streams import (
    INVOICE_SCHEMA,
    STREAMS,
    payloads,
    refusal_answer,
    text_answer,
    wire_bytes,
)
from ..conftest import REPO_EXAMPLES, turnwire_process, user

THREAD = """\
version: 1
model: gpt-5
messages:
  - {id: u1, role: user, content: "hello", created_at: "2026-01-01T10:00:00Z"}
"""


def turnwire_run(thread: Path, base_url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    config = thread.parent / "c.yaml"
    config.write_text("plugins: {load_entrypoints: false}\nclient: {retry: {max_retries: 0}}\n")
    return turnwire_process(
        "run", str(thread), "--base-url", base_url, "--config", str(config), *extra
    )


def _terminal(path: Path) -> dict:
    terminals = [
        p for p in payloads(path) if p["type"] in ("response.completed", "response.incomplete")
    ]
    return terminals[0]["response"]


OK_STREAMS = [p for p in STREAMS if not p.name.startswith("error_")]


SLOT_TYPES = ("message", "reasoning", "function_call")


@pytest.mark.parametrize("path", OK_STREAMS, ids=[p.name for p in OK_STREAMS])
def test_run_once_json_prints_records_that_match_the_terminal_response(tmp_path, path):
    thread = tmp_path / "t.yaml"
    thread.write_text(THREAD)
    with ScriptedServer([Reply.sse(wire_bytes(path))]) as server:
        done = turnwire_run(thread, server.base_url, "--once", "--json")
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    response = _terminal(path)
    assert printed["response"]["id"] == response["id"]
    assert printed["response"]["status"] == response["status"]
    assert printed["response"]["usage"] == response["usage"]
    (generation,) = printed["usage"]["generations"]
    raw = response["usage"]
    cached = raw["input_tokens_details"]["cached_tokens"]
    assert generation["usage"]["prompt_tokens"] == raw["input_tokens"] - cached
    assert generation["usage"]["completion_tokens"] == raw["output_tokens"]
    assert generation["response_id"] == response["id"]
    assert printed["usage"]["total"] == generation["usage"]
    records = printed["records"]
    messages = [o for o in response["output"] if o["type"] == "message"]
    texts = [
        "".join(p["text"] for p in m["content"] if p["type"] == "output_text") for m in messages
    ]
    assert [m["content"] for m in records["messages"]] == [t for t in texts if t]
    assert [m["id"] for m in records["messages"]] == [
        m["id"] for m, t in zip(messages, texts, strict=True) if t
    ]
    cited = [
        [a for p in m["content"] if p["type"] == "output_text" for a in p["annotations"]]
        for m, t in zip(messages, texts, strict=True)
        if t
    ]
    assert [m.get("annotations", []) for m in records["messages"]] == cited
    hosted = [o for o in response["output"] if o["type"] not in SLOT_TYPES]
    assert [(h["type"], h["id"], h["item"]["type"]) for h in records.get("hosted_items", [])] == [
        (o["type"], o["id"], o["type"]) for o in hosted
    ]
    calls = [o for o in response["output"] if o["type"] == "function_call"]
    assert [c["id"] for c in records["tool_calls"]] == [f"{c['call_id']}|{c['id']}" for c in calls]
    assert [c["args"] for c in records["tool_calls"]] == [json.loads(c["arguments"]) for c in calls]
    assert all("result" not in c for c in records["tool_calls"])  # --once: not run
    reasoning = [o for o in response["output"] if o["type"] == "reasoning"]
    shown = [o for o in reasoning if any(p["text"] for p in o["summary"])]
    assert [t["id"] for t in records["thoughts"]] == [o["id"] for o in shown]
    assert thread.read_text() == THREAD  # no --save


def test_run_streams_text_and_saves(tmp_path):
    thread = tmp_path / "t.yaml"
    thread.write_text(THREAD)
    path = next(p for p in STREAMS if p.name == "text_simple_gpt-4o-mini.sse")
    with ScriptedServer([Reply.sse(wire_bytes(path), chunk=64)]) as server:
        done = turnwire_run(thread, server.base_url, "--save")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Hi in Portuguese")
    assert "saved" in done.stderr
    assert "Hi in Portuguese" in thread.read_text()


def test_run_json_shows_the_cache_reads_writes_and_hit_ratio_per_generation_and_run(tmp_path):
    from ..test_api_caching import answer

    thread = tmp_path / "t.yaml"
    thread.write_text(THREAD)
    with ScriptedServer(
        [Reply.sse(answer("r1", input_tokens=1000, cached=750, written=200))]
    ) as server:
        done = turnwire_run(thread, server.base_url, "--once", "--json")
    assert done.returncode == 0, done.stderr
    usage = json.loads(done.stdout)["usage"]
    (generation,) = usage["generations"]
    for shown in (usage["total"], generation["usage"]):
        assert shown["input_tokens"] == 1000
        assert shown["cached_tokens"] == 750
        assert shown["cache_write_tokens"] == 200
        assert shown["cache_hit_ratio"] == 0.75


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("web_search_annotations_gpt-5.2.sse", "<https://"),
        ("file_search_annotations_gpt-4o.sse", "[1] file "),
    ],
)
def test_run_lists_the_citations_after_the_answer(tmp_path, name, expected):
    thread = tmp_path / "t.yaml"
    thread.write_text(THREAD)
    path = next(p for p in STREAMS if p.name == name)
    with ScriptedServer([Reply.sse(wire_bytes(path))]) as server:
        done = turnwire_run(thread, server.base_url, "--once")
    assert done.returncode == 0, done.stderr
    answer, _, sources = done.stdout.partition("\nSources:\n")
    assert answer.strip()
    lines = sources.splitlines()
    assert lines and all(line.startswith(f"  [{n}] ") for n, line in enumerate(lines, 1))
    assert expected in sources
    annotations = [
        a
        for p in payloads(path)
        if p["type"] == "response.output_item.done" and p["item"]["type"] == "message"
        for part in p["item"]["content"]
        for a in part.get("annotations", [])
    ]
    urls = {a["url"] for a in annotations if a["type"] == "url_citation"}
    files = {a["file_id"] for a in annotations if a["type"] == "file_citation"}
    assert len(lines) == len(urls) + len(files)


def test_citations_are_printed_as_plain_lines():
    from datetime import UTC, datetime

    from turnwire.cli.run import citations
    from turnwire.model.records import Message

    message = Message(
        id="msg_1",
        role="assistant",
        content="See.",
        annotations=(
            {"type": "url_citation", "url": "https://a.example/\x1b[2Jx", "title": "A\nB"},
            {"type": "url_citation", "url": "https://a.example/\x1b[2Jx", "title": "again"},
            {"type": "file_citation", "file_id": "file-1", "filename": "f.pdf", "index": 3},
            {"type": "unknown_kind", "url": "https://ignored.example"},
        ),
        created_at=datetime.now(UTC),
    )
    assert citations([message]) == [
        "[1] A B <https://a.example/ [2Jx>",
        "[2] file f.pdf (file-1)",
    ]


UNSAFE = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200b\u200f\u2060\ufeff\u2028"


def test_citations_cannot_reorder_or_hide_text_on_the_terminal():
    """Bidi overrides and isolates, zero-width and other format characters (Cf) are replaced:
    a URL cannot display as another."""
    from datetime import UTC, datetime

    from turnwire.cli.run import citations
    from turnwire.model.records import Message

    message = Message(
        id="msg_1",
        role="assistant",
        content="See.",
        annotations=(
            {"type": "url_citation", "url": "https://a.example/\u202egnp.exe", "title": "T\u2066x"},
            {"type": "file_citation", "file_id": "file-1", "filename": "a\u200b\ufeff.pdf"},
        ),
        created_at=datetime.now(UTC),
    )
    lines = citations([message])
    assert lines == ["[1] T x <https://a.example/ gnp.exe>", "[2] file a .pdf (file-1)"]
    assert not any(c in line for line in lines for c in UNSAFE)


def test_pending_approvals_cannot_reorder_or_hide_text_on_the_terminal():
    from turnwire import load_thread
    from turnwire.cli.run import print_pending

    item = {
        "type": "mcp_approval_request",
        "id": "mcpr_1",
        "server_label": "s\u202e",
        "name": "ask\u200b",
        "arguments": '{"q":"\u2066x\u2069"}',
    }
    thread = load_thread(
        {
            "version": 1,
            "hosted_items": [
                {
                    "id": "mcpr_1",
                    "type": "mcp_approval_request",
                    "item": item,
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
    assert shown.startswith('[approval pending mcpr_1: s ask({"q":" x "}); ')
    assert not any(c in shown for c in UNSAFE)


def test_a_failing_run_exits_1_with_the_error_line_last(tmp_path):
    thread = tmp_path / "t.yaml"
    thread.write_text(THREAD)
    path = next(p for p in STREAMS if p.name.startswith("error_then_failed"))
    with ScriptedServer([Reply.sse(wire_bytes(path))]) as server:
        done = turnwire_run(thread, server.base_url)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: E_OPENAI_RESPONSES_STREAM_ERROR: stream error: ")
    assert thread.read_text() == THREAD


def test_bad_input_to_run_also_exits_1(tmp_path):
    thread = tmp_path / "t.yaml"
    thread.write_text(
        "version: 1\nmessages: [{id: u, role: robot, content: x, "
        "created_at: '2026-01-01T00:00:00Z'}]\n"
    )
    done = turnwire_run(thread, "http://127.0.0.1:9/v1")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1].startswith("error: E_THREAD_FILE_INVALID: ")


def test_run_shows_retries_as_they_happen(tmp_path):
    thread = tmp_path / "t.yaml"
    thread.write_text(THREAD)
    text = next(p for p in STREAMS if p.name == "text_simple_gpt-4o-mini.sse")
    busy = Reply(
        status=429,
        chunks=[b'{"error": {"message": "slow down"}}'],
        content_type="application/json",
        headers={"retry-after-ms": "10"},
    )
    with ScriptedServer([busy, Reply.sse(wire_bytes(text))]) as server:
        config = tmp_path / "c2.yaml"
        config.write_text("plugins: {load_entrypoints: false}\n")
        done = turnwire_process(
            "run", str(thread), "--base-url", server.base_url, "--config", str(config)
        )
    assert done.returncode == 0, done.stderr
    assert "retrying (http-429) in 0.01 s" in done.stderr
    assert done.stdout.startswith("Hi in Portuguese")


def _answer_stream(text: str, summary: str = "") -> bytes:
    from ..client.test_reading import REASONING, streamed

    message = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    thought = {**REASONING, "summary": [{"type": "summary_text", "text": summary}]}
    return streamed([thought, message] if summary else [message])


def test_the_answer_reaches_the_terminal_without_escape_sequences_and_is_stored_whole(tmp_path):
    """A window title, a cleared screen and OSC 52's clipboard write, in the answer and in a
    reasoning summary: the terminal sees the text only; the thread keeps what came."""
    hostile = "Hi\x1b]0;owned\x07 there\x1b[2J\n\x1b]52;c;ZWNobyBvd25lZA==\x07done\x9b31m\tok"
    thread = tmp_path / "t.yaml"
    thread.write_text(THREAD)
    with ScriptedServer([Reply.sse(_answer_stream(hostile, summary=hostile))]) as server:
        done = turnwire_run(thread, server.base_url, "--save")
    assert done.returncode == 0, done.stderr
    for shown in (done.stdout, done.stderr):
        assert not any(
            (0 <= ord(c) < 32 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F for c in shown
        )
    assert "Hi]0;owned there[2J\n]52;c;ZWNobyBvd25lZA==done31m\tok" in done.stdout
    assert hostile in thread.read_text() or hostile == _saved_answer(thread)


def _saved_answer(thread: Path) -> str:
    import turnwire

    return turnwire.load_thread(thread).messages[-1].content


def test_a_tool_result_holding_a_secret_is_shown_redacted(tmp_path):
    from ..client.test_reading import MESSAGE, SHAPES_CALL, streamed

    module = tmp_path / "leaky.py"
    module.write_text(
        "import os\n"
        "def get_capital(country):\n"
        "    return 'key=' + os.environ['OPENAI_API_KEY'] + ' for ' + country\n"
    )
    thread = tmp_path / "t.yaml"
    thread.write_text(
        THREAD + "tools:\n  - {name: get_capital, parameters: {type: object, properties: "
        "{country: {type: string}}}}\n"
    )
    config = tmp_path / "c.yaml"
    config.write_text(
        "plugins: {load_entrypoints: false}\nclient: {retry: {max_retries: 0}}\n"
        "tools: {handlers: {get_capital: 'leaky:get_capital'}}\n"
    )
    key = "sk-test-SECRET1234567890"
    replies = [Reply.sse(streamed([SHAPES_CALL])), Reply.sse(streamed([MESSAGE]))]
    with ScriptedServer(replies) as server:
        done = turnwire_process(
            "run",
            str(thread),
            "--base-url",
            server.base_url,
            "--config",
            str(config),
            env={"OPENAI_API_KEY": key, "PYTHONPATH": str(tmp_path)},
        )
    assert done.returncode == 0, done.stderr
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("[tool get_capital(")]
    assert "[redacted] for France" in line
    assert key not in done.stderr and "SECRET1234" not in done.stderr


def test_run_reports_its_own_usage_before_the_configuration(tmp_path):
    bad_config = ("--set", "client.max_stream_bytes=0")
    both = turnwire_process("run", "--thread", "thr_x", "--save", *bad_config)
    assert both.returncode == 1
    assert (
        both.stderr.strip()
        .splitlines()[-1]
        .endswith("--thread runs a stored thread: give no THREAD file and no --save")
    )
    nothing = turnwire_process("run", "--render-context", "a=1", *bad_config)
    assert "give a THREAD file, or --thread ID" in nothing.stderr
    assert "--render-context is not used" not in nothing.stderr


def test_run_needs_a_thread_file_or_a_stored_thread(tmp_path):
    done = turnwire_process("run", "--base-url", "http://127.0.0.1:9/v1")
    assert done.returncode == 1
    assert "give a THREAD file, or --thread ID" in done.stderr
    mixed = turnwire_process("run", str(REPO_EXAMPLES / "weather.yaml"), "--prompt", "x")
    assert (
        mixed.returncode == 1
        and "--prompt, --file, --file-url and --file-id go with --thread" in mixed.stderr
    )


STRUCTURED_THREAD = """\
version: 1
model: gpt-4o
messages:
  - {id: u1, role: user, content: "Read the invoice.", created_at: "2026-01-01T10:00:00Z"}
"""


def test_the_cli_takes_an_output_schema_file_and_prints_parsed_and_refusals(tmp_path: Path):
    thread = tmp_path / "t.yaml"
    thread.write_text(STRUCTURED_THREAD)
    schema = tmp_path / "invoice.json"
    schema.write_text(json.dumps(INVOICE_SCHEMA))
    value = {"number": "F-7", "items": []}
    with ScriptedServer([Reply.sse(text_answer(json.dumps(value)))]) as server:
        done = turnwire_run(thread, server.base_url, "--output-schema", str(schema), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["parsed"] == value
    assert server.requests[0].json["text"]["format"]["name"] == "invoice"

    wrapped = tmp_path / "wrapped.yaml"
    wrapped.write_text(yaml.safe_dump({"name": "w", "schema": INVOICE_SCHEMA, "description": "x"}))
    with ScriptedServer([Reply.sse(refusal_answer("I won't."))]) as server:
        done = turnwire_run(thread, server.base_url, "--output-schema", str(wrapped))
    assert done.returncode == 0, done.stderr
    assert "[refusal] I won't." in done.stderr
    assert server.requests[0].json["text"]["format"]["description"] == "x"

    with ScriptedServer([Reply.sse(text_answer('{"number": 7}'))]) as server:
        done = turnwire_run(thread, server.base_url, "--output-schema", str(schema), "--json")
    assert done.returncode == 1
    error = json.loads(done.stdout.splitlines()[-1])["error"]
    assert error["code"] == "E_OUTPUT_INVALID" and error["path"] == "$"
    assert "missing required property `items`" in error["message"]


def test_the_cli_names_a_bad_schema_file(tmp_path: Path):
    thread = tmp_path / "t.yaml"
    thread.write_text(STRUCTURED_THREAD)
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps({"type": "object", "properties": {"a": {"type": "string"}}}))
    done = turnwire_run(thread, "http://127.0.0.1:9", "--output-schema", str(schema))
    assert done.returncode == 1
    assert "E_OUTPUT_SCHEMA_INVALID" in done.stderr and "$.schema" in done.stderr


PROGRESS_REASONING = recorded("reasoning_summary_multipart_text_o3-mini.sse")


def test_turnwire_run_shows_reasoning_summaries_and_tool_progress_on_stderr(tmp_path):
    thread = tmp_path / "t.yaml"
    thread.write_text(client.THREAD.replace("gpt-4o", "gpt-5"))
    with ScriptedServer([Reply.sse(PROGRESS_REASONING)]) as server:
        done = turnwire_run(thread, server.base_url)
    assert done.returncode == 0, done.stderr
    shown = [line for line in done.stderr.splitlines() if line.startswith("[reasoning] ")]
    assert shown and "**" in shown[0]
    with ScriptedServer([Reply.sse(client.CALL)]) as server:
        done = turnwire_run(thread, server.base_url, "--once")
    assert "[tool" not in done.stderr  # --once runs nothing


OPENAI = "https://api.openai.com/v1"


def test_cli_without_a_key_says_which_variable_to_set(tmp_path: Path) -> None:
    shutil.copy(REPO_EXAMPLES / "weather.yaml", tmp_path / "weather.yaml")
    shutil.copy(REPO_EXAMPLES / "photo.png", tmp_path / "photo.png")
    thread = str(tmp_path / "weather.yaml")
    done = turnwire_process("run", thread, "--base-url", OPENAI, "--profile", "examples")
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()
    assert last == [
        "error: E_OPENAI_API_KEY_MISSING: no API key for https://api.openai.com/v1: "
        "set OPENAI_API_KEY (or pass api_key= in code); nothing was sent"
    ]


def test_the_command_line_prints_one_error_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    path = tmp_path / "t.json"
    path.write_text(json.dumps({"version": 1, "model": "gpt-5", "messages": [user()]}))
    done = turnwire_process(
        "run",
        str(path),
        "--base-url",
        "http://127.0.0.1:9/v1",
        env={"HTTPS_PROXY": "ftp://127.0.0.1:9", "OPENAI_API_KEY": "sk-test-key-0000"},
    )
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert lines[-1].startswith("error: E_INVALID_OPENAI_RESPONSES_OPTIONS: HTTPS_PROXY")
    assert "Traceback" not in done.stderr
