"""Request body assembly and the preflight wire check.

:func:`build_body` puts a rendered input and the ``request:`` options together, in the order of
the reference (model, input, stream, store, instructions, options, tool_choice, tools), with
``store: false`` always. :func:`preflight` checks a body (ours, or any JSON body) against the
wire rules the real API enforces, and raises :class:`~turnwire.errors.PreflightError` naming
``input[i]`` and the rule before a request can earn a 400.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Mapping
from typing import Any, cast

import msgspec

from turnwire.config.options import ReasoningReplay
from turnwire.config.settings import OWNED_FIELDS, RequestSettings, extra_field_problem
from turnwire.errors import ConfigError
from turnwire.model.structured import OutputSchema
from turnwire.rendering._incremental.chunked import enc_hook
from turnwire.rendering._incremental.memo import BodyState, RenderMemo, common_prefix
from turnwire.rendering.caching import prompt_cache_key, with_breakpoint
from turnwire.rendering.pipeline import RenderedInput
from turnwire.rendering.preflight import (
    _UNREAD,
    _check_answered,
    _check_from,
    _check_partner,
    _check_programmatic,
    _facts_of,
    _fail,
    _fast_state,
    _item_facts,
    _text_of,
    preflight,
)
from turnwire.wire import InputItem, RequestBody, TextOptions
from turnwire.wire.hosted_tools import hosted_includes

__all__ = [
    "COMPACTION_TRIGGER",
    "ENCRYPTED_INCLUDE",
    "SEGMENT_BYTES",
    "EncodedBody",
    "build_body",
    "changed_by_plugins",
    "checked_body",
    "encode_body",
    "extra_members",
    "with_compaction_trigger",
]


logger = logging.getLogger("turnwire")


ENCRYPTED_INCLUDE = "reasoning.encrypted_content"


_ENCODER = msgspec.json.Encoder(enc_hook=enc_hook)


def build_body(
    rendered: RenderedInput,
    *,
    model: str,
    request: RequestSettings,
    stream: bool,
    reasoning_replay: ReasoningReplay,
    output_schema: OutputSchema | None = None,
    cache_identity: str = "",
    memo: RenderMemo | None = None,
) -> RequestBody:
    """The request body for ``rendered`` under these options.

    :param output_schema: the schema the answer must follow; its ``json_schema`` format
        replaces ``request.text.format`` (``request.text.verbosity`` is kept).
    :param cache_identity: the thread's identity, which ``request.prompt_cache_key: thread``
        derives the key from (see :mod:`turnwire.rendering.caching`); ``""``: no key.
    :param memo: the render memo, which keeps the item ``request.prompt_cache_breakpoints``
        marked, for the next render to reuse.
    """
    include = list(request.include)
    if reasoning_replay == "encrypted" and ENCRYPTED_INCLUDE not in include:
        include.append(ENCRYPTED_INCLUDE)
    if rendered.tools is not None:
        include += [i for i in hosted_includes(rendered.tools) if i not in include]
    tool_choice = request.tool_choice
    if tool_choice is not None and rendered.tools is None:
        logger.warning(
            "request.tool_choice is set but no tool is declared; it is left out of the body",
            extra={"kind": "tool-choice-without-tools"},
        )
        tool_choice = None
    text = request.text
    if output_schema is not None:
        verbosity = text.verbosity if text is not None else None
        text = TextOptions(format=output_schema.text_format(), verbosity=verbosity)
    options = request.prompt_cache_options
    items = with_breakpoint(rendered.input, request.prompt_cache_breakpoints, memo=memo)
    if options is not None and options.mode == "explicit" and items is rendered.input:
        logger.warning(
            "request.prompt_cache_options.mode is explicit and the request carries no "
            "prompt_cache_breakpoint (request.prompt_cache_breakpoints: %s): it uses no prompt "
            "caching",
            request.prompt_cache_breakpoints,
            extra={"kind": "prompt-cache-without-breakpoint"},
        )
    return RequestBody(
        model=model,
        # An InputItems, never copied into a tuple (see InputItems): a read-only sequence
        # that the body encoders take through `enc_hook`.
        input=cast("tuple[InputItem, ...]", items),
        stream=stream,
        store=False,
        instructions=rendered.instructions,
        include=tuple(include) or None,
        reasoning=request.reasoning,
        max_output_tokens=request.max_output_tokens,
        parallel_tool_calls=request.parallel_tool_calls,
        temperature=request.temperature,
        top_p=request.top_p,
        top_logprobs=request.top_logprobs,
        truncation=request.truncation,
        service_tier=request.service_tier,
        prompt_cache_key=prompt_cache_key(request.prompt_cache_key, cache_identity),
        prompt_cache_retention=request.prompt_cache_retention,
        prompt_cache_options=options,
        safety_identifier=request.safety_identifier,
        metadata=request.metadata,
        text=text,
        background=request.background,
        stream_options=request.stream_options if stream else None,
        context_management=request.context_management,
        tool_choice=tool_choice,
        tools=rendered.tools,
    )


def encode_body(body: RequestBody, extra: Mapping[str, Any] | None = None) -> bytes:
    """The exact bytes to POST: ``body``, then the unmodelled fields ``extra``
    (``request.extra``) at its end, in their order."""
    return _with_extra(_ENCODER.encode(body), extra_members(extra))


def extra_members(extra: Mapping[str, Any] | None) -> bytes:
    """``extra`` as JSON object members (``"a":1,"b":2``), ``b""`` when there are none.

    :raises turnwire.errors.ConfigError: a key turnwire owns or models
        (:func:`turnwire.config.settings.extra_field_problem`).
    """
    if not extra:
        return b""
    for key in extra:
        problem = extra_field_problem(key)
        if problem:
            raise ConfigError(f"extra body field {key!r}: {problem}", path=f"$.request.extra.{key}")
    return _ENCODER.encode(dict(extra))[1:-1]


def changed_by_plugins(encoded: EncodedBody, model: str, hook: Any) -> EncodedBody:
    """The body the ``on_request_body`` hook returns (``hook``: the plugin manager's caller),
    checked: the fields turnwire owns left as they were, then the preflight rules. With no
    implementation registered, ``encoded`` itself, never decoded.

    :raises turnwire.errors.ConfigError: the hook returned no JSON object, or changed a field
        turnwire owns (named by its ``$.path``).
    :raises turnwire.errors.PreflightError: the changed body breaks a wire rule.
    """
    if not hook.get_hookimpls():
        return encoded
    sent = msgspec.json.decode(bytes(encoded))
    changed = hook(body=msgspec.json.decode(bytes(encoded)), model=model)
    if changed is None:
        return encoded
    if not isinstance(changed, dict):
        raise ConfigError(
            f"on_request_body returned {type(changed).__name__}, not a JSON object", path="$"
        )
    for key in sorted(OWNED_FIELDS):
        if changed.get(key, _ABSENT) != sent.get(key, _ABSENT):
            raise ConfigError(
                f"on_request_body changed `{key}`, which turnwire owns (every request is "
                "stateless and sends the rendered thread); only other fields may change",
                path=f"$.{key}",
            )
    preflight(changed)
    try:
        return EncodedBody((msgspec.json.encode(changed),))
    except (TypeError, msgspec.EncodeError) as err:
        raise ConfigError(
            f"on_request_body returned a body JSON cannot hold: {err}", path="$"
        ) from err


_ABSENT = object()


COMPACTION_TRIGGER = {"type": "compaction_trigger"}
"""The input item that asks the API to compact the conversation in this response (server-side
compaction); it must be the last input item."""


def with_compaction_trigger(encoded: EncodedBody) -> EncodedBody:
    """``encoded`` with :data:`COMPACTION_TRIGGER` appended as its last input item, checked by
    :func:`preflight` as a whole (a body built this way is made once per run that asks for it,
    so the bytes are decoded and encoded again here rather than spliced)."""
    body = msgspec.json.decode(bytes(encoded))
    body["input"] = [*body["input"], COMPACTION_TRIGGER]
    preflight(body)
    return EncodedBody((_ENCODER.encode(body),))


def _with_extra(encoded: bytes, members: bytes) -> bytes:
    """An encoded object with ``members`` added at its end."""
    return encoded[:-1] + b"," + members + b"}" if members else encoded


SEGMENT_BYTES = 1 << 20


"""The size past which a body's segment no longer grows by merging (see :class:`EncodedBody`)."""


class EncodedBody:
    """A request body's exact bytes, kept as the pieces a warm render assembled it from.

    The render of a grown conversation reuses the last body's encoded items; joining them into
    one ``bytes`` would copy the whole body again on every request (a 10 MB copy at 20,000
    records, the largest cost left that grew with the thread). The pieces stay apart:
    :attr:`parts` is what a transport sends, and ``bytes(body)`` joins them once, on first
    use, and keeps the result.
    """

    __slots__ = ("_joined", "parts", "size")

    def __init__(self, parts: tuple[bytes | memoryview, ...]) -> None:
        self.parts = parts
        self.size = sum(len(part) for part in parts)
        whole = parts[0] if len(parts) == 1 else None
        self._joined = whole if isinstance(whole, bytes) else None

    def __bytes__(self) -> bytes:
        joined = self._joined
        if joined is None:
            joined = self._joined = b"".join(self.parts)
        return joined

    def __len__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        return f"EncodedBody({self.size} bytes in {len(self.parts)} parts)"


def checked_body(
    body: RequestBody, memo: RenderMemo | None = None, extra: Mapping[str, Any] | None = None
) -> EncodedBody:
    """:func:`preflight` then :func:`encode_body`, reusing what ``memo`` kept of the last body;
    ``extra`` (``request.extra``) goes at the end, as :func:`encode_body` puts it.

    The longest run of leading ``input`` items that are the very objects of the last body
    checked through ``memo`` keeps its preflight facts and state and its encoded bytes; only
    the rest is checked and encoded. A body that shares nothing with the last one goes through
    the fast pass (:func:`_fast_state`) first, and through the exact rules only when that pass
    has a doubt. The bytes and the errors are exactly those of ``preflight(body)`` and
    ``encode_body(body)``.
    """
    members = extra_members(extra)
    if memo is None:
        preflight(body)
        return EncodedBody((_with_extra(_ENCODER.encode(body), members),))
    with memo.lock:
        encoded = _checked_body(body, memo)
    if not members:
        return encoded
    *head, last = encoded.parts
    return EncodedBody((*head, _with_extra(bytes(last), members)))


def _checked_body(body: RequestBody, memo: RenderMemo) -> EncodedBody:
    items = body.input
    if not items:
        raise _fail("non-empty-input", "input is empty")
    max_tokens = body.max_output_tokens
    if isinstance(max_tokens, int) and max_tokens < 16:
        raise _fail("max-output-tokens", f"max_output_tokens is {max_tokens}")
    stateless = body.store is False
    state, memo.body = memo.body, None  # restored only once this body passes
    shared = 0
    lineage = memo.input_from if memo.input_from and memo.input_from[0] is items else None
    if state is not None and state.stateless == stateless:
        known = 0
        if lineage is not None and lineage[2] is not None and state.source is lineage[2][0]:
            known = lineage[2][1]  # both inputs begin with the same sweep output's items
        shared = common_prefix(state.input, items, known)
    if shared:
        assert state is not None
        # The state is detached from the memo (see above), so it is cut back in place.
        old_facts = state.facts
        facts = old_facts
        seen_ids, calls, answered = state.seen_ids, state.calls, state.answered
        for index in range(shared, len(old_facts)):  # forget what the old tail added
            _, item_id, call_id, _, _ = _item_facts(old_facts, state.input, index)
            if item_id is not None and seen_ids.get(item_id) == index:
                del seen_ids[item_id]
            if call_id is not None:
                if calls.get(call_id) == index:
                    del calls[call_id]
                if answered.get(call_id) == index:
                    del answered[call_id]
        del facts[shared:]
        facts += _facts_of(items[shared:])
        if _item_facts(facts, items, shared - 1)[0] == "reasoning":
            _check_partner(facts, shared - 1)  # its follower changed
        _check_from(facts, shared, seen_ids, calls, answered, stateless=stateless)
        _check_answered(calls, answered)
    else:
        fast = _fast_state(items, stateless=stateless)
        if fast is not None:  # every rule holds; the facts are read when a warm path needs them
            facts = [_UNREAD] * len(items)
            seen_ids, calls, answered = fast
        else:
            facts, seen_ids, calls, answered = _facts_of(items), {}, {}, {}
            _check_from(facts, 0, seen_ids, calls, answered, stateless=stateless)
            _check_answered(calls, answered)
    if body.tools is not None or body.tool_choice is not None:
        _check_programmatic(body.tools, body.tool_choice)
    text = body.text
    format_type = text.format.get("type") if text and text.format else None
    if format_type == "json_object" and not any("json" in _text_of(i).lower() for i in items):
        raise _fail("json-object-needs-json", "no input item mentions JSON")

    # The body around an empty input, the items' bytes spliced in: "[a,b]" is "[" a "," b "]".
    # A body sharing nothing with the last one is encoded whole (one call), its item bounds
    # left unknown; the next body that shares a prefix with it encodes item by item to learn
    # them, and the ones after that splice: the kept items' segments stay the same objects
    # (the one holding the cut is sliced, not copied) and only the new items are encoded.
    segments: list[Any] | None = None
    bounds: list[int] = []
    ends: list[int] | None = None
    if not shared:
        parts: tuple[bytes | memoryview, ...] = (_ENCODER.encode(body),)
    else:
        assert state is not None
        start = len(b'{"model":') + len(_ENCODER.encode(body.model)) + len(b',"input":[')
        frame = _ENCODER.encode(msgspec.structs.replace(body, input=()))
        assert frame[start - 10 : start + 1] == b',"input":[]', "RequestBody field order changed"
        segments, bounds = state.segments, state.bounds
        if state.ends is not None and segments is not None:
            ends = state.ends
            del ends[shared:]
            offset = ends[-1]
            _cut(segments, bounds, offset)
            fresh = items[shared:]
        else:
            ends, segments, bounds, offset, fresh = [], [], [], -1, items
        encoded = [_ENCODER.encode(item) for item in fresh]
        for chunk in encoded:
            offset += 1 + len(chunk)
            ends.append(offset)
        if encoded:
            segments.append(b"," + b",".join(encoded) if segments else b",".join(encoded))
            bounds.append(offset)
            _settle(segments, bounds)
        parts = (frame[:start], *segments, frame[start:])
    memo.body = BodyState(
        input=items,
        segments=segments,
        bounds=bounds,
        ends=ends,
        facts=facts,
        seen_ids=seen_ids,
        calls=calls,
        answered=answered,
        stateless=stateless,
        source=lineage[1] if lineage is not None else None,
    )
    return EncodedBody(parts)


def _cut(segments: list[Any], bounds: list[int], end: int) -> None:
    """Keep the first ``end`` bytes of the segments (``bounds``: where each ends)."""
    last = bisect.bisect_left(bounds, end)  # the segment holding byte end - 1
    del segments[last + 1 :], bounds[last + 1 :]
    if bounds[last] != end:
        begin = bounds[last - 1] if last else 0
        segments[last] = memoryview(segments[last])[: end - begin]
        bounds[last] = end


def _settle(segments: list[Any], bounds: list[int]) -> None:
    """Merge the newest segments while the one before is at most twice the last and under
    :data:`SEGMENT_BYTES`: a body is then a few full segments and a short run of smaller
    ones, each byte copied a few times over a whole conversation, never the whole body per
    request."""
    while len(segments) > 1:
        before, last = len(segments[-2]), len(segments[-1])
        if before >= SEGMENT_BYTES or before > 2 * last:
            return
        segments[-2:] = [b"".join(segments[-2:])]
        del bounds[-2]
