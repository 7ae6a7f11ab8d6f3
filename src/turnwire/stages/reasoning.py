"""Built-in ``render_reasoning_item`` and ``filter_thoughts``."""

from __future__ import annotations

from operator import attrgetter

import msgspec

from turnwire.config.options import ReasoningContent, ReasoningReplay, ThoughtSurfacing
from turnwire.hookspecs import hookimpl
from turnwire.model.records import Thought
from turnwire.stages.timeline import item_id_matcher
from turnwire.wire import ReasoningItem

__all__ = ["filter_thoughts", "render_reasoning_item"]


_REASONING_ID = item_id_matcher("rs_")


@hookimpl(trylast=True)
def render_reasoning_item(
    reasoning_replay: ReasoningReplay,
    replay_compatibility: tuple[str, ...],
    reasoning_content: ReasoningContent,
    thought: Thought,
) -> ReasoningItem | None:
    # The options first, the thought last: see stages.timeline.render_timeline_message.
    if reasoning_replay != "encrypted" or thought.payload is None:
        return None
    if thought.replay_compatibility not in replay_compatibility:
        return None
    item = thought.payload.item
    if not item.encrypted_content:
        return None
    if item.id is not None and not _REASONING_ID(item.id):  # valid_item_id(item.id, "rs_")
        item = msgspec.structs.replace(item, id=None)
    if item.content is not None and reasoning_content == "omit":
        item = msgspec.structs.replace(item, content=None)
    return item


_SURFACED_ORDER = attrgetter("created_at", "seq", "id")


@hookimpl(trylast=True)
def filter_thoughts(
    thoughts: tuple[Thought, ...],
    thought_surfacing: ThoughtSurfacing,
    self_identity: str,
    replay_compatibility: tuple[str, ...],
) -> tuple[Thought, ...]:
    everyone = thought_surfacing == "all"
    # Every thought without an identity has the same default one (``Thought.who``): whether
    # it is the agent's own is asked once, not once per thought.
    anonymous_own: bool | None = None
    kept = []
    for thought in thoughts:
        if not everyone:
            if thought.identity is not None:
                if thought.who.identifier != self_identity:
                    continue
            else:
                if anonymous_own is None:
                    anonymous_own = thought.who.identifier == self_identity
                if not anonymous_own:
                    continue
        # Replayable: a tag the render accepts, or plain text (no payload, no tag or the
        # plain-text tag).
        tag = thought.replay_compatibility
        if tag in replay_compatibility or (
            thought.payload is None and (tag is None or tag == "plain-text")
        ):
            kept.append(thought)
    kept.sort(key=_SURFACED_ORDER)
    if thought_surfacing == "latest-self":
        return tuple(kept[-1:])
    return tuple(kept)


def _decides_each_thought(thought_surfacing: ThoughtSurfacing) -> bool:
    """Whether :func:`filter_thoughts` keeps or drops each thought on its own, in timeline
    order (so the filter of a longer list extends the filter of a shorter one): unless only
    the latest is surfaced."""
    return thought_surfacing != "latest-self"


# Declared for the pipeline's warm path, which then filters only the thoughts a thread added;
# any implementation may declare it (see the hookspec).
filter_thoughts.decides_each_thought = _decides_each_thought  # type: ignore[attr-defined]
