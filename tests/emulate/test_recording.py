"""Record and replay, for real: a scripted emulator on 127.0.0.1 stands in for the API, a
second emulator records what it answers to the official SDK, and a third, with the first one
stopped, replays it; a request no recording answers names the nearest one and the first
difference. Nothing here reaches past 127.0.0.1."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

import turnwire.testing
from turnwire.emulate import Recorder, Replayer
from turnwire.emulate.recording import (
    MAX_RECORDING_BYTES,
    RECORDING_HEADER,
    first_difference,
    recording_name,
    request_hash,
)
from turnwire.errors import ConfigError

from .conftest import SCRIPT

KEY = "sk-upstream-secret-0123456789"

TOOLS: list[Any] = [
    {
        "type": "function",
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        "strict": False,
    }
]


def _sdk(base_url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=base_url, api_key="x-client-key", max_retries=0)


def _conversation(sdk: openai.OpenAI) -> dict[str, Any]:
    """A tool loop (streamed first turn, JSON second), a plain JSON turn and a compaction;
    everything the SDK made of the answers."""
    question = {"role": "user", "content": "What's the weather in Paris?"}
    with sdk.responses.stream(
        model="gpt-5",
        input=[question],
        tools=TOOLS,
        store=False,
        include=["reasoning.encrypted_content"],
    ) as stream:
        events = [event.model_dump() for event in stream]
        first = stream.get_final_response()
    replayed = [item.model_dump(exclude_none=True) for item in first.output]
    call = first.output[-1]
    assert call.type == "function_call"
    second = sdk.responses.create(
        model="gpt-5",
        input=[
            question,
            *replayed,
            {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"},
        ],
        tools=TOOLS,
        store=False,
        include=["reasoning.encrypted_content"],
    )
    plain = sdk.responses.create(model="gpt-5", input="Hi")
    compacted = sdk.responses.compact(model="gpt-5", input=[question])
    return {
        "events": events,
        "first": first.model_dump(),
        "second": second.model_dump(),
        "plain": plain.model_dump(),
        "compacted": compacted.model_dump(warnings=False),
    }


@pytest.fixture
def upstream() -> Iterator[turnwire.testing.EmulatorHandle]:
    with turnwire.testing.emulator(script=SCRIPT) as api:
        yield api


def test_recorded_then_replayed_with_the_upstream_stopped(tmp_path: Path):
    recordings = tmp_path / "recordings"  # created by the recorder
    with turnwire.testing.emulator(script=SCRIPT) as real:
        with (
            turnwire.testing.emulator(
                record=recordings, upstream=real.base_url, upstream_key=KEY
            ) as recorder,
            _sdk(recorder.base_url) as sdk,
        ):
            recorded = _conversation(sdk)
        assert [exchange.status for exchange in real.emulator.exchanges] == [200] * 4
    assert recorded["second"]["output"][0]["content"][0]["text"] == "It is sunny in Paris."
    names = sorted(path.name for path in recordings.iterdir())
    assert len(names) == 4
    assert [name.split("-")[0] for name in names] == ["responses"] * 4
    assert sum(name.startswith("responses-compact-") for name in names) == 1
    with turnwire.testing.emulator(replay=recordings) as player, _sdk(player.base_url) as sdk:
        replayed = _conversation(sdk)
    assert replayed == recorded  # the same ids, texts, blobs and events, in the same order
    assert [exchange.status for exchange in player.emulator.exchanges] == [200] * 4


def test_a_stream_replays_byte_for_byte_and_a_recording_holds_what_it_should(
    upstream, tmp_path: Path
):
    body = {"model": "gpt-5", "input": "Hi", "stream": True}
    with turnwire.testing.emulator(
        record=tmp_path, upstream=upstream.base_url, upstream_key=KEY
    ) as recorder:
        live = httpx.post(f"{recorder.base_url}/responses", json=body)
    (path,) = tmp_path.iterdir()
    assert path.name == recording_name("responses", request_hash("responses", body))
    recording = json.loads(path.read_text())
    assert list(recording) == ["turnwire_recording", "endpoint", "request", "answers"]
    assert recording["request"] == body
    (answer,) = recording["answers"]
    assert answer["status"] == 200
    assert answer["sse"] == live.text
    assert set(answer["headers"]) == {"content-type", "x-request-id"}
    upstream.server.close()
    with turnwire.testing.emulator(replay=tmp_path) as player:
        with httpx.stream("POST", f"{player.base_url}/responses", json=body) as replayed:
            chunks = list(replayed.iter_raw())
            assert replayed.headers[RECORDING_HEADER] == path.name
            assert replayed.headers["x-request-id"] == live.headers["x-request-id"]
    assert b"".join(chunks) == live.content
    # Sent event by event, each piece one whole event, as the upstream sent them.
    reply = Replayer(tmp_path).handle("POST", "/v1/responses", {}, json.dumps(body).encode())
    assert reply.events is not None
    events = list(reply.events)
    assert b"".join(events) == live.content
    assert len(events) == live.text.count("\n\n") > 5
    assert all(event.startswith(b"event: ") and event.endswith(b"\n\n") for event in events)


def test_the_key_goes_to_the_upstream_only(tmp_path: Path, caplog):
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(
            200,
            json={"object": "response.input_tokens", "input_tokens": 3},
            headers={
                "x-request-id": "req_1",
                "set-cookie": "session=secret-cookie",
                "openai-organization": "org-secret",
            },
        )

    recorder = Recorder(
        tmp_path,
        upstream="http://127.0.0.1:9/v1",
        api_key=KEY,
        transport=httpx.MockTransport(answer),
    )
    headers = {
        "authorization": "Bearer x-client-key",
        "cookie": "client-cookie",
        "openai-organization": "org-client",
        "x-stainless-os": "Linux",
    }
    with caplog.at_level(logging.DEBUG, logger="turnwire.emulate"):
        reply = recorder.handle(
            "POST", "/v1/responses/input_tokens", headers, b'{"model":"gpt-5","input":"Hi"}'
        )
    assert reply.status == 200
    (sent,) = seen
    assert str(sent.url) == "http://127.0.0.1:9/v1/responses/input_tokens"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.headers["openai-organization"] == "org-client"
    assert "cookie" not in sent.headers and "x-stainless-os" not in sent.headers
    assert dict(reply.headers) == {"content-type": "application/json", "x-request-id": "req_1"}
    (path,) = tmp_path.iterdir()
    written = path.read_text()
    for secret in (KEY, "x-client-key", "secret-cookie", "client-cookie", "org-secret"):
        assert secret not in written
    assert KEY not in caplog.text
    assert KEY not in repr(recorder) and KEY not in str(vars(recorder).get("upstream"))
    assert json.loads(written)["answers"] == [
        {
            "status": 200,
            "headers": {"content-type": "application/json", "x-request-id": "req_1"},
            "json": {"object": "response.input_tokens", "input_tokens": 3},
        }
    ]
    recorder.close()


def test_record_forwards_unchecked_and_keeps_refusals_and_repeats_in_order(
    upstream, tmp_path: Path
):
    url = f"{upstream.base_url}"
    broken = {
        "model": "gpt-5",
        "input": [{"type": "function_call_output", "call_id": "c", "output": "x"}],
    }
    upstream.script({"answers": [{"text": "one"}, {"text": "two"}], "default": {"text": "more"}})
    with turnwire.testing.emulator(record=tmp_path, upstream=url, upstream_key=KEY) as recorder:
        with _sdk(recorder.base_url) as sdk:
            with pytest.raises(openai.BadRequestError) as refused:
                sdk.responses.create(**broken)
            said = [sdk.responses.create(model="gpt-5", input="Hi").output_text for _ in range(2)]
    assert said == ["one", "two"]
    assert len(list(tmp_path.iterdir())) == 2
    upstream.server.close()
    with turnwire.testing.emulator(replay=tmp_path) as player, _sdk(player.base_url) as sdk:
        with pytest.raises(openai.BadRequestError) as replayed:
            sdk.responses.create(**broken)
        assert replayed.value.body == refused.value.body
        again = [sdk.responses.create(model="gpt-5", input="Hi").output_text for _ in range(3)]
    assert again == ["one", "two", "two"]  # in order, then the last one again


def test_a_new_recording_session_replaces_what_a_file_held(upstream, tmp_path: Path):
    url = upstream.base_url
    for text in ("first", "second"):
        upstream.script({"default": {"text": text}})
        with turnwire.testing.emulator(record=tmp_path, upstream=url, upstream_key=KEY) as rec:
            with _sdk(rec.base_url) as sdk:
                sdk.responses.create(model="gpt-5", input="Hi")
    (path,) = tmp_path.iterdir()
    (answer,) = json.loads(path.read_text())["answers"]
    assert answer["json"]["output"][0]["content"][0]["text"] == "second"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp left


def test_a_miss_names_the_nearest_recording_and_the_first_difference(
    upstream, tmp_path: Path, caplog
):
    def said(text: str) -> dict[str, Any]:
        return {"role": "assistant", "content": [{"type": "output_text", "text": text}]}

    user = {"role": "user", "content": "Tell me about the weather in Paris today."}
    short = [user]
    long = [user, said("Sunny."), {"role": "user", "content": "And tomorrow in Lyon, please?"}]
    with (
        turnwire.testing.emulator(
            record=tmp_path, upstream=upstream.base_url, upstream_key=KEY
        ) as recorder,
        _sdk(recorder.base_url) as sdk,
    ):
        for items in (short, long):
            sdk.responses.create(model="gpt-5", input=items)
    nearest = recording_name(
        "responses", request_hash("responses", {"model": "gpt-5", "input": long})
    )
    changed = [user, said("Sunny."), {"role": "user", "content": "And tomorrow in Lille, please?"}]
    with turnwire.testing.emulator(replay=tmp_path) as player, _sdk(player.base_url) as sdk:
        with caplog.at_level(logging.WARNING, logger="turnwire.emulate"):
            with pytest.raises(openai.BadRequestError) as missed:
                sdk.responses.create(model="gpt-5", input=changed)
        error = missed.value.body
        assert isinstance(error, dict)
        assert (error["code"], error["param"]) == ("replay_miss", "input[2].content")
        message = error["message"]
        assert f"Nearest: {nearest} (its first 2 of 3 input items match; 3 sent)" in message
        assert (
            'input[2].content differs: recorded "And tomorrow in Lyon, please?" sent '
            '"And tomorrow in Lille, please?" (from character 17)'
        ) in message
        assert message in caplog.text
        # One item more than recorded: the first difference is the new item.
        with pytest.raises(openai.BadRequestError) as missed:
            sdk.responses.create(model="gpt-5", input=[*long, said("Rain.")])
        assert "input has 4 entries, the recording 3: input[3] is new" in missed.value.message
        # A field the recording lacks.
        with pytest.raises(openai.BadRequestError) as missed:
            sdk.responses.create(model="gpt-5", input=short, temperature=0.5)
        assert "temperature is sent (0.5), not in the recording" in missed.value.message
        # Streamed and not are different recordings.
        with pytest.raises(openai.BadRequestError) as missed:
            sdk.responses.create(model="gpt-5", input=short, stream=True)
        assert "stream is sent (true), not in the recording" in missed.value.message
        # An endpoint nothing was recorded for.
        with pytest.raises(openai.BadRequestError) as missed:
            sdk.responses.compact(model="gpt-5", input=short)
        assert "it holds no recording of /v1/responses/compact" in missed.value.message


def test_the_first_difference_goes_item_by_item_and_abbreviates():
    recorded = {"model": "gpt-5", "input": [{"role": "user", "content": "a" * 200}]}
    sent = {"model": "gpt-6", "input": [{"role": "user", "content": "a" * 199 + "b"}]}
    path, said = first_difference(recorded, sent)  # type: ignore[misc]
    assert path == "input[0].content"
    assert said == (
        f'input[0].content differs: recorded "...{"a" * 21}" sent "...{"a" * 20}b" '
        "(from character 199)"
    )
    assert first_difference({"input": [1, {"k": [1, 2]}]}, {"input": [1, {"k": [1, 3]}]}) == (
        "input[1].k[1]",
        "input[1].k[1] differs: recorded 2 sent 3",
    )
    assert first_difference({"a": 1}, {"a": 1}) is None
    long = {"x": "y" * 100}
    path, said = first_difference({"input": [long]}, {"input": []})  # type: ignore[misc]
    assert (path, said) == (
        "input[0]",
        f'input has 0 entries, the recording 1: input[0] is missing ({{"x":"{"y" * 38}'
        f'...{"y" * 10}"}})',
    )


GOOD = "responses-" + "a" * 32 + ".json"
BAD = "responses-" + "b" * 32 + ".json"  # names the recorder could give


def _recording(**changes: Any) -> dict[str, Any]:
    recording: dict[str, Any] = {
        "turnwire_recording": 1,
        "endpoint": "responses",
        "request": {"model": "gpt-5", "input": "Hi"},
        "answers": [{"status": 200, "headers": {"content-type": "application/json"}, "json": {}}],
    }
    recording.update(changes)
    return recording


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"{not json", "not a recording"),
        (b"[]", "not a recording"),
        (json.dumps(_recording(extra=1)).encode(), "not a recording"),
        (json.dumps(_recording(turnwire_recording=2)).encode(), "format 2"),
        (json.dumps(_recording(endpoint="models")).encode(), "not one the emulator serves"),
        (json.dumps(_recording(answers=[])).encode(), "no answers"),
        (
            json.dumps(_recording(answers=[{"status": 200, "json": {}, "sse": "x"}])).encode(),
            "exactly one of json, sse and text",
        ),
        (json.dumps(_recording(answers=[{"status": 42, "json": {}}])).encode(), "HTTP status"),
        (
            json.dumps(
                _recording(answers=[{"status": 200, "headers": {"set-cookie": "a"}, "json": {}}])
            ).encode(),
            "'set-cookie' is not a header recordings keep",
        ),
        (
            json.dumps(
                _recording(
                    answers=[
                        {"status": 200, "headers": {"x-request-id": "a\r\nx-evil: 1"}, "json": {}}
                    ]
                )
            ).encode(),
            "a control character",
        ),
        (b"[" * 10_000 + b"]" * 10_000, "not a recording"),
    ],
)
def test_a_malformed_recording_is_an_error_naming_the_file(tmp_path: Path, content, said):
    (tmp_path / GOOD).write_text(json.dumps(_recording()))
    (tmp_path / BAD).write_bytes(content)
    with pytest.raises(ConfigError, match=said) as caught:
        Replayer(tmp_path)
    assert f"recording {tmp_path / BAD}:" in str(caught.value)


def test_recordings_are_bounded_and_unique_and_the_directory_must_exist(tmp_path: Path):
    huge = tmp_path / GOOD
    with huge.open("wb") as file:
        file.truncate(MAX_RECORDING_BYTES + 1)
    with pytest.raises(ConfigError, match="larger than"):
        Replayer(tmp_path)
    huge.unlink()
    (tmp_path / GOOD).write_text(json.dumps(_recording()))
    (tmp_path / BAD).write_text(json.dumps(_recording(), indent=4))
    with pytest.raises(ConfigError, match=f"records the same request as {GOOD}"):
        Replayer(tmp_path)
    with pytest.raises(ConfigError, match="not a directory"):
        Replayer(tmp_path / "missing")
    (tmp_path / BAD).unlink()
    (tmp_path / "notes.txt").write_text("not read")
    assert len(Replayer(tmp_path)) == 1


def test_an_unreachable_upstream_is_a_502_and_nothing_is_recorded(tmp_path: Path, caplog):
    with turnwire.testing.emulator(script=SCRIPT) as gone:
        url = gone.base_url
    with turnwire.testing.emulator(record=tmp_path, upstream=url, upstream_key=KEY) as recorder:
        answer = httpx.post(
            f"{recorder.base_url}/responses", json={"model": "gpt-5", "input": "Hi"}
        )
    assert answer.status_code == 502
    assert answer.json()["error"]["code"] == "upstream_failed"
    assert KEY not in answer.text
    assert list(tmp_path.iterdir()) == []


def test_a_stream_the_upstream_cuts_is_cut_and_not_recorded(upstream, tmp_path: Path):
    upstream.script([{"text": "A long answer of many words", "cut_after": 3}])
    body = {"model": "gpt-5", "input": "Hi", "stream": True}
    with turnwire.testing.emulator(
        record=tmp_path, upstream=upstream.base_url, upstream_key=KEY
    ) as recorder:
        with pytest.raises(httpx.RemoteProtocolError):
            with httpx.stream("POST", f"{recorder.base_url}/responses", json=body) as answer:
                for _ in answer.iter_raw():
                    pass
    assert list(tmp_path.iterdir()) == []


def test_a_bad_upstream_is_refused(tmp_path: Path):
    with pytest.raises(ConfigError, match="not an http"):
        Recorder(tmp_path, upstream="ftp://example.com", api_key=KEY)
    with pytest.raises(ConfigError, match="credentials") as caught:
        Recorder(tmp_path, upstream="https://user:hunter2@example.com/v1", api_key=KEY)
    assert "hunter2" not in str(caught.value)
