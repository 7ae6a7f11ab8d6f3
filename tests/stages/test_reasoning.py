"""render_reasoning_item and filter_thoughts."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import msgspec
import pytest

import turnwire
from turnwire import hookimpl
from turnwire.config.settings import load_settings, profile_path
from turnwire.model.records import REPLAY_TAG, Identity, ReasoningPayload, Thought
from turnwire.stages.reasoning import filter_thoughts, render_reasoning_item
from turnwire.wire import ReasoningItem, ReasoningText, SummaryText

from ..conftest import REPLAY, at, render_body, thread, user
from ..rendering.test_sweep import _fingerprint_after_user, _replay_thread

T = datetime(2026, 1, 1, tzinfo=UTC)


def replayable(tid="rs_1", encrypted="enc", tag=REPLAY_TAG, item_id="rs_1", second=0):
    item = ReasoningItem(summary=(SummaryText(text="s"),), id=item_id, encrypted_content=encrypted)
    return Thought(
        id=tid,
        replay_compatibility=tag,
        created_at=T + timedelta(seconds=second),
        payload=ReasoningPayload(item=item, paired_item_id="msg_1", prefix_fingerprint="f" * 64),
    )


def test_only_encrypted_mode_with_an_accepted_tag_and_encrypted_content_replays():
    thought = replayable()
    ok = render_reasoning_item(
        thought=thought,
        reasoning_replay="encrypted",
        replay_compatibility=(REPLAY_TAG,),
        reasoning_content="replay",
    )
    assert ok is thought.payload.item
    for mode, accepted, candidate in [
        ("off", (REPLAY_TAG,), thought),
        ("summary-only", (REPLAY_TAG,), thought),
        ("encrypted", (), thought),
        ("encrypted", (REPLAY_TAG,), replayable(encrypted=None)),
    ]:
        assert (
            render_reasoning_item(
                thought=candidate,
                reasoning_replay=mode,
                replay_compatibility=accepted,
                reasoning_content="replay",
            )
            is None
        )


def test_an_id_with_the_wrong_prefix_is_dropped_not_sent():
    item = render_reasoning_item(
        thought=replayable(item_id="reasoning-1"),
        reasoning_replay="encrypted",
        replay_compatibility=(REPLAY_TAG,),
        reasoning_content="replay",
    )
    assert item is not None and item.id is None


def test_raw_reasoning_text_is_replayed_or_left_out_as_configured():
    thought = replayable()
    with_text = msgspec.structs.replace(
        thought.payload.item, content=(ReasoningText(text="raw thinking"),)
    )
    thought = msgspec.structs.replace(
        thought, payload=msgspec.structs.replace(thought.payload, item=with_text)
    )
    kept = render_reasoning_item(
        thought=thought,
        reasoning_replay="encrypted",
        replay_compatibility=(REPLAY_TAG,),
        reasoning_content="replay",
    )
    assert kept is with_text
    left_out = render_reasoning_item(
        thought=thought,
        reasoning_replay="encrypted",
        replay_compatibility=(REPLAY_TAG,),
        reasoning_content="omit",
    )
    assert left_out is not None and left_out.content is None
    assert (left_out.id, left_out.encrypted_content, left_out.summary) == (
        "rs_1",
        "enc",
        with_text.summary,
    )


def test_the_openresponses_profile_sends_reasoning_without_its_raw_text():
    t = _replay_thread(_fingerprint_after_user(REPLAY))
    [thought] = t.thoughts
    with_text = msgspec.structs.replace(
        thought.payload.item, content=(ReasoningText(text="raw thinking"),)
    )
    t = msgspec.structs.replace(
        t,
        thoughts=(
            msgspec.structs.replace(
                thought, payload=msgspec.structs.replace(thought.payload, item=with_text)
            ),
        ),
    )
    trusting = {"render": {**REPLAY["render"], "unfingerprinted_reasoning": "trust"}}
    [sent] = [i for i in render_body(t, trusting)["input"] if i.get("type") == "reasoning"]
    assert sent["content"] == [{"type": "reasoning_text", "text": "raw thinking"}]
    profile = load_settings(
        [profile_path("openresponses")], env={}, overrides={**trusting, "request": {}}
    )
    assert profile.render.reasoning_content == "omit"
    [sent] = [
        i
        for i in render_body(t, {"render": {**trusting["render"], "reasoning_content": "omit"}})[
            "input"
        ]
        if i.get("type") == "reasoning"
    ]
    assert "content" not in sent and sent["encrypted_content"]


def _plain(tid, second, who="assistant", tag=None):
    return Thought(
        id=tid,
        content=tid,
        identity=Identity(identifier=who),
        replay_compatibility=tag,
        created_at=T + timedelta(seconds=second),
    )


def test_filter_modes():
    thoughts = (
        _plain("b", 2),
        _plain("a", 1),
        _plain("peer", 3, who="bot"),
        _plain("tagged", 4, tag="other-vendor"),
        replayable("rs_9", second=5),
    )
    all_self = filter_thoughts(
        thoughts=thoughts,
        thought_surfacing="all-self",
        self_identity="assistant",
        replay_compatibility=(),
    )
    assert [t.id for t in all_self] == ["a", "b"]
    everything = filter_thoughts(
        thoughts=thoughts,
        thought_surfacing="all",
        self_identity="assistant",
        replay_compatibility=(REPLAY_TAG,),
    )
    assert [t.id for t in everything] == ["a", "b", "peer", "rs_9"]
    latest = filter_thoughts(
        thoughts=thoughts,
        thought_surfacing="latest-self",
        self_identity="assistant",
        replay_compatibility=(REPLAY_TAG,),
    )
    assert [t.id for t in latest] == ["rs_9"]


def test_plain_text_tag_is_always_replayable():
    kept = filter_thoughts(
        thoughts=(_plain("p", 0, tag="plain-text"),),
        thought_surfacing="all",
        self_identity="assistant",
        replay_compatibility=(),
    )
    assert [t.id for t in kept] == ["p"]


# ------------------------------------------------------------------ replay through a render


def test_replay_needs_the_compatibility_tag_and_says_so(caplog):
    fp = _fingerprint_after_user(REPLAY)
    without = {"render": {"reasoning_replay": "encrypted", "replay_compatibility": ["other-v1"]}}
    with caplog.at_level(logging.WARNING, logger="turnwire"):
        body = render_body(_replay_thread(fp), without)
    assert all(i.get("type") != "reasoning" for i in body["input"])
    assert "replay_compatibility" in caplog.text


@pytest.mark.parametrize("mode", ["encrypted", "summary-only"])
def test_a_replay_mode_alone_implies_the_tag_of_the_reasoning_turnwire_records(mode, caplog):
    """One switch: ``reasoning_replay`` with ``replay_compatibility`` unset replays what
    turnwire recorded, exactly as the two set together do; ``off`` implies no tag."""
    fp = _fingerprint_after_user(REPLAY)
    alone = {"render": {"reasoning_replay": mode}}
    both = {"render": {"reasoning_replay": mode, "replay_compatibility": [REPLAY_TAG]}}
    with caplog.at_level(logging.WARNING, logger="turnwire"):
        body = render_body(_replay_thread(fp), alone)
    assert body == render_body(_replay_thread(fp), both)
    assert "replay_compatibility" not in caplog.text
    replayed = [i for i in body["input"] if i.get("type") == "reasoning"]
    assert len(replayed) == (1 if mode == "encrypted" else 0)
    assert turnwire.load_settings(overrides=alone).render.replay_tags == (REPLAY_TAG,)
    assert turnwire.load_settings().render.replay_tags == ()


def test_summary_only_replays_the_summary_as_text_never_as_a_reasoning_item():
    settings_ = {
        "render": {
            "reasoning_replay": "summary-only",
            "replay_compatibility": ["openai-responses-reasoning-v1"],
        }
    }
    body = render_body(_replay_thread(_fingerprint_after_user(settings_)), settings_)
    assert all(i.get("type") != "reasoning" for i in body["input"])
    thought = body["input"][1]
    assert thought["role"] == "assistant" and 'kind="self-reasoning"' in thought["content"]
    assert "\nplan\n" in thought["content"]
    assert "include" not in body


def test_without_encrypted_content_a_reasoning_item_is_never_sent():
    t = _replay_thread(_fingerprint_after_user(REPLAY))
    payload_item = t.thoughts[0].payload.item
    import msgspec

    bare = msgspec.structs.replace(payload_item, encrypted_content=None)
    thought_ = msgspec.structs.replace(
        t.thoughts[0], payload=msgspec.structs.replace(t.thoughts[0].payload, item=bare)
    )
    t = msgspec.structs.replace(t, thoughts=(thought_,))
    body = render_body(t, REPLAY)
    assert all(i.get("type") != "reasoning" for i in body["input"])


def test_hook_render_reasoning_item():
    """A plugin decides the reasoning item a replayable thought goes out as."""

    @hookimpl
    def render_reasoning_item(thought):
        item = thought.payload.item
        return ReasoningItem(
            summary=(SummaryText(text="summary from the plugin"),),
            id=item.id,
            encrypted_content=item.encrypted_content,
        )

    plugin = SimpleNamespace(render_reasoning_item=render_reasoning_item)
    t = _replay_thread(_fingerprint_after_user(REPLAY))
    body = render_body(t, REPLAY, extra_plugins=[plugin])
    (reasoning,) = [i for i in body["input"] if i.get("type") == "reasoning"]
    assert reasoning["summary"] == [{"type": "summary_text", "text": "summary from the plugin"}]
    assert reasoning["id"] == "rs_1"


def test_hook_filter_thoughts():
    """A plugin chooses which thoughts the model sees, given them all."""

    @hookimpl
    def filter_thoughts(thoughts):
        return tuple(t for t in thoughts if "keep" in t.content)

    t = thread(
        messages=[user()],
        thoughts=[
            {"id": "t1", "content": "keep this", "created_at": at(1)},
            {"id": "t2", "content": "drop that", "created_at": at(2)},
        ],
    )
    text = str(render_body(t, extra_plugins=[SimpleNamespace(filter_thoughts=filter_thoughts)]))
    assert "keep this" in text and "drop that" not in text
    assert "drop that" in str(render_body(t))
