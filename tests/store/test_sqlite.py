"""What only the SQLite store has: its file, read and damaged with SQLite's own tools, and the
command line on it."""

from __future__ import annotations

import sqlite3

from ..conftest import REPO_EXAMPLES


def test_a_damaged_row_of_sqlite_text_is_a_store_error_on_the_command_line(tmp_path):
    from ..conftest import turnwire_process

    db = tmp_path / "c.db"
    done = turnwire_process(
        "threads", "import", str(REPO_EXAMPLES / "weather.yaml"), "--store", str(db)
    )
    assert done.returncode == 0, done.stderr
    thread_id = done.stdout.strip()
    for number, sql in enumerate(
        (
            "UPDATE threads SET header = '{not json'",
            "UPDATE turns SET parts = '[{\"kind\"'",
            "UPDATE turns SET created_at = 'yesterday'",
        )
    ):
        backup = tmp_path / f"b{number}.db"  # a copy of its own (no WAL file of another)
        backup.write_bytes(db.read_bytes())
        with sqlite3.connect(backup) as raw:
            raw.execute(sql)
        listed = turnwire_process("threads", "list", "--store", str(backup))
        if "header" in sql:  # what the list reads of each thread
            assert listed.returncode == 2 and "Traceback" not in listed.stderr, listed.stderr
        else:
            assert listed.returncode == 0 and thread_id in listed.stdout, listed.stderr
        shown = turnwire_process("threads", "show", thread_id, "--store", str(backup))
        assert shown.returncode == 2, (sql, shown.stdout)  # bad input: exit 2
        assert "Traceback" not in shown.stderr, shown.stderr
        last = shown.stderr.strip().splitlines()[-1]
        assert last.startswith("error: E_STORE: the store's "), last
        assert thread_id in last and "is damaged" in last
