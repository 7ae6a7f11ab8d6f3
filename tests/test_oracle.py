"""The oracles themselves: each rejects what it must (a test that cannot fail is a defect)."""

from __future__ import annotations

import pytest

from .conftest import render_body, thread, user
from .oracle import OPENAI_ONLY, OracleError, validate_body, validate_open_responses


def _body() -> dict:
    return render_body(thread(model="gpt-5", messages=[user()], tools=[{"name": "lookup"}]))


def test_a_rendered_body_passes_both():
    body = _body()
    validate_body(body)
    validate_open_responses(body)


def test_open_responses_rejects_a_message_without_its_type():
    body = _body()
    del body["input"][0]["type"]
    validate_body(body)  # OpenAI's schema allows the easy message without it
    with pytest.raises(OracleError, match="Open Responses"):
        validate_open_responses(body)


@pytest.mark.parametrize(
    ("where", "key"),
    [("body", "temperature_boost"), ("item", "nonce"), ("part", "cache_control"), ("tool", "x")],
)
def test_open_responses_forbids_unknown_keys_everywhere(where, key):
    body = _body()
    target = {
        "body": body,
        "item": body["input"][0],
        "part": body["input"][0]["content"][0],
        "tool": body["tools"][0],
    }[where]
    target[key] = 1
    with pytest.raises(OracleError, match=key):
        validate_open_responses(body)


def test_the_openai_only_options_are_listed_with_a_reason_and_accepted():
    assert all(len(reason) > 40 for reason in OPENAI_ONLY.values())
    body = {**_body(), "prompt_cache_retention": "24h"}
    validate_body(body)
    validate_open_responses(body)


def test_tool_choice_is_checked_against_the_specifications_own_type():
    body = {**_body(), "tool_choice": {"type": "function", "name": "lookup"}}
    validate_open_responses(body)
    with pytest.raises(OracleError, match=r"tool_choice\.strict"):
        validate_open_responses({**body, "tool_choice": {**body["tool_choice"], "strict": True}})


def test_includes_the_specification_lacks_are_known_exceptions_or_errors():
    validate_open_responses({**_body(), "include": ["web_search_call.action.sources"]})
    with pytest.raises(OracleError, match="include"):
        validate_open_responses({**_body(), "include": ["made.up"]})
