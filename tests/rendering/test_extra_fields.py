"""Request fields turnwire does not model: ``request.extra`` (configuration), ``extra_body=``
(Python) and the ``on_request_body`` hook (a plugin), each with what turnwire still owns."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

import turnwire
from turnwire.errors import ConfigError, PreflightError
from turnwire.plugin import hookimpl

from ..client.server import Reply, ScriptedServer
from ..client.streams import text_answer
from ..conftest import make_container, render_body
from ..oracle import validate_body


@pytest.fixture(autouse=True)
def _every_render_is_checked_by_the_oracle() -> None:
    """Unmodelled fields are, by definition, ones the oracles may not know: the tests here
    check the bodies whose fields the official types do know themselves."""


THREAD = {
    "version": 1,
    "model": "gpt-5",
    "messages": [
        {"id": "u1", "role": "user", "content": "hi", "created_at": "2026-01-01T10:00:00Z"}
    ],
}


def _grown(n: int) -> turnwire.Thread:
    messages = [
        {
            "id": f"m{i}",
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"turn {i}",
            "created_at": f"2026-01-01T10:{i:02d}:00Z",
        }
        for i in range(n)
    ]
    return turnwire.load_thread({**THREAD, "messages": messages})


def test_request_extra_reaches_the_end_of_the_body_in_its_order() -> None:
    container = make_container({"request": {"extra": {"max_tool_calls": 3, "moderation": "auto"}}})
    body = turnwire.render(turnwire.load_thread(THREAD), container=container).body
    assert body.endswith(b',"max_tool_calls":3,"moderation":"auto"}')
    sent = json.loads(body)
    assert sent["max_tool_calls"] == 3 and sent["store"] is False
    validate_body({key: value for key, value in sent.items() if key != "moderation"})
    validate_body(
        json.loads(
            turnwire.render(
                _grown(3), container=make_container({"request": {"extra": {"max_tool_calls": 3}}})
            ).body
        )
    )


def test_the_warm_path_keeps_the_extra_fields_and_stays_byte_equal_to_a_cold_render() -> None:
    settings = {"request": {"extra": {"max_tool_calls": 3}}}
    warm = make_container(settings)
    for n in range(1, 12):
        thread = _grown(n)
        assert json.loads(turnwire.render(thread, container=warm).body) == render_body(
            thread, container=make_container(settings)
        )
        cold = turnwire.render(thread, container=make_container(settings)).body
        assert turnwire.render(thread, container=warm).body == cold
        assert turnwire.render(thread, container=warm).body.endswith(b',"max_tool_calls":3}')


@pytest.mark.parametrize(
    ("key", "words"),
    [
        ("store", "turnwire owns `store`"),
        ("input", "turnwire owns `input`"),
        ("previous_response_id", "turnwire owns `previous_response_id`"),
        ("conversation", "turnwire owns `conversation`"),
        ("temperature", "set request.temperature instead"),
        ("tools", "set request.tools instead"),
    ],
)
def test_a_field_turnwire_owns_or_models_is_refused_at_load_naming_it(key: str, words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        make_container({"request": {"extra": {key: True}}}).settings()
    assert caught.value.path == f"$.request.extra.{key}"
    assert words in str(caught.value)


def test_the_command_line_sets_an_extra_field_with_set(tmp_path: Any) -> None:
    from ..conftest import turnwire_process

    path = tmp_path / "thread.json"
    path.write_text(json.dumps(THREAD))
    done = turnwire_process("render", str(path), "--set", "request.extra.max_tool_calls=2", "-q")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["max_tool_calls"] == 2
    refused = turnwire_process("render", str(path), "--set", "request.extra.store=true", "-q")
    assert refused.returncode == 2
    assert "$.request.extra.store" in refused.stderr and "Traceback" not in refused.stderr


def test_extra_body_in_python_reaches_every_request_of_the_run_over_the_configuration() -> None:
    container = make_container({"request": {"extra": {"max_tool_calls": 3, "user_tag": "a"}}})
    with ScriptedServer([Reply.sse(text_answer("Hi."))]) as server:

        async def ask() -> Any:
            async with turnwire.Client(container, base_url=server.base_url, api_key="sk-t") as c:
                return await c.run(turnwire.load_thread(THREAD), extra_body={"max_tool_calls": 5})

        result = asyncio.run(ask())
        refused = turnwire.Client(container, base_url=server.base_url, api_key="sk-t")
        with pytest.raises(ConfigError, match="turnwire owns `store`"):
            asyncio.run(refused.run(turnwire.load_thread(THREAD), extra_body={"store": True}))
    assert result.text == "Hi."
    (seen,) = server.requests  # the refused run sent nothing
    assert seen.json["max_tool_calls"] == 5 and seen.json["user_tag"] == "a"
    assert seen.json["store"] is False


class _AddsModeration:
    @hookimpl
    def on_request_body(self, body: dict[str, Any], model: str) -> dict[str, Any]:
        body["moderation"] = {"model": model}
        return body


class _StoresIt:
    @hookimpl
    def on_request_body(self, body: dict[str, Any], model: str) -> dict[str, Any]:
        return {**body, "store": True}


class _DropsTheInput:
    @hookimpl
    def on_request_body(self, body: dict[str, Any], model: str) -> dict[str, Any]:
        return {**body, "input": []}


class _NoBody:
    @hookimpl
    def on_request_body(self, body: dict[str, Any], model: str) -> Any:
        return ["not", "a", "body"]


def test_hook_on_request_body() -> None:
    thread = turnwire.load_thread(THREAD)
    container = turnwire.build_container(extra_plugins=[_AddsModeration()])
    rendered = turnwire.render(thread, container=container)
    assert rendered.json["moderation"] == {"model": "gpt-5"}
    assert rendered.json["input"] == render_body(thread)["input"]
    for plugin, where in ((_StoresIt(), "$.store"), (_DropsTheInput(), "$.input")):
        with pytest.raises(ConfigError) as caught:
            turnwire.render(thread, container=turnwire.build_container(extra_plugins=[plugin]))
        assert caught.value.path == where
    with pytest.raises(ConfigError, match="not a JSON object"):
        turnwire.render(thread, container=turnwire.build_container(extra_plugins=[_NoBody()]))


class _BreaksARule:
    @hookimpl
    def on_request_body(self, body: dict[str, Any], model: str) -> dict[str, Any]:
        return {**body, "max_output_tokens": 4}


def test_a_body_a_plugin_changed_still_goes_through_the_preflight_rules() -> None:
    container = turnwire.build_container(extra_plugins=[_BreaksARule()])
    with pytest.raises(PreflightError) as caught:
        turnwire.render(turnwire.load_thread(THREAD), container=container)
    assert caught.value.rule == "max-output-tokens"


def test_the_client_sends_the_body_the_plugin_changed() -> None:
    container = turnwire.build_container(extra_plugins=[_AddsModeration()])
    with ScriptedServer([Reply.sse(text_answer("Hi."))]) as server:
        turnwire.run(THREAD, container=container, base_url=server.base_url, api_key="sk-t")
    assert server.requests[0].json["moderation"] == {"model": "gpt-5"}
