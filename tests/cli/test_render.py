"""``turnwire render`` and ``turnwire fingerprint`` as processes."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from ..conftest import REPLAY, turnwire_process
from ..rendering.test_fingerprints import IMPORTED, _types


def test_fingerprint_command_stamps_in_place(tmp_path: Path) -> None:
    path = tmp_path / "imported.yaml"
    path.write_text(yaml.safe_dump(IMPORTED))
    profile = tmp_path / "replay.yaml"
    profile.write_text(yaml.safe_dump(REPLAY))
    done = turnwire_process("fingerprint", str(path), "--config", str(profile))
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == f"stamped 1 of 1 thoughts ({path})"
    saved = yaml.safe_load(path.read_text())
    assert len(saved["thoughts"][0]["payload"]["prefix_fingerprint"]) == 64
    rendered = turnwire_process("render", str(path), "--config", str(profile))
    assert rendered.returncode == 0, rendered.stderr
    assert _types(json.loads(rendered.stdout))[1] == "reasoning"
    assert rendered.stderr == ""


def test_fingerprint_command_to_stdout_leaves_the_file(tmp_path: Path) -> None:
    path = tmp_path / "imported.json"
    path.write_text(json.dumps(IMPORTED))
    before = path.read_bytes()
    done = turnwire_process("fingerprint", str(path), "-o", "-")
    assert done.returncode == 0, done.stderr
    assert path.read_bytes() == before
    assert json.loads(done.stdout)["thoughts"][0]["id"] == "rs_1"
    assert "not stamped: rs_1: render.reasoning_replay is 'off'" in done.stderr
