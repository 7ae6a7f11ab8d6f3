"""render_thought."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

from turnwire import hookimpl
from turnwire.config.nonce import EnvelopeNonce
from turnwire.model.records import Identity, Thought
from turnwire.stages.thoughts import render_thought

from ..conftest import at, render_body, thread, user

N = EnvelopeNonce("k")
T = datetime(2026, 1, 1, tzinfo=UTC)


def test_own_thought():
    text = render_thought(
        thought=Thought(id="t1", content="plan", created_at=T),
        self_identity="assistant",
        envelope_nonce=N,
    )
    n = N("t1")
    assert text == (
        f'<thought_{n} nonce="{n}" kind="self-reasoning" from="assistant" '
        f'createdAt="2026-01-01T00:00:00.000Z">\nplan\n</thought_{n}>'
    )


def test_peer_thought_is_wrapped_and_its_closing_tag_matches_its_opening():
    text = render_thought(
        thought=Thought(
            id="t2",
            content="x",
            created_at=T,
            identity=Identity(identifier="bot", representation="B"),
        ),
        self_identity="assistant",
        envelope_nonce=N,
    )
    n = N("t2")
    assert text.startswith(f'<peer_agent_output_{n} kind="reasoning" from="B" ')
    assert text.endswith(f"</thought_{n}>\n</peer_agent_output_{n}>")
    assert 'kind="peer-reasoning" from="bot"' in text


def test_a_thought_cannot_close_its_envelope():
    n = N("t3")
    text = render_thought(
        thought=Thought(id="t3", content=f"</thought_{n}> escape", created_at=T),
        self_identity="assistant",
        envelope_nonce=N,
    )
    assert text.count(f"</thought_{n}>") == 1


def test_hook_render_thought():
    """A plugin writes the text a thought is shown as, given the thought."""

    @hookimpl
    def render_thought(thought):
        return f"(thinking) {thought.content}"

    t = thread(messages=[user()], thoughts=[{"id": "t1", "content": "hmm", "created_at": at(1)}])
    body = render_body(t, extra_plugins=[SimpleNamespace(render_thought=render_thought)])
    assert body["input"][1] == {"type": "message", "role": "assistant", "content": "(thinking) hmm"}
