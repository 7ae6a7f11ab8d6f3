"""A sweep after one that saw no reasoning candidate resumes after the items both share.

Without a candidate (no reasoning replayed: an agent loop on a model that sends none, or
``reasoning_replay: off``) a sweep keeps no checkpoint, yet its output is still a function of
each item alone (:func:`~turnwire.rendering.sweep._strip_ids`, one item for one, while no
hosted item waits on a response's reasoning). The next sweep keeps that output for the items
both hold, the very objects, up to its own first candidate, and strips only the rest: the
stripped ``function_call`` items of earlier requests stay the same objects, which the body and
the ledger then recognise too. Each render is byte for byte a cold one, through growth, edits
far back, a changed head, reasoning that comes and goes and replay switched off and on.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import turnwire
from turnwire.config.settings import merge
from turnwire.model.records import (
    REPLAY_TAG,
    Message,
    ReasoningPayload,
    Thought,
    Thread,
    Tool,
    ToolCall,
    ToolResult,
)
from turnwire.rendering._incremental.chunked import CHUNK
from turnwire.rendering._incremental.identity import first_difference
from turnwire.rendering.container import overriding
from turnwire.rendering.items import _STRIPPED, strip_item_id
from turnwire.rendering.sweep import _strips_only
from turnwire.wire import FunctionCall, ReasoningItem, SummaryText

from ..conftest import REPLAY, make_container

T0 = datetime(2026, 1, 1, tzinfo=UTC)
_ENCODE = msgspec.json.Encoder().encode


def _call(n: int) -> ToolCall:
    return ToolCall(
        id=f"call_{n}|fc_{n}",
        tool="lookup",
        args={"n": n},
        created_at=T0 + timedelta(seconds=10 * n + 1),
        result=ToolResult(text=f"entry {n}"),
    )


def _message(n: int, role: str, text: str = "") -> Message:
    return Message(
        id=f"{role[0]}{n}",
        role=role,  # type: ignore[arg-type]
        content=text or f"{role} message {n}",
        created_at=T0 + timedelta(seconds=10 * n + (0 if role == "user" else 2)),
    )


def _thought(n: int) -> Thought:
    """Reasoning paired with call ``n`` (no fingerprint: dropped, with a warning, but a
    candidate the sweep decides on)."""
    return Thought(
        id=f"rs_{n}",
        replay_compatibility=REPLAY_TAG,
        created_at=T0 + timedelta(seconds=10 * n + 1),
        seq=0,
        payload=ReasoningPayload(
            item=ReasoningItem(
                id=f"rs_{n}", summary=(SummaryText(text=f"plan {n}"),), encrypted_content="gAAAA"
            ),
            paired_item_id=f"fc_{n}",
            prefix_fingerprint=None,
        ),
    )


class _Loop:
    """A thread as an agent loop grows it: a question, then calls with ids, then answers."""

    def __init__(self, prior: int) -> None:
        self.n = 0
        self.messages: list[Message] = []
        self.calls: list[ToolCall] = []
        self.thoughts: list[Thought] = []
        self.system = "You look things up."
        self.replay_off = False
        for _ in range(prior):
            self.messages.append(_message(self.n, "user"))
            self.messages.append(_message(self.n, "assistant"))
            self.n += 1

    def grow(self, calls: int, answer: bool) -> None:
        for _ in range(calls):
            self.calls.append(_call(self.n))
            self.n += 1
        if answer:
            self.messages.append(_message(self.n, "assistant"))
            self.n += 1

    def step(self, step: tuple[Any, ...]) -> None:
        kind = step[0]
        if kind == "grow":
            self.grow(step[1], step[2])
        elif kind == "edit" and self.messages:  # a record far back built again, or changed
            index = step[1] % len(self.messages)
            old = self.messages[index]
            text = old.content if step[2] else f"{old.content} (edited)"
            self.messages[index] = msgspec.structs.replace(old, content=text)
        elif kind == "edit-call" and self.calls:
            index = step[1] % len(self.calls)
            self.calls[index] = msgspec.structs.replace(self.calls[index])  # same content
        elif kind == "system":
            self.system = step[1]
        elif kind == "think" and self.calls:  # reasoning before a call: a candidate
            index = step[1] % len(self.calls)
            number = int(self.calls[index].id.split("|")[0].removeprefix("call_"))
            if all(t.id != f"rs_{number}" for t in self.thoughts):
                self.thoughts.append(_thought(number))
        elif kind == "forget" and self.thoughts:
            del self.thoughts[step[1] % len(self.thoughts)]
        elif kind == "replay-off":
            self.replay_off = step[1]

    def thread(self) -> Thread:
        return Thread(
            model="gpt-5",
            system_prompt=self.system,
            tools=(Tool(name="lookup", parameters={"type": "object"}),),
            messages=tuple(self.messages),
            tool_calls=tuple(self.calls),
            thoughts=tuple(self.thoughts),
        )


def _render(container: turnwire.Container, loop: _Loop) -> turnwire.RenderedRequest:
    return turnwire.render(
        loop.thread(), container=container, reasoning_replay="off" if loop.replay_off else None
    )


def _outcome(rendered: turnwire.RenderedRequest) -> Any:
    return (rendered.body, rendered.rendered.warnings, rendered.fingerprintable_length)


def _cold(container: turnwire.Container, loop: _Loop) -> Any:
    with overriding(container.render_memo, None):
        return _outcome(_render(container, loop))


def _check_states(container: turnwire.Container) -> None:
    """Every kept state a sweep may resume after holds the rule's output: each swept item
    through strip_item_id, in order (compared as encoded bytes)."""
    for state in container.render_memo().sweeps._data.values():
        if not _strips_only(state):
            continue
        swept = state.items[: state.item_count]
        expected = [strip_item_id(i) if type(i) in _STRIPPED else i for i in swept]
        assert [_ENCODE(i) for i in state.out] == [_ENCODE(i) for i in expected]


def test_an_agent_loop_over_two_chunks_keeps_its_stripped_items_as_they_were() -> None:
    container = make_container(REPLAY)
    loop = _Loop(prior=CHUNK + 100)
    loop.messages.append(_message(loop.n, "user", "Look it up, twenty times."))
    loop.n += 1
    before = _render(container, loop)
    for request in range(20):
        loop.grow(1, answer=request == 19)
        rendered = _render(container, loop)
        assert _outcome(rendered) == _cold(container, loop)
        old, new = before.rendered.input, rendered.rendered.input
        # every item of the request before is sent again as the very object, the stripped
        # function calls with them
        assert first_difference(old, new) == len(old)
        assert sum(type(item) is FunctionCall for item in new) == request + 1
        assert all(item.id is None for item in new if type(item) is FunctionCall)
        assert new.pieces[0][0] is old.pieces[0][0]  # the full chunk, shared
        resumed = container.render_memo().input_from
        assert resumed is not None and resumed[2] is not None and resumed[2][1] == len(old)
        _check_states(container)
        before = rendered


STEPS = st.one_of(
    st.tuples(st.just("grow"), st.integers(1, 3), st.booleans()),
    st.tuples(st.just("grow"), st.integers(1, 3), st.booleans()),
    st.tuples(st.just("edit"), st.integers(0, 10_000), st.booleans()),
    st.tuples(st.just("edit-call"), st.integers(0, 10_000)),
    st.tuples(st.just("system"), st.sampled_from(["You look things up.", "Be brief."])),
    st.tuples(st.just("think"), st.integers(0, 10_000)),
    st.tuples(st.just("forget"), st.integers(0, 10_000)),
    st.tuples(st.just("replay-off"), st.booleans()),
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.integers(0, 40), st.lists(STEPS, min_size=1, max_size=12), st.sampled_from([0, 1]))
def test_a_sweep_resumed_after_strips_alone_renders_as_cold(prior, steps, placement):
    channel = "developer-item" if placement else "instructions"  # a head item, or none
    container = make_container(merge(REPLAY, {"render": {"system_prompt_channel": channel}}))
    loop = _Loop(prior)
    loop.grow(1, answer=False)
    assert _outcome(_render(container, loop)) == _cold(container, loop)
    for step in steps:
        loop.step(step)
        assert _outcome(_render(container, loop)) == _cold(container, loop), step
        _check_states(container)
