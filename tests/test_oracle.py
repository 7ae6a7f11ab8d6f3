"""The oracles themselves: each rejects what it must (a test that cannot fail is a defect)."""

from __future__ import annotations

import json

import pytest

from .conftest import CONFORMANCE, render_body, thread, user
from .oracle import (
    OPENAI_ONLY,
    OPENAPI_RELAXED,
    OracleError,
    validate_body,
    validate_open_responses,
    validate_openapi,
)


def _body() -> dict:
    return render_body(thread(model="gpt-5", messages=[user()], tools=[{"name": "lookup"}]))


def test_a_rendered_body_passes_all_three():
    body = _body()
    validate_body(body)
    validate_open_responses(body)
    validate_openapi(body)


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
    from turnwire.wire.tools import CLIENT_TOOL_TYPES, HOSTED_TOOL_TYPES

    from .oracle import OPENAI_ONLY_TOOLS

    assert set(OPENAI_ONLY_TOOLS) == set(HOSTED_TOOL_TYPES) | set(CLIENT_TOOL_TYPES)
    assert all(len(reason) > 40 for reason in OPENAI_ONLY_TOOLS.values())
    body = _hosted_body()
    validate_open_responses(body)  # the function tool is still checked
    body["tools"][0]["x"] = 1
    with pytest.raises(OracleError, match="x"):
        validate_open_responses(body)


def test_the_sdk_oracle_checks_the_elements_of_the_sdks_iterables():
    # The SDK types most arrays as Iterable[...], which pydantic checks only as they are read.
    body = _body()
    body["input"][0]["content"].append({"type": "input_text"})  # no text
    with pytest.raises(OracleError, match=r"input\[0\] \(message\)"):
        validate_body(body)
    search = {
        "type": "web_search_call",
        "id": "ws_1",
        "status": "completed",
        "action": {"type": "search", "query": "q", "sources": [{"type": "api", "name": "w"}]},
    }
    with pytest.raises(OracleError, match=r"input\[1\] \(web_search_call\)"):
        validate_body({**_body(), "input": [*_body()["input"], search]})


def _openapi_rejects(body: dict, where: str) -> None:
    with pytest.raises(OracleError, match="OpenAPI") as caught:
        validate_openapi(body)
    assert where in str(caught.value), str(caught.value)


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (lambda b: b["input"][0].__setitem__("role", "robot"), "input[0]"),
        (lambda b: b["input"][0]["content"][0].pop("text"), "input[0]"),
        (lambda b: b["input"].append({"type": "function_call", "name": "f"}), "input[1]"),
        (lambda b: b["input"].append({"type": "reasoning", "id": "rs_1"}), "input[1]"),
        (
            lambda b: b["input"].append(
                {"type": "web_search_call", "id": "ws", "status": "done", "action": {}}
            ),
            "input[1]",
        ),
        (lambda b: b.__setitem__("store", "no"), "body.store"),
        (lambda b: b.__setitem__("tools", [{"type": "function"}]), "body.tools[0]"),
    ],
)
def test_the_openapi_oracle_rejects_what_the_description_forbids(change, where):
    body = _body()
    validate_openapi(body)
    change(body)
    _openapi_rejects(body, where)


def _recorded_requests() -> list:
    folder = CONFORMANCE / "requests"
    return sorted(folder.glob("*.json"))


@pytest.mark.parametrize("path", _recorded_requests(), ids=lambda p: p.name)
def test_every_request_the_api_accepted_passes_the_openapi_oracle(path):
    validate_openapi(json.loads(path.read_text()))


_CONTRADICTED = {
    "mcp_approval_response without request_id": {
        "type": "mcp_approval_response",
        "approval_request_id": "mcpr_1",
        "approve": True,
    },
    "local_shell_call_output without call_id": {
        "type": "local_shell_call_output",
        "id": "call_1",
        "output": "done",
    },
}


@pytest.mark.parametrize("name", sorted(OPENAPI_RELAXED))
def test_each_relaxation_of_the_description_is_needed(name):
    recording, _ = OPENAPI_RELAXED[name]
    others = frozenset(OPENAPI_RELAXED) - {name}
    if recording:
        body = json.loads((CONFORMANCE / "requests" / recording).read_text())
    else:  # the description contradicts itself: a rendered item stands for the API's
        item = _CONTRADICTED[name]
        body = {**_body(), "input": [item]}
        validate_body(body)  # the SDK's type takes it
    validate_openapi(body)
    with pytest.raises(OracleError, match="OpenAPI"):
        validate_openapi(body, relaxed=others)


def test_the_openapi_oracle_reads_a_compact_body_as_the_compact_endpoints():
    body = {"model": "gpt-5", "input": _body()["input"]}
    validate_openapi(body, compact=True)
    with pytest.raises(OracleError, match=r"OpenAPI: compact body\.model"):
        validate_openapi({**body, "model": 5}, compact=True)
    with pytest.raises(OracleError, match=r"OpenAPI \(message\): input\[0\]"):
        validate_openapi({**body, "input": [{"role": "robot", "content": "x"}]}, compact=True)


def test_the_openapi_verdicts_kept_for_items_do_not_stand_for_bodies():
    # the same JSON text, valid as an item and invalid as a body without input
    twin = {"role": "user", "content": "hi", "model": 5, "input": []}
    validate_openapi({"model": "gpt-5", "input": [dict(twin)]})
    with pytest.raises(OracleError, match=r"body\.model"):
        validate_openapi(dict(twin))


def test_the_openapi_oracle_takes_a_string_input():
    validate_openapi({"model": "gpt-5", "input": "hello"})
    with pytest.raises(OracleError, match=r"body\.input"):
        validate_openapi({"model": "gpt-5", "input": 5})


ACCEPTED = sorted((CONFORMANCE / "requests").glob("*.json"))


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
