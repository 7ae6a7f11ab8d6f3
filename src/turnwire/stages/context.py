"""Built-in ``render_timeline_context``: one memory or retrieved record in the timeline.

Under ``render.context_placement: timeline`` a memory or a retrieved record is sent where its
``created_at`` sorts among the records, as a developer message holding what the leading
rendering would show for it alone: the memory in its ``<memories>`` block, the record with the
retrieval safety directive in the envelope of its trust tier. The text comes from the same
stages (``render_memories``, ``render_retrievables``), through the relay, so a plugin that
overrides one of them applies in both placements.
"""

from __future__ import annotations

from typing import Any

from turnwire.hookspecs import hookimpl
from turnwire.model.records import Memory, Retrievable
from turnwire.wire import InputItem, InputMessage, InputText

__all__ = ["render_timeline_context"]


@hookimpl(trylast=True)
def render_timeline_context(
    context_item: Memory | Retrievable, stages: Any
) -> tuple[InputItem, ...]:
    if isinstance(context_item, Memory):
        text = stages.render_memories(memories=(context_item,))
    else:
        text = stages.render_retrievables(retrievables=(context_item,))
    if not text:
        return ()
    return (InputMessage(role="developer", content=(InputText(text=str(text)),)),)
