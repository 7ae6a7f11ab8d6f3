"""Typed stream events: both error shapes, unknown types, nesting past the decoder's limit."""

from __future__ import annotations

import json

import msgspec
import pytest

from turnwire.wire.events import ErrorEvent, UnknownEvent, decode_event


def test_the_flat_error_shape_of_the_spec():
    event = decode_event(
        b'{"type":"error","code":"server_error","message":"boom","param":null,"sequence_number":3}'
    )
    assert isinstance(event, ErrorEvent) and event.detail == ("server_error", "boom")


def test_the_nested_error_shape_seen_on_the_wire():
    event = decode_event(
        json.dumps(
            {
                "type": "error",
                "sequence_number": 1,
                "error": {
                    "type": "insufficient_quota",
                    "code": "insufficient_quota",
                    "message": "quota",
                    "param": None,
                },
            }
        )
    )
    assert event.detail == ("insufficient_quota", "quota")


def test_unknown_and_future_events_fall_back():
    event = decode_event(b'{"type":"response.future_thing","payload":{"x":1}}')
    assert event == UnknownEvent(type="response.future_thing")
    with pytest.raises(msgspec.DecodeError):
        decode_event(b"{not json")


def test_an_event_nested_too_deeply_to_decode_is_a_stream_error():
    from turnwire.errors import StreamError

    value = "1"
    for _ in range(3000):
        value = '{"a":' + value + "}"
    for kind in ("response.output_item.done", "future_thing"):
        with pytest.raises(StreamError, match="nested too deeply") as caught:
            decode_event('{"type":"' + kind + '","v":' + value + "}")
        assert caught.value.field == "(root)"
