"""Request body assembly: the key order, ``store: false`` always, options sent only where they mean
something, and the bytes JSON shows."""

from __future__ import annotations

import json
import logging

import turnwire

from ..conftest import REPLAY, make_container, render_body, thread, user

TOOL = {"name": "t"}


def test_key_order_and_store_false_always():
    body = render_body(
        thread(system_prompt="SYS", tools=[TOOL], messages=[user()]),
        {"request": {"max_output_tokens": 64, "tool_choice": "auto"}},
    )
    assert list(body) == [
        "model",
        "input",
        "stream",
        "store",
        "instructions",
        "max_output_tokens",
        "tool_choice",
        "tools",
    ]
    assert body["store"] is False and body["stream"] is True


def test_store_false_survives_non_streaming():
    body = render_body(thread(messages=[user()]), {"client": {"stream": False}})
    assert body["store"] is False and body["stream"] is False


def test_encrypted_replay_adds_the_include_once():
    body = render_body(
        thread(messages=[user()]),
        {
            **REPLAY,
            "request": {
                "include": ["reasoning.encrypted_content", "code_interpreter_call.outputs"]
            },
        },
    )
    assert body["include"] == ["reasoning.encrypted_content", "code_interpreter_call.outputs"]
    added = render_body(thread(messages=[user()]), REPLAY)
    assert added["include"] == ["reasoning.encrypted_content"]
    assert "include" not in render_body(thread(messages=[user()]))


def test_tool_choice_is_sent_only_with_tools(caplog):
    with caplog.at_level(logging.WARNING, logger="turnwire"):
        body = render_body(thread(messages=[user()]), {"request": {"tool_choice": "required"}})
    assert "tool_choice" not in body
    assert "no tool is declared" in caplog.text
    forced = render_body(
        thread(messages=[user()], tools=[TOOL]),
        {"request": {"tool_choice": {"type": "function", "name": "t"}}},
    )
    assert forced["tool_choice"] == {"type": "function", "name": "t"}


def test_stream_options_only_when_streaming():
    options = {"request": {"stream_options": {"include_obfuscation": False}}}
    assert render_body(thread(messages=[user()]), options)["stream_options"] == {
        "include_obfuscation": False
    }
    off = render_body(thread(messages=[user()]), {**options, "client": {"stream": False}})
    assert "stream_options" not in off


def test_every_wire_option_reaches_the_body():
    options = {
        "reasoning": {"effort": "low", "summary": "auto"},
        "parallel_tool_calls": False,
        "temperature": 0.5,
        "top_p": 0.9,
        "top_logprobs": 2,
        "truncation": "auto",
        "service_tier": "flex",
        "prompt_cache_key": "k",
        "prompt_cache_retention": "24h",
        "safety_identifier": "s",
        "metadata": {"a": "b"},
        "background": False,
        "text": {"verbosity": "low"},
    }
    body = render_body(thread(messages=[user()]), {"request": options})
    for key, value in options.items():
        assert body[key] == value, key


def test_the_body_bytes_are_what_json_shows():
    rendered = turnwire.render(thread(messages=[user()]), container=make_container(), model="gpt-5")
    assert json.loads(rendered.body) == rendered.json
    assert rendered.fingerprintable_length == 1
