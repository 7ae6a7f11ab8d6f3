"""A record dated ahead of the clock is refused where a thread comes in: it would sort after
every turn added later, and a compaction dated ahead would cut each new prompt out."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import turnwire
from turnwire.errors import ThreadFileError
from turnwire.files.thread_file import FUTURE_SKEW

from .conftest import turnwire_process


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _thread(ahead: timedelta) -> dict:
    now = datetime.now(UTC)
    return {
        "version": 1,
        "model": "gpt-5",
        "messages": [
            {
                "id": "u1",
                "role": "user",
                "content": "hi",
                "created_at": _iso(now - timedelta(hours=1)),
            }
        ],
        "hosted_items": [
            {
                "id": "cmp_1",
                "type": "compaction",
                "item": {"type": "compaction", "id": "cmp_1", "encrypted_content": "x"},
                "created_at": _iso(now + ahead),
            }
        ],
    }


def test_a_compaction_dated_in_the_future_is_refused_naming_it() -> None:
    with pytest.raises(ThreadFileError, match="is in the future") as refused:
        turnwire.load_thread(_thread(timedelta(days=365)))
    assert refused.value.path == "$.hosted_items[0].created_at"


def test_a_few_minutes_of_clock_drift_are_allowed() -> None:
    thread = turnwire.load_thread(_thread(FUTURE_SKEW - timedelta(minutes=1)))
    assert len(thread.hosted_items) == 1


def test_a_thread_file_and_an_import_refuse_it_alike(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps(_thread(timedelta(days=1))))
    for arguments in (
        ("render", str(path)),
        ("threads", "import", str(path), "--db", str(tmp_path / "threads.db")),
    ):
        done = turnwire_process(*arguments)
        assert done.returncode == 2
        last = done.stderr.strip().splitlines()[-1]
        assert last.startswith("error: E_THREAD_FILE_INVALID: $.hosted_items[0].created_at: ")
