"""Overriding one stage changes every composite that uses it, by plugin or by container provider.

Each row names a sub-stage, a thread that exercises one composite using it, and where the
override's marker must show up in the body.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from dependency_injector import providers

import turnwire
from turnwire import hookimpl
from turnwire.wire import InputText

from .conftest import at, make_container, thread, user
from .oracle import validate_body

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
        ("render_system_prompt", {"memories": [{"id": "m", "content": "c"}]}, None)
    ],
    "render_retrievables": [
        (
            "render_system_prompt",
            {"retrievables": [{"id": "r", "content": "c", "trust_tier": "first-party"}]},
            None,
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


def test_a_misspelled_hook_fails_loudly_naming_it():
    plugin = SimpleNamespace(render_untrusted_contnet=hookimpl(lambda: "x"))
    with pytest.raises(turnwire.errors.PluginError) as caught:
        make_container(extra_plugins=[plugin]).stage_plan()
    assert "render_untrusted_contnet" in str(caught.value)


def test_an_argument_the_hook_does_not_have_fails_at_registration():
    @hookimpl
    def render_memories(memories, colour):
        return "x"

    with pytest.raises(turnwire.errors.PluginError):
        make_container(
            extra_plugins=[SimpleNamespace(render_memories=render_memories)]
        ).stage_plan()


def _replay_thread(fingerprint="f" * 64):
    from .conftest import assistant, reasoning_thought

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
    from .conftest import REPLAY, prefix_fingerprint

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
    from .conftest import REPLAY

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
