"""Built-in ``render_system_prompt``: the prompt and the buckets before ``timeline``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from turnwire.config.options import Bucket
from turnwire.hookspecs import hookimpl
from turnwire.model.records import Memory, Retrievable

__all__ = ["fill_template", "render_bucket", "render_system_prompt"]


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


_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def fill_template(template: str, values: Mapping[str, str]) -> str:
    """``{name}`` replaced by ``values[name]``; unknown names and every other brace stay.

    Names only: no attribute access, indexing or format specs (``str.format`` would reach
    object attributes through ``{0.__class__}``), and replaced values are not scanned again.
    """
    return _PLACEHOLDER.sub(lambda match: values.get(match.group(1), match.group(0)), template)


@hookimpl(trylast=True)
def render_system_prompt(
    system_prompt: str,
    standing_instructions: tuple[str, ...],
    memories: tuple[Memory, ...],
    retrievables: tuple[Retrievable, ...],
    bucket_order: tuple[Bucket, ...],
    system_prompt_template: bool,
    render_context: Mapping[str, str],
    stages: Any,
) -> str:
    if system_prompt_template:
        system_prompt = fill_template(system_prompt, render_context)
    parts = [system_prompt]
    for label in bucket_order:
        if label == "timeline":
            break
        parts.append(render_bucket(label, stages, standing_instructions, memories, retrievables))
    return "\n\n".join(part for part in parts if part)
