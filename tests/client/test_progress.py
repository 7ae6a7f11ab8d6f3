"""Progress events: the on_event callback and the on_stream_event hook, over a real server."""

from __future__ import annotations

import json
import logging

import msgspec
import yaml

import turnwire
from turnwire import hookimpl
from turnwire.client.progress import (
    ItemDoneEvent,
    ReasoningSummaryDeltaEvent,
    RefusalDeltaEvent,
    ResponseDoneEvent,
    TextDeltaEvent,
    ToolArgumentsDeltaEvent,
    ToolFinishedEvent,
    ToolStartedEvent,
)

from ..conftest import make_container
from .conftest import AFTER_CALL, CALL, THREAD
from .server import Reply, ScriptedServer, recorded
from .streams import sse

REASONING = recorded("reasoning_summary_multipart_text_o3-mini.sse")


class Collector:
    def __init__(self) -> None:
        self.events: list[tuple[object, str]] = []

    @hookimpl
    def on_stream_event(self, event, model):
        self.events.append((event, model))


class Broken:
    @hookimpl
    def on_stream_event(self, event):
        raise RuntimeError("observer bug")


def _run(script, *, plugins=(), on_event=None, handlers=None):
    container = make_container(extra_plugins=plugins)
    with ScriptedServer(script) as server:
        return turnwire.api.run(
            turnwire.load_thread(yaml.safe_load(THREAD)),
            container=container,
            base_url=server.base_url,
            handlers=handlers or {"get_capital": lambda country: f"Paris is in {country}"},
            on_event=on_event,
        )


def test_reasoning_text_items_and_the_finished_response_are_reported_in_order():
    seen: list[object] = []
    collector = Collector()
    result = _run([Reply.sse(REASONING)], plugins=[collector], on_event=seen.append)
    assert [event for event, _ in collector.events] == seen
    assert {model for _, model in collector.events} == {"gpt-4o"}
    parts: dict[int, str] = {}
    for e in seen:
        if isinstance(e, ReasoningSummaryDeltaEvent):
            parts[e.summary_index] = parts.get(e.summary_index, "") + e.delta
    assert len(parts) > 1
    assert "\n\n".join(parts[i] for i in sorted(parts)) == result.records.thoughts[0].content
    text = "".join(e.delta for e in seen if isinstance(e, TextDeltaEvent))
    assert text == result.records.messages[0].content
    done = [e for e in seen if isinstance(e, ItemDoneEvent)]
    assert [(e.item_type, e.item_id) for e in done] == [
        ("reasoning", result.records.thoughts[0].id),
        ("message", result.records.messages[0].id),
    ]
    (finished,) = [e for e in seen if isinstance(e, ResponseDoneEvent)]
    assert seen[-1] is finished and finished.finish_reason == "stop"
    assert finished.usage == result.usage and finished.usage.reasoning_tokens > 0
    assert seen.index(done[0]) < seen.index(next(e for e in seen if isinstance(e, TextDeltaEvent)))


def test_tool_arguments_stream_and_tools_start_and_finish():
    seen: list[object] = []
    result = _run([Reply.sse(CALL), Reply.sse(AFTER_CALL)], on_event=seen.append)
    arguments = "".join(e.delta for e in seen if isinstance(e, ToolArgumentsDeltaEvent))
    assert json.loads(arguments) == result.records.tool_calls[0].args
    kinds = [type(e) for e in seen if not isinstance(e, TextDeltaEvent | ToolArgumentsDeltaEvent)]
    assert kinds == [
        ItemDoneEvent,
        ResponseDoneEvent,
        ToolStartedEvent,
        ToolFinishedEvent,
        ItemDoneEvent,
        ResponseDoneEvent,
    ]
    started = next(e for e in seen if isinstance(e, ToolStartedEvent))
    finished = next(e for e in seen if isinstance(e, ToolFinishedEvent))
    assert started.call.result is None
    assert finished.call.result.text == "Paris is in France"
    assert [e.finish_reason for e in seen if isinstance(e, ResponseDoneEvent)] == [
        "tool_calls",
        "stop",
    ]


def test_refusals_are_reported_as_they_stream():
    refusal = sse(
        {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []},
        },
        {"type": "response.refusal.delta", "output_index": 0, "delta": "I can't "},
        {"type": "response.refusal.delta", "output_index": 0, "delta": "help with that."},
        {"type": "response.completed", "response": {"id": "resp_1", "status": "completed"}},
    )
    seen: list[object] = []
    result = _run([Reply.sse(refusal)], on_event=seen.append)
    deltas = [e.delta for e in seen if isinstance(e, RefusalDeltaEvent)]
    assert "".join(deltas) == result.records.messages[0].refusal == "I can't help with that."
    assert result.records.messages[0].content is None


def test_a_broken_observer_or_callback_never_fails_the_turn(caplog):
    def explode(event):
        raise ValueError("callback bug")

    with caplog.at_level(logging.ERROR, logger="turnwire"):
        result = _run([Reply.sse(REASONING)], plugins=[Broken()], on_event=explode)
    assert result.response.finish_reason == "stop"
    kinds = [r.kind for r in caplog.records]
    assert kinds.count("observer-error") >= 2


def test_events_encode_to_json_with_their_type():
    event = ReasoningSummaryDeltaEvent(output_index=0, summary_index=1, delta="plan")
    assert json.loads(msgspec.json.encode(event)) == {
        "type": "reasoning_summary.delta",
        "output_index": 0,
        "summary_index": 1,
        "delta": "plan",
    }


def test_hook_on_stream_event():
    """A plugin sees every progress event of a run, in order, with the model that streams it."""
    collector = Collector()
    _run([Reply.sse(CALL), Reply.sse(AFTER_CALL)], plugins=[collector])
    kinds = [type(event).__name__ for event, _ in collector.events]
    assert kinds.index("ToolStartedEvent") < kinds.index("ToolFinishedEvent")
    assert kinds.count("ResponseDoneEvent") == 2 and kinds[-1] == "ResponseDoneEvent"
    assert {model for _, model in collector.events} == {"gpt-4o"}
