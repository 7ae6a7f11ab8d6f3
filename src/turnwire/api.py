"""``turnwire.render``: a thread in, the exact request body out."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from turnwire.container import Container, build_container
from turnwire.errors import ConfigError
from turnwire.model import Thread
from turnwire.pipeline import RenderedInput
from turnwire.request import build_body, encode_body, preflight
from turnwire.thread_file import load_thread
from turnwire.turns import ContextAssembler, file_roots
from turnwire.windows import apply_window
from turnwire.wire import RequestBody

if TYPE_CHECKING:
    from turnwire.client.dispatch import RunResult
    from turnwire.client.progress import ProgressEvent
    from turnwire.model import Media, ToolCall
    from turnwire.store import ThreadStore

__all__ = [
    "RenderedRequest",
    "media_from_path",
    "render",
    "render_input",
    "resolve_model",
    "run",
    "run_thread",
    "with_declared_tools",
]


class RenderedRequest(msgspec.Struct, frozen=True, kw_only=True):
    """A request ready to POST.

    :ivar body: the exact bytes.
    :ivar request: the body as wire Structs.
    :ivar rendered: what ``build_input`` returned (input, tools, fingerprintable length...).
    """

    body: bytes
    request: RequestBody
    rendered: RenderedInput

    @property
    def json(self) -> dict[str, Any]:
        """The body as a dict (decoded from :attr:`body`)."""
        value = msgspec.json.decode(self.body)
        assert isinstance(value, dict)
        return value

    @property
    def fingerprintable_length(self) -> int:
        return self.rendered.fingerprintable_length


def resolve_model(thread: Thread, container: Container, model: str | None) -> str:
    """The model: the argument, else the thread's, else ``request.model``."""
    resolved = model or thread.model or container.model()
    if not resolved:
        raise ConfigError(
            "no model to render for: pass --model, set the thread's `model`, or set "
            "request.model in the configuration",
            path="$.request.model",
        )
    return str(resolved)


def with_declared_tools(thread: Thread, *, container: Container) -> Thread:
    """``thread`` with every tool its request declares: its own, plus the built-in artifact
    tools while a tool result or a retrieved document is shown as a handle (by the stage's own
    rule, ``shows_inline``). The one place that decides, for ``render`` and ``run`` alike."""
    from turnwire.client.tools import artifact_tools
    from turnwire.stages.tool_results import shows_inline

    limit = container.settings().render.tool_result_inline_max_bytes
    has_handles = any(
        call.result is not None
        and call.result.artifact is not None
        and shows_inline(call.result.artifact, call, limit) is not True
        for call in thread.tool_calls
    ) or any(r.artifact is not None and not r.inline for r in thread.retrievables)
    if not has_handles:
        return thread
    known = {tool.name for tool in thread.tools}
    extra = tuple(t for t in artifact_tools() if t.name not in known)
    return msgspec.structs.replace(thread, tools=thread.tools + extra)


def _folder_of(source: object) -> tuple[Path, ...]:
    """A thread file's folder: the default root of its pointers."""
    return (Path(source).resolve().parent,) if isinstance(source, str | os.PathLike) else ()


def render_input(
    thread: Thread,
    *,
    container: Container,
    model: str,
    reasoning_replay: str | None = None,
    unfingerprinted_reasoning: str | None = None,
    render_context: Mapping[str, str] | None = None,
    roots: Iterable[str | os.PathLike[str]] | None = None,
) -> RenderedInput:
    """``build_input`` for the turns of ``thread`` that ``context.window`` keeps, with their
    file bytes loaded (no body, no preflight).

    :param roots: where file pointers may lead (default ``files.roots``, else nowhere).
    """
    settings = container.settings()
    windowed = with_declared_tools(
        apply_window(thread, settings.context.window), container=container
    )
    files = settings.files
    loaded = ContextAssembler.from_settings(files, file_roots(roots, files)).inline(windowed)
    overrides: dict[str, Any] = {"model": model}
    if reasoning_replay is not None:
        overrides["reasoning_replay"] = reasoning_replay
    if unfingerprinted_reasoning is not None:
        overrides["unfingerprinted_reasoning"] = unfingerprinted_reasoning
    if render_context:
        overrides["render_context"] = dict(render_context)
    build_input = container.build_input()
    rendered: RenderedInput = build_input(loaded, options=container.render_options(**overrides))
    return rendered


def render(
    thread: Thread | Mapping[str, Any] | str | os.PathLike[str],
    *,
    config_files: Iterable[str | os.PathLike[str]] = (),
    model: str | None = None,
    container: Container | None = None,
    reasoning_replay: str | None = None,
    render_context: Mapping[str, str] | None = None,
    roots: Iterable[str | os.PathLike[str]] | None = None,
) -> RenderedRequest:
    """Render ``thread`` into the request body turnwire would POST, after the preflight check.

    :param thread: a :class:`~turnwire.model.Thread`, a parsed thread mapping, or a file path.
    :param config_files: configuration profiles merged over the packaged default.
    :param model: overrides the thread's model and ``request.model``.
    :param container: a container to use instead of building one from ``config_files``.
    :param reasoning_replay: overrides ``render.reasoning_replay`` for this render (the
        reasoning-free retry renders with ``off``).
    :param render_context: values stages may ask for by name (``render_context``): the
        system-prompt template's ``{date}``, ``{user}`` ... (input, like the thread).
    :param roots: the folders (or files) file pointers may lead into, instead of
        ``files.roots``, whose default is the thread file's folder (for a thread given as a
        :class:`~turnwire.model.Thread` or a mapping: nowhere, so pass ``roots``).
    :raises turnwire.errors.InputError: bad thread, configuration or rendered body.
    """
    if container is None:
        container = build_container(config_files)
    settings = container.settings()
    chosen = file_roots(roots, settings.files, _folder_of(thread))
    if not isinstance(thread, Thread):
        thread = load_thread(thread)
    resolved = resolve_model(thread, container, model)
    rendered = render_input(
        thread,
        container=container,
        model=resolved,
        reasoning_replay=reasoning_replay,
        render_context=render_context,
        roots=chosen,
    )
    body = build_body(
        rendered,
        model=resolved,
        request=settings.request,
        stream=settings.client.stream,
        reasoning_replay=settings.render.reasoning_replay,
    )
    preflight(body)
    return RenderedRequest(body=encode_body(body), request=body, rendered=rendered)


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
    render_context: Mapping[str, str] | None = None,
    roots: Iterable[str | os.PathLike[str]] | None = None,
    **transport_options: Any,
) -> RunResult:
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
    :param render_context: values stages may ask for by name, for every request of the run
        (see :func:`render`).
    :param transport_options: passed to :class:`turnwire.client.transport.Transport`
        (``sleep``, ``jitter``, ``client``...).
    :raises turnwire.errors.TurnwireError: bad input, or the exchange failed; nothing of a
        failed exchange is recorded.
    """
    from turnwire.client.dispatch import Client
    from turnwire.thread_file import save_thread

    if container is None:
        container = build_container(config_files)
    path: Path | None = None
    if isinstance(thread, str | os.PathLike):
        path = Path(thread)
    if save and path is None:
        raise ConfigError("--save needs a thread file path to write back to", path="$")
    chosen = file_roots(roots, container.settings().files, _folder_of(thread))
    loaded = thread if isinstance(thread, Thread) else load_thread(thread)
    client = Client(
        container,
        base_url=base_url,
        api_key=api_key,
        organization=organization,
        project=project,
        handlers=handlers,
        **transport_options,
    )
    result = client.run_sync(
        loaded,
        model=model,
        once=once,
        on_text=on_text,
        on_tool_result=on_tool_result,
        render_context=render_context,
        roots=chosen,
        on_event=on_event,
    )
    if save and path is not None:
        save_thread(result.thread, path)
    return result


def media_from_path(path: str | os.PathLike[str], *, media_id: str | None = None) -> Media:
    """A file pointer for an upload: kind and MIME type guessed from the name."""
    import mimetypes
    import uuid

    from turnwire.model import Media, MediaKind

    file = Path(path).resolve()
    if not file.is_file():
        raise ConfigError(f"{path} is not a file", path="$")
    mime = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
    major = mime.split("/", 1)[0]
    kind: MediaKind = (
        "image"
        if major == "image"
        else "audio"
        if major == "audio"
        else "video"
        if major == "video"
        else "document"
    )
    return Media(
        id=media_id or f"file_{uuid.uuid4().hex[:12]}",
        kind=kind,
        mime_type=mime,
        filename=file.name,
        path=str(file),
    )


def run_thread(
    thread_id: str,
    *,
    store: ThreadStore,
    prompt: str = "",
    files: Iterable[str | os.PathLike[str]] = (),
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
    render_context: Mapping[str, str] | None = None,
    roots: Iterable[str | os.PathLike[str]] | None = None,
    **transport_options: Any,
) -> RunResult:
    """One turn of a stored thread: the user's question (if any), the run, the new turns.

    File pointers may lead into ``roots``, else ``files.roots``, else the ``files`` folder
    next to the store's database; the ``files`` named for this turn are allowed too.

    The new turns (the question, tool results of calls a ``--once`` left pending, one turn per
    answer step) are appended in one transaction, and only when the run succeeded. The other
    parameters are :func:`run`'s.
    """
    from turnwire.client.dispatch import Client

    if container is None:
        container = build_container(config_files)
    builder = store.builder
    # Read before loading: if another writer appends after this, our append stores nothing and
    # fails with E_STORE_CONFLICT, so concurrent runs cannot interleave their turns.
    expected_last = store.last_position(thread_id)
    uploads = [media_from_path(path) for path in files]
    current = builder.build_user_turn(prompt, uploads) if (prompt or uploads) else None
    thread = store.load(thread_id, current=current)
    store_path = getattr(store, "path", None)
    defaults = () if store_path is None else (Path(store_path).resolve().parent / "files",)
    chosen = file_roots(roots, container.settings().files, defaults)
    chosen += tuple(media.path for media in uploads if media.path)
    client = Client(
        container,
        base_url=base_url,
        api_key=api_key,
        organization=organization,
        project=project,
        handlers=handlers,
        **transport_options,
    )
    result = client.run_sync(
        thread,
        model=model,
        once=once,
        on_text=on_text,
        on_tool_result=on_tool_result,
        render_context=render_context,
        roots=chosen,
        on_event=on_event,
    )
    turns = builder.build_run_turns(
        question=current,
        resolved=result.resolved,
        records=[*result.records.messages, *result.records.thoughts, *result.records.tool_calls],
        model=result.response.model,
        usage=result.response.usage,
        request_fingerprint=result.request_fingerprint,
        generations=result.generations,
    )
    store.append_turns(thread_id, turns, expected_last=expected_last)
    return result
