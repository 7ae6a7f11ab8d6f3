"""Each rule: a request that breaks it gets the API's status and error body, through the
official SDK; the recorded rejections get what the API answered."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

import turnwire.testing
from turnwire.emulate import RULES
from turnwire.rendering.preflight import PREFLIGHT_RULES

CONFORMANCE = Path(__file__).resolve().parents[1] / "data" / "conformance"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "emulate.md"

USER = {"role": "user", "content": "Hi"}


def _call(call_id: str = "call_1", **extra: Any) -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": "f", "arguments": "{}", **extra}


def _output(call_id: str = "call_1") -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": "ok"}


def _refused(sdk: openai.OpenAI, **request: Any) -> openai.APIStatusError:
    request.setdefault("model", "gpt-5")
    with pytest.raises(openai.APIStatusError) as caught:
        sdk.responses.create(**request)
    return caught.value


def _error(err: openai.APIStatusError) -> dict[str, Any]:
    body = err.response.json()
    assert list(body) == ["error"]
    return body["error"]


def test_every_preflight_rule_and_every_rule_has_an_answer_with_evidence():
    assert [name for name in PREFLIGHT_RULES if name not in RULES] == []
    for name, rule in RULES.items():
        assert rule.evidence, name
        assert 400 <= rule.status < 600, name


def test_the_emulate_page_names_every_rule_with_its_evidence():
    page = DOCS.read_text(encoding="utf-8")
    named = re.findall(r"^\| `([a-z-]+)` \|", page, re.M)
    assert sorted(named) == sorted(RULES)


def test_a_valid_conversation_passes(sdk):
    response = sdk.responses.create(
        model="gpt-5", input=[USER, _call(), _output(), {"role": "user", "content": "And?"}]
    )
    assert response.status == "completed"
    assert response.output_text


# Each request the API refused (tests/data/conformance/requests/rejected), with its answer.
REJECTED = {
    "reasoning_without_following_item_gpt-5.json": "error_400_reasoning_without_following_item",
    "function_call_output_input_file_url_mp3_gpt-5-mini.json": "error_400_unsupported_file",
}


def test_every_recorded_rejection_is_listed():
    listed = {path.name for path in (CONFORMANCE / "requests/rejected").glob("*.json")}
    assert listed == set(REJECTED)


@pytest.mark.parametrize(("request_file", "answer_file"), sorted(REJECTED.items()))
def test_a_recorded_rejection_gets_the_recorded_answer(api, request_file, answer_file):
    request = (CONFORMANCE / "requests/rejected" / request_file).read_bytes()
    recorded = json.loads((CONFORMANCE / "responses" / f"{answer_file}.json").read_text())
    answer = httpx.post(f"{api.base_url}/responses", content=request)
    assert answer.status_code == 400
    assert answer.json() == recorded


@pytest.mark.parametrize(
    "part",
    [
        {"type": "input_file", "file_url": "https://example.com/a/talk.MP3?x=1"},
        {"type": "input_file", "filename": "clip.mp4", "file_data": "data:;base64,AAAA"},
        {"type": "input_file", "filename": "x", "file_data": "data:audio/wav;base64,AAAA"},
    ],
)
def test_a_sound_or_video_file_is_unsupported(sdk, part):
    err = _refused(sdk, input=[{"role": "user", "content": [part]}])
    assert (err.status_code, err.code, err.param) == (400, "unsupported_file", "input")


@pytest.mark.parametrize(
    ("tools", "path"),
    [
        ([{"type": "function", "name": "get.weather", "parameters": {}}], "tools[0].name"),
        (
            [
                {"type": "function", "name": "ok", "parameters": {}},
                {
                    "type": "namespace",
                    "name": "crm",
                    "description": "d",
                    "tools": [{"type": "custom", "name": "look up"}],
                },
            ],
            "tools[1].tools[0].name",
        ),
    ],
)
def test_a_tool_name_outside_the_api_s_pattern(sdk, tools, path):
    err = _refused(sdk, input="hi", tools=tools)
    assert (err.status_code, err.code, err.param) == (400, "invalid_value", path)
    assert _error(err)["message"] == (
        f"Invalid '{path}': string does not match pattern. Expected a string that matches the "
        "pattern '^[a-zA-Z0-9_-]+$'."
    )


def test_a_document_file_is_taken(sdk):
    part = {"type": "input_file", "file_url": "https://example.com/report.pdf"}
    sdk.responses.create(model="gpt-5", input=[{"role": "user", "content": [part]}])


def test_recorded_accepted_requests_pass_or_fail_only_on_foreign_state(api):
    # Their encrypted_content was minted by the real API, so it is foreign to the emulator.
    passed = 0
    for path in sorted((CONFORMANCE / "requests").glob("*.json")):
        answer = httpx.post(f"{api.base_url}/responses", content=path.read_bytes())
        if answer.status_code == 200:
            passed += 1
            continue
        error = answer.json()["error"]
        assert (answer.status_code, error["code"]) == (400, "invalid_encrypted_content"), path.name
    assert passed >= 5


def test_reasoning_without_its_partner_names_the_item(sdk):
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "x"}
    err = _refused(sdk, input=[USER, reasoning, {"role": "assistant", "content": "Hi"}])
    assert isinstance(err, openai.BadRequestError)
    assert _error(err) == {
        "message": "Item 'rs_1' of type 'reasoning' was provided without its required "
        "following item.",
        "type": "invalid_request_error",
        "param": "input",
        "code": None,
    }


def test_reasoning_without_encrypted_content_is_not_found(sdk):
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": []}
    err = _refused(sdk, store=False, input=[USER, reasoning, {**_call(), "id": "fc_1"}, _output()])
    assert isinstance(err, openai.NotFoundError)
    assert _error(err)["message"].startswith("Item with id 'rs_1' not found.")


def test_call_id_over_64_characters(sdk):
    long = "c" * 70
    err = _refused(sdk, input=[USER, _call(long), _output(long)])
    assert isinstance(err, openai.BadRequestError)
    assert (err.code, err.param) == ("string_above_max_length", "input[1].call_id")
    assert "got a string with length 70 instead" in _error(err)["message"]


def test_a_compaction_trigger_anywhere_but_last(sdk):
    err = _refused(sdk, input=[{"type": "compaction_trigger"}, USER])
    assert isinstance(err, openai.BadRequestError)
    assert _error(err)["message"] == "The 'compaction_trigger' item must be the final input item."
    assert err.param == "input"
    # last, as the API wants it: accepted
    sdk.responses.create(model="gpt-5", input=[USER, {"type": "compaction_trigger"}])


def test_a_call_without_its_output(sdk):
    err = _refused(sdk, input=[USER, _call("call_9")])
    assert isinstance(err, openai.BadRequestError)
    assert _error(err)["message"] == "No tool output found for function call call_9."
    assert err.param == "input"


def test_an_output_without_its_call(sdk):
    err = _refused(sdk, input=[USER, _output("call_9")])
    assert _error(err)["message"] == (
        "No tool call found for function call output with call_id call_9."
    )


def test_an_id_used_twice(sdk):
    message = {"type": "message", "role": "assistant", "id": "msg_1", "content": "a"}
    err = _refused(sdk, input=[USER, message, message])
    assert _error(err)["message"].startswith("Duplicate item found with id msg_1.")


def test_an_id_with_the_wrong_prefix(sdk):
    err = _refused(sdk, input=[USER, _call(id="call_1x"), _output()])
    assert (err.code, err.param) == ("invalid_id_prefix", "input[1].id")
    assert (
        _error(err)["message"]
        == "Invalid 'input[1].id': 'call_1x'. Expected an ID that begins with 'fc'."
    )


def test_assistant_input_text(sdk):
    message = {"role": "assistant", "content": [{"type": "input_text", "text": "a"}]}
    err = _refused(sdk, input=[USER, message])
    assert (err.code, err.param) == ("invalid_value", "input[1].content[0]")


def test_json_object_without_the_word(sdk):
    err = _refused(sdk, input=[USER], text={"format": {"type": "json_object"}})
    assert err.param == "text.format"


def test_max_output_tokens_below_16(sdk):
    err = _refused(sdk, input=[USER], max_output_tokens=10)
    assert (err.code, err.param) == ("integer_below_min_value", "max_output_tokens")
    assert "but got 10 instead" in _error(err)["message"]


def test_empty_input(sdk):
    err = _refused(sdk, input=[])
    assert err.param == "input"


def test_unknown_fields_top_level_and_in_an_item(sdk):
    err = _refused(sdk, input=[USER], extra_body={"temprature": 1})
    assert (err.code, err.param) == ("unknown_parameter", "temprature")
    err = _refused(sdk, input=[{**USER, "colour": "red"}])
    assert (err.code, err.param) == ("unknown_parameter", "input[0].colour")
    assert _error(err)["message"] == "Unknown parameter: 'input[0].colour'."


def test_unknown_fields_in_a_part_of_an_item(sdk):
    image = {"type": "input_image", "image_url": "https://example.com/a.png", "size": 3}
    err = _refused(
        sdk, input=[{"role": "user", "content": [{"type": "input_text", "text": "Hi"}, image]}]
    )
    assert (err.code, err.param) == ("unknown_parameter", "input[0].content[1].size")
    assert _error(err)["message"] == "Unknown parameter: 'input[0].content[1].size'."
    said = {"type": "output_text", "text": "Hi", "annotations": [], "logprobs": [], "mood": "ok"}
    reply = {"type": "message", "role": "assistant", "content": [said]}
    err = _refused(sdk, input=[USER, reply])
    assert err.param == "input[1].content[0].mood"
    output = {**_output(), "output": [{"type": "input_text", "text": "ok", "bold": True}]}
    err = _refused(sdk, input=[USER, _call(), output])
    assert err.param == "input[2].output[0].bold"
    # Every field the official types know passes, in each kind of part.
    said.pop("mood")
    parts = [
        {"type": "input_text", "text": "Hi", "prompt_cache_breakpoint": {"mode": "auto"}},
        {"type": "input_image", "image_url": "https://example.com/a.png", "detail": "low"},
    ]
    answer = sdk.responses.create(
        model="gpt-5", input=[{"role": "user", "content": parts}, reply, USER]
    )
    assert answer.status == "completed"


def test_compact_checks_the_pairing_as_responses_does(sdk):
    with pytest.raises(openai.BadRequestError) as caught:
        sdk.responses.compact(model="gpt-5", input=[USER, _output()])
    assert caught.value.param == "input"
    assert "No tool call found for function call output" in _error(caught.value)["message"]
    with pytest.raises(openai.BadRequestError) as caught:
        sdk.responses.compact(model="gpt-5", input=[USER, _call()])
    assert _error(caught.value)["message"] == "No tool output found for function call call_1."
    compacted = sdk.responses.compact(model="gpt-5", input=[USER, _call(), _output()])
    assert compacted.output[-1].type == "compaction"


def test_an_unknown_item_type(sdk):
    err = _refused(sdk, input=[{"type": "telepathy"}])
    assert (err.code, err.param) == ("invalid_value", "input[0].type")


def test_stored_state_is_not_found(sdk):
    err = _refused(sdk, input=[{"type": "item_reference", "id": "msg_1"}])
    assert isinstance(err, openai.NotFoundError)
    err = _refused(sdk, input=[USER], previous_response_id="resp_1")
    assert (err.code, err.param) == ("previous_response_not_found", "previous_response_id")


def test_missing_model_and_bad_json_and_bad_types(api):
    url = f"{api.base_url}/responses"
    missing = httpx.post(url, json={"input": "Hi"})
    assert (missing.status_code, missing.json()["error"]["code"]) == (
        400,
        "missing_required_parameter",
    )
    for garbage in (b"{", b"[1, 2]", b"\xff\xfe", b"[" * 100_000 + b"]" * 100_000):
        answer = httpx.post(url, content=garbage)
        assert answer.status_code == 400
        assert answer.json()["error"]["message"].startswith("We could not parse the JSON body")
    typed = httpx.post(url, json={"model": "gpt-5", "input": 3})
    assert (typed.status_code, typed.json()["error"]["param"]) == (400, "input")
    item = httpx.post(url, json={"model": "gpt-5", "input": [3]})
    assert (item.status_code, item.json()["error"]["param"]) == (400, "input[0]")


def test_an_unknown_endpoint(api):
    answer = httpx.get(f"{api.base_url}/models")
    assert answer.status_code == 404
    assert answer.json()["error"]["message"] == "Invalid URL (GET /v1/models)"


def test_a_query_credential_is_never_echoed_nor_logged(api, caplog):
    """Some gateways take a key in the URL (``?subscription-key=``): the emulator's 404 and
    its log line show the parameter, never its value."""
    import logging

    key = "SUBKEY-s3cr3t-998877"
    with caplog.at_level(logging.INFO, logger="turnwire.emulate"):
        missing = httpx.get(f"{api.base_url}/models?subscription-key={key}&api-version=2025")
        found = httpx.post(
            f"{api.base_url}/responses?subscription-key={key}",
            json={"model": "gpt-5", "input": "hi", "stream": False},
        )
    assert missing.status_code == 404 and found.status_code == 200
    assert missing.json()["error"]["message"] == (
        "Invalid URL (GET /v1/models?subscription-key=[redacted]&api-version=2025)"
    )
    lines = [record.getMessage() for record in caplog.records]
    assert any("POST /v1/responses?subscription-key=[redacted] 200" in line for line in lines)
    assert key not in missing.text and not any(key in line for line in lines)


def test_a_body_over_the_limit_is_refused_unread():
    with turnwire.testing.emulator(max_body_bytes=1000) as api:
        answer = httpx.post(f"{api.base_url}/responses", content=b" " * 1001)
        assert answer.status_code == 413
        assert api.emulator.exchanges == type(api.emulator.exchanges)()  # never reached it
