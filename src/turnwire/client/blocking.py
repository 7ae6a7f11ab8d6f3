"""The sync entry points' one way to run a coroutine: in this thread when no event loop runs
here (a script), else in a worker thread with a loop of its own (a notebook, a web handler, an
agent framework calling a sync tool), so ``turnwire.run`` and ``turnwire.run_thread`` work in
both. The caller's thread waits for the answer either way: inside a loop, prefer the async
methods (``await client.run(...)``, ``await client.run_thread(...)``), which let the loop serve
other work meanwhile.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["run_blocking"]

_T = TypeVar("_T")


def run_blocking(main: Callable[[], Coroutine[Any, Any, _T]]) -> _T:
    """``main()`` run to its end on an event loop of its own, and its result (or error)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(main())
    # The context goes along (tracing spans, a caller's context variables).
    context = contextvars.copy_context()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="turnwire-sync") as pool:
        return pool.submit(context.run, asyncio.run, main()).result()
