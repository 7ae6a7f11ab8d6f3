"""Fingerprints for reasoning brought from elsewhere.

A replayable thought carries ``prefix_fingerprint``: the digest of the request prefix it was
produced after (the ``fingerprint_prefix`` stage; by default SHA-256 of the canonical JSON of
``{input: <the items before it>, instructions, model, tools}``, byte-compatible with the
reference system's scheme, or with ``render.fingerprint_binding: model`` a digest of the model
and endpoint only).
The pairing sweep replays the thought only while the next request's prefix still hashes to
it, so reasoning never goes back after a conversation it was not produced in. Reasoning
imported from another system has no fingerprint; :func:`stamp_fingerprints` gives each such
thought the fingerprint of the prefix it has in the request these settings render now, which
is what ``turnwire fingerprint THREAD`` does.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Mapping

import msgspec

from turnwire.model.records import Thought, Thread
from turnwire.rendering.container import Container
from turnwire.rendering.relay import StageRelay
from turnwire.rendering.renderer import render_input
from turnwire.wire import ReasoningItem

__all__ = ["StampReport", "stamp_fingerprints", "unfingerprinted"]


class StampReport(msgspec.Struct, frozen=True, kw_only=True):
    """What :func:`stamp_fingerprints` did.

    :ivar stamped: ids of the thoughts that were given a fingerprint.
    :ivar skipped: id → why a thought without a fingerprint was left as it was.
    """

    stamped: tuple[str, ...]
    skipped: dict[str, str]


def unfingerprinted(thread: Thread) -> list[Thought]:
    """The thoughts with a replay payload and no ``prefix_fingerprint``."""
    return [
        thought
        for thought in thread.thoughts
        if thought.payload is not None and thought.payload.prefix_fingerprint is None
    ]


def stamp_fingerprints(
    thread: Thread,
    *,
    container: Container,
    model: str,
    only: Collection[str] | None = None,
    render_context: Mapping[str, str] | None = None,
    roots: Iterable[str | os.PathLike[str]] | None = None,
) -> tuple[Thread, StampReport]:
    """``thread`` with each unfingerprinted thought that pairs given its fingerprint.

    The thread is rendered as the next request would render it if those thoughts were
    trusted; a thought whose reasoning item reaches that input gets the fingerprint of the
    items before it, through the fingerprint stage (so a plugin's scheme applies). The others
    keep no fingerprint, with the reason in the report.

    :param only: stamp just these thought ids; other unfingerprinted thoughts render as
        ``render.unfingerprinted_reasoning`` says (the client stamps what a run recorded).
    :param render_context: the render context the requests will be rendered with.
    :param roots: where the thread's file pointers may lead (see :func:`turnwire.render`).
    """
    missing = {
        thought.id: thought
        for thought in unfingerprinted(thread)
        if only is None or thought.id in only
    }
    if not missing:
        return thread, StampReport(stamped=(), skipped={})
    view = thread
    if only is not None and container.settings().render.unfingerprinted_reasoning == "drop":
        view = _with_fingerprint(thread, dict.fromkeys(_others(thread, missing), _NEVER))
    rendered = render_input(
        view,
        container=container,
        model=model,
        unfingerprinted_reasoning="trust",
        render_context=render_context,
        roots=roots,
    )
    by_item = {
        thought.payload.item.id: thought.id
        for thought in missing.values()
        if thought.payload is not None and thought.payload.item.id
    }
    options = container.render_options(model=model).injectable()
    relay = StageRelay(container.stage_plan(), {**options, "warn": lambda _: None, "scratch": {}})
    found: dict[str, str] = {}
    for index, item in enumerate(rendered.input):
        if isinstance(item, ReasoningItem) and item.id in by_item:
            found[by_item[item.id]] = str(
                relay.fingerprint_prefix(
                    model=model,
                    instructions=rendered.instructions,
                    tools=rendered.tools,
                    input=rendered.input,
                    through_item=index,
                )
            )
    skipped = {
        thought_id: _why_not(thought, rendered.warnings, container)
        for thought_id, thought in missing.items()
        if thought_id not in found
    }
    report = StampReport(stamped=tuple(found), skipped=skipped)
    return _with_fingerprint(thread, found), report


# Never equal to a digest: a thought carrying it is dropped as stale by any render.
_NEVER = "-"


def _others(thread: Thread, selected: Mapping[str, Thought]) -> list[str]:
    return [t.id for t in unfingerprinted(thread) if t.id not in selected]


def _with_fingerprint(thread: Thread, fingerprints: Mapping[str, str]) -> Thread:
    replace = msgspec.structs.replace
    thoughts = tuple(
        replace(t, payload=replace(t.payload, prefix_fingerprint=fingerprints[t.id]))
        if t.id in fingerprints and t.payload is not None
        else t
        for t in thread.thoughts
    )
    return replace(thread, thoughts=thoughts)


def _why_not(thought: Thought, warnings: tuple[str, ...], container: Container) -> str:
    settings = container.settings().render
    if settings.reasoning_replay != "encrypted":
        return f"render.reasoning_replay is {settings.reasoning_replay!r}, not 'encrypted'"
    if thought.replay_compatibility not in settings.replay_tags:
        return (
            f"its replay_compatibility {thought.replay_compatibility!r} is not in "
            "render.replay_compatibility"
        )
    for warning in warnings:
        if f"thought {thought.id}:" in warning:
            return warning.split(": ", 1)[1]
    return "its reasoning item is not part of the rendered input"
