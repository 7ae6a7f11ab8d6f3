"""Copying threads between stores, through the store protocol."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from typing import Any

import msgspec

from turnwire.errors import StoreError, UnknownThreadError
from turnwire.store._base import new_thread_folder, thread_folders
from turnwire.store.protocol import ThreadStore

__all__ = ["copy_threads"]


def copy_threads(
    source: ThreadStore, target: ThreadStore, thread_ids: Iterable[str] = ()
) -> list[str]:
    """Copy threads from ``source`` to ``target`` as they are: the same ids, titles, headers,
    timestamps and turns (ids, models, usage, fingerprints), each in one transaction; the files
    an import copied into ``source``'s files folder are copied into ``target``'s and the
    pointers follow. A thread ``target`` already has is refused before anything is written.

    :param thread_ids: the threads to copy (empty: every thread of ``source``).
    :returns: the ids copied, in order.
    :raises UnknownThreadError: ``source`` has no such thread.
    :raises turnwire.errors.StoreError: ``target`` already has one of them.
    """
    summaries = {item.id: item for item in source.list_threads()}
    wanted = list(dict.fromkeys(thread_ids)) or list(reversed(summaries))
    for thread_id in wanted:
        if thread_id not in summaries:
            raise UnknownThreadError(thread_id)
    present = {item.id for item in target.list_threads()}
    clashes = [thread_id for thread_id in wanted if thread_id in present]
    if clashes:
        raise StoreError(
            f"the target store already has thread {clashes[0]!r}: delete it there first, or "
            "copy the other threads by id"
        )
    for thread_id in wanted:
        summary = summaries[thread_id]
        header, turns = source.header(thread_id), source.turns(thread_id)
        folders = _copy_thread_files(source, target, thread_id)
        try:
            header, turns = _moved_pointers((header, turns), folders)
            target.restore_thread(
                thread_id,
                header=header,
                turns=turns,
                title=summary.title,
                created_at=summary.created_at,
                updated_at=summary.updated_at,
            )
        except BaseException:
            for copied in folders.values():
                shutil.rmtree(copied, ignore_errors=True)
            raise
    return wanted


def _copy_thread_files(source: ThreadStore, target: ThreadStore, thread_id: str) -> dict[str, str]:
    """The thread's import folders copied into ``target``'s files folder: old → new path."""
    moved: dict[str, str] = {}
    origin, into = source.files_folder, target.files_folder
    if origin == into:
        return moved
    for folder in thread_folders(origin, thread_id):
        destination = new_thread_folder(into, thread_id)
        shutil.copytree(folder, destination)
        moved[str(folder)] = str(destination)
    return moved


def _moved_pointers(value: Any, folders: dict[str, str]) -> Any:
    """``value`` with every file pointer inside a moved folder leading to its copy."""
    if not folders:
        return value
    replace = msgspec.structs.replace

    def move(path: str) -> str:
        for old, new in folders.items():
            if path.startswith(old + os.sep):
                return new + path[len(old) :]
        return path

    def walk(item: Any) -> Any:
        if isinstance(item, tuple | list):
            return type(item)(walk(x) for x in item)
        if isinstance(item, msgspec.Struct):
            changes = {}
            for name in item.__struct_fields__:
                field = getattr(item, name)
                if name == "path" and isinstance(field, str):
                    changes[name] = move(field)
                elif isinstance(field, msgspec.Struct | tuple | list):
                    changes[name] = walk(field)
            return replace(item, **changes) if changes else item
        return item

    return walk(value)
