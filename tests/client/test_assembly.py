"""Request assembly: the context-window guard before sending, a ``tool_choice`` forcing a hidden
tool, and the client's own loop rendering warm: a run of several tool iterations renders each
record's items once, and each reasoning item once more when the run stamps its fingerprint, never
again on later requests; every request still equals a cold render of its thread, also across two
runs through one container (a long-lived client) with the thread edited between them."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from types import SimpleNamespace

import msgspec
import pytest

import turnwire
import turnwire.rendering.renderer
from turnwire import hookimpl
from turnwire.errors import ContextOverflowError
from turnwire.rendering import pipeline
from turnwire.rendering.container import overriding

from ..conftest import REPLAY, make_container, thread, user
from .server import Reply, ScriptedServer, recorded

TEXT = recorded("text_simple_gpt-4o-mini.sse")


def test_the_context_window_guard_refuses_before_sending(tmp_path):
    t = thread(model="gpt-5", system_prompt="word " * 400, messages=[user(content="hi " * 50)])
    settings = {"context": {"token_encoding": "o200k_base", "context_window": 300}}
    with ScriptedServer([Reply.sse(TEXT)]) as server:
        with pytest.raises(ContextOverflowError) as caught:
            turnwire.api.run(t, container=make_container(settings), base_url=server.base_url)
    assert server.requests == []
    error = caught.value
    assert error.total > 300 and error.breakdown["system_prompt"] >= 400
    assert error.breakdown["timeline"] >= 50
    assert "system_prompt" in str(error) and "context_window" in str(error)


def test_under_the_window_the_request_goes_out(tmp_path):
    t = thread(model="gpt-5", messages=[user()])
    settings = {"context": {"token_encoding": "o200k_base", "context_window": 10_000}}
    with ScriptedServer([Reply.sse(TEXT)]) as server:
        turnwire.api.run(t, container=make_container(settings), base_url=server.base_url)
    assert len(server.requests) == 1


@pytest.mark.parametrize("strict", [False, True])
def test_tool_choice_forcing_a_hidden_tool(strict, caplog):
    import logging

    t = thread(
        model="gpt-5",
        messages=[user()],
        tools=[{"name": "visible"}, {"name": "secret", "hidden": True}],
    )
    settings = {
        "request": {"tool_choice": {"type": "function", "name": "secret"}},
        "client": {"strict_tool_choice": strict},
    }
    with ScriptedServer([Reply.sse(TEXT)]) as server:
        if strict:
            with pytest.raises(turnwire.ConfigError) as caught:
                turnwire.api.run(t, container=make_container(settings), base_url=server.base_url)
            assert "hidden" in str(caught.value) and server.requests == []
        else:
            with caplog.at_level(logging.WARNING, logger="turnwire"):
                turnwire.api.run(t, container=make_container(settings), base_url=server.base_url)
            assert "tool-choice-unavailable" in [r.kind for r in caplog.records]


LOOP_CALL = recorded("reasoning_summary_encrypted_function_call_gpt-5.sse")


LOOP_TEXT = recorded("reasoning_summary_encrypted_text_turn2_gpt-5.sse")


LOOP_THREAD = (
    "version: 1\nmodel: gpt-5\ntools:\n  - {name: weather, parameters: {type: object, "
    "properties: {location: {type: string}}}}\nmessages:\n  - {id: u1, role: user, "
    'content: "Weather in Florence?", created_at: "2026-01-01T10:00:00Z"}\n'
)


def _renamed(stream: bytes, n: int) -> bytes:
    """The recorded answer with ids of its own, as another response would have."""
    for prefix in (b':"rs_', b':"fc_', b':"call_', b':"resp_', b':"msg_'):
        stream = stream.replace(prefix, prefix + b"%d" % n)
    return stream


def test_a_run_renders_each_reasoning_item_at_most_twice(tmp_path, monkeypatch) -> None:
    seen: Counter[str] = Counter()
    extended: list[bool] = []  # per request: the timeline grew the last one, the sweep resumed
    real_timeline, real_sweep = pipeline._timeline, pipeline._sweep

    def timeline(*args, **kwargs):  # type: ignore[no-untyped-def]
        built = real_timeline(*args, **kwargs)
        extended.append(built.base_items is not None)
        return built

    def sweep(*args, **kwargs):  # type: ignore[no-untyped-def]
        swept, resumed_from = real_sweep(*args, **kwargs)
        extended.append(resumed_from is not None)
        return swept, resumed_from

    monkeypatch.setattr(pipeline, "_timeline", timeline)
    monkeypatch.setattr(pipeline, "_sweep", sweep)

    @hookimpl(tryfirst=True)
    def render_reasoning_item(thought):  # type: ignore[no-untyped-def]
        seen[thought.id] += 1

    container = make_container(
        REPLAY, extra_plugins=[SimpleNamespace(render_reasoning_item=render_reasoning_item)]
    )
    path = tmp_path / "t.yaml"
    path.write_text(LOOP_THREAD)
    script = [Reply.sse(_renamed(LOOP_CALL, n)) for n in range(1, 5)] + [Reply.sse(LOOP_TEXT)]
    with ScriptedServer(script) as server:
        result = turnwire.api.run(
            path,
            container=container,
            base_url=server.base_url,
            save=True,
            handlers={"weather": lambda location: "40 C"},
        )
    assert len(server.requests) == 5
    reasoning = [t.id for t in result.thread.thoughts if t.payload is not None]
    assert len(reasoning) >= 4
    # each request replays every reasoning item recorded so far
    last = server.requests[-1].json["input"]
    assert sum(item.get("type") == "reasoning" for item in last) == len(reasoning) - 1
    assert max(seen.values()) <= 2, seen
    # The first request renders from the start; every later timeline grows the last one. The
    # second request's sweep resumes after the items both hold, since the first one's saw no
    # reasoning at all; the third has no checkpoint before the reasoning the second stamped
    # (rewritten since) and sweeps from the start; from the fourth request on there is a
    # checkpoint before it to resume from.
    timelines, sweeps = extended[0::2], extended[1::2]
    assert timelines[0] is False and all(timelines[1:5]), timelines
    assert sweeps[:3] == [False, True, False] and all(sweeps[3:5]), sweeps
    # and the last request is what a cold render of the thread it was rendered from gives
    saved = turnwire.load_thread(path)
    with overriding(container.render_memo, None):
        cold = turnwire.api.render(saved, container=container).json["input"]
    assert cold[: len(last)] == last


def _two_runs(tmp_path, monkeypatch, container, thread_text, edit) -> None:  # type: ignore[no-untyped-def]
    rendered_bodies: list[bytes] = []
    mismatches: list[int] = []
    real = turnwire.rendering.renderer.render

    def checked(thread, **kwargs):  # type: ignore[no-untyped-def]
        warm = real(thread, **kwargs)
        with overriding(container.render_memo, None):
            cold = real(thread, **kwargs)
        if warm.body != cold.body or warm.rendered.stamped != cold.rendered.stamped:
            mismatches.append(len(rendered_bodies))
        rendered_bodies.append(warm.body)
        return warm

    monkeypatch.setattr(turnwire.rendering.renderer, "render", checked)
    path = tmp_path / "t.yaml"
    path.write_text(thread_text)
    first = [Reply.sse(_renamed(LOOP_CALL, n)) for n in range(1, 4)] + [Reply.sse(LOOP_TEXT)]
    with ScriptedServer(first) as server:
        result = turnwire.api.run(
            path,
            container=container,
            base_url=server.base_url,
            handlers={"weather": lambda location: "40 C"},
        )
        received = [seen.body for seen in server.requests]
    thread = result.thread
    calls = list(thread.tool_calls)
    if edit:  # the user edits a result of the tool, then asks again
        result_text = msgspec.structs.replace(calls[1].result, text="41 C (corrected)")
        calls[1] = msgspec.structs.replace(calls[1], result=result_text)
    last = max(thread.messages, key=lambda m: m.created_at)
    question = msgspec.structs.replace(
        thread.messages[0],
        id="u2",
        content="And tomorrow?",
        created_at=last.created_at + timedelta(seconds=1),  # after every record, not ahead
    )
    thread = msgspec.structs.replace(
        thread, tool_calls=tuple(calls), messages=(*thread.messages, question)
    )
    second = [Reply.sse(_renamed(LOOP_CALL, n)) for n in range(5, 7)] + [Reply.sse(LOOP_TEXT)]
    with ScriptedServer(second) as server:
        turnwire.api.run(
            thread,
            container=container,
            base_url=server.base_url,
            handlers={"weather": lambda location: "40 C"},
        )
        received += [seen.body for seen in server.requests]
    assert len(received) == 7
    assert received == rendered_bodies
    assert mismatches == []


def test_two_runs_through_one_container_send_cold_bodies(tmp_path, monkeypatch) -> None:
    _two_runs(tmp_path, monkeypatch, make_container(REPLAY), LOOP_THREAD, True)


def test_two_runs_with_a_trailing_bucket_send_cold_bodies(tmp_path, monkeypatch) -> None:
    """A bucket after the timeline: the body ends with a system item after the swept ones.
    The run's last sweep (``fingerprint_new_thoughts``: a render with no body) resumed the
    last request's sweep in place; the next run's first body must not take that request's
    trailing item for one of the new swept items (the stamp protocol resumes before the
    stamped reasoning, so this held even before the body memo named sweeps by token)."""
    order = ["timeline", "standing_instructions"]
    settings = {"render": {**REPLAY["render"], "bucket_order": order}}
    text = LOOP_THREAD + "standing_instructions: [Be terse.]\n"
    _two_runs(tmp_path, monkeypatch, make_container(settings), text, False)
