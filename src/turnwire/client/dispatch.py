"""Dispatch: render, guard, send, stream, record, run tools, loop.

One iteration renders the thread (preflight included), checks the context window, POSTs the
exact bytes, reads the stream into a :class:`~turnwire.client.slots.Generation` and records it
as thread records: messages, thoughts (with the replay payload when reasoning replay is on)
and tool calls (composite ``call_id|fc_...`` ids), all stamped with one timestamp and strictly
increasing ``seq``. Tool calls then run in order and their results are recorded; the loop goes
on until the model answers without calls, or ``client.max_iterations``.

A 400 that blames a replayed reasoning item (``invalid_encrypted_content`` or a pairing
phrase) is retried once without reasoning, and only when the request carried reasoning items
or paired ids; the retry strips both. Nothing is recorded from a failed, stalled or rejected
exchange: the thread stays as it was.
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import msgspec

from turnwire.approvals import ApprovalDecision, approval_records
from turnwire.client.progress import (
    ItemDoneEvent,
    ProgressEvent,
    ResponseDoneEvent,
    ToolFinishedEvent,
    ToolStartedEvent,
    from_wire,
)
from turnwire.client.slots import (
    Generation,
    HostedOutput,
    MessageOutput,
    ReasoningOutput,
    ResponseAccumulator,
    ToolCallOutput,
    generation_from_response,
)
from turnwire.client.sse import SSEDecoder
from turnwire.client.telemetry import Telemetry
from turnwire.client.text_calls import TextToolCalls, apply_text_tool_calls
from turnwire.client.tools import ToolExecutor, artifact_tools, parse_arguments
from turnwire.client.transport import RetryPolicy, Transport
from turnwire.compaction import CompactResult
from turnwire.errors import (
    ConfigError,
    HttpError,
    InputError,
    MissingApiKeyError,
    OutputValidationError,
    ReasoningReplayRejectedError,
    StreamError,
    StreamStalledError,
    validation_location,
)
from turnwire.hosted import seal
from turnwire.model import (
    REPLAY_TAG,
    HostedItem,
    Identity,
    Message,
    ReasoningPayload,
    Thought,
    Thread,
    ToolCall,
    ToolResult,
)
from turnwire.pipeline import PENDING_FINGERPRINT
from turnwire.structured import StructuredOutput, requested_output, structured_output
from turnwire.turns import ContextAssembler, file_roots
from turnwire.usage import GenerationStats, Usage
from turnwire.wire import FunctionCall, OutputMessage, ReasoningItem, ReasoningText, SummaryText
from turnwire.wire.events import TextDelta, decode_event

__all__ = ["Client", "Records", "ResponseMeta", "RunResult", "finish_reason"]

logger = logging.getLogger("turnwire")

REASONING_PHRASES = (
    "invalid_encrypted_content",
    "of type 'reasoning' was provided without",
    "was provided without its required preceding item of type 'reasoning'",
    "items are not persisted when store is set to false",
)
PAIRING_PHRASES = REASONING_PHRASES[1:]
PENDING = PENDING_FINGERPRINT
"""The fingerprint a new reasoning thought carries until the next render stamps it."""


class ResponseMeta(msgspec.Struct, frozen=True, kw_only=True):
    """The last response of a run: id, status, model, usage and the finish reason."""

    id: str | None
    status: str | None
    model: str | None
    usage: dict[str, Any] | None
    finish_reason: str


class Records(msgspec.Struct, frozen=True, kw_only=True):
    """What a run added to the thread, in thread-file schema."""

    messages: tuple[Message, ...] = ()
    thoughts: tuple[Thought, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    hosted_items: tuple[HostedItem, ...] = ()

    def timeline(self) -> list[Message | Thought | ToolCall | HostedItem]:
        """Every record, in timeline order ``(created_at, seq)``."""
        records: list[Message | Thought | ToolCall | HostedItem] = [
            *self.messages,
            *self.thoughts,
            *self.tool_calls,
            *self.hosted_items,
        ]
        records.sort(key=lambda record: (record.created_at, record.seq))
        return records


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
    model refused, or when the last response has no message (see :mod:`turnwire.structured`)."""
    refusal: str | None = None
    """The final message's refusal text, when the model refused (``parsed`` is then ``None``)."""
    compaction: CompactResult | None = None
    """The compaction a ``context.window: {compact: ...}`` made before the first request
    (its record is in ``thread``, not in ``records``)."""


def finish_reason(generation: Generation) -> str:
    """``stop``, ``tool_calls``, ``length``, ``content_filter`` or ``error``."""
    if generation.terminal in ("completed", "eof") and generation.status != "incomplete":
        return "tool_calls" if generation.tool_calls else "stop"
    if generation.terminal == "incomplete" or generation.status == "incomplete":
        return "content_filter" if generation.incomplete_reason == "content_filter" else "length"
    return "error"


def _is_local(url: str) -> bool:
    """Whether ``url`` names this machine (a local server needs no key)."""
    import ipaddress
    from urllib.parse import urlsplit

    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _now() -> datetime:
    moment = datetime.now(UTC)
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


class Client:
    """Runs turns against a Responses endpoint, with a container's settings and stages.

    Use it as an async context manager (``async with Client(container) as client:``), or call
    :meth:`aclose` when done, so its HTTP connections are closed.

    :param container: settings, plugins, stages (``turnwire.build_container``).
    :param transport: a transport to use instead of one built from ``client:`` settings.
    :param base_url: the endpoint (default ``client.base_url``, which defaults to
        ``$OPENAI_BASE_URL``, else ``https://api.openai.com/v1``).
    :param api_key: the API key (default: the variable ``client.api_key_env`` names).
    :param organization: the ``OpenAI-Organization`` header (default ``client.organization``,
        which defaults to ``$OPENAI_ORG_ID``).
    :param project: the ``OpenAI-Project`` header (default ``client.project``, which defaults
        to ``$OPENAI_PROJECT_ID``).
    :param handlers: tool name → callable, instead of importing the tools' ``handler`` paths.
    :param clock: returns "now" for record timestamps (tests inject a fixed one).
    :param tracer_provider: the OpenTelemetry tracer provider for this client's spans
        (default: the global one; see :mod:`turnwire.client.telemetry`).
    """

    def __init__(
        self,
        container: Any,
        *,
        transport: Transport | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        organization: str | None = None,
        project: str | None = None,
        handlers: Mapping[str, Callable[..., Any]] | None = None,
        clock: Callable[[], datetime] = _now,
        tracer_provider: Any = None,
        **transport_options: Any,
    ) -> None:
        self.container = container
        self.settings = container.settings()
        client = self.settings.client
        self._missing_key: str | None = None
        if transport is None:
            url = base_url or client.base_url
            if api_key is None and client.api_key_env:
                api_key = os.environ.get(client.api_key_env) or None
            if api_key is None and not _is_local(url):
                self._missing_key = url
            retry = client.retry
            transport = Transport(
                base_url=url,
                api_key=api_key,
                organization=organization or client.organization,
                project=project or client.project,
                headers=client.headers,
                request_timeout_s=client.request_timeout_s,
                connect_timeout_s=client.connect_timeout_s,
                stream_idle_timeout_s=client.stream_idle_timeout_s,
                retry=RetryPolicy(
                    max_retries=retry.max_retries,
                    initial_delay_s=retry.initial_delay_s,
                    max_delay_s=retry.max_delay_s,
                    max_retry_after_s=retry.max_retry_after_s,
                    statuses=None if retry.statuses is None else frozenset(retry.statuses),
                    honor_retry_after=retry.honor_retry_after,
                ),
                **transport_options,
            )
        self.transport = transport
        self.executor = ToolExecutor.from_settings(self.settings, handlers=handlers)
        self.telemetry = Telemetry(
            enabled=client.telemetry,
            capture_content=client.telemetry_content,
            base_url=transport.url,
            tracer_provider=tracer_provider,
        )
        self._tracer_provider = tracer_provider
        self.clock = clock
        self.plugin_manager = container.plugin_manager()
        self.requests = 0
        self._handlers = dict(handlers or {})
        self._last_rendered: Any = None
        self._render_context: dict[str, str] = {}
        self._output_type: StructuredOutput | None = None
        self._on_event: Callable[[ProgressEvent], None] | None = None
        self._event_model = ""
        self._transport_options = transport_options
        self._credentials = (base_url, api_key, organization, project)

    def __repr__(self) -> str:
        return f"Client(url={self.transport.url!r})"

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP connections this client opened (a client passed in stays open)."""
        await self.transport.aclose()

    def _require_key(self) -> None:
        if self._missing_key is None:
            return
        variable = self.settings.client.api_key_env
        where = f"set {variable}" if variable else "pass api_key="
        raise MissingApiKeyError(
            f"no API key for {self._missing_key}: {where} (or pass api_key= in code); "
            "nothing was sent",
            variable=variable,
        )

    def with_overrides(self, overrides: Mapping[str, Any]) -> Client:
        """A client whose settings are this one's with ``overrides`` merged over them.

        Mappings merge key by key (``client.headers``, ``client.retry``...), any other value
        replaces, ``None`` included, and the result is validated again. The new client shares
        this one's HTTP connection pool and plugins.
        """
        from turnwire.container import build_container
        from turnwire.settings import merge, settings_from_tree

        tree = merge(msgspec.to_builtins(self.settings), overrides)
        settings = settings_from_tree(tree)
        container = build_container(settings=settings, extra_plugins=self.container.extra_plugins())
        options = dict(self._transport_options)
        options.setdefault("client", self.transport.shared_client())
        base_url, api_key, organization, project = self._credentials
        return Client(
            container,
            base_url=base_url,
            api_key=api_key,
            organization=organization,
            project=project,
            handlers=self._handlers,
            clock=self.clock,
            tracer_provider=self._tracer_provider,
            **options,
        )

    # ------------------------------------------------------------------ public

    def run_sync(self, thread: Thread, **kwargs: Any) -> RunResult:
        """:meth:`run` for scripts: runs the event loop and closes the transport."""

        async def main() -> RunResult:
            try:
                return await self.run(thread, **kwargs)
            finally:
                await self.transport.aclose()

        return asyncio.run(main())

    async def run(
        self,
        thread: Thread,
        *,
        model: str | None = None,
        once: bool = False,
        on_text: Callable[[str], None] | None = None,
        on_tool_result: Callable[[ToolCall], None] | None = None,
        overrides: Mapping[str, Any] | None = None,
        render_context: Mapping[str, str] | None = None,
        roots: Iterable[str | os.PathLike[str]] | None = None,
        on_event: Callable[[ProgressEvent], None] | None = None,
        approvals: Mapping[str, ApprovalDecision] | None = None,
        output_type: Any = None,
    ) -> RunResult:
        """Send the thread, stream the answer, run tools and loop; return the extended thread.

        Before anything runs or is sent, the thread's handlers and file pointers are checked
        (:class:`~turnwire.errors.HandlerNotAllowedError`,
        :class:`~turnwire.errors.FileNotAllowedError`).

        :param once: one request; tool calls are recorded but not run.
        :param on_text: called with each text delta as it arrives.
        :param on_tool_result: called with each tool call once its result is recorded.
        :param overrides: settings for this run only, merged over the client's (see
            :meth:`with_overrides`).
        :param render_context: values stages may ask for by name, for every request of this
            run (see :func:`turnwire.render`).
        :param roots: where file pointers may lead (default ``files.roots``, else nowhere).
        :param on_event: called with each progress event (:mod:`turnwire.client.progress`),
            as the ``on_stream_event`` hook is; one that raises is logged, never fatal.
        :param approvals: decisions on the thread's pending MCP approval requests, by request
            id (``True``, ``False`` or an :class:`~turnwire.approvals.Approval` with a
            reason), recorded as ``mcp_approval_response`` items before the first request
            (see :mod:`turnwire.approvals`; an id that is not pending raises
            :class:`~turnwire.errors.ApprovalNotPendingError` before anything is sent).
        :param output_type: the schema the answer must follow (a :class:`msgspec.Struct`
            class, a JSON Schema dict or a :class:`~turnwire.structured.OutputSchema`); it wins
            over the thread's ``output_schema`` and ``request.output_schema``. The final answer
            is decoded into :attr:`RunResult.parsed`; a refusal leaves it ``None`` and sets
            :attr:`RunResult.refusal`; a mismatch raises
            :class:`~turnwire.errors.OutputValidationError` (the run's result on its
            ``result``).
        """
        asked = structured_output(output_type)  # a bad schema fails before anything runs
        if overrides:
            return await self.with_overrides(overrides).run(
                thread,
                model=model,
                once=once,
                on_text=on_text,
                on_tool_result=on_tool_result,
                render_context=render_context,
                roots=roots,
                on_event=on_event,
                approvals=approvals,
                output_type=asked,
            )
        self._output_type = asked
        with self.telemetry.run(model or thread.model) as span:
            result = await self._run_loop(
                thread,
                model,
                once,
                on_text,
                on_tool_result,
                render_context,
                roots,
                on_event,
                approvals=approvals,
            )
            self.telemetry.finished(span, result.generations, result.usage)
        return _with_output(
            result, requested_output(asked, thread.output_schema, self.settings.request)
        )

    async def _run_loop(
        self,
        thread: Thread,
        model: str | None,
        once: bool,
        on_text: Callable[[str], None] | None,
        on_tool_result: Callable[[ToolCall], None] | None,
        render_context: Mapping[str, str] | None,
        roots: Iterable[str | os.PathLike[str]] | None,
        on_event: Callable[[ProgressEvent], None] | None,
        *,
        approvals: Mapping[str, ApprovalDecision] | None = None,
    ) -> RunResult:
        self._render_context = dict(render_context or {})
        from turnwire.api import resolve_model

        resolved = resolve_model(thread, self.container, model)
        self._on_event, self._event_model = on_event, resolved
        allowed = file_roots(roots, self.settings.files)
        files = ContextAssembler.from_settings(self.settings.files, allowed)
        # The thread's own faults first, then the deployment's; all before anything runs.
        self.executor.check(thread)
        files.check(thread)
        nonce = self.container.envelope_nonce()
        decided = tuple(
            seal(record, nonce)
            for record in approval_records(thread, approvals or {}, self.clock())
        )
        self._require_key()
        start_calls = len(thread.tool_calls)
        start_messages, start_thoughts = len(thread.messages), len(thread.thoughts)
        start_hosted = len(thread.hosted_items)
        if decided:  # part of this run's records, so stored and saved with them
            thread = msgspec.structs.replace(thread, hosted_items=thread.hosted_items + decided)
        ran_pending: tuple[ToolCall, ...] = ()
        if not once:
            pending = {call.id for call in thread.tool_calls if call.result is None}
            thread = await self._run_pending(thread, on_tool_result, files)
            ran_pending = tuple(c for c in thread.tool_calls[:start_calls] if c.id in pending)
        compaction = await self._auto_compact(thread, resolved, allowed)
        if compaction is not None:
            thread = compaction.thread
            start_hosted = len(thread.hosted_items)
        iterations = 0
        generation: Generation | None = None
        stats: list[GenerationStats] = []
        while True:
            iterations += 1
            generation, thread = await self._iteration(thread, resolved, on_text, allowed)
            generation = apply_text_tool_calls(generation, self._text_call_parser(thread))
            before = _record_counts(thread)
            thread, calls = self._record(thread, generation)
            stats.append(self._stats(generation, resolved, thread, before))
            self._emit(
                ResponseDoneEvent(
                    response_id=generation.response_id,
                    status=generation.status,
                    model=stats[-1].model,
                    finish_reason=stats[-1].finish_reason,
                    usage=stats[-1].usage,
                )
            )
            self._observe("on_raw_generation", generation=generation, model=resolved)
            runnable = [call for call in calls if call.result is None]
            if runnable and not once:
                thread = await self._execute(thread, runnable, on_tool_result, files)
            # The next request's render stamps this response's reasoning; a run that stops
            # here renders once more to stamp it.
            if not calls or once:
                thread = self._fingerprint_new_thoughts(thread, resolved, allowed)
                break
            if iterations >= self.settings.client.max_iterations:
                logger.warning(
                    "stopping after %d iterations (client.max_iterations)",
                    iterations,
                    extra={"kind": "max-iterations"},
                )
                thread = self._fingerprint_new_thoughts(thread, resolved, allowed)
                break
        assert generation is not None
        records = Records(
            messages=thread.messages[start_messages:],
            thoughts=thread.thoughts[start_thoughts:],
            tool_calls=tuple(c for c in thread.tool_calls[start_calls:]),
            hosted_items=thread.hosted_items[start_hosted:],
        )
        meta = ResponseMeta(
            id=generation.response_id,
            status=generation.status,
            model=generation.model or resolved,
            usage=generation.usage,
            finish_reason=finish_reason(generation),
        )
        return RunResult(
            thread=thread,
            records=records,
            response=meta,
            iterations=iterations,
            requests=self.requests,
            resolved=ran_pending,
            request_fingerprint=self._request_fingerprint(resolved),
            generations=tuple(stats),
            usage=Usage.sum(s.usage for s in stats),
            compaction=compaction,
        )

    @staticmethod
    def _stats(
        generation: Generation, model: str, thread: Thread, before: tuple[int, int, int, int]
    ) -> GenerationStats:
        messages, thoughts, calls, hosted = before
        added: tuple[Message | Thought | ToolCall | HostedItem, ...] = (
            *thread.messages[messages:],
            *thread.thoughts[thoughts:],
            *thread.tool_calls[calls:],
            *thread.hosted_items[hosted:],
        )
        return GenerationStats(
            model=generation.model or model,
            response_id=generation.response_id,
            finish_reason=finish_reason(generation),
            usage=Usage.from_api(generation.usage),
            record_ids=tuple(record.id for record in added),
        )

    def _request_fingerprint(self, model: str) -> str | None:
        from turnwire.api import prefix_fingerprint

        rendered = self._last_rendered
        if rendered is None:
            return None
        # Resumed from the render's own sweep checkpoints: no second hash of the whole prefix.
        return prefix_fingerprint(rendered.rendered, container=self.container, model=model)

    async def compact(
        self,
        thread: Thread,
        *,
        model: str | None = None,
        overrides: Mapping[str, Any] | None = None,
        render_context: Mapping[str, str] | None = None,
        roots: Iterable[str | os.PathLike[str]] | None = None,
    ) -> CompactResult:
        """Compact the whole thread: ``POST /responses/compact`` with the input a request
        would send (its model and instructions; see :mod:`turnwire.compaction`), and the
        returned compaction item added as a hosted item after every record it covers.

        Later renders send that item in place of everything before it; the thread keeps
        every record. Retries and HTTP errors are those of a request.

        :raises turnwire.errors.InputError: the thread has no record to compact, or nothing
            since its latest compaction.
        :raises turnwire.errors.StreamError: the answer is not a valid ``response.compaction``
            object (the error names the field); nothing is added.
        """
        if overrides:
            return await self.with_overrides(overrides).compact(
                thread, model=model, render_context=render_context, roots=roots
            )
        from turnwire.api import resolve_model
        from turnwire.compaction import compacted, timeline

        self._render_context = dict(render_context or {})
        resolved = resolve_model(thread, self.container, model)
        allowed = file_roots(roots, self.settings.files)
        records = timeline(compacted(thread))
        if not records:
            raise InputError(
                "nothing to compact: the thread has no messages, thoughts, tool calls or "
                "hosted items yet"
            )
        if all(isinstance(r, HostedItem) and r.type == "compaction" for r in records):
            raise InputError(
                "nothing to compact: nothing was added to the thread since its latest "
                f"compaction ({records[-1].id})"
            )
        ContextAssembler.from_settings(self.settings.files, allowed).check(thread)
        self._require_key()
        result = await self._compact(thread, thread, None, resolved, allowed)
        assert result is not None
        return result

    async def _auto_compact(
        self, thread: Thread, model: str, roots: tuple[str, ...]
    ) -> CompactResult | None:
        """``context.window: {compact: {threshold: N}}``: compact what comes before the
        question when the estimate of the request is over N tokens."""
        from turnwire.compaction import compacted, covered, timeline
        from turnwire.windows import WindowSettings, estimate_request_tokens

        window = self.settings.context.window
        if not isinstance(window, WindowSettings) or window.compact is None:
            return None
        estimate = estimate_request_tokens(thread)
        if estimate <= window.compact.threshold:
            return None
        part = covered(thread)
        if part is None:
            logger.warning(
                "the request is estimated at %d tokens, over context.window.compact.threshold "
                "(%d), but nothing before the question can be compacted",
                estimate,
                window.compact.threshold,
                extra={"kind": "compact-nothing"},
            )
            return None
        covered_ids = {id(record) for record in timeline(part)}
        rest = [r for r in timeline(compacted(thread)) if id(r) not in covered_ids]
        logger.info(
            "compacting: the request is estimated at %d tokens (threshold %d)",
            estimate,
            window.compact.threshold,
            extra={"kind": "compact"},
        )
        return await self._compact(thread, part, rest[0] if rest else None, model, roots)

    async def _compact(
        self,
        thread: Thread,
        part: Thread,
        before: Message | Thought | ToolCall | HostedItem | None,
        model: str,
        roots: tuple[str, ...],
    ) -> CompactResult | None:
        from turnwire.compaction import (
            CompactResult,
            compact_body,
            compaction_record,
            parse_compacted,
            timeline,
        )

        rendered = self._render(part, model, roots)
        body = compact_body(rendered.body)
        self._observe("on_prompt_assembled", body=body, model=model, attempt_kind="compact")
        self.requests += 1
        async with self.transport.exchange(body, stream=False, path="/compact") as answer:
            raw = b"".join([chunk async for chunk in answer.chunks])
        try:
            decoded = msgspec.json.decode(raw)
        except msgspec.DecodeError as err:
            raise StreamError(f"the answer is not a response.compaction object: {err}") from err
        except RecursionError:
            raise StreamError("the answer is nested too deeply to read") from None
        compacted = parse_compacted(decoded)
        record = compaction_record(compacted, timeline(part), self.clock(), before=before)
        if record is None:
            logger.warning(
                "the compaction cannot be placed before the question (they share a timestamp "
                "and seq); it is not kept",
                extra={"kind": "compact-unplaced"},
            )
            return None
        extended = msgspec.structs.replace(thread, hosted_items=(*thread.hosted_items, record))
        return CompactResult(thread=extended, record=record, compacted=compacted)

    # ------------------------------------------------------------------ one iteration

    def _render(
        self,
        thread: Thread,
        model: str,
        roots: tuple[str, ...],
        *,
        replay_off: bool = False,
        pending: frozenset[str] = frozenset(),
    ) -> Any:
        from turnwire.api import render

        return render(
            thread,
            container=self.container,
            model=model,
            reasoning_replay="off" if replay_off else None,
            render_context=self._render_context,
            roots=roots,
            output_type=self._output_type,
            pending_reasoning=pending,
        )

    def _check_tool_choice(self, thread: Thread) -> None:
        choice = self.settings.request.tool_choice
        name = getattr(choice, "name", None)
        if name is None:
            return
        tool = thread.tool(name)
        forged = name in {tool.name for tool in artifact_tools()}
        if tool is not None and not tool.hidden and not forged:
            return
        problem = f"request.tool_choice forces {name!r}, which is " + (
            "a built-in artifact tool that exists only while artifacts do"
            if forged
            else "hidden"
            if tool is not None
            else "not a tool of the thread"
        )
        if self.settings.client.strict_tool_choice:
            raise ConfigError(
                f"$.request.tool_choice: {problem}; remove the override or unset "
                "client.strict_tool_choice",
                path="$.request.tool_choice",
            )
        logger.warning(
            "%s; this is almost always a misconfiguration",
            problem,
            extra={"kind": "tool-choice-unavailable"},
        )

    async def _iteration(
        self,
        thread: Thread,
        model: str,
        on_text: Callable[[str], None] | None,
        roots: tuple[str, ...],
    ) -> tuple[Generation, Thread]:
        """One request: rendered once (stamping the reasoning the last response brought, so
        the thread returned is the one this request was rendered from), sent, answered."""
        from turnwire.tokens import check_context_window

        self._check_tool_choice(thread)
        pending = _pending_ids(thread)
        rendered = self._last_rendered = self._render(thread, model, roots, pending=pending)
        if pending:
            thread = _stamp(thread, pending, rendered.rendered.stamped)
        context = self.settings.context
        check_context_window(
            rendered.request,
            thread,
            encoding=context.token_encoding,
            window=context.context_window,
        )
        try:
            return await self._exchange(rendered, model, on_text, "request"), thread
        except HttpError as err:
            body = err.body.lower().replace("`", "")
            if err.http_status != 400 or not any(p in body for p in REASONING_PHRASES):
                raise
            if not _carries_reasoning(rendered.request.input):
                raise
            logger.warning(
                "the API rejected a replayed reasoning item; retrying once "
                "without reasoning items or paired ids",
                extra={"kind": "reasoning-replay-rejected"},
            )
            rendered = self._last_rendered = self._render(thread, model, roots, replay_off=True)
            try:
                answer = await self._exchange(rendered, model, on_text, "reasoning-free-retry")
                return answer, thread
            except HttpError as again:
                lowered = again.body.lower().replace("`", "")
                if again.http_status == 400 and any(p in lowered for p in PAIRING_PHRASES):
                    raise ReasoningReplayRejectedError(
                        body=again.body, attempts=again.attempts
                    ) from again
                raise

    async def _exchange(
        self, rendered: Any, model: str, on_text: Callable[[str], None] | None, attempt_kind: str
    ) -> Generation:
        body = rendered.body
        stream = rendered.request.stream
        self._observe("on_prompt_assembled", body=body, model=model, attempt_kind=attempt_kind)
        self.requests += 1
        with self.telemetry.request(model) as span:
            generation = await self._answer(body, stream, on_text)
            self.telemetry.answered(span, generation, finish_reason(generation))
            logger.debug(
                "stream finalised: %d tool call(s), message=%s",
                len(generation.tool_calls),
                bool(generation.messages),
                extra={
                    "kind": "stream-finalised",
                    "tool_call_count": len(generation.tool_calls),
                    "saw_message": bool(generation.messages),
                    "terminal_seen": generation.terminal != "eof",
                },
            )
            _raise_unless_answered(generation)
        return generation

    async def _answer(
        self, body: bytes, stream: bool, on_text: Callable[[str], None] | None
    ) -> Generation:
        async with self.transport.exchange(body, stream=stream) as answer:
            if stream and answer.is_event_stream:
                generation = await self._read_stream(answer.chunks, on_text)
            else:
                raw = b"".join([chunk async for chunk in answer.chunks])
                try:
                    decoded = msgspec.json.decode(raw)
                except msgspec.DecodeError as err:
                    raise StreamError(f"the answer is not a response object: {err}") from err
                except RecursionError:
                    raise StreamError("the answer is nested too deeply to read") from None
                generation = generation_from_response(decoded)
                for output in generation.outputs:
                    self._emit(
                        ItemDoneEvent(
                            output_index=output.output_index,
                            item_type=output.type
                            if isinstance(output, HostedOutput)
                            else _ITEM_TYPES[type(output)],
                            item_id=output.item_id,
                        )
                    )
        return generation

    async def _read_stream(self, chunks: Any, on_text: Callable[[str], None] | None) -> Generation:
        decoder = SSEDecoder()
        accumulator: ResponseAccumulator = self.container.response_accumulator()()
        malformed = 0
        finished: list[Generation] = []

        def apply(raw_events: Iterable[Any]) -> None:
            nonlocal malformed
            events = []
            for raw in raw_events:
                if raw == b"[DONE]":
                    continue  # the Chat Completions end marker some bridges (litellm) send
                try:
                    event = decode_event(raw)
                except msgspec.DecodeError:
                    malformed += 1
                    logger.warning(
                        "skipping an event whose data is not JSON: %r",
                        raw[:120],
                        extra={"kind": "sse-parse-failure"},
                    )
                    continue
                if on_text is not None and type(event) is TextDelta:
                    on_text(event.delta)
                events.append(event)
            finished.extend(accumulator.feed(events))
            for event in events:
                progress = from_wire(event)
                if progress is not None:
                    self._emit(progress)

        reader = aiter(chunks)
        while True:
            # Only reading may fail as a disconnect; a StreamError from `apply` (a value of
            # the wrong shape) ends the exchange as it is.
            try:
                chunk = await anext(reader)
            except StopAsyncIteration:
                break
            except StreamStalledError as err:
                err.partial = accumulator.partial()
                raise
            except StreamError as err:
                logger.warning(
                    "the connection dropped mid-stream (%s); keeping what arrived",
                    err,
                    extra={"kind": "stream-disconnected"},
                )
                break
            apply(decoder.feed_data(chunk))
            if finished:
                return finished[0]
        apply(decoder.close_data())
        if finished:
            return finished[0]
        tail = accumulator.close()
        if tail is None:
            raise StreamError("the stream ended before any event")
        logger.warning(
            "the stream ended without a terminal event; keeping what arrived",
            extra={"kind": "sse-eof-without-terminal-event"},
        )
        return tail

    # ------------------------------------------------------------------ recording

    def _record(self, thread: Thread, generation: Generation) -> tuple[Thread, list[ToolCall]]:
        """Append the generation's records; return its tool calls (bad arguments come back
        already answered with an error result, which the model reads next iteration)."""
        render = self.settings.render
        stamp = self.clock()
        records: list[Message | Thought | ToolCall | HostedItem] = [
            *thread.messages,
            *thread.thoughts,
            *thread.tool_calls,
            *thread.hosted_items,
        ]
        seq = 1 + max((r.seq for r in records if r.created_at == stamp), default=-1)
        identity = (
            None
            if render.self_identity == "assistant"
            else Identity(identifier=render.self_identity)
        )
        messages, thoughts, calls, hosted = [], [], [], []
        existing = {call.id for call in thread.tool_calls}
        outputs = generation.outputs
        for position, output in enumerate(outputs):
            if isinstance(output, MessageOutput):
                if output.text or output.refusal:
                    messages.append(
                        Message(
                            id=output.item_id or f"msg_{uuid.uuid4().hex}",
                            role="assistant",
                            content=output.text or None,
                            identity=identity,
                            phase=output.phase,
                            refusal=output.refusal or None,
                            annotations=output.annotations,
                            logprobs=output.logprobs,
                            created_at=stamp,
                            seq=seq,
                        )
                    )
                    seq += 1
            elif isinstance(output, HostedOutput):
                hosted.append(
                    HostedItem(
                        id=output.item_id or f"{output.type}_{uuid.uuid4().hex}",
                        type=output.type,
                        item=output.item,
                        created_at=stamp,
                        seq=seq,
                    )
                )
                seq += 1
            elif isinstance(output, ReasoningOutput):
                following = outputs[position + 1] if position + 1 < len(outputs) else None
                thought = self._thought(output, following, identity, stamp, seq)
                if thought is not None:
                    thoughts.append(thought)
                    seq += 1
            elif isinstance(output, ToolCallOutput):
                composite = (
                    f"{output.call_id}|{output.item_id}" if output.item_id else output.call_id
                )
                chosen = (
                    self._hook(
                        "filter_tool_call_id",
                        tool_call_id=composite,
                        existing_ids=frozenset(existing),
                    )
                    or composite
                )
                existing.add(chosen)
                args, error = parse_arguments(output.arguments)
                call = ToolCall(
                    id=chosen,
                    tool=output.name or "(unnamed tool call)",
                    args=args,
                    created_at=stamp,
                    seq=seq,
                )
                if error is not None:
                    call = msgspec.structs.replace(
                        call, is_error=True, result=ToolResult(text=error)
                    )
                calls.append(call)
                seq += 1
        _check_records("messages", messages)
        _check_records("thoughts", thoughts)
        _check_records("tool_calls", calls)
        _check_records("hosted_items", hosted)
        if hosted:  # recorded by this deployment: replayed as items (render.hosted_replay)
            nonce = self.container.envelope_nonce()
            hosted = [seal(record, nonce) for record in hosted]
        extended = msgspec.structs.replace(
            thread,
            messages=thread.messages + tuple(messages),
            thoughts=thread.thoughts + tuple(thoughts),
            tool_calls=thread.tool_calls + tuple(calls),
            hosted_items=thread.hosted_items + tuple(hosted),
        )
        return extended, calls

    def _thought(
        self,
        output: ReasoningOutput,
        following: object,
        identity: Identity | None,
        stamp: datetime,
        seq: int,
    ) -> Thought | None:
        text = output.text
        if self.settings.render.reasoning_replay == "off" or not output.item_id:
            if not text:
                return None  # nothing to show and nothing to replay: never fails a turn
            return Thought(
                id=output.item_id or f"rs_{uuid.uuid4().hex}",
                content=text,
                identity=identity,
                created_at=stamp,
                seq=seq,
            )
        item = ReasoningItem(
            id=output.item_id,
            summary=tuple(SummaryText(text=part) for part in output.summary),
            content=tuple(ReasoningText(text=part) for part in output.content) or None,
            encrypted_content=output.encrypted_content,
        )
        partner = getattr(following, "item_id", None)
        payload = ReasoningPayload(item=item, paired_item_id=partner, prefix_fingerprint=PENDING)
        return Thought(
            id=output.item_id,
            content=text,
            identity=identity,
            replay_compatibility=REPLAY_TAG,
            payload=payload,
            created_at=stamp,
            seq=seq,
        )

    def _fingerprint_new_thoughts(
        self, thread: Thread, model: str, roots: tuple[str, ...]
    ) -> Thread:
        """Give each newly recorded reasoning thought the fingerprint of its prefix in the
        request that would follow, when no request follows in this run.

        The thread is rendered as that request would be (the new thoughts kept as fresh when
        they pair, every other one checked as usual), through the fingerprint stage, so a
        plugin's scheme applies on both sides. Within a run, the next request's own render
        does this (:meth:`_iteration`).
        """
        pending = _pending_ids(thread)
        if not pending:
            return thread
        from turnwire.api import render_input

        rendered = render_input(
            thread,
            container=self.container,
            model=model,
            render_context=self._render_context,
            roots=roots,
            pending_reasoning=pending,
        )
        return _stamp(thread, pending, rendered.stamped)

    # ------------------------------------------------------------------ tools

    async def _run_pending(
        self,
        thread: Thread,
        on_tool_result: Callable[[ToolCall], None] | None,
        files: ContextAssembler,
    ) -> Thread:
        pending = [call for call in thread.tool_calls if call.result is None]
        if not pending:
            return thread
        return await self._execute(thread, pending, on_tool_result, files)

    async def _execute(
        self,
        thread: Thread,
        calls: list[ToolCall],
        on_tool_result: Callable[[ToolCall], None] | None,
        files: ContextAssembler,
    ) -> Thread:
        done: dict[str, ToolCall] = {}
        for call in calls:
            self._emit(ToolStartedEvent(call=call))
            with self.telemetry.tool(call) as span:
                finished = await self.executor.execute(call, thread, files=files)
                self.telemetry.ran(span, finished)
            done[call.id] = finished
            self._emit(ToolFinishedEvent(call=finished))
            if on_tool_result is not None:
                on_tool_result(finished)
        tool_calls = tuple(done.get(c.id, c) if c.result is None else c for c in thread.tool_calls)
        return msgspec.structs.replace(thread, tool_calls=tool_calls)

    # ------------------------------------------------------------------ hooks

    def _text_call_parser(self, thread: Thread) -> Callable[[str], TextToolCalls | None]:
        from turnwire.api import with_declared_tools

        # The tools the request declared, the built-in artifact tools included.
        tools = with_declared_tools(thread, container=self.container).tools

        def parse(text: str) -> TextToolCalls | None:
            try:
                found = self._hook("parse_text_tool_calls", text=text, tools=tools)
            except Exception:
                # A parser that breaks leaves the answer as text; it never fails the turn.
                logger.exception("parse_text_tool_calls raised", extra={"kind": "parser-error"})
                return None
            return found if isinstance(found, TextToolCalls) else None

        return parse

    def _emit(self, event: ProgressEvent) -> None:
        """Report ``event`` to the run's ``on_event`` and the ``on_stream_event`` hook."""
        if self._on_event is not None:
            try:
                self._on_event(event)
            except Exception:
                logger.exception(
                    "the on_event callback raised; the turn goes on",
                    extra={"kind": "observer-error"},
                )
        self._observe("on_stream_event", event=event, model=self._event_model)

    def _hook(self, name: str, **kwargs: Any) -> Any:
        return getattr(self.plugin_manager.hook, name)(**kwargs)

    def _observe(self, name: str, **kwargs: Any) -> None:
        """Call every observer, each isolated: one that raises is logged, the others run.

        Wrappers (and tracing) need pluggy's own call: then the observers run as temporary
        implementations of a caller that holds only the wrappers, still isolated one by one.
        """
        caller = getattr(self.plugin_manager.hook, name)
        impls = caller.get_hookimpls()
        plain = [impl for impl in impls if not (impl.wrapper or impl.hookwrapper)]

        def isolated(impl: Any) -> Callable[[], None]:
            def call() -> None:
                try:
                    impl.function(**{arg: kwargs[arg] for arg in impl.argnames})
                except Exception:
                    logger.exception(
                        "observer %s of %s raised; the turn goes on",
                        impl.plugin_name,
                        name,
                        extra={"kind": "observer-error"},
                    )

            return call

        if len(plain) == len(impls) and not self.settings.plugins.trace:
            for impl in plain:
                isolated(impl)()
            return
        wrappers = self.plugin_manager.subset_hook_caller(
            name, remove_plugins=[impl.plugin for impl in plain]
        )
        try:
            wrappers.call_extra([isolated(impl) for impl in reversed(plain)], kwargs)
        except Exception:
            logger.exception(
                "a wrapper of %s raised; the turn goes on", name, extra={"kind": "observer-error"}
            )


def _unstamped_from(thoughts: tuple[Thought, ...]) -> int:
    """Where the thoughts after the last stamped reasoning thought begin: the client stamps
    each response's reasoning before the next, so none before it is pending."""
    first = len(thoughts)
    while first:
        payload = thoughts[first - 1].payload
        if payload is not None and payload.prefix_fingerprint not in (None, PENDING):
            break
        first -= 1
    return first


def _pending_ids(thread: Thread) -> frozenset[str]:
    """The reasoning thoughts recorded by this run and not stamped yet (the newest ones)."""
    thoughts = thread.thoughts
    return frozenset(
        t.id
        for t in thoughts[_unstamped_from(thoughts) :]
        if t.payload is not None and t.payload.prefix_fingerprint == PENDING
    )


def _stamp(thread: Thread, pending: frozenset[str], stamped: Iterable[tuple[str, str]]) -> Thread:
    """``thread`` with each pending thought's fingerprint: the stamped one, else ``None`` (it
    did not pair: it will not be replayed)."""
    found = dict(stamped)
    replace = msgspec.structs.replace
    thoughts = thread.thoughts
    first = _unstamped_from(thoughts)
    tail = tuple(
        replace(t, payload=replace(t.payload, prefix_fingerprint=found.get(t.id)))
        if t.id in pending and t.payload is not None
        else t
        for t in thoughts[first:]
    )
    return replace(thread, thoughts=thoughts[:first] + tail)


def _record_counts(thread: Thread) -> tuple[int, int, int, int]:
    return (
        len(thread.messages),
        len(thread.thoughts),
        len(thread.tool_calls),
        len(thread.hosted_items),
    )


def _check_records(kind: str, records: Iterable[Message | Thought | ToolCall | HostedItem]) -> None:
    """Each new record through the thread-file schema, strictly, before it joins the thread:
    a value the file could not hold later is refused now, naming where it sits (its free-form
    trees too, through the thread file's nesting and integer limits)."""
    from turnwire.errors import ThreadFileError
    from turnwire.thread_file import THREAD_FILES

    for index, record in enumerate(records):
        root = f"$.{kind}[+{index}]"
        trees: list[tuple[str, Any, int]] = []
        if isinstance(record, HostedItem):
            trees.append((f"{root}.item", record.item, 4))
        elif isinstance(record, Message):
            for field in ("annotations", "logprobs"):
                for at, tree in enumerate(getattr(record, field) or ()):
                    trees.append((f"{root}.{field}[{at}]", tree, 5))
        try:
            msgspec.convert(msgspec.to_builtins(record), type(record))
        except (msgspec.ValidationError, ValueError, TypeError) as err:
            path, detail = validation_location(err, root=root)
            raise StreamError(
                f"the answer would add a record the thread file cannot hold ({path}: "
                f"{detail}); nothing was recorded",
                event="record",
                field=path,
            ) from err
        for where, tree, depth in trees:
            try:
                THREAD_FILES.check_tree(tree, name="record", data=b"", path=where, depth=depth)
            except ThreadFileError as err:
                path = err.path if err.path != "$" else where
                raise StreamError(
                    f"the answer would add a record the thread file cannot hold ({path}: "
                    f"{str(err).partition(': ')[2]}); nothing was recorded",
                    event="record",
                    field=path,
                ) from None


def _with_output(result: RunResult, asked: StructuredOutput | None) -> RunResult:
    """``result`` with the final message's refusal, and its text parsed when a schema was
    asked; a mismatch raises :class:`OutputValidationError` carrying ``result``."""
    last = set(result.generations[-1].record_ids) if result.generations else set()
    final = next(
        (m for m in reversed(result.records.messages) if m.id in last and m.role == "assistant"),
        None,
    )
    if final is not None and final.refusal:
        return msgspec.structs.replace(result, refusal=final.refusal)
    if asked is None:
        return result
    if final is None or not final.content:
        if result.response.finish_reason == "tool_calls":
            return result  # the run stopped at tool calls (--once, max_iterations): no answer
        text = ""
        invalid = asked._invalid(
            text, "$", f"the answer has no text (finish reason {result.response.finish_reason})"
        )
    else:
        text = final.content
        try:
            return msgspec.structs.replace(result, parsed=asked.parse(text))
        except OutputValidationError as err:
            invalid = err
    if result.response.finish_reason != "stop":
        invalid.message += (
            f" (the response ended with finish reason {result.response.finish_reason})"
        )
        invalid.args = (invalid.message,)
    invalid.result = result
    raise invalid


_ITEM_TYPES = {
    MessageOutput: "message",
    ReasoningOutput: "reasoning",
    ToolCallOutput: "function_call",
}

_ANSWERLESS = {"failed": "failed", "cancelled": "was cancelled"}


def _raise_unless_answered(generation: Generation) -> None:
    """A failed, errored or cancelled response is a stream error: nothing of it is recorded
    (``incomplete`` is an answer, cut short: its finish reason says why)."""
    status = generation.status
    if generation.terminal in ("failed", "error") or status in _ANSWERLESS:
        what = _ANSWERLESS.get(status or "", generation.terminal)
        logger.warning(
            "the response %s; nothing of it is recorded",
            what,
            extra={"kind": "stream-error", "error_code": generation.error_code},
        )
        raise StreamError(
            generation.error_message or f"the response {what}; nothing was recorded",
            error_code=generation.error_code or ("cancelled" if status == "cancelled" else None),
        )


def _carries_reasoning(items: Iterable[object]) -> bool:
    for item in items:
        if isinstance(item, ReasoningItem):
            return True
        if isinstance(item, OutputMessage | FunctionCall) and item.id:
            return True
    return False
