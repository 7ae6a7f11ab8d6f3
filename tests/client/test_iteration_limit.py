"""A run that stops at ``client.max_iterations`` with the model still calling tools is no
success: it keeps what it recorded (saved, stored, on the error's ``result``) and raises
``E_MAX_ITERATIONS``.

The model is ``turnwire emulate`` (the ``turnwire_emulator`` fixture): a script that calls
``get_capital`` on every request, each call with ids of its own as the API mints them, and
every request the runs send checked with the API's rules (a call replayed without its output,
an id sent twice, a reasoning item out of place is a 400, and the run fails).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
import yaml

import turnwire
from turnwire.errors import MaxIterationsError
from turnwire.testing import EmulatorHandle

from ..conftest import make_container
from .server import Reply, ScriptedServer, recorded

CALL = recorded("function_call_legacy_noseq_gpt-4o.sse")
AFTER_CALL = recorded("text_after_tool_legacy_noseq_gpt-4o.sse")

# The model calls get_capital whatever it is sent: the loop never ends on its own.
CALLING = {"default": {"tool_calls": [{"name": "get_capital", "arguments": {"country": "France"}}]}}
ANSWERING = {"default": {"text": "Paris."}}

THREAD = """\
version: 1
model: gpt-4o
tools:
  - {name: get_capital, parameters: {type: object, properties: {country: {type: string}}}}
messages:
  - {id: u1, role: user, content: "What's the capital?", created_at: "2026-01-01T10:00:00Z"}
"""

LIMIT = {"client": {"max_iterations": 2, "retry": {"max_retries": 0}}}


def capital(country: str) -> str:
    return f"the capital of {country}"


@pytest.fixture
def thread_file(tmp_path: Path) -> Path:
    path = tmp_path / "thread.yaml"
    path.write_text(THREAD)
    return path


def _run(
    server: ScriptedServer | EmulatorHandle,
    source: object,
    settings: dict = LIMIT,
    **options: object,
):
    return turnwire.api.run(
        source,
        container=make_container(settings),
        base_url=server.base_url,
        handlers={"get_capital": capital},
        **options,
    )


def _accepted(api: EmulatorHandle) -> list[dict]:
    """The bodies of the requests the emulator answered, each accepted (no rule broken)."""
    exchanges = list(api.emulator.exchanges)
    assert [(seen.status, seen.rule) for seen in exchanges] == [(200, None)] * len(exchanges)
    return [seen.json() for seen in exchanges]


def test_the_limit_raises_after_saving_what_the_run_recorded(
    thread_file, caplog, turnwire_emulator
):
    api = turnwire_emulator
    api.script(CALLING)
    with caplog.at_level(logging.WARNING, logger="turnwire"):
        with pytest.raises(MaxIterationsError) as caught:
            _run(api, thread_file, save=True)
    error = caught.value
    assert error.code == "E_MAX_ITERATIONS" and error.status == 508 and not error.fatal
    assert "stopped after 2 requests (client.max_iterations)" in str(error)
    assert "(get_capital)" in str(error)
    _, second = _accepted(api)
    assert error.iterations == 2
    # The second request carried the first call and its result.
    assert [item.get("type") for item in second["input"][-2:]] == [
        "function_call",
        "function_call_output",
    ]
    assert "max-iterations" in [getattr(r, "kind", "") for r in caplog.records]
    result = error.result
    assert isinstance(result, turnwire.RunResult)
    assert result.iterations == 2 and result.response.finish_reason == "tool_calls"
    calls = result.records.tool_calls
    assert len(calls) == 2 and all(c.result.text == "the capital of France" for c in calls)
    assert error.pending == (calls[-1].id,)
    saved = turnwire.load_thread(thread_file)
    assert [c.id for c in saved.tool_calls] == [c.id for c in calls]
    assert saved.tool_calls[-1].result.text == "the capital of France"


def test_the_next_run_sends_the_results_the_limit_left_unsent(thread_file, turnwire_emulator):
    api = turnwire_emulator
    api.script(CALLING)
    with pytest.raises(MaxIterationsError) as caught:
        _run(api, thread_file, save=True)
    calls = caught.value.result.records.tool_calls
    api.script(ANSWERING)
    result = _run(api, thread_file, save=True)
    *_, resumed = _accepted(api)
    # Both calls go back, each with its own result: the one the limit left unsent too.
    sent = [item for item in resumed["input"] if item.get("type") != "message"]
    assert [(item["type"], item["call_id"]) for item in sent] == [
        (kind, call.call_id) for call in calls for kind in ("function_call", "function_call_output")
    ]
    assert len({call.call_id for call in calls}) == 2
    assert result.response.finish_reason == "stop" and result.iterations == 1
    assert result.text == "Paris."


def test_an_answer_on_the_last_allowed_request_is_a_success(thread_file, turnwire_emulator):
    api = turnwire_emulator
    api.script(
        {
            "answers": [{"match": {"last_item": "function_call_output"}, "text": "Paris."}],
            **CALLING,
        }
    )
    result = _run(api, thread_file, save=True)
    assert result.iterations == 2 and result.response.finish_reason == "stop"
    assert result.text == "Paris." and len(_accepted(api)) == 2


def test_once_stops_at_its_calls_without_the_error(thread_file):
    with ScriptedServer([Reply.sse(CALL)]) as server:
        result = _run(server, thread_file, {"client": {"max_iterations": 1}}, once=True)
    assert result.records.tool_calls[0].result is None


def test_the_client_raises_it_with_the_result():
    thread = turnwire.load_thread(yaml.safe_load(THREAD))

    async def main() -> None:
        with ScriptedServer([Reply.sse(CALL)]) as server:
            async with turnwire.Client(
                make_container(LIMIT), base_url=server.base_url, handlers={"get_capital": capital}
            ) as client:
                with pytest.raises(MaxIterationsError) as caught:
                    await client.run(thread)
        result = caught.value.result
        assert isinstance(result, turnwire.RunResult)
        assert len(result.thread.tool_calls) == 2 and result.requests == 2

    asyncio.run(main())


def test_a_stored_thread_keeps_the_turns_before_the_error(tmp_path):
    from turnwire.store.sqlite import SQLiteStore

    with SQLiteStore(tmp_path / "t.db") as store:
        header = turnwire.load_thread(
            {"version": 1, "model": "gpt-4o", "tools": [{"name": "get_capital"}]}
        )
        thread_id = store.create_thread(header)
        with ScriptedServer([Reply.sse(CALL)]) as server:
            with pytest.raises(MaxIterationsError) as caught:
                turnwire.run_thread(
                    thread_id,
                    store=store,
                    prompt="What's the capital?",
                    container=make_container(LIMIT),
                    base_url=server.base_url,
                    handlers={"get_capital": capital},
                )
        stored = store.load(thread_id)
    assert [c.id for c in stored.tool_calls] == [
        c.id for c in caught.value.result.records.tool_calls
    ]
    assert stored.messages[0].content == "What's the capital?"
