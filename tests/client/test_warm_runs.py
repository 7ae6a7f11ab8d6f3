"""Reviewer's end-to-end check: two runs through one container (a long-lived client), the
thread edited between them; every body the server receives is the cold render of its thread."""

from __future__ import annotations

import msgspec

import turnwire
import turnwire.rendering.renderer
from turnwire.rendering.container import overriding

from ..conftest import REPLAY, make_container
from .server import Reply, ScriptedServer
from .test_warm_loop import CALL, TEXT, THREAD, _renamed


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
    first = [Reply.sse(_renamed(CALL, n)) for n in range(1, 4)] + [Reply.sse(TEXT)]
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
        created_at=last.created_at.replace(year=last.created_at.year + 1),
    )
    thread = msgspec.structs.replace(
        thread, tool_calls=tuple(calls), messages=(*thread.messages, question)
    )
    second = [Reply.sse(_renamed(CALL, n)) for n in range(5, 7)] + [Reply.sse(TEXT)]
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
    _two_runs(tmp_path, monkeypatch, make_container(REPLAY), THREAD, True)


def test_two_runs_with_a_trailing_bucket_send_cold_bodies(tmp_path, monkeypatch) -> None:
    """A bucket after the timeline: the body ends with a system item after the swept ones.
    The run's last sweep (``fingerprint_new_thoughts``: a render with no body) resumed the
    last request's sweep in place; the next run's first body must not take that request's
    trailing item for one of the new swept items (the stamp protocol resumes before the
    stamped reasoning, so this held even before the body memo named sweeps by token)."""
    order = ["timeline", "standing_instructions"]
    settings = {"render": {**REPLAY["render"], "bucket_order": order}}
    text = THREAD + "standing_instructions: [Be terse.]\n"
    _two_runs(tmp_path, monkeypatch, make_container(settings), text, False)
