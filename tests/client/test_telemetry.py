"""OpenTelemetry spans of a run, its requests and its tool calls, in the in-memory exporter."""

from __future__ import annotations

import pytest
import yaml

import turnwire

from ..conftest import make_container
from .conftest import AFTER_CALL, CALL, THREAD
from .server import Reply, ScriptedServer

sdk = pytest.importorskip("opentelemetry.sdk.trace")
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanKind, StatusCode  # noqa: E402


def _provider():
    exporter = InMemorySpanExporter()
    provider = sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter, provider


def _spans(settings=None, handlers=None, script=None):
    exporter, provider = _provider()
    with ScriptedServer(script or [Reply.sse(CALL), Reply.sse(AFTER_CALL)]) as server:
        result = turnwire.api.run(
            turnwire.load_thread(yaml.safe_load(THREAD)),
            container=make_container(settings),
            base_url=server.base_url,
            handlers=handlers or {"get_capital": lambda country: "Paris, secret"},
            tracer_provider=provider,
        )
        port = server.port
    return result, exporter.get_finished_spans(), port


def test_one_span_per_run_per_request_and_per_tool_call():
    result, spans, port = _spans()
    names = [s.name for s in spans]
    assert sorted(names) == sorted(
        ["invoke_agent turnwire", "chat gpt-4o", "execute_tool get_capital", "chat gpt-4o"]
    )
    run = next(s for s in spans if s.name == "invoke_agent turnwire")
    children = [s for s in spans if s is not run]
    assert all(s.parent is not None and s.parent.span_id == run.context.span_id for s in children)
    first, second = [s for s in spans if s.name.startswith("chat")]
    assert first.kind is SpanKind.CLIENT
    attributes = dict(first.attributes)
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.provider.name"] == "openai"
    assert attributes["gen_ai.request.model"] == "gpt-4o"
    assert attributes["gen_ai.response.model"] == "gpt-4o-2024-08-06"
    assert attributes["gen_ai.response.id"] == result.generations[0].response_id
    assert attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert attributes["gen_ai.usage.input_tokens"] == 255
    assert attributes["gen_ai.usage.output_tokens"] == 16
    assert attributes["server.address"] == "127.0.0.1" and attributes["server.port"] == port
    assert dict(second.attributes)["gen_ai.response.finish_reasons"] == ("stop",)
    tool = next(s for s in spans if s.name.startswith("execute_tool"))
    assert dict(tool.attributes)["gen_ai.tool.call.id"] == result.records.tool_calls[0].id
    assert dict(run.attributes)["gen_ai.usage.input_tokens"] == result.usage.input_tokens


def test_request_and_run_spans_carry_the_cache_reads_and_writes_by_the_conventions():
    from ..test_api_caching import answer

    cached = Reply.sse(answer("r1", input_tokens=1000, cached=800, written=150))
    _, spans, _ = _spans(script=[Reply.sse(CALL), cached])
    chats = [dict(s.attributes) for s in spans if s.name.startswith("chat")]
    # the first answer (the recorded tool call) reports no cache write: 0
    assert [a["gen_ai.usage.cache_creation.input_tokens"] for a in chats] == [0, 150]
    assert [a["gen_ai.usage.cache_read.input_tokens"] for a in chats] == [0, 800]
    # the conventions count cached input inside gen_ai.usage.input_tokens
    assert chats[1]["gen_ai.usage.input_tokens"] == 1000
    run = dict(next(s for s in spans if s.name == "invoke_agent turnwire").attributes)
    assert run["gen_ai.usage.cache_read.input_tokens"] == 800
    assert run["gen_ai.usage.cache_creation.input_tokens"] == 150
    assert run["gen_ai.usage.input_tokens"] == 255 + 1000


def test_no_content_in_spans_unless_configured():
    _, spans, _ = _spans()
    shown = [str(v) for s in spans for v in dict(s.attributes).values()]
    assert not any("secret" in v or "France" in v for v in shown)
    _, spans, _ = _spans({"client": {"telemetry_content": True}})
    tool = next(s for s in spans if s.name.startswith("execute_tool"))
    assert dict(tool.attributes)["gen_ai.tool.call.result"] == "Paris, secret"
    assert "France" in dict(tool.attributes)["gen_ai.tool.call.arguments"]


def test_a_failed_tool_call_marks_its_span_as_an_error():
    _, spans, _ = _spans(handlers={"get_capital": lambda country: 1 / 0})
    tool = next(s for s in spans if s.name.startswith("execute_tool"))
    assert tool.status.status_code is StatusCode.ERROR
    assert dict(tool.attributes)["error.type"] == "tool_error"


def test_telemetry_off_makes_no_spans():
    _, spans, _ = _spans({"client": {"telemetry": False}})
    assert spans == ()


def test_a_compaction_is_a_client_span_with_its_response_and_usage(tmp_path):
    from .test_run import compact_answer, history

    exporter, provider = _provider()
    with ScriptedServer([Reply.json(200, compact_answer("cmp_9"))]) as server:
        turnwire.compact(
            history(),
            container=make_container(),
            base_url=server.base_url,
            tracer_provider=provider,
        )
        port = server.port
    (span,) = exporter.get_finished_spans()
    assert span.name == "compact gpt-4o-mini"
    assert span.kind is SpanKind.CLIENT
    attributes = dict(span.attributes)
    assert attributes["gen_ai.operation.name"] == "compact"
    assert attributes["gen_ai.provider.name"] == "openai"
    assert attributes["gen_ai.request.model"] == "gpt-4o-mini"
    assert attributes["gen_ai.response.id"] == "resp_cmp_9"
    assert attributes["gen_ai.usage.input_tokens"] == 154
    assert attributes["gen_ai.usage.output_tokens"] == 177
    assert attributes["server.address"] == "127.0.0.1" and attributes["server.port"] == port
    assert span.status.status_code is not StatusCode.ERROR


def test_a_compaction_the_server_answers_wrongly_marks_its_span_as_an_error():
    from turnwire.errors import StreamError

    from .test_run import history

    exporter, provider = _provider()
    with (
        ScriptedServer([Reply.json(200, {"object": "response", "output": []})]) as server,
        pytest.raises(StreamError),
    ):
        turnwire.compact(
            history(),
            container=make_container(),
            base_url=server.base_url,
            tracer_provider=provider,
        )
    (span,) = exporter.get_finished_spans()
    assert span.name == "compact gpt-4o-mini"
    assert span.status.status_code is StatusCode.ERROR
    assert "gen_ai.response.id" not in dict(span.attributes)


def test_an_automatic_compaction_is_a_span_inside_its_run(tmp_path):
    from turnwire.store import open_store

    from .test_run import ANSWER, compact_answer, history

    exporter, provider = _provider()
    store = open_store(str(tmp_path / "threads.db"))
    thread_id = store.import_thread(history())
    settings = {"context": {"window": {"compact": {"threshold": 10}}}}
    try:
        with ScriptedServer(
            [Reply.json(200, compact_answer("cmp_auto")), Reply.sse(ANSWER)]
        ) as server:
            turnwire.api.run_thread(
                thread_id,
                store=store,
                prompt="And 5+5?",
                container=make_container(settings),
                base_url=server.base_url,
                tracer_provider=provider,
            )
    finally:
        store.close()
    spans = exporter.get_finished_spans()
    assert sorted(s.name for s in spans) == [
        "chat gpt-4o-mini",
        "compact gpt-4o-mini",
        "invoke_agent turnwire",
    ]
    run = next(s for s in spans if s.name == "invoke_agent turnwire")
    compaction = next(s for s in spans if s.name.startswith("compact"))
    assert compaction.parent is not None and compaction.parent.span_id == run.context.span_id
    assert dict(compaction.attributes)["gen_ai.response.id"] == "resp_cmp_auto"
