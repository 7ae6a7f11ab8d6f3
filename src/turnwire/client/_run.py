"""One run of a :class:`~turnwire.client.dispatch.Client`: its state and its loop.

A client is made once and serves many runs, concurrently too; everything one run needs and
changes (its render context, output schema, event callback, the request it last rendered and
how many requests it sent) lives on the :class:`Run` that :meth:`Client.run
<turnwire.client.dispatch.Client.run>` makes for it, never on the client.

Its observers are found once, when the run is made (those of ``on_prompt_assembled``,
``on_raw_generation`` and ``on_stream_event``, handed to each
:meth:`Client._observe <turnwire.client.dispatch.Client._observe>`): :attr:`Run.observer` is
what the stream reader calls per event (:func:`~turnwire.client.reading.read_answer` through
:meth:`Run._answer`), ``None`` when the run has no ``on_event`` callback and no
``on_stream_event`` implementation.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from turnwire.client.assembly import (
    PAIRING_PHRASES,
    REASONING_PHRASES,
    carries_reasoning,
    check_tool_choice,
    check_window,
    compaction_due,
    fingerprint_new_thoughts,
    pending_ids,
    render_request,
    request_fingerprint,
    stamp,
)
from turnwire.client.execution import answer_searches, decided_approvals, execute
from turnwire.client.progress import PrefixResetEvent, ProgressEvent, ResponseDoneEvent
from turnwire.client.reading import (
    decoded_answer,
    finish_reason,
    raise_unless_answered,
    read_answer,
)
from turnwire.client.recording import (
    Records,
    generation_stats,
    record_counts,
    record_generation,
    text_call_parser,
)
from turnwire.client.results import ResponseMeta, RunResult
from turnwire.client.text_calls import apply_text_tool_calls
from turnwire.config.settings import unsupported
from turnwire.errors import HttpError, ReasoningReplayRejectedError
from turnwire.files.pointers import ContextAssembler, file_roots
from turnwire.model.approvals import ApprovalDecision
from turnwire.model.records import HostedItem, Message, Thought, Thread, ToolCall
from turnwire.model.structured import StructuredOutput
from turnwire.model.timeline import latest, not_before, timeline
from turnwire.model.tool_search import waiting_searches
from turnwire.model.usage import GenerationStats, Usage
from turnwire.rendering.body import EncodedBody, with_compaction_trigger
from turnwire.rendering.compaction import (
    CompactResult,
    compact_body,
    compaction_record,
    parse_compacted,
)
from turnwire.rendering.ledger import (
    ItemDigests,
    Ledger,
    PrefixReport,
    compare,
    ledger_of,
    settings_digest,
)
from turnwire.rendering.renderer import render_input, resolve_model
from turnwire.rendering.windows import window_cut
from turnwire.wire.response import Generation

if TYPE_CHECKING:
    from turnwire.client.dispatch import Client
    from turnwire.client.tools import ToolExecutor

__all__ = ["Run"]

logger = logging.getLogger("turnwire")


class Run:
    """One run's state, and the loop that drives it.

    The client's shared parts (container, settings, transport, tools, telemetry, clock,
    plugins) are read through it; nothing here outlives the run.

    :param client: the client the run belongs to.
    :param render_context: values stages may ask for by name, for every request of the run.
    :param output_schema: the run's output schema, if one was asked.
    :param on_event: the run's progress callback.
    :param cache_identity: the thread's identity, fixed for the run, which each request's
        ``prompt_cache_key`` derives from (the compact request's too: a compaction renders a
        part of the thread, whose own opening record may differ).
    :param previous_ledger: the ledger of the request sent before this run's first one (a
        stored thread keeps it), so the first request is compared too.
    :param executor: the run's tool executor (the client's, with the run's own function
        tools added); by default the client's.
    :param compaction_trigger: end the run's requests with a ``compaction_trigger`` item until
        one is answered (:meth:`Client.run <turnwire.client.dispatch.Client.run>`).
    """

    def __init__(
        self,
        client: Client,
        *,
        render_context: Mapping[str, str] | None = None,
        output_schema: StructuredOutput | None = None,
        on_event: Callable[[ProgressEvent], None] | None = None,
        cache_identity: str | None = None,
        previous_ledger: Ledger | None = None,
        executor: ToolExecutor | None = None,
        compaction_trigger: bool = False,
    ) -> None:
        self.client = client
        self.container = client.container
        self.settings = client.settings
        self.transport = client.transport
        self.executor = executor if executor is not None else client.executor
        self.telemetry = client.telemetry
        self.clock = client.clock
        self.plugin_manager = client.plugin_manager
        self._render_context = dict(render_context or {})
        self._output_schema = output_schema
        self._on_event = on_event
        # Who observes the run is looked up once, as it starts (a plugin registered before
        # then is seen): without an observer, nothing is made or called per event.
        self._prompt_observers = client._observers("on_prompt_assembled")
        self._generation_observers = client._observers("on_raw_generation")
        self._event_observers = client._observers("on_stream_event")
        # (a traced hook is called even without implementations)
        self._hooked = bool(self._event_observers)
        self.observer: Callable[[ProgressEvent], None] | None = (
            self.emit if on_event is not None or self._hooked else None
        )
        """:meth:`emit`, or ``None`` when the run has no ``on_event`` callback and no
        ``on_stream_event`` implementation (what :func:`~turnwire.client.reading.read_answer`
        is given)."""
        self._cache_identity = cache_identity
        # Until a request of the run is answered, each ends with a compaction_trigger item.
        self._trigger = compaction_trigger
        self._ledger = previous_ledger
        self._digests = ItemDigests()  # per run: bounded by the last request's items
        self._settings_digest = settings_digest(
            [client.settings.render, client.settings.context, client.settings.request]
        )
        self.prefix: list[PrefixReport] = []
        """How each request of the run relates to the one before it."""
        self._window_start = 0
        self._event_model = ""
        self._last_rendered: Any = None
        self.requests = 0
        """How many requests this run sent (the compact endpoint's included)."""
        self.unsent: tuple[ToolCall, ...] = ()
        """The calls whose results no request sent, when the run stopped at
        ``client.max_iterations`` (their results are recorded)."""
        self.unsent_searches: tuple[HostedItem, ...] = ()
        """The client-executed tool searches whose answers no request sent, when the run
        stopped at ``client.max_iterations`` (their answers are recorded)."""
        # A client-executed call of the last response that no handler can answer: the run
        # stopped there, the call left waiting in the thread (see ``loop``).
        self.unanswerable: ToolCall | None = None

    async def loop(
        self,
        thread: Thread,
        model: str | None,
        once: bool,
        on_text: Callable[[str], None] | None,
        on_tool_result: Callable[[ToolCall], None] | None,
        roots: Iterable[str | os.PathLike[str]] | None,
        *,
        approvals: Mapping[str, ApprovalDecision] | None = None,
    ) -> RunResult:
        """The run: render, send, read, record, run the tools and answer the client-executed
        tool searches, and again until the model answers without either (or ``once``, or
        ``client.max_iterations``: then the calls of the last response, run and recorded, are
        :attr:`unsent`)."""
        resolved = resolve_model(thread, self.container, model)
        self._event_model = resolved
        # What this run records sorts after everything the thread holds already.
        self.clock = not_before(self.client.clock, latest(thread))
        allowed = file_roots(roots, self.settings.files)
        files = ContextAssembler.from_settings(self.settings.files, allowed)
        # The thread's own faults first, then the deployment's; all before anything runs.
        self.executor.check(thread)
        files.check(thread)
        decided = decided_approvals(thread, approvals, container=self.container, clock=self.clock)
        self.client._require_key()
        start_calls = len(thread.tool_calls)
        start_messages, start_thoughts = len(thread.messages), len(thread.thoughts)
        start_hosted = len(thread.hosted_items)
        if decided:  # part of this run's records, so stored and saved with them
            thread = msgspec.structs.replace(thread, hosted_items=thread.hosted_items + decided)

        async def run_calls(thread: Thread, calls: list[ToolCall]) -> Thread:
            return await execute(
                thread,
                calls,
                on_tool_result,
                files,
                executor=self.executor,
                telemetry=self.telemetry,
                emit=self.emit,
            )

        async def run_searches(thread: Thread, indexes: list[int], declared: Any) -> Thread:
            return await answer_searches(
                thread,
                indexes,
                declared,
                executor=self.executor,
                container=self.container,
                emit=self.emit,
            )

        ran_pending: tuple[ToolCall, ...] = ()
        waiting = [call for call in thread.tool_calls if call.result is None]
        if waiting and not once:  # calls a run before this one left without results
            thread = await run_calls(thread, waiting)
            pending = {call.id for call in waiting}
            ran_pending = tuple(c for c in thread.tool_calls[:start_calls] if c.id in pending)
        searches = waiting_searches(thread.hosted_items)
        if searches and not once:  # tool searches a run before this one left unanswered
            thread = await run_searches(thread, searches, self._declared(thread, resolved, allowed))
        compaction = await self.auto_compact(thread, resolved, allowed)
        if compaction is not None:
            thread = compaction.thread
            start_hosted = len(thread.hosted_items)
        iterations = 0
        generation: Generation | None = None
        stats: list[GenerationStats] = []
        while True:
            iterations += 1
            generation, thread = await self._iteration(thread, resolved, on_text, allowed)
            parser = text_call_parser(thread, container=self.container, hook=self.client._hook)
            generation = apply_text_tool_calls(generation, parser)
            before = record_counts(thread)
            thread, calls = record_generation(
                thread,
                generation,
                settings=self.settings,
                clock=self.clock,
                hook=self.client._hook,
                container=self.container,
            )
            stats.append(generation_stats(generation, resolved, thread, before))
            self.emit(
                ResponseDoneEvent(
                    response_id=generation.response_id,
                    status=generation.status,
                    model=stats[-1].model,
                    finish_reason=stats[-1].finish_reason,
                    usage=stats[-1].usage,
                )
            )
            self.client._observe(
                "on_raw_generation",
                observers=self._generation_observers,
                generation=generation,
                model=resolved,
            )
            runnable = [call for call in calls if call.result is None]
            unanswerable = [
                call
                for call in runnable
                if call.payload is not None and not self.executor.answers(call)
            ]
            if unanswerable:  # never answered in its place: the run stops, the call waits
                self.unanswerable = unanswerable[0]
                runnable = [call for call in runnable if call not in unanswerable]
            searches = waiting_searches(thread.hosted_items, before[3])
            if runnable and not once:
                thread = await run_calls(thread, runnable)
            if searches and not once and not unanswerable:
                thread = await run_searches(thread, searches, self._sent_tools())
            # The next request's render stamps this response's reasoning; a run that stops
            # here renders once more to stamp it.
            if not (calls or searches) or once or unanswerable:
                thread = fingerprint_new_thoughts(
                    thread,
                    container=self.container,
                    model=resolved,
                    render_context=self._render_context,
                    roots=allowed,
                )
                break
            if iterations >= self.settings.client.max_iterations:
                logger.warning(
                    "stopping after %d iterations (client.max_iterations)",
                    iterations,
                    extra={"kind": "max-iterations"},
                )
                self.unsent = tuple(calls)
                self.unsent_searches = tuple(thread.hosted_items[i] for i in searches)
                thread = fingerprint_new_thoughts(
                    thread,
                    container=self.container,
                    model=resolved,
                    render_context=self._render_context,
                    roots=allowed,
                )
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
            request_fingerprint=request_fingerprint(
                self._last_rendered, container=self.container, model=resolved
            ),
            generations=tuple(stats),
            usage=Usage.sum(s.usage for s in stats),
            compaction=compaction,
            prefix=tuple(self.prefix),
            ledger=self._ledger,
        )

    async def auto_compact(
        self, thread: Thread, model: str, roots: tuple[str, ...]
    ) -> CompactResult | None:
        """``context.window: {compact: {threshold: N}}``: compact what comes before the
        question when the estimate of the request is over N tokens (see
        :func:`~turnwire.client.assembly.compaction_due`)."""
        due = compaction_due(self.settings, thread)
        if due is None:
            return None
        part, before = due
        return await self.compact(thread, part, before, model, roots)

    async def compact(
        self,
        thread: Thread,
        part: Thread,
        before: Message | Thought | ToolCall | HostedItem | None,
        model: str,
        roots: tuple[str, ...],
    ) -> CompactResult | None:
        refused = unsupported(
            self.settings.provider, "compact", "compact", "POST /responses/compact"
        )
        if refused is not None:
            raise refused
        rendered = self._render(part, model, roots)
        body = compact_body(rendered.body)
        self.client._observe(
            "on_prompt_assembled",
            observers=self._prompt_observers,
            body=body,
            model=model,
            attempt_kind="compact",
        )
        self.requests += 1
        with self.telemetry.compaction(model) as span:
            async with self.transport.exchange(body, stream=False, path="/compact") as answer:
                raw = b"".join([chunk async for chunk in answer.chunks])
            decoded = decoded_answer(raw, "a response.compaction object")
            compacted = parse_compacted(decoded)
            self.telemetry.compacted(span, compacted.id, compacted.usage)
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

    def _sent_tools(self) -> list[dict[str, Any]]:
        """The tool declarations of the request last rendered, as plain JSON."""
        tools = self._last_rendered.rendered.tools or ()
        return list(msgspec.json.decode(msgspec.json.encode(tools)))

    def _declared(self, thread: Thread, model: str, roots: tuple[str, ...]) -> list[dict[str, Any]]:
        """The tool declarations a request of ``thread`` carries, as plain JSON (rendered
        without the request's checks: ``thread`` may hold a search that waits for them)."""
        rendered = render_input(
            thread,
            container=self.container,
            model=model,
            render_context=self._render_context,
            roots=roots,
        )
        return list(msgspec.json.decode(msgspec.json.encode(rendered.tools or ())))

    def _render(
        self,
        thread: Thread,
        model: str,
        roots: tuple[str, ...],
        *,
        replay_off: bool = False,
        pending: frozenset[str] = frozenset(),
    ) -> Any:
        return render_request(
            self.container,
            thread,
            model,
            roots,
            render_context=self._render_context,
            output_schema=self._output_schema,
            replay_off=replay_off,
            pending=pending,
            cache_identity=self._cache_identity,
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
        check_tool_choice(self.settings, thread)
        pending = pending_ids(thread)
        rendered = self._last_rendered = self._render(thread, model, roots, pending=pending)
        window = self.settings.context.window
        if window != "all":  # where the window starts: a later start is a "window" reset
            cut = window_cut(thread, window)
            self._window_start = 0 if cut is None else cut.first_turn
        if pending:
            thread = stamp(thread, pending, rendered.rendered.stamped)
        check_window(self.settings, rendered, thread)
        try:
            return await self._exchange(rendered, model, on_text, "request"), thread
        except HttpError as err:
            body = err.body.lower().replace("`", "")
            if err.http_status != 400 or not any(p in body for p in REASONING_PHRASES):
                raise
            if not carries_reasoning(rendered.request.input):
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
        body: EncodedBody = rendered.encoded
        if self._trigger:  # sent, never rendered: the ledger holds the rendered items alone
            body = with_compaction_trigger(body)
        stream = rendered.request.stream
        if self._prompt_observers:  # the bytes joined only for an observer
            self.client._observe(
                "on_prompt_assembled",
                observers=self._prompt_observers,
                body=bytes(body),
                model=model,
                attempt_kind=attempt_kind,
            )
        self._account(rendered)
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
            raise_unless_answered(generation)
        self._trigger = False
        return generation

    def _account(self, rendered: Any) -> None:
        """Hold the request about to be sent against the one sent before it: the report joins
        :attr:`prefix`, a reset is logged (``prefix-reset``) and shown as a progress event."""
        ledger = ledger_of(
            rendered.request,
            settings=self._settings_digest,
            window_start=self._window_start,
            digests=self._digests,
        )
        report = compare(self._ledger, ledger)
        self._ledger = ledger
        if report is None:
            return
        self.prefix.append(report)
        if not report.extends:
            number = self.requests + 1
            logger.warning(
                "request %d: %s", number, report.describe(), extra={"kind": "prefix-reset"}
            )
            self.emit(PrefixResetEvent(request=number, report=report))

    async def _answer(
        self, body: bytes | EncodedBody, stream: bool, on_text: Callable[[str], None] | None
    ) -> Generation:
        return await read_answer(
            self.transport, self.container, body, stream, on_text, emit=self.observer
        )

    def emit(self, event: ProgressEvent) -> None:
        """Report ``event`` to the run's ``on_event`` and the ``on_stream_event`` hook (when the
        run started with an implementation of it)."""
        if self._on_event is not None:
            try:
                self._on_event(event)
            except Exception:
                logger.exception(
                    "the on_event callback raised; the turn goes on",
                    extra={"kind": "observer-error"},
                )
        if self._hooked:
            self.client._observe(
                "on_stream_event",
                observers=self._event_observers,
                event=event,
                model=self._event_model,
            )
