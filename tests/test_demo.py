"""``turnwire demo``: a whole conversation, end to end, offline, and as the README shows it in a
fresh clone."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from turnwire.store.sqlite import SQLiteStore

from .conftest import REPO, turnwire_process


def test_the_demo_runs_end_to_end_offline(tmp_path):
    db = tmp_path / "demo" / "threads.db"
    missing = turnwire_process(
        "demo", "--store", str(db), cwd=tmp_path
    )  # as every --db: no new folder
    assert missing.returncode == 2 and "does not exist; create it first" in missing.stderr
    assert not db.parent.exists()
    db.parent.mkdir()
    done = turnwire_process("demo", "--store", str(db), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "RECORDED" in out
    assert "[tool] weather" in out and "Florence" in out
    assert "replaying 1 reasoning item(s) with encrypted_content" in out
    assert "Right now in Florence, Italy" in out
    assert "image of a potato" in out and "1 image(s) as input_image" in out
    thread_id = re.search(r"Stored thread (thr_\w+)", out).group(1)
    with SQLiteStore(db) as store:
        assert len(store.turns(thread_id)) == 4
        thread = store.export_thread(thread_id)
    assert [t.payload.paired_item_id[:3] for t in thread.thoughts] == ["fc_", "msg"]
    assert thread.tool_calls[0].result.text.startswith("40C")


def test_the_readme_demo_command_in_a_fresh_clone(tmp_path):
    """The README's first command, as written, in a fresh clone with its own environment."""
    clone = tmp_path / "clone"
    done = subprocess.run(
        ["git", "clone", "--quiet", str(REPO), str(clone)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    demo = (REPO / "README.md").read_text().splitlines()[3]
    venv_bin = str(Path(sys.prefix) / "bin")
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("VIRTUAL_ENV", "PYTHONPATH", "UV_PROJECT_ENVIRONMENT")
    }
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p != venv_bin)
    done = subprocess.run(
        ["bash", "-c", demo],
        cwd=clone,
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Right now in Florence" in done.stdout and "Stored thread thr_" in done.stdout
    assert (clone / ".venv").is_dir()
