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


def test_check_config_warns_of_replay_settings_that_replay_nothing(tmp_path: Path):
    """Valid settings that replay no reasoning they could: each a warning line, still ``ok``;
    the replay mode alone (its tag implied) warns of nothing."""
    cases = {
        "render: {reasoning_replay: encrypted, replay_compatibility: []}": (
            "render.reasoning_replay is encrypted but render.replay_compatibility is empty"
        ),
        "render: {reasoning_replay: summary-only, replay_compatibility: [other-v1]}": (
            "lists only other-v1: the reasoning turnwire records "
            "(openai-responses-reasoning-v1) is not replayed"
        ),
        "render: {replay_compatibility: [openai-responses-reasoning-v1]}": (
            "but render.reasoning_replay is off: no reasoning is replayed"
        ),
        "render: {reasoning_replay: encrypted}": None,
    }
    for number, (text, warning) in enumerate(cases.items()):
        profile = tmp_path / f"p{number}.yaml"
        profile.write_text(text + "\n")
        done = turnwire_process("check-config", str(profile))
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == f"ok: {profile}"
        lines = done.stderr.splitlines()
        if warning is None:
            assert lines == []
        else:
            assert len(lines) == 1 and lines[0].startswith("turnwire: WARNING: "), lines
            assert warning in lines[0]
