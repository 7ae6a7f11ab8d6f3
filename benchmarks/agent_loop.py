"""What the next request of a growing conversation costs: an agent loop through a warm renderer.

A thread of 10,000 timeline records (``benchmarks/render.py``'s cycles of user message, replayed
reasoning with 1 KB of encrypted content, tool call with output, answer; every reasoning item
valid) grows by one exchange (one such cycle) per request, and each request renders a new
``Thread`` built as the client builds it: the old record tuples plus the new records, the new
reasoning recorded with its fingerprint pending, rendered with ``pending_reasoning`` and then
stamped with the fingerprints the render gave (``turnwire.client.assembly.pending_ids`` and
``stamp``, the client's own functions), so the next request sees those thoughts rewritten. The
render goes through ``turnwire.render`` with one container, so its memo carries over from the
previous request. The 10,000- and 20,000-record loops run in alternation, request by request,
so a noisy moment of the machine slows both alike. Printed, as medians over the requests, each
measured in alternation with its floor in the same run:

* the render of the next request against the floor: msgspec-encoding that request's finished
  body alone (target: within 1.0x, faster than re-encoding the body from scratch);
* the same at 20,000 records, and the ratio of the two per-request times (target: within 1.3x);
* the fixed cost of a repeated ``render(tiny_thread, config_files=[...], cache=cache)`` (a
  caller-owned :class:`~turnwire.rendering.container_cache.ContainerCache`) against
  ``render(tiny_thread, container=...)`` (target: under 0.5 ms), and what a cold build costs
  (which is what ``render(config_files=[...])`` without a cache pays every time).

Run: ``uv run python benchmarks/agent_loop.py`` (``--quick`` for a short run).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec

import turnwire
from turnwire.client.assembly import pending_ids, stamp
from turnwire.model.records import Thread
from turnwire.rendering.body import encode_body
from turnwire.rendering.sweep import PENDING_FINGERPRINT

sys.path.insert(0, str(Path(__file__).resolve().parent))
from render import SETTINGS, synthetic_thread, with_valid_fingerprints

RECORDS_PER_EXCHANGE = 4


def growing(full: Thread, base: int, requests: int) -> list[Thread]:
    """The thread as the client sends it at each request: ``base`` records, then one more
    exchange per request; each a new ``Thread`` whose tuples extend the previous ones."""
    by_cycle: dict[str, list[Any]] = {"messages": [], "thoughts": [], "tool_calls": []}
    cycles = len(full.thoughts)
    for field in by_cycle:
        records = getattr(full, field)
        per_cycle = len(records) // cycles
        by_cycle[field] = [records[i * per_cycle : (i + 1) * per_cycle] for i in range(cycles)]
    start = base // RECORDS_PER_EXCHANGE
    thread = msgspec.structs.replace(
        full,
        **{field: sum(chunks[:start], ()) for field, chunks in by_cycle.items()},
    )
    threads = [thread]
    for cycle in range(start, start + requests):
        thread = msgspec.structs.replace(
            thread,
            **{field: getattr(thread, field) + chunks[cycle] for field, chunks in by_cycle.items()},
        )
        threads.append(thread)
    return threads


def as_recorded(kept: Thread, grown: Thread) -> Thread:
    """``kept``'s records (the same tuples' objects) and the records ``grown`` adds after them,
    its new reasoning with the fingerprint a run records before the next request is rendered."""
    fields = {}
    for field in ("messages", "thoughts", "tool_calls"):
        old = getattr(kept, field)
        added = getattr(grown, field)[len(old) :]
        if field == "thoughts":
            added = tuple(
                msgspec.structs.replace(
                    thought,
                    payload=msgspec.structs.replace(
                        thought.payload, prefix_fingerprint=PENDING_FINGERPRINT
                    ),
                )
                for thought in added
            )
        fields[field] = old + added
    return msgspec.structs.replace(grown, **fields)


class Loop:
    """One agent loop: renders its next request when asked, timing it and its floor."""

    def __init__(self, threads: list[Thread], container: Any) -> None:
        self.threads, self.container = threads[1:], container
        self.current = threads[0]
        turnwire.render(self.current, container=container, model="gpt-5")  # under way
        self.renders: list[float] = []
        self.floors: list[float] = []
        self.size = 0

    def step(self, index: int) -> None:
        """Render request ``index`` as the client would, then its encode floor."""
        thread = as_recorded(self.current, self.threads[index])
        pending = pending_ids(thread)
        gc.collect()
        start = time.perf_counter()
        rendered = turnwire.render(
            thread, container=self.container, model="gpt-5", pending_reasoning=pending
        )
        self.renders.append(time.perf_counter() - start)
        gc.collect()
        start = time.perf_counter()
        encode_body(rendered.request)
        self.floors.append(time.perf_counter() - start)
        self.size = len(rendered.body)
        self.current = stamp(thread, pending, rendered.rendered.stamped)
        kinds = [type(i).__name__ for i in rendered.rendered.input]
        assert kinds.count("ReasoningItem") == len(thread.thoughts), "every reasoning item replays"

    def result(self) -> tuple[float, float, int]:
        """Median seconds of a request's render and of its floor, and the last body's size."""
        return statistics.median(self.renders), statistics.median(self.floors), self.size


def fixed_cost(runs: int) -> tuple[float, float, float]:
    """Median seconds of a repeated ``render(config_files=..., cache=...)`` with a cache the
    caller keeps, of the same render through a kept container, and of a cold container build."""
    import yaml

    from turnwire.rendering.container_cache import ContainerCache

    thread = synthetic_thread(4)
    with tempfile.TemporaryDirectory() as folder:
        profile = Path(folder) / "profile.yaml"
        profile.write_text(yaml.safe_dump(SETTINGS))
        files = [str(profile)]
        container = turnwire.build_container(files)
        cache = ContainerCache()
        turnwire.render(thread, config_files=files, model="gpt-5", cache=cache)
        turnwire.render(thread, container=container, model="gpt-5")
        repeated, kept, cold = [], [], []
        for _ in range(runs):
            for fn, samples in (
                (
                    lambda: turnwire.render(thread, config_files=files, model="gpt-5", cache=cache),
                    repeated,
                ),
                (lambda: turnwire.render(thread, container=container, model="gpt-5"), kept),
            ):
                gc.collect()
                start = time.perf_counter()
                fn()
                samples.append(time.perf_counter() - start)
        for _ in range(max(3, runs // 5)):
            gc.collect()
            start = time.perf_counter()
            fresh = turnwire.build_container(files)
            turnwire.render(thread, container=fresh, model="gpt-5")
            cold.append(time.perf_counter() - start)
    return statistics.median(repeated), statistics.median(kept), statistics.median(cold)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer requests")
    args = parser.parse_args()
    requests = 5 if args.quick else 25

    settings = turnwire.load_settings(overrides=SETTINGS)
    loops: dict[int, Loop] = {}
    for base in (10_000, 20_000):
        total = base + RECORDS_PER_EXCHANGE * (requests + 1)
        full = with_valid_fingerprints(synthetic_thread(total), settings)
        threads = growing(full, base, requests)
        loops[base] = Loop(threads, turnwire.build_container(settings=settings))
    for index in range(requests):  # the two loops in alternation: a noisy moment hits both
        for each in loops.values():
            each.step(index)
    results = {base: each.result() for base, each in loops.items()}

    print(
        f"turnwire agent loop benchmark (Python {sys.version.split()[0]}, median of "
        f"{requests} requests, each alternated with its floor and with the other loop's)"
    )
    print(f"{'records':>8} {'body':>9} {'render ms':>10} {'floor ms':>9} {'render/floor':>13}")
    for base, (render_s, floor_s, size) in results.items():
        print(
            f"{base:>8} {size / 1e6:>8.2f}M {render_s * 1e3:>10.2f} {floor_s * 1e3:>9.2f} "
            f"{render_s / floor_s:>12.2f}x"
        )
    ratio = results[10_000][0] / results[10_000][1]
    print(f"next request at 10k within {ratio:.2f}x its encode floor (target 1.0x)")
    growth = results[20_000][0] / results[10_000][0]
    print(f"per-request time 20k/10k: {growth:.2f}x (target at most 1.3x)")

    repeated, kept, cold = fixed_cost(31 if not args.quick else 9)
    print(
        f"render(config_files=[...], cache=...) repeated: {repeated * 1e3:.3f} ms, through a kept "
        f"container {kept * 1e3:.3f} ms -> fixed cost {(repeated - kept) * 1e3:.3f} ms "
        f"(target under 0.5 ms; a cold build and render: {cold * 1e3:.1f} ms)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
