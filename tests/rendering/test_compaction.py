"""The compaction cut: a render leaves out every timeline record that sorts before the latest
compaction item and replays the item in their place; the header still renders."""

from __future__ import annotations

import json
from typing import Any

import msgspec

from turnwire.rendering.compaction import compacted, covered, latest_compaction
from turnwire.rendering.container import overriding
from turnwire.rendering.windows import apply_window, estimate_request_tokens

from ..conftest import REPLAY, assistant, at, make_container, render_body, thread, user
from ._incremental.test_memo import _outcome, _Scenario

SYSTEM = "Be brief."


def _compaction(cid: str, second: int, seq: int = 0) -> dict:
    item = {"type": "compaction", "id": cid, "encrypted_content": f"gAAAA{cid}", "created_by": "x"}
    return {"id": cid, "type": "compaction", "item": item, "created_at": at(second), "seq": seq}


def _thread(*hosted: dict) -> object:
    return thread(
        model="gpt-5",
        system_prompt=SYSTEM,
        tools=[{"name": "lookup"}],
        messages=[
            user("u1", "first", 1),
            assistant("a1", "one", 2, seq=4),
            user("u2", "second", 3),
            assistant("a2", "two", 4),
        ],
        thoughts=[{"id": "t1", "content": "thinking", "created_at": at(2), "seq": 1}],
        tool_calls=[
            {
                "id": "call_1|fc_1",
                "tool": "lookup",
                "args": {"q": "x"},
                "created_at": at(2),
                "seq": 2,
                "result": {"text": "found"},
            }
        ],
        hosted_items=[
            {
                "id": "ws_1",
                "type": "web_search_call",
                "item": {"type": "web_search_call", "id": "ws_1", "status": "completed"},
                "created_at": at(2),
                "seq": 3,
            },
            *hosted,
        ],
    )


def test_without_a_compaction_nothing_changes():
    plain = _thread()
    assert compacted(plain) is plain
    assert latest_compaction(plain) is None


def test_everything_before_the_latest_compaction_is_left_out():
    # At a1's very time and seq: the message sorts first (messages before hosted items), so
    # it is covered; every kind of record of the first turn is.
    cut = _thread(_compaction("cmp_1", 2, seq=4))
    body = render_body(cut)
    assert body["instructions"] == SYSTEM
    assert [t["name"] for t in body["tools"]] == ["lookup"]
    kinds = [(i.get("type", "message"), i.get("id") or i.get("content")) for i in body["input"]]
    assert kinds[0] == ("compaction", "cmp_1")
    assert body["input"][0] == {
        "type": "compaction",
        "id": "cmp_1",
        "encrypted_content": "gAAAAcmp_1",
    }
    texts = msgspec.json.encode(body["input"]).decode()
    for gone in ("first", "one", "thinking", "found", "ws_1", "fc_1"):
        assert gone not in texts
    assert "second" in texts and "two" in texts


def test_the_latest_compaction_wins_whatever_its_order_in_the_file():
    later, earlier = _compaction("cmp_late", 3, seq=1), _compaction("cmp_early", 2, seq=5)
    body = render_body(_thread(later, earlier))
    assert [i.get("id") for i in body["input"] if i.get("type") == "compaction"] == ["cmp_late"]
    assert "second" not in msgspec.json.encode(body["input"]).decode()


def test_the_thread_keeps_every_record():
    full = _thread(_compaction("cmp_1", 2, seq=5))
    cut = compacted(full)
    assert len(full.messages) == 4 and len(cut.messages) == 2
    assert [h.id for h in cut.hosted_items] == ["cmp_1"]
    assert compacted(cut) is cut


def test_what_an_automatic_compaction_covers_and_the_estimate():
    full = _thread()
    part = covered(full)
    assert part is not None
    assert [m.id for m in part.messages] == ["u1", "a1"]
    assert len(part.hosted_items) == len(part.thoughts) == len(part.tool_calls) == 1
    assert covered(thread(messages=[user("u1", "only", 1)])) is None
    after = _thread(_compaction("cmp_1", 2, seq=5))
    assert covered(after) is None  # only the compaction before the question
    assert estimate_request_tokens(after) < estimate_request_tokens(full)


def test_a_window_applies_first_then_the_cut():
    from turnwire.config.settings import CompactWindow, WindowSettings

    full = _thread(_compaction("cmp_1", 2, seq=5))
    kept = apply_window(full, WindowSettings(last_turns=1))
    assert [m.id for m in kept.messages] == ["u2", "a2"]
    assert compacted(kept) is kept  # the compaction was in a turn the window left out
    every = WindowSettings(compact=CompactWindow(threshold=5))
    assert apply_window(full, every) is full


def test_a_compaction_stamped_at_a_reasoned_response_s_time_stays_an_item():
    """The automatic compaction takes the last covered record's time (next ``seq``): the
    reasoning of that response is cut with it, so the compaction is no hosted item whose
    reasoning went missing (which would go as text)."""
    reasoning = {
        "id": "rs_1",
        "created_at": at(2),
        "seq": 1,
        "replay_compatibility": "openai-responses-reasoning-v1",
        "payload": {
            "variant": "responses-reasoning",
            "paired_item_id": "msg_1",
            "prefix_fingerprint": "0" * 64,
            "item": {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gA"},
        },
    }
    cut = thread(
        model="gpt-5",
        messages=[user("u1", "first", 1), assistant("msg_1", "one", 2, seq=2), user("u2", "x", 3)],
        thoughts=[reasoning],
        hosted_items=[_compaction("cmp_1", 2, seq=3)],
    )
    settings = {
        "render": {
            "reasoning_replay": "encrypted",
            "replay_compatibility": ["openai-responses-reasoning-v1"],
        }
    }
    body = render_body(cut, settings)
    assert [i.get("type", "message") for i in body["input"]] == ["compaction", "message"]
    assert body["input"][0]["id"] == "cmp_1"


def test_a_compaction_cuts_the_warm_render_as_the_cold_one(tmp_path):
    """Grow, compact, grow, compact again, compact earlier, drop the latest compaction: every
    warm render is the cold render, and starts at the latest compaction."""
    container = make_container(REPLAY)
    scenario = _Scenario(tmp_path)
    steps: list[tuple[Any, ...]] = [
        ("append", {"x": 1}, False),
        ("append", {"q": "a"}, True),
        ("compact", 2),
        ("append", {"x": 1}, False),
        ("compact", 3),
        ("append", {"n": 2**60}, False),
        ("compact", 1),
        ("remove", -1),
        ("append", {"x": True}, False),
    ]
    firsts = []
    for step in steps:
        if step[0] == "remove":
            hosted = scenario.records["hosted_items"]
            hosted[:] = [record for record in hosted if record["id"] != "cmp_1"]
        else:
            scenario.edit(*step)
        thread = scenario.thread()
        roots = (scenario.folder,)
        warm = _outcome(container, thread, False, roots)
        with overriding(container.render_memo, None):
            cold = _outcome(container, thread, False, roots)
        assert warm == cold, step
        assert _outcome(container, thread, False, roots) == cold
        firsts.append(json.loads(warm[0])["input"][0].get("id"))
    # Before any compaction the input starts with the first question, then with the latest
    # compaction in the timeline (cmp_2 is placed before cmp_1, so cmp_1 stays the latest;
    # dropping cmp_1 brings back cmp_0, the latest of those left).
    assert firsts == [None, None, "cmp_0", "cmp_0", "cmp_1", "cmp_1", "cmp_1", "cmp_0", "cmp_0"]
