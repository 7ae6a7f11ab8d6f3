"""Property tests for the pairing sweep: whatever the stored timeline, the input is pairable."""

from __future__ import annotations

import functools

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import turnwire
from turnwire.rendering.preflight import preflight

from .conftest import make_container
from .oracle import validate_body

MODEL_BINDING = {
    "render": {
        "reasoning_replay": "encrypted",
        "fingerprint_binding": "model",
        "replay_compatibility": ["openai-responses-reasoning-v1"],
    }
}


def _valid_fingerprint() -> str:
    from turnwire.config.options import Endpoint
    from turnwire.stages.fingerprint import fingerprint_prefix

    return fingerprint_prefix(
        model="gpt-5",
        instructions=None,
        tools=None,
        input=[],
        through_item=0,
        fingerprint_binding="model",
        endpoint=Endpoint(),
        scratch={},
    )


VALID = _valid_fingerprint()

kinds = st.lists(
    st.sampled_from(
        ["user", "own", "own-bad-id", "thought", "call", "call-no-fc", "plain-thought"]
    ),
    min_size=1,
    max_size=14,
)


@st.composite
def timelines(draw):
    messages, thoughts, calls = [], [], []
    ids = [f"msg_{n}" for n in range(20)] + [f"fc_{n}" for n in range(20)]
    for position, kind in enumerate(draw(kinds)):
        stamp = "2026-01-01T10:00:00Z"
        if kind == "user":
            messages.append(
                {
                    "id": f"u{position}",
                    "role": "user",
                    "content": "q",
                    "created_at": stamp,
                    "seq": position,
                }
            )
        elif kind in ("own", "own-bad-id"):
            mid = f"msg_{position}" if kind == "own" else f"own-{position}"
            messages.append(
                {
                    "id": mid,
                    "role": "assistant",
                    "content": "a",
                    "created_at": stamp,
                    "seq": position,
                }
            )
        elif kind in ("call", "call-no-fc"):
            cid = f"call_{position}|fc_{position}" if kind == "call" else f"call_{position}"
            calls.append(
                {
                    "id": cid,
                    "tool": "t",
                    "created_at": stamp,
                    "seq": position,
                    "result": {"text": "r"},
                }
            )
        elif kind == "plain-thought":
            thoughts.append(
                {"id": f"t{position}", "content": "hm", "created_at": stamp, "seq": position}
            )
        else:
            paired = draw(st.one_of(st.none(), st.sampled_from(ids)))
            fingerprint = draw(st.sampled_from([VALID, "0" * 64]))
            thoughts.append(
                {
                    "id": f"rs_{position}",
                    "created_at": stamp,
                    "seq": position,
                    "replay_compatibility": "openai-responses-reasoning-v1",
                    "payload": {
                        "variant": "responses-reasoning",
                        "paired_item_id": paired,
                        "prefix_fingerprint": fingerprint,
                        "item": {
                            "type": "reasoning",
                            "id": f"rs_{position}",
                            "summary": [],
                            "encrypted_content": "gAAAA",
                        },
                    },
                }
            )
    if not messages and not calls:
        messages.append(
            {"id": "u_last", "role": "user", "content": "q", "created_at": "2026-01-01T10:00:01Z"}
        )
    return turnwire.load_thread(
        {
            "version": 1,
            "model": "gpt-5",
            "tools": [{"name": "t"}],
            "messages": messages,
            "thoughts": thoughts,
            "tool_calls": calls,
        }
    )


@functools.cache
def _container() -> turnwire.Container:
    return make_container(MODEL_BINDING)


def _kept_example() -> turnwire.Thread:
    """A timeline whose reasoning item must be kept (so the property's branch always runs)."""
    stamp = "2026-01-01T10:00:00Z"
    return turnwire.load_thread(
        {
            "version": 1,
            "model": "gpt-5",
            "tools": [{"name": "t"}],
            "messages": [
                {"id": "u0", "role": "user", "content": "q", "created_at": stamp},
                {"id": "msg_2", "role": "assistant", "content": "a", "created_at": stamp, "seq": 2},
            ],
            "thoughts": [
                {
                    "id": "rs_1",
                    "created_at": stamp,
                    "seq": 1,
                    "replay_compatibility": "openai-responses-reasoning-v1",
                    "payload": {
                        "variant": "responses-reasoning",
                        "paired_item_id": "msg_2",
                        "prefix_fingerprint": VALID,
                        "item": {
                            "type": "reasoning",
                            "id": "rs_1",
                            "summary": [],
                            "encrypted_content": "gAAAA",
                        },
                    },
                }
            ],
        }
    )


def test_the_kept_example_keeps_its_reasoning_item():
    body = turnwire.render(_kept_example(), container=make_container(MODEL_BINDING)).json
    assert [i.get("type") for i in body["input"]] == ["message", "reasoning", "message"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(_kept_example())
@given(timelines())
def test_every_reasoning_item_sits_right_before_its_partner_and_ids_only_there(thread):
    rendered = turnwire.render(thread, container=_container())
    body = rendered.json
    preflight(body)
    validate_body(body)
    items = body["input"]
    by_id = {t.id: t for t in thread.thoughts}
    for index, item in enumerate(items):
        if item.get("type") == "reasoning":
            partner = items[index + 1]
            assert partner.get("type") in ("message", "function_call") and partner.get("id")
            payload = by_id[item["id"]].payload
            assert payload.prefix_fingerprint == VALID
            assert payload.paired_item_id in (None, partner["id"])
        elif item.get("id"):
            assert index > 0 and items[index - 1].get("type") == "reasoning"
    assert turnwire.render(thread, container=_container()).body == rendered.body
