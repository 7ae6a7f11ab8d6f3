"""The warm renderer: a render through a container's memo is byte for byte a cold render.

The differential property drives one warm container through random sequences of thread edits
(appends, edits in place, early inserts, removals, argument values equal under ``==`` but not on
the wire, a file pointer whose bytes change), stage changes (a plugin registered and
unregistered, a container provider override, a wrapper, the client's wildcard fingerprint) and
option and secret changes, and after every step compares its body bytes, warnings and errors
with a render of the same container without any memo.

``WARM_EXAMPLES`` sets the number of examples (60); ``WARM_EXTRA=1`` adds an MCP listing and a
second web search to every third cycle.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from unittest import mock

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import turnwire
from turnwire.config.nonce import EnvelopeNonce
from turnwire.hookspecs import hookimpl
from turnwire.rendering import pipeline
from turnwire.rendering._incremental import timeline as incremental_timeline
from turnwire.rendering._incremental.memo import RenderMemo, stage_key
from turnwire.rendering.body import checked_body, encode_body
from turnwire.rendering.container import overriding
from turnwire.rendering.preflight import preflight
from turnwire.rendering.sweep import PENDING_FINGERPRINT

from .conftest import REPLAY, at, make_container

TOOLS = [{"name": "lookup"}, {"name": "trusted_lookup", "trusted": True}]
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))


class _MatchesAny(str):
    """The client's wildcard fingerprint (client/assembly.py): equal to every string."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return True

    def __ne__(self, other: object) -> bool:
        return False

    __hash__ = str.__hash__


def _cycle(n: int, second: int, args: Any, media: dict[str, Any] | None) -> dict[str, list[Any]]:
    """One exchange: a question (maybe with an attachment), reasoning, a call, an answer."""
    question: dict[str, Any] = {
        "id": f"u{n}",
        "role": "user",
        "content": f"question {n} <b>",
        "created_at": at(second),
    }
    if media is not None:
        question["attachments"] = [media]
    return {
        "messages": [
            question,
            {
                "id": f"msg_{n}",
                "role": "assistant",
                "content": f"answer {n}",
                "created_at": at(second),
                "seq": 3,
            },
        ],
        "thoughts": [
            {
                "id": f"rs_{n}",
                "created_at": at(second),
                "seq": 1,
                "replay_compatibility": "openai-responses-reasoning-v1",
                "payload": {
                    "variant": "responses-reasoning",
                    "paired_item_id": f"fc_{n}",
                    "prefix_fingerprint": None if n % 2 else "0" * 64,
                    "item": {
                        "type": "reasoning",
                        "id": f"rs_{n}",
                        "summary": [{"type": "summary_text", "text": f"plan {n}"}],
                        "encrypted_content": "gAAAA",
                    },
                },
            },
            {"id": f"t{n}", "content": f"aside {n}", "created_at": at(second), "seq": 4},
            {
                "id": f"rs_w{n}",
                "created_at": at(second),
                "seq": 5,
                "replay_compatibility": "openai-responses-reasoning-v1",
                "payload": {
                    "variant": "responses-reasoning",
                    "paired_item_id": f"ws_{n}",
                    "prefix_fingerprint": None if n % 2 else "0" * 64,
                    "item": {
                        "type": "reasoning",
                        "id": f"rs_w{n}",
                        "summary": [],
                        "encrypted_content": "gAAAA",
                    },
                },
            },
        ],
        "tool_calls": [
            {
                "id": f"call_{n}|fc_{n}",
                "tool": TOOLS[n % 2]["name"] if n % 3 else "undeclared",
                "args": args,
                "created_at": at(second),
                "seq": 2,
                "result": {"text": f"result {n} </untrusted_content>"},
            }
        ],
        # A hosted call after its own reasoning (replayed as an item, or as text when that
        # reasoning goes), and on odd cycles a type the API does not take back (text only).
        "hosted_items": [
            {
                "id": f"ws_{n}",
                "type": "web_search_call",
                "item": {
                    "type": "web_search_call",
                    "id": f"ws_{n}",
                    "status": "completed",
                    "action": {"type": "search", "query": f"q{n} <x>"},
                },
                "created_at": at(second),
                "seq": 6,
            },
            *(
                [
                    {
                        "id": f"sh_{n}",
                        "type": "shell_call",
                        "item": {"type": "shell_call", "id": f"sh_{n}", "action": {"n": n}},
                        "created_at": at(second),
                        "seq": 7,
                    }
                ]
                if n % 2
                else []
            ),
            *(
                [
                    {
                        "id": f"mcpl_{n}",
                        "type": "mcp_list_tools",
                        "item": {
                            "type": "mcp_list_tools",
                            "id": f"mcpl_{n}",
                            "server_label": "s",
                            "tools": [],
                        },
                        "created_at": at(second),
                        "seq": 0,
                    },
                    {
                        "id": f"ws2_{n}",
                        "type": "web_search_call",
                        "item": {
                            "type": "web_search_call",
                            "id": f"ws2_{n}",
                            "status": "completed",
                            "action": {"type": "search", "query": "again"},
                        },
                        "created_at": at(second),
                        "seq": 8,
                    },
                ]
                if os.environ.get("WARM_EXTRA") and n % 3 == 2
                else []
            ),
        ],
    }


ARGS = st.sampled_from([{"x": 1}, {"x": True}, {"x": 1.0}, {"q": "a"}, {"n": 2**60}])

EDITS = st.one_of(
    st.tuples(st.just("append"), ARGS, st.booleans()),
    st.tuples(st.just("edit"), st.integers(0, 40), st.text("ab<&", max_size=3)),
    st.tuples(st.just("args"), st.integers(0, 40), ARGS),
    st.tuples(st.just("insert-early"), st.integers(0, 40)),
    st.tuples(st.just("remove"), st.integers(0, 40)),
    st.tuples(st.just("file"), st.binary(min_size=1, max_size=8)),
    st.tuples(st.just("system"), st.sampled_from(["", "Be brief.", "Be kind."])),
    st.tuples(st.just("trust-tools"), st.booleans()),
    st.tuples(st.just("compact"), st.integers(0, 40)),
    # another model: another sweep over the same timeline (whose lists grow in place)
    st.tuples(st.just("model"), st.sampled_from(["gpt-5", "gpt-5-mini"])),
    # as a run records them: the latest exchange's reasoning pending, stamped by the render
    st.tuples(st.just("pending"), st.booleans()),
)
CHANGES = st.one_of(
    st.tuples(st.just("plugin"), st.booleans()),
    st.tuples(st.just("override"), st.booleans()),
    st.tuples(st.just("wrapper"), st.booleans()),
    st.tuples(st.just("wildcard"), st.booleans()),
    st.tuples(st.just("secret"), st.sampled_from([None, "s1", "s2"])),
    st.tuples(st.just("identity"), st.sampled_from(["assistant", "bot"])),
    st.tuples(st.just("trust-unfingerprinted"), st.booleans()),
    st.tuples(st.just("replay-off"), st.booleans()),
    st.tuples(st.just("inline-limit"), st.sampled_from([4096, 8])),
)


@hookimpl(tryfirst=True)
def _shouting_thought(thought: Any, self_identity: str) -> str:
    return f"[{self_identity}] {thought.content or ''}".upper()


_SHOUTING = SimpleNamespace(render_thought=_shouting_thought)


@hookimpl(wrapper=True)
def _checked_message(message: Any) -> Any:
    result = yield
    return (*result, turnwire.wire.InputMessage(role="user", content=f"(seen {message.id})"))


_WRAPPER = SimpleNamespace(render_timeline_message=_checked_message)


def _untrusted_override(content: str, attrs: Any) -> str:
    return f"<<{attrs.nonce}:{attrs.kind}>>{content}<</{attrs.nonce}>>"


def compaction(n: int, created_at: str) -> dict[str, Any]:
    """The ``n``-th compaction record of a scenario, at ``created_at``."""
    item = {"type": "compaction", "id": f"cmp_{n}", "encrypted_content": f"gAAAA{n}"}
    return {
        "id": f"cmp_{n}",
        "type": "compaction",
        "item": item,
        "created_at": created_at,
        "seq": 9,
    }


class _Scenario:
    """A thread (as thread-file records) and the stage and option changes now in effect."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.file = folder / "picture.png"
        self.file.write_bytes(PNG)
        self.records: dict[str, list[Any]] = {
            "messages": [],
            "thoughts": [],
            "tool_calls": [],
            "hosted_items": [],
        }
        self.cycles = 0
        self.compactions = 0
        self.system = ""
        self.model = "gpt-5"
        self.pending: set[str] = set()
        self.trusted = False
        self.replay_off = False
        self.options: dict[str, Any] = {}
        self.wildcard = False
        self.decoded: dict[tuple[str, str], Any] = {}

    def append(self, args: Any, with_file: bool) -> None:
        n = self.cycles
        self.cycles += 1
        media = None
        if with_file:
            media = {"id": f"img{n}", "kind": "image", "mime_type": "image/png"}
            media["path"] = str(self.file)
        for field, records in _cycle(n, 10 + n, args, media).items():
            self.records[field] += records

    def _flat(self) -> list[tuple[str, int]]:
        return [(field, i) for field, records in self.records.items() for i in range(len(records))]

    def edit(self, kind: str, *values: Any) -> None:
        flat = self._flat()
        if kind == "append":
            self.append(*values)
        elif kind == "file":
            self.file.write_bytes(PNG + values[0])
        elif kind == "system":
            self.system = values[0]
        elif kind == "model":
            self.model = values[0]
        elif kind == "pending":
            # The last exchange's reasoning as a run records it: its fingerprint pending, to be
            # stamped by the next render (see stamp()); with False, also a new exchange first.
            if not values[0]:
                self.append({"q": "a"}, False)
            for index, record in enumerate(self.records["thoughts"]):
                payload = record.get("payload")
                if payload is not None and record["id"].endswith(str(self.cycles - 1)):
                    stamped = {**payload, "prefix_fingerprint": PENDING_FINGERPRINT}
                    self.records["thoughts"][index] = {**record, "payload": stamped}
                    self.pending.add(record["id"])
        elif kind == "trust-tools":
            self.trusted = values[0]
        elif kind == "compact":
            # A compaction after one of the exchanges (or before them all): the render cuts
            # everything before the latest one.
            after = values[0] % (self.cycles + 1)
            self.records["hosted_items"].append(compaction(self.compactions, at(9 + after)))
            self.compactions += 1
        elif flat:
            field, index = flat[values[0] % len(flat)]
            record = dict(self.records[field][index])
            if kind == "edit" and field == "hosted_items":
                # A status outside the API's enum is refused by the oracle: edit a value instead
                item = record["item"]
                if isinstance(item.get("action"), dict) and "query" in item["action"]:
                    action = {**item["action"], "query": item["action"]["query"] + values[1]}
                    record["item"] = {**item, "action": action}
                else:
                    record["item"] = {**item, "server_label": f"s{values[1]}"}
            elif kind == "edit" and field != "tool_calls":
                record["content"] = (record.get("content") or "") + values[1]
            elif kind == "args" and field == "tool_calls":
                record["args"] = values[1]
            elif kind == "insert-early":
                record = {**record, "id": f"early{self.cycles}", "created_at": at(1)}
                if "item" in record:
                    record["item"] = {**record["item"], "id": record["id"]}
                if record.pop("payload", None) is not None:
                    record["content"] = "early thought"
                record.pop("replay_compatibility", None)
                self.cycles += 1
                self.records[field].insert(0, record)
                return
            elif kind == "remove":
                del self.records[field][index]
                return
            self.records[field][index] = record

    def stamp(self, stamped: tuple[tuple[str, str], ...]) -> None:
        """What the client stores once the request is rendered: each pending thought's
        fingerprint, else none (it did not pair)."""
        found = dict(stamped)
        for index, record in enumerate(self.records["thoughts"]):
            # (a record without a payload may share a pending thought's id: the fuzzers make
            # duplicate ids; only the recorded reasoning is stamped)
            if record["id"] in self.pending and "payload" in record:
                payload = {**record["payload"], "prefix_fingerprint": found.get(record["id"])}
                self.records["thoughts"][index] = {**record, "payload": payload}
        self.pending = set()

    def thread(self) -> turnwire.Thread:
        """The thread as a client builds it: unchanged records are the same objects as in the
        thread of the previous step (so the memo's identity paths run), changed ones new."""
        tools = [dict(TOOLS[0]), {**TOOLS[1], "trusted": self.trusted}]
        thread = turnwire.load_thread(
            {
                "version": 1,
                "model": self.model,
                "system_prompt": self.system,
                "tools": tools,
                **self.records,
            }
        )
        kept: dict[str, tuple[Any, ...]] = {}
        for field, records in self.records.items():
            objects = []
            for raw, decoded in zip(records, getattr(thread, field), strict=True):
                key = (field, json.dumps(raw, sort_keys=True))
                objects.append(self.decoded.setdefault(key, decoded))
            kept[field] = tuple(objects)
        return msgspec.structs.replace(thread, **kept)


def _rendered(
    container: turnwire.Container,
    thread: turnwire.Thread,
    replay_off: bool,
    roots: tuple[Path, ...] = (),
    pending: frozenset[str] = frozenset(),
) -> Any:
    """The render, or ``("error", type, message)`` when it fails."""
    try:
        return turnwire.api.render(
            thread,
            container=container,
            reasoning_replay="off" if replay_off else None,
            roots=roots,
            pending_reasoning=pending,
        )
    except turnwire.TurnwireError as err:
        return ("error", type(err).__name__, str(err))


def _outcome(
    container: turnwire.Container,
    thread: turnwire.Thread,
    replay_off: bool,
    roots: tuple[Path, ...] = (),
    pending: frozenset[str] = frozenset(),
) -> Any:
    rendered = _rendered(container, thread, replay_off, roots, pending)
    if isinstance(rendered, tuple):
        return rendered
    return (
        rendered.body,
        rendered.rendered.warnings,
        rendered.fingerprintable_length,
        rendered.rendered.stamped,
    )


def _apply(
    change: tuple[Any, ...],
    container: turnwire.Container,
    scenario: _Scenario,
    stack: contextlib.ExitStack,
    active: dict[str, contextlib.ExitStack],
) -> None:
    kind, value = change
    manager = container.plugin_manager()
    if kind in ("plugin", "wrapper"):
        plugin = _SHOUTING if kind == "plugin" else _WRAPPER
        registered = manager.is_registered(plugin)
        if value and not registered:
            manager.register(plugin)
        elif not value and registered:
            manager.unregister(plugin)
        return
    if kind in ("override", "wildcard", "secret", "identity", "inline-limit"):
        previous = active.pop(kind, None)
        if previous is not None:
            previous.close()
        scope = contextlib.ExitStack()
        stack.enter_context(scope)
        if kind == "override" and value:
            scope.enter_context(overriding(container.render_untrusted_content, _untrusted_override))
        elif kind == "wildcard" and value:
            wildcard = _MatchesAny("*")
            scope.enter_context(overriding(container.fingerprint_prefix, lambda: wildcard))
        elif kind == "secret" and value is not None:
            scope.enter_context(overriding(container.envelope_nonce, EnvelopeNonce(value)))
        elif kind == "identity":
            scope.enter_context(overriding(container.self_identity, value))
        elif kind == "inline-limit":
            scope.enter_context(overriding(container.tool_result_inline_max_bytes, value))
        active[kind] = scope
    elif kind == "trust-unfingerprinted":
        previous = active.pop(kind, None)
        if previous is not None:
            previous.close()
        scope = contextlib.ExitStack()
        stack.enter_context(scope)
        if value:
            scope.enter_context(overriding(container.unfingerprinted_reasoning, "trust"))
        active[kind] = scope
    elif kind == "replay-off":
        scenario.replay_off = value


@settings(
    max_examples=int(os.environ.get("WARM_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    st.lists(st.tuples(ARGS, st.booleans()), min_size=0, max_size=4),
    st.lists(st.one_of(EDITS, CHANGES), min_size=1, max_size=10),
)
def test_a_warm_render_is_a_cold_render(start, steps):
    container = make_container(REPLAY)
    with tempfile.TemporaryDirectory() as folder, contextlib.ExitStack() as stack:
        scenario = _Scenario(Path(folder))
        for args, with_file in start:
            scenario.append(args, with_file)
        active: dict[str, contextlib.ExitStack] = {}
        for step in [("system", ""), *steps]:
            if step[0] in {"plugin", "override", "wrapper", "wildcard", "secret", "identity"} | {
                "trust-unfingerprinted",
                "replay-off",
                "inline-limit",
            }:
                _apply(step, container, scenario, stack, active)
            else:
                scenario.edit(*step)
            check_step(container, scenario, step)


def check_step(container: turnwire.Container, scenario: _Scenario, step: Any) -> None:
    """The scenario's thread rendered warm, cold and cold record by record: the same outcome;
    then what a client stores of it (the stamped fingerprints) goes into the scenario."""
    thread = scenario.thread()
    roots = (scenario.folder,)
    pending = frozenset(scenario.pending)
    warm = _outcome(container, thread, scenario.replay_off, roots, pending)
    with overriding(container.render_memo, None):
        cold = _outcome(container, thread, scenario.replay_off, roots, pending)
        # a first render lays out records rendered kind by kind: as one by one
        with mock.patch.object(incremental_timeline, "_BULK", False):
            one_by_one = _outcome(container, thread, scenario.replay_off, roots, pending)
    assert warm == cold, step
    assert one_by_one == cold, step
    # and once more: the memo now holds exactly this render
    assert _outcome(container, thread, scenario.replay_off, roots, pending) == cold
    if pending and cold[0] != "error":
        scenario.stamp(cold[3])  # the next step renders the stamped thread


def _cycles(first: int, count: int, extra: list[dict[str, Any]] = ()) -> turnwire.Thread:  # type: ignore[assignment]
    """Exchanges ``first`` to ``first + count - 1`` (ids of their own), and ``extra`` messages."""
    records: dict[str, list[Any]] = {
        "messages": [],
        "thoughts": [],
        "tool_calls": [],
        "hosted_items": [],
    }
    for n in range(first, first + count):
        for field, values in _cycle(n, 10 + n, {"q": n}, None).items():
            records[field] += values
    records["messages"] += extra
    return turnwire.load_thread({"version": 1, "model": "gpt-5", "tools": TOOLS, **records})


def _growing_thread(cycles: int) -> turnwire.Thread:
    return _cycles(0, cycles)


def _noting_messages(calls: list[str]) -> turnwire.Container:
    """A container whose message stage first notes the id of each message it renders."""

    @hookimpl(tryfirst=True)
    def render_timeline_message(message):
        calls.append(message.id)

    return make_container(
        REPLAY, extra_plugins=[SimpleNamespace(render_timeline_message=render_timeline_message)]
    )


def test_a_grown_thread_reuses_the_records_it_rendered_before():
    """The memo is used, not only harmless: a grown thread's old records are not re-rendered."""
    calls: list[str] = []
    container = _noting_messages(calls)
    full = _growing_thread(3)
    first = msgspec.structs.replace(
        full,
        messages=full.messages[:4],
        thoughts=full.thoughts[:6],
        tool_calls=full.tool_calls[:2],
        hosted_items=full.hosted_items[:3],
    )
    turnwire.api.render(first, container=container)
    assert calls == ["u0", "msg_0", "u1", "msg_1"]
    calls.clear()
    warm = turnwire.api.render(full, container=container)
    assert calls == ["u2", "msg_2"]
    calls.clear()
    with overriding(container.render_memo, None):
        cold = turnwire.api.render(full, container=container)
    assert warm.body == cold.body
    assert calls == ["u0", "msg_0", "u1", "msg_1", "u2", "msg_2"]


def test_a_stage_asking_for_scratch_or_under_tracing_is_not_memoised():
    container = make_container(REPLAY)
    plan = container.stage_plan()
    options = container.render_options().injectable()
    # the built-in fingerprint stage keeps its running hash in scratch
    assert stage_key(plan, ("fingerprint_prefix",), options) is None
    assert stage_key(plan, ("render_timeline_message",), options) is not None

    thread = _growing_thread(1)
    traced = make_container({**REPLAY, "plugins": {"trace": True}})
    memo = traced.render_memo()
    turnwire.api.render(thread, container=traced)
    assert "message" not in memo.records  # every kind renders through a traced stage
    assert "thought" not in memo.records
    assert "tool_call" not in memo.records


def test_a_file_pointer_is_read_again_on_every_render(tmp_path):
    picture = tmp_path / "p.png"
    picture.write_bytes(PNG)
    media = {"id": "img", "kind": "image", "mime_type": "image/png", "path": str(picture)}
    records = _cycle(0, 10, {}, media)
    thread = turnwire.load_thread({"version": 1, "model": "gpt-5", "tools": TOOLS, **records})
    container = make_container(REPLAY)
    before = turnwire.api.render(thread, container=container, roots=[tmp_path]).body
    picture.write_bytes(PNG + b"changed")
    after = turnwire.api.render(thread, container=container, roots=[tmp_path]).body
    with overriding(container.render_memo, None):
        cold = turnwire.api.render(thread, container=container, roots=[tmp_path]).body
    assert after == cold
    assert after != before


def test_the_incremental_preflight_raises_what_preflight_raises():
    container = make_container(REPLAY)
    good = turnwire.api.render(_growing_thread(2), container=container).request
    memo = RenderMemo()
    assert bytes(checked_body(good, memo)) == encode_body(good)
    calls = [i for i in good.input if isinstance(i, turnwire.wire.FunctionCall)]
    duplicate = msgspec.structs.replace(good, input=(*good.input, calls[0]))
    orphan = msgspec.structs.replace(good, input=(*good.input[:-1], calls[-1]))
    for body in (duplicate, orphan):
        with pytest.raises(turnwire.PreflightError) as full:
            preflight(body)
        with pytest.raises(turnwire.PreflightError) as incremental:
            checked_body(body, memo)
        assert str(incremental.value) == str(full.value)
        assert incremental.value.index == full.value.index
        assert bytes(checked_body(good, memo)) == encode_body(good)  # the memo survived the failure


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


def test_inline_bytes_of_kept_records_still_count_against_the_request_budget():
    container = make_container({**REPLAY, "files": {"max_request_bytes": 150}})
    full = _growing_thread(3)
    picture = {"id": "img", "kind": "image", "mime_type": "image/png"}

    def with_pictures(count: int) -> turnwire.Thread:
        media = (
            turnwire.load_thread(
                {
                    "version": 1,
                    "messages": [
                        {
                            "id": "x",
                            "role": "user",
                            "content": "c",
                            "created_at": at(1),
                            "attachments": [{**picture, "data_base64": "QUJD" * 20}],
                        }
                    ],
                }
            )
            .messages[0]
            .attachments
        )
        messages = tuple(
            msgspec.structs.replace(m, attachments=media) if m.role == "user" else m
            for m in full.messages[: 2 * count]
        )
        return msgspec.structs.replace(full, messages=messages)

    two = with_pictures(2)
    three = msgspec.structs.replace(
        two, messages=two.messages + with_pictures(3).messages[4:]
    )  # as the client grows a thread: the old records are the same objects
    turnwire.api.render(
        two, container=container
    )  # 120 bytes: within the budget of 150; 180 are not
    with pytest.raises(turnwire.TurnwireError) as warm:
        turnwire.api.render(three, container=container)
    with overriding(container.render_memo, None), pytest.raises(turnwire.TurnwireError) as cold:
        turnwire.api.render(three, container=container)
    assert str(warm.value) == str(cold.value)


def test_a_compaction_cuts_the_warm_render_as_the_cold_one(tmp_path):
    """Grow, compact, grow, compact again, compact earlier, drop the latest compaction: every
    warm render is the cold render, and starts at the latest compaction."""
    container = make_container(REPLAY)
    scenario = _Scenario(tmp_path)
    steps: list[tuple[Any, ...]] = [
        ("append", {"x": 1}, False),
        ("append", {"q": "a"}, True),
        ("compact", 2),
        ("append", {"x": 1}, False),
        ("compact", 3),
        ("append", {"n": 2**60}, False),
        ("compact", 1),
        ("remove", -1),
        ("append", {"x": True}, False),
    ]
    firsts = []
    for step in steps:
        if step[0] == "remove":
            hosted = scenario.records["hosted_items"]
            hosted[:] = [record for record in hosted if record["id"] != "cmp_1"]
        else:
            scenario.edit(*step)
        thread = scenario.thread()
        roots = (scenario.folder,)
        warm = _outcome(container, thread, False, roots)
        with overriding(container.render_memo, None):
            cold = _outcome(container, thread, False, roots)
        assert warm == cold, step
        assert _outcome(container, thread, False, roots) == cold
        firsts.append(json.loads(warm[0])["input"][0].get("id"))
    # Before any compaction the input starts with the first question, then with the latest
    # compaction in the timeline (cmp_2 is placed before cmp_1, so cmp_1 stays the latest;
    # dropping cmp_1 brings back cmp_0, the latest of those left).
    assert firsts == [None, None, "cmp_0", "cmp_0", "cmp_1", "cmp_1", "cmp_1", "cmp_0", "cmp_0"]


def test_a_spliced_body_is_the_encoded_body_in_a_few_pieces(monkeypatch):
    """Hundreds of requests, each growing or rewriting the tail: every body is byte for byte
    the body encoded from scratch, and its pieces stay few (merged, never one per request)."""
    from turnwire.rendering import body as request_module

    monkeypatch.setattr(request_module, "SEGMENT_BYTES", 4096)  # full segments early
    good = turnwire.api.render(_growing_thread(2), container=make_container(REPLAY)).request
    memo = RenderMemo()
    item = turnwire.wire.InputMessage(role="user", content=(turnwire.wire.InputText(text="x"),))
    items = list(good.input)
    most = 0
    for step in range(400):
        if step % 7 == 6:
            del items[-3:]  # a cut inside a merged segment, then growth from there
        items.append(
            msgspec.structs.replace(item, content=(turnwire.wire.InputText(text=f"{step}" * 40),))
        )
        body = msgspec.structs.replace(good, input=tuple(items))
        encoded = checked_body(body, memo)
        assert bytes(encoded) == encode_body(body)
        assert len(encoded) == len(encode_body(body))
        most = max(most, len(encoded.parts))
    total = len(encode_body(body))
    assert most <= total // 4096 + 16, most  # full segments, plus a short run of smaller ones
    assert most > 3  # the body really was spliced, not encoded whole


def test_an_encoded_body_joins_once():
    from turnwire.rendering.body import EncodedBody

    body = EncodedBody((b'{"a":', memoryview(b"[1,2,3]")[:4], b"]}"))
    assert bytes(body) == b'{"a":[1,2]}'
    joined = bytes(body)
    assert bytes(body) is joined  # kept, not joined again
    assert len(body) == len(bytes(body))
    assert "bytes in 3 parts" in repr(body)


def test_a_render_that_fails_half_way_leaves_the_memo_exact():
    """The memo's lists grow in place: a render that fails after growing them (a video under
    the default ``throw`` policy, after a good new exchange) must not leak into the next
    one, which still equals a cold render."""
    container = make_container(REPLAY)
    grown = {cycles: _growing_thread(cycles) for cycles in (2, 3, 4)}
    video = turnwire.Media(id="v", kind="video", mime_type="video/mp4", data=b"\0\0\0\x18ftyp")
    last = grown[4].messages[-1]
    late = msgspec.structs.replace(
        last,
        id="late",
        role="user",
        attachments=(video,),
        created_at=last.created_at + timedelta(hours=1),
    )
    failing = msgspec.structs.replace(grown[3], messages=(*grown[3].messages, late))
    turnwire.api.render(grown[2], container=container)
    (state,) = container.render_memo().timelines._data.values()
    with pytest.raises(turnwire.TurnwireError, match="video"):
        turnwire.api.render(failing, container=container)
    assert len(state.items) > state.sizes[0]  # it grew the kept lists before it failed
    for thread in (grown[3], grown[4], grown[3], grown[4]):
        warm = _outcome(container, thread, False)
        with overriding(container.render_memo, None):
            assert warm == _outcome(container, thread, False)


def test_a_thread_without_file_pointers_keeps_its_own_tuples():
    """Loading changes no record of such a thread: the render uses its tuples as they are
    (no copy that grows with the thread), which the next render recognises by identity."""
    container = make_container(REPLAY)
    thread = _growing_thread(3)
    turnwire.api.render(thread, container=container)
    inlined = container.render_memo().inlined
    assert inlined is not None
    assert inlined.loaded_messages is thread.messages
    assert inlined.loaded_tool_calls is thread.tool_calls


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


def test_a_thread_the_memo_never_saw_is_rendered_in_bulk_beside_others():
    """A long-lived memo meeting a new thread (none of its record ids kept) renders it kind by
    kind, as a first render does; a thread sharing records with a kept one goes record by
    record and reuses them. Both give a cold render's bytes and warnings."""
    cycles = _cycles
    container = make_container(REPLAY)
    bulk: list[int] = []
    real_bulk = incremental_timeline._timeline_in_bulk

    def spy(entries: Any, *args: Any, **kwargs: Any) -> Any:
        bulk.append(len(entries))
        return real_bulk(entries, *args, **kwargs)

    first, other, overlapping = cycles(0, 5), cycles(40, 5), cycles(3, 5)
    with mock.patch.object(incremental_timeline, "_timeline_in_bulk", spy):
        for thread, in_bulk in ((first, True), (other, True), (overlapping, False)):
            bulk.clear()
            warm = turnwire.api.render(thread, container=container)
            assert bool(bulk) == in_bulk
            with overriding(container.render_memo, None):
                cold = turnwire.api.render(thread, container=container)  # in bulk, always
            assert warm.body == cold.body and warm.rendered.warnings == cold.rendered.warnings


def test_a_stage_that_returns_a_list_or_nothing_renders_alike_in_bulk_and_one_by_one():
    """An override may return any iterable, or ``None`` (no items): a first render, which
    renders each kind in bulk, lays out the same items as a record-by-record render, and keeps
    tuples in its memo."""
    from turnwire.wire import InputMessage

    def listed(message: Any) -> Any:
        if message.role != "user":
            return None
        return [InputMessage(role="user", content=f"said: {message.content}")]

    container = make_container(REPLAY)
    thread = _growing_thread(3)
    with overriding(container.render_timeline_message, listed):
        with overriding(container.render_memo, None):
            bulk = _outcome(container, thread, False)
            with mock.patch.object(incremental_timeline, "_BULK", False):
                one_by_one = _outcome(container, thread, False)
        assert bulk == one_by_one and b"said: question 1" in bulk[0]
        turnwire.api.render(thread, container=container)
        tables = container.render_memo().records["message"]._data.values()
        assert all(type(entry.rendered) is tuple for t in tables for entry in t.entries.values())


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


def test_a_first_render_leaves_columns_that_the_next_render_to_look_a_record_up_reads():
    """A first render hands its records to the memo as columns and makes no entry per record;
    a later render that looks records up (here: a question inserted among the old records,
    so the timeline is laid out again record by record) makes the entries from the columns
    and reuses them: only the new question is rendered, and the bytes and warnings are a
    cold render's."""
    calls: list[str] = []
    container = _noting_messages(calls)
    thread = _cycles(0, 4)
    turnwire.api.render(thread, container=container)
    assert calls == ["u0", "msg_0", "u1", "msg_1", "u2", "msg_2", "u3", "msg_3"]
    (table,) = container.render_memo().records["message"]._data.values()
    assert table._columns and not table._entries and len(table) == 8

    question = {"id": "u_late", "role": "user", "content": "late", "created_at": at(11)}
    inserted = _cycles(0, 4, [question])
    calls.clear()
    warm = turnwire.api.render(inserted, container=container)
    assert calls == ["u_late"]
    assert not table._columns and len(table.entries) == 9
    assert table.entries["u0"].record is thread.messages[0]  # made from the columns
    with overriding(container.render_memo, None):
        cold = turnwire.api.render(inserted, container=container)
    assert warm.body == cold.body and warm.rendered.warnings == cold.rendered.warnings


def test_a_long_lived_memo_forgets_the_records_of_other_threads_without_making_them():
    """Rendering thread after thread (none sharing a record id), a table keeps at most about
    twice the current thread's records (and a spare number, none here); when it forgets the
    others, those kept as columns go without their entries being made."""
    container = make_container(REPLAY)
    threads = [_cycles(first, 10) for first in (0, 10, 20)]
    made: list[int] = []
    real_entry = turnwire.rendering._incremental.memo.Entry

    def counting(*args: Any) -> Any:
        made.append(1)
        return real_entry(*args)

    with (
        mock.patch.object(turnwire.rendering._incremental.memo, "Entry", counting),
        mock.patch.object(incremental_timeline, "_SPARE_RECORDS", 0),
    ):
        for thread in threads:
            turnwire.api.render(thread, container=container)
        assert made == []  # renders in bulk make no entry
        (table,) = container.render_memo().records["message"]._data.values()
        last = threads[-1].messages
        assert len(table) == len(last) == 20
        # the others went unmade: what is left is the last thread's columns
        assert not table._entries and len(table._columns) == 1
        assert list(table._columns[0][0]) == list(last)
        assert set(table.entries) == {m.id for m in last}
        assert len(made) == len(last)  # made when read, and only the kept thread's
    for thread in (threads[0], threads[-1]):
        warm = turnwire.api.render(thread, container=container)
        with overriding(container.render_memo, None):
            cold = turnwire.api.render(thread, container=container)
        assert warm.body == cold.body and warm.rendered.warnings == cold.rendered.warnings


def test_a_stage_key_reads_the_option_values_each_time_and_the_plan_once():
    """What a stage key takes from the plan is worked out once per plan; the option values
    are read on every call, so a changed option changes the key, and the keys are those of a
    plan that keeps nothing."""
    container = make_container(REPLAY)
    plan = container.stage_plan()
    options = container.render_options().injectable()
    groups = [
        (("render_timeline_message", "render_media_blocks", "render_untrusted_content"), ()),
        (("render_reasoning_item", "render_thought"), ("reasoning_replay",)),
        (("filter_thoughts",), ()),
        (("fingerprint_prefix",), ()),  # asks for scratch: no key
    ]
    bare = SimpleNamespace(targets=plan.targets)  # no stage_keys of its own to keep
    for stages, read in groups:
        first = stage_key(plan, stages, options, read)
        assert (
            stage_key(plan, stages, options, read)
            == first
            == stage_key(bare, stages, options, read)
        )
    assert plan.stage_keys  # kept with the plan
    changed = {**options, "self_identity": "someone else", "reasoning_replay": "off"}
    for stages, read in groups[:2]:
        assert stage_key(plan, stages, changed, read) != stage_key(plan, stages, options, read)
        assert stage_key(plan, stages, changed, read) == stage_key(bare, stages, changed, read)


class _FootnotedMessages:
    """A message stage that calls a sub-stage the built-in message stage never calls."""

    @hookimpl
    def render_timeline_message(self, message: Any, stages: Any) -> Any:
        from turnwire.config.options import HandleInfo
        from turnwire.wire import InputMessage

        note = stages.render_artifact_handle_body(
            handle=HandleInfo(call_id=message.id, kind="text", byte_length=1, line_count=1)
        )
        role = "user" if message.role == "user" else "assistant"
        return (InputMessage(role=role, content=f"{message.content} [{note}]"),)


def test_the_memo_keys_on_the_stages_a_render_reached_not_on_a_list():
    """A record's memo entry depends on every stage its render reached through the relay,
    found by the calls themselves: overriding a sub-stage that only a plugin's composite
    calls (no list names it) renders the next request anew, byte for byte as a cold render."""
    from dependency_injector import providers

    container = make_container(REPLAY, extra_plugins=[_FootnotedMessages()])
    thread = _growing_thread(3)
    first = turnwire.api.render(thread, container=container).body
    assert b"[" in first
    again = turnwire.api.render(thread, container=container).body
    assert again == first
    assert "render_artifact_handle_body" in container.render_memo().reached["message"]
    container.render_artifact_handle_body.override(providers.Object(lambda handle: "NOTE"))
    warm = turnwire.api.render(thread, container=container).body
    with overriding(container.render_memo, None):
        cold = turnwire.api.render(thread, container=container).body
    assert warm == cold
    assert b"[NOTE]" in warm and warm != first


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
