"""Programmatic tool calling: a scripted program comes out as a ``program`` item with a sealed
``fingerprint``, followed by the calls it makes (each with the program as its caller); a
replayed program whose fingerprint is tampered, foreign, stale or moved is refused as the API
refuses opaque state; a ``program_output`` ends it; and turnwire's own client runs the loop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import openai
import pytest

import turnwire
import turnwire.testing
from turnwire.emulate import DROPPED_HEADER
from turnwire.emulate.script import script_from
from turnwire.emulate.state import Sealer
from turnwire.errors import ConfigError

from ..conftest import REPLAY, make_container

KEY = b"program-key-" * 3
USER = {"role": "user", "content": "How many orders, and how many refunds?"}
CODE = (
    "const orders = await tools.count_rows({table: 'orders'});\n"
    "const refunds = await tools.count_rows({table: 'refunds'});\n"
    "return `${orders} orders, ${refunds} refunds`;"
)
PROGRAM = {
    "match": {"last_user": "(?i)orders"},
    "program": {
        "code": CODE,
        "calls": [
            {"name": "count_rows", "arguments": {"table": "orders"}, "call_id": "call_o"},
            {"name": "count_rows", "arguments": {"table": "refunds"}, "call_id": "call_r"},
        ],
    },
}
ENDED = {
    "match": {"last_item": "function_call_output"},
    "program_output": {"result": "42 orders, 3 refunds"},
    "text": "There are 42 orders and 3 refunds.",
}
SCRIPT = {"answers": [ENDED, PROGRAM]}
TOOLS: list[Any] = [
    {
        "type": "function",
        "name": "count_rows",
        "parameters": {"type": "object", "properties": {"table": {"type": "string"}}},
        "allowed_callers": ["programmatic"],
    },
    {"type": "programmatic_tool_calling"},
]


@pytest.fixture
def api() -> Any:
    with turnwire.testing.emulator(script=SCRIPT, key=KEY) as handle:
        yield handle


def _create(sdk: openai.OpenAI, input: list[Any], **request: Any) -> Any:
    fields: dict[str, Any] = {"model": "gpt-5", "tools": TOOLS, "store": False, **request}
    return sdk.responses.create(input=input, **fields)


def _first_turn(sdk: openai.OpenAI) -> list[dict[str, Any]]:
    response = _create(sdk, [USER])
    return [item.model_dump(exclude_none=True) for item in response.output]


def _replay(output: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The next request's input: the program and its calls as they came, and the answers."""
    program, *calls = output
    answers = [
        {
            "type": "function_call_output",
            "call_id": call["call_id"],
            "output": "42" if call["call_id"] == "call_o" else "3",
            "caller": call["caller"],
        }
        for call in calls
    ]
    return [USER, program, *calls, *answers]


def test_a_program_is_minted_with_its_calls_after_it(api, sdk):
    output = _first_turn(sdk)
    assert [item["type"] for item in output] == ["program", "function_call", "function_call"]
    program, orders, refunds = output
    assert program["id"].startswith("pg_") and len(program["id"]) == 51
    assert program["call_id"].startswith("call_")
    assert program["code"] == CODE
    caller = {"type": "program", "caller_id": program["call_id"]}
    assert orders["caller"] == refunds["caller"] == caller
    assert (orders["call_id"], orders["name"]) == ("call_o", "count_rows")
    assert msgspec.json.decode(refunds["arguments"]) == {"table": "refunds"}
    # The fingerprint is sealed under the emulator's key, bound to the item, the model and the
    # organization, of kind program: no reasoning or compaction blob.
    sealer = Sealer(KEY, organization="org-emulator")
    sealed = sealer.open(
        program["fingerprint"], kind="program", item_id=program["id"], model="gpt-5"
    )
    assert not isinstance(sealed, str)
    assert (sealed.kind, sealed.item_id, sealed.model) == ("program", program["id"], "gpt-5")
    assert isinstance(
        sealer.open(program["fingerprint"], kind="reasoning", item_id=program["id"], model="gpt-5"),
        str,
    )


def test_a_program_streams_as_an_item_added_then_done(api, sdk):
    with sdk.responses.stream(model="gpt-5", input=[USER], tools=TOOLS, store=False) as stream:
        events = list(stream)
        final = stream.get_final_response()
    added = [event.item for event in events if event.type == "response.output_item.added"]
    done = [event.item for event in events if event.type == "response.output_item.done"]
    assert [item.type for item in added] == ["program", "function_call", "function_call"]
    assert done[0] == added[0] == final.output[0]
    assert [event.sequence_number for event in events] == list(range(len(events)))
    assert done[1].caller is not None and done[1].caller.type == "program"


def test_the_replayed_program_is_accepted_and_ended(api, sdk):
    output = _first_turn(sdk)
    replay = _replay(output)
    raw = sdk.responses.with_raw_response.create(
        model="gpt-5", input=replay, tools=TOOLS, store=False
    )
    assert raw.http_response.status_code == 200
    response = raw.parse()
    assert [item.type for item in response.output] == ["program_output", "message"]
    ended = response.output[0]
    assert (ended.call_id, ended.result, ended.status) == (
        output[0]["call_id"],
        "42 orders, 3 refunds",
        "completed",
    )
    assert ended.id.startswith("pgo_")
    assert response.output_text == "There are 42 orders and 3 refunds."
    # the conversation goes on with the program and its output replayed
    follow_up = [
        *replay,
        ended.model_dump(exclude_none=True),
        {"role": "assistant", "content": response.output_text},
        {"role": "user", "content": "Thanks"},
    ]
    assert _create(sdk, follow_up).status == "completed"


def _refused(sdk: openai.OpenAI, replay: list[dict[str, Any]], **request: Any) -> str:
    with pytest.raises(openai.BadRequestError) as caught:
        _create(sdk, replay, **request)
    assert caught.value.code == "invalid_encrypted_content"
    assert caught.value.param is None
    message = caught.value.response.json()["error"]["message"]
    assert isinstance(message, str)
    return message


def test_a_tampered_fingerprint(api, sdk):
    replay = _replay(_first_turn(sdk))
    fingerprint = replay[1]["fingerprint"]
    replay[1]["fingerprint"] = fingerprint[:-3] + ("AAA" if fingerprint[-3:] != "AAA" else "BBB")
    assert _refused(sdk, replay) == (
        f"The encrypted content for item {replay[1]['id']} could not be verified. "
        "Reason: Encrypted content could not be decrypted or parsed."
    )


def test_a_foreign_fingerprint(api, sdk):
    replay = _replay(_first_turn(sdk))
    with turnwire.testing.emulator(script=SCRIPT) as other:  # another key
        with openai.OpenAI(base_url=other.base_url, api_key="x", max_retries=0) as elsewhere:
            assert _refused(elsewhere, replay).endswith(
                "Reason: Encrypted content could not be decrypted or parsed."
            )
    with turnwire.testing.emulator(script=SCRIPT, key=KEY) as same:  # the same key: accepted
        with openai.OpenAI(base_url=same.base_url, api_key="x", max_retries=0) as again:
            assert _create(again, replay).status == "completed"


def test_a_fingerprint_of_another_model_organization_or_item(api, sdk):
    replay = _replay(_first_turn(sdk))
    assert _refused(sdk, replay, model="gpt-5-mini").endswith(
        "Reason: Encrypted content was issued for another model."
    )
    assert _refused(sdk, replay, extra_headers={"OpenAI-Organization": "org-other"}).endswith(
        "Reason: Encrypted content was issued to another organization."
    )
    replay[1]["id"] = "pg_other"
    assert _refused(sdk, replay).endswith(
        "Reason: Encrypted content item_id did not match the target item id."
    )


def test_a_reasoning_blob_is_no_fingerprint(api, sdk):
    api.script(
        [{"reasoning": {"summary": ["Think"]}, "text": "Hi"}, PROGRAM, ENDED],
    )
    thought = _create(
        sdk, [{"role": "user", "content": "Hi"}], include=["reasoning.encrypted_content"]
    )
    blob = thought.output[0].encrypted_content
    replay = _replay(_first_turn(sdk))
    replay[1]["fingerprint"] = blob
    assert "could not be decrypted" in _refused(sdk, replay)


def test_a_stale_fingerprint():
    now = [1000.0]
    with turnwire.testing.emulator(script=SCRIPT, state_ttl_s=60, clock=lambda: now[0]) as api:
        with openai.OpenAI(base_url=api.base_url, api_key="x", max_retries=0) as sdk:
            replay = _replay(_first_turn(sdk))
            now[0] += 30
            assert _create(sdk, replay).status == "completed"
            now[0] += 31
            assert _refused(sdk, replay).endswith("Reason: Encrypted content has expired.")


def test_a_program_without_its_fingerprint_is_refused_as_a_missing_parameter(api, sdk):
    """The official input type requires ``fingerprint`` (``Required[str]``)."""
    replay = _replay(_first_turn(sdk))
    del replay[1]["fingerprint"]
    with pytest.raises(openai.BadRequestError) as caught:
        _create(sdk, replay)
    assert caught.value.code == "missing_required_parameter"
    assert caught.value.param == "input[1].fingerprint"
    assert caught.value.response.json()["error"]["message"] == (
        "Missing required parameter: 'input[1].fingerprint'."
    )
    replay[1]["fingerprint"] = None
    with pytest.raises(openai.BadRequestError) as caught:
        _create(sdk, replay)
    assert caught.value.code == "invalid_type"
    assert caught.value.param == "input[1].fingerprint"


def test_a_program_without_calls_ends_in_the_same_answer(api, sdk):
    api.script(
        [
            {
                "program": {"code": "return 6 * 7;", "call_id": "call_calc"},
                "program_output": {"result": "42"},
                "text": "It is 42.",
            }
        ]
    )
    response = _create(sdk, [USER])
    assert [item.type for item in response.output] == ["message", "program", "program_output"]
    assert response.output[1].call_id == response.output[2].call_id == "call_calc"


def test_a_program_output_with_no_program_to_end_is_the_scripts_error(api, sdk):
    api.script([{"program_output": {"result": "?"}, "text": "Done."}])
    with pytest.raises(openai.InternalServerError) as caught:
        _create(sdk, [USER])
    assert caught.value.code == "script_error"
    assert api.emulator.exchanges[-1].rule == "script-program-output"
    # naming the program's call_id is enough
    api.script([{"program_output": {"result": "?", "call_id": "call_p"}, "text": "Done."}])
    assert _create(sdk, [USER]).output[0].call_id == "call_p"


def test_a_scripts_program_is_checked_when_loaded():
    with pytest.raises(ConfigError) as caught:
        script_from([{"program": {"code": "return 1;", "tools": []}}])
    assert "tools" in str(caught.value)
    with pytest.raises(ConfigError):
        script_from([{"program_output": {"result": "1", "status": "failed"}}])


# ------------------------------------------------------------------ turnwire's own client


def _thread(tmp_path: Path) -> Path:
    path = tmp_path / "orders.json"
    tree = {
        "version": 1,
        "model": "gpt-5",
        "tools": [
            {
                "name": "count_rows",
                "description": "How many rows a table holds",
                "parameters": {"type": "object", "properties": {"table": {"type": "string"}}},
                "allowed_callers": ["programmatic"],
            }
        ],
        "hosted_tools": [{"type": "programmatic_tool_calling"}],
        "messages": [
            {
                "id": "u1",
                "role": "user",
                "content": USER["content"],
                "created_at": "2026-01-01T10:00:00Z",
                "seq": 0,
            }
        ],
    }
    path.write_text(msgspec.json.encode(tree).decode())
    return path


@pytest.mark.parametrize("reasoning", [False, True], ids=["program", "reasoning-then-program"])
def test_turnwire_runs_a_programmatic_loop_against_it(tmp_path, reasoning):
    first = dict(PROGRAM)
    if reasoning:
        first["reasoning"] = {"summary": ["Count both tables in one program."]}
    ran: list[str] = []

    def count_rows(table: str) -> int:
        ran.append(table)
        return {"orders": 42, "refunds": 3}[table]

    path = _thread(tmp_path)
    with turnwire.testing.emulator(script=[ENDED, first]) as api:
        result = turnwire.api.run(
            path,
            container=make_container(REPLAY if reasoning else None),
            base_url=api.base_url,
            api_key="x",
            handlers={"count_rows": count_rows},
            save=True,
        )
        exchanges = list(api.emulator.exchanges)

    assert result.text == "There are 42 orders and 3 refunds."
    assert ran == ["orders", "refunds"]
    assert [(exchange.status, exchange.rule) for exchange in exchanges] == [(200, None)] * 2
    sent = exchanges[0].json()
    assert sent["tools"][0]["allowed_callers"] == ["programmatic"]
    assert {"type": "programmatic_tool_calling"} in sent["tools"]

    # The second request replays the program whole, its fingerprint as it was minted, then
    # the calls and their answers, each with the program as its caller; the emulator took it.
    resumed = exchanges[1].json()["input"]
    kinds = [item.get("type", "message") for item in resumed]
    program_at = kinds.index("program")
    pair = ["function_call", "function_call_output"]  # each call, then its answer
    assert kinds[program_at:] == ["program", *pair, *pair]
    if reasoning:  # the reasoning before it, sealed too, and not dropped
        assert kinds[program_at - 1] == "reasoning"
        assert resumed[program_at - 1]["encrypted_content"].startswith("twe1.")
    assert DROPPED_HEADER not in dict(exchanges[1].headers)
    program = resumed[program_at]
    caller = {"type": "program", "caller_id": program["call_id"]}
    assert program["fingerprint"].startswith("twe1.")
    for item in resumed[program_at + 1 :]:
        assert item["caller"] == caller
    sealed = Sealer(b"", organization="org-emulator")  # another key: the fingerprint is sealed
    assert isinstance(
        sealed.open(program["fingerprint"], kind="program", item_id=program["id"], model="gpt-5"),
        str,
    )

    saved = turnwire.load_thread(path)
    assert [record.type for record in saved.hosted_items] == ["program", "program_output"]
    assert saved.hosted_items[0].item["fingerprint"] == program["fingerprint"]
    assert [call.caller for call in saved.tool_calls] == [program["call_id"]] * 2
