"""What a run gives back: the extended thread, its new records, the last response."""

from __future__ import annotations

from typing import Any

import msgspec

from turnwire.client.recording import Records
from turnwire.model.records import Thread, ToolCall
from turnwire.model.usage import GenerationStats, Usage
from turnwire.rendering.compaction import CompactResult

__all__ = ["ResponseMeta", "RunResult"]


class ResponseMeta(msgspec.Struct, frozen=True, kw_only=True):
    """The last response of a run: id, status, model, usage and the finish reason."""

    id: str | None
    status: str | None
    model: str | None
    usage: dict[str, Any] | None
    finish_reason: str


class RunResult(msgspec.Struct, frozen=True, kw_only=True):
    """The outcome of :meth:`Client.run`."""

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
    parsed: Any = None
    """The final answer decoded against the run's output schema (a Struct instance for
    ``output_type=Struct``, plain JSON otherwise); ``None`` when no schema was asked, when the
    model refused, or when the last response has no message (see
    :mod:`turnwire.model.structured`)."""
    refusal: str | None = None
    """The final message's refusal text, when the model refused (``parsed`` is then ``None``)."""
    compaction: CompactResult | None = None
    """The compaction a ``context.window: {compact: ...}`` made before the first request
    (its record is in ``thread``, not in ``records``)."""

    @property
    def cache_hit_ratio(self) -> float | None:
        """The run's prompt-cache hit ratio: its cached input tokens over its input tokens
        (``usage.cached_tokens`` and ``usage.cache_write_tokens`` give the counts); ``None``
        when no response reported input."""
        return None if self.usage is None else self.usage.cache_hit_ratio
