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
_DIRECTORY_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_DIRECTORY", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
_MAX_LINKS = 40  # symlinks one pointer may pass through, as the kernel's own limit
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

    A pointer is read only inside one of ``roots`` (a folder, or a file named on its own),
    never under ``/proc``, ``/sys`` or ``/dev``; anything else is
    :class:`~turnwire.errors.FileNotAllowedError` with the pointer's ``$.path``.

    No path is checked and then opened: the pointer is walked component by component from an
    open descriptor of its root (each folder opened with ``O_DIRECTORY | O_NOFOLLOW`` relative
    to the one before, the file with ``O_NOFOLLOW``). A symlink met on the way is read where it
    is and followed only while it stays inside that root (at most 40 of them); ``..`` never
    climbs above the root. So a folder swapped for a symlink while a render runs is refused,
    never followed out. The file's descriptor is checked with ``fstat`` (FIFOs, devices,
    directories and sockets are refused before a byte is read; so is a file with more than one
    hard link, unless ``allow_hard_links``) and read through that descriptor alone, up to its
    announced size. Every failure is a typed error naming the pointer's ``$.path``. Inline
    ``data_base64`` counts against the same limits.

    :param roots: where pointers may lead; none (the default) allows no pointer.
    :param max_file_bytes: the largest single file that may be inlined.
    :param max_request_bytes: the most file bytes one render may inline in total.
    :param allow_hard_links: read regular files that have more than one hard link (another
        name, maybe outside the roots, for the same bytes).
    """

    def __init__(
        self,
        *,
        roots: Iterable[str | os.PathLike[str]] = (),
        max_file_bytes: int = 32 * 2**20,
        max_request_bytes: int = 64 * 2**20,
        allow_hard_links: bool = False,
    ) -> None:
        given = [os.path.abspath(os.fspath(root)) for root in roots]
        self.roots = tuple(dict.fromkeys(given))
        # Each root by the path a pointer may name it by (as given, and its real path: a
        # configured root may itself sit behind a symlink) -> the real path it is opened at.
        self._by_name: dict[str, str] = {}
        for root in self.roots:
            real = os.path.realpath(root)
            self._by_name.setdefault(root, real)
            self._by_name.setdefault(real, real)
        self._real_roots = tuple(dict.fromkeys(self._by_name.values()))
        self.max_file_bytes = max_file_bytes
        self.max_request_bytes = max_request_bytes
        self.allow_hard_links = allow_hard_links

    @classmethod
    def from_settings(
        cls, files: FileSettings, roots: Iterable[str | os.PathLike[str]]
    ) -> ContextAssembler:
        """An assembler with ``files:``'s limits and these ``roots``."""
        return cls(
            roots=roots,
            max_file_bytes=files.max_file_bytes,
            max_request_bytes=files.max_request_bytes,
            allow_hard_links=files.allow_hard_links,
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
        """Refuse, without reading, any pointer that leaves the roots or is not a file that may
        be read, and any oversized inline data: what :meth:`inline` would refuse first, checked
        before a run does anything (the render walks each pointer again)."""

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
        """Check that ``pointer`` may be read (see the class docstring); its absolute path.

        The check opens the file the way a read does and closes it: it says what a read would
        refuse, but a read walks the pointer again (nothing is opened by this path later).

        :raises FileNotAllowedError: empty, under a pseudo-filesystem, outside the roots, not a
            regular file, or a hard-linked file.
        :raises RenderError: the file cannot be opened.
        """
        fd, _ = self._open(pointer, where=where, owner=pointer)
        os.close(fd)
        return os.path.abspath(pointer)

    def read(
        self, pointer: str, *, where: str, owner: str, budget: list[int] | None = None
    ) -> bytes:
        """The bytes of a regular file inside the roots, within the limits.

        :param budget: the request's remaining byte budget, decreased by the file's size.
        :raises FileNotAllowedError: see :meth:`resolve`.
        :raises RenderError: the file cannot be read, or is over a limit.
        """
        fd, size = self._open(pointer, where=where, owner=owner)
        try:
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
            raise self._unreadable(pointer, owner, err) from err
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

    def _open(self, pointer: str, *, where: str, owner: str) -> tuple[int, int]:
        """A descriptor of the regular file ``pointer`` names inside a root, and its size."""
        if not pointer or "\x00" in pointer:
            raise FileNotAllowedError(
                f"{where}: {_shown(pointer)} names no file; point at a file inside the thread's "
                "folder or files.roots",
                path=where,
            )
        literal = os.path.abspath(pointer)
        self._refuse_never(literal, pointer, where)
        for name, real in sorted(self._by_name.items(), key=lambda kv: -len(kv[0])):
            if literal == name:
                if os.path.isdir(real):
                    raise FileNotAllowedError(
                        f"{where}: {_shown(pointer)} is a directory; only regular files are read",
                        path=where,
                    )
                # a file named as a root of its own
                fd = self._open_at(None, real, pointer, where, owner, last=True)
                return fd, self._checked(fd, pointer, where)
            if _inside(literal, name) and literal != name:
                parts = os.path.relpath(literal, name).split(os.sep)
                fd = self._walk(real, parts, pointer, where, owner)
                return fd, self._checked(fd, pointer, where)
        raise self._outside(pointer, where)

    def _walk(self, root: str, parts: list[str], pointer: str, where: str, owner: str) -> int:
        """Open ``parts`` below ``root`` one component at a time (see the class docstring)."""
        opened = [self._open_at(None, root, pointer, where, owner, last=False)]
        names: list[str] = []  # the components below the root the walk stands in
        pending = list(reversed(parts))
        links = 0
        try:
            while pending:
                part = pending.pop()
                if part in ("", "."):
                    continue
                if part == "..":
                    if not names:
                        raise self._outside(pointer, where)
                    names.pop()
                    os.close(opened.pop())
                    continue
                last = not any(p not in ("", ".") for p in pending)
                here = os.path.join(root, *names, part)
                self._refuse_never(here, pointer, where)
                try:
                    fd = self._open_at(opened[-1], part, pointer, where, owner, last=last)
                except _Symlink:
                    links += 1
                    target = self._readlink(opened[-1], part, pointer, where, owner)
                    if links > _MAX_LINKS:
                        raise FileNotAllowedError(
                            f"{where}: {_shown(pointer)} is a symlink or a special file, not a "
                            f"regular file: it passes through more than {_MAX_LINKS} symlinks "
                            "(a loop)",
                            path=where,
                        ) from None
                    if os.path.isabs(target):
                        # allowed only inside this same root, walked again from it
                        if not _inside(target, root) or target == root:
                            raise self._outside(pointer, where) from None
                        for fd in opened[1:]:
                            os.close(fd)
                        del opened[1:]
                        names.clear()
                        target = os.path.relpath(target, root)
                    pending.extend(reversed(target.split("/")))
                    continue
                if last:
                    for folder in opened:
                        os.close(folder)
                    opened.clear()
                    return fd
                opened.append(fd)
                names.append(part)
            raise FileNotAllowedError(
                f"{where}: {_shown(pointer)} names a folder, not a file", path=where
            )
        finally:
            for fd in opened:
                os.close(fd)

    def _open_at(
        self, folder: int | None, name: str, pointer: str, where: str, owner: str, *, last: bool
    ) -> int:
        """``name`` opened relative to the descriptor ``folder`` (a root by its path when
        ``None``), a folder unless ``last``; a symlink raises :class:`_Symlink`."""
        flags = _OPEN_FLAGS if last else _DIRECTORY_FLAGS
        if folder is None:  # a configured root, opened by its real path (roots are trusted)
            flags &= ~getattr(os, "O_NOFOLLOW", 0)
        try:
            return os.open(name, flags, dir_fd=folder)
        except OSError as err:
            if folder is not None and err.errno in (errno.ELOOP, errno.ENOTDIR):
                try:
                    is_link = stat.S_ISLNK(
                        os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode
                    )
                except OSError:
                    is_link = False
                if is_link:
                    raise _Symlink from None
            if err.errno in (errno.ENOTDIR, errno.ELOOP, errno.ENXIO, errno.EOPNOTSUPP):
                raise FileNotAllowedError(
                    f"{where}: {_shown(pointer)} is a symlink or a special file, not a "
                    "regular file (or passes through something that is not a folder)",
                    path=where,
                ) from None
            raise self._unreadable(pointer, owner, err) from None

    def _readlink(self, folder: int, name: str, pointer: str, where: str, owner: str) -> str:
        try:
            return os.readlink(name, dir_fd=folder)
        except OSError as err:  # swapped away meanwhile: as if it were never there
            raise self._unreadable(pointer, owner, err) from None

    def _checked(self, fd: int, pointer: str, where: str) -> int:
        """The size of the open file ``fd``, once it is known to be one that may be read."""
        try:
            info = os.fstat(fd)
        except OSError as err:
            os.close(fd)
            raise self._unreadable(pointer, pointer, err) from None
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            raise FileNotAllowedError(
                f"{where}: {_shown(pointer)} is {_kind(info.st_mode)}; only regular files are read",
                path=where,
            )
        if info.st_nlink > 1 and not self.allow_hard_links:
            os.close(fd)
            raise FileNotAllowedError(
                f"{where}: {_shown(pointer)} has {info.st_nlink} hard links (another name for "
                "the same bytes may lie outside the roots); copy the file, or set "
                "files.allow_hard_links: true",
                path=where,
            )
        return info.st_size

    def _refuse_never(self, path: str, pointer: str, where: str) -> None:
        if any(_inside(path, never) for never in _NEVER):
            raise FileNotAllowedError(
                f"{where}: {_shown(pointer)} is under {', '.join(_NEVER)}, which are never read",
                path=where,
            )

    def _outside(self, pointer: str, where: str) -> FileNotAllowedError:
        allowed = ", ".join(self.roots) or "none"
        return FileNotAllowedError(
            f"{where}: {_shown(pointer)} leads outside the allowed roots ({allowed}); move the "
            "file into the thread's folder or add its folder to files.roots",
            path=where,
        )

    @staticmethod
    def _unreadable(pointer: str, owner: str, err: OSError) -> RenderError:
        return RenderError(
            f"record {_shown(owner)} points at {_shown(pointer)}, which cannot be read: "
            f"{err.strerror or err}",
            stage="context",
            record=owner,
        )

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


class _Symlink(Exception):
    """A component of a pointer is a symlink (read and followed by the walk)."""
