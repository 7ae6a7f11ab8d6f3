"""``turnwire.render``: a thread in, the exact request body out."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from turnwire._memo import InlineState, RenderMemo, common_prefix
from turnwire.container import Container, ContainerCache, build_container
from turnwire.errors import ConfigError
from turnwire.model import Message, Thread, ToolCall
from turnwire.pipeline import RenderedInput
from turnwire.pipeline import prefix_fingerprint as pipeline_prefix_fingerprint
from turnwire.request import build_body, checked_body
from turnwire.thread_file import load_thread
from turnwire.turns import ContextAssembler
from turnwire.windows import apply_window
from turnwire.wire import RequestBody

if TYPE_CHECKING:
    from turnwire.client.dispatch import RunResult
    from turnwire.model import Media
    from turnwire.store import ThreadStore

__all__ = [
    "RenderedRequest",
    "Renderer",
    "media_from_path",
    "prefix_fingerprint",
    "render",
    "render_cache",
    "render_input",
    "resolve_model",
    "run",
    "run_thread",
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


render_cache = ContainerCache()
"""The containers ``render(config_files=...)`` reuses (bounded; ``render_cache.clear()``)."""


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


def render_input(
    thread: Thread,
    *,
    container: Container,
    model: str,
    reasoning_replay: str | None = None,
    unfingerprinted_reasoning: str | None = None,
) -> RenderedInput:
    """``build_input`` for the turns of ``thread`` that ``context.window`` keeps, with their
    file bytes loaded (no body, no preflight)."""
    windowed = apply_window(thread, container.settings().context.window)
    memo = container.render_memo()
    assembler = ContextAssembler()
    loaded = assembler.inline(windowed) if memo is None else _inline(windowed, memo, assembler)
    overrides: dict[str, Any] = {"model": model}
    if reasoning_replay is not None:
        overrides["reasoning_replay"] = reasoning_replay
    if unfingerprinted_reasoning is not None:
        overrides["unfingerprinted_reasoning"] = unfingerprinted_reasoning
    build_input = container.build_input()
    rendered: RenderedInput = build_input(loaded, options=container.render_options(**overrides))
    return rendered


def _reads_files(record: Message | ToolCall) -> bool:
    """Whether loading ``record``'s pointers reads a file."""
    if isinstance(record, Message):
        return any(media.data is None and media.path is not None for media in record.attachments)
    result = record.result
    if result is None:
        return False
    if result.media is not None:
        return any(media.data is None and media.path is not None for media in result.media)
    artifacts = result.artifacts or ((result.artifact,) if result.artifact is not None else ())
    return any(artifact.text is None and artifact.path is not None for artifact in artifacts)


def _inline(thread: Thread, memo: RenderMemo, assembler: ContextAssembler) -> Thread:
    """``assembler.inline(thread)``, loading only what the last render did not.

    Records after the longest unchanged prefix of each tuple are loaded, and so is every record
    that reads a file (so a changed file is seen, within the same per-request budget); the
    others keep the loaded record of the last render (equal content, the same object).
    """
    with memo.lock:
        state = memo.inlined
        if state is None:
            kept_messages = kept_calls = 0
            redo_messages = list(range(len(thread.messages)))
            redo_calls = list(range(len(thread.tool_calls)))
        else:
            kept_messages = common_prefix(state.messages, thread.messages)
            kept_calls = common_prefix(state.tool_calls, thread.tool_calls)
            redo_messages = [i for i in state.reading_messages if i < kept_messages]
            redo_messages += range(kept_messages, len(thread.messages))
            redo_calls = [i for i in state.reading_tool_calls if i < kept_calls]
            redo_calls += range(kept_calls, len(thread.tool_calls))
        replace = msgspec.structs.replace
        part = replace(
            thread,
            messages=tuple(thread.messages[i] for i in redo_messages),
            tool_calls=tuple(thread.tool_calls[i] for i in redo_calls),
        )
        loaded = assembler.inline(part)
        if state is None:
            messages, calls = loaded.messages, loaded.tool_calls
        else:
            messages = _merge(state.loaded_messages[:kept_messages], redo_messages, loaded.messages)
            calls = _merge(state.loaded_tool_calls[:kept_calls], redo_calls, loaded.tool_calls)
        messages_in, calls_in = thread.messages, thread.tool_calls
        reading_messages = [
            i for i in redo_messages if messages_in[i].attachments and _reads_files(messages_in[i])
        ]
        reading_calls = [
            i for i in redo_calls if calls_in[i].result is not None and _reads_files(calls_in[i])
        ]
        if state is not None:
            memo.loaded_from = {
                "messages": (
                    messages,
                    state.loaded_messages,
                    kept_messages,
                    [i for i in redo_messages if i < kept_messages],
                ),
                "tool_calls": (
                    calls,
                    state.loaded_tool_calls,
                    kept_calls,
                    [i for i in redo_calls if i < kept_calls],
                ),
            }
        else:
            memo.loaded_from = {}
        memo.inlined = InlineState(
            messages=thread.messages,
            loaded_messages=messages,
            reading_messages=reading_messages,
            tool_calls=thread.tool_calls,
            loaded_tool_calls=calls,
            reading_tool_calls=reading_calls,
        )
        return replace(loaded, messages=messages, tool_calls=calls)


def _merge(kept: tuple[Any, ...], positions: list[int], loaded: tuple[Any, ...]) -> tuple[Any, ...]:
    """``kept`` with ``loaded[j]`` put at ``positions[j]`` (inside it, or appended in order)."""
    merged = list(kept)
    for position, record in zip(positions, loaded, strict=True):
        if position < len(kept):
            merged[position] = record
        else:
            merged.append(record)
    return tuple(merged)


def prefix_fingerprint(
    rendered: RenderedInput,
    *,
    container: Container,
    model: str,
    through_item: int | None = None,
) -> str:
    """The prefix fingerprint of ``rendered`` (through ``fingerprintable_length`` by default),
    equal to what the ``fingerprint_prefix`` stage gives, resumed from the container's render
    memo (see :func:`turnwire.pipeline.prefix_fingerprint`).

    A request fingerprint is ``prefix_fingerprint(rendered.rendered, container=..., model=...)``;
    the fingerprint a new reasoning item at ``input[i]`` needs is ``through_item=i``.
    """
    through = rendered.fingerprintable_length if through_item is None else through_item
    return pipeline_prefix_fingerprint(
        rendered,
        through,
        plan=container.stage_plan(),
        options=container.render_options(model=model),
        render_memo=container.render_memo(),
    )


def render(
    thread: Thread | Mapping[str, Any] | str | os.PathLike[str],
    *,
    config_files: Iterable[str | os.PathLike[str]] = (),
    model: str | None = None,
    container: Container | None = None,
    reasoning_replay: str | None = None,
) -> RenderedRequest:
    """Render ``thread`` into the request body turnwire would POST, after the preflight check.

    :param thread: a :class:`~turnwire.model.Thread`, a parsed thread mapping, or a file path.
    :param config_files: configuration profiles merged over the packaged default.
    :param model: overrides the thread's model and ``request.model``.
    :param container: a container to use instead of building one from ``config_files``.
    :param reasoning_replay: overrides ``render.reasoning_replay`` for this render (the
        reasoning-free retry renders with ``off``).
    :raises turnwire.errors.InputError: bad thread, configuration or rendered body.
    """
    if container is None:
        container = render_cache.get(config_files)
    if not isinstance(thread, Thread):
        thread = load_thread(thread)
    settings = container.settings()
    resolved = resolve_model(thread, container, model)
    rendered = render_input(
        thread, container=container, model=resolved, reasoning_replay=reasoning_replay
    )
    body = build_body(
        rendered,
        model=resolved,
        request=settings.request,
        stream=settings.client.stream,
        reasoning_replay=settings.render.reasoning_replay,
    )
    data = checked_body(body, container.render_memo())
    return RenderedRequest(body=data, request=body, rendered=rendered)


class Renderer:
    """A long-lived renderer: one container, built once, and the render memo it holds.

    Each :meth:`render` gives exactly the bytes and warnings a fresh ``render`` would; what
    earlier renders produced for unchanged records, sweep prefixes and body items is reused
    (see :mod:`turnwire._memo`), so the next request of a growing thread costs about what
    its new records cost.

    :param config_files: configuration profiles merged over the packaged default.
    :param container: a container to use instead of building one (overrides apply).
    """

    def __init__(
        self,
        config_files: Iterable[str | os.PathLike[str]] = (),
        *,
        container: Container | None = None,
    ) -> None:
        self.container = container if container is not None else build_container(config_files)

    def render(
        self,
        thread: Thread | Mapping[str, Any] | str | os.PathLike[str],
        *,
        model: str | None = None,
        reasoning_replay: str | None = None,
    ) -> RenderedRequest:
        """:func:`render` through this renderer's container."""
        return render(
            thread, container=self.container, model=model, reasoning_replay=reasoning_replay
        )

    def clear(self) -> None:
        """Forget what earlier renders left (the next render is cold)."""
        memo = self.container.render_memo()
        if memo is not None:
            memo.clear()

    def __repr__(self) -> str:
        return f"Renderer({self.container.render_memo()!r})"


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
    container: Container | None = None,
    handlers: Mapping[str, Callable[..., Any]] | None = None,
    **transport_options: Any,
) -> RunResult:
    """Send a thread, stream the answer, run its tools until the model stops.

    :param thread: a thread, a thread mapping, or a thread file path.
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
    :param handlers: tool name → callable, instead of the tools' ``handler`` paths.
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
        loaded, model=model, once=once, on_text=on_text, on_tool_result=on_tool_result
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
    container: Container | None = None,
    handlers: Mapping[str, Callable[..., Any]] | None = None,
    **transport_options: Any,
) -> RunResult:
    """One turn of a stored thread: the user's question (if any), the run, the new turns.

    The new turns (the question, tool results of calls a ``--once`` left pending, one turn per
    answer step) are appended in one transaction, and only when the run succeeded. The other
    parameters are :func:`run`'s.
    """
    from turnwire.client.dispatch import Client
    from turnwire.turns import ToolCallPart, Turn

    if container is None:
        container = build_container(config_files)
    builder = store.builder
    uploads = [media_from_path(path) for path in files]
    current = builder.build_user_turn(prompt, uploads) if (prompt or uploads) else None
    thread = store.load(thread_id, current=current)
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
        thread, model=model, once=once, on_text=on_text, on_tool_result=on_tool_result
    )
    turns = [current] if current is not None else []
    if result.resolved:
        turns.append(
            Turn(
                id=builder.new_id(),
                role="assistant",
                created_at=builder.clock(),
                parts=tuple(ToolCallPart(call=call) for call in result.resolved),
            )
        )
    from turnwire.model import Thought

    new: list[Message | Thought | ToolCall] = [
        *result.records.messages,
        *result.records.thoughts,
        *result.records.tool_calls,
    ]
    records = sorted(new, key=lambda record: (record.created_at, record.seq))
    turns += builder.build_assistant_turns(
        records,
        model=result.response.model,
        usage=result.response.usage,
        request_fingerprint=result.request_fingerprint,
    )
    store.append_turns(thread_id, turns)
    return result
