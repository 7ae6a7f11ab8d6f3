"""Built-in ``render_system_prompt``: the prompt and the buckets before ``timeline``."""

from __future__ import annotations

from typing import Any

from turnwire.context import Bucket
from turnwire.hookspecs import hookimpl
from turnwire.model import Memory, Retrievable

__all__ = ["render_bucket", "render_system_prompt"]


def render_bucket(
    label: Bucket,
    stages: Any,
    standing_instructions: tuple[str, ...],
    memories: tuple[Memory, ...],
    retrievables: tuple[Retrievable, ...],
) -> str:
    """Render one non-timeline bucket through its stage."""
    if label == "standing_instructions":
        return str(
            stages.render_standing_instructions(standing_instructions=standing_instructions) or ""
        )
    if label == "memories":
        return str(stages.render_memories(memories=memories) or "")
    if label == "retrievables":
        return str(stages.render_retrievables(retrievables=retrievables) or "")
    raise ValueError(f"bucket {label!r} has no stage")


@hookimpl(trylast=True)
def render_system_prompt(
    system_prompt: str,
    standing_instructions: tuple[str, ...],
    memories: tuple[Memory, ...],
    retrievables: tuple[Retrievable, ...],
    bucket_order: tuple[Bucket, ...],
    stages: Any,
) -> str:
    parts = [system_prompt]
    for label in bucket_order:
        if label == "timeline":
            break
        parts.append(render_bucket(label, stages, standing_instructions, memories, retrievables))
    return "\n\n".join(part for part in parts if part)
