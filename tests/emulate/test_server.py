"""The emulator on its socket, driven by the official SDK (streamed and not) and by turnwire's
own client; scripted errors, cut and stalled streams; input it must survive."""

from __future__ import annotations

import socket
from pathlib import Path

import httpx
import openai
import pytest

import turnwire
import turnwire.testing

from .conftest import SCRIPT


def test_a_scripted_stream_the_sdk_parses(api, sdk):
    api.script(SCRIPT)
    with sdk.responses.stream(
        model="gpt-5", input="What's the weather?", include=["reasoning.encrypted_content"]
    ) as stream:
        events = list(stream)
        final = stream.get_final_response()
    assert [event.sequence_number for event in events] == list(range(len(events)))
    assert events[0].type == "response.created"
    assert events[-1].type == "response.completed"
    reasoning, call = final.output
    assert reasoning.type == "reasoning"
    assert reasoning.summary[0].text == "Looking up the weather"
    assert reasoning.encrypted_content
    assert (call.type, call.name, call.arguments) == (
        "function_call",
        "get_weather",
        '{"city":"Paris"}',
    )
    deltas = [event for event in events if event.type == "response.function_call_arguments.delta"]
    assert "".join(event.delta for event in deltas) == call.arguments


def test_a_streamed_text_and_the_same_as_json(api, sdk):
    api.script(SCRIPT)
    with sdk.responses.stream(model="gpt-5", input="Hi") as stream:
        texts = [event.delta for event in stream if event.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert "".join(texts) == final.output_text == "Hello there, friend."
    assert sdk.responses.create(model="gpt-5", input="Hi").output_text == "Hello there, friend."


def test_matched_answers_repeat_and_plain_ones_play_once_in_order(api, sdk):
    api.script({"answers": [{"text": "one"}, {"text": "two"}], "default": {"text": "rest"}})
    said = [sdk.responses.create(model="gpt-5", input="Hi").output_text for _ in range(3)]
    assert said == ["one", "two", "rest"]


def test_turnwire_runs_a_tool_loop_against_it(api):
    api.script(SCRIPT)
    thread = {
        "version": 1,
        "model": "gpt-5",
        "tools": [
            {
                "name": "get_weather",
                "description": "Current weather for a city",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                },
            }
        ],
        "messages": [
            {
                "id": "u1",
                "role": "user",
                "content": "What's the weather in Paris?",
                "created_at": "2026-01-01T10:00:00Z",
                "seq": 0,
            }
        ],
    }
    result = turnwire.run(
        thread, base_url=api.base_url, api_key="x", handlers={"get_weather": lambda city: "21C"}
    )
    assert result.text == "It is sunny in Paris."
    first, second = api.emulator.exchanges
    assert (first.status, second.status) == (200, 200)
    replayed = [item.get("type", "message") for item in second.json()["input"]]
    assert replayed[-2:] == ["function_call", "function_call_output"]
    assert second.rule is None


def test_a_scripted_429_with_retry_after(api, sdk):
    api.script(
        [
            {
                "error": {
                    "status": 429,
                    "message": "Slow down",
                    "type": "rate_limit_error",
                    "retry_after": 2,
                }
            }
        ]
    )
    with pytest.raises(openai.RateLimitError) as caught:
        sdk.responses.create(model="gpt-5", input="Hi")
    assert caught.value.response.headers["retry-after"] == "2"
    assert caught.value.message.endswith("Slow down")


def test_a_cut_stream(api, sdk):
    api.script([{"text": "A long answer", "cut_after": 3}])
    with pytest.raises((httpx.RemoteProtocolError, openai.APIError)):
        with sdk.responses.stream(model="gpt-5", input="Hi") as stream:
            for _ in stream:
                pass
            stream.get_final_response()


def test_a_stalled_stream_times_the_client_out(api):
    api.script([{"text": "A long answer", "stall_after": 2}])
    with openai.OpenAI(base_url=api.base_url, api_key="x", max_retries=0, timeout=0.5) as sdk:
        with pytest.raises((httpx.ReadTimeout, openai.APITimeoutError)):
            with sdk.responses.stream(model="gpt-5", input="Hi") as stream:
                for _ in stream:
                    pass


def test_input_tokens(sdk):
    counted = sdk.responses.input_tokens.count(model="gpt-5", input="Hello there")
    assert counted.input_tokens > 0


def test_it_survives_bad_connections(api, sdk):
    host, port = api.base_url.split("//")[1].split("/")[0].split(":")
    for raw in (
        b"garbage\r\n\r\n",
        b"POST /v1/responses HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n",
        b"POST /v1/responses HTTP/1.1\r\nContent-Length: -5\r\n\r\n",
        b"POST /v1/responses HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"POST /v1/responses HTTP/1.1\r\nContent-Length: 100\r\n\r\n{",  # then hangs up
    ):
        with socket.create_connection((host, int(port)), timeout=5) as connection:
            connection.sendall(raw)
            connection.shutdown(socket.SHUT_WR)
            answer = connection.recv(65536)
        if raw.startswith(b"POST"):
            assert answer == b"" or answer.split(b" ")[1] in (b"400", b"411", b"413")
    assert sdk.responses.create(model="gpt-5", input="Hi").status == "completed"


def test_a_script_file(tmp_path: Path):
    script = tmp_path / "answers.yaml"
    script.write_text("answers:\n  - text: From a file.\n")
    with turnwire.testing.emulator(script=script) as api:
        with openai.OpenAI(base_url=api.base_url, api_key="x", max_retries=0) as sdk:
            assert sdk.responses.create(model="gpt-5", input="Hi").output_text == "From a file."


def test_a_bad_script_names_the_place(tmp_path: Path):
    script = tmp_path / "answers.yaml"
    script.write_text("answers:\n  - txt: typo\n")
    with pytest.raises(turnwire.ConfigError) as caught:
        turnwire.testing.emulator(script=script).__enter__()
    assert "answers[0]" in caught.value.path
