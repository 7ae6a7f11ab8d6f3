"""Canonical JSON and the prefix fingerprint, pinned to the reference's worked values."""

from __future__ import annotations

import hashlib
from types import SimpleNamespace

from turnwire import hookimpl
from turnwire.config.options import Endpoint
from turnwire.model.canonical import UNDEFINED, canonical_json
from turnwire.stages.fingerprint import fingerprint_prefix
from turnwire.wire import (
    InputMessage,
    InputText,
)

from ..conftest import REPLAY, assistant, reasoning_thought, render_body, thread, user


def fingerprint(input_items, *, instructions=None, tools=None, model="m"):
    return fingerprint_prefix(
        model=model,
        instructions=instructions,
        tools=tools,
        input=input_items,
        through_item=len(input_items),
        fingerprint_binding="prefix",
        endpoint=Endpoint(),
        scratch={},
    )


def test_worked_value_empty_input_no_tools():
    text = canonical_json(
        {"input": [], "instructions": UNDEFINED, "model": "m", "tools": UNDEFINED}
    )
    assert text == '{"input":[],"instructions":undefined,"model":"m","tools":undefined}'
    expected = "1a4f2d2d532b5729d5339e41e2fc7a88616dfc4f7c74defc3b3ae5d4331b83a3"
    assert hashlib.sha256(text.encode()).hexdigest() == expected
    assert fingerprint([]) == expected


def test_worked_value_empty_tools_array_differs_from_undefined():
    expected = "188b61f1a92da91b40385ec1ee9d6514a0fc9c23a45f64f19bd33e99e9af7a43"
    assert fingerprint([], tools=()) == expected
    assert fingerprint([], tools=()) != fingerprint([], tools=None)


def test_worked_value_instructions_and_one_user_item():
    item = InputMessage(role="user", content=(InputText(text="hi"),))
    expected = "e0a94d9356745ae181ad7c4c17aecd9a9871ec45eaf193417f8e48680cca7b7b"
    assert fingerprint([item], instructions="SYS") == expected


def test_incremental_prefixes_equal_fresh_hashes():
    items = [InputMessage(role="user", content=f"m{i}") for i in range(6)]
    scratch: dict = {}
    for through in range(7):
        incremental = fingerprint_prefix(
            model="m",
            instructions="i",
            tools=None,
            input=items,
            through_item=through,
            fingerprint_binding="prefix",
            endpoint=Endpoint(),
            scratch=scratch,
        )
        assert incremental == fingerprint(items[:through], instructions="i")


def test_model_binding_ignores_the_prefix_but_not_the_endpoint():
    def bound(items, endpoint):
        return fingerprint_prefix(
            model="gpt-5",
            instructions=None,
            tools=None,
            input=items,
            through_item=len(items),
            fingerprint_binding="model",
            endpoint=endpoint,
            scratch={},
        )

    a = bound([], Endpoint())
    assert a == bound([InputMessage(role="user", content="x")], Endpoint())
    assert a != bound([], Endpoint(organization="org-2"))
    assert a != bound([], Endpoint(base_url="http://127.0.0.1:9/v1"))


def test_hook_fingerprint_prefix():
    """A plugin's fingerprint decides whether recorded reasoning still matches its prefix."""
    seen = []

    @hookimpl
    def fingerprint_prefix(model, through_item):
        seen.append((model, through_item))
        return "f" * 64

    t = thread(
        messages=[user(), assistant("msg_1", "answer", 2, seq=1)],
        thoughts=[reasoning_thought("rs_1", 2, fingerprint="f" * 64, paired="msg_1")],
    )
    plugin = SimpleNamespace(fingerprint_prefix=fingerprint_prefix)
    kinds = [i.get("type") for i in render_body(t, REPLAY, extra_plugins=[plugin])["input"]]
    assert kinds == ["message", "reasoning", "message"]
    assert ("gpt-5", 1) in seen
    assert "reasoning" not in [i.get("type") for i in render_body(t, REPLAY)["input"]]
