"""What a warm renderer keeps (``RenderMemo``): a render through a container's memo is byte for
byte a cold render.

The differential property drives one warm container through random sequences of thread edits
(appends, edits in place, early inserts, removals, argument values equal under ``==`` but not on
the wire, a file pointer whose bytes change), stage changes (a plugin registered and
unregistered, a container provider override, a wrapper, the client's wildcard fingerprint) and
option and secret changes, and after every step compares its body bytes, warnings and errors
with a render of the same container without any memo, and with a first render laid out record
by record. Two more drive it with hostile stages (warning, failing, lazy and list-returning
ones, media that fails or warns in messages and tool results, container overrides of
per-record stages, tracing) and with option changes, input-only renders and failing renders.
The memo's own rules follow: what it never keeps, its tables' columns, what it forgets, and
the stage keys it reads.

``WARM_EXAMPLES`` sets the number of examples (60); ``WARM_EXTRA=1`` adds an MCP listing and a
second web search to every third cycle; ``WARM_STAGES_EXAMPLES`` sets those of the hostile
stages (40).
"""

from __future__ import annotations

import base64
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
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import turnwire
from turnwire.config.nonce import EnvelopeNonce
from turnwire.config.options import MediaPolicy
from turnwire.config.settings import merge
from turnwire.hookspecs import hookimpl
from turnwire.rendering._incremental import timeline as incremental_timeline
from turnwire.rendering._incremental.memo import stage_key
from turnwire.rendering.container import overriding
from turnwire.rendering.sweep import PENDING_FINGERPRINT
from turnwire.wire import InputMessage

from ...conftest import REPLAY, at, make_container

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
    # a memory or a retrieved record (dated at the latest exchange, or undated), placed in the
    # timeline under ``context_placement: timeline``
    st.tuples(st.just("remember"), st.booleans()),
    st.tuples(st.just("retrieve"), st.booleans()),
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
    st.tuples(st.just("placement"), st.sampled_from(["leading", "timeline"])),
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
            "memories": [],
            "retrievables": [],
        }
        self.cycles = 0
        self.context = 0
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
        elif kind in ("remember", "retrieve"):
            # at the latest exchange's instant (after its records), or undated (at the head)
            n = self.context
            self.context += 1
            record: dict[str, Any] = {"id": f"c{n}", "content": f"context {n} <b>"}
            if values[0]:
                record["created_at"] = at(9 + self.cycles)
            if kind == "retrieve":
                tiers = ("first-party", "third-party-public", "third-party-private")
                record["trust_tier"] = tiers[n % 3]
            self.records["memories" if kind == "remember" else "retrievables"].append(record)
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
    if kind in ("override", "wildcard", "secret", "identity", "inline-limit", "placement"):
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
        elif kind == "placement":
            scope.enter_context(overriding(container.context_placement, value))
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
                "placement",
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


AUDIO = base64.b64encode(b"RIFF0000WAVE").decode()


def _render_outcome(container: turnwire.Container, thread: turnwire.Thread) -> Any:
    try:
        r = turnwire.api.render(thread, container=container)
    except turnwire.TurnwireError as err:
        return ("error", type(err).__name__, str(err))
    return (r.body, r.rendered.warnings, r.rendered.stamped)


def _cold_outcome(container: turnwire.Container, thread: turnwire.Thread) -> Any:
    with overriding(container.render_memo, None):
        return _render_outcome(container, thread)


def _lookup_thread(
    messages: list[dict[str, Any]], calls: list[dict[str, Any]] = ()
) -> turnwire.Thread:
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
    return _lookup_thread(messages, calls)


def test_a_generator_stage_keeps_its_warnings_in_the_memo():
    """A record inserted early makes the next render go record by record over kept entries."""
    container = make_container(STASH, extra_plugins=[_LazyWarner()])
    thread = _mixed(3)
    _render_outcome(container, thread)
    early = {"id": "u_early", "role": "user", "content": "first", "created_at": at(0), "seq": -1}
    raw = [_audio_message(f"u{i}", 2 * i, f"m{i}.wav") for i in range(3)]
    grown = _lookup_thread(
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
    assert _render_outcome(container, grown) == _cold_outcome(container, grown)


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


class _HostileScenario(_Scenario):
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
    "placement",
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


def _run_hostile(start: Any, steps: Any, trace: bool) -> None:
    container = make_container(merge(REPLAY, {"plugins": {"trace": trace}}) if trace else REPLAY)
    with tempfile.TemporaryDirectory() as folder, contextlib.ExitStack() as stack:
        scenario = _HostileScenario(Path(folder))
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
    "max_examples": int(os.environ.get("WARM_STAGES_EXAMPLES", "40")),
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}


START = st.lists(st.tuples(st.sampled_from([{"x": 1}, {"q": "a"}]), st.booleans()), max_size=4)


@settings(**FUZZ)
@given(START, st.lists(st.one_of(MORE_EDITS, MORE_CHANGES), min_size=1, max_size=12))
# a plain thought sharing the id of a pending one (the harness must not stamp it)
@example([({"x": 1}, False)], [("dup", 333, "thoughts", 1), ("pend-all", False)])
def test_a_warm_render_is_a_cold_render_with_warning_failing_lazy_and_list_stages(start, steps):
    _run_hostile(start, steps, trace=False)


@settings(**{**FUZZ, "max_examples": max(5, FUZZ["max_examples"] // 4)})
@given(START, st.lists(st.one_of(MORE_EDITS, MORE_CHANGES), min_size=1, max_size=8))
def test_a_warm_render_is_a_cold_render_with_those_stages_under_tracing(start, steps):
    _run_hostile(start, steps, trace=True)


def _cold_of(container: turnwire.Container, thread: turnwire.Thread, roots: tuple) -> object:
    with overriding(container.render_memo, None):
        return _outcome(container, thread, False, roots)


@hookimpl(tryfirst=True)
def _bulleted_memories(memories: Any) -> str:
    return "\n".join(f"- {memory.content}" for memory in memories)


_BULLETED = SimpleNamespace(render_memories=_bulleted_memories)


def test_a_warm_render_is_a_cold_render_as_memories_and_documents_come_and_go(tmp_path):
    """Under ``context_placement: timeline``: a memory or a document added between two
    renders is the one rendered (the rest comes from the memo, the input extends the last
    one); one edited renders again, one removed or added at the head lays the timeline out
    again from the memo's entries; a plugin of ``render_memories`` renders every memory again
    and no document. After every step the bytes, warnings and fingerprints are a cold
    render's."""
    from turnwire.stages.context import render_timeline_context

    calls: list[str] = []

    def counting(context_item: Any, stages: Any) -> Any:
        calls.append(context_item.id)
        return render_timeline_context(context_item=context_item, stages=stages)

    container = make_container(merge(REPLAY, {"render": {"context_placement": "timeline"}}))
    scenario = _Scenario(tmp_path)
    roots = (scenario.folder,)
    memories, documents = scenario.records["memories"], scenario.records["retrievables"]

    def step(change: Any, rendered: list[str]) -> Any:
        if callable(change):
            change()
        else:
            scenario.edit(*change)
        thread = scenario.thread()
        calls.clear()
        warm = _outcome(container, thread, False, roots)
        assert sorted(calls) == sorted(rendered), change
        check_step(container, scenario, change)
        return warm

    with overriding(container.render_timeline_context, counting):
        scenario.append({"x": 1}, False)
        step(("remember", True), ["c0"])
        step(("retrieve", True), ["c1"])
        first = step(("append", {"q": "a"}, False), [])
        grown = step(("remember", True), ["c2"])  # after the second exchange: appended
        old, new = json.loads(first[0])["input"], json.loads(grown[0])["input"]
        assert new[: len(old)] == old and len(new) == len(old) + 1

        def edit_memory() -> None:
            memories[0] = {**memories[0], "content": "context 0, edited"}

        step(edit_memory, ["c0"])
        step(lambda: documents.pop(0), [])  # removed: laid out again from the entries
        step(("retrieve", False), ["c3"])  # undated: at the head
        step(("remember", False), ["c4"])
        container.plugin_manager().register(_BULLETED)
        step(("append", {"x": 1}, False), ["c0", "c2", "c4"])  # every memory, no document
        container.plugin_manager().unregister(_BULLETED)
        step(("compact", 1), [])  # the memo still holds them as the built-in renders them
        with overriding(container.context_placement, "leading"):
            step(("append", {"q": "a"}, False), [])  # none is in the timeline
        step(("remember", True), ["c5"])


def test_a_sweep_without_a_body_between_two_renders_leaves_the_body_memo_exact(tmp_path):
    """``render_input`` (what the client's ``fingerprint_new_thoughts`` and ``turnwire
    fingerprint`` call) sweeps without checking a body. The sweep's ``out`` list is reused in
    place, so the body memo's ``source`` (that list, by identity) cannot say which items the
    kept body was made of: a body memo that trusted it would take the edited answer's old
    bytes."""
    container = make_container(REPLAY)
    scenario = _Scenario(tmp_path)
    roots = (scenario.folder,)
    for _ in range(4):
        scenario.append({"q": "a"}, False)
    _outcome(container, scenario.thread(), False, roots)
    scenario.append({"q": "a"}, False)  # a body whose item bounds are known
    _outcome(container, scenario.thread(), False, roots)

    answers = [record["id"] for record in scenario.records["messages"]]
    scenario.edit("edit", answers.index("msg_2"), " (edited)")
    turnwire.api.render_input(scenario.thread(), container=container, model="gpt-5", roots=roots)

    scenario.append({"q": "a"}, False)
    thread = scenario.thread()
    warm = _outcome(container, thread, False, roots)
    assert warm == _cold_of(container, thread, roots)
    assert b"answer 2 (edited)" in warm[0]


# --- option changes, input-only renders and failing renders ------------------------------


OPTIONS = st.one_of(
    st.tuples(
        st.just("system_prompt_channel"),
        st.sampled_from(["instructions", "developer-item", "system-item"]),
    ),
    st.tuples(st.just("thought_surfacing"), st.sampled_from(["all-self", "latest-self", "all"])),
    st.tuples(st.just("reasoning_replay"), st.sampled_from(["encrypted", "summary-only", "off"])),
    st.tuples(st.just("fingerprint_binding"), st.sampled_from(["prefix", "model"])),
    st.tuples(
        st.just("bucket_order"),
        st.sampled_from(
            [
                ("standing_instructions", "memories", "retrievables", "timeline"),
                ("timeline", "memories", "retrievables"),
            ]
        ),
    ),
)


EXTRA = st.one_of(
    st.tuples(st.just("option"), OPTIONS),
    # a sweep with no body: what fingerprint_new_thoughts does at the end of a run
    st.tuples(st.just("render-input"), st.booleans()),
    # a render that fails after growing the memo's lists
    st.tuples(st.just("fail"), st.booleans()),
)


def _full(
    container: turnwire.Container,
    thread: turnwire.Thread,
    replay_off: bool,
    roots: tuple[Path, ...],
    pending: frozenset[str],
) -> Any:
    rendered = _rendered(container, thread, replay_off, roots, pending)
    if isinstance(rendered, tuple):
        return rendered
    model = rendered.request.model
    fingerprints = [
        turnwire.api.prefix_fingerprint(
            rendered.rendered, container=container, model=model, through_item=through
        )
        for through in {0, 1, rendered.fingerprintable_length // 2, rendered.fingerprintable_length}
    ]
    return (
        rendered.body,
        rendered.rendered.warnings,
        rendered.fingerprintable_length,
        rendered.rendered.stamped,
        fingerprints,
    )


def _input_only(
    container: turnwire.Container, thread: turnwire.Thread, roots: Any, pending: frozenset[str]
) -> Any:
    try:
        rendered = turnwire.api.render_input(
            thread,
            container=container,
            model=thread.model,
            roots=roots,
            pending_reasoning=pending,
        )
    except turnwire.TurnwireError as err:
        return ("error", type(err).__name__, str(err))
    return (
        _RECORD.encode(tuple(rendered.input)),
        rendered.warnings,
        rendered.fingerprintable_length,
        rendered.stamped,
    )


_RECORD = msgspec.json.Encoder()


def _failing(thread: turnwire.Thread) -> turnwire.Thread:
    video = turnwire.Media(id="v", kind="video", mime_type="video/mp4", data=b"\0\0\0\x18ftyp")
    last = max((m for m in thread.messages), key=lambda m: m.created_at, default=None)
    if last is None:
        return thread
    late = msgspec.structs.replace(
        last,
        id="late",
        role="user",
        attachments=(video,),
        created_at=last.created_at + timedelta(hours=1),
    )
    return msgspec.structs.replace(thread, messages=(*thread.messages, late))


@settings(
    max_examples=int(os.environ.get("WARM_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    st.lists(st.tuples(st.sampled_from([{"x": 1}, {"q": "a"}]), st.booleans()), max_size=4),
    st.lists(st.one_of(EDITS, CHANGES, EXTRA, EXTRA), min_size=1, max_size=14),
)
def test_a_warm_render_is_a_cold_render_through_option_changes_input_renders_and_failures(
    start, steps
):
    container = make_container(REPLAY)
    with tempfile.TemporaryDirectory() as folder, contextlib.ExitStack() as stack:
        scenario = _Scenario(Path(folder))
        for args, with_file in start:
            scenario.append(args, with_file)
        active: dict[str, contextlib.ExitStack] = {}
        for step in [("system", "Be brief."), *steps]:
            kind = step[0]
            roots = (scenario.folder,)
            if kind == "option":
                name, value = step[1]
                previous = active.pop(name, None)
                if previous is not None:
                    previous.close()
                scope = contextlib.ExitStack()
                stack.enter_context(scope)
                scope.enter_context(overriding(getattr(container, name), value))
                active[name] = scope
            elif kind == "render-input":
                thread = scenario.thread()
                pending = frozenset(scenario.pending)
                warm = _input_only(container, thread, roots, pending)
                with overriding(container.render_memo, None):
                    cold = _input_only(container, thread, roots, pending)
                assert warm == cold, step
                if step[1] and pending and cold[0] != "error":
                    scenario.stamp(cold[3])
                continue
            elif kind == "fail":
                thread = _failing(scenario.thread())
                pending = frozenset(scenario.pending)
                warm = _full(container, thread, scenario.replay_off, roots, pending)
                with overriding(container.render_memo, None):
                    cold = _full(container, thread, scenario.replay_off, roots, pending)
                assert warm == cold, step
                continue
            elif kind in {"plugin", "override", "wrapper", "wildcard", "secret", "identity"} | {
                "trust-unfingerprinted",
                "replay-off",
                "inline-limit",
                "placement",
            }:
                _apply(step, container, scenario, stack, active)
            else:
                scenario.edit(*step)
            thread = scenario.thread()
            pending = frozenset(scenario.pending)
            warm = _full(container, thread, scenario.replay_off, roots, pending)
            with overriding(container.render_memo, None):
                cold = _full(container, thread, scenario.replay_off, roots, pending)
            assert warm == cold, step
            assert _full(container, thread, scenario.replay_off, roots, pending) == cold
            if pending and cold[0] != "error":
                scenario.stamp(cold[3])
