"""Command-line habits: logging flags anywhere, stdin/stdout, JSON failures, help, profiles."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from turnwire.cli.main import _parser

from .conftest import REPO_EXAMPLES, SECRET, turnwire_process
from .rendering.test_fingerprints import IMPORTED

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


def test_render_reads_stdin(tmp_path: Path):
    from_file = turnwire_process("render", str(WEATHER))
    environment = {"TURNWIRE_ENVELOPE_SECRET": SECRET}
    piped = subprocess.run(
        [sys.executable, "-m", "turnwire", "render", "-"],
        input=WEATHER.read_bytes(),
        capture_output=True,
        cwd=REPO_EXAMPLES,  # relative pointers resolve against the working folder
        env={**_env(), **environment},
        timeout=60,
        check=False,
    )
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout.decode() == from_file.stdout


def _env() -> dict[str, str]:
    import os

    return {key: value for key, value in os.environ.items() if key != "OPENAI_API_KEY"}


def test_export_to_stdout_and_import_from_stdin(tmp_path: Path):
    db = tmp_path / "threads.db"
    imported = turnwire_process("threads", "import", str(WEATHER), "--store", str(db), "--id", "w")
    assert imported.returncode == 0, imported.stderr
    exported = turnwire_process("threads", "export", "w", "-", "--store", str(db))
    assert exported.returncode == 0, exported.stderr
    shown = turnwire_process("threads", "show", "w", "--store", str(db))
    assert json.loads(exported.stdout) == json.loads(shown.stdout)
    assert not (tmp_path / "-").exists()
    again = subprocess.run(
        [sys.executable, "-m", "turnwire", "threads", "import", "-", "--store", str(db), "--id", "w2"],
        input=exported.stdout.encode(),
        capture_output=True,
        env=_env(),
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert again.returncode == 0, again.stderr
    copy = turnwire_process("threads", "show", "w2", "--store", str(db))
    assert _without_paths(json.loads(copy.stdout)) == _without_paths(json.loads(shown.stdout))


def _without_paths(thread: dict) -> dict:
    """A thread file's data with its attachment pointers blanked (imports copy the files)."""
    for message in thread.get("messages", []):
        for attachment in message.get("attachments", []):
            assert Path(attachment.pop("path")).is_file()
    return thread


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


def test_check_config_print_shows_the_merged_settings_without_secrets(tmp_path: Path):
    profile = tmp_path / "p.yaml"
    profile.write_text(
        "request: {temperature: 0.3}\n"
        "client: {headers: {Authorization: Bearer sk-hidden-123, X-Team: blue}}\n"
    )
    done = turnwire_process("check-config", str(profile), "--print")
    assert done.returncode == 0, done.stderr
    merged = yaml.safe_load(done.stdout)
    assert merged["request"]["temperature"] == 0.3
    assert merged["render"]["bucket_order"][-1] == "timeline"  # from the packaged default
    assert merged["client"]["headers"] == {"Authorization": "[redacted]", "X-Team": "blue"}
    assert "sk-hidden" not in done.stdout + done.stderr
    assert done.stderr.strip() == f"ok: {profile}"


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


def test_db_in_a_missing_folder_is_an_error_not_a_new_store(tmp_path: Path):
    target = tmp_path / "no-such-folder" / "threads.db"
    done = turnwire_process("threads", "list", "--store", str(target))
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"error: E_STORE: the store's folder {target.parent} does not exist; create it first"
    )
    assert not target.parent.exists()


@pytest.mark.parametrize("name", ["production", "local-dev", "strict-media"])
def test_shipped_profiles_by_name(name: str):
    done = turnwire_process("check-config", "--profile", name, "--print")
    assert done.returncode == 0, done.stderr
    expected = yaml.safe_load((REPO_EXAMPLES.parent / "config" / f"{name}.yaml").read_text())
    merged = yaml.safe_load(done.stdout)
    for section, values in expected.items():
        for key, value in (values or {}).items():
            if not isinstance(value, dict) and "${" not in str(value):
                assert merged[section][key] == (list(value) if isinstance(value, tuple) else value)


def test_unknown_profile_names_the_known_ones():
    done = turnwire_process("render", str(WEATHER), "--profile", "prod")
    assert done.returncode == 2
    assert "--profile 'prod': no shipped profile has that name (known: " in done.stderr
    assert "production" in done.stderr


def test_context_guard_without_the_token_counter_is_a_clear_error(tmp_path: Path):
    profile = tmp_path / "guard.yaml"
    profile.write_text("context: {token_encoding: o200k_base, context_window: 1000}\n")
    script = (
        "import sys; sys.modules['toktok'] = None\n"
        "from turnwire.cli.main import main\n"
        f"sys.exit(main(['check-config', {str(profile)!r}]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "error: E_INVALID_OPENAI_RESPONSES_OPTIONS: $.context.token_encoding: the "
        "context-window guard needs it: install the optional token counter: "
        "pip install 'turnwire[tokens]' (toktok-rs)"
    )


def test_set_values_are_parsed_within_the_configuration_limits():
    huge = turnwire_process(
        "render", str(WEATHER), "--set", "request.max_output_tokens=" + "9" * 5000
    )
    assert huge.returncode == 2
    assert huge.stderr.strip().splitlines() == [
        "error: E_INVALID_OPENAI_RESPONSES_OPTIONS: configuration file --set "
        "request.max_output_tokens, line 1, column 1: an integer of 5000 characters is outside "
        "the 64-bit range"
    ]
    broken = turnwire_process("render", str(WEATHER), "--set", "request.temperature=[")
    assert broken.returncode == 2 and len(broken.stderr.strip().splitlines()) == 1
    fine = turnwire_process("render", str(WEATHER), "--set", "request.temperature=0.3")
    assert json.loads(fine.stdout)["temperature"] == 0.3
