"""What the commands make of their shared options: the model, configuration profiles (by path or by
name), ``--set`` within the configuration's limits, the render context, the store, the context
guard, and the envelope secret made when none is set."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ..conftest import REPO, REPO_EXAMPLES, turnwire_process
from ..oracle import validate_body


def test_model_flag_and_config_profiles(tmp_path):
    profile = tmp_path / "p.yaml"
    profile.write_text(
        "render: {system_prompt_channel: developer-item}\nrequest: {max_output_tokens: 64}\n"
    )
    done = turnwire_process(
        "render",
        str(REPO_EXAMPLES / "weather.yaml"),
        "--config",
        str(profile),
        "--model",
        "gpt-5-mini",
    )
    body = json.loads(done.stdout)
    validate_body(body)
    assert body["model"] == "gpt-5-mini" and body["max_output_tokens"] == 64
    assert body["input"][0]["role"] == "developer" and "instructions" not in body


def test_a_bad_profile_exits_2_naming_the_path(tmp_path):
    profile = tmp_path / "p.yaml"
    profile.write_text("request: {max_output_tokens: 8}\n")
    done = turnwire_process("render", str(REPO_EXAMPLES / "weather.yaml"), "--config", str(profile))
    assert done.returncode == 2
    assert done.stderr.startswith(
        "error: E_INVALID_OPENAI_RESPONSES_OPTIONS: $.request.max_output_tokens:"
    )


def test_without_a_secret_render_creates_one_and_says_where(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TURNWIRE_ENVELOPE_SECRET"}
    env["XDG_CONFIG_HOME"] = str(tmp_path)  # never the real home
    done = subprocess.run(
        [sys.executable, "-m", "turnwire", "-v", "render", str(REPO_EXAMPLES / "weather.yaml")],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0
    secret_file = tmp_path / "turnwire" / "envelope-secret"
    assert f"created a new envelope secret at {secret_file}" in done.stderr
    secret = secret_file.read_text().strip()
    assert secret not in done.stdout and secret not in done.stderr


def test_set_overrides_one_setting_at_a_time():
    done = turnwire_process(
        "render",
        str(REPO_EXAMPLES / "weather.yaml"),
        "--set",
        "request.max_output_tokens=64",
        "--set",
        "render.system_prompt_channel=system-item",
        "--set",
        "request.metadata.team=core",
    )
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert body["max_output_tokens"] == 64 and body["metadata"] == {"team": "core"}
    assert body["input"][0]["role"] == "system"
    bad = turnwire_process(
        "render", str(REPO_EXAMPLES / "weather.yaml"), "--set", "request.max_output_tokens=8"
    )
    assert bad.returncode == 2 and "$.request.max_output_tokens" in bad.stderr
    malformed = turnwire_process(
        "render", str(REPO_EXAMPLES / "weather.yaml"), "--set", "temperature"
    )
    assert malformed.returncode == 2 and "KEY=VALUE" in malformed.stderr


def test_context_values_nothing_reads_are_reported(tmp_path):
    thread = tmp_path / "t.yaml"
    thread.write_text(
        "version: 1\nmodel: m\nsystem_prompt: 'Help {user}.'\nmessages:\n- {id: u1, role: user, "
        "content: hi, created_at: '2026-01-01T00:00:00Z'}\n"
    )
    unread = turnwire_process("render", str(thread), "--render-context", "user=Ana")
    assert unread.returncode == 0, unread.stderr
    assert "--render-context is not used: render.system_prompt_template is off" in unread.stderr
    assert "Help {user}." in unread.stdout
    used = turnwire_process(
        "render",
        str(thread),
        "--render-context",
        "user=Ana",
        "--set",
        "render.system_prompt_template=true",
    )
    assert used.returncode == 0 and "--render-context" not in used.stderr, used.stderr
    assert "Help Ana." in used.stdout


WEATHER = REPO_EXAMPLES / "weather.yaml"


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
        "context-window guard needs it: install the optional token counter (toktok-rs), the "
        "`tokens` extra: `uv sync --extra tokens` in a clone, or "
        "`pip install 'dist/turnwire-<version>-py3-none-any.whl[tokens]'`"
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
