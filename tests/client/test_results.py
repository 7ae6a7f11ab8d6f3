"""What a run gives back, with structured outputs over a real local server: the json_schema format
the server receives, the answer parsed into a Struct or plain JSON, refusals, mismatches, and where
the schema comes from (argument > thread > configuration)."""

from __future__ import annotations

import json

import msgspec
import pytest
import yaml

import turnwire
from turnwire import OutputSchema, OutputValidationError
from turnwire.model.structured import strict_schema
from turnwire.store.sqlite import SQLiteStore

from ..conftest import make_container
from .server import Reply, ScriptedServer
from .streams import INVOICE_SCHEMA, refusal_answer, text_answer

THREAD = """\
version: 1
model: gpt-4o
messages:
  - {id: u1, role: user, content: "Read the invoice.", created_at: "2026-01-01T10:00:00Z"}
"""


class Item(msgspec.Struct):
    name: str
    price: float
    note: str | None = None


class Invoice(msgspec.Struct):
    """An invoice."""

    number: str
    items: list[Item]
    currency: str = "EUR"


INVOICE_JSON = {
    "number": "F-7",
    "items": [
        {"name": "tea", "price": 3.5, "note": None},
        {"name": "cake", "price": 4, "note": "lemon"},
        {"name": "jam", "price": "cheap", "note": None},
    ],
    "currency": "EUR",
}


def _valid_invoice() -> dict:
    data = json.loads(json.dumps(INVOICE_JSON))
    data["items"][2]["price"] = 2.25
    return data


def _thread(**extra: object) -> turnwire.Thread:
    return turnwire.load_thread({**yaml.safe_load(THREAD), **extra})


def _run(stream: bytes, thread: object = None, settings: dict | None = None, **kwargs):
    with ScriptedServer([Reply.sse(stream)]) as server:
        result = turnwire.api.run(
            _thread() if thread is None else thread,
            container=make_container(settings),
            base_url=server.base_url,
            **kwargs,
        )
    return result, server.requests[0].json


def test_a_struct_is_sent_as_a_strict_json_schema_and_the_answer_parses_into_it():
    text = json.dumps(_valid_invoice())
    result, body = _run(text_answer(text), output_schema=Invoice)
    assert body["text"] == {
        "format": {
            "type": "json_schema",
            "name": "Invoice",
            "schema": strict_schema(Invoice),
            "strict": True,
        }
    }
    sent = body["text"]["format"]["schema"]
    assert sent["additionalProperties"] is False
    assert sent["required"] == ["number", "items", "currency"]
    assert sent["$defs"]["Item"]["required"] == ["name", "price", "note"]
    assert isinstance(result.parsed, Invoice)
    assert result.parsed.items[2] == Item(name="jam", price=2.25)
    assert result.refusal is None
    assert result.records.messages[0].content == text  # the raw answer is recorded as text


def test_a_refusal_is_no_error_parsed_is_none_and_the_refusal_is_kept():
    result, body = _run(refusal_answer("I can't help with that."), output_schema=Invoice)
    assert body["text"]["format"]["type"] == "json_schema"
    assert result.parsed is None
    assert result.refusal == "I can't help with that."
    assert result.records.messages[0].refusal == "I can't help with that."


def test_a_refusal_is_reported_without_a_schema_too():
    result, body = _run(refusal_answer("No."))
    assert "text" not in body
    assert (result.parsed, result.refusal) == (None, "No.")


def test_a_mismatch_raises_a_typed_error_naming_the_path_after_saving_the_turn(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text(THREAD)
    text = json.dumps(INVOICE_JSON)
    with ScriptedServer([Reply.sse(text_answer(text))]) as server:
        with pytest.raises(OutputValidationError) as caught:
            turnwire.api.run(
                path,
                container=make_container(),
                base_url=server.base_url,
                output_schema=Invoice,
                save=True,
            )
    err = caught.value
    assert err.code == "E_OUTPUT_INVALID" and not err.fatal
    assert err.path == "$.items[2].price"
    assert "$.items[2].price" in str(err) and "Invoice" in str(err)
    assert err.text == text
    assert err.result.parsed is None
    assert err.result.records.messages[0].content == text
    saved = turnwire.load_thread(path)
    assert [m.content for m in saved.messages] == ["Read the invoice.", text]


def test_text_that_is_not_json_is_a_mismatch_at_the_root():
    with pytest.raises(OutputValidationError) as caught:
        _run(text_answer("Sure! Here it is: {"), output_schema=INVOICE_SCHEMA)
    assert caught.value.path == "$"
    assert "not JSON" in str(caught.value)


def test_a_truncated_answer_names_its_finish_reason():
    with pytest.raises(OutputValidationError) as caught:
        _run(text_answer('{"number": "F-', status="incomplete"), output_schema=Invoice)
    assert "finish reason length" in str(caught.value)


def test_a_schema_dict_is_sent_as_given_and_the_answer_is_plain_json():
    value = {"number": "F-7", "items": [{"name": "tea", "price": 3.5}]}
    result, body = _run(text_answer(json.dumps(value)), output_schema=INVOICE_SCHEMA)
    assert body["text"]["format"] == {
        "type": "json_schema",
        "name": "invoice",
        "schema": INVOICE_SCHEMA,
        "strict": True,
    }
    assert result.parsed == value


def test_a_schema_dict_mismatch_names_the_path():
    value = {"number": "F-7", "items": [{"name": "tea", "price": 3.5}, {"name": "jam"}]}
    with pytest.raises(OutputValidationError) as caught:
        _run(text_answer(json.dumps(value)), output_schema=INVOICE_SCHEMA)
    assert caught.value.path == "$.items[1]"
    assert "missing required property `price`" in str(caught.value)
    value["items"][1]["price"] = "cheap"
    with pytest.raises(OutputValidationError) as caught:
        _run(text_answer(json.dumps(value)), output_schema=INVOICE_SCHEMA)
    assert caught.value.path == "$.items[1].price"
    assert "expected number, got string" in str(caught.value)


THREAD_SCHEMA = {"name": "from_thread", "schema": INVOICE_SCHEMA}
CONFIG_SCHEMA = {
    "name": "from_config",
    "schema": {
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
        "additionalProperties": False,
    },
    "description": "One answer.",
}


def test_the_thread_file_names_the_schema():
    value = {"number": "F-7", "items": []}
    thread = _thread(output_schema=THREAD_SCHEMA)
    result, body = _run(text_answer(json.dumps(value)), thread)
    assert body["text"]["format"]["name"] == "from_thread"
    assert body["text"]["format"]["schema"] == INVOICE_SCHEMA
    assert result.parsed == value


def test_the_configuration_names_the_schema_and_keeps_the_verbosity():
    settings = {"request": {"output_schema": CONFIG_SCHEMA, "text": {"verbosity": "low"}}}
    result, body = _run(text_answer('{"answer": "42"}'), settings=settings)
    assert body["text"] == {
        "format": {
            "type": "json_schema",
            "name": "from_config",
            "description": "One answer.",
            "schema": CONFIG_SCHEMA["schema"],
            "strict": True,
        },
        "verbosity": "low",
    }
    assert result.parsed == {"answer": "42"}


def test_precedence_is_argument_then_thread_then_configuration():
    settings = {"request": {"output_schema": CONFIG_SCHEMA}}
    thread = _thread(output_schema=THREAD_SCHEMA)
    value = {"number": "F-7", "items": []}
    _, body = _run(text_answer(json.dumps(value)), thread, settings)
    assert body["text"]["format"]["name"] == "from_thread"
    text = json.dumps(_valid_invoice())
    result, body = _run(text_answer(text), thread, settings, output_schema=Invoice)
    assert body["text"]["format"]["name"] == "Invoice"
    assert isinstance(result.parsed, Invoice)
    # What render shows is what run sends.
    rendered = turnwire.render(thread, container=make_container(settings))
    assert rendered.json["text"]["format"]["name"] == "from_thread"


def test_a_hand_written_json_schema_text_format_is_parsed_and_sent_unchanged():
    fmt = {"type": "json_schema", "name": "raw", "schema": INVOICE_SCHEMA, "strict": False}
    value = {"number": "F-7", "items": []}
    result, body = _run(
        text_answer(json.dumps(value)), settings={"request": {"text": {"format": fmt}}}
    )
    assert body["text"] == {"format": fmt}
    assert result.parsed == value


def test_without_a_schema_nothing_changes():
    result, body = _run(text_answer('{"number": 1}'))
    assert "text" not in body
    assert result.parsed is None and result.refusal is None


def test_an_output_schema_value_sets_name_strict_and_description():
    schema = OutputSchema(name="loose", schema={"type": "object"}, strict=False, description="d")
    result, body = _run(text_answer('{"any": [1]}'), output_schema=schema)
    assert body["text"]["format"] == {
        "type": "json_schema",
        "name": "loose",
        "description": "d",
        "schema": {"type": "object"},
        "strict": False,
    }
    assert result.parsed == {"any": [1]}


def test_a_bad_output_schema_fails_before_anything_is_sent():
    with ScriptedServer([Reply.sse(text_answer("{}"))]) as server:
        with pytest.raises(turnwire.errors.OutputSchemaError) as caught:
            turnwire.api.run(
                _thread(),
                container=make_container(),
                base_url=server.base_url,
                output_schema={"type": "object", "properties": {"a": {"type": "string"}}},
            )
    assert server.requests == []
    assert "additionalProperties: false" in str(caught.value)


def test_a_stored_thread_keeps_the_mismatched_turn_and_runs_on(tmp_path):
    with SQLiteStore(tmp_path / "threads.db") as store:
        thread_id = store.create_thread(_thread(messages=[]))
        bad = json.dumps(INVOICE_JSON)
        good = json.dumps(_valid_invoice())
        with ScriptedServer(
            [Reply.sse(text_answer(bad)), Reply.sse(text_answer(good, msg_id="msg_2"))]
        ) as server:
            options = {"store": store, "container": make_container(), "base_url": server.base_url}
            with pytest.raises(OutputValidationError) as caught:
                turnwire.run_thread(thread_id, prompt="first?", output_schema=Invoice, **options)
            assert caught.value.path == "$.items[2].price"
            result = turnwire.run_thread(
                thread_id, prompt="again?", output_schema=Invoice, **options
            )
        assert isinstance(result.parsed, Invoice)
        stored = store.export_thread(thread_id)
    assert [(m.role, m.content) for m in stored.messages] == [
        ("user", "first?"),
        ("assistant", bad),
        ("user", "again?"),
        ("assistant", good),
    ]
    # The second request replayed the first answer as it came.
    replayed = server.requests[1].json["input"][1]
    assert (replayed["role"], replayed["content"]) == ("assistant", bad)
