"""The answer's shapes: a model name is a printable name, so an answer whose model holds a control
character is refused where it enters, before any store sees it."""

from __future__ import annotations

import pytest

import turnwire
from turnwire.errors import StreamError

from ..client.server import Reply, ScriptedServer


def _answer(model: str) -> bytes:
    import json

    response = {"id": "resp_1", "status": "completed", "model": model}
    item = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "hi", "annotations": []}],
    }
    events = [
        {"type": "response.created", "response": {**response, "status": "in_progress"}},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": response},
    ]
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)


@pytest.mark.parametrize("model", ["gpt-5\x00", "gpt\x1b]0;owned\x07", "gpt\x9b31m"])
def test_an_answer_whose_model_holds_a_control_character_is_refused_where_it_enters(
    model: str,
) -> None:
    thread = turnwire.load_thread(
        {
            "version": 1,
            "model": "gpt-5",
            "messages": [
                {"id": "u1", "role": "user", "content": "hi", "created_at": "2026-01-01T00:00:00Z"}
            ],
        }
    )
    with ScriptedServer([Reply.sse(_answer(model))]) as server:
        with pytest.raises(StreamError, match="model"):
            turnwire.run(thread, base_url=server.base_url)
