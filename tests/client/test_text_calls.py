"""``parse_text_tool_calls``: calls a local model wrote as text become ordinary tool calls."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

import turnwire
from turnwire import hookimpl
from turnwire.client.text_calls import TextToolCall, TextToolCalls, apply_text_tool_calls
from turnwire.wire.response import Generation, MessageOutput, ToolCallOutput

from ..conftest import make_container, thread, user
from .server import Reply, ScriptedServer

_TAG = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)


class TaggedCalls:
    """A test parser for ``<tool_call>{"name": ..., "arguments": ...}</tool_call>``."""

    @hookimpl
    def parse_text_tool_calls(self, text: str, tools: Any) -> TextToolCalls | None:
        calls = [json.loads(body) for body in _TAG.findall(text)]
        if not calls:
            return None
        known = {tool.name for tool in tools}
        return (
            TextToolCalls(
                calls=tuple(TextToolCall(name=c["name"], arguments=c["arguments"]) for c in calls),
                text=_TAG.sub("", text).strip(),
            )
            if all(c["name"] in known for c in calls)
            else None
        )


def _answer(text: str, response_id: str) -> dict[str, Any]:
    return {
        "id": response_id,
        "object": "response",
        "status": "completed",
        "model": "local-model",
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


TOOLS = [{"name": "get_capital", "parameters": {"type": "object", "properties": {}}}]


def test_hook_parse_text_tool_calls():
    """A plugin's parser turns a call written as text into a call that runs, and its result
    goes back to the model."""
    call = {"name": "get_capital", "arguments": {"country": "France"}}
    text = f"Let me look.\n<tool_call>{json.dumps(call)}</tool_call>"
    script = [
        Reply.json(200, _answer(text, "r1")),
        Reply.json(200, _answer("It is Paris.", "r2")),
    ]
    container = make_container({"client": {"stream": False}}, extra_plugins=[TaggedCalls()])
    with ScriptedServer(script) as server:
        result = turnwire.run(
            thread(tools=TOOLS, messages=[user("Capital of France?")]),
            container=container,
            base_url=server.base_url,
            model="local-model",
            handlers={"get_capital": lambda country: f"the capital of {country} is Paris"},
        )
    (call,) = result.records.tool_calls
    assert call.tool == "get_capital" and call.args == {"country": "France"}
    assert call.result is not None and call.result.text == "the capital of France is Paris"
    assert [m.content for m in result.records.messages] == ["Let me look.", "It is Paris."]
    second = server.requests[1].json["input"]
    sent_call = next(item for item in second if item.get("type") == "function_call")
    output = next(item for item in second if item.get("type") == "function_call_output")
    assert sent_call["name"] == "get_capital"
    assert json.loads(sent_call["arguments"]) == {"country": "France"}
    assert output["call_id"] == sent_call["call_id"]
    assert "\nthe capital of France is Paris\n</untrusted_content_" in output["output"]
    assert result.response.finish_reason == "stop"


def test_without_a_parser_text_stays_text():
    text = '<tool_call>{"name": "get_capital", "arguments": {}}</tool_call>'
    with ScriptedServer([Reply.json(200, _answer(text, "r1"))]) as server:
        result = turnwire.run(
            thread(tools=TOOLS, messages=[user("hi")]),
            container=make_container({"client": {"stream": False}}),
            base_url=server.base_url,
            model="m",
        )
    assert result.records.tool_calls == ()
    assert result.records.messages[0].content == text


def _generation(*outputs: Any) -> Generation:
    return Generation(terminal="completed", status="completed", outputs=outputs)


def test_structured_calls_win_and_the_parser_is_not_asked():
    asked: list[str] = []
    generation = _generation(
        MessageOutput(output_index=0, item_id="msg_1", text="<tool_call>...</tool_call>"),
        ToolCallOutput(output_index=1, item_id="fc_1", call_id="c1", name="f", arguments="{}"),
    )
    assert apply_text_tool_calls(generation, asked.append)  # type: ignore[arg-type] is generation
    assert asked == []


@pytest.mark.parametrize("found", [None, TextToolCalls(calls=())])
def test_nothing_found_leaves_the_generation_alone(found):
    generation = _generation(MessageOutput(output_index=0, item_id="msg_1", text="plain"))
    assert apply_text_tool_calls(generation, lambda text: found) is generation


def test_a_parser_that_raises_never_fails_the_turn(caplog):
    class Broken:
        @hookimpl
        def parse_text_tool_calls(self, text: str, tools: Any) -> TextToolCalls | None:
            raise ValueError("bad parser")

    container = make_container({"client": {"stream": False}}, extra_plugins=[Broken()])
    with ScriptedServer([Reply.json(200, _answer("hello", "r1"))]) as server:
        result = turnwire.run(
            thread(messages=[user("hi")]), container=container, base_url=server.base_url, model="m"
        )
    assert result.records.messages[0].content == "hello"
    assert "parse_text_tool_calls raised" in caplog.text
