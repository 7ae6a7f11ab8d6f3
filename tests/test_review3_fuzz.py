"""Review 3 fuzzer: the warm differential test with warning, failing, lazy and list-returning
stages, media that fails or warns in both messages and tool results, container overrides of
per-record stages, and tracing; each render compared with a cold one and a record-by-record one.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import turnwire
from turnwire.config.options import MediaPolicy
from turnwire.config.settings import merge
from turnwire.hookspecs import hookimpl
from turnwire.rendering.container import overriding
from turnwire.rendering.sweep import PENDING_FINGERPRINT
from turnwire.wire import InputMessage

from .conftest import REPLAY, at, make_container
from .test_review3 import AUDIO
from .test_warm_render import (
    CHANGES,
    EDITS,
    _apply,
    _Scenario,
    assert_stage_fingerprints,
    check_step,
)


@hookimpl(tryfirst=True)
def _lazy_message(message: Any, stages: Any) -> Any:
    if message.role != "user":
        return None

    def items() -> Any:
        for media in message.attachments:
            stages.render_media_blocks(media=media)
        yield InputMessage(role="user", content=f"lazy {message.content}")

    return items()


@hookimpl(tryfirst=True)
def _list_message(message: Any, stages: Any) -> Any:
    if message.role != "user":
        return None
    if message.id.endswith("7"):
        return []
    return [InputMessage(role="user", content=f"list {message.content}")]


@hookimpl(tryfirst=True)
def _warning_call(tool_call: Any, warn: Any) -> Any:
    warn(f"call {tool_call.id}")
    return None  # the built-in stage renders it


@hookimpl(tryfirst=True)
def _no_reasoning_for_some(thought: Any) -> Any:
    return None


@hookimpl(tryfirst=True)
def _warning_hosted(hosted_item: Any, warn: Any) -> Any:
    warn(f"hosted {hosted_item.id}")
    return None


PLUGINS = {
    "lazy": SimpleNamespace(render_timeline_message=_lazy_message),
    "list": SimpleNamespace(render_timeline_message=_list_message),
    "callwarn": SimpleNamespace(render_tool_call_result=_warning_call),
    "hostedwarn": SimpleNamespace(render_hosted_item=_warning_hosted),
}


def _override_message(message: Any, self_identity: str) -> Any:
    return (InputMessage(role="user", content=f"[{self_identity}] {message.id}"),)


class _Review(_Scenario):
    def edit(self, kind: str, *values: Any) -> None:
        if kind == "audio-msg":
            second, name = values
            n = self.cycles
            self.cycles += 1
            self.records["messages"].append(
                {
                    "id": f"au{n}",
                    "role": "user",
                    "content": "listen",
                    "created_at": at(second),
                    "seq": 7,
                    "attachments": [
                        {
                            "id": f"aa{n}",
                            "kind": "audio",
                            "mime_type": "audio/wav",
                            "filename": name,
                            "data_base64": AUDIO,
                        }
                    ],
                }
            )
        elif kind == "audio-call":
            second, name = values
            n = self.cycles
            self.cycles += 1
            self.records["tool_calls"].append(
                {
                    "id": f"call_a{n}",
                    "tool": "lookup",
                    "args": {},
                    "created_at": at(second),
                    "seq": 8,
                    "result": {
                        "media": [
                            {
                                "id": f"ac{n}",
                                "kind": "audio",
                                "mime_type": "audio/wav",
                                "filename": name,
                                "data_base64": AUDIO,
                            }
                        ]
                    },
                }
            )
        elif kind == "dup":
            # a record of another kind (or the same) with an id some record already has
            flat = [(f, i) for f, rs in self.records.items() for i in range(len(rs))]
            if not flat:
                return
            field, index = flat[values[0] % len(flat)]
            rid = self.records[field][index]["id"]
            target = values[1]
            if target == "messages":
                self.records["messages"].append(
                    {
                        "id": rid,
                        "role": "user",
                        "content": f"dup {rid}",
                        "created_at": at(values[2]),
                    }
                )
            elif target == "thoughts":
                self.records["thoughts"].append(
                    {"id": rid, "content": f"dup {rid}", "created_at": at(values[2]), "seq": 6}
                )
            else:
                self.records["tool_calls"].append(
                    {
                        "id": rid if "|" not in rid else rid + "x",
                        "tool": "lookup",
                        "args": {},
                        "created_at": at(values[2]),
                        "seq": 6,
                        "result": {"text": "dup"},
                    }
                )
        elif kind == "pend-all":
            # every replayable thought pending (as a run records them), stamped by the render
            for index, record in enumerate(self.records["thoughts"]):
                payload = record.get("payload")
                if payload is not None and (values[0] or index % 3):
                    stamped = {**payload, "prefix_fingerprint": PENDING_FINGERPRINT}
                    self.records["thoughts"][index] = {**record, "payload": stamped}
                    self.pending.add(record["id"])
        else:
            super().edit(kind, *values)


MORE_EDITS = st.one_of(
    EDITS,
    st.tuples(st.just("audio-msg"), st.integers(1, 55), st.sampled_from(["m.wav", "n.wav"])),
    st.tuples(st.just("audio-call"), st.integers(1, 55), st.sampled_from(["c.wav", "d.wav"])),
    st.tuples(st.just("pend-all"), st.booleans()),
    st.tuples(
        st.just("dup"),
        st.integers(0, 400),
        st.sampled_from(["messages", "thoughts", "tool_calls"]),
        st.integers(1, 55),
    ),
)
MORE_CHANGES = st.one_of(
    CHANGES,
    st.tuples(st.just("p:" + "lazy"), st.booleans()),
    st.tuples(st.just("p:" + "list"), st.booleans()),
    st.tuples(st.just("p:" + "callwarn"), st.booleans()),
    st.tuples(st.just("p:" + "hostedwarn"), st.booleans()),
    st.tuples(
        st.just("policy"), st.sampled_from(["throw", "fallback-stash", "synthetic-description"])
    ),
    st.tuples(st.just("override-msg"), st.booleans()),
    st.tuples(st.just("override-reasoning"), st.booleans()),
)
_OWN = {"policy", "override-msg", "override-reasoning"}
_THEIRS = {
    "plugin",
    "override",
    "wrapper",
    "wildcard",
    "secret",
    "identity",
    "trust-unfingerprinted",
    "replay-off",
    "inline-limit",
}


def _own(change: tuple[Any, ...], container: Any, stack: Any, active: dict[str, Any]) -> None:
    kind, value = change
    if kind.startswith("p:"):
        manager = container.plugin_manager()
        plugin = PLUGINS[kind[2:]]
        if value and not manager.is_registered(plugin):
            manager.register(plugin)
        elif not value and manager.is_registered(plugin):
            manager.unregister(plugin)
        return
    previous = active.pop(kind, None)
    if previous is not None:
        previous.close()
    scope = contextlib.ExitStack()
    stack.enter_context(scope)
    if kind == "policy":
        scope.enter_context(
            overriding(container.unsupported_media_policy, MediaPolicy(default=value))
        )
    elif kind == "override-msg" and value:
        scope.enter_context(overriding(container.render_timeline_message, _override_message))
    elif kind == "override-reasoning" and value:
        scope.enter_context(overriding(container.render_reasoning_item, lambda thought: None))
    active[kind] = scope


def _run(start: Any, steps: Any, trace: bool) -> None:
    container = make_container(merge(REPLAY, {"plugins": {"trace": trace}}) if trace else REPLAY)
    with tempfile.TemporaryDirectory() as folder, contextlib.ExitStack() as stack:
        scenario = _Review(Path(folder))
        for args, with_file in start:
            scenario.append(args, with_file)
        active: dict[str, Any] = {}
        for step in [("system", ""), *steps]:
            if step[0] in _THEIRS:
                _apply(step, container, scenario, stack, active)
            elif step[0] in _OWN or step[0].startswith("p:"):
                _own(step, container, stack, active)
            else:
                scenario.edit(*step)
            check_step(container, scenario, step)


FUZZ = {
    "max_examples": int(os.environ.get("REVIEW3_EXAMPLES", "40")),
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}
START = st.lists(st.tuples(st.sampled_from([{"x": 1}, {"q": "a"}]), st.booleans()), max_size=4)


@settings(**FUZZ)
@given(START, st.lists(st.one_of(MORE_EDITS, MORE_CHANGES), min_size=1, max_size=12))
# a plain thought sharing the id of a pending one (the harness once stamped it)
@example([({"x": 1}, False)], [("dup", 333, "thoughts", 1), ("pend-all", False)])
def test_review3_warm_is_cold(start, steps):
    _run(start, steps, trace=False)


@settings(**{**FUZZ, "max_examples": max(5, FUZZ["max_examples"] // 4)})
@given(START, st.lists(st.one_of(MORE_EDITS, MORE_CHANGES), min_size=1, max_size=8))
def test_review3_warm_is_cold_traced(start, steps):
    _run(start, steps, trace=True)


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
def test_review3_long_sweeps_and_prefix_fingerprints(cycles, steps):
    container = make_container(REPLAY)
    with tempfile.TemporaryDirectory() as folder:
        scenario = _Review(Path(folder))
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
