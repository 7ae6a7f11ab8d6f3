"""An image generation's partial images (``partial_images: N`` on its tool) reach the run's
observers as progress events, in stream order, and leave the recorded answer as it was."""

from __future__ import annotations

import logging
from typing import Any

import pytest

import turnwire
from turnwire.client.progress import ImagePartialEvent, ItemDoneEvent

from ..conftest import make_container
from .server import Reply, ScriptedServer
from .streams import message_item, sse

RESPONSE = {"id": "resp_1", "model": "gpt-5"}
CALL = {"type": "image_generation_call", "id": "ig_1", "status": "generating", "result": None}
DONE = {**CALL, "status": "completed", "result": "RklOQUw="}
MESSAGE = message_item("here it is")


def _partial(index: int, **fields: Any) -> dict[str, Any]:
    return {
        "type": "response.image_generation_call.partial_image",
        "output_index": 0,
        "item_id": "ig_1",
        "partial_image_index": index,
        "partial_image_b64": f"UEFSVElBTC{index}=",
        "output_format": "png",
        "size": "1024x1024",
        "quality": "low",
        "background": "opaque",
        **fields,
    }


def _stream(*partials: dict[str, Any]) -> Reply:
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {**RESPONSE, "status": "in_progress"}},
        {"type": "response.output_item.added", "output_index": 0, "item": CALL},
        {"type": "response.image_generation_call.generating", "output_index": 0, "item_id": "ig_1"},
        *partials,
        {"type": "response.output_item.done", "output_index": 0, "item": DONE},
        {"type": "response.output_item.done", "output_index": 1, "item": MESSAGE},
        {"type": "response.completed", "response": {**RESPONSE, "status": "completed"}},
    ]
    for number, event in enumerate(events):
        event["sequence_number"] = number
    return Reply.sse(sse(*events))


def _run(reply: Reply) -> tuple[turnwire.RunResult[Any], list[object]]:
    seen: list[object] = []
    thread = turnwire.Thread.create(model="gpt-5", prompt="draw a cat")
    with ScriptedServer([reply]) as server:
        result = turnwire.run(
            thread,
            container=make_container(),
            base_url=server.base_url,
            api_key="k",
            on_event=seen.append,
        )
    return result, seen


def test_partial_images_are_progress_events_before_the_finished_item() -> None:
    result, seen = _run(_stream(_partial(0), _partial(1, size=None)))
    previews = [event for event in seen if isinstance(event, ImagePartialEvent)]
    assert previews == [
        ImagePartialEvent(
            output_index=0,
            item_id="ig_1",
            index=0,
            image_b64="UEFSVElBTC0=",
            output_format="png",
            size="1024x1024",
            quality="low",
            background="opaque",
        ),
        ImagePartialEvent(
            output_index=0,
            item_id="ig_1",
            index=1,
            image_b64="UEFSVElBTC1=",
            output_format="png",
            quality="low",
            background="opaque",
        ),
    ]
    done = [event for event in seen if isinstance(event, ItemDoneEvent)]
    assert seen.index(previews[-1]) < seen.index(done[0])
    assert done[0].item_type == "image_generation_call"
    # The finished item is what is recorded: the previews are not kept.
    [image] = result.thread.hosted_items
    assert image.item["result"] == "RklOQUw="
    assert result.text == "here it is"


def test_a_partial_image_the_client_cannot_read_is_skipped_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    broken = _partial(0)
    del broken["partial_image_b64"]
    with caplog.at_level(logging.WARNING, logger="turnwire"):
        result, seen = _run(_stream(broken, _partial(1)))
    assert [event.index for event in seen if isinstance(event, ImagePartialEvent)] == [1]
    assert any("partial_image" in record.getMessage() for record in caplog.records)
    assert result.text == "here it is"
    assert result.thread.hosted_items[0].item["result"] == "RklOQUw="


def test_the_progress_event_is_json_for_a_ui() -> None:
    import msgspec

    event = ImagePartialEvent(output_index=0, index=0, image_b64="QQ==")
    assert msgspec.json.decode(msgspec.json.encode(event)) == {
        "type": "image.partial",
        "output_index": 0,
        "item_id": None,
        "index": 0,
        "image_b64": "QQ==",
        "output_format": None,
        "size": None,
        "quality": None,
        "background": None,
    }
