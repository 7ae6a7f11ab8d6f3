"""The user-level API: :func:`render` (re-exported from :mod:`turnwire.rendering.renderer`), and
:func:`run`, :func:`run_thread`, :func:`compact` and :func:`compact_thread`, which send
through :class:`~turnwire.client.dispatch.Client`."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from turnwire.client.blocking import run_blocking
from turnwire.client.dispatch import Client, RunResult
from turnwire.client.results import KeptError, Shape, kept
from turnwire.client.stored import compaction_turn, media_from_path
from turnwire.errors import (
    ConfigError,
)
from turnwire.files.pointers import file_roots
from turnwire.files.thread_file import file_digest, load_thread, save_thread
from turnwire.model.records import Media, Thread, ToolCall
from turnwire.model.structured import OutputSchema, output_schema_argument
from turnwire.rendering.compaction import CompactResult
from turnwire.rendering.container import Container, build_container
from turnwire.rendering.renderer import (
    RenderedRequest,
    Renderer,
    _folder_of,
    check_thread_once,
    prefix_fingerprint,
    render,
    render_input,
    resolve_model,
    with_declared_tools,
)

if TYPE_CHECKING:
    from turnwire.client.progress import ProgressEvent
    from turnwire.model.approvals import ApprovalDecision
    from turnwire.store import ThreadStore

__all__ = [
    "CompactResult",
    "RenderedRequest",
    "Renderer",
    "compact",
    "compact_thread",
    "compaction_turn",
    "media_from_path",
    "prefix_fingerprint",
    "render",
    "render_input",
    "resolve_model",
    "run",
    "run_thread",
    "with_declared_tools",
]


def run(
    thread: Thread | Mapping[str, Any] | str | os.PathLike[str],
    *,
    config_files: Iterable[str | os.PathLike[str]] = (),
    base_url: str | None = None,
    api_key: str | None = None,
    organization: str | None = None,
    project: str | None = None,
    model: str | None = None,
    once: bool = False,
    save: bool = False,
    on_text: Callable[[str], None] | None = None,
    on_tool_result: Callable[[ToolCall], None] | None = None,
    on_event: Callable[[ProgressEvent], None] | None = None,
    container: Container | None = None,
    handlers: Mapping[str, Callable[..., Any]] | None = None,
    tools: Iterable[Callable[..., Any]] = (),
    render_context: Mapping[str, str] | None = None,
    roots: Iterable[str | os.PathLike[str]] | None = None,
    approvals: Mapping[str, ApprovalDecision] | None = None,
    output_schema: type[Shape] | Mapping[str, Any] | OutputSchema | None = None,
    output_type: type[Shape] | Mapping[str, Any] | OutputSchema | None = None,
    extra_body: Mapping[str, Any] | None = None,
    compaction_trigger: bool = False,
    **transport_options: Any,
) -> RunResult[Shape]:
    """Send a thread, stream the answer, run its tools until the model stops.

    :param thread: a thread, a thread mapping, or a thread file path.
    :param roots: where file pointers may lead (see :func:`render`).
    :param base_url: the Responses endpoint (default ``client.base_url``, else
        ``$OPENAI_BASE_URL``, else ``https://api.openai.com/v1``).
    :param api_key: the API key (default: the variable ``client.api_key_env`` names,
        ``OPENAI_API_KEY``).
    :param organization: ``OpenAI-Organization`` (default ``client.organization``, else
        ``$OPENAI_ORG_ID``).
    :param project: ``OpenAI-Project`` (default ``client.project``, else ``$OPENAI_PROJECT_ID``).
    :param once: one request: tool calls are recorded but not run.
    :param save: write the extended thread back to the thread file (paths only).
    :param on_text: called with each text delta as it streams.
    :param on_tool_result: called with each tool call once its result is recorded.
    :param on_event: called with each progress event (text, reasoning and tool-argument
        deltas, refusals, finished items and responses with usage, tools started and
        finished; see :mod:`turnwire.client.progress`).
    :param handlers: tool name → callable, instead of the tools' ``handler`` paths.
    :param tools: functions the model may call, sync or async, plain or made with
        :func:`turnwire.tool`: each is declared after the thread's own tools (its name, its
        docstring, a JSON Schema from its type hints) and is its own handler; see
        :mod:`turnwire.model.functions`. Their declarations are the run's: the thread saved
        (``save``) or returned does not hold them. A name a thread tool has too raises
        :class:`~turnwire.errors.InputError` before anything is sent.
    :param render_context: values stages may ask for by name, for every request of the run
        (see :func:`render`).
    :param approvals: decisions on the thread's pending MCP approval requests, by request id
        (``{"mcpr_...": True}``; see :mod:`turnwire.model.approvals`), recorded and sent before the
        first request.
    :param output_schema: the schema the answer must follow: a :class:`msgspec.Struct` class,
        a JSON Schema dict or a :class:`~turnwire.model.structured.OutputSchema` (over the thread's
        ``output_schema``, over ``request.output_schema``); the answer is decoded into
        ``RunResult.parsed``, a refusal lands in ``RunResult.refusal`` (see
        :mod:`turnwire.model.structured`). ``output_type=``, its spelling before, still works for
        one version, with a :class:`DeprecationWarning`.
    :param extra_body: request fields turnwire does not model (``{"max_tool_calls": 3}``),
        merged over ``request.extra``; a field turnwire owns (``store``, ``input``...) or
        models (``temperature``...) is a :class:`~turnwire.errors.ConfigError` naming it.
    :param compaction_trigger: end the first request with a ``compaction_trigger`` item, so the
        API compacts the conversation in that response (see :meth:`Client.run
        <turnwire.client.dispatch.Client.run>`).
    :param transport_options: passed to :class:`turnwire.client.transport.Transport`
        (``sleep``, ``jitter``, ``client``...).
    :raises turnwire.errors.TurnwireError: bad input, or the exchange failed; nothing of a
        failed exchange is recorded.
    :raises turnwire.errors.OutputValidationError: the answer does not match the output
        schema; with ``save`` the thread file was saved first (the model did answer).
    :raises turnwire.errors.MaxIterationsError: the run stopped at ``client.max_iterations``
        with the model still calling tools; with ``save`` the thread file was saved first.
    """
    output_schema = output_schema_argument(output_schema, output_type)
    if container is None:
        container = build_container(config_files)
    path: Path | None = None
    if isinstance(thread, str | os.PathLike):
        path = Path(thread)
    if save and path is None:
        raise ConfigError("--save needs a thread file path to write back to", path="$")
    chosen = file_roots(roots, container.settings().files, _folder_of(thread))
    # What the file held when the run read it: saved only over those same bytes.
    read_as = file_digest(path) if save and path is not None else None
    loaded = thread if isinstance(thread, Thread) else load_thread(thread)
    if loaded is not thread:  # the loader checked it: the client's check only remembers it
        check_thread_once(loaded, container, loaded=True)
    client = _client(
        container, base_url, api_key, organization, project, transport_options, handlers, tools
    )
    result, invalid = _kept(
        client,
        loaded,
        model=model,
        once=once,
        on_text=on_text,
        on_tool_result=on_tool_result,
        render_context=render_context,
        roots=chosen,
        on_event=on_event,
        approvals=approvals,
        output_schema=output_schema,
        extra_body=extra_body,
        compaction_trigger=compaction_trigger,
    )
    if save and path is not None:
        save_thread(result.thread, path, unchanged_since=read_as, result=result)
    if invalid is not None:
        raise invalid
    return result


def _kept(client: Client, thread: Thread, **kwargs: Any) -> tuple[RunResult, KeptError | None]:
    """``client.run(thread, ...)`` to its end, the client closed after, and the error it raised
    after the model answered, if any, with the result the error carries
    (:func:`~turnwire.client.results.kept`): what the run recorded is kept either way."""

    async def main() -> tuple[RunResult, KeptError | None]:
        try:
            return await kept(client.run(thread, **kwargs))
        finally:
            await client.aclose()

    return run_blocking(main)


def _client(
    container: Container,
    base_url: str | None,
    api_key: str | None,
    organization: str | None,
    project: str | None,
    transport_options: dict[str, Any],
    handlers: Mapping[str, Callable[..., Any]] | None = None,
    tools: Iterable[Callable[..., Any]] = (),
) -> Client:
    """The client a module-level function makes for its one call."""
    return Client(
        container,
        base_url=base_url,
        api_key=api_key,
        organization=organization,
        project=project,
        handlers=handlers,
        tools=tools,
        **transport_options,
    )


def run_thread(
    thread_id: str,
    *,
    store: ThreadStore,
    prompt: str = "",
    files: Iterable[str | os.PathLike[str] | Media] = (),
    config_files: Iterable[str | os.PathLike[str]] = (),
    base_url: str | None = None,
    api_key: str | None = None,
    organization: str | None = None,
    project: str | None = None,
    model: str | None = None,
    once: bool = False,
    on_text: Callable[[str], None] | None = None,
    on_tool_result: Callable[[ToolCall], None] | None = None,
    on_event: Callable[[ProgressEvent], None] | None = None,
    container: Container | None = None,
    handlers: Mapping[str, Callable[..., Any]] | None = None,
    tools: Iterable[Callable[..., Any]] = (),
    render_context: Mapping[str, str] | None = None,
    roots: Iterable[str | os.PathLike[str]] | None = None,
    approvals: Mapping[str, ApprovalDecision] | None = None,
    output_schema: type[Shape] | Mapping[str, Any] | OutputSchema | None = None,
    output_type: type[Shape] | Mapping[str, Any] | OutputSchema | None = None,
    extra_body: Mapping[str, Any] | None = None,
    **transport_options: Any,
) -> RunResult[Shape]:
    """One turn of a stored thread: the user's question (if any), the run, the new turns;
    :meth:`Client.run_thread <turnwire.client.dispatch.Client.run_thread>` on a client made
    (and closed) for it. A long-lived app keeps one :class:`~turnwire.Client` and awaits that
    method instead; called inside a running event loop, this one runs in a worker thread.

    File pointers may lead into ``roots``, else ``files.roots``; the thread's own folders among
    the store's files (the copies of earlier questions' files) and the ``files`` named for this
    turn are allowed too. The files are copied into the thread's folder, so later requests send
    them again.

    The new turns (the question, tool results of calls a ``--once`` left pending, one turn per
    answer step, the ``approvals`` decisions among them) are appended in one transaction, and
    only when the run succeeded (an answer that does not match the output schema is an answer:
    its turns are stored, then :class:`~turnwire.errors.OutputValidationError` is raised; so is
    a run that stopped at ``client.max_iterations``: its turns are stored, then
    :class:`~turnwire.errors.MaxIterationsError` is raised). The other parameters are
    :func:`run`'s.
    """
    output_schema = output_schema_argument(output_schema, output_type)
    if container is None:
        container = build_container(config_files)
    client = _client(
        container, base_url, api_key, organization, project, transport_options, handlers, tools
    )

    async def main() -> RunResult[Shape]:
        try:
            return await client.run_thread(
                thread_id,
                store=store,
                prompt=prompt,
                files=files,
                roots=roots,
                model=model,
                once=once,
                on_text=on_text,
                on_tool_result=on_tool_result,
                on_event=on_event,
                render_context=render_context,
                approvals=approvals,
                output_schema=output_schema,
                extra_body=extra_body,
            )
        finally:
            await client.aclose()

    return run_blocking(main)


def compact(
    thread: Thread | Mapping[str, Any] | str | os.PathLike[str],
    *,
    config_files: Iterable[str | os.PathLike[str]] = (),
    base_url: str | None = None,
    api_key: str | None = None,
    organization: str | None = None,
    project: str | None = None,
    model: str | None = None,
    save: bool = False,
    container: Container | None = None,
    render_context: Mapping[str, str] | None = None,
    roots: Iterable[str | os.PathLike[str]] | None = None,
    **transport_options: Any,
) -> CompactResult:
    """Compact a thread (:meth:`turnwire.client.dispatch.Client.compact`): the compact
    endpoint's compaction item is added after every record; later renders send it in place of
    them (see :mod:`turnwire.rendering.compaction`).

    :param save: write the extended thread back to the thread file (paths only).
    The other parameters are :func:`run`'s.
    """
    if container is None:
        container = build_container(config_files)
    path = Path(thread) if isinstance(thread, str | os.PathLike) else None
    if save and path is None:
        raise ConfigError("--save needs a thread file path to write back to", path="$")
    chosen = file_roots(roots, container.settings().files, _folder_of(thread))
    read_as = file_digest(path) if save and path is not None else None
    loaded = thread if isinstance(thread, Thread) else load_thread(thread)
    if loaded is not thread:
        check_thread_once(loaded, container, loaded=True)
    client = _client(container, base_url, api_key, organization, project, transport_options)

    async def main() -> CompactResult:
        try:
            return await client.compact(
                loaded, model=model, render_context=render_context, roots=chosen
            )
        finally:
            await client.aclose()

    result = run_blocking(main)
    if save and path is not None:
        save_thread(result.thread, path, unchanged_since=read_as, result=result)
    return result


def compact_thread(
    thread_id: str,
    *,
    store: ThreadStore,
    config_files: Iterable[str | os.PathLike[str]] = (),
    base_url: str | None = None,
    api_key: str | None = None,
    organization: str | None = None,
    project: str | None = None,
    model: str | None = None,
    container: Container | None = None,
    render_context: Mapping[str, str] | None = None,
    roots: Iterable[str | os.PathLike[str]] | None = None,
    **transport_options: Any,
) -> CompactResult:
    """Compact a stored thread (:meth:`Client.compact_thread
    <turnwire.client.dispatch.Client.compact_thread>` on a client made for it): the compaction
    is appended as a turn of its own (only when the thread did not change meanwhile: else
    :class:`~turnwire.errors.StoreConflictError` and nothing stored). Older turns stay in the
    store.

    :raises turnwire.errors.InputError: the thread has no turns.
    The other parameters are :func:`run_thread`'s.
    """
    if container is None:
        container = build_container(config_files)
    client = _client(container, base_url, api_key, organization, project, transport_options)

    async def main() -> CompactResult:
        try:
            return await client.compact_thread(
                thread_id, store=store, model=model, render_context=render_context, roots=roots
            )
        finally:
            await client.aclose()

    return run_blocking(main)
