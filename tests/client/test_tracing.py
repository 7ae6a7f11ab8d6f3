"""`run` under every shipped profile and with a tracing wrapper on every hook: the stage relay
reaches each stage through pluggy without losing or doubling an argument (the fingerprint
stage included, whose ``model`` is both a call argument and an injected option)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import msgspec
import pytest

import turnwire
from turnwire import build_container, hookimpl
from turnwire.hookspecs import CLIENT_HOOKS, STAGES

from ..conftest import make_container
from .server import Reply, ScriptedServer, recorded

REPO = Path(__file__).resolve().parents[2]
PROFILES = sorted((REPO / "config").glob("*.yaml"))
CALL = recorded("reasoning_summary_encrypted_function_call_gpt-5.sse")
ANSWER = recorded("reasoning_summary_encrypted_text_turn2_gpt-5.sse")
THREAD = {
    "version": 1,
    "model": "gpt-5",
    "tools": [
        {
            "name": "weather",
            "parameters": {"type": "object", "properties": {"location": {"type": "string"}}},
        }
    ],
    "messages": [
        {
            "id": "u1",
            "role": "user",
            "content": "Weather in Florence?",
            "created_at": "2026-01-01T10:00:00Z",
        }
    ],
}


def _tracer(style: str, seen: list[str]) -> Any:
    """A plugin with a wrapper of the given style on every hook, noting each call."""

    def new_style(name: str) -> Any:
        def wrapper() -> Any:
            seen.append(name)
            return (yield)

        return hookimpl(wrapper=True, specname=name)(wrapper)

    def old_style(name: str) -> Any:
        def wrapper() -> Any:
            seen.append(name)
            yield

        return hookimpl(hookwrapper=True, specname=name)(wrapper)

    make = new_style if style == "wrapper" else old_style
    namespace = {f"trace_{name}": staticmethod(make(name)) for name in (*STAGES, *CLIENT_HOOKS)}
    return type(f"Tracer_{style}", (), namespace)()


def _run(container: turnwire.Container) -> tuple[Any, list[Any]]:
    with ScriptedServer([Reply.sse(CALL), Reply.sse(ANSWER)]) as server:
        result = turnwire.api.run(
            turnwire.load_thread(THREAD),
            container=container,
            base_url=server.base_url,
            handlers={"weather": lambda location: f"sunny in {location}"},
        )
    return result, server.requests


def _assert_full_turn(result: Any, requests: list[Any]) -> None:
    assert len(requests) == 2
    call = result.records.tool_calls[0]
    assert (call.tool, call.args, call.result.text) == (
        "weather",
        {"location": "Florence, Italy"},
        "sunny in Florence, Italy",
    )
    assert result.records.messages and result.response.finish_reason == "stop"
    assert result.request_fingerprint is not None and len(result.request_fingerprint) == 64
    second = requests[1].json["input"]
    assert [i.get("type") for i in second[-2:]] == ["function_call", "function_call_output"]


@pytest.mark.parametrize("profile", PROFILES, ids=[p.stem for p in PROFILES])
def test_run_under_every_shipped_profile(profile, caplog):
    container = build_container(
        [profile], overrides={"plugins": {"load_entrypoints": False}, "request": {"model": None}}
    )
    with caplog.at_level(logging.DEBUG, logger="turnwire.trace"):
        result, requests = _run(container)
    _assert_full_turn(result, requests)
    settings = container.settings()
    if settings.plugins.trace:
        assert "fingerprint_prefix" in caplog.text and "tools_to_wire" in caplog.text
    if settings.render.reasoning_replay == "encrypted":
        kinds = [i.get("type") for i in requests[1].json["input"]]
        assert kinds[1:3] == ["reasoning", "function_call"]


REPLAY = {
    "render": {
        "reasoning_replay": "encrypted",
        "replay_compatibility": ["openai-responses-reasoning-v1"],
    }
}


def _stamped_out(records: Any) -> Any:
    """The records without their timestamps (each run stamps its own clock time)."""
    tree = msgspec.to_builtins(records)
    for kind in tree.values():
        for record in kind:
            record.pop("created_at")
    return tree


@pytest.mark.parametrize("style", ["wrapper", "hookwrapper"])
@pytest.mark.parametrize("trace", [False, True])
def test_a_wrapper_on_every_hook_sees_every_call_and_changes_nothing(style, trace):
    plain, _ = _run(make_container(REPLAY))
    seen: list[str] = []
    settings = {**REPLAY, "plugins": {"trace": trace}}
    traced, requests = _run(make_container(settings, extra_plugins=[_tracer(style, seen)]))
    _assert_full_turn(traced, requests)
    assert _stamped_out(traced.records) == _stamped_out(plain.records)
    assert traced.request_fingerprint == plain.request_fingerprint
    expected = {
        "fingerprint_prefix",
        "tools_to_wire",
        "description_to_json_schema",
        "render_timeline_message",
        "render_tool_call_result",
        "render_reasoning_item",
        "render_system_prompt",
        "filter_thoughts",
        "on_prompt_assembled",
        "on_raw_generation",
        "filter_tool_call_id",
    }
    assert expected <= set(seen)
    assert seen.count("on_prompt_assembled") == 2 and seen.count("on_raw_generation") == 2


def test_a_wrapper_of_the_fingerprint_stage_applies_in_render_and_in_run():
    class Salted:
        @hookimpl(wrapper=True)
        def fingerprint_prefix(self, model):
            digest = yield
            return digest[:-4] + "beef"

    container = make_container(REPLAY, extra_plugins=[Salted()])
    result, requests = _run(container)
    thought = result.records.thoughts[0]
    assert thought.payload.prefix_fingerprint.endswith("beef")
    assert result.request_fingerprint.endswith("beef")
    # the salted fingerprint still matches on the next request: the reasoning item is replayed
    kinds = [i.get("type") for i in requests[1].json["input"]]
    assert "reasoning" in kinds
    again = turnwire.render(result.thread, container=container).json
    assert [i.get("type") for i in again["input"]].count("reasoning") == 2
