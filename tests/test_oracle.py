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


def _hosted_body() -> dict:
    declared = [
        {"type": "web_search", "search_context_size": "low"},
        {"type": "mcp", "server_label": "wiki", "server_url": "https://mcp.example.com/mcp"},
    ]
    allowed = {"tools": {"allow_thread_mcp_servers": ["https://mcp.example.com/*"]}}
    return render_body(
        thread(model="gpt-5", messages=[user()], tools=[{"name": "lookup"}], hosted_tools=declared),
        allowed,
    )


def test_hosted_tools_are_checked_key_for_key_against_the_sdk():
    body = _hosted_body()
    validate_body(body)
    body["tools"][2]["server_lable"] = "typo"  # the SDK's body type alone would let it through
    with pytest.raises(OracleError, match=r"tools\[2\] \(mcp\)"):
        validate_body(body)
    body = _hosted_body()
    body["tools"][1]["type"] = "made_up_tool"
    with pytest.raises(OracleError, match="unknown tool type"):
        validate_body(body)


def test_hosted_tools_the_specification_lacks_are_listed_with_a_reason():
    from turnwire.wire.tools import HOSTED_TOOL_TYPES

    from .oracle import OPENAI_ONLY_TOOLS

    assert set(OPENAI_ONLY_TOOLS) == set(HOSTED_TOOL_TYPES)
    assert all(len(reason) > 40 for reason in OPENAI_ONLY_TOOLS.values())
    body = _hosted_body()
    validate_open_responses(body)  # the function tool is still checked
    body["tools"][0]["x"] = 1
    with pytest.raises(OracleError, match="x"):
        validate_open_responses(body)
