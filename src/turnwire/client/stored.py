"""Stored threads, async: one turn of a thread a :class:`~turnwire.store.ThreadStore` keeps
(:func:`run_stored`, what :meth:`Client.run_thread <turnwire.client.dispatch.Client.run_thread>`
does) and its compaction (:func:`compact_stored`).

A store's calls block (SQLite, PostgreSQL through a pool), so each runs in a worker thread
(:func:`asyncio.to_thread`): the event loop keeps serving other runs while a thread loads or
its turns are written. The question's files are copied into a new folder of the thread's, so
every later request sends them again (it extends this one) and they stay readable when the
originals move.

The new turns are appended in one transaction, and only when the run succeeded, with the
position read before the thread was loaded as the expected last one: a run of the same thread
that stored its turns first makes this append fail with
:class:`~turnwire.errors.StoreConflictError`, so two runs never interleave their turns.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from turnwire.client.results import RunResult, Shape, kept
from turnwire.errors import (
    ConfigError,
)
from turnwire.files.pointers import ContextAssembler, file_roots
from turnwire.model.records import HostedItem, Media
from turnwire.rendering.compaction import CompactResult
from turnwire.rendering.renderer import check_thread_once
from turnwire.store._base import copy_name, new_thread_folder, thread_folders
from turnwire.store.turns import HostedPart, Turn, TurnBuilder

if TYPE_CHECKING:
    from turnwire.client.dispatch import Client
    from turnwire.config.settings import Settings
    from turnwire.model.records import Thread
    from turnwire.rendering.ledger import Ledger
    from turnwire.store import ThreadStore

__all__ = ["compact_stored", "compaction_turn", "media_from_path", "run_stored"]


def media_from_path(path: str | os.PathLike[str], *, media_id: str | None = None) -> Media:
    """A file pointer for an upload (:meth:`~turnwire.model.records.Media.from_path`, to the
    file a link leads to): kind and MIME type guessed from the name.

    :raises turnwire.errors.ConfigError: ``path`` is not a file.
    """
    file = Path(path).resolve()
    if not file.is_file():
        raise ConfigError(f"{path} is not a file", path="$")
    return Media.from_path(file, id=media_id)


def question_media(file: str | os.PathLike[str] | Media, index: int) -> Media:
    """One of a question's ``files``: a path (:func:`media_from_path`), or a
    :class:`~turnwire.model.records.Media` as it is: one with a ``path`` (copied like a path),
    a ``file_id`` or a ``url`` (a reference the API resolves, stored as it is).

    :raises turnwire.errors.ConfigError: a path is not a file, or a Media holds bytes alone
        (``data_base64``: a stored turn keeps pointers and references, never bytes), naming
        ``files[index]``.
    """
    if not isinstance(file, Media):
        return media_from_path(file)
    if file.path is not None:
        resolved = Path(file.path).resolve()
        if not resolved.is_file():
            raise ConfigError(f"files[{index}]: {file.path} is not a file", path=f"files[{index}]")
        return msgspec.structs.replace(file, path=str(resolved), data=None)
    if file.file_id is None and file.url is None:
        raise ConfigError(
            f"files[{index}]: media {file.id} holds bytes alone; a stored question keeps a "
            "path (copied among the store's files), a file_id or a url, never bytes",
            path=f"files[{index}]",
        )
    return file


def compaction_turn(builder: TurnBuilder, record: HostedItem) -> Turn:
    """The stored turn of a compaction: an assistant turn holding its hosted item alone."""
    return Turn(
        id=builder.new_id(),
        role="assistant",
        parts=(HostedPart(item=record),),
        created_at=builder.clock(),
    )


async def run_stored(
    client: Client,
    thread_id: str,
    *,
    store: ThreadStore,
    prompt: str = "",
    files: Iterable[str | os.PathLike[str] | Media] = (),
    roots: Iterable[str | os.PathLike[str]] | None = None,
    **run_options: Any,
) -> RunResult[Shape]:
    """One turn of a stored thread on ``client``: the question (``prompt`` and ``files``, if
    any), the run, its turns appended (see the module docstring).

    :param roots: where file pointers may lead (default ``files.roots``); the thread's own
        folders among the store's files and this question's ``files`` are allowed too.
    :param run_options: :meth:`Client.run <turnwire.client.dispatch.Client.run>`'s (``model``,
        ``once``, ``on_text``, ``on_event``, ``tools``, ``output_schema``, ``approvals``...).
    :raises turnwire.errors.OutputValidationError: the answer does not match the output schema;
        its turns were stored first (the model did answer).
    :raises turnwire.errors.MaxIterationsError: the run stopped at ``client.max_iterations``;
        its turns were stored first.
    :raises turnwire.errors.StoreConflictError: another run stored turns of this thread
        meanwhile; nothing of this run is stored.
    """
    for taken in ("cache_identity", "previous_ledger"):
        if taken in run_options:
            raise TypeError(f"run_thread sets {taken} itself (from the store)")
    settings = client.settings
    builder = store.builder
    # Read before loading: if another writer appends after this, our append stores nothing and
    # fails with E_STORE_CONFLICT, so concurrent runs cannot interleave their turns.
    expected_last = await asyncio.to_thread(store.last_position, thread_id)
    uploads = [question_media(file, index) for index, file in enumerate(files)]
    copies, uploads = await asyncio.to_thread(
        _copy_question_files, store, thread_id, uploads, settings
    )
    try:
        current = builder.build_user_turn(prompt, uploads) if (prompt or uploads) else None
        thread, previous = await asyncio.to_thread(_load, store, thread_id, current)
        check_thread_once(thread, client.container, loaded=True)  # the store's records were checked
        if current is not None:  # stored as the load dated it: after every earlier record
            asked = next(m for m in reversed(thread.messages) if m.id == current.id)
            current = msgspec.structs.replace(current, created_at=asked.created_at)
        chosen = _stored_roots(store, thread_id, roots, settings)
        chosen += tuple(media.path for media in uploads if media.path)
        # An answer all the same (an output mismatch, the iteration limit...): its turns are kept.
        result, invalid = await kept(
            client.run(
                thread,
                roots=chosen,
                cache_identity=thread_id,  # the prompt_cache_key derives from the store's id
                previous_ledger=previous,
                **run_options,
            )
        )
        turns = builder.build_run_turns(
            question=current,
            resolved=result.resolved,
            records=result.records.timeline(),
            model=result.response.model,
            usage=result.response.usage,
            request_fingerprint=result.request_fingerprint,
            generations=result.generations,
            ledger=result.ledger,
        )
        if result.compaction is not None:
            turns.insert(0, compaction_turn(builder, result.compaction.record))
        await asyncio.to_thread(store.append_turns, thread_id, turns, expected_last=expected_last)
    except BaseException:
        if copies is not None:  # nothing stored points at them
            shutil.rmtree(copies, ignore_errors=True)
        raise
    if invalid is not None:
        raise invalid
    return result


async def compact_stored(
    client: Client,
    thread_id: str,
    *,
    store: ThreadStore,
    roots: Iterable[str | os.PathLike[str]] | None = None,
    **compact_options: Any,
) -> CompactResult:
    """Compact a stored thread on ``client``: the compaction is appended as a turn of its own,
    only when the thread did not change meanwhile (else
    :class:`~turnwire.errors.StoreConflictError` and nothing stored). Older turns stay.

    :param compact_options: :meth:`Client.compact <turnwire.client.dispatch.Client.compact>`'s
        (``model``, ``overrides``, ``render_context``).
    :raises turnwire.errors.InputError: the thread has nothing to compact.
    """
    expected_last = await asyncio.to_thread(store.last_position, thread_id)
    thread = await asyncio.to_thread(store.load, thread_id)
    check_thread_once(thread, client.container, loaded=True)
    chosen = _stored_roots(store, thread_id, roots, client.settings)
    result = await client.compact(thread, roots=chosen, cache_identity=thread_id, **compact_options)
    turn = compaction_turn(store.builder, result.record)
    await asyncio.to_thread(store.append_turns, thread_id, [turn], expected_last=expected_last)
    return result


def _load(store: ThreadStore, thread_id: str, current: Turn | None) -> tuple[Thread, Ledger | None]:
    """The thread with the question last, and the ledger of the last request a run of it
    sent (this run's first request is compared with it), from one read of the store."""
    return store.load_with_ledger(thread_id, current=current)


def _copy_question_files(
    store: ThreadStore, thread_id: str, uploads: list[Media], settings: Settings
) -> tuple[Path | None, list[Media]]:
    """The files of a question copied into a new folder of the thread's among the store's files
    (read through the files rules: size limits, no special files), and the pointers leading to
    the copies. A store without a files folder keeps the pointers as given."""
    folder = getattr(store, "files_folder", None)
    if not uploads or folder is None:
        return None, uploads
    # The user named these files: each is a root of its own for this read.
    reader = ContextAssembler.from_settings(
        settings.files, tuple(media.path for media in uploads if media.path)
    )
    copies = new_thread_folder(folder, thread_id)
    kept: list[Media] = []
    try:
        for index, media in enumerate(uploads):
            if media.path is None:  # a reference the API resolves: nothing to copy
                kept.append(media)
                continue
            data = reader.read(media.path, where=f"files[{index}]", owner=media.id)
            copies.mkdir(parents=True, exist_ok=True)
            copy = copies / copy_name(f"{index}-", Path(media.path).name)
            copy.write_bytes(data)
            kept.append(msgspec.structs.replace(media, path=str(copy)))
    except BaseException:
        shutil.rmtree(copies, ignore_errors=True)
        raise
    return copies, kept


def _stored_roots(
    store: ThreadStore,
    thread_id: str,
    roots: Iterable[str | os.PathLike[str]] | None,
    settings: Settings,
) -> tuple[str, ...]:
    """Where a stored thread's pointers may lead: ``roots``, else ``files.roots``; and always
    the thread's own folders among the store's files (the copies of the files its questions
    sent and its imports brought), never another thread's."""
    chosen = file_roots(roots, settings.files)
    folder = getattr(store, "files_folder", None)
    if folder is None:
        return chosen
    return chosen + tuple(str(own) for own in thread_folders(folder, thread_id))
