"""What the next request of a growing conversation costs: an agent loop through a warm renderer.

A thread of 10,000 timeline records (``benchmarks/render.py``'s cycles of user message, replayed
reasoning with 1 KB of encrypted content, tool call with output, answer; every reasoning item
valid) grows by one exchange (one such cycle) per request, and each request renders a new
``Thread`` built as the client builds it: the old record tuples plus the new records, the new
reasoning recorded with its fingerprint pending, rendered with ``pending_reasoning`` and then
stamped with the fingerprints the render gave (``turnwire.client.assembly.pending_ids`` and
``stamp``, the client's own functions), so the next request sees those thoughts rewritten. The
render goes through ``turnwire.render`` with one container, so its memo carries over from the
previous request. The same at 100,000 records (``--sizes``), and a third loop where the thread
is reloaded from a SQLite store before each request, as ``Client.run_thread`` does
(``store.load(thread_id)``: new record objects every request; the exchange is appended as turns
first, untimed, as the run before stored it).

Each request is a round: every loop renders its next request, in an order rotated round by
round, and each render is followed by the encode of its body (its floor) in the same round. No
collection is forced: each render pays the garbage collection it causes. Printed per loop,
medians over the requests (min beside), ratios the median of each request's:

* spliced: ``turnwire.render`` alone; its body stays in the pieces it was spliced from
  (``RenderedRequest.encoded``), which the client sends as they are;
* joined: the same render plus ``.body`` (the pieces joined into one ``bytes``, what a caller
  that wants the bytes pays);
* floor: ``msgspec``-encoding that request's finished body alone, into one ``bytes``;
* reloaded: ``store.load`` of the thread, then its render as ``run_thread`` does it
  (``check_thread_once(thread, container, loaded=True)``: the loader checked the records, then
  ``turnwire.render``); the render's ratio is the target, load and render together beside it.

Targets: the next request at 10k within 1.0x its encode floor, reloaded from the store too; the
per-request time at 100k within 1.5x of 10k. Last, the fixed cost of a repeated
``render(tiny_thread, config_files=[...], cache=cache)`` (a caller-owned
:class:`~turnwire.rendering.container_cache.ContainerCache`) against ``render(tiny_thread,
container=...)`` (target: under 0.5 ms), alternated, and what a cold build costs.

Run: ``uv run python benchmarks/agent_loop.py`` (``--quick`` for a short run at 1k and 10k).
"""

from __future__ import annotations

import argparse
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
from turnwire.rendering.renderer import check_thread_once
from turnwire.rendering.sweep import PENDING_FINGERPRINT

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _rounds import Samples, alternate, ms, verdict
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
    """One agent loop: renders its next request when asked, timing it, its join and its floor."""

    def __init__(self, threads: list[Thread], container: Any) -> None:
        self.threads, self.container = threads[1:], container
        self.current = threads[0]
        turnwire.render(self.current, container=container, model="gpt-5")  # under way
        self.renders: list[float] = []
        self.joins: list[float] = []
        self.floors: list[float] = []
        self.size = 0

    def step(self, index: int) -> None:
        """Render request ``index`` as the client would, join its body, then its floor."""
        clock = time.perf_counter
        thread = as_recorded(self.current, self.threads[index])
        pending = pending_ids(thread)
        start = clock()
        rendered = turnwire.render(
            thread, container=self.container, model="gpt-5", pending_reasoning=pending
        )
        self.renders.append(clock() - start)
        start = clock()
        body = rendered.body
        self.joins.append(clock() - start)
        start = clock()
        floor = encode_body(rendered.request)
        self.floors.append(clock() - start)
        assert body == floor, "the spliced body must be the encoded one"
        self.size = len(body)
        self.current = stamp(thread, pending, rendered.rendered.stamped)
        kinds = [type(i).__name__ for i in rendered.rendered.input]
        assert kinds.count("ReasoningItem") == len(thread.thoughts), "every reasoning item replays"


class StoredLoop:
    """The same growth, the thread reloaded from a SQLite store before each request."""

    def __init__(self, threads: list[Thread], container: Any, folder: str) -> None:
        from turnwire.store.sqlite import SQLiteStore

        self.threads, self.container = threads, container
        self.store = SQLiteStore(Path(folder) / "threads.db")
        self.thread_id = self.store.import_thread(threads[0])
        first = self.store.load(self.thread_id)
        turnwire.render(first, container=container, model="gpt-5")  # under way
        self.loads: list[float] = []
        self.renders: list[float] = []
        self.floors: list[float] = []
        self.size = 0

    def step(self, index: int) -> None:
        """Store exchange ``index`` (untimed), reload the thread, render it, then its floor."""
        clock = time.perf_counter
        before, after = self.threads[index], self.threads[index + 1]
        added = msgspec.structs.replace(
            after,
            messages=after.messages[len(before.messages) :],
            thoughts=after.thoughts[len(before.thoughts) :],
            tool_calls=after.tool_calls[len(before.tool_calls) :],
        )
        turns = self.store.builder.records_as_turns(added)
        last = self.store.last_position(self.thread_id)
        self.store.append_turns(self.thread_id, turns, expected_last=last)
        start = clock()
        thread = self.store.load(self.thread_id)
        self.loads.append(clock() - start)
        start = clock()
        # As run_thread does: the loader checked the records, which are only remembered.
        check_thread_once(thread, self.container, loaded=True)
        rendered = turnwire.render(thread, container=self.container, model="gpt-5")
        self.renders.append(clock() - start)
        start = clock()
        encode_body(rendered.request)
        self.floors.append(clock() - start)
        self.size = len(rendered.body)
        kinds = [type(i).__name__ for i in rendered.rendered.input]
        assert kinds.count("ReasoningItem") == len(thread.thoughts), "every reasoning item replays"

    def close(self) -> None:
        self.store.close()


def without_attachments(thread: Thread) -> Thread:
    replace = msgspec.structs.replace
    return replace(thread, messages=tuple(replace(m, attachments=()) for m in thread.messages))


def median_ratio(subject: list[float], floor: list[float]) -> float:
    return statistics.median(s / f for s, f in zip(subject, floor, strict=True))


def fixed_cost(rounds: int) -> tuple[Samples, list[float]]:
    """A repeated ``render(config_files=..., cache=...)`` with a cache the caller keeps and the
    same render through a kept container, alternated; and cold container builds."""
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
        samples = alternate(
            {
                "cached": lambda: turnwire.render(
                    thread, config_files=files, model="gpt-5", cache=cache
                ),
                "kept": lambda: turnwire.render(thread, container=container, model="gpt-5"),
            },
            rounds,
        )
        cold = []
        for _ in range(max(3, rounds // 5)):
            start = time.perf_counter()
            fresh = turnwire.build_container(files)
            turnwire.render(thread, container=fresh, model="gpt-5")
            cold.append(time.perf_counter() - start)
    return samples, cold


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer requests, 1k and 10k")
    parser.add_argument(
        "--sizes", type=int, nargs=2, metavar=("SMALL", "LARGE"), help="default 10000 100000"
    )
    args = parser.parse_args()
    requests = 5 if args.quick else 25
    small, large = args.sizes or ((1_000, 10_000) if args.quick else (10_000, 100_000))

    settings = turnwire.load_settings(overrides=SETTINGS)
    loops: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="turnwire-agent-loop-") as folder:
        for base in (small, large):
            total = base + RECORDS_PER_EXCHANGE * (requests + 1)
            full = with_valid_fingerprints(synthetic_thread(total), settings)
            threads = growing(full, base, requests)
            loops[f"{base}"] = Loop(threads, turnwire.build_container(settings=settings))
            if base == small:  # the store keeps pointers, not inline bytes: no images here
                plain = without_attachments(synthetic_thread(total))
                loops["stored"] = StoredLoop(
                    growing(with_valid_fingerprints(plain, settings), base, requests),
                    turnwire.build_container(settings=settings),
                    folder,
                )
        names = list(loops)
        for index in range(requests):  # a round: every loop's next request, order rotated
            shift = index % len(names)
            for name in names[shift:] + names[:shift]:
                loops[name].step(index)
        loops["stored"].close()

    print(
        f"turnwire agent loop benchmark (Python {sys.version.split()[0]}; {requests} requests "
        "per loop, each a round alternating the loops and each render with its floor; no forced "
        "collection; ms median (min), ratios the median of each request's)"
    )
    for base in (small, large):
        each = loops[f"{base}"]
        joined = [r + j for r, j in zip(each.renders, each.joins, strict=True)]
        print(f"{base} records, a {each.size / 1e6:.2f} MB body, grown one exchange a request:")
        spliced_ratio = median_ratio(each.renders, each.floors)
        target = f" ({verdict(spliced_ratio, 1.0)})" if base == 10_000 else ""
        print(
            f"  spliced  {ms(each.renders)}  {spliced_ratio:.2f}x the floor{target}"
            "  [turnwire.render; the body left in its pieces, sent as they are]"
        )
        print(
            f"  joined   {ms(joined)}  {median_ratio(joined, each.floors):.2f}x the floor"
            "  [the same render, then .body joins the pieces into one bytes]"
        )
        print(f"  floor    {ms(each.floors)}  [msgspec-encoding the finished body into one bytes]")
    stored = loops["stored"]
    both = [a + b for a, b in zip(stored.loads, stored.renders, strict=True)]
    reloaded = median_ratio(stored.renders, stored.floors)
    print(
        f"{small} records reloaded from a SQLite store before each request (as "
        f"Client.run_thread does; a {stored.size / 1e6:.2f} MB body, the same thread without "
        "its images: the store keeps file pointers, not inline bytes):"
    )
    print(
        f"  render   {ms(stored.renders)}  {reloaded:.2f}x the floor"
        + (f" ({verdict(reloaded, 1.0)})" if small == 10_000 else "")
        + "  [check_thread_once(loaded=True) + turnwire.render of the reloaded thread, new "
        "record objects, as run_thread renders it]"
    )
    print(
        f"  load     {ms(stored.loads)}  load + render {median_ratio(both, stored.floors):.2f}x"
        " the floor  [store.load(thread_id)]"
    )
    print(f"  floor    {ms(stored.floors)}")
    growth = median_ratio(loops[f"{large}"].renders, loops[f"{small}"].renders)
    print(
        f"per-request time {large // 1000}k/{small // 1000}k: {growth:.2f}x (spliced renders of "
        f"the same round"
        + (f"; {verdict(growth, 1.5)})" if (small, large) == (10_000, 100_000) else ")")
    )

    samples, cold = fixed_cost(9 if args.quick else 31)
    fixed = statistics.median(
        c - k for c, k in zip(samples["cached"], samples["kept"], strict=True)
    )
    print(
        f"render(config_files=[...], cache=...) repeated: {ms(samples['cached'])}; through a kept "
        f"container {ms(samples['kept'])}; the difference in a round, median: "
        f"{fixed * 1e3:.3f} ms (target under 0.5 ms); a cold build and render: "
        f"{statistics.median(cold) * 1e3:.1f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
