"""Token usage: per generation (one response) and per run, with the reference's derived figures.

The Responses API reports ``input_tokens`` (cached ones included), ``output_tokens`` (reasoning
included) and ``total_tokens``, with ``input_tokens_details.cached_tokens`` (read from the prompt
cache), ``input_tokens_details.cache_write_tokens`` (written to it: GPT-5.6 and later, billed
above the uncached rate) and ``output_tokens_details.reasoning_tokens``. :class:`Usage` keeps
them and derives what the reference reports: ``prompt_tokens`` = input minus cached (never below
0) and ``completion_tokens`` = output; and :attr:`Usage.cache_hit_ratio`, cached over input. A
figure the server left out, or sent as something other than a whole number, counts as 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

__all__ = ["PROVIDER", "GenerationStats", "Usage"]

PROVIDER = "openai_responses"
"""The provider name a generation reports (the reference's)."""


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _detail(usage: Mapping[str, Any], field: str, key: str) -> int:
    details = usage.get(field)
    return _count(details.get(key)) if isinstance(details, Mapping) else 0


class Usage(msgspec.Struct, frozen=True, kw_only=True):
    """Token counts of one response, or summed over several.

    :ivar input_tokens: what the request cost in input, cached tokens included.
    :ivar cached_tokens: the part of the input served from the prompt cache.
    :ivar cache_write_tokens: the part of the input written to the prompt cache
        (``input_tokens_details.cache_write_tokens``).
    :ivar prompt_tokens: input minus cached (the reference's ``promptTokens``).
    :ivar completion_tokens: the output (the reference's ``completionTokens``), reasoning
        included.
    :ivar reasoning_tokens: the part of the output spent on reasoning.
    :ivar total_tokens: as the server reported it (input plus output when it did not).
    """

    input_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    total_tokens: int = 0

    @classmethod
    def from_api(cls, usage: Mapping[str, Any] | None) -> Usage | None:
        """The usage of a response's ``usage`` object; ``None`` when there is none."""
        if not isinstance(usage, Mapping):
            return None
        input_tokens = _count(usage.get("input_tokens"))
        output_tokens = _count(usage.get("output_tokens"))
        cached = _detail(usage, "input_tokens_details", "cached_tokens")
        total = usage.get("total_tokens")
        return cls(
            input_tokens=input_tokens,
            cached_tokens=cached,
            cache_write_tokens=_detail(usage, "input_tokens_details", "cache_write_tokens"),
            prompt_tokens=max(0, input_tokens - cached),
            completion_tokens=output_tokens,
            reasoning_tokens=_detail(usage, "output_tokens_details", "reasoning_tokens"),
            total_tokens=_count(total) if total is not None else input_tokens + output_tokens,
        )

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
        )

    @property
    def cache_hit_ratio(self) -> float | None:
        """The share of the input served from the prompt cache (``cached_tokens`` over
        ``input_tokens``, which includes them); ``None`` when there was no input."""
        if not self.input_tokens:
            return None
        return min(1.0, self.cached_tokens / self.input_tokens)

    @classmethod
    def sum(cls, usages: Iterable[Usage | None]) -> Usage | None:
        """The sum of those given (``None`` ones skipped); ``None`` when none is given."""
        total: Usage | None = None
        for usage in usages:
            if usage is not None:
                total = usage if total is None else total + usage
        return total


class GenerationStats(msgspec.Struct, frozen=True, kw_only=True):
    """One response of a run: who answered, how it ended, what it cost.

    :ivar provider: always ``openai_responses``.
    :ivar model: the response's model, else the requested one.
    :ivar response_id: the response's id (``None`` when the server sent none).
    :ivar finish_reason: ``stop``, ``tool_calls``, ``length``, ``content_filter`` or ``error``.
    :ivar usage: ``None`` when the response reported no usage.
    :ivar record_ids: the ids of the records it added to the thread (how a stored turn finds
        the generations it holds).
    """

    provider: str = PROVIDER
    model: str | None = None
    response_id: str | None = None
    finish_reason: str
    usage: Usage | None = None
    record_ids: tuple[str, ...] = ()
