"""The timeline a warm renderer keeps: a thread that only grew appends its new records to the lists
the last render built; a first render lays out records rendered kind by kind (in bulk) exactly as
one by one, its first error and its warnings in timeline order."""

from __future__ import annotations

from typing import Any
from unittest import mock

import msgspec

import turnwire
from turnwire.hookspecs import hookimpl
from turnwire.rendering._incremental import timeline as incremental_timeline
from turnwire.rendering.container import overriding

from ...conftest import REPLAY, at, make_container
from .test_memo import (
    AUDIO,
    STASH,
    _audio_message,
    _cold_outcome,
    _cycles,
    _growing_thread,
    _LazyWarner,
    _lookup_thread,
    _mixed,
    _noting_messages,
    _outcome,
    _render_outcome,
)


def test_a_grown_thread_reuses_the_records_it_rendered_before():
    """The memo is used, not only harmless: a grown thread's old records are not re-rendered."""
    calls: list[str] = []
    container = _noting_messages(calls)
    full = _growing_thread(3)
    first = msgspec.structs.replace(
        full,
        messages=full.messages[:4],
        thoughts=full.thoughts[:6],
        tool_calls=full.tool_calls[:2],
        hosted_items=full.hosted_items[:3],
    )
    turnwire.api.render(first, container=container)
    assert calls == ["u0", "msg_0", "u1", "msg_1"]
    calls.clear()
    warm = turnwire.api.render(full, container=container)
    assert calls == ["u2", "msg_2"]
    calls.clear()
    with overriding(container.render_memo, None):
        cold = turnwire.api.render(full, container=container)
    assert warm.body == cold.body
    assert calls == ["u0", "msg_0", "u1", "msg_1", "u2", "msg_2"]


def test_a_thread_the_memo_never_saw_is_rendered_in_bulk_beside_others():
    """A long-lived memo meeting a new thread (none of its record ids kept) renders it kind by
    kind, as a first render does; a thread sharing records with a kept one goes record by
    record and reuses them. Both give a cold render's bytes and warnings."""
    cycles = _cycles
    container = make_container(REPLAY)
    bulk: list[int] = []
    real_bulk = incremental_timeline._timeline_in_bulk

    def spy(entries: Any, *args: Any, **kwargs: Any) -> Any:
        bulk.append(len(entries))
        return real_bulk(entries, *args, **kwargs)

    first, other, overlapping = cycles(0, 5), cycles(40, 5), cycles(3, 5)
    with mock.patch.object(incremental_timeline, "_timeline_in_bulk", spy):
        for thread, in_bulk in ((first, True), (other, True), (overlapping, False)):
            bulk.clear()
            warm = turnwire.api.render(thread, container=container)
            assert bool(bulk) == in_bulk
            with overriding(container.render_memo, None):
                cold = turnwire.api.render(thread, container=container)  # in bulk, always
            assert warm.body == cold.body and warm.rendered.warnings == cold.rendered.warnings


def test_a_stage_that_returns_a_list_or_nothing_renders_alike_in_bulk_and_one_by_one():
    """An override may return any iterable, or ``None`` (no items): a first render, which
    renders each kind in bulk, lays out the same items as a record-by-record render, and keeps
    tuples in its memo."""
    from turnwire.wire import InputMessage

    def listed(message: Any) -> Any:
        if message.role != "user":
            return None
        return [InputMessage(role="user", content=f"said: {message.content}")]

    container = make_container(REPLAY)
    thread = _growing_thread(3)
    with overriding(container.render_timeline_message, listed):
        with overriding(container.render_memo, None):
            bulk = _outcome(container, thread, False)
            with mock.patch.object(incremental_timeline, "_BULK", False):
                one_by_one = _outcome(container, thread, False)
        assert bulk == one_by_one and b"said: question 1" in bulk[0]
        turnwire.api.render(thread, container=container)
        tables = container.render_memo().records["message"]._data.values()
        assert all(type(entry.rendered) is tuple for t in tables for entry in t.entries.values())


def _audio_call(cid: str, second: int, name: str) -> dict[str, Any]:
    return {
        "id": cid,
        "tool": "lookup",
        "args": {},
        "created_at": at(second),
        "result": {
            "media": [
                {
                    "id": f"a_{cid}",
                    "kind": "audio",
                    "mime_type": "audio/wav",
                    "filename": name,
                    "data_base64": AUDIO,
                }
            ]
        },
    }


def test_the_first_error_of_a_timeline_is_the_same_warm_and_cold():
    """Two records that fail (a tool call first in the timeline, a message after it): the
    warm render (record by record, the memo holds some records) and the cold one (in bulk)
    raise the same error."""
    container = make_container()
    base = [{"id": "u0", "role": "user", "content": "hi", "created_at": at(50)}]
    assert _render_outcome(container, _lookup_thread(base))[0]  # warm memo holds u0
    thread = _lookup_thread(
        [_audio_message("u1", 5, "message.wav"), *base],
        [_audio_call("c1", 1, "call.wav")],
    )
    warm = _render_outcome(container, thread)
    cold = _cold_outcome(container, thread)
    assert warm == cold


class _CallWarner:
    @hookimpl(tryfirst=True)
    def render_tool_call_result(self, tool_call: Any, warn: Any) -> Any:
        warn(f"call {tool_call.id}")
        return "ok"


def test_a_generator_stage_warns_in_timeline_order_and_warm_as_cold():
    container = make_container(STASH, extra_plugins=[_LazyWarner(), _CallWarner()])
    thread = _mixed(3)
    first = _render_outcome(container, thread)
    cold = _cold_outcome(container, thread)
    assert first == cold
    # the warnings in timeline order
    said = [w.split(" for media ")[-1].split(":")[0] if "media" in w else w for w in first[1]]
    assert said == ["a_u0", "call c0", "a_u1", "call c1", "a_u2", "call c2"], first[1]
