"""``render.context_placement``: memories and retrieved records in the leading content, or each
once in the timeline at its ``created_at``, so that a thread growing turn by turn, with a memory
or a document added now and then, sends requests that each extend the previous one byte for
byte (same ``instructions``, same ``tools``, the previous ``input`` as a prefix): what prompt
caching and replayed reasoning need.

The rules pinned here: the order among records (after every record of the same instant, memories
before documents, stored order), undated items at the head, a compaction and a window never
leave them out, and reasoning recorded turn by turn stays replayed on every later request."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

import turnwire

from ..conftest import (
    REPLAY,
    WEATHER_TOOL,
    assistant,
    at,
    call,
    make_container,
    prefix_fingerprint,
    reasoning_thought,
    thread,
    user,
)
from ..oracle import validate_body

IN_TIMELINE = {"render": {"context_placement": "timeline"}}

LEADING = {"render": {"context_placement": "leading"}}


def _merged(*settings: dict[str, Any] | None) -> dict[str, Any]:
    render: dict[str, Any] = {}
    for part in settings:
        render.update((part or {}).get("render", {}))
    return {"render": render}


def _second(turn: int, offset: int) -> int:
    """A turn's instants, ``offset`` seconds into it: eleven turns fit in the minute of ``at``."""
    return turn * 5 + offset


def _growing(turns: int, *, reasoning: bool = False) -> list[dict[str, Any]]:
    """The thread (as thread-file fields) at each request of a conversation: request ``k`` is
    sent once the question of turn ``k`` is stored; the answer of turn ``k`` (with its
    reasoning, and a tool call on odd turns) comes at one instant, then a memory of that turn,
    at the answer's own instant on odd turns (a tie) and after it on even ones, and on every
    third turn a retrieved document too. Reasoning fingerprints are filled in by the caller."""
    states = []
    fields: dict[str, list[Any]] = {
        "messages": [],
        "thoughts": [],
        "tool_calls": [],
        "memories": [],
        "retrievables": [],
    }
    for turn in range(turns):
        fields["messages"].append(user(f"u{turn}", f"question {turn}", _second(turn, 0)))
        states.append({key: list(value) for key, value in fields.items()})
        answer_at = _second(turn, 1)
        if reasoning:
            fields["thoughts"].append(
                {
                    **reasoning_thought(
                        f"rs_{turn}",
                        0,
                        fingerprint=None,
                        paired=f"fc_{turn}" if turn % 2 else f"msg_{turn}",
                    ),
                    "created_at": at(answer_at),
                    "seq": 0,
                }
            )
        if turn % 2:
            fields["tool_calls"].append(
                {**call(f"call_{turn}|fc_{turn}", 0, seq=1), "created_at": at(answer_at)}
            )
        fields["messages"].append(
            {**assistant(f"msg_{turn}", f"answer {turn}", 0, seq=2), "created_at": at(answer_at)}
        )
        remembered = answer_at if turn % 2 else _second(turn, 2)
        fields["memories"].append(
            {"id": f"m{turn}", "content": f"fact {turn}", "created_at": at(remembered)}
        )
        if turn % 3 == 0:
            fields["retrievables"].append(
                {
                    "id": f"d{turn}",
                    "content": f"document {turn}",
                    "trust_tier": ("first-party", "third-party-public", "third-party-private")[
                        turn % 9 // 3
                    ],
                    "source": f"kb/{turn}.md",
                    "created_at": at(remembered),
                }
            )
    return states


def _thread(fields: dict[str, Any]) -> turnwire.Thread:
    return thread(
        system_prompt="You help.",
        standing_instructions=["Be brief."],
        tools=[WEATHER_TOOL],
        **fields,
    )


def _bodies(states: list[dict[str, Any]], settings: dict[str, Any]) -> list[dict[str, Any]]:
    container = make_container(settings)
    bodies = []
    for fields in states:
        body = turnwire.render(_thread(fields), container=container, model="gpt-5").json
        validate_body(body)  # the official SDK's request types
        bodies.append(body)
    return bodies


def _extends(previous: dict[str, Any], body: dict[str, Any]) -> bool:
    """Whether ``body`` extends ``previous`` byte for byte: same instructions and tools, the
    previous input as a prefix of this one."""
    size = len(previous["input"])
    return (
        previous.get("instructions") == body.get("instructions")
        and previous.get("tools") == body.get("tools")
        and json.dumps(body["input"][:size]) == json.dumps(previous["input"])
    )


def test_under_timeline_every_request_extends_the_previous_one():
    bodies = _bodies(_growing(9), IN_TIMELINE)
    assert all(_extends(a, b) for a, b in itertools.pairwise(bodies))
    # what does not change, only
    assert bodies[-1]["instructions"] == (
        "You help.\n\n"
        '<system_instructions kind="developer-rules">\nBe brief.\n</system_instructions>'
    )
    # every memory and document is sent, each once, as a developer item
    text = json.dumps(bodies[-1]["input"])
    for turn in range(8):
        assert text.count(f"fact {turn}\\n") == 1
    assert all(text.count(f"document {turn}\\n") == 1 for turn in (0, 3, 6))
    developer = [item for item in bodies[-1]["input"] if item.get("role") == "developer"]
    assert len(developer) == 8 + 3


@pytest.mark.parametrize("channel", ["developer-item", "system-item"])
def test_under_timeline_the_leading_item_stays_the_same_too(channel):
    settings = _merged(IN_TIMELINE, {"render": {"system_prompt_channel": channel}})
    bodies = _bodies(_growing(5), settings)
    assert all(_extends(a, b) for a, b in itertools.pairwise(bodies))
    assert "instructions" not in bodies[-1]
    assert bodies[-1]["input"][0]["content"][0]["text"].startswith("You help.")


def test_under_leading_a_memory_added_rewrites_the_instructions_and_the_bytes_are_the_default():
    states = _growing(5)
    bodies = _bodies(states, LEADING)
    assert bodies == _bodies(states, {})  # leading is the default, byte for byte
    assert not any(_extends(a, b) for a, b in itertools.pairwise(bodies))
    assert "<memories>" in bodies[-1]["instructions"]
    assert all(item.get("role") != "developer" for item in bodies[-1]["input"])


def test_a_trailing_bucket_order_is_ignored_under_timeline():
    order = {
        "render": {
            "bucket_order": ["standing_instructions", "timeline", "memories", "retrievables"]
        }
    }
    trailing = _bodies(_growing(4), order)
    placed = _bodies(_growing(4), _merged(order, IN_TIMELINE))
    # as a trailing bucket, the memories rewrite the end of every request that has one
    assert not any(_extends(a, b) for a, b in itertools.pairwise(trailing[1:]))
    assert all(_extends(a, b) for a, b in itertools.pairwise(placed))
    assert all(item.get("role") != "system" for item in placed[-1]["input"])


def test_reasoning_stays_replayed_on_every_later_request_while_memories_are_added():
    """Reasoning recorded after each request carries the fingerprint of that request; under
    ``timeline`` every later request extends it, so every earlier reasoning item is replayed on
    every later request. Under ``leading`` each new memory rewrites the instructions and every
    one of them is dropped as stale."""
    states = _growing(7, reasoning=True)
    for placement, kept in (("timeline", True), ("leading", False)):
        settings = _merged(REPLAY, {"render": {"context_placement": placement}})
        fingerprints: dict[str, str] = {}
        container = make_container(settings)
        previous = None
        for turn, fields in enumerate(states):
            for thought in fields["thoughts"]:
                thought["payload"]["prefix_fingerprint"] = fingerprints[thought["id"]]
            rendered = turnwire.render(_thread(fields), container=container, model="gpt-5")
            body = rendered.json
            validate_body(body)
            replayed = [item["id"] for item in body["input"] if item.get("type") == "reasoning"]
            if kept:
                assert replayed == [f"rs_{k}" for k in range(turn)], turn
                assert rendered.rendered.warnings == ()
                assert previous is None or _extends(previous, body)
            else:
                assert replayed == [], turn
            # the reasoning of this turn's answer is produced after this very request
            fingerprints[f"rs_{turn}"] = prefix_fingerprint(_thread(fields), settings)
            previous = body


def test_records_at_the_same_instant_go_first_then_memories_then_documents_in_stored_order():
    t = thread(
        messages=[
            user("u1", "hi", 0),
            assistant("msg_1", "answer", 1, seq=2),
        ],
        tool_calls=[{**call("call_1", 1, seq=1)}],
        tools=[WEATHER_TOOL],
        memories=[
            {"id": "m-late", "content": "late", "created_at": at(1)},
            {"id": "m-early", "content": "early", "created_at": at(1)},
        ],
        retrievables=[
            {"id": "d1", "content": "doc", "trust_tier": "first-party", "created_at": at(1)},
        ],
    )
    body = turnwire.render(t, container=make_container(IN_TIMELINE), model="gpt-5").json
    kinds = [
        item.get("type") if item.get("role") != "developer" else item["content"][0]["text"][-30:]
        for item in body["input"]
    ]
    assert kinds[:4] == ["message", "function_call", "function_call_output", "message"]
    texts = [item["content"][0]["text"] for item in body["input"][4:]]
    assert "late" in texts[0] and "early" in texts[1] and "doc" in texts[2]


def test_a_memory_never_parts_a_reasoning_item_from_its_partner():
    """The records of one response share its instant; a memory of that instant goes after
    them all, so the reasoning item and the item it produced stay side by side."""
    before = thread(messages=[user("u1", "hi", 0)], tools=[WEATHER_TOOL])
    fingerprint = prefix_fingerprint(before, _merged(REPLAY, IN_TIMELINE))
    t = thread(
        messages=[user("u1", "hi", 0), assistant("msg_1", "answer", 1, seq=1)],
        thoughts=[reasoning_thought("rs_1", 1, fingerprint=fingerprint, paired="msg_1", seq=0)],
        memories=[{"id": "m1", "content": "learnt", "created_at": at(1)}],
        tools=[WEATHER_TOOL],
    )
    body = turnwire.render(
        t, container=make_container(_merged(REPLAY, IN_TIMELINE)), model="gpt-5"
    ).json
    assert [item.get("type") for item in body["input"]] == [
        "message",
        "reasoning",
        "message",
        "message",
    ]
    assert body["input"][2]["id"] == "msg_1"
    assert body["input"][3]["role"] == "developer"


def test_undated_items_go_at_the_head_and_adding_one_rewrites_it():
    first = {
        "messages": [user("u1", "hi", 0)],
        "memories": [
            {"id": "m-dated", "content": "dated", "created_at": at(0)},
            {"id": "m-undated", "content": "undated"},
        ],
        "retrievables": [{"id": "d-undated", "content": "doc", "trust_tier": "first-party"}],
    }
    container = make_container(IN_TIMELINE)
    body = turnwire.render(thread(**first), container=container, model="gpt-5").json
    texts = [json.dumps(item) for item in body["input"]]
    assert "undated" in texts[0] and "doc" in texts[1]  # memories, then documents
    assert '"role": "user"' in texts[2] and "dated" in texts[3]
    # an undated memory added later goes at the head too: this request does not extend the last
    second = {**first, "memories": [*first["memories"], {"id": "m-new", "content": "new"}]}
    grown = turnwire.render(thread(**second), container=container, model="gpt-5").json
    assert "new" in json.dumps(grown["input"][1])
    assert not _extends(body, grown)


def test_a_compaction_leaves_the_context_items_in_place():
    """Memories and documents are the agent's state, not the conversation: those dated before
    the latest compaction are still sent, in their places before its item (as the leading
    placement keeps sending them), and the requests after it extend each other."""
    compaction = {
        "id": "cmp_1",
        "type": "compaction",
        "item": {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAA1"},
        "created_at": at(5),
    }
    fields = {
        "messages": [
            user("u1", "zebra", 0),
            assistant("msg_1", "answer", 1),
            user("u2", "next", 6),
        ],
        "memories": [
            {"id": "m1", "content": "before the compaction", "created_at": at(2)},
            {"id": "m2", "content": "after it", "created_at": at(7)},
        ],
        "retrievables": [
            {"id": "d1", "content": "old doc", "trust_tier": "first-party", "created_at": at(1)}
        ],
        "hosted_items": [compaction],
    }
    container = make_container(IN_TIMELINE)
    body = turnwire.render(thread(**fields), container=container, model="gpt-5").json
    kinds = [item.get("role") or item["type"] for item in body["input"]]
    assert kinds == ["developer", "developer", "compaction", "user", "developer"]
    assert "old doc" in json.dumps(body["input"][0]) and "before the compaction" in json.dumps(
        body["input"][1]
    )
    assert "zebra" not in json.dumps(body["input"])  # the records before it are covered
    grown = {
        **fields,
        "messages": [*fields["messages"], assistant("msg_2", "ok", 8), user("u3", "more", 9)],
        "memories": [*fields["memories"], {"id": "m3", "content": "third", "created_at": at(8)}],
    }
    after = turnwire.render(thread(**grown), container=container, model="gpt-5").json
    assert _extends(body, after)


def test_a_window_leaves_the_context_items_in_place():
    """A window cuts turns, never the agent's state: a memory of a turn the window leaves out
    is still sent, before the window's first kept record."""
    fields = {
        "messages": [
            user("u1", "first question", 0),
            assistant("msg_1", "first answer", 1),
            user("u2", "second question", 2),
            assistant("msg_2", "second answer", 3),
            user("u3", "third question", 4),
        ],
        "memories": [{"id": "m1", "content": "from the first turn", "created_at": at(1)}],
        "retrievables": [
            {
                "id": "d1",
                "content": "doc of the first turn",
                "trust_tier": "first-party",
                "created_at": at(0),
            }
        ],
    }
    settings = {**IN_TIMELINE, "context": {"window": {"last_turns": 1}}}
    body = turnwire.render(thread(**fields), container=make_container(settings), model="gpt-5").json
    text = json.dumps(body["input"])
    assert "first question" not in text and "first answer" not in text
    assert "doc of the first turn" in json.dumps(body["input"][0])
    assert "from the first turn" in json.dumps(body["input"][1])
    assert body["input"][2]["role"] != "developer"
