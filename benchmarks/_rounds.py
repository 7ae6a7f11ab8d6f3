"""What the benchmarks share: subjects timed in alternation, round by round, and their lines.

Every subject of a comparison runs once per round, the floor and the peers with it, the order
rotated from one round to the next; a slow spell of a shared machine then slows all of a
round alike. A ratio is the median over rounds of the two subjects' times in the same round
(a ratio of two medians taken from different moments would keep the slow spell). No
collection is forced before a timed call: each subject pays the garbage collection its own
work causes, as it would in a process that does only that.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping

Samples = dict[str, list[float]]


def alternate(subjects: Mapping[str, Callable[[], object]], rounds: int) -> Samples:
    """Seconds of each call of each subject: ``rounds`` rounds, each running every subject
    once, the order rotated by one each round."""
    names = list(subjects)
    samples: Samples = {name: [] for name in names}
    clock = time.perf_counter
    for round_ in range(rounds):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            fn = subjects[name]
            start = clock()
            fn()
            samples[name].append(clock() - start)
    return samples


def ratio(samples: Samples, subject: str, floor: str) -> float:
    """The median over rounds of ``subject``'s time over ``floor``'s in the same round."""
    return statistics.median(
        s / f for s, f in zip(samples[subject], samples[floor], strict=False) if f > 0
    )


def ms(seconds: list[float]) -> str:
    """``median ms (min ms)`` of ``seconds``."""
    return f"{statistics.median(seconds) * 1e3:.2f} ms (min {min(seconds) * 1e3:.2f})"


def verdict(value: float, target: float, *, at_least: bool = False) -> str:
    """``target <= 2x: met`` (``at_least`` for a target the value must reach)."""
    met = value >= target if at_least else value <= target
    sign = ">=" if at_least else "<="
    return f"target {sign} {target:g}x: {'met' if met else 'MISSED'}"


def skipped(what: str, why: str) -> None:
    """The one line a missing peer prints instead of its numbers."""
    print(f"  {what}: skipped ({why})")
