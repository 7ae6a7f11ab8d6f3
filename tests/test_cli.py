"""The `turnwire` command, run as a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from .conftest import REPO_EXAMPLES, SECRET, turnwire_process
from .oracle import validate_body

REPO = Path(__file__).resolve().parents[1]


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return turnwire_process(*args, env=env)


def test_render_prints_the_body_and_exits_zero():
    done = run("render", str(REPO_EXAMPLES / "weather.yaml"))
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    validate_body(body)
    assert body["model"] == "gpt-5" and body["store"] is False
    assert body["input"][0]["role"] == "user"


def test_model_flag_and_config_profiles(tmp_path):
    profile = tmp_path / "p.yaml"
    profile.write_text(
        "render: {system_prompt_channel: developer-item}\nrequest: {max_output_tokens: 64}\n"
    )
    done = run(
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


def test_a_bad_thread_exits_2_with_code_and_path(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "version: 1\nmessages:\n- {id: u1, role: robot, content: hi, "
        "created_at: '2026-01-01T00:00:00Z'}\n"
    )
    done = run("render", str(bad), "--model", "m")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.strip().splitlines()[-1] == (
        "error: E_THREAD_FILE_INVALID: $.messages[0].role: Invalid enum value 'robot'"
    )


def test_a_bad_profile_exits_2_naming_the_path(tmp_path):
    profile = tmp_path / "p.yaml"
    profile.write_text("request: {max_output_tokens: 8}\n")
    done = run("render", str(REPO_EXAMPLES / "weather.yaml"), "--config", str(profile))
    assert done.returncode == 2
    assert done.stderr.startswith(
        "error: E_INVALID_OPENAI_RESPONSES_OPTIONS: $.request.max_output_tokens:"
    )


def test_a_preflight_violation_exits_2_naming_the_item(tmp_path):
    thread = tmp_path / "t.yaml"
    thread.write_text(
        "version: 1\nmodel: m\nmessages:\n- {id: u1, role: user, content: hi, "
        "created_at: '2026-01-01T00:00:00Z'}\ntool_calls:\n- {id: c1, tool: t, "
        "created_at: '2026-01-01T00:00:01Z'}\n"
    )
    done = run("render", str(thread))
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
    done = run("render", str(thread))
    assert done.returncode == 2 and "--model" in done.stderr


def test_check_config(tmp_path):
    good = REPO / "config" / "default.yaml"
    assert run("check-config", str(good)).returncode == 0
    bad = tmp_path / "bad.yaml"
    bad.write_text("render: {bucket_order: [memories]}\n")
    done = run("check-config", str(bad))
    assert done.returncode == 2 and "$.render.bucket_order" in done.stderr


def test_the_envelope_secret_never_reaches_the_output():
    done = run("render", str(REPO_EXAMPLES / "weather.yaml"), "-v")
    assert SECRET not in done.stdout and SECRET not in done.stderr


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


def test_version():
    done = run("--version")
    assert done.returncode == 0 and done.stdout.strip() == "turnwire 0.1.0"


def test_set_overrides_one_setting_at_a_time():
    done = run(
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
    bad = run("render", str(REPO_EXAMPLES / "weather.yaml"), "--set", "request.max_output_tokens=8")
    assert bad.returncode == 2 and "$.request.max_output_tokens" in bad.stderr
    malformed = run("render", str(REPO_EXAMPLES / "weather.yaml"), "--set", "temperature")
    assert malformed.returncode == 2 and "KEY=VALUE" in malformed.stderr


def test_context_values_nothing_reads_are_reported(tmp_path):
    thread = tmp_path / "t.yaml"
    thread.write_text(
        "version: 1\nmodel: m\nsystem_prompt: 'Help {user}.'\nmessages:\n- {id: u1, role: user, "
        "content: hi, created_at: '2026-01-01T00:00:00Z'}\n"
    )
    unread = run("render", str(thread), "--render-context", "user=Ana")
    assert unread.returncode == 0, unread.stderr
    assert "--render-context is not used: render.system_prompt_template is off" in unread.stderr
    assert "Help {user}." in unread.stdout
    used = run(
        "render",
        str(thread),
        "--render-context",
        "user=Ana",
        "--set",
        "render.system_prompt_template=true",
    )
    assert used.returncode == 0 and "--render-context" not in used.stderr, used.stderr
    assert "Help Ana." in used.stdout


def test_run_reports_its_own_usage_before_the_configuration(tmp_path):
    bad_config = ("--set", "client.max_stream_bytes=0")
    both = run("run", "--thread", "thr_x", "--save", *bad_config)
    assert both.returncode == 1
    assert (
        both.stderr.strip()
        .splitlines()[-1]
        .endswith("--thread runs a stored thread: give no THREAD file and no --save")
    )
    nothing = run("run", "--render-context", "a=1", *bad_config)
    assert "give a THREAD file, or --thread ID" in nothing.stderr
    assert "--render-context is not used" not in nothing.stderr
