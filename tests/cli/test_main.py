"""The ``turnwire`` command's parser and ``main``: exit codes with one error line (or JSON), logging
flags anywhere, help text for every option, the version, and output into a closed pipe."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import yaml

from turnwire.cli.main import _parser

from ..conftest import REPO_EXAMPLES, turnwire_process
from ..rendering.test_fingerprints import IMPORTED


def test_a_bad_thread_exits_2_with_code_and_path(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "version: 1\nmessages:\n- {id: u1, role: robot, content: hi, "
        "created_at: '2026-01-01T00:00:00Z'}\n"
    )
    done = turnwire_process("render", str(bad), "--model", "m")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.strip().splitlines()[-1] == (
        "error: E_THREAD_FILE_INVALID: $.messages[0].role: Invalid enum value 'robot'"
    )


def test_a_preflight_violation_exits_2_naming_the_item(tmp_path):
    thread = tmp_path / "t.yaml"
    thread.write_text(
        "version: 1\nmodel: m\nmessages:\n- {id: u1, role: user, content: hi, "
        "created_at: '2026-01-01T00:00:00Z'}\ntool_calls:\n- {id: c1, tool: t, "
        "created_at: '2026-01-01T00:00:01Z'}\n"
    )
    done = turnwire_process("render", str(thread))
    assert done.returncode == 2
    # a call with no result yet (recorded by run --once): named where the thread holds it
    assert done.stderr.startswith(
        "error: E_OPENAI_RESPONSES_PREFLIGHT: $.tool_calls[0]: tool call 'c1' (t) has no result"
    )
    assert "call-output-pairing" in done.stderr


def test_no_model_anywhere_is_a_clear_error(tmp_path):
    thread = tmp_path / "t.yaml"
    thread.write_text(
        "version: 1\nmessages:\n- {id: u1, role: user, content: hi, "
        "created_at: '2026-01-01T00:00:00Z'}\n"
    )
    done = turnwire_process("render", str(thread))
    assert done.returncode == 2 and "--model" in done.stderr


def test_version():
    done = turnwire_process("--version")
    assert done.returncode == 0 and done.stdout.strip() == "turnwire 0.1.0"


WEATHER = REPO_EXAMPLES / "weather.yaml"


def _imported(tmp_path: Path) -> tuple[Path, Path]:
    path = tmp_path / "imported.yaml"
    path.write_text(yaml.safe_dump(IMPORTED))
    profile = tmp_path / "replay.yaml"
    profile.write_text(
        "render: {reasoning_replay: encrypted, replay_compatibility: "
        "[openai-responses-reasoning-v1]}\n"
    )
    return path, profile


def test_render_warnings_are_one_line_by_default_all_with_v_none_with_quiet(tmp_path: Path):
    path, profile = _imported(tmp_path)
    plain = turnwire_process("render", str(path), "--config", str(profile))
    assert plain.returncode == 0
    lines = plain.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("turnwire: warning: dropping the reasoning item of thought rs_1")
    assert lines[0].endswith("; -v shows each")
    for flags in (["-v", "render"], ["render", "-v"], ["render", "--verbose"]):
        loud = turnwire_process(*flags, str(path), "--config", str(profile))
        assert loud.returncode == 0
        assert "turnwire: WARNING: dropping the reasoning item of thought rs_1" in loud.stderr
        assert "-v shows each" not in loud.stderr
    for flags in (["-q", "render"], ["render", "--quiet"]):
        quiet = turnwire_process(*flags, str(path), "--config", str(profile))
        assert quiet.returncode == 0 and quiet.stderr == ""
        assert quiet.stdout == plain.stdout


def test_verbose_and_quiet_exclude_each_other():
    done = turnwire_process("render", "-v", "-q", str(WEATHER))
    assert done.returncode == 2
    assert "not allowed with argument" in done.stderr


def test_json_failures_print_a_json_error_on_stdout_too(tmp_path: Path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nmessages: [{id: u1, role: system, content: x}]\n")
    done = turnwire_process("run", str(bad), "--base-url", "http://127.0.0.1:9/v1", "--json")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1].startswith("error: E_THREAD_FILE_INVALID: ")
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "E_THREAD_FILE_INVALID"
    assert error["path"] == "$.messages[0].role"
    assert error["message"] in done.stderr
    listing = turnwire_process("plugins", "--json", "--config", str(tmp_path / "missing.yaml"))
    assert listing.returncode == 2
    assert json.loads(listing.stdout)["error"]["code"] == "E_INVALID_OPENAI_RESPONSES_OPTIONS"


def _actions(parser: argparse.ArgumentParser, where: str):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _actions(sub, f"{where} {name}")
        else:
            yield where, action


def test_every_option_and_argument_has_help_text():
    seen = list(_actions(_parser(), "turnwire"))
    assert len(seen) > 60
    missing = [
        f"{where}: {action.option_strings or action.dest}"
        for where, action in seen
        if not action.help or action.help == argparse.SUPPRESS
    ]
    assert missing == []


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
