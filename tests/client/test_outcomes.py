"""Finish reasons, usage, the context-window guard, cancellation."""

from __future__ import annotations

import asyncio

import pytest

import turnwire
from turnwire.client.dispatch import Client, finish_reason
from turnwire.errors import ContextOverflowError
from turnwire.wire.response import Generation, ToolCallOutput

from ..conftest import make_container, thread, user
from .server import Reply, ScriptedServer, recorded

TEXT = recorded("text_simple_gpt-4o-mini.sse")


@pytest.mark.parametrize(
    ("generation", "expected"),
    [
        (Generation(terminal="completed", status="completed"), "stop"),
        (
            Generation(
                terminal="completed",
                status="completed",
                outputs=(
                    ToolCallOutput(
                        output_index=0, item_id="fc_1", call_id="c", name="f", arguments="{}"
                    ),
                ),
            ),
            "tool_calls",
        ),
        (
            Generation(
                terminal="incomplete", status="incomplete", incomplete_reason="max_output_tokens"
            ),
            "length",
        ),
        (Generation(terminal="incomplete", status="incomplete", incomplete_reason=None), "length"),
        (
            Generation(
                terminal="incomplete", status="incomplete", incomplete_reason="content_filter"
            ),
            "content_filter",
        ),
        (Generation(terminal="failed", status="failed"), "error"),
        (Generation(terminal="eof"), "stop"),
    ],
)
def test_finish_reasons(generation, expected):
    assert finish_reason(generation) == expected


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


def test_the_context_window_guard_refuses_before_sending(tmp_path):
    t = thread(model="gpt-5", system_prompt="word " * 400, messages=[user(content="hi " * 50)])
    settings = {"context": {"token_encoding": "o200k_base", "context_window": 300}}
    with ScriptedServer([Reply.sse(TEXT)]) as server:
        with pytest.raises(ContextOverflowError) as caught:
            turnwire.api.run(t, container=make_container(settings), base_url=server.base_url)
    assert server.requests == []
    error = caught.value
    assert error.total > 300 and error.breakdown["system_prompt"] >= 400
    assert error.breakdown["timeline"] >= 50
    assert "system_prompt" in str(error) and "context_window" in str(error)


def test_under_the_window_the_request_goes_out(tmp_path):
    t = thread(model="gpt-5", messages=[user()])
    settings = {"context": {"token_encoding": "o200k_base", "context_window": 10_000}}
    with ScriptedServer([Reply.sse(TEXT)]) as server:
        turnwire.api.run(t, container=make_container(settings), base_url=server.base_url)
    assert len(server.requests) == 1


def test_cancelling_a_run_stops_cleanly_and_records_nothing():
    t = thread(model="gpt-5", messages=[user()])
    cut = TEXT.index(b"response.output_text.delta") + 400
    reply = Reply(chunks=[TEXT[:cut]], stall_after=1)  # some text, then silence

    async def scenario(base_url: str) -> list[str]:
        client = Client(make_container(), base_url=base_url)
        streaming = asyncio.Event()
        seen: list[str] = []

        def on_text(delta: str) -> None:
            seen.append(delta)
            streaming.set()

        task = asyncio.create_task(client.run(t, on_text=on_text))
        await streaming.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await client.transport.aclose()
        return seen

    with ScriptedServer([reply]) as server:
        seen = asyncio.run(scenario(server.base_url))
    assert seen and len(server.requests) == 1


def test_per_dispatch_overrides_merge_key_by_key_and_may_reset_to_null(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-override-000")
    t = thread(model="gpt-5", messages=[user()])
    base = {
        "client": {"headers": {"X-A": "1", "X-B": "2"}, "organization": "org-base"},
        "request": {"max_output_tokens": 64},
    }

    async def scenario(base_url: str) -> None:
        client = Client(make_container(base), base_url=base_url)
        await client.run(
            t,
            overrides={
                "client": {"headers": {"X-B": "3"}, "organization": None},
                "request": {"max_output_tokens": None},
            },
        )
        await client.run(t)
        await client.transport.aclose()

    with ScriptedServer([Reply.sse(TEXT)]) as server:
        asyncio.run(scenario(server.base_url))
    first, second = server.requests
    assert (first.headers["x-a"], first.headers["x-b"]) == ("1", "3")
    assert "openai-organization" not in first.headers
    assert "max_output_tokens" not in first.json
    assert (second.headers["x-b"], second.headers["openai-organization"]) == ("2", "org-base")
    assert second.json["max_output_tokens"] == 64


def test_overrides_are_validated_again():
    client = Client(make_container(), base_url="http://127.0.0.1:9/v1")
    with pytest.raises(turnwire.ConfigError) as caught:
        client.with_overrides({"request": {"max_output_tokens": 8}})
    assert caught.value.path == "$.request.max_output_tokens"


@pytest.mark.parametrize("strict", [False, True])
def test_tool_choice_forcing_a_hidden_tool(strict, caplog):
    import logging

    t = thread(
        model="gpt-5",
        messages=[user()],
        tools=[{"name": "visible"}, {"name": "secret", "hidden": True}],
    )
    settings = {
        "request": {"tool_choice": {"type": "function", "name": "secret"}},
        "client": {"strict_tool_choice": strict},
    }
    with ScriptedServer([Reply.sse(TEXT)]) as server:
        if strict:
            with pytest.raises(turnwire.ConfigError) as caught:
                turnwire.api.run(t, container=make_container(settings), base_url=server.base_url)
            assert "hidden" in str(caught.value) and server.requests == []
        else:
            with caplog.at_level(logging.WARNING, logger="turnwire"):
                turnwire.api.run(t, container=make_container(settings), base_url=server.base_url)
            assert "tool-choice-unavailable" in [r.kind for r in caplog.records]
