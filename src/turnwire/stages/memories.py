"""Built-in ``render_memories``."""

from __future__ import annotations

from turnwire.config.nonce import EnvelopeNonce
from turnwire.hookspecs import hookimpl
from turnwire.model.records import Memory
from turnwire.stages._text import iso, neutralise

__all__ = ["render_memories"]


@hookimpl(trylast=True)
def render_memories(memories: tuple[Memory, ...], envelope_nonce: EnvelopeNonce) -> str:
    if not memories:
        return ""
    children = []
    for memory in memories:
        nonce = envelope_nonce(memory.id)
        tag = f"memory_{nonce}"
        head = f'<{tag} nonce="{nonce}"'
        if memory.created_at is not None:
            head += f' createdAt="{iso(memory.created_at)}"'
        children.append(f"{head}>\n{neutralise(memory.content, tag)}\n</{tag}>")
    return "<memories>\n" + "\n".join(children) + "\n</memories>"
