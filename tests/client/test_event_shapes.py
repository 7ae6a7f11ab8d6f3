"""Events of the current API and of Open Responses servers that carry nothing turnwire records:
``keepalive``, ``response.rate_limits.updated`` (also after the terminal event), an extension
event whose type has a provider's slug, and the ``[DONE]`` line some servers end with. The
answer reads as if they were absent."""

from __future__ import annotations

import json
from typing import Any

import pytest

import turnwire
from turnwire.client.progress import ProgressEvent, TextDeltaEvent

from ..conftest import make_container
from .server import Reply, ScriptedServer

MESSAGE = {
    "type": "message",
    "id": "msg_1",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "output_text", "text": "Hello there.", "annotations": []}],
}
RESPONSE = {"id": "resp_1", "model": "gpt-5"}
RATE_LIMITS = {
    "type": "response.rate_limits.updated",
    "rate_limits": [{"name": "requests", "limit": 500, "remaining": 499, "reset_seconds": 1.0}],
}


def _frames(*events: Any) -> bytes:
    return b"".join(
        b"data: " + (e if isinstance(e, bytes) else json.dumps(e).encode()) + b"\n\n"
        for e in events
    )


BODY = [
    {"type": "response.created", "response": {**RESPONSE, "status": "in_progress"}},
    {"type": "keepalive", "sequence_number": 1},
    {"type": "response.output_item.added", "output_index": 0, "item": {**MESSAGE, "content": []}},
    {"type": "acme:response.usage_estimate", "tokens": 12},  # an Open Responses extension
    {"type": "response.output_text.delta", "output_index": 0, "delta": "Hello "},
    {"type": "keepalive", "sequence_number": 2},
    {"type": "response.output_text.delta", "output_index": 0, "delta": "there."},
    {"type": "response.output_item.done", "output_index": 0, "item": MESSAGE},
]
DONE = {"type": "response.completed", "response": {**RESPONSE, "status": "completed"}}


@pytest.mark.parametrize(
    "tail",
    [
        [DONE],
        [RATE_LIMITS, DONE],
        [DONE, RATE_LIMITS],  # the rate limits after the terminal event
        [DONE, b"[DONE]"],  # how Open Responses servers (and LiteLLM) end a stream
        [DONE, RATE_LIMITS, b"[DONE]"],
    ],
    ids=["plain", "limits-before", "limits-after", "done-line", "limits-and-done-line"],
)
def test_events_that_carry_nothing_recorded_leave_the_answer_as_it_is(tail: list[Any]) -> None:
    seen: list[ProgressEvent] = []
    with ScriptedServer([Reply.sse(_frames(*BODY, *tail))]) as server:
        result = turnwire.run(
            turnwire.Thread.create(model="gpt-5", prompt="hi"),
            container=make_container(),
            base_url=server.base_url,
            api_key="sk-t",
            on_event=seen.append,
        )
    assert result.text == "Hello there."
    assert result.response.status == "completed" and result.response.finish_reason == "stop"
    assert [e.delta for e in seen if isinstance(e, TextDeltaEvent)] == ["Hello ", "there."]
    assert [m.content for m in result.records.messages] == ["Hello there."]
