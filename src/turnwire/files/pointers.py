"""File pointers: the only code that reads what a thread points at.

:class:`ContextAssembler` reads the bytes behind file pointers just before a request is
rendered: a stored turn never holds file bytes, only pointers. A pointer is thread data, so it
is read only inside the roots the caller or the configuration chose (:func:`file_roots`).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterable
from operator import is_
from typing import TYPE_CHECKING

import msgspec

from turnwire.errors import FileNotAllowedError, RenderError
from turnwire.model.records import Artifact, Media, Thread, ToolResult

if TYPE_CHECKING:
    from turnwire.config.settings import FileSettings

__all__ = ["ContextAssembler", "file_roots", "located_pointers"]


# Pseudo-filesystems: their "regular" files (/proc/self/environ) report no size and hold the
# process's secrets. No configuration of roots makes them a pointer's target.
_NEVER = ("/proc", "/sys", "/dev")
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NOCTTY", 0)
)
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def file_roots(
    given: Iterable[str | os.PathLike[str]] | None,
    files: FileSettings,
    defaults: Iterable[str | os.PathLike[str]] = (),
) -> tuple[str, ...]:
    """The roots pointers may lead into: ``given`` (by the calling code), else ``files.roots``,
    else the ``defaults`` of where the thread came from (its file's folder; the store's files)."""
    chosen = given if given is not None else files.roots if files.roots is not None else defaults
    return tuple(os.fspath(root) for root in chosen)


def _shown(value: str, limit: int = 200) -> str:
    """A thread's value in a message: quoted, escaped onto one line, cut at ``limit``."""
    return repr(value[:limit]) + ("..." if len(value) > limit else "")


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def located_pointers(
    thread: Thread,
    media: Callable[[str, Media], Media],
    artifact: Callable[[str, Artifact], Artifact],
) -> Thread:
    """:func:`~turnwire.model.records.map_pointers`, with the ``$.path`` of each pointer's record.

    The path names the record (``$.messages[0].attachments[1]``); a pointer is its ``.path``.
    """
    replace = msgspec.structs.replace
    # A record whose pointers all come back as they were stays the same object.
    messages = []
    for i, message in enumerate(thread.messages):
        if message.attachments:
            attachments = tuple(
                media(f"$.messages[{i}].attachments[{j}]", a)
                for j, a in enumerate(message.attachments)
            )
            if not all(map(is_, attachments, message.attachments)):
                messages.append(replace(message, attachments=attachments))
                continue
        messages.append(message)
    calls = []
    for i, call in enumerate(thread.tool_calls):
        result = call.result
        if result is None or not (result.media or result.artifact or result.artifacts):
            calls.append(call)
            continue
        at = f"$.tool_calls[{i}].result"
        located = replace(
            result,
            media=None
            if result.media is None
            else tuple(media(f"{at}.media[{j}]", m) for j, m in enumerate(result.media)),
            artifact=None
            if result.artifact is None
            else artifact(f"{at}.artifact", result.artifact),
            artifacts=None
            if result.artifacts is None
            else tuple(artifact(f"{at}.artifacts[{j}]", a) for j, a in enumerate(result.artifacts)),
        )
        if _same_pointers(result, located):
            calls.append(call)
        else:
            calls.append(replace(call, result=located))
    retrievables = tuple(
        replace(r, artifact=artifact(f"$.retrievables[{i}].artifact", r.artifact))
        if r.artifact is not None
        else r
        for i, r in enumerate(thread.retrievables)
    )
    return replace(
        thread, messages=tuple(messages), tool_calls=tuple(calls), retrievables=retrievables
    )


def _same_pointers(before: ToolResult, after: ToolResult) -> bool:
    """Whether locating ``before``'s pointers gave back every one of them unchanged."""
    return (
        before.artifact is after.artifact
        and all(map(is_, before.media or (), after.media or ()))
        and all(map(is_, before.artifacts or (), after.artifacts or ()))
    )


class ContextAssembler:
    """Inlines file bytes for one render: confined to roots, regular files only, bounded.

    A pointer is read only when both its path and the path its symlinks lead to lie inside one
    of ``roots`` (a folder, or a file named on its own), never under ``/proc``, ``/sys`` or
    ``/dev``; anything else is :class:`~turnwire.errors.FileNotAllowedError` with the
    pointer's ``$.path``. The file is opened without following a final symlink and without
    blocking, checked with ``fstat`` (FIFOs, devices, directories and sockets are refused
    before a byte is read), and read up to its announced size. Inline ``data_base64`` counts
    against the same limits.

    :param roots: where pointers may lead; none (the default) allows no pointer.
    :param max_file_bytes: the largest single file that may be inlined.
    :param max_request_bytes: the most file bytes one render may inline in total.
    """

    def __init__(
        self,
        *,
        roots: Iterable[str | os.PathLike[str]] = (),
        max_file_bytes: int = 32 * 2**20,
        max_request_bytes: int = 64 * 2**20,
    ) -> None:
        given = [os.path.abspath(os.fspath(root)) for root in roots]
        self.roots = tuple(dict.fromkeys(given))
        self._real_roots = tuple(dict.fromkeys(os.path.realpath(root) for root in given))
        self.max_file_bytes = max_file_bytes
        self.max_request_bytes = max_request_bytes

    @classmethod
    def from_settings(
        cls, files: FileSettings, roots: Iterable[str | os.PathLike[str]]
    ) -> ContextAssembler:
        """An assembler with ``files:``'s limits and these ``roots``."""
        return cls(
            roots=roots,
            max_file_bytes=files.max_file_bytes,
            max_request_bytes=files.max_request_bytes,
        )

    def inline(self, thread: Thread) -> Thread:
        """``thread`` with every pointer's bytes loaded."""
        budget = [self.max_request_bytes]
        replace = msgspec.structs.replace

        def media(where: str, item: Media) -> Media:
            if item.data is not None:
                self._charge(len(item.data), f"{where}.data_base64", item.id, budget)
                return item
            if item.path is None:
                return item
            data = self.read(item.path, where=f"{where}.path", owner=item.id, budget=budget)
            return replace(item, data=data, path=None)

        def artifact(where: str, item: Artifact) -> Artifact:
            if item.text is not None or item.path is None:
                return item
            data = self.read(item.path, where=f"{where}.path", owner=item.path, budget=budget)
            return replace(item, text=data.decode("utf-8", "replace"), path=None)

        return located_pointers(thread, media, artifact)

    def check(self, thread: Thread) -> None:
        """Refuse, without reading, any pointer that leaves the roots or any oversized inline
        data: what :meth:`inline` would refuse first, checked before a run does anything."""

        def media(where: str, item: Media) -> Media:
            if item.data is not None:
                self._charge(len(item.data), f"{where}.data_base64", item.id, [len(item.data)])
            elif item.path is not None:
                self.resolve(item.path, where=f"{where}.path")
            return item

        def artifact(where: str, item: Artifact) -> Artifact:
            if item.text is None and item.path is not None:
                self.resolve(item.path, where=f"{where}.path")
            return item

        located_pointers(thread, media, artifact)

    def resolve(self, pointer: str, *, where: str) -> str:
        """The real path of ``pointer`` when it may be read.

        :raises FileNotAllowedError: empty, under a pseudo-filesystem, or outside the roots
            (literally or once its symlinks are followed).
        """
        if not pointer or "\x00" in pointer:
            raise FileNotAllowedError(
                f"{where}: {_shown(pointer)} names no file; point at a file inside the thread's "
                "folder or files.roots",
                path=where,
            )
        literal = os.path.abspath(pointer)
        real = os.path.realpath(pointer)
        if any(_inside(p, never) for p in (literal, real) for never in _NEVER):
            raise FileNotAllowedError(
                f"{where}: {_shown(pointer)} is under {', '.join(_NEVER)}, which are never read",
                path=where,
            )
        if not any(_inside(literal, root) for root in self.roots + self._real_roots) or not any(
            _inside(real, root) for root in self._real_roots
        ):
            allowed = ", ".join(self.roots) or "none"
            raise FileNotAllowedError(
                f"{where}: {_shown(pointer)} leads outside the allowed roots ({allowed}); move the "
                "file into the thread's folder or add its folder to files.roots",
                path=where,
            )
        return real

    def read(
        self, pointer: str, *, where: str, owner: str, budget: list[int] | None = None
    ) -> bytes:
        """The bytes of a regular file inside the roots, within the limits.

        :param budget: the request's remaining byte budget, decreased by the file's size.
        :raises FileNotAllowedError: see :meth:`resolve`; or not a regular file.
        :raises RenderError: the file cannot be read, or is over a limit.
        """
        real = self.resolve(pointer, where=where)
        try:
            fd = os.open(real, _OPEN_FLAGS)
        except OSError as err:
            if err.errno in (errno.ELOOP, errno.ENXIO, errno.EOPNOTSUPP):
                raise FileNotAllowedError(
                    f"{where}: {_shown(pointer)} is a symlink or a special file, not a "
                    "regular file",
                    path=where,
                ) from err
            raise RenderError(
                f"record {_shown(owner)} points at {_shown(pointer)}, which cannot be read: "
                f"{err.strerror}",
                stage="context",
                record=owner,
            ) from err
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise FileNotAllowedError(
                    f"{where}: {_shown(pointer)} is {_kind(info.st_mode)}; only regular files "
                    "are read",
                    path=where,
                )
            size = info.st_size
            self._charge(size, where, owner, [self.max_request_bytes] if budget is None else budget)
            chunks: list[bytes] = []
            left = size + 1  # one byte more than announced tells a file that grows
            while left > 0:
                chunk = os.read(fd, min(left, 2**20))
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
        except OSError as err:
            raise RenderError(
                f"record {_shown(owner)} points at {_shown(pointer)}, which cannot be read: "
                f"{err.strerror}",
                stage="context",
                record=owner,
            ) from err
        finally:
            os.close(fd)
        if left <= 0:
            raise RenderError(
                f"record {_shown(owner)} points at {_shown(pointer)}, which grew past its size of "
                f"{size} bytes "
                "while it was read",
                stage="context",
                record=owner,
            )
        return b"".join(chunks)

    def _charge(self, size: int, where: str, owner: str, budget: list[int]) -> None:
        if size > self.max_file_bytes:
            raise RenderError(
                f"{where}: record {_shown(owner)} has {size} bytes, over the per-file limit of "
                f"{self.max_file_bytes} bytes (files.max_file_bytes)",
                stage="context",
                record=owner,
            )
        if size > budget[0]:
            raise RenderError(
                f"{where}: record {_shown(owner)} has {size} bytes, which would pass the "
                f"per-request limit of {self.max_request_bytes} file bytes "
                "(files.max_request_bytes)",
                stage="context",
                record=owner,
            )
        budget[0] -= size
