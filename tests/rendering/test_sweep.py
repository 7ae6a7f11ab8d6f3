"""The pairing sweep: a reasoning item is kept only right before the partner it was recorded with,
while its prefix fingerprint still matches; kept ids are stripped everywhere else; whatever the
stored timeline, the input is pairable. The resumable sweep keeps checkpoints (with the hash
state of their prefix) and a prefix fingerprint resumed from them is the stage's own.

Long threads (20-60 exchanges: 40-120 reasoning candidates, so the sparse checkpoints and the
dense tail matter), edited in the middle, grown, their reasoning pending, stamped, made stale,
unfingerprinted or wrongly paired; with and without hosted items (the sweep's ``reasoned``
path and its inline stripping); under the built-in, the ``model``-binding and custom
``fingerprint_prefix`` stages (dense checkpoints); several threads (some forked from others,
sharing record objects and ids) alternating in one container; and ``prefix_fingerprint`` of
current and older renders at random cuts against the stage: each step warm == cold == record
by record.

``LONG_THREAD_EXAMPLES`` sets the number of examples of the long threads (25),
``LONG_THREAD_STEPS`` the most steps of one (8).
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import hashlib
import logging
import os
import tempfile
from datetime import datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from unittest import mock

import msgspec
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import turnwire
import turnwire.api
from turnwire.hookspecs import hookimpl
from turnwire.rendering import pipeline
from turnwire.rendering._incremental import timeline as incremental_timeline
from turnwire.rendering.container import overriding
from turnwire.rendering.preflight import preflight
from turnwire.rendering.sweep import PENDING_FINGERPRINT
from turnwire.stages.fingerprint import PREFIX_HEAD, canonical_items

from ..conftest import (
    REPLAY,
    WEATHER_TOOL,
    assistant,
    at,
    call,
    make_container,
    prefix_fingerprint,
    reasoning_thought,
    render_body,
    thread,
    user,
)
from ..oracle import validate_body
from ._incremental.test_memo import (
    ARGS,
    FUZZ,
    _apply,
    _cycle,
    _growing_thread,
    _HostileScenario,
    _MatchesAny,
    _outcome,
    check_step,
    compaction,
)


def _replay_thread(
    fingerprint,
    *,
    paired="msg_1",
    partner_id="msg_1",
    trailing=False,
    thought_seq=1,
    message_seq=2,
    same_time=False,
):
    thought_second = 5
    message_second = 5 if same_time else 6
    fields = {
        "system_prompt": "SYS",
        "messages": [
            user("u1", "cross the street?", 0),
            assistant(partner_id, "Look both ways.", message_second, seq=message_seq),
        ],
        "thoughts": [
            reasoning_thought(
                "rs_1", thought_second, fingerprint=fingerprint, paired=paired, seq=thought_seq
            )
        ],
    }
    if trailing:
        fields["memories"] = [{"id": "m1", "content": "tea"}]
    return thread(**fields)


def _fingerprint_after_user(settings_=None, trailing=False):
    fields = {"system_prompt": "SYS", "messages": [user("u1", "cross the street?", 0)]}
    if trailing:
        fields["memories"] = [{"id": "m1", "content": "tea"}]
    return prefix_fingerprint(thread(**fields), settings_)


def test_a_matching_reasoning_item_is_replayed_with_its_partner_and_the_partner_keeps_its_id():
    body = render_body(_replay_thread(_fingerprint_after_user(REPLAY)), REPLAY)
    reasoning, message = body["input"][1:3]
    assert reasoning == {
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "plan"}],
        "id": "rs_1",
        "encrypted_content": "gAAAA-enc",
    }
    assert message["type"] == "message" and message["id"] == "msg_1"
    assert message["content"] == [
        {"type": "output_text", "text": "Look both ways.", "annotations": []}
    ]
    assert "reasoning.encrypted_content" in body["include"]


def test_a_stale_fingerprint_drops_the_item_and_strips_the_partner_id(caplog):
    with caplog.at_level(logging.WARNING, logger="turnwire"):
        body = render_body(_replay_thread("0" * 64), REPLAY)
    assert [i.get("type") for i in body["input"]] == ["message", "message"]
    assert body["input"][1] == {
        "type": "message",
        "role": "assistant",
        "content": "Look both ways.",
    }
    assert "stale fingerprint" in caplog.text


def test_a_partner_that_is_not_the_recorded_one_drops_the_item():
    body = render_body(_replay_thread(_fingerprint_after_user(REPLAY), paired="msg_other"), REPLAY)
    assert all(i.get("type") != "reasoning" for i in body["input"])
    assert all("id" not in i for i in body["input"])


def test_a_reasoning_item_at_the_end_is_dropped():
    t = thread(
        system_prompt="SYS",
        messages=[user("u1", "cross the street?", 0)],
        thoughts=[
            reasoning_thought("rs_1", 5, fingerprint=_fingerprint_after_user(REPLAY), paired=None)
        ],
    )
    assert len(render_body(t, REPLAY)["input"]) == 1


def test_a_partner_without_a_valid_id_cannot_pair():
    body = render_body(
        _replay_thread(_fingerprint_after_user(REPLAY), paired=None, partner_id="own-1"), REPLAY
    )
    assert all(i.get("type") != "reasoning" for i in body["input"])


def test_two_consecutive_reasoning_items_never_pair_with_each_other():
    fp = _fingerprint_after_user(REPLAY)
    t = thread(
        system_prompt="SYS",
        messages=[user("u1", "cross the street?", 0)],
        thoughts=[
            reasoning_thought("rs_1", 5, fingerprint=fp, paired=None, seq=0),
            reasoning_thought("rs_2", 5, fingerprint=fp, paired=None, seq=1),
        ],
    )
    assert all(i.get("type") != "reasoning" for i in render_body(t, REPLAY)["input"])


def test_the_sweep_only_sees_the_fingerprintable_prefix():
    """Load-bearing invariant 1: a trailing bucket is invisible to every fingerprint."""
    fp = _fingerprint_after_user(
        {**REPLAY, "render": {**REPLAY["render"], "bucket_order": ["timeline", "memories"]}},
        trailing=True,
    )
    settings_ = {"render": {**REPLAY["render"], "bucket_order": ["timeline", "memories"]}}
    rendered = turnwire.render(
        _replay_thread(fp, trailing=True), container=make_container(settings_), model="gpt-5"
    )
    body = rendered.json
    assert [i.get("type") for i in body["input"]] == ["message", "reasoning", "message", "message"]
    assert rendered.fingerprintable_length == 3


def test_a_reasoning_item_must_sort_strictly_before_its_partner():
    """Load-bearing invariant 2: on a full (created_at, seq) tie the message sorts first."""
    fp = _fingerprint_after_user(REPLAY)
    tied = render_body(_replay_thread(fp, same_time=True, thought_seq=0, message_seq=0), REPLAY)
    assert all(i.get("type") != "reasoning" for i in tied["input"])
    ordered = render_body(_replay_thread(fp, same_time=True, thought_seq=1, message_seq=2), REPLAY)
    assert [i.get("type") for i in ordered["input"]][1:] == ["reasoning", "message"]


def test_function_call_ids_are_sent_only_after_their_reasoning():
    t = thread(
        tools=[WEATHER_TOOL],
        messages=[user()],
        tool_calls=[call("call_1|fc_1", 1), call("call_2|xx_2", 2)],
    )
    fcs = [i for i in render_body(t)["input"] if i.get("type") == "function_call"]
    assert [("id" in fc) for fc in fcs] == [False, False]


def test_reasoning_then_function_call_round_trip_keeps_the_fc_id():
    fp = prefix_fingerprint(thread(tools=[WEATHER_TOOL], messages=[user()]), REPLAY)
    t = thread(
        tools=[WEATHER_TOOL],
        messages=[user()],
        thoughts=[reasoning_thought("rs_1", 1, fingerprint=fp, paired="fc_1", seq=0)],
        tool_calls=[call("call_1|fc_1", 1, seq=1), call("call_2|fc_2", 1, seq=2)],
    )
    items = render_body(t, REPLAY)["input"]
    assert [i.get("type") for i in items] == [
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "function_call",
        "function_call_output",
    ]
    assert items[2]["id"] == "fc_1"
    assert "id" not in items[4]


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


def assert_stage_fingerprints(
    rendered: Any,
    container: turnwire.Container,
    throughs: Any,
    *,
    model: str = "gpt-5",
    binding: str = "prefix",
) -> None:
    """``prefix_fingerprint`` (resumed from the memo's checkpoints) equals the built-in stage's
    fingerprint of ``rendered``'s input at each of ``throughs``."""
    from turnwire.config.options import Endpoint
    from turnwire.stages.fingerprint import fingerprint_prefix

    items = rendered.rendered.input
    for through in throughs:
        expected = fingerprint_prefix(
            model=model,
            instructions=rendered.rendered.instructions,
            tools=rendered.rendered.tools,
            input=items,
            through_item=through,
            fingerprint_binding=binding,
            endpoint=Endpoint(),
            scratch={},
        )
        got = turnwire.api.prefix_fingerprint(
            rendered.rendered, container=container, model=model, through_item=through
        )
        assert got == expected, through


@pytest.mark.parametrize("binding", ["prefix", "model"])
def test_prefix_fingerprints_from_checkpoints_equal_the_stage(binding):
    settings = {"render": {**REPLAY["render"], "fingerprint_binding": binding}}
    container = make_container(settings)
    thread = _growing_thread(4)
    first = turnwire.api.render(thread, container=container)
    wildcard = _MatchesAny("*")
    with overriding(container.fingerprint_prefix, lambda: wildcard):
        accepted = turnwire.api.render(thread, container=container)
    for rendered in (first, accepted):
        size = len(rendered.rendered.input)
        throughs = {0, 1, 3, size // 2, rendered.fingerprintable_length}
        assert_stage_fingerprints(rendered, container, throughs, binding=binding)
    assert turnwire.api.prefix_fingerprint(
        first.rendered, container=container, model="gpt-5"
    ) == turnwire.api.prefix_fingerprint(
        first.rendered,
        container=container,
        model="gpt-5",
        through_item=first.fingerprintable_length,
    )


def test_a_long_sweep_resumes_and_fingerprints_where_a_checkpoint_kept_its_hash():
    """A long sweep keeps checkpoints, each with its hash state, at some candidates only
    (every eighth, and the last sixteen): a render resumed in the middle, and prefix
    fingerprints at any item, start from the nearest one before, and give the cold render's
    bytes and the stage's fingerprints."""
    container = make_container(REPLAY)
    thread = _growing_thread(40)
    turnwire.api.render(thread, container=container)
    memo = container.render_memo()
    (state,) = memo.sweeps._data.values()
    assert len(state.candidates[0]) == 80
    assert [checkpoint.position for checkpoint in state.checkpoints] == [
        *range(0, 64, 8),
        *range(64, 80),
    ]
    assert all(checkpoint.hasher is not None for checkpoint in state.checkpoints)
    assert state.indexes == [checkpoint.index for checkpoint in state.checkpoints]
    assert state.hashed == [checkpoint.hashed for checkpoint in state.checkpoints]

    # an answer in the middle changes: the sweep resumes before it, from a kept hash state
    messages = list(thread.messages)
    middle = next(i for i, m in enumerate(messages) if m.id == "msg_13")
    messages[middle] = msgspec.structs.replace(messages[middle], content="changed")
    edited = msgspec.structs.replace(thread, messages=tuple(messages))
    resumed: list[Any] = []
    real_sweep = pipeline._sweep

    def sweep(*args: Any, **kwargs: Any) -> Any:
        result = real_sweep(*args, **kwargs)
        resumed.append(result[1])
        return result

    with mock.patch.object(pipeline, "_sweep", sweep):
        warm = turnwire.api.render(edited, container=container)
    with overriding(container.render_memo, None):
        cold = turnwire.api.render(edited, container=container)
    assert warm.body == cold.body and warm.rendered.warnings == cold.rendered.warnings
    assert resumed[0] is not None and 0 < resumed[0][1] < len(cold.rendered.input) // 2

    assert_stage_fingerprints(warm, container, range(0, len(warm.rendered.input) + 1, 7))


def test_a_growing_thread_keeps_hash_states_as_sparse_as_a_sweep_from_the_start():
    """Each render of a thread grown by one exchange resumes the last sweep; the checkpoints
    its new candidates push out of the dense tail are dropped again, so what is kept stays
    every eighth candidate plus the last sixteen, each with its hash state, and the bisection
    lists stay those of the kept checkpoints."""
    container = make_container(REPLAY)
    full = _growing_thread(30)
    per_cycle = {"messages": 2, "thoughts": 4, "tool_calls": 1, "hosted_items": 0}
    for cycles in range(5, 31):
        grown = msgspec.structs.replace(
            full, **{field: getattr(full, field)[: n * cycles] for field, n in per_cycle.items()}
        )
        turnwire.api.render(grown, container=container)
        (state,) = container.render_memo().sweeps._data.values()
        candidates = len(state.candidates[0])
        expected = [p for p in range(candidates) if p % 8 == 0 or p >= candidates - 16]
        assert [c.position for c in state.checkpoints] == expected, cycles
        assert all(checkpoint.hasher is not None for checkpoint in state.checkpoints)
        assert state.indexes == [checkpoint.index for checkpoint in state.checkpoints]
        assert state.hashed == [checkpoint.hashed for checkpoint in state.checkpoints]


class _SaltedHashing:
    """Resumable hashing declared by a replacement fingerprint stage: the sweep must take the
    same path for it as for the built-in (keyed by it, hashing its way)."""

    head = b'salted:{"input":['

    @staticmethod
    def items(items: Any) -> bytes:
        from turnwire.stages.fingerprint import canonical_items

        return canonical_items(items)

    @staticmethod
    def tail(model: str, instructions: Any, tools: Any) -> bytes:
        from turnwire.stages.fingerprint import prefix_tail

        return prefix_tail(model, instructions, tools)

    @staticmethod
    def applies(fingerprint_binding: str) -> bool:
        return fingerprint_binding == "prefix"


def _salted_fingerprint(
    model: Any, instructions: Any, tools: Any, input: Any, through_item: int
) -> str:
    import hashlib

    hasher = hashlib.sha256(_SaltedHashing.head)
    hasher.update(_SaltedHashing.items(input[:through_item]))
    hasher.update(_SaltedHashing.tail(model, instructions, tools))
    return hasher.hexdigest()


_salted_fingerprint.resumable = _SaltedHashing()  # type: ignore[attr-defined]


def test_a_replacement_that_declares_resumable_hashing_takes_the_built_ins_path():
    from dependency_injector import providers

    container = make_container(REPLAY)
    stage = _salted_fingerprint
    container.fingerprint_prefix.override(providers.Object(stage))
    plan = container.stage_plan()
    assert plan.declared("fingerprint_prefix", "resumable") is stage.resumable
    thread = _growing_thread(4)
    turnwire.api.render(thread, container=container)
    warm = turnwire.api.render(thread, container=container)
    keys = list(container.render_memo().sweeps._data)
    assert keys and all(key[0] == ("declared", stage) for key in keys)
    with overriding(container.render_memo, None):
        cold = turnwire.api.render(thread, container=container)
    assert warm.body == cold.body
    # a request fingerprint resumed from the sweep's hash states is the stage's own
    rendered = warm.rendered
    options = container.render_options()
    through = len(rendered.input) - 1
    resumed = pipeline.prefix_fingerprint(
        rendered, through, plan=plan, options=options, render_memo=container.render_memo()
    )
    assert resumed == _salted_fingerprint(
        options.model, rendered.instructions, rendered.tools, rendered.input, through
    )


FP_STEPS = st.one_of(
    st.tuples(st.just("append"), st.sampled_from([{"x": 1}, {"q": "a"}]), st.just(False)),
    st.tuples(st.just("edit"), st.integers(0, 400), st.text("ab", min_size=1, max_size=2)),
    st.tuples(st.just("remove"), st.integers(0, 400)),
    st.tuples(st.just("pending"), st.booleans()),
    st.tuples(st.just("pend-all"), st.booleans()),
    st.tuples(st.just("pend-all"), st.booleans()),
    st.tuples(st.just("model"), st.sampled_from(["gpt-5", "gpt-5-mini"])),
    st.tuples(st.just("fp"), st.lists(st.floats(0, 1.2), min_size=1, max_size=4), st.booleans()),
)


@settings(**{**FUZZ, "max_examples": max(5, FUZZ["max_examples"] // 2)})
@given(st.integers(10, 40), st.lists(FP_STEPS, min_size=1, max_size=6))
def test_a_long_sweep_renders_warm_as_cold_and_its_prefix_fingerprints_equal_the_stage(
    cycles, steps
):
    container = make_container(REPLAY)
    with tempfile.TemporaryDirectory() as folder:
        scenario = _HostileScenario(Path(folder))
        for n in range(cycles):
            scenario.append({"q": n}, False)
        renders: list[Any] = []
        for step in [("system", ""), ("pend-all", True), *steps]:
            if step[0] == "fp":
                fractions, older = step[1], step[2]
                if not renders:
                    continue
                rendered = renders[0] if older else renders[-1]
                size = len(rendered.rendered.input)
                throughs = [int(fraction * size) for fraction in fractions]
                assert_stage_fingerprints(
                    rendered, container, throughs, model=rendered.json["model"]
                )
                continue
            if scenario.cycles >= 48 and step[0] == "append":
                continue
            scenario.edit(*step)
            thread = scenario.thread()
            pending = frozenset(scenario.pending)
            try:
                warm = turnwire.api.render(thread, container=container, pending_reasoning=pending)
            except turnwire.TurnwireError as err:
                warm = err
            with overriding(container.render_memo, None):
                try:
                    cold = turnwire.api.render(
                        thread, container=container, pending_reasoning=pending
                    )
                except turnwire.TurnwireError as err:
                    cold = err
            if isinstance(cold, Exception):
                assert str(warm) == str(cold)
                continue
            assert warm.body == cold.body, step
            assert warm.rendered.warnings == cold.rendered.warnings, step
            assert warm.rendered.stamped == cold.rendered.stamped, step
            assert warm.fingerprintable_length == cold.fingerprintable_length
            renders.append(warm)
            if pending:
                scenario.stamp(cold.rendered.stamped)


_EPOCH = datetime(2026, 1, 1, 10, 0, 0)


def _when(n: int, ms: int = 0) -> str:
    """A timestamp for exchange ``n`` (``conftest.at`` stops at second 59)."""
    moment = _EPOCH + timedelta(seconds=10 + n, milliseconds=ms)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _custom_fingerprint(model: str, instructions: Any, input: Any, through_item: int) -> str:
    """A ``fingerprint_prefix`` of its own (not the built-in hasher: dense checkpoints)."""
    text = msgspec.json.encode([model, instructions, list(input[:through_item])])
    return hashlib.sha256(b"custom" + text).hexdigest()


@hookimpl(tryfirst=True)
def _plugin_fingerprint(model: str, input: Any, through_item: int) -> str:
    text = msgspec.json.encode([model, list(input[:through_item])])
    return hashlib.sha256(b"plugin" + text).hexdigest()


_FP_PLUGIN = SimpleNamespace(fingerprint_prefix=_plugin_fingerprint)


class _Long(_HostileScenario):
    """A scenario whose exchanges can number past 50, with or without hosted items, and with
    reasoning edits of its own."""

    def __init__(self, folder: Path, *, hosted: bool, first: int, decoded: dict[Any, Any]):
        super().__init__(folder)
        self.hosted = hosted
        self.first = first
        self.cycles = first
        self.decoded = decoded  # shared between threads: same records, same objects

    def append(self, args: Any, with_file: bool) -> None:
        n = self.cycles
        self.cycles += 1
        for field, records in _cycle(n, 0, args, None).items():
            if field == "hosted_items" and not self.hosted:
                continue
            for record in records:
                record["created_at"] = _when(n)
            self.records[field] += records

    def fork(self, first: int) -> _Long:
        """Another thread with this one's records (the same objects once decoded)."""
        other = _Long(self.folder, hosted=self.hosted, first=first, decoded=self.decoded)
        other.records = {field: list(records) for field, records in self.records.items()}
        other.cycles = self.cycles
        other.compactions = self.compactions + 100
        other.pending = set(self.pending)
        other.system = self.system
        other.model = self.model
        other.trusted = self.trusted
        other.replay_off = self.replay_off
        return other

    def edit(self, kind: str, *values: Any) -> None:
        if kind == "grow":
            for _ in range(values[0]):
                self.append({"q": self.cycles}, False)
        elif kind == "thought":
            self._thought(*values)
        elif kind == "compact":
            after = self.first + values[0] % max(1, self.cycles - self.first)
            self.records["hosted_items"].append(compaction(self.compactions, _when(after, 500)))
            self.compactions += 1
        else:
            super().edit(kind, *values)

    def _thought(self, index: int, how: str) -> None:
        replayable = [i for i, r in enumerate(self.records["thoughts"]) if r.get("payload")]
        if not replayable:
            return
        at = replayable[index % len(replayable)]
        record = self.records["thoughts"][at]
        payload = dict(record["payload"])
        if how == "stale":
            payload["prefix_fingerprint"] = "0" * 64
        elif how == "none":
            payload["prefix_fingerprint"] = None
        elif how == "wrong-partner":
            payload["paired_item_id"] = "fc_elsewhere"
        elif how == "no-recorded-partner":
            payload["paired_item_id"] = None
        elif how == "pending":
            payload["prefix_fingerprint"] = PENDING_FINGERPRINT
            self.pending.add(record["id"])
        elif how == "pending-unlisted":  # marked, but not among the run's pending ids
            payload["prefix_fingerprint"] = PENDING_FINGERPRINT
            self.pending.discard(record["id"])
        self.records["thoughts"][at] = {**record, "payload": payload}


INDEX = st.integers(0, 5000)


LONG_EDITS = st.one_of(
    st.tuples(st.just("grow"), st.integers(1, 6)),
    st.tuples(st.just("append"), ARGS, st.just(False)),
    st.tuples(st.just("edit"), INDEX, st.text("ab<", min_size=1, max_size=2)),
    st.tuples(st.just("args"), INDEX, ARGS),
    st.tuples(st.just("remove"), INDEX),
    st.tuples(st.just("insert-early"), INDEX),
    st.tuples(st.just("pending"), st.booleans()),
    st.tuples(st.just("pend-all"), st.booleans()),
    st.tuples(
        st.just("thought"),
        INDEX,
        st.sampled_from(
            ["stale", "none", "wrong-partner", "no-recorded-partner", "pending", "pending-unlisted"]
        ),
    ),
    st.tuples(st.just("system"), st.sampled_from(["", "Be brief."])),
    st.tuples(st.just("model"), st.sampled_from(["gpt-5", "gpt-5-mini"])),
    st.tuples(st.just("compact"), INDEX),
    st.tuples(
        st.just("dup"),
        INDEX,
        st.sampled_from(["messages", "thoughts", "tool_calls"]),
        st.integers(1, 55),
    ),
)


LONG_CHANGES = st.one_of(
    st.tuples(
        st.just("fpstage"),
        st.sampled_from(["builtin", "model-binding", "custom", "plugin", "wildcard"]),
    ),
    st.tuples(st.just("trust-unfingerprinted"), st.booleans()),
    st.tuples(st.just("replay-off"), st.booleans()),
    st.tuples(st.just("secret"), st.sampled_from([None, "s1"])),
)


THREAD_STEPS = st.one_of(
    st.tuples(st.just("switch"), st.integers(0, 3)),
    st.tuples(st.just("fork"), st.booleans()),
)


FP_CHECK = st.tuples(
    st.just("fp"), st.lists(st.floats(0, 1.1), min_size=1, max_size=4), st.booleans()
)


def _set_fingerprint_stage(
    container: Any, stack: contextlib.ExitStack, active: dict[str, Any], which: str
) -> None:
    previous = active.pop("fpstage", None)
    if previous is not None:
        previous.close()
    manager = container.plugin_manager()
    if manager.is_registered(_FP_PLUGIN):
        manager.unregister(_FP_PLUGIN)
    scope = contextlib.ExitStack()
    stack.enter_context(scope)
    if which == "model-binding":
        scope.enter_context(overriding(container.fingerprint_binding, "model"))
    elif which == "custom":
        scope.enter_context(overriding(container.fingerprint_prefix, _custom_fingerprint))
    elif which == "plugin":
        manager.register(_FP_PLUGIN)
        scope.callback(lambda: manager.is_registered(_FP_PLUGIN) and manager.unregister(_FP_PLUGIN))
    elif which == "wildcard":
        wildcard = _MatchesAny("*")
        scope.enter_context(overriding(container.fingerprint_prefix, lambda: wildcard))
    active["fpstage"] = scope
    active["fpstage-kind"] = which


def _check_fingerprints(rendered: Any, container: Any, fractions: list[float], which: str) -> None:
    """``turnwire.api.prefix_fingerprint`` of ``rendered`` at some cuts equals what the
    container's current ``fingerprint_prefix`` stage gives there."""
    items = rendered.rendered.input
    model = rendered.json["model"]
    throughs = sorted({min(len(items), int(f * len(items))) for f in fractions})
    if which in ("builtin", "model-binding"):
        binding = "model" if which == "model-binding" else "prefix"
        assert_stage_fingerprints(rendered, container, throughs, model=model, binding=binding)
        return
    for through in throughs:
        got = turnwire.api.prefix_fingerprint(
            rendered.rendered, container=container, model=model, through_item=through
        )
        if which == "custom":
            expected = _custom_fingerprint(model, rendered.rendered.instructions, items, through)
        elif which == "plugin":
            expected = _plugin_fingerprint(model, items, through)
        else:
            expected = "*"
        assert got == expected, (which, through)


def _check_sweep_states(container: Any) -> None:
    """Every kept sweep state is one a resumed sweep can trust: its bisection lists are those
    of its checkpoints, positions increase, and with the built-in hasher each checkpoint's
    hash state is the hash of the very items it says it covers, only at the candidates the
    sparse rule keeps (every eighth, the last sixteen: nothing a resumed sweep left behind);
    with any other stage no checkpoint holds a hash state."""
    for key, state in container.render_memo().sweeps._data.items():
        checkpoints = state.checkpoints
        assert state.indexes == [c.index for c in checkpoints], key
        assert state.hashed == [c.hashed for c in checkpoints], key
        positions = [c.position for c in checkpoints]
        assert positions == sorted(set(positions)), key
        # the candidate lists may be a timeline's, grown since: those of the swept items
        indexes, _, offset = state.candidates
        count = bisect.bisect_left(indexes, state.item_count - offset)
        assert all(c.hashed <= c.out_length <= len(state.out) for c in checkpoints)
        if key[0][0] == "declared" and key[2] == "prefix":
            stray = [p for p in positions if p % 8 and p < count - 16]
            assert not stray, (stray, count)
            for checkpoint in checkpoints:
                expected = hashlib.sha256(PREFIX_HEAD)
                if checkpoint.hashed:
                    expected.update(canonical_items(state.out[: checkpoint.hashed]))
                assert checkpoint.hasher.hexdigest() == expected.hexdigest(), checkpoint
        else:
            assert all(c.hasher is None for c in checkpoints), key


def _run_long(spec: list[tuple[bool, int]], steps: list[tuple[Any, ...]]) -> None:
    container = make_container(REPLAY)
    with tempfile.TemporaryDirectory() as folder, contextlib.ExitStack() as stack:
        decoded: dict[Any, Any] = {}
        threads = []
        for k, (hosted, cycles) in enumerate(spec):
            scenario = _Long(Path(folder), hosted=hosted, first=1000 * k, decoded=decoded)
            for n in range(cycles):
                scenario.append({"q": n % 3}, False)
            threads.append(scenario)
        current = 0
        active: dict[str, Any] = {"fpstage-kind": "builtin"}
        renders: list[Any] = []
        # each thread is first rendered with all its reasoning pending, then stamped: real
        # fingerprints, so most reasoning pairs and the hasher runs
        for scenario in threads:
            scenario.edit("pend-all", True)
            check_step(container, scenario, ("pend-all", True))
        for step in steps:
            kind = step[0]
            scenario = threads[current]
            if kind == "switch":
                current = step[1] % len(threads)
                scenario = threads[current]
            elif kind == "fork":
                if len(threads) < 4:
                    threads.append(scenario.fork(1000 * len(threads)) if step[1] else scenario)
                    current = len(threads) - 1
                    scenario = threads[current]
            elif kind == "fp":
                if renders:
                    rendered = renders[0 if step[2] else -1]
                    _check_fingerprints(rendered, container, step[1], active["fpstage-kind"])
                continue
            elif kind == "fpstage":
                _set_fingerprint_stage(container, stack, active, step[1])
            elif kind in ("trust-unfingerprinted", "replay-off", "secret"):
                _apply(step, container, scenario, stack, active)
                if kind == "replay-off":
                    for other in threads:
                        other.replay_off = step[1]
            else:
                scenario.edit(*step)
            check_step(container, scenario, step)
            _check_sweep_states(container)
            # what a client keeps of it: the render, for prefix fingerprints later
            thread = scenario.thread()
            pending = frozenset(scenario.pending)
            warm = _outcome(container, thread, scenario.replay_off, (), pending)
            with overriding(container.render_memo, None):
                cold = _outcome(container, thread, scenario.replay_off, (), pending)
            assert warm == cold, step
            if warm[0] != "error":
                renders.append(
                    turnwire.api.render(
                        thread,
                        container=container,
                        reasoning_replay="off" if scenario.replay_off else None,
                        pending_reasoning=pending,
                    )
                )
                renders[:] = renders[-6:]


LONG_EXAMPLES = int(os.environ.get("LONG_THREAD_EXAMPLES", "25"))


LONG_STEPS = int(os.environ.get("LONG_THREAD_STEPS", "8"))


LONG_FUZZ = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}


SPEC_ONE = st.lists(st.tuples(st.booleans(), st.integers(20, 60)), min_size=1, max_size=1)


SPEC_MANY = st.lists(st.tuples(st.booleans(), st.integers(20, 45)), min_size=2, max_size=3)


@settings(max_examples=LONG_EXAMPLES, **LONG_FUZZ)
@given(
    SPEC_ONE, st.lists(st.one_of(LONG_EDITS, LONG_EDITS, FP_CHECK), min_size=1, max_size=LONG_STEPS)
)
def test_a_long_thread_edited_grown_and_restamped_renders_warm_as_cold(spec, steps):
    _run_long(spec, steps)


@settings(max_examples=max(5, LONG_EXAMPLES // 2), **LONG_FUZZ)
@given(
    SPEC_ONE,
    st.lists(st.one_of(LONG_EDITS, LONG_CHANGES, FP_CHECK), min_size=1, max_size=LONG_STEPS),
)
def test_a_long_thread_under_other_fingerprint_stages_renders_warm_as_cold(spec, steps):
    _run_long(spec, steps)


@settings(max_examples=max(5, LONG_EXAMPLES // 2), **LONG_FUZZ)
@given(
    SPEC_MANY,
    st.sampled_from([0, 16, 256]),
    st.lists(
        st.one_of(THREAD_STEPS, THREAD_STEPS, LONG_EDITS, LONG_CHANGES, FP_CHECK),
        min_size=2,
        max_size=LONG_STEPS + 2,
    ),
)
def test_threads_that_alternate_in_one_container_render_warm_as_cold(spec, spare, steps):
    # a small spare: the record tables forget other threads' records (columns unmade or not)
    with mock.patch.object(incremental_timeline, "_SPARE_RECORDS", spare):
        _run_long(spec, steps)


CONCURRENT_STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("grow"), st.integers(1, 4)),
        st.tuples(st.just("edit"), INDEX, st.just("b")),
        st.tuples(st.just("pend-all"), st.booleans()),
        st.tuples(st.just("pending"), st.booleans()),
    ),
    min_size=3,
    max_size=8,
)


@settings(max_examples=max(3, LONG_EXAMPLES // 5), **LONG_FUZZ)
@given(
    st.lists(
        st.tuples(st.booleans(), st.integers(20, 40), CONCURRENT_STEPS), min_size=2, max_size=3
    )
)
def test_threads_rendering_into_one_memo_at_once_render_as_cold(workers):
    """Python threads render their own threads through one container at once (the memo's
    lock serialises each render): every warm outcome is the cold one of another container."""
    import threading

    container = make_container(REPLAY)
    cold_container = make_container(REPLAY)
    failures: list[Any] = []
    with tempfile.TemporaryDirectory() as folder, overriding(cold_container.render_memo, None):

        def work(k: int, hosted: bool, cycles: int, steps: list[Any]) -> None:
            try:
                scenario = _Long(Path(folder), hosted=hosted, first=1000 * k, decoded={})
                for n in range(cycles):
                    scenario.append({"q": n % 3}, False)
                for step in [("pend-all", True), *steps]:
                    scenario.edit(*step)
                    thread = scenario.thread()
                    pending = frozenset(scenario.pending)
                    warm = _outcome(container, thread, False, (), pending)
                    cold = _outcome(cold_container, thread, False, (), pending)
                    if warm != cold:
                        failures.append((k, step))
                        return
                    if pending and cold[0] != "error":
                        scenario.stamp(cold[3])
            except Exception as error:
                failures.append((k, repr(error)))

        pool = [
            threading.Thread(target=work, args=(k, hosted, cycles, steps))
            for k, (hosted, cycles, steps) in enumerate(workers)
        ]
        for thread in pool:
            thread.start()
        for thread in pool:
            thread.join()
    assert not failures


def test_ids_are_sent_only_where_the_api_can_check_them():
    """Reference: own messages and calls keep ids with no reasoning before them."""
    t = thread(
        tools=[{"name": "s"}],
        messages=[user(), assistant("msg_1", "a", 3)],
        tool_calls=[
            {"id": "call_1|fc_1", "tool": "s", "created_at": at(1), "result": {"text": "r"}}
        ],
    )
    assert all("id" not in item for item in render_body(t)["input"])


def test_model_binding_keeps_replay_when_the_prefix_changes():
    """Reference: any change to instructions or earlier items drops all earlier reasoning."""
    settings = {"render": {**REPLAY["render"], "fingerprint_binding": "model"}}
    fp = prefix_fingerprint(thread(messages=[user()]), settings)
    t = thread(
        system_prompt="a new system prompt",
        memories=[{"id": "m", "content": "new"}],
        messages=[user(), assistant("msg_1", "a", 2, seq=1)],
        thoughts=[reasoning_thought("rs_1", 2, fingerprint=fp, paired="msg_1")],
    )
    kinds = [i.get("type") for i in render_body(t, settings)["input"]]
    assert kinds == ["message", "reasoning", "message"]
    assert all(i.get("type") != "reasoning" for i in render_body(t, REPLAY)["input"])
