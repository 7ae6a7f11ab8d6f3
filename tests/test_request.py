"""Request body assembly and the preflight wire check, against recorded real requests."""

from __future__ import annotations

import json
import logging

import pytest

import turnwire
from turnwire import PreflightError
from turnwire.rendering.preflight import preflight

from .conftest import CONFORMANCE, REPLAY, at, make_container, render_body, thread, user
from .oracle import validate_body

ACCEPTED = sorted((CONFORMANCE / "requests").glob("*.json"))
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


# ------------------------------------------------------------------ preflight rules


def _body(*items, **extra):
    return {"model": "m", "input": list(items), "store": False, **extra}


USER = {"role": "user", "content": "hi"}
RS = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e"}
FC = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}
FCO = {"type": "function_call_output", "call_id": "c1", "output": "x"}

VIOLATIONS = [
    ("non-empty-input", _body(), None),
    ("max-output-tokens", _body(USER, max_output_tokens=8), None),
    ("reasoning-partner", _body(USER, RS), 1),
    ("reasoning-partner", _body(USER, RS, {"role": "assistant", "content": "x"}), 1),
    ("reasoning-partner", _body(USER, RS, {**RS, "id": "rs_2"}, {**FC, "id": "fc_1"}, FCO), 1),
    (
        "reasoning-encrypted",
        _body(USER, {**RS, "encrypted_content": None}, {**FC, "id": "fc_1"}, FCO),
        1,
    ),
    ("item-id-prefix", _body(USER, {**FC, "id": "call_1"}, FCO), 1),
    (
        "item-id-prefix",
        _body(
            USER,
            {
                "type": "message",
                "role": "assistant",
                "id": "lc_1",
                "status": "completed",
                "content": [],
            },
        ),
        1,
    ),
    ("call-id-length", _body(USER, {**FC, "call_id": "c" * 65}, {**FCO, "call_id": "c" * 65}), 1),
    ("call-output-pairing", _body(USER, FCO), 1),
    ("call-output-pairing", _body(USER, FC), 1),
    (
        "duplicate-id",
        _body(USER, {**FC, "id": "fc_1"}, FCO, {**FC, "call_id": "c2", "id": "fc_1"}),
        3,
    ),
    ("duplicate-id", _body(USER, FC, FCO, FC), 3),
    (
        "assistant-input-text",
        _body(USER, {"role": "assistant", "content": [{"type": "input_text", "text": "x"}]}),
        1,
    ),
    ("json-object-needs-json", _body(USER, text={"format": {"type": "json_object"}}), None),
]


@pytest.mark.parametrize(
    ("rule", "body", "index"),
    VIOLATIONS,
    ids=[f"{r}-{i}" for i, (r, _, _) in enumerate(VIOLATIONS)],
)
def test_each_rule_names_the_item_and_the_rule(rule, body, index):
    with pytest.raises(PreflightError) as caught:
        preflight(body)
    assert caught.value.rule == rule
    assert caught.value.index == index
    where = "body" if index is None else f"input[{index}]"
    assert str(caught.value).startswith(f"{where}: ") and f"rule {rule}" in str(caught.value)


def test_a_valid_tool_round_trip_passes():
    preflight(
        _body(
            USER,
            RS,
            {**FC, "id": "fc_1"},
            FCO,
            text={"format": {"type": "json_object"}},
            max_output_tokens=16,
        )
        | {"input": [{"role": "user", "content": "answer in JSON"}, RS, {**FC, "id": "fc_1"}, FCO]}
    )


@pytest.mark.parametrize("path", ACCEPTED, ids=[p.stem for p in ACCEPTED])
def test_recorded_accepted_requests_pass(path):
    preflight(json.loads(path.read_text()))


def test_the_recorded_rejected_pairing_request_fails_with_the_pairing_rule():
    body = json.loads(
        (
            CONFORMANCE / "requests" / "rejected" / "reasoning_without_following_item_gpt-5.json"
        ).read_text()
    )
    with pytest.raises(PreflightError) as caught:
        preflight(body)
    assert caught.value.rule == "reasoning-partner" and caught.value.index == 1
    answer = json.loads(
        (CONFORMANCE / "responses" / "error_400_reasoning_without_following_item.json").read_text()
    )
    assert "without its required following item" in json.dumps(answer)


@pytest.mark.parametrize("path", ACCEPTED, ids=[p.stem for p in ACCEPTED])
def test_the_oracle_accepts_what_the_real_api_accepted(path):
    """Keeps the oracle honest: it must not reject bodies the API took.

    Two known gaps of the SDK types are set aside: ``"status": null`` (the API accepted it;
    turnwire never sends it) and ``compaction`` items.
    """
    body = json.loads(path.read_text())
    body["input"] = [
        {key: value for key, value in item.items() if not (key == "status" and value is None)}
        for item in body["input"]
        if item.get("type") != "compaction"
    ]
    body.pop("previous_response_id", None)
    validate_body(body)


def test_render_refuses_a_body_that_breaks_a_rule():
    t = thread(messages=[user()], tool_calls=[{"id": "c1", "tool": "t", "created_at": at(1)}])
    with pytest.raises(PreflightError) as caught:
        turnwire.render(t, container=make_container(), model="gpt-5")
    assert caught.value.rule == "call-output-pairing" and caught.value.index == 1
