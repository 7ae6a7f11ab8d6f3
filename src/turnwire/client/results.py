"""What a run gives back: the extended thread, its new records, the last response."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Generic

import msgspec

from turnwire.client.recording import Records
from turnwire.errors import MaxIterationsError, OutputValidationError, ToolHandlerMissingError
from turnwire.model.records import Thread, ToolCall
from turnwire.model.usage import GenerationStats, Usage
from turnwire.rendering.compaction import CompactResult
from turnwire.rendering.ledger import Ledger, PrefixReport

__all__ = ["KeptError", "Parsed", "ResponseMeta", "RunResult", "Shape", "kept"]

# Parsed: what RunResult.parsed holds; Shape: the Struct class an ``output_schema=`` argument
# names, which makes the run's result a RunResult[Shape]. Either is Any when nothing names it
# (a type variable's default, PEP 696: Python 3.13's typing, which type checkers read from
# typing_extensions for any Python).
if TYPE_CHECKING:
    from typing_extensions import TypeVar

    Parsed = TypeVar("Parsed", default=Any)
    Shape = TypeVar("Shape", bound=msgspec.Struct, default=Any)
else:
    from typing import TypeVar

    Parsed = TypeVar("Parsed")
    Shape = TypeVar("Shape", bound=msgspec.Struct)


class ResponseMeta(msgspec.Struct, frozen=True, kw_only=True):
    """The last response of a run: id, status, model, usage and the finish reason."""

    id: str | None
    status: str | None
    model: str | None
    usage: dict[str, Any] | None
    finish_reason: str


class RunResult(msgspec.Struct, Generic[Parsed], frozen=True, kw_only=True):
    """The outcome of :meth:`Client.run`: ``RunResult[Invoice]`` for a run asked for
    ``output_schema=Invoice`` (a :class:`msgspec.Struct`), whose :attr:`parsed` is an
    ``Invoice`` (or ``None``); ``RunResult`` (``RunResult[Any]``) otherwise."""

    thread: Thread
    records: Records
    response: ResponseMeta
    iterations: int
    requests: int
    resolved: tuple[ToolCall, ...] = ()
    """Tool calls recorded earlier without a result (``--once``) that this run ran first."""
    request_fingerprint: str | None = None
    """The fingerprint of the last request's prefix (what a later replay is checked against)."""
    generations: tuple[GenerationStats, ...] = ()
    """Each response of the run, in order: provider, model, finish reason, usage."""
    usage: Usage | None = None
    """The run's total: every generation's usage summed (``None`` when none reported any)."""
    parsed: Parsed | None = None
    """The final answer decoded against the run's output schema (a Struct instance for
    ``output_schema=Struct``, plain JSON otherwise); ``None`` when no schema was asked, when the
    model refused, or when the last response has no message (see
    :mod:`turnwire.model.structured`)."""
    refusal: str | None = None
    """The final message's refusal text, when the model refused (``parsed`` is then ``None``)."""
    compaction: CompactResult | None = None
    """The compaction a ``context.window: {compact: ...}`` made before the first request
    (its record is in ``thread``, not in ``records``)."""
    prefix: tuple[PrefixReport, ...] = ()
    """How each request of the run relates to the one sent before it (the first to the last
    request of the previous run, when the caller gave its ledger: a stored thread keeps it),
    in order: whether it extends it, and if not the first difference and its cause (see
    :mod:`turnwire.rendering.ledger`). A request that does not extend the one before is also
    logged as a ``prefix-reset`` warning."""
    ledger: Ledger | None = None
    """The ledger of the run's last request: what the next run's first request is compared
    with (``Client.run(previous_ledger=...)``; :func:`turnwire.run_thread` stores it)."""

    @property
    def text(self) -> str:
        """The text of the run's final answer: its last message (``""`` when the run ended
        without one: a refusal, a ``once`` run stopped at tool calls). Earlier messages of the
        run (said before a tool call) are in :attr:`records`."""
        last = max(self.records.messages, key=lambda m: (m.created_at, m.seq), default=None)
        return (last.content or "") if last is not None else ""

    @property
    def resets(self) -> tuple[PrefixReport, ...]:
        """The requests of :attr:`prefix` that did not extend the one before."""
        return tuple(report for report in self.prefix if not report.extends)

    @property
    def cache_hit_ratio(self) -> float | None:
        """The run's prompt-cache hit ratio: its cached input tokens over its input tokens
        (``usage.cached_tokens`` and ``usage.cache_write_tokens`` give the counts); ``None``
        when no response reported input."""
        return None if self.usage is None else self.usage.cache_hit_ratio


KeptError = OutputValidationError | MaxIterationsError | ToolHandlerMissingError
"""The errors a run raises after the model answered: what the run recorded (their
``result``) is kept, saved or stored, before the error goes on."""


async def kept(run: Awaitable[RunResult[Any]]) -> tuple[RunResult[Any], KeptError | None]:
    """``await run``, and the error it raised after the model answered (an output that does
    not match its schema, the iteration limit, a call no handler answers) with the result that
    error carries; any other error is raised."""
    try:
        return await run, None
    except (OutputValidationError, MaxIterationsError, ToolHandlerMissingError) as err:
        if not isinstance(err.result, RunResult):
            raise
        return err.result, err
