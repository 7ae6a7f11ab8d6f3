"""`turnwire render` prints byte for byte the body `turnwire run` sends (tool declarations, the
artifact tools included), for every example and golden thread."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..conftest import REPO_EXAMPLES, turnwire_process
from ..oracle import validate_body, validate_open_responses
from .server import Reply, ScriptedServer, recorded

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
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
