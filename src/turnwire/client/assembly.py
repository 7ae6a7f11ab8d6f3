"""Request assembly: what each request of a run is rendered from and checked against.

Each request is rendered through :mod:`turnwire.rendering.renderer` (stamping the reasoning the last
response brought: :func:`pending_ids`, :func:`stamp`), after the forced tool is checked
(:func:`check_tool_choice`) and before the context window is (:func:`check_window`). Before the
first request, :func:`compaction_due` says whether ``context.window: {compact: ...}`` asks for a
compaction. The phrases of a 400 that blames replayed reasoning are here too, with the check of
whether a request carried any (:func:`carries_reasoning`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from turnwire.config.settings import Settings, WindowSettings
from turnwire.errors import ConfigError
from turnwire.model.records import HostedItem, Message, Thought, Thread, ToolCall
from turnwire.model.timeline import timeline
from turnwire.rendering import renderer as rendering
from turnwire.rendering.artifact_tools import artifact_tools
from turnwire.rendering.compaction import compacted, covered
from turnwire.rendering.renderer import RenderedRequest, prefix_fingerprint, render_input
from turnwire.rendering.sweep import PENDING_FINGERPRINT
from turnwire.rendering.tokens import check_context_window
from turnwire.rendering.windows import estimate_request_tokens
from turnwire.wire import FunctionCall, OutputMessage, ReasoningItem

__all__ = [
    "PAIRING_PHRASES",
    "PENDING",
    "REASONING_PHRASES",
    "carries_reasoning",
    "check_tool_choice",
    "check_window",
    "compaction_due",
    "fingerprint_new_thoughts",
    "pending_ids",
    "render_request",
    "request_fingerprint",
    "stamp",
]

logger = logging.getLogger("turnwire")

REASONING_PHRASES = (
    "invalid_encrypted_content",
    "of type 'reasoning' was provided without",
    "was provided without its required preceding item of type 'reasoning'",
    # the API's most common wording (pydantic-ai's, openai-agents' and LangChain's users
    # quote it): "Item 'fc_1' of type 'function_call' was provided without its required
    # 'reasoning' item: 'rs_1'."
    "without its required 'reasoning' item",
    "items are not persisted when store is set to false",
)
PAIRING_PHRASES = REASONING_PHRASES[1:]
PENDING = PENDING_FINGERPRINT
"""The fingerprint a new reasoning thought carries until the next render stamps it."""


def render_request(
    container: Any,
    thread: Thread,
    model: str,
    roots: tuple[str, ...],
    *,
    render_context: Mapping[str, str],
    output_schema: Any,
    replay_off: bool = False,
    pending: frozenset[str] = frozenset(),
    cache_identity: str | None = None,
) -> RenderedRequest:
    """One request of a run, rendered (looked up on :mod:`turnwire.rendering.renderer` at each
    call); ``cache_identity`` is the run's, for its ``prompt_cache_key``."""
    return rendering.render(
        thread,
        container=container,
        model=model,
        reasoning_replay="off" if replay_off else None,
        render_context=render_context,
        roots=roots,
        output_schema=output_schema,
        pending_reasoning=pending,
        cache_identity=cache_identity,
    )


def check_tool_choice(settings: Settings, thread: Thread) -> None:
    """A ``request.tool_choice`` that forces a tool the request does not offer: an error
    under ``client.strict_tool_choice``, else a warning."""
    choice = settings.request.tool_choice
    name = getattr(choice, "name", None)
    if name is None:
        return
    tool = thread.tool(name)
    forged = name in {tool.name for tool in artifact_tools()}
    if tool is not None and not tool.hidden and not forged:
        return
    problem = f"request.tool_choice forces {name!r}, which is " + (
        "a built-in artifact tool that exists only while artifacts do"
        if forged
        else "hidden"
        if tool is not None
        else "not a tool of the thread"
    )
    if settings.client.strict_tool_choice:
        raise ConfigError(
            f"$.request.tool_choice: {problem}; remove the override or unset "
            "client.strict_tool_choice",
            path="$.request.tool_choice",
        )
    logger.warning(
        "%s; this is almost always a misconfiguration",
        problem,
        extra={"kind": "tool-choice-unavailable"},
    )


def check_window(settings: Settings, rendered: RenderedRequest, thread: Thread) -> None:
    """The rendered request against ``context.context_window`` (see
    :func:`turnwire.rendering.tokens.check_context_window`)."""
    context = settings.context
    check_context_window(
        rendered.request,
        thread,
        encoding=context.token_encoding,
        window=context.context_window,
    )


def compaction_due(
    settings: Settings, thread: Thread
) -> tuple[Thread, Message | Thought | ToolCall | HostedItem | None] | None:
    """``context.window: {compact: {threshold: N}}``: what comes before the question, and the
    first record after it, when the estimate of the request is over N tokens (else ``None``)."""
    window = settings.context.window
    if not isinstance(window, WindowSettings) or window.compact is None:
        return None
    estimate = estimate_request_tokens(thread)
    if estimate <= window.compact.threshold:
        return None
    part = covered(thread)
    if part is None:
        logger.warning(
            "the request is estimated at %d tokens, over context.window.compact.threshold "
            "(%d), but nothing before the question can be compacted",
            estimate,
            window.compact.threshold,
            extra={"kind": "compact-nothing"},
        )
        return None
    covered_ids = {id(record) for record in timeline(part)}
    rest = [r for r in timeline(compacted(thread)) if id(r) not in covered_ids]
    logger.info(
        "compacting: the request is estimated at %d tokens (threshold %d)",
        estimate,
        window.compact.threshold,
        extra={"kind": "compact"},
    )
    return part, rest[0] if rest else None


def fingerprint_new_thoughts(
    thread: Thread,
    *,
    container: Any,
    model: str,
    render_context: Mapping[str, str],
    roots: tuple[str, ...],
) -> Thread:
    """Give each newly recorded reasoning thought the fingerprint of its prefix in the
    request that would follow, when no request follows in this run.

    The thread is rendered as that request would be (the new thoughts kept as fresh when
    they pair, every other one checked as usual), through the fingerprint stage, so a
    plugin's scheme applies on both sides. Within a run, the next request's own render
    does this (``Client._iteration``).
    """
    pending = pending_ids(thread)
    if not pending:
        return thread
    rendered = render_input(
        thread,
        container=container,
        model=model,
        render_context=render_context,
        roots=roots,
        pending_reasoning=pending,
    )
    return stamp(thread, pending, rendered.stamped)


def request_fingerprint(
    rendered: RenderedRequest | None, *, container: Any, model: str
) -> str | None:
    """The fingerprint of the prefix of the last request a run rendered (``None``: none)."""
    if rendered is None:
        return None
    # Resumed from the render's own sweep checkpoints: no second hash of the whole prefix.
    return prefix_fingerprint(rendered.rendered, container=container, model=model)


def _unstamped_from(thoughts: tuple[Thought, ...]) -> int:
    """Where the thoughts after the last stamped reasoning thought begin: the client stamps
    each response's reasoning before the next, so none before it is pending."""
    first = len(thoughts)
    while first:
        payload = thoughts[first - 1].payload
        if payload is not None and payload.prefix_fingerprint not in (None, PENDING):
            break
        first -= 1
    return first


def pending_ids(thread: Thread) -> frozenset[str]:
    """The reasoning thoughts recorded by this run and not stamped yet (the newest ones)."""
    thoughts = thread.thoughts
    return frozenset(
        t.id
        for t in thoughts[_unstamped_from(thoughts) :]
        if t.payload is not None and t.payload.prefix_fingerprint == PENDING
    )


def stamp(thread: Thread, pending: frozenset[str], stamped: Iterable[tuple[str, str]]) -> Thread:
    """``thread`` with each pending thought's fingerprint: the stamped one, else ``None`` (it
    did not pair: it will not be replayed)."""
    found = dict(stamped)
    replace = msgspec.structs.replace
    thoughts = thread.thoughts
    first = _unstamped_from(thoughts)
    tail = tuple(
        replace(t, payload=replace(t.payload, prefix_fingerprint=found.get(t.id)))
        if t.id in pending and t.payload is not None
        else t
        for t in thoughts[first:]
    )
    return replace(thread, thoughts=thoughts[:first] + tail)


def carries_reasoning(items: Iterable[object]) -> bool:
    """Whether a request's input carries reasoning items or paired ids (what the
    reasoning-free retry would strip)."""
    for item in items:
        if isinstance(item, ReasoningItem):
            return True
        if isinstance(item, OutputMessage | FunctionCall) and item.id:
            return True
    return False
