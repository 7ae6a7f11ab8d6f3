"""Review 4 fuzzer: the sparse sweep checkpoints, the resumed sweep's cuts and the record
tables' columns, differentially (warm == cold == record by record, after every step).

Long threads (20-60 exchanges: 40-120 reasoning candidates, so the sparse checkpoints and the
dense tail matter), edited in the middle, grown, their reasoning pending, stamped, made stale,
unfingerprinted or wrongly paired; with and without hosted items (the sweep's ``reasoned``
path and its inline stripping); under the built-in, the ``model``-binding and custom
``fingerprint_prefix`` stages (dense checkpoints); several threads (some forked from others,
sharing record objects and ids) alternating in one container; and ``prefix_fingerprint`` of
current and older renders at random cuts against the stage.

``REVIEW4_EXAMPLES`` sets the number of examples (25), ``REVIEW4_STEPS`` the most steps of
one (8).
"""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import os
import tempfile
from datetime import datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from unittest import mock

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import turnwire
import turnwire.api
from turnwire.hookspecs import hookimpl
from turnwire.rendering._incremental import timeline as incremental_timeline
from turnwire.rendering.container import overriding
from turnwire.rendering.sweep import PENDING_FINGERPRINT
from turnwire.stages.fingerprint import PREFIX_HEAD, canonical_items

from .conftest import REPLAY, make_container
from .test_review3_fuzz import _Review
from .test_warm_render import (
    ARGS,
    _apply,
    _cycle,
    _MatchesAny,
    _outcome,
    assert_stage_fingerprints,
    check_step,
    compaction,
)

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


class _Long(_Review):
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


def _run(spec: list[tuple[bool, int]], steps: list[tuple[Any, ...]]) -> None:
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


EXAMPLES = int(os.environ.get("REVIEW4_EXAMPLES", "25"))
STEPS = int(os.environ.get("REVIEW4_STEPS", "8"))
FUZZ = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}
SPEC_ONE = st.lists(st.tuples(st.booleans(), st.integers(20, 60)), min_size=1, max_size=1)
SPEC_MANY = st.lists(st.tuples(st.booleans(), st.integers(20, 45)), min_size=2, max_size=3)


@settings(max_examples=EXAMPLES, **FUZZ)
@given(SPEC_ONE, st.lists(st.one_of(LONG_EDITS, LONG_EDITS, FP_CHECK), min_size=1, max_size=STEPS))
def test_review4_long_thread_edits_growth_and_reasoning(spec, steps):
    _run(spec, steps)


@settings(max_examples=max(5, EXAMPLES // 2), **FUZZ)
@given(
    SPEC_ONE,
    st.lists(st.one_of(LONG_EDITS, LONG_CHANGES, FP_CHECK), min_size=1, max_size=STEPS),
)
def test_review4_long_thread_under_other_fingerprint_stages(spec, steps):
    _run(spec, steps)


@settings(max_examples=max(5, EXAMPLES // 2), **FUZZ)
@given(
    SPEC_MANY,
    st.sampled_from([0, 16, 256]),
    st.lists(
        st.one_of(THREAD_STEPS, THREAD_STEPS, LONG_EDITS, LONG_CHANGES, FP_CHECK),
        min_size=2,
        max_size=STEPS + 2,
    ),
)
def test_review4_several_threads_alternate_in_one_container(spec, spare, steps):
    # a small spare: the record tables forget other threads' records (columns unmade or not)
    with mock.patch.object(incremental_timeline, "_SPARE_RECORDS", spare):
        _run(spec, steps)


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


@settings(max_examples=max(3, EXAMPLES // 5), **FUZZ)
@given(
    st.lists(
        st.tuples(st.booleans(), st.integers(20, 40), CONCURRENT_STEPS), min_size=2, max_size=3
    )
)
def test_review4_threads_render_concurrently_into_one_memo(workers):
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
