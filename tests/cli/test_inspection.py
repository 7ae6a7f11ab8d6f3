"""The commands that look at an installation rather than a thread: ``check-config`` validates and
prints the merged settings without secrets."""

from __future__ import annotations

from pathlib import Path

import yaml

from ..conftest import REPO, turnwire_process


def test_check_config(tmp_path):
    good = REPO / "config" / "default.yaml"
    assert turnwire_process("check-config", str(good)).returncode == 0
    bad = tmp_path / "bad.yaml"
    bad.write_text("render: {bucket_order: [memories]}\n")
    done = turnwire_process("check-config", str(bad))
    assert done.returncode == 2 and "$.render.bucket_order" in done.stderr


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


def test_check_config_print_hides_a_key_copied_into_an_ordinary_field(tmp_path: Path):
    profile = tmp_path / "p.yaml"
    profile.write_text("request: {metadata: {copied: '${OPENAI_API_KEY}'}}\n")
    done = turnwire_process(
        "check-config", str(profile), "--print", env={"OPENAI_API_KEY": "sk-live-0123456789"}
    )
    assert done.returncode == 0, done.stderr
    assert yaml.safe_load(done.stdout)["request"]["metadata"] == {"copied": "[redacted]"}
    assert "0123456789" not in done.stdout + done.stderr
