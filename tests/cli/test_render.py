"""``turnwire render`` and ``turnwire fingerprint`` as processes: the body printed, never the
envelope secret, a thread read from standard input, and byte for byte the body ``turnwire run``
sends (tool declarations, the artifact tools included) for every example and golden thread."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ..client.server import Reply, ScriptedServer, recorded
from ..conftest import GOLDEN, REPLAY, REPO_EXAMPLES, SECRET, turnwire_process
from ..oracle import validate_body, validate_open_responses
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


def test_render_prints_the_body_and_exits_zero():
    done = turnwire_process("render", str(REPO_EXAMPLES / "weather.yaml"))
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    validate_body(body)
    assert body["model"] == "gpt-5" and body["store"] is False
    assert body["input"][0]["role"] == "user"


def test_the_envelope_secret_never_reaches_the_output():
    done = turnwire_process("render", str(REPO_EXAMPLES / "weather.yaml"), "-v")
    assert SECRET not in done.stdout and SECRET not in done.stderr


WEATHER = REPO_EXAMPLES / "weather.yaml"


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


THREADS = sorted(REPO_EXAMPLES.glob("*.yaml")) + sorted(
    p for p in GOLDEN.glob("*.yaml") if not p.name.endswith(".config.yaml")
)


TEXT = recorded("text_simple_gpt-4o-mini.sse")


@pytest.mark.parametrize("thread", THREADS, ids=[f"{p.parent.name}/{p.stem}" for p in THREADS])
def test_render_prints_what_run_sends(tmp_path, thread):
    base = tmp_path / "base.yaml"
    base.write_text("plugins: {load_entrypoints: false}\nclient: {retry: {max_retries: 0}}\n")
    configs = ["--config", str(base)]
    own = thread.with_suffix(".config.yaml")
    if own.exists():
        configs += ["--config", str(own)]
    if thread.parent == REPO_EXAMPLES:  # the example names its handler: the profile allows it
        configs += ["--profile", "examples"]
    rendered = turnwire_process("render", str(thread), *configs)
    assert rendered.returncode == 0, rendered.stderr
    with ScriptedServer([Reply.sse(TEXT)]) as server:
        ran = turnwire_process(
            "run", str(thread), "--base-url", server.base_url, "--once", *configs
        )
    assert ran.returncode == 0, ran.stderr
    sent = server.requests[0].body
    assert rendered.stdout.encode() == sent + b"\n"
    validate_body(server.requests[0].json)  # rendered out of process: check it here
    validate_open_responses(server.requests[0].json)


def test_the_artifact_tools_are_in_what_render_prints():
    """The thread whose log result is shown as a handle: render declares the artifact tools."""
    import json

    thread = GOLDEN / "tool_results.yaml"
    done = turnwire_process(
        "render", str(thread), "--config", str(thread.with_suffix(".config.yaml"))
    )
    assert done.returncode == 0, done.stderr
    names = [tool["name"] for tool in json.loads(done.stdout)["tools"]]
    assert "artifact_head" in names and "artifact_grep" in names
