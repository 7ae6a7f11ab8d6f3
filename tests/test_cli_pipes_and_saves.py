"""Output piped into a reader that stops early ends quietly, and a saved thread file is on disk
before its name points at it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import turnwire
from turnwire.files.thread_file import save_thread

from .conftest import thread, user


def test_output_into_a_pipe_nobody_reads_ends_without_a_traceback(tmp_path: Path) -> None:
    """The reader is gone before the command writes (``| head`` that already exited): every
    write meets a closed pipe."""
    for arguments in (["schema", "thread"], ["schema", "config"]):
        child = subprocess.Popen(
            [sys.executable, "-m", "turnwire", *arguments],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=tmp_path,
        )
        assert child.stdout is not None and child.stderr is not None
        child.stdout.close()  # the reader goes away first
        with child.stderr:
            error = child.stderr.read().decode()
        code = child.wait(timeout=60)
        assert "Traceback" not in error and "BrokenPipeError" not in error, error
        assert code == 141


def test_a_save_syncs_the_file_and_its_folder(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    synced: list[str] = []
    real = os.fsync

    def fsync(descriptor: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{descriptor}"))
        real(descriptor)

    monkeypatch.setattr(os, "fsync", fsync)
    target = tmp_path / "t.json"
    save_thread(thread(model="gpt-5", messages=[user()]), target)
    assert any(Path(name).name.startswith(".t.json.") for name in synced)  # the new file
    assert str(tmp_path) in synced  # the folder, after the rename
    assert turnwire.load_thread(target).messages[0].content == "hi"
