"""The daemon workers that run sync handlers: reused from call to call, bounded when idle,
ended when idle too long, and a hung call's worker abandoned, never handed another call."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

import pytest

from turnwire.client.tools import _in_daemon_thread, _TimedOut, _Workers


def test_sequential_calls_reuse_one_worker() -> None:
    async def three() -> list[int]:
        return [await _in_daemon_thread(threading.get_ident, 5.0) for _ in range(3)]

    idents = asyncio.run(three())
    assert len(set(idents)) == 1 and idents[0] != threading.get_ident()


def test_a_hung_call_s_worker_is_never_handed_another_call() -> None:
    release = threading.Event()
    hung: list[int] = []

    def hang() -> None:
        hung.append(threading.get_ident())
        release.wait(10)

    async def scenario() -> int:
        with pytest.raises(_TimedOut):
            await _in_daemon_thread(hang, 0.1)
        return await _in_daemon_thread(threading.get_ident, 5.0)

    try:
        after = asyncio.run(scenario())
    finally:
        release.set()
    assert hung and after != hung[0]


def test_at_most_max_idle_workers_wait_and_each_runs_its_jobs_once() -> None:
    workers = _Workers(max_idle=2, idle_s=5.0)
    gate = threading.Barrier(6)
    ran: list[int] = []
    lock = threading.Lock()
    done = threading.Semaphore(0)

    def job(n: int) -> Callable[[], None]:
        gate.wait(5)  # five workers at once (and the test)
        with lock:
            ran.append(n)
        return done.release

    for n in range(5):
        workers.submit(lambda n=n: job(n))
    gate.wait(5)
    for _ in range(5):
        assert done.acquire(timeout=5)
    deadline = time.monotonic() + 5
    while workers.idle != 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sorted(ran) == [0, 1, 2, 3, 4]
    assert workers.idle == 2


def test_an_idle_worker_ends_after_idle_s() -> None:
    workers = _Workers(max_idle=4, idle_s=0.05)
    seen: list[threading.Thread] = []
    finished = threading.Event()
    workers.submit(lambda: (seen.append(threading.current_thread()), finished.set)[1])
    assert finished.wait(5)
    seen[0].join(timeout=5)
    assert not seen[0].is_alive()
    assert workers.idle == 0


def test_jobs_handed_over_as_workers_expire_all_run_exactly_once() -> None:
    """Submits racing the idle expiry (a worker taken just as its wait ends)."""
    workers = _Workers(max_idle=3, idle_s=0.0005)
    count = 0
    lock = threading.Lock()
    finished = threading.Semaphore(0)

    def job() -> Callable[[], None]:
        nonlocal count
        with lock:
            count += 1
        return finished.release

    for index in range(2000):
        workers.submit(job)
        if index % 50 == 0:
            time.sleep(0.001)
    for _ in range(2000):
        assert finished.acquire(timeout=10)
    time.sleep(0.05)
    assert count == 2000
