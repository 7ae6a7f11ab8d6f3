"""Built-in ``render_thought``: a thought shown as text."""

from __future__ import annotations

from turnwire.config.nonce import EnvelopeNonce
from turnwire.hookspecs import hookimpl
from turnwire.model.records import Thought
from turnwire.stages._text import attr, iso, neutralise

__all__ = ["render_thought", "thought_text"]


def thought_text(thought: Thought) -> str:
    """What a thought says: its content, else its payload's summary."""
    if thought.content:
        return thought.content
    if thought.payload is not None:
        return "\n\n".join(part.text for part in thought.payload.item.summary if part.text)
    return ""


@hookimpl(trylast=True)
def render_thought(thought: Thought, self_identity: str, envelope_nonce: EnvelopeNonce) -> str:
    who = thought.who
    own = who.identifier == self_identity
    nonce = envelope_nonce(thought.id)
    created = f' createdAt="{iso(thought.created_at)}"'
    tag = f"thought_{nonce}"
    kind = "self-reasoning" if own else "peer-reasoning"
    head = f'<{tag} nonce="{nonce}" kind="{kind}"{attr("from", who.identifier)}'
    inner = f"{head}{created}>\n{neutralise(thought_text(thought), tag)}\n</{tag}>"
    if own:
        return inner
    outer = f"peer_agent_output_{nonce}"
    return (
        f"<{outer}{attr('kind', 'reasoning')}{attr('from', who.display)}{created}>\n"
        f"{inner}\n</{outer}>"
    )
