"""Imported reasoning: the unfingerprinted-reasoning setting and `turnwire fingerprint`."""

from __future__ import annotations

import json
from typing import Any

import msgspec

import turnwire
from turnwire.rendering.fingerprints import stamp_fingerprints

from ..conftest import REPLAY, make_container
from ..conftest import thread as make_thread

IMPORTED: dict[str, Any] = {
    "version": 1,
    "model": "gpt-5",
    "messages": [
        {
            "id": "u1",
            "role": "user",
            "content": "Plan a trip",
            "created_at": "2026-01-01T10:00:00Z",
        },
        {
            "id": "msg_1",
            "role": "assistant",
            "content": "Go to Lyon.",
            "created_at": "2026-01-01T10:00:02Z",
            "seq": 2,
        },
        {"id": "u2", "role": "user", "content": "And then?", "created_at": "2026-01-01T10:01:00Z"},
    ],
    "thoughts": [
        {
            "id": "rs_1",
            "content": "Lyon is close.",
            "replay_compatibility": "openai-responses-reasoning-v1",
            "payload": {
                "variant": "responses-reasoning",
                "item": {
                    "type": "reasoning",
                    "id": "rs_1",
                    "summary": [],
                    "encrypted_content": "e",
                },
                "paired_item_id": "msg_1",
            },
            "created_at": "2026-01-01T10:00:01Z",
            "seq": 1,
        }
    ],
}


def _types(body: dict[str, Any]) -> list[str]:
    """Each item's type, with input messages by role (``user``, ``assistant``)."""
    return [
        item["role"] if item.get("type") == "message" and "id" not in item else item["type"]
        for item in body["input"]
    ]


def test_reasoning_without_a_fingerprint_is_dropped_by_default_with_a_reason() -> None:
    rendered = turnwire.render(make_thread(**IMPORTED), container=make_container(REPLAY))
    assert "reasoning" not in _types(rendered.json)
    assert any(
        "rs_1" in warning and "no prefix_fingerprint" in warning
        for warning in rendered.rendered.warnings
    )


def test_trust_replays_it_when_its_partner_pairs() -> None:
    settings = {"render": {**REPLAY["render"], "unfingerprinted_reasoning": "trust"}}
    body = turnwire.render(make_thread(**IMPORTED), container=make_container(settings)).json
    assert body["input"][1] == {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [],
        "encrypted_content": "e",
    }
    assert body["input"][2]["id"] == "msg_1"


def test_trust_still_needs_the_partner() -> None:
    settings = {"render": {**REPLAY["render"], "unfingerprinted_reasoning": "trust"}}
    unpaired = json.loads(json.dumps(IMPORTED))
    unpaired["thoughts"][0]["payload"]["paired_item_id"] = "msg_other"
    rendered = turnwire.render(make_thread(**unpaired), container=make_container(settings))
    assert "reasoning" not in _types(rendered.json)


def test_stamping_makes_it_replay_under_the_default_setting() -> None:
    container = make_container(REPLAY)
    stamped, report = stamp_fingerprints(
        make_thread(**IMPORTED), container=container, model="gpt-5"
    )
    assert report.stamped == ("rs_1",) and report.skipped == {}
    fingerprint = stamped.thoughts[0].payload.prefix_fingerprint
    assert fingerprint is not None and len(fingerprint) == 64
    body = turnwire.render(stamped, container=container).json
    assert _types(body)[:3] == ["user", "reasoning", "message"]
    # The stamp binds to the prefix: under a changed first message it is stale again.
    changed = json.loads(json.dumps(IMPORTED))
    changed["messages"][0]["content"] = "Plan a different trip"
    moved = msgspec.structs.replace(make_thread(**changed), thoughts=stamped.thoughts)
    assert "reasoning" not in _types(turnwire.render(moved, container=container).json)


def test_only_stamps_what_it_is_asked_and_leaves_the_rest_to_the_setting() -> None:
    container = make_container(REPLAY)
    two = json.loads(json.dumps(IMPORTED))
    other = json.loads(json.dumps(two["thoughts"][0]))
    other.update(id="rs_0", seq=0, created_at="2026-01-01T09:59:59Z")
    other["payload"]["item"]["id"] = "rs_0"
    two["thoughts"].insert(0, other)
    stamped, report = stamp_fingerprints(
        make_thread(**two), container=container, model="gpt-5", only={"rs_1"}
    )
    assert report.stamped == ("rs_1",)
    assert [t.payload.prefix_fingerprint is None for t in stamped.thoughts] == [True, False]


def test_a_thought_replay_cannot_reach_is_reported_not_stamped() -> None:
    stamped, report = stamp_fingerprints(
        make_thread(**IMPORTED), container=make_container(), model="gpt-5"
    )
    assert report.stamped == ()
    assert report.skipped == {"rs_1": "render.reasoning_replay is 'off', not 'encrypted'"}
    assert stamped.thoughts[0].payload.prefix_fingerprint is None
