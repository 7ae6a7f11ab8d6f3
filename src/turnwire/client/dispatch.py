"""Dispatch: the :class:`Client` and its run loop (render, guard, send, stream, record, run
tools, loop).

One iteration renders the thread (preflight included), checks the context window, POSTs the
exact bytes, reads the stream into a :class:`~turnwire.wire.response.Generation` and records it
as thread records: messages, thoughts (with the replay payload when reasoning replay is on)
and tool calls (composite ``call_id|fc_...`` ids), all stamped with one timestamp and strictly
increasing ``seq``. Tool calls then run in order and their results are recorded; the loop goes
on until the model answers without calls, or ``client.max_iterations`` (then
:class:`~turnwire.errors.MaxIterationsError`, carrying the run's result).

A 400 that blames a replayed reasoning item (``invalid_encrypted_content`` or a pairing
phrase) is retried once without reasoning, and only when the request carried reasoning items
or paired ids; the retry strips both. Nothing is recorded from a failed, stalled, unfinished
(no terminal event) or rejected exchange: the thread stays as it was.

Each job has its module: :mod:`turnwire.client.assembly` (what a request is rendered from and
checked against), :mod:`turnwire.client.reading` (the answer into a generation),
:mod:`turnwire.client.recording` (the generation into records) and
:mod:`turnwire.client.execution` (the tool calls run); this module sequences them.
"""

from __future__ import annotations

import inspect
import logging
import os
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import msgspec

from turnwire._redact import redact
from turnwire.client._run import Run
from turnwire.client.blocking import run_blocking
from turnwire.client.progress import ProgressEvent
from turnwire.client.reading import (
    finish_reason,
)
from turnwire.client.recording import (
    Records,
)
from turnwire.client.results import ResponseMeta, RunResult, Shape
from turnwire.client.stored import compact_stored, run_stored
from turnwire.client.telemetry import Telemetry
from turnwire.client.tools import ToolExecutor, waiting_call_error
from turnwire.client.transport import RetryPolicy, Transport
from turnwire.config.settings import merge, profile_path, settings_from_tree, unsupported
from turnwire.errors import (
    ConfigError,
    InputError,
    MaxIterationsError,
    MissingApiKeyError,
    OutputValidationError,
)
from turnwire.files.pointers import ContextAssembler, file_roots
from turnwire.model.approvals import ApprovalDecision
from turnwire.model.functions import function_tools, with_function_tools
from turnwire.model.records import HostedItem, Media, Thread, ToolCall
from turnwire.model.structured import (
    OutputSchema,
    StructuredOutput,
    output_schema_argument,
    requested_output,
    structured_output,
)
from turnwire.model.timeline import timeline
from turnwire.rendering.caching import cache_identity as thread_identity
from turnwire.rendering.compaction import (
    CompactResult,
    compacted,
)
from turnwire.rendering.container import build_container
from turnwire.rendering.ledger import Ledger
from turnwire.rendering.renderer import check_thread_once, resolve_model

if TYPE_CHECKING:
    from turnwire.store import ThreadStore

__all__ = ["Client", "Records", "ResponseMeta", "RunResult", "finish_reason"]

logger = logging.getLogger("turnwire")


_TRANSPORT_OPTIONS = frozenset(
    name for name in inspect.signature(Transport.__init__).parameters if name != "self"
)
# The fields of ``client:`` a client reads into the transport it makes (the others, such as
# ``max_iterations``, are its own). The transport is made from a view of the settings that
# holds these alone (_Only): a field read there without being listed here fails at once.
_TRANSPORT_SETTINGS = (
    "base_url",
    "api_key_env",
    "organization",
    "project",
    "headers",
    "auth_header",
    "auth_scheme",
    "query",
    "request_timeout_s",
    "connect_timeout_s",
    "stream_idle_timeout_s",
    "max_stream_bytes",
    "retry",
)


class _Only:
    """``settings`` with only the attributes ``names`` readable."""

    __slots__ = ("_names", "_settings")

    def __init__(self, settings: Any, names: Iterable[str]) -> None:
        self._settings = settings
        self._names = frozenset(names)

    def __getattr__(self, name: str) -> Any:
        if name not in self._names:
            raise AttributeError(f"client.{name} is not one of _TRANSPORT_SETTINGS")
        return getattr(self._settings, name)


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


def _container(
    container: Any,
    config: Iterable[str | os.PathLike[str]],
    profile: str | Iterable[str],
    overrides: Mapping[str, Any] | None,
) -> Any:
    """The client's container: the one given, else one built from the configuration."""
    profiles = [profile] if isinstance(profile, str) else list(profile)
    config = list(config)
    if container is None:
        files = [*(profile_path(name) for name in profiles), *config]
        return build_container(files, overrides=overrides)
    if config or profiles or overrides:
        raise TypeError(
            "Client takes a container or config=/profile=/overrides=, not both (a container "
            "holds its settings already)"
        )
    return container


def _now() -> datetime:
    moment = datetime.now(UTC)
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


class Client:
    """Runs turns against a Responses endpoint, with a container's settings and stages.

    Make one and keep it: it holds one HTTP connection pool, reused by every request of every
    run, and no state of a run (concurrent runs on one client are safe). Use it as an async
    context manager (``async with Client() as client:``), or call :meth:`aclose` when done, so
    its connections are closed.

    :param container: settings, plugins, stages (``turnwire.build_container``); by default one
        built from ``config``, ``profile`` and ``overrides`` (none given: the packaged defaults,
        the endpoint ``$OPENAI_BASE_URL`` else OpenAI's, the key ``$OPENAI_API_KEY``).
    :param config: configuration files (YAML), merged over the defaults in order.
    :param profile: a profile shipped with turnwire by name (``local-dev``, ``production``...;
        ``turnwire.config.settings.profile_names()``), or several, merged before ``config``.
    :param overrides: settings given in code, shaped like a configuration file
        (``{"request": {"temperature": 0.2}}``), merged last.
    :param transport: a :class:`~turnwire.client.transport.Transport` to use instead of one
        built from ``client:`` settings (its URL, key, headers and timeouts are then its own).
    :param base_url: the endpoint (default ``client.base_url``, which defaults to
        ``$OPENAI_BASE_URL``, else ``https://api.openai.com/v1``).
    :param api_key: the API key (default: the variable ``client.api_key_env`` names).
    :param organization: the ``OpenAI-Organization`` header (default ``client.organization``,
        which defaults to ``$OPENAI_ORG_ID``).
    :param project: the ``OpenAI-Project`` header (default ``client.project``, which defaults
        to ``$OPENAI_PROJECT_ID``).
    :param handlers: tool name → callable, instead of importing the tools' ``handler`` paths.
    :param tools: functions (sync or async, plain or :func:`turnwire.tool`) declared as tools
        to every run, each its own handler (see :mod:`turnwire.model.functions`).
    :param clock: returns "now" for record timestamps (tests inject a fixed one).
    :param tracer_provider: the OpenTelemetry tracer provider for this client's spans
        (default: the global one; see :mod:`turnwire.client.telemetry`).
    """

    def __init__(
        self,
        container: Any = None,
        *,
        config: Iterable[str | os.PathLike[str]] = (),
        profile: str | Iterable[str] = (),
        overrides: Mapping[str, Any] | None = None,
        transport: Transport | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        organization: str | None = None,
        project: str | None = None,
        handlers: Mapping[str, Callable[..., Any]] | None = None,
        tools: Iterable[Callable[..., Any]] = (),
        clock: Callable[[], datetime] = _now,
        tracer_provider: Any = None,
        **transport_options: Any,
    ) -> None:
        functions = function_tools(tools)  # a bad function fails before anything is made
        container = _container(container, config, profile, overrides)
        self.container = container
        self.settings = container.settings()
        self._missing_key: str | None = None
        given_transport = transport is not None
        client: Any = _Only(self.settings.client, _TRANSPORT_SETTINGS)
        if transport is None:
            url = base_url or client.base_url
            if api_key is None and client.api_key_env:
                api_key = os.environ.get(client.api_key_env) or None
            # A configuration that names no key variable (api_key_env: null) sends none, to any
            # host: a keyless vLLM or Ollama on another machine, a gateway that adds its own.
            if api_key is None and client.api_key_env and not _is_local(url):
                self._missing_key = url
            retry = client.retry
            options: dict[str, Any] = {
                "base_url": url,
                "api_key": api_key,
                "organization": organization or client.organization,
                "project": project or client.project,
                "headers": client.headers,
                "auth_header": client.auth_header,
                "auth_scheme": client.auth_scheme,
                "query": client.query,
                "request_timeout_s": client.request_timeout_s,
                "connect_timeout_s": client.connect_timeout_s,
                "stream_idle_timeout_s": client.stream_idle_timeout_s,
                "max_stream_bytes": client.max_stream_bytes,
                "retry": RetryPolicy(
                    max_retries=retry.max_retries,
                    initial_delay_s=retry.initial_delay_s,
                    max_delay_s=retry.max_delay_s,
                    max_retry_after_s=retry.max_retry_after_s,
                    statuses=None if retry.statuses is None else frozenset(retry.statuses),
                    honor_retry_after=retry.honor_retry_after,
                ),
            }
            unknown = sorted(set(transport_options) - _TRANSPORT_OPTIONS)
            if unknown:
                raise TypeError(
                    f"unexpected keyword argument {unknown[0]!r}: the transport takes "
                    f"{', '.join(sorted(_TRANSPORT_OPTIONS - {'base_url', 'api_key'}))}; "
                    "request options (temperature, ...) go in the configuration "
                    "(request.temperature, --set request.temperature=0.2)"
                )
            # The caller's transport options win over the configuration's.
            transport = Transport(**{**options, **transport_options})
        elif transport_options:  # they would configure a transport this client does not make
            raise TypeError(
                f"unexpected keyword argument {sorted(transport_options)[0]!r}: a client given "
                "its transport= takes no transport options"
            )
        self.transport = transport
        self.executor = ToolExecutor.from_settings(
            self.settings, handlers=handlers, functions=functions
        )
        self.telemetry = Telemetry(
            enabled=self.settings.client.telemetry,
            capture_content=self.settings.client.telemetry_content,
            base_url=transport.url,
            tracer_provider=tracer_provider,
        )
        self._tracer_provider = tracer_provider
        self.clock = clock
        self.plugin_manager = container.plugin_manager()
        self._handlers = dict(handlers or {})
        self._transport_options = transport_options
        self._credentials = (base_url, api_key, organization, project)
        self._given_transport = given_transport
        self._closes_transport = True  # False for a with_overrides client: its parent's

    def __repr__(self) -> str:
        return f"Client(url={redact(self.transport.url)!r})"

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP connections this client opened (a client passed in stays open, and
        so does the transport a :meth:`with_overrides` client shares with its parent)."""
        if self._closes_transport:
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
        this one's HTTP connection pool and plugins. A client made with ``transport=`` shares
        that transport (its URL and key) and takes no override of what configures a transport
        (``client.base_url``, ``client.headers``, the timeouts, ...): configure the transport.

        :raises ConfigError: such an override, for a client made with ``transport=``.
        """
        tree = merge(msgspec.to_builtins(self.settings), overrides)
        settings = settings_from_tree(tree)
        container = build_container(settings=settings, extra_plugins=self.container.extra_plugins())
        if self._given_transport:
            changed = [
                name
                for name in _TRANSPORT_SETTINGS
                if getattr(settings.client, name) != getattr(self.settings.client, name)
            ]
            if changed:
                raise ConfigError(
                    f"client.{changed[0]}: this client was made with transport=, which that "
                    "setting would configure; configure the transport instead",
                    path=f"client.{changed[0]}",
                )
            made: dict[str, Any] = {"transport": self.transport}
        else:
            base_url, api_key, organization, project = self._credentials
            made = {
                "base_url": base_url,
                "api_key": api_key,
                "organization": organization,
                "project": project,
                **self._transport_options,
            }
            made.setdefault("client", self.transport.shared_client())
        derived = Client(
            container,
            handlers=self._handlers,
            tools=tuple(self.executor.functions.values()),
            clock=self.clock,
            tracer_provider=self._tracer_provider,
            **made,
        )
        derived._closes_transport = False  # the connections are this client's to close
        return derived

    # ------------------------------------------------------------------ public

    def run_sync(self, thread: Thread, **kwargs: Any) -> RunResult:
        """:meth:`run` for scripts, then the client closed. Inside a running event loop it runs
        in a worker thread (see :mod:`turnwire.client.blocking`); prefer ``await`` there."""

        async def main() -> RunResult:
            try:
                return await self.run(thread, **kwargs)
            finally:
                await self.aclose()

        return run_blocking(main)

    async def run_thread(
        self,
        thread_id: str,
        *,
        store: ThreadStore,
        prompt: str = "",
        files: Iterable[str | os.PathLike[str] | Media] = (),
        roots: Iterable[str | os.PathLike[str]] | None = None,
        output_schema: type[Shape] | Mapping[str, Any] | OutputSchema | None = None,
        **run_options: Any,
    ) -> RunResult[Shape]:
        """One turn of a thread ``store`` keeps: ``prompt`` and ``files`` (paths, or
        :class:`~turnwire.model.records.Media`: ``Media.from_file_id(...)`` and
        ``Media.from_url(...)`` are stored as references the API resolves) asked as a
        new user message, the run, and its turns appended to the thread in one transaction
        (see :mod:`turnwire.client.stored`). Concurrent calls on one client are safe; two on
        the same thread cannot interleave their turns (the later append raises
        :class:`~turnwire.errors.StoreConflictError`).

        :param roots: where the thread's file pointers may lead (default ``files.roots``); its
            own folders among the store's files and this question's ``files`` are allowed too.
        :param output_schema: as :meth:`run` takes it (``RunResult[Invoice]`` for a Struct).
        :param run_options: :meth:`run`'s (``model``, ``once``, ``on_text``, ``on_event``,
            ``tools``, ``approvals``, ``overrides``, ``render_context``).
        :raises turnwire.errors.OutputValidationError: the answer does not match the output
            schema; its turns were stored first.
        :raises turnwire.errors.MaxIterationsError: the run stopped at
            ``client.max_iterations``; its turns were stored first.
        """
        return await run_stored(
            self,
            thread_id,
            store=store,
            prompt=prompt,
            files=files,
            roots=roots,
            output_schema=output_schema,
            **run_options,
        )

    async def compact_thread(
        self,
        thread_id: str,
        *,
        store: ThreadStore,
        roots: Iterable[str | os.PathLike[str]] | None = None,
        model: str | None = None,
        overrides: Mapping[str, Any] | None = None,
        render_context: Mapping[str, str] | None = None,
    ) -> CompactResult:
        """Compact a thread ``store`` keeps (:meth:`compact`): the compaction is appended as a
        turn of its own, only when the thread did not change meanwhile (else
        :class:`~turnwire.errors.StoreConflictError`, nothing stored); older turns stay."""
        return await compact_stored(
            self,
            thread_id,
            store=store,
            roots=roots,
            model=model,
            overrides=overrides,
            render_context=render_context,
        )

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
        output_schema: type[Shape]
        | Mapping[str, Any]
        | OutputSchema
        | StructuredOutput
        | None = None,
        output_type: type[Shape] | Mapping[str, Any] | OutputSchema | None = None,
        cache_identity: str | None = None,
        previous_ledger: Ledger | None = None,
        tools: Iterable[Callable[..., Any]] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        compaction_trigger: bool = False,
    ) -> RunResult[Shape]:
        """Send the thread, stream the answer, run tools and loop; return the extended thread.

        Before anything runs or is sent, the thread is checked as a thread file is
        (:class:`~turnwire.errors.ThreadFileError`, naming the ``$.path``: see
        :mod:`turnwire.model.checks`), and so are its handlers and file pointers
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
            id (``True``, ``False`` or an :class:`~turnwire.model.approvals.Approval` with a
            reason), recorded as ``mcp_approval_response`` items before the first request
            (see :mod:`turnwire.model.approvals`; an id that is not pending raises
            :class:`~turnwire.errors.ApprovalNotPendingError` before anything is sent).
        :param output_schema: the schema the answer must follow (a :class:`msgspec.Struct`
            class, a JSON Schema dict or a :class:`~turnwire.model.structured.OutputSchema`); it
            wins over the thread's ``output_schema`` and ``request.output_schema``
            (``output_type=``, its spelling before, works for one version, with a
            :class:`DeprecationWarning`). The final answer
            is decoded into :attr:`RunResult.parsed`; a refusal leaves it ``None`` and sets
            :attr:`RunResult.refusal`; a mismatch raises
            :class:`~turnwire.errors.OutputValidationError` (the run's result on its
            ``result``).
        :param cache_identity: what ``request.prompt_cache_key: thread`` derives every
            request's key from: a stored thread's id (:func:`turnwire.api.run_thread` passes
            it); by default the thread's opening record (see
            :mod:`turnwire.rendering.caching`).
        :param previous_ledger: the :attr:`RunResult.ledger` of the run before this one on
            the same thread, so this run's first request is checked against it too
            (:attr:`RunResult.prefix`; :func:`turnwire.run_thread` keeps it in the store).
        :param tools: functions declared as tools for this run, after the thread's own tools
            and the client's ``tools=`` (see :mod:`turnwire.model.functions`); the returned
            thread does not hold their declarations. A name one of them shares with a thread
            tool raises :class:`~turnwire.errors.InputError` before anything is sent.
        :param extra_body: request fields turnwire does not model, for this run's requests,
            merged over ``request.extra`` (the same rules: a field turnwire owns or models is a
            :class:`~turnwire.errors.ConfigError` naming it, before anything is sent).
        :param compaction_trigger: end the run's first request with a ``compaction_trigger``
            item, which asks the API to compact the conversation in that response (server-side
            compaction: the compaction item it returns is recorded and the next request starts
            from it). The item is sent, never recorded; the request is checked by the preflight
            rules with it (``compaction-trigger-last``). Refused when ``provider.lacks`` names
            ``context_management`` (:class:`~turnwire.errors.ProviderUnsupportedError`).
        :raises turnwire.errors.MaxIterationsError: the run stopped at
            ``client.max_iterations`` with the model still calling tools (the run's result,
            its last calls run and recorded, on its ``result``).
        :raises turnwire.errors.StreamError: the exchange failed, or the stream ended before
            its terminal event (the output that arrived on its ``partial``); nothing of that
            answer is recorded.
        :raises turnwire.errors.ToolHandlerMissingError: a client-executed tool the thread or
            the configuration declares has no handler (before anything is sent), or a
            response called one nothing declared: the run stopped there, the call waiting in
            the thread its ``result`` holds.
        """
        # a bad schema, or a thread no thread file could hold, fails before anything runs
        check_thread_once(thread, self.container)
        asked = structured_output(output_schema_argument(output_schema, output_type))
        if extra_body:
            overrides = merge(overrides or {}, {"request": {"extra": dict(extra_body)}})
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
                output_schema=asked,
                cache_identity=cache_identity,
                previous_ledger=previous_ledger,
                tools=tools,
                compaction_trigger=compaction_trigger,
            )
        if compaction_trigger:
            lacking = unsupported(
                self.settings.provider,
                "context_management",
                "compaction_trigger",
                "a compaction_trigger (server-side compaction)",
            )
            if lacking is not None:
                raise lacking
        executor = self.executor.with_functions(function_tools(tools or ()))
        declared = with_function_tools(thread, executor.functions.values())
        run = Run(
            self,
            render_context=render_context,
            output_schema=asked,
            on_event=on_event,
            cache_identity=thread_identity(thread, cache_identity),
            previous_ledger=previous_ledger,
            executor=executor,
            compaction_trigger=compaction_trigger,
        )
        with self.telemetry.run(model or thread.model) as span:
            result = await run.loop(
                declared, model, once, on_text, on_tool_result, roots, approvals=approvals
            )
            self.telemetry.finished(span, result.generations, result.usage)
        if declared is not thread:  # tools= declarations are the run's, never the thread's
            kept = msgspec.structs.replace(
                result.thread, tools=thread.tools, hosted_tools=thread.hosted_tools
            )
            result = msgspec.structs.replace(result, thread=kept)
        result = _with_output(
            result, requested_output(asked, thread.output_schema, self.settings.request)
        )
        if run.unsent or run.unsent_searches:
            stopped = MaxIterationsError(
                iterations=result.iterations,
                pending=tuple(call.id for call in run.unsent)
                + tuple(search.id for search in run.unsent_searches),
                tools=tuple(call.tool for call in run.unsent)
                + ("tool_search",) * len(run.unsent_searches),
            )
            stopped.result = result
            raise stopped
        if run.unanswerable is not None:  # recorded, waiting: a run with a handler answers it
            waiting = run.unanswerable
            index = next(i for i, c in enumerate(result.thread.tool_calls) if c.id == waiting.id)
            missing = waiting_call_error(index, waiting)
            missing.result = result
            raise missing
        return result

    async def compact(
        self,
        thread: Thread,
        *,
        model: str | None = None,
        overrides: Mapping[str, Any] | None = None,
        render_context: Mapping[str, str] | None = None,
        roots: Iterable[str | os.PathLike[str]] | None = None,
        cache_identity: str | None = None,
    ) -> CompactResult:
        """Compact the whole thread: ``POST /responses/compact`` with the input a request
        would send (its model and instructions; see :mod:`turnwire.rendering.compaction`), and the
        returned compaction item added as a hosted item after every record it covers.

        Later renders send that item in place of everything before it; the thread keeps
        every record. Retries and HTTP errors are those of a request.

        :raises turnwire.errors.InputError: the thread has no record to compact, or nothing
            since its latest compaction.
        :param cache_identity: as :meth:`run` takes it: the compact request carries the
            thread's ``prompt_cache_key``, as its other requests do.
        :raises turnwire.errors.StreamError: the answer is not a valid ``response.compaction``
            object (the error names the field); nothing is added.
        """
        if overrides:
            return await self.with_overrides(overrides).compact(
                thread,
                model=model,
                render_context=render_context,
                roots=roots,
                cache_identity=cache_identity,
            )
        check_thread_once(thread, self.container)
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
        run = Run(
            self,
            render_context=render_context,
            cache_identity=thread_identity(thread, cache_identity),
        )
        result = await run.compact(thread, thread, None, resolved, allowed)
        assert result is not None
        return result

    # ------------------------------------------------------------------ hooks

    def _hook(self, name: str, **kwargs: Any) -> Any:
        return getattr(self.plugin_manager.hook, name)(**kwargs)

    def _observers(self, name: str) -> Observers:
        """The implementations of the observer hook ``name``, looked up now: a run looks its
        observers up once, as it starts, and hands them to each :meth:`_observe`."""
        impls = getattr(self.plugin_manager.hook, name).get_hookimpls()
        plain = tuple(impl for impl in impls if not (impl.wrapper or impl.hookwrapper))
        wrappers = None
        if len(plain) != len(impls) or self.settings.plugins.trace:
            wrappers = self.plugin_manager.subset_hook_caller(
                name, remove_plugins=[impl.plugin for impl in plain]
            )
        return Observers(name, plain, wrappers)

    def _observe(self, name: str, observers: Observers | None = None, **kwargs: Any) -> None:
        """Call every observer, each isolated: one that raises is logged, the others run.

        :param observers: the observers of ``name`` as :meth:`_observers` found them (a run
            passes those it looked up as it started); ``None``: looked up now.

        Wrappers (and tracing) need pluggy's own call: then the observers run as temporary
        implementations of a caller that holds only the wrappers, still isolated one by one.
        """
        found = self._observers(name) if observers is None else observers
        plain, wrappers = found.plain, found.wrappers

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

        if wrappers is None:
            for impl in plain:
                isolated(impl)()
            return
        try:
            wrappers.call_extra([isolated(impl) for impl in reversed(plain)], kwargs)
        except Exception:
            logger.exception(
                "a wrapper of %s raised; the turn goes on", name, extra={"kind": "observer-error"}
            )


class Observers:
    """The implementations of one observer hook, as :meth:`Client._observers` found them.

    :ivar plain: the observers that are no wrappers, in pluggy's calling order reversed (as
        ``get_hookimpls`` lists them).
    :ivar wrappers: when the hook has wrappers or is traced, pluggy's caller of the hook
        without the plain observers (which then run as its temporary implementations);
        ``None`` otherwise.
    """

    __slots__ = ("name", "plain", "wrappers")

    def __init__(self, name: str, plain: tuple[Any, ...], wrappers: Any) -> None:
        self.name = name
        self.plain = plain
        self.wrappers = wrappers

    def __bool__(self) -> bool:
        """Whether calling the hook calls anything (an observer, a wrapper or the trace)."""
        return bool(self.plain) or self.wrappers is not None


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
