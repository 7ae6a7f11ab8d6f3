"""The stores side by side: the contract's three backends (memory, SQLite, PostgreSQL) as
``backend`` and ``other_backend``, a handle on one as ``store``, and ``open_at``.

The PostgreSQL server and ``location`` (a SQLite file or a PostgreSQL URL) come from
``tests/postgres.py``, for every test folder.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ..postgres import _database


@dataclass(frozen=True)
class Backend:
    """One store of the contract suite: ``open()`` gives a new handle on it (as a second
    connection to one database would be), its files in ``folder/files``."""

    kind: str
    folder: Path
    schema_version: int
    open: Callable[[], Any]


BACKENDS = ["memory", "sqlite", "postgres"]


def _backend(kind: str, request: pytest.FixtureRequest, folder: Path) -> Backend:
    folder.mkdir(parents=True, exist_ok=True)
    if kind == "memory":
        from .memory import SCHEMA_VERSION, MemoryData, MemoryStore

        data = MemoryData()
        return Backend(kind, folder, SCHEMA_VERSION, lambda: MemoryStore(folder, data=data))
    from turnwire.store import open_store, postgres, sqlite

    where = str(folder / "threads.db") if kind == "sqlite" else _database(request)
    version = (sqlite if kind == "sqlite" else postgres).SCHEMA_VERSION
    return Backend(kind, folder, version, lambda: open_store(where, folder=folder))


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """A store of each kind the contract holds for."""
    return _backend(request.param, request, tmp_path / "a")


@pytest.fixture(params=BACKENDS)
def other_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """A second store, of any kind, beside :func:`backend`."""
    return _backend(request.param, request, tmp_path / "b")


@pytest.fixture
def open_at(tmp_path: Path) -> Callable[..., Any]:
    """Opens the store at a location, its files folder in the test's folder for both kinds."""
    from turnwire.store import open_store

    def opener(where: str, **options: Any) -> Any:
        return open_store(where, folder=tmp_path, **options)

    return opener


@pytest.fixture
def store(backend: Backend) -> Iterator[Any]:
    """A handle on :func:`backend`'s store, closed after the test."""
    with backend.open() as opened:
        yield opened
