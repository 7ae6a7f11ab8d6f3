"""The store protocol is the whole contract: every store satisfies it (``mypy --strict`` on
``tests/typing/stores.py``), and the command line, the Python API and the copy use nothing of a
store it does not name."""

from __future__ import annotations

import ast
from pathlib import Path

from turnwire.store import ThreadStore

from ..conftest import mypy_strict

REPO = Path(__file__).resolve().parents[2]
STORES = REPO / "tests" / "typing" / "stores.py"
USERS = [
    *sorted((REPO / "src" / "turnwire" / "cli").rglob("*.py")),
    *sorted((REPO / "src" / "turnwire" / "demo").rglob("*.py")),
    REPO / "src" / "turnwire" / "api.py",
    REPO / "src" / "turnwire" / "client" / "stored.py",
    REPO / "src" / "turnwire" / "store" / "copy.py",
]
STORE_NAMES = {"store", "source", "target"}  # what these modules call a store


def test_every_store_is_a_thread_store_to_mypy_and_a_missing_member_is_an_error(tmp_path):
    status, output = mypy_strict(STORES, tmp_path / "cache")
    assert status == 0, output
    wider = tmp_path / "wider.py"  # a protocol asking one method more than the stores have
    wider.write_text(
        STORES.read_text().replace(
            "from turnwire.store import ThreadStore, copy_threads",
            "from typing import Protocol\n\n"
            "from turnwire.store import ThreadStore as _Store, copy_threads\n\n\n"
            "class ThreadStore(_Store, Protocol):\n"
            "    def rename_thread(self, thread_id: str, title: str) -> None: ...\n",
        )
    )
    status, output = mypy_strict(wider, tmp_path / "cache")
    assert status == 1
    for kind in ("SQLiteStore", "PostgresStore", "MemoryStore"):
        assert f'"{kind}" is missing following "ThreadStore" protocol member' in output
    assert output.count("rename_thread") >= 3


def _members() -> set[str]:
    names = {name for name in vars(ThreadStore) if not name.startswith("_")}
    return names | set(ThreadStore.__annotations__) | {"__enter__", "__exit__"}


def _uses(path: Path) -> set[str]:
    """The attributes read directly off a store in ``path`` (a ``getattr`` with a default is
    asking whether a store has something, not a use)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in STORE_NAMES
        ):
            found.add(node.attr)
    return found


def test_the_protocol_names_everything_the_command_line_and_the_api_use_of_a_store():
    unnamed = {str(path.relative_to(REPO)): sorted(_uses(path) - _members()) for path in USERS}
    assert {where: names for where, names in unnamed.items() if names} == {}
    # The walk does find the uses (were the variables renamed, the check above would pass empty).
    every = set().union(*(_uses(path) for path in USERS))
    assert {"append_turns", "load", "restore_thread", "files_folder", "builder"} <= every
