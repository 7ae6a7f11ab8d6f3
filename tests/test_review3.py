"""Review 3: targeted checks of the bulk first render, the lazy relay and the stage plan cache."""

from __future__ import annotations

import base64
from types import SimpleNamespace
from typing import Any

import turnwire
from turnwire.hookspecs import hookimpl
from turnwire.rendering.container import overriding
from turnwire.wire import InputMessage

from .conftest import at, make_container

AUDIO = base64.b64encode(b"RIFF0000WAVE").decode()


def _outcome(container: turnwire.Container, thread: turnwire.Thread) -> Any:
    try:
        r = turnwire.api.render(thread, container=container)
    except turnwire.TurnwireError as err:
        return ("error", type(err).__name__, str(err))
    return (r.body, r.rendered.warnings, r.rendered.stamped)


def _cold(container: turnwire.Container, thread: turnwire.Thread) -> Any:
    with overriding(container.render_memo, None):
        return _outcome(container, thread)


def _thread(messages: list[dict[str, Any]], calls: list[dict[str, Any]] = ()) -> turnwire.Thread:
    return turnwire.load_thread(
        {
            "version": 1,
            "model": "gpt-5",
            "tools": [{"name": "lookup"}],
            "messages": messages,
            "tool_calls": list(calls),
        }
    )


def _audio_message(mid: str, second: int, name: str) -> dict[str, Any]:
    return {
        "id": mid,
        "role": "user",
        "content": "listen",
        "created_at": at(second),
        "attachments": [
            {
                "id": f"a_{mid}",
                "kind": "audio",
                "mime_type": "audio/wav",
                "filename": name,
                "data_base64": AUDIO,
            }
        ],
    }


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
    assert _outcome(container, _thread(base))[0]  # warm memo holds u0
    thread = _thread(
        [_audio_message("u1", 5, "message.wav"), *base],
        [_audio_call("c1", 1, "call.wav")],
    )
    warm = _outcome(container, thread)
    cold = _cold(container, thread)
    assert warm == cold


class _LazyWarner:
    """A message stage that returns a generator; its media sub-stage (the built-in one, which
    warns for audio under fallback-stash without a stash entry) runs as it is consumed."""

    @hookimpl(tryfirst=True)
    def render_timeline_message(self, message: Any, stages: Any) -> Any:
        def items() -> Any:
            for media in message.attachments:
                stages.render_media_blocks(media=media)
            yield InputMessage(role="user", content=str(message.content))

        return items()


STASH = {"render": {"unsupported_media_policy": "fallback-stash"}}


class _CallWarner:
    @hookimpl(tryfirst=True)
    def render_tool_call_result(self, tool_call: Any, warn: Any) -> Any:
        warn(f"call {tool_call.id}")
        return "ok"


def _mixed(n: int) -> turnwire.Thread:
    messages = [_audio_message(f"u{i}", 2 * i, f"m{i}.wav") for i in range(n)]
    calls = [
        {
            "id": f"c{i}",
            "tool": "lookup",
            "args": {},
            "created_at": at(2 * i + 1),
            "result": {"text": "r"},
        }
        for i in range(n)
    ]
    return _thread(messages, calls)


def test_a_generator_stage_warns_in_timeline_order_and_warm_as_cold():
    container = make_container(STASH, extra_plugins=[_LazyWarner(), _CallWarner()])
    thread = _mixed(3)
    first = _outcome(container, thread)
    cold = _cold(container, thread)
    assert first == cold
    # the warnings in timeline order
    said = [w.split(" for media ")[-1].split(":")[0] if "media" in w else w for w in first[1]]
    assert said == ["a_u0", "call c0", "a_u1", "call c1", "a_u2", "call c2"], first[1]


def test_a_generator_stage_keeps_its_warnings_in_the_memo():
    """A record inserted early makes the next render go record by record over kept entries."""
    container = make_container(STASH, extra_plugins=[_LazyWarner()])
    thread = _mixed(3)
    _outcome(container, thread)
    early = {"id": "u_early", "role": "user", "content": "first", "created_at": at(0), "seq": -1}
    raw = [_audio_message(f"u{i}", 2 * i, f"m{i}.wav") for i in range(3)]
    grown = _thread(
        [early, *raw],
        [
            {
                "id": f"c{i}",
                "tool": "lookup",
                "args": {},
                "created_at": at(2 * i + 1),
                "result": {"text": "r"},
            }
            for i in range(3)
        ],
    )
    assert _outcome(container, grown) == _cold(container, grown)


def test_a_plugin_registered_while_a_plan_is_built_is_not_kept_past_its_unregistration():
    """Another thread registers a plugin between the moment the container reads what a stage
    plan is built from and the moment it builds it (simulated here by registering it from
    inside the build). Once that plugin is unregistered again, the container's plan must not
    still call it."""
    from unittest import mock

    from turnwire.rendering.relay import StagePlan

    container = make_container()
    manager = container.plugin_manager()
    plugin = SimpleNamespace(render_tool_call_result=_warning_result)
    real_init = StagePlan.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        if not manager.is_registered(plugin):
            manager.register(plugin)  # "another thread", between the inputs and the build
        real_init(self, *args, **kwargs)

    with mock.patch.object(StagePlan, "__init__", init):
        container.stage_plan()
    manager.unregister(plugin)
    plan = container.stage_plan()
    kind, target = plan.targets["render_tool_call_result"]
    functions = [target[0]] if kind == "only" else [function for function, _ in target[3]]
    assert _warning_result not in functions
    thread = _mixed(1)
    assert _outcome(container, thread) == _cold(container, thread)
    assert not any("warned" in w for w in _outcome(container, thread)[1])


@hookimpl(tryfirst=True)
def _warning_result(tool_call: Any, warn: Any) -> Any:
    warn(f"warned {tool_call.id}")
    return None
