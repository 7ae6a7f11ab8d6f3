"""The client's own loop renders warm: a run of several tool iterations renders each record's
items once, and each of its reasoning items once more when the run stamps its fingerprint,
never again on later requests; every request still equals a cold render of its thread."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

import turnwire
from turnwire import hookimpl
from turnwire.rendering import pipeline
from turnwire.rendering.container import overriding

from ..conftest import REPLAY, make_container
from .server import Reply, ScriptedServer, recorded

CALL = recorded("reasoning_summary_encrypted_function_call_gpt-5.sse")
TEXT = recorded("reasoning_summary_encrypted_text_turn2_gpt-5.sse")
THREAD = (
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
    path.write_text(THREAD)
    script = [Reply.sse(_renamed(CALL, n)) for n in range(1, 5)] + [Reply.sse(TEXT)]
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
    # The first request renders from the start; every later timeline grows the last one. A
    # sweep resumes before the reasoning the last request stamped (rewritten since), so from
    # the fourth request on there is a checkpoint before it to resume from.
    timelines, sweeps = extended[0::2], extended[1::2]
    assert timelines[0] is False and all(timelines[1:5]), timelines
    assert sweeps[:3] == [False, False, False] and all(sweeps[3:5]), sweeps
    # and the last request is what a cold render of the thread it was rendered from gives
    saved = turnwire.load_thread(path)
    with overriding(container.render_memo, None):
        cold = turnwire.api.render(saved, container=container).json["input"]
    assert cold[: len(last)] == last
