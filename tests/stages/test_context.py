"""render_timeline_context: one memory or retrieved record as a developer item of the timeline
(``render.context_placement: timeline``), its text from the stages the leading rendering uses."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

import pytest

from turnwire import hookimpl
from turnwire.config.nonce import EnvelopeNonce
from turnwire.model.records import Memory, Retrievable
from turnwire.stages.memories import render_memories
from turnwire.stages.retrievables import render_retrievable_safety_directive
from turnwire.wire import InputMessage

from ..conftest import SECRET, at, render_body, thread, user

N = EnvelopeNonce(SECRET)

IN_TIMELINE = {"render": {"context_placement": "timeline"}}


def _developer(text: str) -> dict:
    return {
        "type": "message",
        "role": "developer",
        "content": [{"type": "input_text", "text": text}],
    }


def test_a_memory_is_a_developer_item_holding_what_render_memories_gives_for_it_alone():
    memory = {"id": "m1", "content": "Prefers tea", "created_at": at(1)}
    body = render_body(thread(memories=[memory], messages=[user("u1", "hi", 0)]), IN_TIMELINE)
    expected = render_memories(
        memories=(
            Memory(id="m1", content="Prefers tea", created_at=datetime.fromisoformat(at(1))),
        ),
        envelope_nonce=N,
    )
    assert expected.startswith("<memories>\n<memory_")
    assert body["input"][1] == _developer(expected)
    assert "instructions" not in body


@pytest.mark.parametrize(
    ("tier", "envelope"),
    [
        ("first-party", "<retrieved_corpus>\n<retrieved_{n}"),
        (
            "third-party-public",
            '<untrusted_content_{n} nonce="{n}" kind="retrieved-third-party-public"',
        ),
        (
            "third-party-private",
            '<untrusted_content_{n} nonce="{n}" kind="retrieved-third-party-private"',
        ),
    ],
)
def test_a_retrievable_is_the_directive_then_the_envelope_of_its_tier(tier, envelope):
    record = {"id": "d1", "content": "Refunds within 30 days.", "trust_tier": tier}
    leading = render_body(thread(retrievables=[record], messages=[user()]))
    placed = render_body(thread(retrievables=[record], messages=[user()]), IN_TIMELINE)
    # the same text the leading rendering gives for that record alone, now as the first item
    assert placed["input"][0] == _developer(leading["instructions"])
    text = placed["input"][0]["content"][0]["text"]
    assert text.startswith(render_retrievable_safety_directive() + "\n\n")
    assert envelope.format(n=N("d1")) in text
    assert "instructions" not in placed


def test_an_empty_text_sends_no_item():
    @hookimpl
    def render_memories(memories):
        return ""

    t = thread(memories=[{"id": "m1", "content": "x", "created_at": at(1)}], messages=[user()])
    body = render_body(
        t, IN_TIMELINE, extra_plugins=[SimpleNamespace(render_memories=render_memories)]
    )
    assert [item["role"] for item in body["input"]] == ["user"]


def test_a_plugin_overriding_the_memory_stage_applies_in_the_timeline():
    """The stage that renders memories is the one leading placement uses: a plugin of
    ``render_memories`` shapes each memory's item, given that memory alone."""
    seen = []

    @hookimpl
    def render_memories(memories):
        seen.append(tuple(m.id for m in memories))
        return "MEMORIES: " + "; ".join(m.content for m in memories)

    plugin = SimpleNamespace(render_memories=render_memories)
    t = thread(
        memories=[
            {"id": "m1", "content": "Prefers tea", "created_at": at(1)},
            {"id": "m2", "content": "Lives in Oslo", "created_at": at(3)},
        ],
        messages=[user("u1", "hi", 0), user("u2", "again", 2)],
    )
    body = render_body(t, IN_TIMELINE, extra_plugins=[plugin])
    assert body["input"][1] == _developer("MEMORIES: Prefers tea")
    assert body["input"][3] == _developer("MEMORIES: Lives in Oslo")
    assert ("m1",) in seen and ("m2",) in seen
    assert "instructions" not in body


def test_hook_render_timeline_context():
    """A plugin renders a memory or a retrieved record in the timeline as items of its own."""

    @hookimpl
    def render_timeline_context(context_item):
        if isinstance(context_item, Memory):
            return (InputMessage(role="developer", content=f"(remember: {context_item.content})"),)
        assert isinstance(context_item, Retrievable)
        return ()

    t = thread(
        memories=[{"id": "m1", "content": "Prefers tea", "created_at": at(1)}],
        retrievables=[{"id": "d1", "content": "doc", "trust_tier": "first-party"}],
        messages=[user("u1", "hi", 0)],
    )
    plugin = SimpleNamespace(render_timeline_context=render_timeline_context)
    body = render_body(t, IN_TIMELINE, extra_plugins=[plugin])
    assert body["input"][1:] == [
        {"type": "message", "role": "developer", "content": "(remember: Prefers tea)"}
    ]
    assert [item["role"] for item in body["input"]] == ["user", "developer"]
    # under leading placement the stage is never called: both stay in the instructions
    leading = render_body(t, extra_plugins=[plugin])
    assert "Prefers tea" in leading["instructions"] and "doc" in leading["instructions"]


def test_the_built_in_stage_takes_a_memory_or_a_retrievable():
    from turnwire.stages.context import render_timeline_context

    class _Stages:
        def render_memories(self, memories):
            return f"M:{memories[0].id}"

        def render_retrievables(self, retrievables):
            return f"R:{retrievables[0].id}"

    stamp = datetime(2026, 1, 1, tzinfo=UTC)
    memory = Memory(id="m", content="c", created_at=stamp)
    record = Retrievable(id="r", content="c", trust_tier="first-party")
    assert (
        render_timeline_context(context_item=memory, stages=_Stages())[0].content[0].text == "M:m"
    )
    assert (
        render_timeline_context(context_item=record, stages=_Stages())[0].content[0].text == "R:r"
    )
