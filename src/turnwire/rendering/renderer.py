"""The render core: a thread in, the exact request body out.

Rendering sits below the client: :mod:`turnwire.client` renders each request through this
module, and :mod:`turnwire.api` re-exports it next to the entry points that send.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from itertools import accumulate
from pathlib import Path
from typing import Any

import msgspec

from turnwire.config.settings import (
    RequestSettings,
    first_server_run,
    replay_tags,
    unsupported,
)
from turnwire.errors import ConfigError, PreflightError, RenderError, TurnwireError
from turnwire.files.pointers import ContextAssembler, file_roots
from turnwire.files.thread_file import load_thread
from turnwire.model.checks import check_thread
from turnwire.model.records import Media, Message, Thread, ToolCall
from turnwire.model.structured import (
    OutputSchema,
    StructuredOutput,
    output_schema_argument,
    structured_output,
)
from turnwire.model.tool_search import waiting_searches
from turnwire.rendering._incremental.identity import first_difference
from turnwire.rendering._incremental.memo import InlineState, RenderMemo, common_prefix
from turnwire.rendering.body import EncodedBody, build_body, changed_by_plugins, checked_body
from turnwire.rendering.caching import cache_identity as thread_identity
from turnwire.rendering.compaction import compacted
from turnwire.rendering.container import Container, build_container
from turnwire.rendering.container_cache import ContainerCache
from turnwire.rendering.pipeline import RenderedInput
from turnwire.rendering.pipeline import prefix_fingerprint as pipeline_prefix_fingerprint
from turnwire.rendering.windows import apply_window
from turnwire.wire import RequestBody

__all__ = [
    "RenderedRequest",
    "Renderer",
    "check_thread_once",
    "prefix_fingerprint",
    "render",
    "render_input",
    "resolve_model",
    "with_declared_tools",
]


class RenderedRequest(msgspec.Struct, frozen=True, kw_only=True):
    """A request ready to POST.

    :ivar encoded: the exact bytes, in the pieces the render assembled them from (what the
        client sends, without joining them).
    :ivar request: the body as wire Structs.
    :ivar rendered: what ``build_input`` returned (input, tools, fingerprintable length...).
    """

    encoded: EncodedBody
    request: RequestBody
    rendered: RenderedInput

    @property
    def body(self) -> bytes:
        """The exact bytes (:attr:`encoded` joined, once)."""
        return bytes(self.encoded)

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
    rule, ``shows_inline``); and every hosted tool, ``tools.hosted`` first (see
    :mod:`turnwire.wire.hosted_tools`). The one place that decides, for ``render`` and ``run``
    alike."""
    from turnwire.rendering.artifact_tools import artifact_tools
    from turnwire.stages.tool_results import shows_inline

    settings = container.settings()
    tool_settings = settings.tools
    if thread.hosted_tools or tool_settings.hosted:
        from turnwire.wire.hosted_tools import check_thread_mcp_servers, merge_hosted_tools

        if "hosted_tools" in settings.provider.lacks:
            where = first_server_run(thread.hosted_tools, "$.hosted_tools")
            lacking = where and unsupported(
                settings.provider, "hosted_tools", where, "a tool the server runs"
            )
            if lacking:
                raise lacking

        check_thread_mcp_servers(
            thread.hosted_tools, tool_settings.allow_thread_mcp_servers, tool_settings.hosted
        )
        merged = merge_hosted_tools(tool_settings.hosted, thread.hosted_tools)
        thread = msgspec.structs.replace(thread, hosted_tools=merged)
    limit = container.settings().render.tool_result_inline_max_bytes
    calls = thread.tool_calls
    # A grown thread's old calls were looked at by the last render (the same objects, the same
    # limit): only the new ones are, unless an old one already showed a handle.
    memo = container.render_memo()
    seen = memo.handles if memo is not None else None
    start = 0
    if seen is not None and seen[1] == limit and not seen[2]:
        count = len(seen[0])
        if len(calls) >= count and common_prefix(seen[0], calls) == count:
            start = count
    call_handles = any(
        call.result is not None
        and call.result.artifact is not None
        and shows_inline(call.result.artifact, call, limit) is not True
        for call in calls[start:]
    )
    if memo is not None:
        memo.handles = (calls, limit, call_handles)
    has_handles = call_handles or any(
        r.artifact is not None and not r.inline for r in thread.retrievables
    )
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
    pending_reasoning: Iterable[str] = (),
) -> RenderedInput:
    """``build_input`` for the turns of ``thread`` that ``context.window`` keeps, with their
    file bytes loaded (no body, no preflight).

    :param roots: where file pointers may lead (default ``files.roots``, else nowhere).
    :param pending_reasoning: ids of reasoning thoughts a run recorded and has not stamped
        yet (see :data:`turnwire.rendering.sweep.PENDING_FINGERPRINT`).
    """
    settings = container.settings()
    windowed = with_declared_tools(
        compacted(apply_window(thread, settings.context.window)), container=container
    )
    files = settings.files
    assembler = ContextAssembler.from_settings(files, file_roots(roots, files))
    memo = container.render_memo()
    loaded = assembler.inline(windowed) if memo is None else _inline(windowed, memo, assembler)
    overrides: dict[str, Any] = {"model": model}
    if reasoning_replay is not None:
        lacking = reasoning_replay == "encrypted" and unsupported(
            settings.provider,
            "encrypted_reasoning",
            "reasoning_replay",
            "replayed encrypted reasoning",
        )
        if lacking:
            raise lacking
        overrides["reasoning_replay"] = reasoning_replay
        # unset, the tags follow the mode this render replays with
        tags = settings.render.replay_compatibility
        overrides["replay_compatibility"] = replay_tags(reasoning_replay, tags)  # type: ignore[arg-type]
    if unfingerprinted_reasoning is not None:
        overrides["unfingerprinted_reasoning"] = unfingerprinted_reasoning
    if render_context:
        overrides["render_context"] = dict(render_context)
    options = container.render_options(**overrides)
    # The options given, so the provider's own `options` injection is not built as well.
    build_input = container.build_input(options=options)
    rendered: RenderedInput = build_input(loaded, pending=frozenset(pending_reasoning))
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
    others keep the loaded record of the last render (equal content, the same object). With
    nothing kept, :func:`_first_inline` loads the thread.
    """
    with memo.lock:
        state = memo.inlined
        if state is None:
            return _first_inline(thread, memo, assembler)
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
        try:
            loaded = assembler.inline(part)
        except TurnwireError:
            # Reported as the whole thread reports it (its own $.paths, its own budget).
            memo.inlined = None
            return assembler.inline(thread)
        kept_charge = state.message_charges[kept_messages] + state.call_charges[kept_calls]
        if kept_charge + _loaded_bytes(loaded) > assembler.max_request_bytes:
            # The kept records' inline bytes count against the per-request budget too: the
            # whole thread decides (and reports what passes the limit).
            memo.inlined = None
            return assembler.inline(thread)
        messages = _merge(
            thread.messages,
            state.loaded_messages,
            kept_messages,
            redo_messages,
            loaded.messages,
        )
        calls = _merge(
            thread.tool_calls,
            state.loaded_tool_calls,
            kept_calls,
            redo_calls,
            loaded.tool_calls,
        )
        messages_in, calls_in = thread.messages, thread.tool_calls
        reading_messages = [
            i for i in redo_messages if messages_in[i].attachments and _reads_files(messages_in[i])
        ]
        reading_calls = [
            i for i in redo_calls if calls_in[i].result is not None and _reads_files(calls_in[i])
        ]
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
        message_charges = _charges(
            messages_in, kept_messages, state.message_charges, reading_messages
        )
        call_charges = _charges(calls_in, kept_calls, state.call_charges, reading_calls)
        memo.inlined = InlineState(
            messages=thread.messages,
            loaded_messages=messages,
            reading_messages=reading_messages,
            message_charges=message_charges,
            tool_calls=thread.tool_calls,
            loaded_tool_calls=calls,
            reading_tool_calls=reading_calls,
            call_charges=call_charges,
        )
        return replace(loaded, messages=messages, tool_calls=calls)


def _first_inline(thread: Thread, memo: RenderMemo, assembler: ContextAssembler) -> Thread:
    """``_inline`` with nothing kept: what loading the whole thread gives, and the state of it.

    One pass over each tuple sorts its records. Those that read a file go to the assembler,
    with the retrievables. The others come back from loading as they are (each media item or
    artifact holds exactly one of a ``path`` and its content, see :mod:`turnwire.model.records`), so
    they are only charged: their inline bytes are checked against the per-file limit here, and
    they are added, with the UTF-8 texts of their artifacts, to the bound of the loaded part.
    The sum is the bound :func:`_loaded_bytes` gives for the whole loaded thread, checked
    against the per-request limit as the warm path checks it. Anything over a limit, or any
    error, is left to the whole thread, which reports it with its own ``$.path``.
    """
    messages, calls = thread.messages, thread.tool_calls
    limit = assembler.max_file_bytes
    sorted_messages = _sorted_messages(messages, limit)
    sorted_calls = _sorted_calls(calls, limit)
    if sorted_messages is None or sorted_calls is None:
        return assembler.inline(thread)  # an inline item over the per-file limit: it raises
    reading_messages, message_charges = sorted_messages
    reading_calls, call_charges, texts = sorted_calls
    replace = msgspec.structs.replace
    part = replace(
        thread,
        messages=tuple(messages[i] for i in reading_messages),
        tool_calls=tuple(calls[i] for i in reading_calls),
    )
    try:
        loaded = assembler.inline(part)
    except TurnwireError:
        # Reported as the whole thread reports it (its own $.paths, its own budget).
        return assembler.inline(thread)
    charged = message_charges[-1] + call_charges[-1] + texts
    if charged + _loaded_bytes(loaded) > assembler.max_request_bytes:
        return assembler.inline(thread)  # the whole thread decides, as the warm path does
    loaded_messages = _placed(messages, reading_messages, loaded.messages)
    loaded_calls = _placed(calls, reading_calls, loaded.tool_calls)
    memo.loaded_from = {}
    memo.inlined = InlineState(
        messages=messages,
        loaded_messages=loaded_messages,
        reading_messages=reading_messages,
        message_charges=message_charges,
        tool_calls=calls,
        loaded_tool_calls=loaded_calls,
        reading_tool_calls=reading_calls,
        call_charges=call_charges,
    )
    return replace(loaded, messages=loaded_messages, tool_calls=loaded_calls)


def _sorted_messages(
    messages: tuple[Message, ...], file_limit: int
) -> tuple[list[int], list[int]] | None:
    """The messages that read a file, and the prefix sums of the others' inline bytes (as
    :func:`_charges` gives them); ``None`` when an inline item of one of the others is over
    ``file_limit``. Only messages with attachments are looked into."""
    reading: list[int] = []
    sizes: list[int] | None = None
    for index, message in enumerate(messages):
        if not message.attachments:
            continue
        reads = False
        size = largest = 0
        for media in message.attachments:
            data = media.data
            if data is None:
                reads = reads or media.path is not None
            else:
                length = len(data)
                size += length
                largest = max(largest, length)
        if reads:
            reading.append(index)
            continue
        if largest > file_limit:
            return None
        if size:
            if sizes is None:
                sizes = [0] * len(messages)
            sizes[index] = size
    if sizes is None:
        return reading, [0] * (len(messages) + 1)
    return reading, list(accumulate(sizes, initial=0))


def _sorted_calls(
    calls: tuple[ToolCall, ...], file_limit: int
) -> tuple[list[int], list[int], int] | None:
    """:func:`_sorted_messages` for tool calls, and the UTF-8 length of the texts of the
    artifacts of those that read no file (what :func:`_loaded_bytes` counts for them)."""
    reading: list[int] = []
    sizes: list[int] | None = None
    texts = 0
    for index, call in enumerate(calls):
        result = call.result
        if result is None or not (result.media or result.artifact or result.artifacts):
            continue  # what the loader passes over
        if _reads_files(call):
            reading.append(index)
            continue
        if result.media:
            lengths = [len(media.data) for media in result.media if media.data is not None]
            if lengths:
                if max(lengths) > file_limit:
                    return None
                if sizes is None:
                    sizes = [0] * len(calls)
                sizes[index] = sum(lengths)
        artifacts = result.artifacts or ((result.artifact,) if result.artifact is not None else ())
        texts += sum(len(artifact.text.encode()) for artifact in artifacts if artifact.text)
    if sizes is None:
        return reading, [0] * (len(calls) + 1), texts
    return reading, list(accumulate(sizes, initial=0)), texts


def _placed(
    records: tuple[Any, ...], positions: list[int], loaded: tuple[Any, ...]
) -> tuple[Any, ...]:
    """``records`` with ``loaded[j]`` put at ``positions[j]``: ``records`` itself when that
    changes none of them."""
    if not positions:
        return records
    placed = list(records)
    for position, record in zip(positions, loaded, strict=True):
        placed[position] = record
    return _same_or(records, tuple(placed))


def _inline_bytes(record: Message | ToolCall) -> int:
    """What ``record``'s inline media data charges against the per-request budget."""
    media: tuple[Media, ...] | None
    if isinstance(record, Message):
        media = record.attachments
    else:
        media = record.result.media if record.result is not None else None
    if not media:  # most records: no generator for them
        return 0
    return sum(len(item.data) for item in media if item.data is not None)


def _charges(
    records: tuple[Any, ...], kept: int, previous: list[int], reading: list[int]
) -> list[int]:
    """Prefix sums of the inline bytes of the records that are not loaded again (those that
    read a file are charged anew each render): ``charges[i]`` covers ``records[:i]``."""
    if not kept and not reading:  # every record, none loaded again: one pass at C speed
        return list(accumulate(map(_inline_bytes, records), initial=previous[0]))
    again = set(reading)
    # The last render's sums, grown in place when all of them still hold: the kept records'
    # sums never change (only appended to), so an earlier state that still holds the list
    # reads the same values.
    charges = previous if len(previous) == kept + 1 else previous[: kept + 1]
    total = charges[-1]
    append = charges.append
    for index in range(kept, len(records)):
        if index not in again:
            total += _inline_bytes(records[index])
        append(total)
    return charges


def _loaded_bytes(thread: Thread) -> int:
    """An upper bound of what loading ``thread`` charged: its media bytes and its artifacts'
    texts as UTF-8 (at least the bytes they were decoded from)."""
    total = sum(map(_inline_bytes, thread.messages))
    artifacts = [r.artifact for r in thread.retrievables if r.artifact is not None]
    for call in thread.tool_calls:
        result = call.result
        if result is not None:
            if result.media:
                total += _inline_bytes(call)
            if result.artifacts:
                artifacts += result.artifacts
            elif result.artifact is not None:
                artifacts.append(result.artifact)
    return total + sum(len(a.text.encode()) for a in artifacts if a.text)


def _merge(
    records: tuple[Any, ...],
    kept: tuple[Any, ...],
    count: int,
    positions: list[int],
    loaded: tuple[Any, ...],
) -> tuple[Any, ...]:
    """The loaded form of ``records``: ``kept[:count]`` (what the last render loaded) with
    ``loaded[j]`` put at ``positions[j]`` (inside it, or appended in order).

    That is ``records`` itself when both are the same objects (a thread without file pointers:
    no copy of a tuple that grows with the thread), else one concatenation when only new
    records follow.
    """
    if not positions or positions[0] >= count:
        if (
            count == len(kept)
            and len(loaded) == len(records) - count
            and first_difference(kept, records, 0, count) == count
            and first_difference(loaded, records[count:]) == len(records) - count
        ):
            return records
        return (kept if count == len(kept) else kept[:count]) + loaded
    merged = list(kept[:count])
    for position, record in zip(positions, loaded, strict=True):
        if position < count:
            merged[position] = record
        else:
            merged.append(record)
    return tuple(merged)


def _same_or(records: tuple[Any, ...], loaded: tuple[Any, ...]) -> tuple[Any, ...]:
    """``records`` itself when loading changed none of them (the same objects), else ``loaded``:
    a thread without file pointers keeps its own tuples, which the next render recognises."""
    if loaded is records:
        return records
    if len(loaded) == len(records) and first_difference(loaded, records) == len(records):
        return records
    return loaded


def prefix_fingerprint(
    rendered: RenderedInput,
    *,
    container: Container,
    model: str,
    through_item: int | None = None,
) -> str:
    """The prefix fingerprint of ``rendered`` (through ``fingerprintable_length`` by default),
    equal to what the ``fingerprint_prefix`` stage gives, resumed from the container's render
    memo (see :func:`turnwire.rendering.pipeline.prefix_fingerprint`).

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
    render_context: Mapping[str, str] | None = None,
    roots: Iterable[str | os.PathLike[str]] | None = None,
    output_schema: Any = None,
    pending_reasoning: Iterable[str] = (),
    cache: ContainerCache | None = None,
    output_type: Any = None,
    cache_identity: str | None = None,
) -> RenderedRequest:
    """Render ``thread`` into the request body turnwire would POST, after the preflight check.

    :param thread: a :class:`~turnwire.model.records.Thread`, a parsed thread mapping, or a file
    path.
    :param config_files: configuration profiles merged over the packaged default.
    :param model: overrides the thread's model and ``request.model``.
    :param container: a container to use instead of building one from ``config_files``.
    :param reasoning_replay: overrides ``render.reasoning_replay`` for this render (the
        reasoning-free retry renders with ``off``).
    :param render_context: values stages may ask for by name (``render_context``): the
        system-prompt template's ``{date}``, ``{user}`` ... (input, like the thread).
    :param roots: the folders (or files) file pointers may lead into, instead of
        ``files.roots``, whose default is the thread file's folder (for a thread given as a
        :class:`~turnwire.model.records.Thread` or a mapping: nowhere, so pass ``roots``).
    :param output_schema: the schema the answer must follow, as :func:`run` takes it (and its
        spelling before, ``output_type=``, for one version); it wins
        over the thread's ``output_schema``, which wins over ``request.output_schema`` (see
        :mod:`turnwire.model.structured`).
    :param pending_reasoning: ids of reasoning thoughts a run recorded whose fingerprint is
        still pending: kept when they pair, their fingerprints in ``rendered.stamped`` (the
        client renders each request once this way and stores those fingerprints).
    :param cache: a :class:`~turnwire.rendering.container_cache.ContainerCache` the caller owns, to
        reuse the container built from ``config_files`` (and what its render memo kept)
        across calls; without one, each call builds its own container and keeps nothing. A
        :class:`Renderer` does the same for one configuration.
    :param cache_identity: what ``request.prompt_cache_key: thread`` derives the key from: a
        stored thread's id (:func:`turnwire.api.run_thread` passes it); by default the
        thread's opening record (:func:`~turnwire.model.hosted.thread_anchor`), which a thread
        file keeps from turn to turn (see :mod:`turnwire.rendering.caching`).
    :raises turnwire.errors.ThreadFileError: the thread (a file, a mapping, or records built
        in code: each is checked as a thread file is, see :mod:`turnwire.model.checks`) breaks
        a rule of schema version 1; the error names its ``$.path``.
    :raises turnwire.errors.InputError: bad configuration or rendered body.
    """
    asked = structured_output(output_schema_argument(output_schema, output_type))
    if container is None:
        container = cache.get(config_files) if cache is not None else build_container(config_files)
    settings = container.settings()
    chosen = file_roots(roots, settings.files, _folder_of(thread))
    loaded = not isinstance(thread, Thread)
    if not isinstance(thread, Thread):
        thread = load_thread(thread)
    check_thread_once(thread, container, loaded=loaded)
    resolved = resolve_model(thread, container, model)
    try:
        rendered = render_input(
            thread,
            container=container,
            model=resolved,
            reasoning_replay=reasoning_replay,
            render_context=render_context,
            roots=chosen,
            pending_reasoning=pending_reasoning,
        )
        body = build_body(
            rendered,
            model=resolved,
            request=settings.request,
            stream=settings.client.stream,
            reasoning_replay=settings.render.reasoning_replay,
            output_schema=_sent_schema(asked, thread, settings.request),
            cache_identity=thread_identity(thread, cache_identity),
            memo=container.render_memo(),
        )
        try:
            encoded = checked_body(body, container.render_memo(), settings.request.extra)
        except PreflightError as err:
            raise _pending_calls(thread, err) or err from None
        hook = container.plugin_manager().hook.on_request_body
        encoded = changed_by_plugins(encoded, resolved, hook)
        return RenderedRequest(encoded=encoded, request=body, rendered=rendered)
    except UnicodeEncodeError as err:  # a record built in code holding a lone surrogate
        memo = container.render_memo()
        if memo is not None:  # it may hold the record: the next render starts afresh
            memo.clear()
        where = unencodable_record(thread)
        raise RenderError(
            f"{where}: text with a lone surrogate (half of a UTF-16 pair) has no UTF-8 form; "
            "a record built in code must hold whole characters",
            stage="render",
        ) from err


def check_thread_once(thread: Thread, container: Container, *, loaded: bool = False) -> None:
    """Check ``thread`` as a thread file is checked (:func:`turnwire.model.checks.check_thread`),
    each record once per container: what the container's render memo checked before (the same
    objects) is not looked at again (see :mod:`turnwire.rendering._incremental.checked`).

    :param loaded: the loader made ``thread`` and checked it: only remembered.
    :raises turnwire.errors.ThreadFileError: a value breaks a rule (its ``$.path`` named).
    """
    memo = container.render_memo()
    if memo is None:
        if not loaded:
            check_thread(thread)
        return
    with memo.lock:
        memo.checked.check(thread, loaded=loaded)


def unencodable_record(thread: Thread) -> str:
    """The ``$.path`` of the first record or header field of ``thread`` holding text with a
    lone surrogate (``$`` when none is found)."""
    for name in thread.__struct_fields__:
        value = getattr(thread, name)
        items = value if isinstance(value, tuple) else (value,)
        for index, item in enumerate(items):
            try:
                msgspec.json.encode(item)
            except UnicodeEncodeError:
                return f"$.{name}[{index}]" if isinstance(value, tuple) else f"$.{name}"
    return "$"


def _pending_calls(thread: Thread, err: PreflightError) -> PreflightError | None:
    """A clearer ``call-output-pairing`` (or ``tool-search-pairing``) error when the thread
    holds tool calls that have not run yet, or client-executed tool searches not answered yet
    (``run --once`` records them so): where they are, and what runs them."""
    if err.rule == "tool-search-pairing":
        searches = waiting_searches(thread.hosted_items)
        if not searches:
            return None
        found = searches[0], len(searches)
        where = f"$.hosted_items[{found[0]}]"
        what = f"the client-executed tool search {thread.hosted_items[found[0]].id!r}"
        words = ("answer", "records it so", "answers it", "search")
    elif err.rule == "call-output-pairing":
        pending = [index for index, call in enumerate(thread.tool_calls) if call.result is None]
        if not pending:
            return None
        found = pending[0], len(pending)
        first = thread.tool_calls[found[0]]
        where, what = f"$.tool_calls[{found[0]}]", f"tool call {first.id!r} ({first.tool})"
        words = ("result", "records calls without running them", "runs them", "call")
    else:
        return None
    answer, records, runs, thing = words
    more = f" and {found[1] - 1} more" if found[1] > 1 else ""
    return PreflightError(
        f"{where}: {what}{more} has no {answer} yet (run --once {records}): `turnwire run` "
        f"{runs} first, then sends the request; a render cannot send a {thing} without its "
        f"output (rule {err.rule})",
        rule=err.rule,
        index=err.index,
    )


def _sent_schema(
    asked: StructuredOutput | None, thread: Thread, request: RequestSettings
) -> OutputSchema | None:
    """The output schema the body carries (``None``: ``request.text`` as configured)."""
    if asked is not None:
        return asked.schema
    return thread.output_schema or request.output_schema


class Renderer:
    """A long-lived renderer: one container, built once, and the render memo it holds.

    Each :meth:`render` gives exactly the bytes and warnings a fresh ``render`` would; what
    earlier renders produced for unchanged records, sweep prefixes and body items is reused
    (see :mod:`turnwire.rendering._incremental.memo`), so the next request of a growing thread
    costs about what
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
        render_context: Mapping[str, str] | None = None,
        roots: Iterable[str | os.PathLike[str]] | None = None,
        output_schema: Any = None,
        output_type: Any = None,
        cache_identity: str | None = None,
    ) -> RenderedRequest:
        """:func:`render` through this renderer's container."""
        return render(
            thread,
            container=self.container,
            model=model,
            reasoning_replay=reasoning_replay,
            render_context=render_context,
            roots=roots,
            output_schema=output_schema_argument(output_schema, output_type),
            cache_identity=cache_identity,
        )

    def clear(self) -> None:
        """Forget what earlier renders left (the next render is cold)."""
        memo = self.container.render_memo()
        if memo is not None:
            memo.clear()

    def __repr__(self) -> str:
        return f"Renderer({self.container.render_memo()!r})"
