"""Tool arguments are replayed exactly as the model sent them, valid JSON or not: arguments that
are no JSON object a thread can hold are kept as ``raw_args``, answered with an error result
(the tool never runs), saved, loaded and stored as they came, and sent back as that very
string."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

import turnwire
from turnwire.config.schema import thread_schema
from turnwire.rendering.windows import transcript

from ..conftest import make_container
from .server import Reply, ScriptedServer, recorded

CALL = recorded("function_call_legacy_noseq_gpt-4o.sse")
AFTER_CALL = recorded("text_after_tool_legacy_noseq_gpt-4o.sse")
SENT = '{"country":"France"}'  # what the recorded call's arguments are

THREAD = """\
version: 1
model: gpt-4o
tools:
  - {name: get_capital, parameters: {type: object, properties: {country: {type: string}}}}
messages:
  - {id: u1, role: user, content: "What's the weather?", created_at: "2026-01-01T10:00:00Z"}
"""

BAD_ARGUMENTS = {
    "cut short": ('{"country": ', "Tool arguments are not valid JSON."),
    "an array": ('["France"]', "Tool arguments must be a JSON object; received array."),
    "a string": ('"France"', "Tool arguments must be a JSON object; received string."),
    "NaN": ('{"country": NaN}', "Tool arguments are out of bounds ("),
    "too deep": ('{"a":' * 70 + "1" + "}" * 70, "Tool arguments are out of bounds ("),
    "spaces and a trailing comma": ('{ "country" : "France", }', "Tool arguments are not valid"),
}


def _calling(arguments: str) -> bytes:
    """The recorded call, with ``arguments`` where the model sent ``SENT``."""
    stream = CALL.replace(json.dumps(SENT).encode(), json.dumps(arguments).encode())
    assert stream != CALL
    return stream


def _function_calls(body: dict) -> list[dict]:
    return [item for item in body["input"] if item["type"] == "function_call"]


@pytest.fixture
def thread_file(tmp_path: Path) -> Path:
    path = tmp_path / "thread.yaml"
    path.write_text(THREAD)
    return path


@pytest.mark.parametrize(("arguments", "error"), BAD_ARGUMENTS.values(), ids=list(BAD_ARGUMENTS))
def test_arguments_that_are_no_json_object_are_replayed_as_the_model_sent_them(
    thread_file, arguments, error
):
    ran: list[dict] = []
    replies = [Reply.sse(_calling(arguments)), Reply.sse(AFTER_CALL)]
    with ScriptedServer(replies) as server:
        result = turnwire.api.run(
            thread_file,
            container=make_container({"client": {"retry": {"max_retries": 0}}}),
            base_url=server.base_url,
            handlers={"get_capital": lambda **kw: ran.append(kw) or "Paris"},
            save=True,
        )
    assert ran == []
    (call,) = result.records.tool_calls
    assert (call.raw_args, call.args, call.is_error) == (arguments, {}, True)
    assert call.result.text.startswith(error)
    (replayed,) = _function_calls(server.requests[1].json)
    assert replayed["arguments"] == arguments
    (answered,) = [
        item for item in server.requests[1].json["input"] if item["type"] == "function_call_output"
    ]
    assert f"\n{error}" in answered["output"]
    saved = turnwire.load_thread(thread_file)
    assert saved.tool_calls[0].raw_args == arguments
    again = turnwire.render(saved, container=make_container(), model="gpt-4o").json
    assert _function_calls(again)[0]["arguments"] == arguments


def test_valid_arguments_keep_no_raw_copy(thread_file):
    with ScriptedServer([Reply.sse(CALL), Reply.sse(AFTER_CALL)]) as server:
        result = turnwire.api.run(
            thread_file,
            container=make_container(),
            base_url=server.base_url,
            handlers={"get_capital": lambda country: f"the capital of {country}"},
            save=True,
        )
    (call,) = result.records.tool_calls
    assert (call.raw_args, call.args) == (None, {"country": "France"})
    assert "raw_args" not in thread_file.read_text()


def test_raw_arguments_round_trip_through_the_store(tmp_path):
    from turnwire.store.sqlite import SQLiteStore

    arguments = '{"country": '
    with SQLiteStore(tmp_path / "t.db") as store:
        header = turnwire.load_thread({**_header(), "messages": []})
        thread_id = store.create_thread(header)
        replies = [Reply.sse(_calling(arguments)), Reply.sse(AFTER_CALL)]
        with ScriptedServer(replies) as server:
            turnwire.run_thread(
                thread_id,
                store=store,
                prompt="What's the capital?",
                container=make_container(),
                base_url=server.base_url,
                handlers={"get_capital": lambda **kw: pytest.fail("the tool must not run")},
            )
        (call,) = store.load(thread_id).tool_calls
        assert call.raw_args == arguments and call.is_error
        with ScriptedServer([Reply.sse(AFTER_CALL)]) as server:
            turnwire.run_thread(
                thread_id,
                store=store,
                prompt="And now?",
                container=make_container(),
                base_url=server.base_url,
            )
    (replayed,) = _function_calls(server.requests[0].json)
    assert replayed["arguments"] == arguments


def _header() -> dict:
    import yaml

    return {key: value for key, value in yaml.safe_load(THREAD).items() if key != "messages"}


def _call_record(**fields: object) -> dict:
    return {
        "id": "call_1|fc_1",
        "tool": "get_capital",
        "created_at": "2026-01-01T10:00:01Z",
        **fields,
    }


def _thread_with(call: dict) -> dict:
    import yaml

    return {**yaml.safe_load(THREAD), "tool_calls": [call]}


def test_a_pending_call_with_raw_arguments_is_answered_with_an_error_and_never_runs():
    """A call a ``--once`` run would have left without a result (or a hand-written one)."""
    thread = turnwire.load_thread(_thread_with(_call_record(raw_args='{"country": ')))
    with ScriptedServer([Reply.sse(AFTER_CALL)]) as server:
        result = turnwire.api.run(
            thread,
            container=make_container(),
            base_url=server.base_url,
            handlers={"get_capital": lambda **kw: pytest.fail("the tool must not run")},
        )
    (call,) = result.thread.tool_calls
    assert call.is_error and call.result.text.startswith("Tool arguments are not valid JSON.")
    assert call.raw_args == '{"country": '
    (replayed,) = _function_calls(server.requests[0].json)
    assert replayed["arguments"] == '{"country": '


def test_raw_arguments_that_parse_run_with_what_they_hold_and_replay_as_written():
    written = '{ "country" : "France" }'
    thread = turnwire.load_thread(_thread_with(_call_record(raw_args=written)))
    with ScriptedServer([Reply.sse(AFTER_CALL)]) as server:
        result = turnwire.api.run(
            thread,
            container=make_container(),
            base_url=server.base_url,
            handlers={"get_capital": lambda country: f"the capital of {country}"},
        )
    (call,) = result.thread.tool_calls
    assert not call.is_error and call.result.text == "the capital of France"
    assert call.raw_args == written
    (replayed,) = _function_calls(server.requests[0].json)
    assert replayed["arguments"] == written


def test_the_schema_holds_raw_arguments_as_a_string():
    validator = jsonschema.Draft202012Validator(thread_schema())
    kept = _thread_with(_call_record(raw_args="[1,", is_error=True, result={"text": "bad"}))
    assert list(validator.iter_errors(kept)) == []
    turnwire.load_thread(kept)
    wrong = _thread_with(_call_record(raw_args=["not", "text"]))
    assert list(validator.iter_errors(wrong)) != []
    with pytest.raises(turnwire.ThreadFileError, match=r"\$\.tool_calls\[0\]\.raw_args"):
        turnwire.load_thread(wrong)
    written = json.loads(turnwire.dump_thread(turnwire.load_thread(kept)))
    assert written["tool_calls"][0]["raw_args"] == "[1,"
    assert list(validator.iter_errors(written)) == []


def test_a_transcript_shows_the_arguments_the_model_sent():
    thread = turnwire.load_thread(
        _thread_with(_call_record(raw_args="[1,", is_error=True, result={"text": "bad"}))
    )
    assert "[tool get_capital([1,) error] bad" in transcript(thread)
