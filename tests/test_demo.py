"""``turnwire demo``: a whole conversation, end to end, offline, leaving nothing behind but the
store it was asked to keep. (The README's demo command in a fresh clone, and the commands the
demo prints, run in ``tests/test_install.py``.)"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from turnwire.store.sqlite import SQLiteStore

from .conftest import turnwire_process


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
    # Kept: the store and the files it imported; nothing else beside them (no secret, no image).
    assert sorted(path.name for path in db.parent.iterdir()) == ["files", "threads.db"]
    # The hint runs as printed (from a clone too, and the others: tests/test_install.py).
    see = re.search(r"^  see it:   (.*)$", out, re.M).group(1)
    assert see.endswith(f" threads show {thread_id} --store {db}")
    shown = subprocess.run(
        ["bash", "-c", see], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False
    )
    assert shown.returncode == 0, shown.stderr
    assert "potato.png" in shown.stdout and "Florence" in shown.stdout


def _private_places(tmp_path: Path) -> dict[str, Path]:
    names = ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME")
    places = {name: tmp_path / name.lower() for name in (*names, "TMPDIR")}
    for place in places.values():
        place.mkdir()
    return places


def test_the_demo_leaves_nothing_behind(tmp_path):
    """With a temporary store (the default), the demo deletes everything it made: its store and
    the files imported into it, the image it attached and its envelope secret, and it writes
    nothing into the home, configuration, data, cache or state folders. No secret comes from
    the environment, so the demo must make one of its own."""
    places = _private_places(tmp_path)
    work = tmp_path / "cwd"
    work.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("TURNWIRE_", "XDG_")) and k not in ("OPENAI_API_KEY", "HOME")
    }
    env.update({name: str(place) for name, place in places.items()})
    done = subprocess.run(
        [sys.executable, "-m", "turnwire", "demo"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert (
        "Right now in Florence" in done.stdout
        and "in a temporary store, deleted now" in done.stdout
    )
    assert "keep it:  " in done.stdout and " demo --store demo.db" in done.stdout
    left = {name: sorted(p.name for p in place.rglob("*")) for name, place in places.items()}
    assert left == {name: [] for name in places}, left
    assert list(work.iterdir()) == []
    assert "envelope secret" not in done.stderr  # none was made in a place the user keeps


def test_a_failed_demo_still_deletes_its_temporary_folder(tmp_path, monkeypatch, capsys):
    import tempfile

    import turnwire.demo

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again

    def broken(*args, **kwargs):
        raise RuntimeError("the server went away")

    monkeypatch.setattr(turnwire.demo, "_converse", _after_scratch(broken))
    with pytest.raises(RuntimeError, match="went away"):
        turnwire.demo.run_demo(pace_s=0)
    assert list(tmp_path.iterdir()) == []


def _after_scratch(fail):
    """A stand-in for the conversation that writes into the demo's folder, then fails."""

    def converse(scratch, kept, say, pace_s):
        (scratch / "envelope-secret").write_text("x")
        (scratch / "threads.db").write_bytes(b"")
        fail()

    return converse
