"""Reviewer's reproductions: sequences of renders through one warm container that must each
equal a cold render of the same thread."""

from __future__ import annotations

import contextlib
import os
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import turnwire
from turnwire.rendering.container import overriding

from .conftest import REPLAY, make_container
from .test_warm_render import CHANGES, EDITS, _apply, _outcome, _rendered, _Scenario


def _cold(container: turnwire.Container, thread: turnwire.Thread, roots: tuple) -> object:
    with overriding(container.render_memo, None):
        return _outcome(container, thread, False, roots)


def test_a_sweep_without_a_body_between_two_renders_leaves_the_body_memo_exact(tmp_path):
    """``render_input`` (what the client's ``fingerprint_new_thoughts`` and ``turnwire
    fingerprint`` call) sweeps without checking a body. The sweep's ``out`` list is reused in
    place, so the body memo's ``source`` (that list, by identity) no longer says which items
    the kept body was made of: the next body took the edited answer's old bytes."""
    container = make_container(REPLAY)
    scenario = _Scenario(tmp_path)
    roots = (scenario.folder,)
    for _ in range(4):
        scenario.append({"q": "a"}, False)
    _outcome(container, scenario.thread(), False, roots)
    scenario.append({"q": "a"}, False)  # a body whose item bounds are known
    _outcome(container, scenario.thread(), False, roots)

    answers = [record["id"] for record in scenario.records["messages"]]
    scenario.edit("edit", answers.index("msg_2"), " (edited)")
    turnwire.api.render_input(scenario.thread(), container=container, model="gpt-5", roots=roots)

    scenario.append({"q": "a"}, False)
    thread = scenario.thread()
    warm = _outcome(container, thread, False, roots)
    assert warm == _cold(container, thread, roots)
    assert b"answer 2 (edited)" in warm[0]


# --- a wider differential property --------------------------------------------------------


OPTIONS = st.one_of(
    st.tuples(
        st.just("system_prompt_channel"),
        st.sampled_from(["instructions", "developer-item", "system-item"]),
    ),
    st.tuples(st.just("thought_surfacing"), st.sampled_from(["all-self", "latest-self", "all"])),
    st.tuples(st.just("reasoning_replay"), st.sampled_from(["encrypted", "summary-only", "off"])),
    st.tuples(st.just("fingerprint_binding"), st.sampled_from(["prefix", "model"])),
)
EXTRA = st.one_of(
    st.tuples(st.just("option"), OPTIONS),
    # a sweep with no body: what fingerprint_new_thoughts does at the end of a run
    st.tuples(st.just("render-input"), st.booleans()),
    # a render that fails after growing the memo's lists
    st.tuples(st.just("fail"), st.booleans()),
)


def _full(
    container: turnwire.Container,
    thread: turnwire.Thread,
    replay_off: bool,
    roots: tuple[Path, ...],
    pending: frozenset[str],
) -> Any:
    rendered = _rendered(container, thread, replay_off, roots, pending)
    if isinstance(rendered, tuple):
        return rendered
    model = rendered.request.model
    fingerprints = [
        turnwire.api.prefix_fingerprint(
            rendered.rendered, container=container, model=model, through_item=through
        )
        for through in {0, 1, rendered.fingerprintable_length // 2, rendered.fingerprintable_length}
    ]
    return (
        rendered.body,
        rendered.rendered.warnings,
        rendered.fingerprintable_length,
        rendered.rendered.stamped,
        fingerprints,
    )


def _input_only(
    container: turnwire.Container, thread: turnwire.Thread, roots: Any, pending: frozenset[str]
) -> Any:
    try:
        rendered = turnwire.api.render_input(
            thread,
            container=container,
            model=thread.model,
            roots=roots,
            pending_reasoning=pending,
        )
    except turnwire.TurnwireError as err:
        return ("error", type(err).__name__, str(err))
    return (
        _RECORD.encode(rendered.input),
        rendered.warnings,
        rendered.fingerprintable_length,
        rendered.stamped,
    )


_RECORD = msgspec.json.Encoder()


def _failing(thread: turnwire.Thread) -> turnwire.Thread:
    video = turnwire.Media(id="v", kind="video", mime_type="video/mp4", data=b"\0\0\0\x18ftyp")
    last = max((m for m in thread.messages), key=lambda m: m.created_at, default=None)
    if last is None:
        return thread
    late = msgspec.structs.replace(
        last,
        id="late",
        role="user",
        attachments=(video,),
        created_at=last.created_at + timedelta(hours=1),
    )
    return msgspec.structs.replace(thread, messages=(*thread.messages, late))


@settings(
    max_examples=int(os.environ.get("WARM_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    st.lists(st.tuples(st.sampled_from([{"x": 1}, {"q": "a"}]), st.booleans()), max_size=4),
    st.lists(st.one_of(EDITS, CHANGES, EXTRA, EXTRA), min_size=1, max_size=14),
)
def test_a_warm_render_is_a_cold_render_wider(start, steps):
    container = make_container(REPLAY)
    with tempfile.TemporaryDirectory() as folder, contextlib.ExitStack() as stack:
        scenario = _Scenario(Path(folder))
        for args, with_file in start:
            scenario.append(args, with_file)
        active: dict[str, contextlib.ExitStack] = {}
        for step in [("system", "Be brief."), *steps]:
            kind = step[0]
            roots = (scenario.folder,)
            if kind == "option":
                name, value = step[1]
                previous = active.pop(name, None)
                if previous is not None:
                    previous.close()
                scope = contextlib.ExitStack()
                stack.enter_context(scope)
                scope.enter_context(overriding(getattr(container, name), value))
                active[name] = scope
            elif kind == "render-input":
                thread = scenario.thread()
                pending = frozenset(scenario.pending)
                warm = _input_only(container, thread, roots, pending)
                with overriding(container.render_memo, None):
                    cold = _input_only(container, thread, roots, pending)
                assert warm == cold, step
                if step[1] and pending and cold[0] != "error":
                    scenario.stamp(cold[3])
                continue
            elif kind == "fail":
                thread = _failing(scenario.thread())
                pending = frozenset(scenario.pending)
                warm = _full(container, thread, scenario.replay_off, roots, pending)
                with overriding(container.render_memo, None):
                    cold = _full(container, thread, scenario.replay_off, roots, pending)
                assert warm == cold, step
                continue
            elif kind in {"plugin", "override", "wrapper", "wildcard", "secret", "identity"} | {
                "trust-unfingerprinted",
                "replay-off",
                "inline-limit",
            }:
                _apply(step, container, scenario, stack, active)
            else:
                scenario.edit(*step)
            thread = scenario.thread()
            pending = frozenset(scenario.pending)
            warm = _full(container, thread, scenario.replay_off, roots, pending)
            with overriding(container.render_memo, None):
                cold = _full(container, thread, scenario.replay_off, roots, pending)
            assert warm == cold, step
            assert _full(container, thread, scenario.replay_off, roots, pending) == cold
            if pending and cold[0] != "error":
                scenario.stamp(cold[3])
