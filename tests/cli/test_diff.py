"""``turnwire diff``: whether one request body extends another, and the first difference."""

from __future__ import annotations

import json
from pathlib import Path

from ..conftest import turnwire_process

A = {
    "model": "gpt-5",
    "instructions": "Be brief.",
    "input": [
        {"type": "message", "role": "user", "content": "hi"},
        {"type": "message", "role": "assistant", "content": "hello"},
    ],
    "store": False,
}


def _write(path: Path, body: dict) -> str:
    path.write_text(json.dumps(body, indent=2))
    return str(path)


def test_a_body_that_extends_the_other_exits_0(tmp_path):
    grown = {**A, "input": [*A["input"], {"type": "message", "role": "user", "content": "and?"}]}
    done = turnwire_process(
        "diff", _write(tmp_path / "a.json", A), _write(tmp_path / "b.json", grown)
    )
    assert done.returncode == 0, done.stderr
    assert "extends" in done.stdout and "all 2 input items kept, 1 added" in done.stdout


def test_the_first_changed_item_is_named_with_both_sides(tmp_path):
    changed = {**A, "input": [A["input"][0], {**A["input"][1], "content": "hello!\x1b]0;x\x07"}]}
    done = turnwire_process(
        "diff", _write(tmp_path / "a.json", A), _write(tmp_path / "b.json", changed)
    )
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert lines[0].endswith("first difference at input[1]")
    assert '"content":"hello"' in lines[1] and '"content":"hello!' in lines[2]
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout  # a body is untrusted text


def test_instructions_tools_and_a_dropped_item_are_differences(tmp_path):
    before = _write(tmp_path / "a.json", A)
    for after, where in (
        ({**A, "instructions": "Be long."}, "instructions"),
        ({**A, "tools": [{"type": "function", "name": "f"}]}, "tools"),
        ({**A, "input": A["input"][:1]}, "input[1]"),
        ({**A, "model": "gpt-5-mini"}, "model"),
    ):
        done = turnwire_process("diff", before, _write(tmp_path / "b.json", after))
        assert done.returncode == 1
        assert done.stdout.splitlines()[0].endswith(f"first difference at {where}")


def test_a_file_that_is_no_request_body_is_one_error_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2")
    done = turnwire_process("diff", str(bad), _write(tmp_path / "a.json", A))
    assert done.returncode == 2
    assert done.stderr.startswith("error: E_") and "Traceback" not in done.stderr
    missing = turnwire_process("diff", str(tmp_path / "nope.json"), str(bad))
    assert missing.returncode == 2 and "cannot read" in missing.stderr
