"""turnwire-local-tools as a plugin: its settings, and calls written as text running for real."""

from __future__ import annotations

import json
from typing import Any

import pytest
import turnwire_local_tools
from turnwire_local_tools import LocalToolsSettings, configure

import turnwire
from tests.client.server import Reply, ScriptedServer
from tests.conftest import make_container, thread, user
from turnwire import ConfigError, Tool
from turnwire.client.text_calls import TextToolCall, TextToolCalls
from turnwire.rendering.plugins import _configure, build_plugin_manager

TOOLS = [
    {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    }
]
HERMES = (
    "Let me check the weather.\n<tool_call>\n"
    '{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
)


def test_the_public_names():
    assert turnwire_local_tools.__all__ == [
        "FORMATS",
        "LocalToolsPlugin",
        "LocalToolsSettings",
        "TextToolCall",
        "TextToolCalls",
        "configure",
        "parse",
        "settings_struct",
    ]
    assert turnwire_local_tools.FORMATS == (
        "auto",
        "hermes",
        "qwen3_coder",
        "llama3_json",
        "mistral",
        "phi",
        "gpt_oss",
        "gemma",
        "pythonic",
        "bare_pythonic",
        "loose_keyed",
        "none",
    )


def test_settings_default_to_auto_and_validate_at_load_time():
    plugin = _configure("local_tools", turnwire_local_tools, None)
    assert plugin.settings == LocalToolsSettings(format="auto", max_chars=262_144, max_calls=32)
    chosen = _configure("local_tools", turnwire_local_tools, {"format": "mistral"})
    assert chosen.settings.format == "mistral"


@pytest.mark.parametrize(
    ("raw", "path", "detail"),
    [
        ({"format": "xml"}, "$.plugins.settings.local_tools.format", "use one of auto, hermes"),
        ({"format": 3}, "$.plugins.settings.local_tools.format", "Expected `str`"),
        ({"max_calls": 0}, "$.plugins.settings.local_tools.max_calls", ">= 1"),
        ({"fromat": "hermes"}, "$.plugins.settings.local_tools", "fromat"),
    ],
)
def test_a_bad_setting_is_a_configuration_error_naming_its_path(raw, path, detail):
    with pytest.raises(ConfigError) as caught:
        _configure("local_tools", turnwire_local_tools, raw)
    assert caught.value.path == path
    assert detail in str(caught.value)


def test_the_hook_reads_with_the_configured_format():
    text = '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}'
    tools = (Tool(name="get_weather"),)
    manager = build_plugin_manager(
        load_entrypoints=False, extra_plugins=[configure(LocalToolsSettings(format="hermes"))]
    )
    assert manager.hook.parse_text_tool_calls(text=text, tools=tools) is None
    manager = build_plugin_manager(load_entrypoints=False, extra_plugins=[configure(None)])
    assert manager.hook.parse_text_tool_calls(text=text, tools=tools) == TextToolCalls(
        calls=(TextToolCall(name="get_weather", arguments={"city": "Paris"}),), text=""
    )
    manager = build_plugin_manager(
        load_entrypoints=False, extra_plugins=[configure(LocalToolsSettings(format="none"))]
    )
    assert manager.hook.parse_text_tool_calls(text=text, tools=tools) is None


def _answer(text: str, response_id: str) -> dict[str, Any]:
    return {
        "id": response_id,
        "object": "response",
        "status": "completed",
        "model": "qwen2.5-7b-instruct",
        "output": [
            {
                "type": "message",
                "id": "msg_" + response_id,
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ],
        "usage": {"input_tokens": 5, "output_tokens": 5, "total_tokens": 10},
    }


def _stream(text: str, response_id: str, pieces: int = 7) -> bytes:
    """The answer as a Responses stream, its text cut into ``pieces`` deltas (mid-tag)."""
    item_id = "msg_" + response_id
    size = -(-len(text) // pieces)
    deltas = [text[i : i + size] for i in range(0, len(text), size)]
    part = {"type": "output_text", "text": "", "annotations": []}
    item = {"type": "message", "id": item_id, "role": "assistant", "status": "in_progress"}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {**_answer("", response_id), "output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": {**item, "content": []}},
        {
            "type": "response.content_part.added",
            "item_id": item_id,
            "output_index": 0,
            "content_index": 0,
            "part": part,
        },
        *(
            {
                "type": "response.output_text.delta",
                "item_id": item_id,
                "output_index": 0,
                "content_index": 0,
                "delta": delta,
            }
            for delta in deltas
        ),
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": _answer(text, response_id)["output"][0],
        },
        {"type": "response.completed", "response": _answer(text, response_id)},
    ]
    frames = [
        f"event: {event['type']}\ndata: {json.dumps({**event, 'sequence_number': n})}\n\n"
        for n, event in enumerate(events)
    ]
    return "".join(frames).encode()


@pytest.mark.parametrize("stream", [False, True])
def test_a_hermes_call_written_as_text_runs_and_its_result_goes_back(stream):
    if stream:
        script = [Reply.sse(_stream(HERMES, "r1"), chunk=7), Reply.sse(_stream("Sunny.", "r2"))]
    else:
        script = [
            Reply.json(200, _answer(HERMES, "r1")),
            Reply.json(200, _answer("Sunny, 21 °C in Paris.", "r2")),
        ]
    seen: list[str] = []
    container = make_container({"client": {"stream": stream}}, extra_plugins=[configure(None)])
    with ScriptedServer(script) as server:
        result = turnwire.run(
            thread(tools=TOOLS, messages=[user("Weather in Paris?")]),
            container=container,
            base_url=server.base_url,
            model="qwen2.5-7b-instruct",
            handlers={"get_weather": lambda city: seen.append(city) or f"{city}: sunny, 21 °C"},
        )
    assert seen == ["Paris"]
    (call,) = result.records.tool_calls
    assert call.tool == "get_weather" and call.args == {"city": "Paris"}
    assert call.result is not None and call.result.text == "Paris: sunny, 21 °C"
    assert result.records.messages[0].content == "Let me check the weather."
    assert len(server.requests) == 2
    second = server.requests[1].json["input"]
    sent = next(item for item in second if item.get("type") == "function_call")
    output = next(item for item in second if item.get("type") == "function_call_output")
    assert sent["name"] == "get_weather" and json.loads(sent["arguments"]) == {"city": "Paris"}
    assert output["call_id"] == sent["call_id"]
    assert "\nParis: sunny, 21 °C\n</untrusted_content_" in output["output"]
    said = [item for item in second if item.get("role") == "assistant"]
    assert "<tool_call>" not in json.dumps(said)  # the markup never goes back as the answer


def test_a_malformed_call_stays_the_answer_and_nothing_runs():
    text = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}'
    container = make_container({"client": {"stream": False}}, extra_plugins=[configure(None)])
    with ScriptedServer([Reply.json(200, _answer(text, "r1"))]) as server:
        result = turnwire.run(
            thread(tools=TOOLS, messages=[user("Weather in Paris?")]),
            container=container,
            base_url=server.base_url,
            model="m",
            handlers={"get_weather": lambda city: pytest.fail("must not run")},
        )
    assert result.records.tool_calls == ()
    assert result.records.messages[0].content == text
    assert len(server.requests) == 1
