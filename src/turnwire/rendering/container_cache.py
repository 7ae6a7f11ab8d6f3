"""Containers built from configuration files, kept by a caller for reuse.

:class:`ContainerCache` is owned by whoever wants a repeated ``render(config_files=...)`` to
cost a few file reads instead of a build: pass it as ``render(..., cache=...)``.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from turnwire.config.nonce import EnvelopeNonce
from turnwire.config.settings import Settings, default_config_path, load_settings
from turnwire.rendering.container import Container, build_container, envelope_secret_of

__all__ = ["ContainerCache"]


class _RecordingEnv(Mapping[str, str]):
    """The environment as ``load_settings`` sees it, noting each variable it looks up."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.environ = environ
        self.read: dict[str, str | None] = {}
        self.listed = False

    def __getitem__(self, name: str) -> str:
        value = self.read[name] = self.environ.get(name)
        if value is None:
            raise KeyError(name)
        return value

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        value = self.read[name] = self.environ.get(name)
        return value is not None

    def __iter__(self) -> Iterator[str]:
        self.listed = True
        return iter(self.environ)

    def __len__(self) -> int:
        self.listed = True
        return len(self.environ)


def _entry_point_token() -> tuple[tuple[str, int | None], ...]:
    """What a new or removed distribution changes: the import path and its folders' mtimes.

    Installing or removing a distribution creates or deletes its ``.dist-info`` folder in a
    ``sys.path`` folder, which changes that folder's mtime; this costs a few ``stat`` calls
    where listing the entry points costs milliseconds.
    """
    token: list[tuple[str, int | None]] = []
    for entry in sys.path:
        try:
            token.append((entry, os.stat(entry or ".").st_mtime_ns))
        except OSError:
            token.append((entry, None))
    return tuple(token)


def _secret_token(settings: Settings) -> str | None:
    secret = envelope_secret_of(settings)
    return EnvelopeNonce(secret).cache_key if secret else None


class _Build:
    __slots__ = ("container", "entry_points", "environment", "secret")

    def __init__(
        self,
        container: Container,
        environment: tuple[tuple[str, str | None], ...],
        entry_points: tuple[tuple[str, int | None], ...] | None,
    ) -> None:
        self.container = container
        self.environment = environment
        self.entry_points = entry_points
        # wherever the secret comes from (a variable, a file), the same secret or a rebuild
        self.secret = _secret_token(container.settings())

    def current(self) -> bool:
        environ = os.environ
        if any(environ.get(name) != value for name, value in self.environment):
            return False
        if _secret_token(self.container.settings()) != self.secret:
            return False
        return self.entry_points is None or self.entry_points == _entry_point_token()


@functools.cache
def _default_config() -> str:
    return str(default_config_path())


class ContainerCache:
    """Containers built from configuration files, reused while what their build read is
    unchanged: the files' bytes (the packaged default's too), the environment variables the
    build looked up (``${ENV}`` placeholders), the envelope secret and, when entry points are
    loaded, the distributions visible on ``sys.path``. A reused container keeps its plugin
    manager, stage plan inputs and render memo, so a repeated ``render(config_files=...)``
    costs a few file reads and ``stat`` calls.

    Not tracked: environment variables or files a plugin reads when it is loaded or
    configured, and edits to the code of an installed plugin (as with any imported module).

    :param maxsize: how many builds to keep (least recently used go first).
    """

    def __init__(self, maxsize: int = 8) -> None:
        self.maxsize = maxsize
        self._builds: dict[tuple[Any, ...], _Build] = {}
        self._lock = threading.Lock()

    def get(self, config_files: Iterable[str | os.PathLike[str]] = ()) -> Container:
        """A container for ``config_files``: the kept one if still current, else a new one.

        Raises what :func:`build_container` raises for the same files.
        """
        paths = (_default_config(), *(os.fspath(file) for file in config_files))
        try:
            contents = tuple(_file_bytes(path) for path in paths)
        except OSError:
            return build_container(paths[1:])  # let the loader report the unreadable file
        key = (paths, contents)
        with self._lock:
            kept = self._builds.pop(key, None)
            if kept is not None and kept.current():
                self._builds[key] = kept
                return kept.container
        return self._build(key, paths[1:])

    def _build(self, key: tuple[Any, ...], files: tuple[str, ...]) -> Container:
        environ = _RecordingEnv(os.environ)
        settings = load_settings(files, env=environ)
        container = build_container(settings=settings)
        if environ.listed:  # the build saw the whole environment: nothing to key on
            return container
        try:
            if tuple(_file_bytes(path) for path in key[0]) != key[1]:
                return container  # a file changed while it was read: keep nothing
        except OSError:
            return container
        entry_points = _entry_point_token() if settings.plugins.load_entrypoints else None
        build = _Build(container, tuple(sorted(environ.read.items())), entry_points)
        with self._lock:
            self._builds[key] = build
            while len(self._builds) > self.maxsize:
                del self._builds[next(iter(self._builds))]
        return container

    def clear(self) -> None:
        """Forget every kept container."""
        with self._lock:
            self._builds.clear()

    def __len__(self) -> int:
        return len(self._builds)

    def __repr__(self) -> str:
        return f"ContainerCache(kept={len(self._builds)}, maxsize={self.maxsize})"


def _file_bytes(path: str) -> bytes:
    with open(path, "rb") as file:
        return file.read()
