"""A long conversation's next request builds no full-length input: the sweep hands over its
output as chunks shared with the request before (``InputItems``), and an input handed out
never changes, whatever later renders of the same memo do. Each step is byte for byte a cold
render.

The thread has more items than two chunks, and grows as a client grows it: each exchange's
reasoning recorded with its fingerprint pending, rendered with ``pending_reasoning``, stamped.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec

import turnwire
from turnwire.client.assembly import pending_ids, stamp
from turnwire.config.settings import merge
from turnwire.model.records import (
    REPLAY_TAG,
    Memory,
    Message,
    ReasoningPayload,
    Thought,
    Thread,
    Tool,
    ToolCall,
    ToolResult,
)
from turnwire.rendering._incremental.chunked import CHUNK, InputItems
from turnwire.rendering.container import overriding
from turnwire.rendering.fingerprints import stamp_fingerprints
from turnwire.rendering.sweep import PENDING_FINGERPRINT
from turnwire.wire import ReasoningItem, SummaryText

from ..conftest import REPLAY, make_container

T0 = datetime(2026, 1, 1, tzinfo=UTC)
CYCLE_ITEMS = 5  # a question, a reasoning item, a call, its output, an answer


def _cycle(n: int, fingerprint: str | None) -> tuple[list[Message], Thought, ToolCall]:
    base = T0 + timedelta(seconds=10 * n)
    thought = Thought(
        id=f"rs_{n}",
        replay_compatibility=REPLAY_TAG,
        created_at=base,
        seq=1,
        payload=ReasoningPayload(
            item=ReasoningItem(
                id=f"rs_{n}", summary=(SummaryText(text=f"plan {n}"),), encrypted_content="gAAAA"
            ),
            paired_item_id=f"fc_{n}",
            prefix_fingerprint=fingerprint,
        ),
    )
    call = ToolCall(
        id=f"call_{n}|fc_{n}",
        tool="lookup",
        args={"q": n},
        created_at=base,
        seq=2,
        result=ToolResult(text=f"result {n}"),
    )
    messages = [
        Message(id=f"u{n}", role="user", content=f"question {n}?", created_at=base),
        Message(id=f"msg_{n}", role="assistant", content=f"answer {n}", created_at=base, seq=3),
    ]
    return messages, thought, call


def _thread(cycles: int) -> Thread:
    messages: list[Message] = []
    thoughts: list[Thought] = []
    calls: list[ToolCall] = []
    for n in range(cycles):
        said, thought, call = _cycle(n, None)
        messages += said
        thoughts.append(thought)
        calls.append(call)
    return Thread(
        model="gpt-5",
        system_prompt="You answer questions.",
        tools=(Tool(name="lookup", parameters={"type": "object"}),),
        messages=tuple(messages),
        thoughts=tuple(thoughts),
        tool_calls=tuple(calls),
    )


def _grown(thread: Thread, n: int) -> Thread:
    """``thread`` and exchange ``n``, its reasoning recorded as a run records it (pending)."""
    said, thought, call = _cycle(n, PENDING_FINGERPRINT)
    return msgspec.structs.replace(
        thread,
        messages=thread.messages + tuple(said),
        thoughts=(*thread.thoughts, thought),
        tool_calls=(*thread.tool_calls, call),
    )


def _outcome(container: turnwire.Container, thread: Thread, pending: frozenset[str]) -> Any:
    rendered = turnwire.render(thread, container=container, pending_reasoning=pending)
    return rendered, (rendered.body, rendered.rendered.warnings, rendered.rendered.stamped)


def _cold(container: turnwire.Container, thread: Thread, pending: frozenset[str]) -> Any:
    with overriding(container.render_memo, None):
        return _outcome(container, thread, pending)[1]


def _chunks(rendered: turnwire.RenderedRequest) -> tuple[tuple[Any, ...], ...]:
    items = rendered.rendered.input
    assert type(items) is InputItems
    return items.pieces[0]


def _start(settings: dict[str, Any] | None = None, cycles: int = 2 * CHUNK // CYCLE_ITEMS + 40):
    container = make_container(merge(REPLAY, settings or {}))
    thread, report = stamp_fingerprints(_thread(cycles), container=container, model="gpt-5")
    assert len(report.stamped) == cycles  # every reasoning item replays
    return container, thread


def test_the_next_request_shares_the_chunks_and_an_earlier_input_never_changes() -> None:
    container, thread = _start()
    first, _ = _outcome(container, thread, frozenset())
    held = [(first, tuple(first.rendered.input), first.body)]
    cycles = len(thread.thoughts)
    for n in range(cycles, cycles + 4):
        thread = _grown(thread, n)
        pending = pending_ids(thread)
        rendered, warm = _outcome(container, thread, pending)
        assert warm == _cold(container, thread, pending), n
        before = _chunks(held[-1][0])
        after = _chunks(rendered)
        assert len(after) >= 2 and len(after) >= len(before)
        # the full chunks before the sweep's cut are the very same tuples: nothing rebuilt
        assert all(map(tuple.__eq__, before[:-1], after)) and all(
            old is new for old, new in zip(before[:-1], after, strict=False)
        )
        kinds = [type(item).__name__ for item in rendered.rendered.input]
        assert kinds.count("ReasoningItem") == len(thread.thoughts)
        held.append((rendered, tuple(rendered.rendered.input), rendered.body))
        thread = stamp(thread, pending, rendered.rendered.stamped)
    for rendered, items, body in held:  # as each was when it was rendered
        assert tuple(rendered.rendered.input) == items and len(rendered.rendered.input) == len(
            items
        )
        assert tuple(rendered.request.input) == items
        assert (
            bytes(rendered.encoded) == body == turnwire.rendering.body.encode_body(rendered.request)
        )


def test_an_edit_far_back_cuts_the_chunks_and_leaves_earlier_inputs_as_they_were() -> None:
    """An early record changed: the sweep resumes from an early checkpoint (its chunk list
    cut back to it), another thread rendered in between starts lists of its own; the inputs
    handed out before keep their items, and each render is a cold render."""
    container, thread = _start()
    first, _ = _outcome(container, thread, frozenset())
    kept = tuple(first.rendered.input)
    edited = msgspec.structs.replace(
        thread,
        messages=(
            *thread.messages[:10],
            msgspec.structs.replace(thread.messages[10], content="changed"),
            *thread.messages[11:],
        ),
    )
    second, warm = _outcome(container, edited, frozenset())
    assert warm == _cold(container, edited, frozenset())
    assert _chunks(second)[0] is not _chunks(first)[0]
    _, warm_other = _outcome(container, _thread(30), frozenset())
    assert warm_other == _cold(container, _thread(30), frozenset())
    again, warm = _outcome(container, thread, frozenset())
    assert warm == _cold(container, thread, frozenset())
    assert tuple(first.rendered.input) == kept
    assert first.rendered.input == kept and hash(first.rendered.input) == hash(kept)
    assert tuple(again.rendered.input) == kept


def test_a_trailing_bucket_goes_after_the_shared_chunks() -> None:
    """A bucket after ``timeline`` is one more item at the input's end: the sweep's chunks are
    shared all the same, and a memory added changes only that item."""
    settings = {"render": {"bucket_order": ["timeline", "memories"]}}
    container, thread = _start(settings)
    thread = msgspec.structs.replace(thread, memories=(Memory(id="m1", content="likes tea"),))
    first, warm = _outcome(container, thread, frozenset())
    assert warm == _cold(container, thread, frozenset())
    more = msgspec.structs.replace(
        thread, memories=(*thread.memories, Memory(id="m2", content="lives in Oslo"))
    )
    second, warm = _outcome(container, more, frozenset())
    assert warm == _cold(container, more, frozenset())
    assert all(a is b for a, b in zip(_chunks(first), _chunks(second), strict=True))
    assert first.rendered.input[:-1] == second.rendered.input[:-1]
    assert first.rendered.input[-1] != second.rendered.input[-1]


def test_a_thought_rewritten_in_place_is_seen_by_the_sweep_of_another_key() -> None:
    """A thought whose fingerprint is put right renders the same, so it takes its memoised
    candidate's place in the timeline's list in place; a sweep kept under another key (another
    model) that decided on the old thought resumes before it, as a cold render decides."""
    container, thread = _start(cycles=40)
    right = thread.thoughts[30]
    assert right.payload is not None
    wrong = msgspec.structs.replace(
        right, payload=msgspec.structs.replace(right.payload, prefix_fingerprint="0" * 64)
    )
    stale = msgspec.structs.replace(
        thread, thoughts=(*thread.thoughts[:30], wrong, *thread.thoughts[31:])
    )

    def both(model: str, value: Thread) -> tuple[Any, Any]:
        warm = turnwire.render(value, container=container, model=model)
        with overriding(container.render_memo, None):
            cold = turnwire.render(value, container=container, model=model)
        return (warm.body, warm.rendered.warnings), (cold.body, cold.rendered.warnings)

    for model, value in [
        ("gpt-5", stale),
        ("gpt-5-mini", stale),
        ("gpt-5-mini", thread),  # rewritten in place under this model's sweep
        ("gpt-5", thread),  # this sweep saw the stale thought: it must not resume after it
    ]:
        warm, cold = both(model, value)
        assert warm == cold, (model, value is thread)
    assert any("rs_30" in warning for warning in both("gpt-5", stale)[1][1])
    assert not any("rs_30" in warning for warning in both("gpt-5", thread)[1][1])
