"""OpenTelemetry spans, following the GenAI semantic conventions (optional: ``turnwire[otel]``).

With ``opentelemetry-api`` installed and ``client.telemetry`` on (the default), a run is one
``invoke_agent turnwire`` span; inside it each request actually sent is a ``chat {model}``
client span (model, response id and model, finish reason, token usage, server address), each
call of the compact endpoint a ``compact {model}`` client span (model, response id, token
usage, server address), and each tool call an ``execute_tool {name}`` span. Without a
configured tracer provider the API's no-op tracer makes this free; without the package it is
not imported at all.

No content reaches a span (no prompt, answer, arguments or results) unless
``client.telemetry_content`` is set.

Token usage follows the conventions: ``gen_ai.usage.input_tokens`` includes the cached tokens,
which ``gen_ai.usage.cache_read.input_tokens`` gives, and
``gen_ai.usage.cache_creation.input_tokens`` the tokens written to the prompt cache (the
response's ``input_tokens_details.cache_write_tokens``). ``gen_ai.usage.cached_tokens`` repeats
the cache reads under the name turnwire used first.
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from turnwire.model.records import ToolCall
    from turnwire.model.usage import GenerationStats, Usage
    from turnwire.wire.response import Generation

__all__ = ["Telemetry"]

_PROVIDER = "openai"


class Telemetry:
    """Spans for one client; every method is a no-op when telemetry is off or unavailable.

    :param enabled: ``client.telemetry``.
    :param capture_content: ``client.telemetry_content``.
    :param base_url: the endpoint (``server.address`` / ``server.port``).
    :param tracer_provider: a provider to use instead of the global one.
    """

    def __init__(
        self, *, enabled: bool, capture_content: bool, base_url: str, tracer_provider: Any = None
    ) -> None:
        self.capture_content = capture_content
        self._tracer: Any = None
        if enabled and importlib.util.find_spec("opentelemetry") is not None:
            from opentelemetry import trace

            self._tracer = trace.get_tracer("turnwire", tracer_provider=tracer_provider)
        parts = urlsplit(base_url)
        self._server: dict[str, Any] = {"server.address": parts.hostname or ""}
        if parts.port is not None:
            self._server["server.port"] = parts.port

    @contextlib.contextmanager
    def _span(self, name: str, kind: str, attributes: dict[str, Any]) -> Iterator[Any]:
        if self._tracer is None:
            yield None
            return
        from opentelemetry.trace import SpanKind

        with self._tracer.start_as_current_span(
            name, kind=getattr(SpanKind, kind), attributes=attributes
        ) as span:
            yield span

    def run(self, model: str | None) -> contextlib.AbstractContextManager[Any]:
        """The span of one run (``invoke_agent``)."""
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.provider.name": _PROVIDER,
            "gen_ai.agent.name": "turnwire",
        }
        if model:
            attributes["gen_ai.request.model"] = model
        return self._span("invoke_agent turnwire", "INTERNAL", attributes)

    def request(self, model: str) -> contextlib.AbstractContextManager[Any]:
        """The span of one request actually sent (``chat``)."""
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": _PROVIDER,
            "gen_ai.request.model": model,
            **self._server,
        }
        return self._span(f"chat {model}", "CLIENT", attributes)

    def compaction(self, model: str) -> contextlib.AbstractContextManager[Any]:
        """The span of one call of the compact endpoint (``compact``: the conventions name no
        operation for it, so it has a name of its own)."""
        attributes = {
            "gen_ai.operation.name": "compact",
            "gen_ai.provider.name": _PROVIDER,
            "gen_ai.request.model": model,
            **self._server,
        }
        return self._span(f"compact {model}", "CLIENT", attributes)

    def compacted(self, span: Any, response_id: str, usage: Mapping[str, Any]) -> None:
        """Put a compaction's response id and token usage on its span."""
        if span is None:
            return
        from turnwire.model.usage import Usage

        span.set_attribute("gen_ai.response.id", response_id)
        _usage(span, Usage.from_api(usage))

    def tool(self, call: ToolCall) -> contextlib.AbstractContextManager[Any]:
        """The span of one tool call (``execute_tool``)."""
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.tool,
            "gen_ai.tool.call.id": call.id,
            "gen_ai.tool.type": "function",
        }
        if self.capture_content:
            import json

            attributes["gen_ai.tool.call.arguments"] = json.dumps(call.args, default=str)
        return self._span(f"execute_tool {call.tool}", "INTERNAL", attributes)

    def answered(self, span: Any, generation: Generation, reason: str) -> None:
        """Put a response's outcome on its request span."""
        if span is None:
            return
        from turnwire.model.usage import Usage

        if generation.response_id:
            span.set_attribute("gen_ai.response.id", generation.response_id)
        if generation.model:
            span.set_attribute("gen_ai.response.model", generation.model)
        span.set_attribute("gen_ai.response.finish_reasons", [reason])
        _usage(span, Usage.from_api(generation.usage))
        if self.capture_content and generation.text:
            span.set_attribute("gen_ai.output.text", generation.text)

    def ran(self, span: Any, call: ToolCall) -> None:
        """Put a tool call's outcome on its span."""
        if span is None:
            return
        if call.is_error:
            from opentelemetry.trace import Status, StatusCode

            span.set_attribute("error.type", "tool_error")
            span.set_status(Status(StatusCode.ERROR))
        if self.capture_content and call.result is not None and call.result.text is not None:
            span.set_attribute("gen_ai.tool.call.result", call.result.text)

    def finished(
        self, span: Any, generations: tuple[GenerationStats, ...], usage: Usage | None
    ) -> None:
        """Put a run's outcome on its span."""
        if span is None:
            return
        if generations:
            last = generations[-1]
            if last.model:
                span.set_attribute("gen_ai.response.model", last.model)
            span.set_attribute(
                "gen_ai.response.finish_reasons", [g.finish_reason for g in generations]
            )
        _usage(span, usage)


def _usage(span: Any, usage: Usage | None) -> None:
    if usage is None:
        return
    span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
    span.set_attribute("gen_ai.usage.output_tokens", usage.completion_tokens)
    span.set_attribute("gen_ai.usage.cache_read.input_tokens", usage.cached_tokens)
    span.set_attribute("gen_ai.usage.cache_creation.input_tokens", usage.cache_write_tokens)
    span.set_attribute("gen_ai.usage.cached_tokens", usage.cached_tokens)
    span.set_attribute("gen_ai.usage.reasoning_tokens", usage.reasoning_tokens)
