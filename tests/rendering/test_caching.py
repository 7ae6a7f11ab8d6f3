"""Prompt caching in the body: the key derived from the thread's identity, ``none`` and a
string, the breakpoint ``auto`` places (and the bytes ``off`` leaves alone), the options as the
official types define them, and what the compact endpoint's body keeps of them."""

from __future__ import annotations

import hashlib
import logging
import re

import msgspec
import pytest

import turnwire
from turnwire.errors import ConfigError
from turnwire.model.hosted import thread_anchor
from turnwire.rendering.caching import KEY_DOMAIN, thread_cache_key
from turnwire.rendering.compaction import compact_body

from ..conftest import assistant, at, make_container, render_body, thread, user
from ..oracle import validate_body, validate_compact_body, validate_open_responses

KEY = re.compile(r"^tw-[0-9a-f]{32}$")
BREAKPOINT = {"mode": "explicit"}


def _turns(*ids: str) -> turnwire.Thread:
    """A thread of user/assistant turns (``u1``, ``a1``, ``u2`` ...), one second apart."""
    records = [
        user(mid, f"question {mid}", second)
        if mid.startswith("u")
        else assistant(mid, "ok", second)
        for second, mid in enumerate(ids)
    ]
    return thread(model="gpt-5", system_prompt="You are terse.", messages=records)


def _breakpoints(body: dict) -> list[tuple[int, int]]:
    """Where the body carries a breakpoint: ``(item, block)`` pairs."""
    found = []
    for index, item in enumerate(body["input"]):
        blocks = item.get("content", item.get("output"))
        for block_index, block in enumerate(blocks if isinstance(blocks, list) else ()):
            if "prompt_cache_breakpoint" in block:
                found.append((index, block_index))
    return found


# ---------------------------------------------------------------------- the key


def test_a_thread_file_sends_a_key_derived_from_its_opening_record_on_every_turn():
    first = render_body(_turns("u1"))
    later = render_body(_turns("u1", "a1", "u2", "a2", "u3"))
    other = render_body(_turns("u9", "a1", "u2"))
    key = first["prompt_cache_key"]
    assert KEY.match(key)
    assert later["prompt_cache_key"] == key  # stable across turns
    assert other["prompt_cache_key"] != key  # another opening record: another thread
    anchor = thread_anchor(_turns("u1"))
    assert key == thread_cache_key(anchor)
    assert "u1" not in key and anchor not in key


def test_a_stored_thread_key_comes_from_the_identity_given_not_the_records():
    stored = turnwire.render(_turns("u1"), container=make_container(), cache_identity="thr_1")
    body = stored.json
    assert body["prompt_cache_key"] == thread_cache_key("thr_1")
    assert body["prompt_cache_key"] != render_body(_turns("u1"), model=None)["prompt_cache_key"]
    assert "thr_1" not in stored.body.decode()
    # a SHA-256 under a domain of its own, never the bare hash of the identity
    digest = hashlib.sha256(KEY_DOMAIN + b"thr_1").hexdigest()
    assert body["prompt_cache_key"] == "tw-" + digest[:32]
    assert body["prompt_cache_key"] != "tw-" + hashlib.sha256(b"thr_1").hexdigest()[:32]
    assert thread_cache_key("") is None  # a thread with no record yet: no key


def test_prompt_cache_key_none_or_null_sends_none_and_any_other_string_goes_as_it_is():
    sent = {
        setting: render_body(_turns("u1"), {"request": {"prompt_cache_key": setting}})
        for setting in ("thread", "none", None, "tenant-42")
    }
    assert KEY.match(sent["thread"]["prompt_cache_key"])
    assert "prompt_cache_key" not in sent["none"]
    assert "prompt_cache_key" not in sent[None]
    assert sent["tenant-42"]["prompt_cache_key"] == "tenant-42"


# ---------------------------------------------------------------------- breakpoints


def test_breakpoints_are_off_by_default_and_off_changes_no_byte():
    container = make_container({"request": {"prompt_cache_breakpoints": "off"}})
    off = turnwire.render(_turns("u1", "a1", "u2"), container=container)
    default = turnwire.render(_turns("u1", "a1", "u2"), container=make_container())
    assert off.body == default.body
    assert b"prompt_cache_breakpoint" not in off.body
    assert b"prompt_cache_options" not in off.body
    assert off.request.input is off.rendered.input  # the rendered items, untouched
    # A block without a breakpoint encodes exactly as before the field existed.
    text = turnwire.wire.InputText(text="x")
    assert msgspec.json.encode(text) == b'{"type":"input_text","text":"x"}'


def test_auto_marks_the_leading_system_item_when_the_system_prompt_goes_as_an_item():
    settings = {
        "render": {"system_prompt_channel": "developer-item"},
        "request": {"prompt_cache_breakpoints": "auto"},
    }
    body = render_body(_turns("u1", "a1", "u2"), settings)
    assert body["input"][0]["role"] == "developer"
    assert _breakpoints(body) == [(0, 0)]  # one: well inside the four-write budget
    assert body["input"][0]["content"][0] == {
        "type": "input_text",
        "text": "You are terse.",
        "prompt_cache_breakpoint": BREAKPOINT,
    }
    validate_body(body)  # the official types: prompt_cache_breakpoint on an input_text
    validate_open_responses(body)


def test_auto_marks_the_last_block_before_the_newest_user_message():
    settings = {"request": {"prompt_cache_breakpoints": "auto"}}
    body = render_body(_turns("u1", "a1", "u2", "a2", "u3"), settings)
    assert "instructions" in body  # the system prompt is no item
    # a2 (assistant, string content) cannot carry one: u2's last block does.
    assert body["input"][3]["role"] == "assistant"
    assert _breakpoints(body) == [(2, len(body["input"][2]["content"]) - 1)]
    assert body["input"][2]["role"] == "user" and "question u2" in str(body["input"][2])
    validate_body(body)
    # A first question has nothing before it to mark.
    assert _breakpoints(render_body(_turns("u1"), settings)) == []


def test_auto_passes_over_tool_results_given_as_text():
    settings = {"request": {"prompt_cache_breakpoints": "auto"}}
    tool = {"name": "get_weather", "parameters": {"type": "object"}}
    call = {
        "id": "c1",
        "tool": "get_weather",
        "args": {},
        "created_at": at(1),
        "result": {"text": "21C"},
    }
    records = [user("u1", "weather?", 0), assistant("a1", "21C.", 2), user("u2", "more", 3)]
    body = render_body(thread(messages=records, tools=[tool], tool_calls=[call]), settings)
    kinds = [item.get("type") for item in body["input"]]
    assert kinds == ["message", "function_call", "function_call_output", "message", "message"]
    assert _breakpoints(body) == [(0, len(body["input"][0]["content"]) - 1)]


def test_a_warm_render_reuses_the_marked_item_and_gives_the_cold_bytes():
    settings = {"request": {"prompt_cache_breakpoints": "auto"}}
    renderer = turnwire.Renderer(container=make_container(settings))
    first = renderer.render(_turns("u1", "a1", "u2"))
    again = renderer.render(_turns("u1", "a1", "u2"))
    assert again.request.input[0] is first.request.input[0]  # the same marked object
    grown = renderer.render(_turns("u1", "a1", "u2", "a2", "u3"))
    cold = turnwire.render(_turns("u1", "a1", "u2", "a2", "u3"), container=make_container(settings))
    assert grown.body == cold.body
    assert _breakpoints(grown.json) == [(2, 0)]


# ---------------------------------------------------------------------- options


def test_prompt_cache_options_are_sent_as_the_official_types_define_them():
    options = {"comparison_response_id": "resp_1", "mode": "implicit", "prewarm": False}
    body = render_body(
        _turns("u1"), {"request": {"prompt_cache_options": {**options, "ttl": "30m"}}}
    )
    assert body["prompt_cache_options"] == {**options, "ttl": "30m"}
    validate_body(body)
    # 12h: the official types (openai 3.57) take it; the OpenAPI snapshot the render oracle
    # also reads predates it (30m only), so this body goes to the official types alone.
    request = make_container({"request": {"prompt_cache_options": {"ttl": "12h"}}}).settings()
    twelve = msgspec.to_builtins(request.request.prompt_cache_options)
    assert twelve == {"ttl": "12h"}
    validate_body({**body, "prompt_cache_options": twelve})
    for bad in ({"ttl": "1h"}, {"mode": "always"}, {"cache_control": "ephemeral"}):
        with pytest.raises(ConfigError, match="prompt_cache_options"):
            make_container({"request": {"prompt_cache_options": bad}}).settings()


def test_explicit_mode_without_a_breakpoint_warns_that_nothing_is_cached(caplog):
    explicit = {"prompt_cache_options": {"mode": "explicit"}}
    with caplog.at_level(logging.WARNING, logger="turnwire"):
        render_body(_turns("u1", "a1", "u2"), {"request": explicit})
    assert "no prompt caching" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="turnwire"):
        body = render_body(
            _turns("u1", "a1", "u2"), {"request": {**explicit, "prompt_cache_breakpoints": "auto"}}
        )
    assert "no prompt caching" not in caplog.text and _breakpoints(body)


def test_the_compact_body_keeps_the_key_the_breakpoint_and_the_options_compact_takes():
    settings = {
        "request": {
            "prompt_cache_breakpoints": "auto",
            "prompt_cache_options": {
                "mode": "explicit",
                "ttl": "30m",
                "prewarm": True,
                "comparison_response_id": "resp_1",
            },
        }
    }
    rendered = turnwire.render(
        _turns("u1", "a1", "u2"), container=make_container(settings), cache_identity="thr_1"
    )
    body = msgspec.json.decode(compact_body(rendered.body))
    assert body["prompt_cache_key"] == thread_cache_key("thr_1")
    # compact takes mode and ttl (30m only): neither prewarm nor comparison_response_id
    assert body["prompt_cache_options"] == {"mode": "explicit", "ttl": "30m"}
    assert body["input"] == rendered.json["input"]
    assert _breakpoints(body) == [(0, 0)]
    validate_compact_body(body)
    # a 12h ttl, which compact does not take, is left out (compact writes its default, 30m)
    twelve = {"prompt_cache_options": {"mode": "implicit", "ttl": "12h"}}
    encoded = msgspec.json.encode({**rendered.json, **twelve})
    assert msgspec.json.decode(compact_body(encoded))["prompt_cache_options"] == {
        "mode": "implicit"
    }
    bare = turnwire.render(
        _turns("u1"),
        container=make_container({"request": {"prompt_cache_options": {"prewarm": True}}}),
    )
    assert "prompt_cache_options" not in msgspec.json.decode(compact_body(bare.body))
