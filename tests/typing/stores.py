"""Every store is a ThreadStore: checked by ``mypy --strict`` in tests/store/test_protocol.py."""

from __future__ import annotations

from pathlib import Path

from tests.store.memory import MemoryStore
from turnwire.store import ThreadStore, copy_threads
from turnwire.store.postgres import PostgresStore
from turnwire.store.sqlite import SQLiteStore


def stores(folder: Path, url: str) -> list[ThreadStore]:
    return [SQLiteStore(folder / "threads.db"), PostgresStore(url), MemoryStore(folder)]


def copied(source: SQLiteStore, target: PostgresStore) -> list[str]:
    with source, target:
        return copy_threads(source, target)
