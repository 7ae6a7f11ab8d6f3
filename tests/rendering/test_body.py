"""Request body assembly: the key order, ``store: false`` always, options sent only where they mean
something, and the bytes JSON shows."""

from __future__ import annotations

import json
import logging

import msgspec

import turnwire
from turnwire.rendering._incremental.memo import RenderMemo
from turnwire.rendering.body import checked_body, encode_body

from ..conftest import (
    REPLAY,
    make_container,
    render_body,
    thread,
    user,
)
from ._incremental.test_memo import _growing_thread

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
        "prompt_cache_key",
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


def test_a_spliced_body_is_the_encoded_body_in_a_few_pieces(monkeypatch):
    """Hundreds of requests, each growing or rewriting the tail: every body is byte for byte
    the body encoded from scratch, and its pieces stay few (merged, never one per request)."""
    from turnwire.rendering import body as request_module

    monkeypatch.setattr(request_module, "SEGMENT_BYTES", 4096)  # full segments early
    good = turnwire.api.render(_growing_thread(2), container=make_container(REPLAY)).request
    memo = RenderMemo()
    item = turnwire.wire.InputMessage(role="user", content=(turnwire.wire.InputText(text="x"),))
    items = list(good.input)
    most = 0
    for step in range(400):
        if step % 7 == 6:
            del items[-3:]  # a cut inside a merged segment, then growth from there
        items.append(
            msgspec.structs.replace(item, content=(turnwire.wire.InputText(text=f"{step}" * 40),))
        )
        body = msgspec.structs.replace(good, input=tuple(items))
        encoded = checked_body(body, memo)
        assert bytes(encoded) == encode_body(body)
        assert len(encoded) == len(encode_body(body))
        most = max(most, len(encoded.parts))
    total = len(encode_body(body))
    assert most <= total // 4096 + 16, most  # full segments, plus a short run of smaller ones
    assert most > 3  # the body really was spliced, not encoded whole


def test_an_encoded_body_joins_once():
    from turnwire.rendering.body import EncodedBody

    body = EncodedBody((b'{"a":', memoryview(b"[1,2,3]")[:4], b"]}"))
    assert bytes(body) == b'{"a":[1,2]}'
    joined = bytes(body)
    assert bytes(body) is joined  # kept, not joined again
    assert len(body) == len(bytes(body))
    assert "bytes in 3 parts" in repr(body)


def test_the_reasoning_free_body_shape_is_unchanged_by_msgspec_defaults():
    """`store` has no default, so omit_defaults can never drop it."""
    body = turnwire.render(thread(messages=[user()]), container=make_container(), model="m").request
    assert b'"store":false' in encode_body(body)
