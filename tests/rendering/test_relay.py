"""The stage relay: how the pipeline and the composite stages call the render stages.

Overriding one stage changes every composite that uses it, by plugin or by container provider (each
row of ``CASES`` names a sub-stage, a thread that exercises one composite using it, and where the
override's marker must show up in the body); a plugin returning ``None`` defers and a wrapper
augments; ``positional_caller`` calls a stage exactly as the relay's attribute does; and ``run``
under every shipped profile and with a tracing wrapper on every hook reaches each stage through
pluggy without losing or doubling an argument (the fingerprint stage included, whose ``model`` is
both a call argument and an injected option)."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import msgspec
import pytest
from dependency_injector import providers

import turnwire
from turnwire import build_container, hookimpl, hookspecs
from turnwire.hookspecs import CLIENT_HOOKS, STAGES
from turnwire.rendering.plugins import TurnwirePluginManager
from turnwire.rendering.relay import StagePlan, StageRelay, positional_caller
from turnwire.wire import InputText

from ..client.server import Reply, ScriptedServer, recorded
from ..conftest import REPO, at, make_container, thread, user
from ..oracle import validate_body


class _Late:
    """Takes the per-call argument between two options."""

    @hookimpl(tryfirst=True)
    def render_thought(self, self_identity: str, thought: Any, envelope_nonce: Any) -> str:
        return f"{self_identity}:{thought.id}:{envelope_nonce(thought.id)}"


class _First:
    """Takes the per-call argument first, then one option."""

    @hookimpl
    def render_thought(self, thought: Any, self_identity: str) -> str:
        return f"{thought.id}@{self_identity}"


def _relay(manager: Any, **overrides: Any) -> StageRelay:
    options = make_container().render_options(model="gpt-5").injectable()
    return StageRelay(StagePlan(manager, overrides), {**options, "warn": print, "scratch": {}})


def _alone(plugin: Any) -> TurnwirePluginManager:
    manager = TurnwirePluginManager()
    manager.add_hookspecs(hookspecs)
    manager.register(plugin)
    return manager


THOUGHT = turnwire.Thought(id="t1", content="hmm", created_at=datetime(2026, 1, 1, tzinfo=UTC))


@pytest.mark.parametrize(
    ("manager", "overrides", "kind"),
    [
        (lambda: make_container().plugin_manager(), {}, "only"),  # the built-in, by position
        (lambda: _alone(_First()), {}, "only"),  # first, then options
        (lambda: _alone(_Late()), {}, "only"),  # mid-signature: by keyword
        (lambda: make_container(extra_plugins=(_Late(),)).plugin_manager(), {}, "hooks"),
        (
            lambda: make_container().plugin_manager(),
            {"render_thought": lambda thought, self_identity: f"{self_identity}/{thought.id}"},
            "override",
        ),
    ],
)
def test_positional_caller_matches_the_relay(manager: Any, overrides: Any, kind: str) -> None:
    relay = _relay(manager(), **overrides)
    assert relay.plan.targets["render_thought"][0] == kind
    expected = relay.render_thought(thought=THOUGHT)
    assert positional_caller(relay, "render_thought", ("thought",))(THOUGHT) == expected


def test_a_missing_argument_fails_as_through_the_relay() -> None:
    relay = _relay(_alone(_Late()))
    with pytest.raises(KeyError):
        relay.render_thought(self_identity="x")
    with pytest.raises(KeyError):
        positional_caller(relay, "render_thought", ("self_identity",))("x")


TEXT_MARK = "«marker»"


TOOL = {"name": "t", "parameters": {"type": "object", "properties": {}}}


def _call(result, *, tool="t"):
    return {"id": "call_1", "tool": tool, "args": {}, "created_at": at(1), "result": result}


IMAGE = {"id": "i1", "kind": "image", "mime_type": "image/png", "data_base64": "AAAA"}


AUDIO = {"id": "s1", "kind": "audio", "mime_type": "audio/mp3", "data_base64": "AAAA"}


BIG = {"text": "x" * 10}


# A type the API does not take back as input: always sent as its text form.
HOSTED = {
    "id": "sh_1",
    "type": "shell_call",
    "item": {"type": "shell_call", "id": "sh_1", "action": {"commands": ["ls"]}},
    "created_at": at(1),
}


SYNTH = {"render": {"unsupported_media_policy": "synthetic-description"}}


IN_TIMELINE = {"render": {"context_placement": "timeline"}}


CASES = {
    # sub-stage: [(composite, thread fields, settings)]
    "render_untrusted_content": [
        ("render_tool_call_result", {"tools": [TOOL], "tool_calls": [_call({"text": "r"})]}, None),
        (
            "render_third_party_public_retrievables",
            {"retrievables": [{"id": "r", "content": "c", "trust_tier": "third-party-public"}]},
            None,
        ),
        (
            "render_third_party_private_retrievables",
            {"retrievables": [{"id": "r", "content": "c", "trust_tier": "third-party-private"}]},
            None,
        ),
        ("render_media_blocks", {"messages": [user("u2", "x", 0, attachments=[AUDIO])]}, SYNTH),
    ],
    "render_trusted_content": [
        (
            "render_tool_call_result",
            {"tools": [{**TOOL, "trusted": True}], "tool_calls": [_call({"text": "r"})]},
            None,
        ),
        (
            "render_media_blocks",
            {
                "messages": [
                    user("u2", "x", 0, attachments=[{**AUDIO, "trust_tier": "first-party"}])
                ]
            },
            SYNTH,
        ),
    ],
    "render_retrievable_handle_body": [
        (
            "render_first_party_retrievables",
            {"retrievables": [{"id": "r", "artifact": BIG, "trust_tier": "first-party"}]},
            None,
        ),
        (
            "render_third_party_public_retrievables",
            {"retrievables": [{"id": "r", "artifact": BIG, "trust_tier": "third-party-public"}]},
            None,
        ),
        (
            "render_third_party_private_retrievables",
            {"retrievables": [{"id": "r", "artifact": BIG, "trust_tier": "third-party-private"}]},
            None,
        ),
    ],
    "render_artifact_handle_body": [
        (
            "render_tool_call_result",
            {"tools": [TOOL], "tool_calls": [_call({"artifact": {**BIG, "inline": False}})]},
            None,
        ),
    ],
    "render_media_blocks": [
        ("render_timeline_message", {"messages": [user("u2", "x", 0, attachments=[IMAGE])]}, None),
        (
            "render_tool_call_result",
            {"tools": [TOOL], "tool_calls": [_call({"media": [IMAGE]})]},
            None,
        ),
    ],
    "render_standing_instructions": [
        ("render_system_prompt", {"standing_instructions": ["rule"]}, None),
    ],
    "render_memories": [
        ("render_system_prompt", {"memories": [{"id": "m", "content": "c"}]}, None),
        ("render_timeline_context", {"memories": [{"id": "m", "content": "c"}]}, IN_TIMELINE),
    ],
    "render_retrievables": [
        (
            "render_system_prompt",
            {"retrievables": [{"id": "r", "content": "c", "trust_tier": "first-party"}]},
            None,
        ),
        (
            "render_timeline_context",
            {"retrievables": [{"id": "r", "content": "c", "trust_tier": "third-party-public"}]},
            IN_TIMELINE,
        ),
    ],
    "render_retrievable_safety_directive": [
        (
            "render_retrievables",
            {"retrievables": [{"id": "r", "content": "c", "trust_tier": "first-party"}]},
            None,
        ),
    ],
    "render_first_party_retrievables": [
        (
            "render_retrievables",
            {"retrievables": [{"id": "r", "content": "c", "trust_tier": "first-party"}]},
            None,
        ),
    ],
    "render_third_party_public_retrievables": [
        (
            "render_retrievables",
            {"retrievables": [{"id": "r", "content": "c", "trust_tier": "third-party-public"}]},
            None,
        ),
    ],
    "render_third_party_private_retrievables": [
        (
            "render_retrievables",
            {"retrievables": [{"id": "r", "content": "c", "trust_tier": "third-party-private"}]},
            None,
        ),
    ],
    "description_to_json_schema": [("tools_to_wire", {"tools": [TOOL]}, None)],
    "render_hosted_item_text": [("render_hosted_item", {"hosted_items": [HOSTED]}, None)],
}


CASES["render_untrusted_content"].append(
    ("render_hosted_item_text", {"hosted_items": [HOSTED]}, None)
)


def _marker(stage: str):
    if stage == "render_media_blocks":
        return (InputText(text=TEXT_MARK),)
    if stage == "description_to_json_schema":
        return {"type": "object", "properties": {}, "description": TEXT_MARK}
    return TEXT_MARK


ROWS = [
    pytest.param(stage, composite, fields, settings, id=f"{stage}->{composite}")
    for stage, rows in CASES.items()
    for composite, fields, settings in rows
]


def _body(fields, settings, **container_kw):
    fields = {"messages": [user()], **fields}
    if fields["messages"][0]["id"] != "u1":
        fields["messages"] = [user(), *fields["messages"]]
    container = make_container(settings, **container_kw)
    return container, thread(**fields)


def _render(container, t):
    body = turnwire.render(t, container=container, model="gpt-5").json
    validate_body(body)
    return json.dumps(body, ensure_ascii=False)


@pytest.mark.parametrize(("stage", "composite", "fields", "settings"), ROWS)
def test_a_plugin_override_reaches_the_composite(stage, composite, fields, settings):
    value = _marker(stage)
    plugin = SimpleNamespace(**{stage: hookimpl(lambda: value)})
    container, t = _body(fields, settings, extra_plugins=[plugin])
    assert TEXT_MARK in _render(container, t)
    baseline, t = _body(fields, settings)
    assert TEXT_MARK not in _render(baseline, t)


@pytest.mark.parametrize(("stage", "composite", "fields", "settings"), ROWS)
def test_a_container_override_reaches_the_composite(stage, composite, fields, settings):
    value = _marker(stage)
    container, t = _body(fields, settings)
    with getattr(container, stage).override(providers.Object(lambda: value)):
        assert TEXT_MARK in _render(container, t)
    assert TEXT_MARK not in _render(container, t)


def test_a_plugin_that_returns_none_defers_to_the_built_in():
    seen = []

    @hookimpl
    def render_untrusted_content(content, attrs):
        seen.append(attrs.kind)

    plugin = SimpleNamespace(render_untrusted_content=render_untrusted_content)
    container, t = _body(
        {"tools": [TOOL], "tool_calls": [_call({"text": "r"})]}, None, extra_plugins=[plugin]
    )
    assert "<untrusted_content_" in _render(container, t)
    assert seen == ["tool-result"]


def test_a_wrapper_plugin_augments_the_built_in_result():
    @hookimpl(wrapper=True)
    def render_untrusted_content(content, attrs):
        result = yield
        return result + "\n(checked)"

    plugin = SimpleNamespace(render_untrusted_content=render_untrusted_content)
    container, t = _body(
        {"tools": [TOOL], "tool_calls": [_call({"text": "r"})]}, None, extra_plugins=[plugin]
    )
    assert "</untrusted_content_" in _render(container, t)
    assert "(checked)" in _render(container, t)


def _replay_thread(fingerprint="f" * 64):
    from ..conftest import assistant, reasoning_thought

    return thread(
        messages=[user(), assistant("msg_1", "answer", 2, seq=1)],
        thoughts=[
            {"id": "t0", "content": "plain thought", "created_at": at(1)},
            reasoning_thought("rs_1", 2, fingerprint=fingerprint, paired="msg_1"),
        ],
        tools=[TOOL],
        tool_calls=[{**_call({"text": "r"}), "created_at": at(3)}],
        hosted_items=[{**HOSTED, "created_at": at(4)}],
    )


def _valid_replay_thread():
    from ..conftest import REPLAY, prefix_fingerprint

    before = thread(
        messages=[user()],
        tools=[TOOL],
        thoughts=[{"id": "t0", "content": "plain thought", "created_at": at(1)}],
    )
    return _replay_thread(prefix_fingerprint(before, REPLAY))


PIPELINE_STAGES = {
    "render_system_prompt": (lambda: TEXT_MARK, lambda b: b.get("instructions") == TEXT_MARK),
    "render_timeline_message": (
        lambda: (),
        lambda b: all(
            i.get("role") != "user" and "answer" not in json.dumps(i) for i in b["input"]
        ),
    ),
    "render_thought": (
        lambda: TEXT_MARK,
        lambda b: {"type": "message", "role": "assistant", "content": TEXT_MARK} in b["input"],
    ),
    "filter_thoughts": (lambda: (), lambda b: "plain thought" not in json.dumps(b)),
    "fingerprint_prefix": (
        lambda: "f" * 64,
        lambda b: [i.get("type") for i in b["input"]].count("reasoning") == 1,
    ),
    "render_reasoning_item": (
        lambda: None,
        lambda b: all(i.get("type") != "reasoning" for i in b["input"]),
    ),
    "tools_to_wire": (lambda: (), lambda b: "tools" not in b),
    "render_hosted_item": (lambda: (), lambda b: "shell_call" not in json.dumps(b)),
}


@pytest.mark.parametrize("stage", sorted(PIPELINE_STAGES))
def test_a_container_override_of_a_stage_the_pipeline_calls(stage):
    from ..conftest import REPLAY

    override, check = PIPELINE_STAGES[stage]
    container = make_container(REPLAY)
    t = _valid_replay_thread() if stage == "render_reasoning_item" else _replay_thread()
    baseline = turnwire.render(t, container=container, model="gpt-5").json
    assert not check(baseline)
    with getattr(container, stage).override(providers.Object(override)):
        body = turnwire.render(t, container=container, model="gpt-5").json
    assert check(body)


def test_a_tool_call_result_override_reaches_the_output():
    container = make_container()
    t = thread(messages=[user()], tools=[TOOL], tool_calls=[_call({"text": "r"})])
    with container.render_tool_call_result.override(providers.Object(lambda: TEXT_MARK)):
        body = turnwire.render(t, container=container, model="gpt-5").json
    assert body["input"][2] == {
        "type": "function_call_output",
        "call_id": "call_1",
        "output": TEXT_MARK,
    }


def test_every_stage_is_covered_by_an_override_test():
    from turnwire.hookspecs import STAGES

    covered = set(CASES) | {c for rows in CASES.values() for c, _, _ in rows}
    covered |= set(PIPELINE_STAGES) | {"render_tool_call_result"}
    assert covered == set(STAGES)


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
