"""What every store does the same way above its SQL: an import copies every file a thread points at
under a name the file system can hold, and refuses a pointer that names no file instead of storing
it."""

from __future__ import annotations

import json
from pathlib import Path

from turnwire.store._base import copy_name
from turnwire.store.sqlite import SQLiteStore

from ..conftest import turnwire_process


def _thread_file(folder: Path, name: str, path: str) -> Path:
    thread = {
        "version": 1,
        "model": "gpt-5",
        "messages": [
            {
                "id": "u1",
                "role": "user",
                "content": "see the file",
                "created_at": "2026-01-01T00:00:00Z",
                "attachments": [
                    {
                        "id": "a1",
                        "kind": "document",
                        "mime_type": "text/plain",
                        "filename": name,
                        "path": path,
                    }
                ],
            }
        ],
    }
    target = folder / "thread.json"
    target.write_text(json.dumps(thread))
    return target


def test_copy_names_fit_in_200_bytes_keeping_the_extension() -> None:
    long = "é" * 120 + ".txt"  # 244 bytes
    name = copy_name("12-", long)
    assert len(name.encode()) <= 200 and name.startswith("12-é") and name.endswith(".txt")
    assert copy_name("0-", "short.png") == "0-short.png"
    assert len(copy_name("0-", "x" * 255).encode()) <= 200


def test_a_file_named_with_255_bytes_imports_and_renders(tmp_path: Path) -> None:
    name = "n" * 251 + ".txt"  # 255 bytes: the most a Linux file name holds
    (tmp_path / name).write_text("the contents")
    thread = _thread_file(tmp_path, name, name)
    db = tmp_path / "threads.db"
    done = turnwire_process("threads", "import", str(thread), "--store", str(db))
    assert done.returncode == 0, done.stderr
    with SQLiteStore(db) as store:
        thread_id = store.list_threads()[0].id
    rendered = turnwire_process("threads", "show", thread_id, "--store", str(db))
    assert rendered.returncode == 0, rendered.stderr


def test_an_empty_path_is_refused_at_import_and_nothing_is_stored(tmp_path: Path) -> None:
    thread = _thread_file(tmp_path, "a.txt", "")
    db = tmp_path / "threads.db"
    done = turnwire_process("threads", "import", str(thread), "--store", str(db))
    assert done.returncode == 2
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .startswith("error: E_FILE_NOT_ALLOWED: $.messages[0].attachments[0].path")
    )
    with SQLiteStore(db) as store:
        assert store.list_threads() == []
