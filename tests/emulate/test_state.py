"""Sealed state: minted blobs replay; tampered, foreign, stale or moved ones are refused as the
API refuses them; replayed reasoning whose history changed is dropped, and said so."""

from __future__ import annotations

import logging
from typing import Any

import openai
import pytest

import turnwire.testing
from turnwire.emulate import DROPPED_HEADER

USER = {"role": "user", "content": "Weather in Paris?"}
THINK_AND_CALL = {
    "reasoning": {"summary": ["Look it up"]},
    "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}, "call_id": "call_1"}],
}
INCLUDE = ["reasoning.encrypted_content"]


def _first_turn(sdk: openai.OpenAI, api: turnwire.testing.EmulatorHandle, **request: Any):
    api.script({"answers": [THINK_AND_CALL], "default": {"text": "Sunny."}})
    response = sdk.responses.create(
        model="gpt-5", input=[USER], include=INCLUDE, store=False, **request
    )
    return [item.model_dump(exclude_none=True) for item in response.output]


def _replay(output: list[dict[str, Any]]) -> list[dict[str, Any]]:
    reasoning, call = output
    return [
        USER,
        {key: reasoning[key] for key in ("type", "id", "summary", "encrypted_content")},
        {key: call[key] for key in ("type", "id", "call_id", "name", "arguments")},
        {"type": "function_call_output", "call_id": "call_1", "output": "21C"},
    ]


def test_minted_reasoning_replays(api, sdk):
    replay = _replay(_first_turn(sdk, api))
    raw = sdk.responses.with_raw_response.create(
        model="gpt-5", input=replay, include=INCLUDE, store=False
    )
    assert raw.http_response.status_code == 200
    assert DROPPED_HEADER not in raw.headers
    assert raw.parse().output_text == "Sunny."


def _refused(sdk: openai.OpenAI, replay: list[dict[str, Any]], model: str = "gpt-5") -> Any:
    with pytest.raises(openai.BadRequestError) as caught:
        sdk.responses.create(model=model, input=replay, store=False)
    assert caught.value.code == "invalid_encrypted_content"
    assert caught.value.param is None
    return caught.value.response.json()["error"]["message"]


def test_a_tampered_blob(api, sdk):
    replay = _replay(_first_turn(sdk, api))
    blob = replay[1]["encrypted_content"]
    replay[1]["encrypted_content"] = blob[:-3] + ("AAA" if blob[-3:] != "AAA" else "BBB")
    message = _refused(sdk, replay)
    assert message == (
        f"The encrypted content for item {replay[1]['id']} could not be verified. "
        "Reason: Encrypted content could not be decrypted or parsed."
    )


def test_a_foreign_blob(api, sdk):
    replay = _replay(_first_turn(sdk, api))
    with turnwire.testing.emulator() as other:  # another key
        with openai.OpenAI(base_url=other.base_url, api_key="x", max_retries=0) as elsewhere:
            assert "could not be decrypted" in _refused(elsewhere, replay)


def test_the_same_key_accepts_blobs_across_emulators(api, sdk):
    key = b"k" * 32
    with turnwire.testing.emulator(key=key) as first, turnwire.testing.emulator(key=key) as second:
        with openai.OpenAI(base_url=first.base_url, api_key="x", max_retries=0) as one:
            replay = _replay(_first_turn(one, first))
        with openai.OpenAI(base_url=second.base_url, api_key="x", max_retries=0) as two:
            assert (
                two.responses.create(model="gpt-5", input=replay, store=False).status == "completed"
            )


def test_a_stale_blob():
    now = [1000.0]
    with turnwire.testing.emulator(state_ttl_s=60, clock=lambda: now[0]) as api:
        with openai.OpenAI(base_url=api.base_url, api_key="x", max_retries=0) as sdk:
            replay = _replay(_first_turn(sdk, api))
            now[0] += 61
            assert _refused(sdk, replay).endswith("Reason: Encrypted content has expired.")


def test_a_blob_of_another_model_or_organization(api, sdk):
    replay = _replay(_first_turn(sdk, api))
    assert "another model" in _refused(sdk, replay, model="gpt-5-mini")
    with pytest.raises(openai.BadRequestError) as caught:
        sdk.responses.create(
            model="gpt-5",
            input=replay,
            store=False,
            extra_headers={"OpenAI-Organization": "org-other"},
        )
    assert "another organization" in caught.value.response.json()["error"]["message"]


def test_a_blob_moved_to_another_item(api, sdk):
    replay = _replay(_first_turn(sdk, api))
    replay[1]["id"] = "rs_other"
    assert "item_id did not match" in _refused(sdk, replay)


def test_a_call_replayed_without_its_reasoning(api, sdk):
    replay = _replay(_first_turn(sdk, api))
    del replay[1]
    with pytest.raises(openai.BadRequestError) as caught:
        sdk.responses.create(model="gpt-5", input=replay, store=False)
    message = caught.value.response.json()["error"]["message"]
    assert message.startswith(f"Item '{replay[1]['id']}' of type 'function_call' was provided")
    assert "without its required 'reasoning' item" in message


def test_reasoning_after_a_changed_history_is_dropped_and_said(api, sdk, caplog):
    replay = _replay(_first_turn(sdk, api))
    replay[0] = {"role": "user", "content": "Weather in Rome?"}
    with caplog.at_level(logging.WARNING, logger="turnwire.emulate"):
        raw = sdk.responses.with_raw_response.create(model="gpt-5", input=replay, store=False)
    assert raw.http_response.status_code == 200
    assert raw.headers[DROPPED_HEADER] == replay[1]["id"]
    assert replay[1]["id"] in caplog.text


def test_changed_instructions_drop_it_too(api, sdk):
    replay = _replay(_first_turn(sdk, api, instructions="Be terse."))
    raw = sdk.responses.with_raw_response.create(
        model="gpt-5", input=replay, store=False, instructions="Be verbose."
    )
    assert raw.headers[DROPPED_HEADER] == replay[1]["id"]
    raw = sdk.responses.with_raw_response.create(
        model="gpt-5", input=replay, store=False, instructions="Be terse."
    )
    assert DROPPED_HEADER not in raw.headers


def test_without_include_no_blob_is_minted(api, sdk):
    api.script([THINK_AND_CALL])
    response = sdk.responses.create(model="gpt-5", input=[USER], store=False)
    assert response.output[0].type == "reasoning"
    assert response.output[0].encrypted_content is None


def test_a_compaction_replays_and_a_tampered_one_does_not(api, sdk):
    compacted = sdk.responses.compact(
        model="gpt-5", input=[USER, {"role": "assistant", "content": "Sunny."}]
    )
    assert [item.type for item in compacted.output] == ["message", "compaction"]
    last = compacted.output[1].model_dump(exclude_none=True)
    compaction = {key: last[key] for key in ("type", "id", "encrypted_content")}
    follow_up = [compaction, {"role": "user", "content": "And tomorrow?"}]
    assert sdk.responses.create(model="gpt-5", input=follow_up).status == "completed"
    compaction["encrypted_content"] = compaction["encrypted_content"].replace(".", ".x", 1)
    with pytest.raises(openai.BadRequestError) as caught:
        sdk.responses.create(model="gpt-5", input=follow_up)
    assert caught.value.code == "invalid_encrypted_content"
