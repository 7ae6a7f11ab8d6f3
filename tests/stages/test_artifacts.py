"""render_artifact_handle_body and render_retrievable_handle_body."""

from __future__ import annotations

from turnwire.config.options import HandleInfo
from turnwire.stages.artifacts import (
    ARTIFACT_TOOLS,
    render_artifact_handle_body,
    render_retrievable_handle_body,
)

HANDLE = HandleInfo(call_id="call_1|fc_9", kind="SpooledArtifact", byte_length=12, line_count=1)


def test_artifact_handle_names_the_call_its_size_and_how_to_read_it():
    text = render_artifact_handle_body(handle=HANDLE)
    lines = text.splitlines()
    assert lines[0].startswith("The tool returned a large artifact")
    assert "- callId: call_1|fc_9" in lines
    assert "- byteLength: 12" in lines and "- lineCount: 1" in lines
    for name, _ in ARTIFACT_TOOLS:
        assert any(line.startswith(f"- {name} — ") for line in lines)
    assert "callId=call_1|fc_9" in text


def test_retrievable_handle_shares_the_layout_with_its_own_opening():
    text = render_retrievable_handle_body(handle=HANDLE)
    assert text.splitlines()[0].startswith("This retrieved record is large")
    assert text.splitlines()[1:] == render_artifact_handle_body(handle=HANDLE).splitlines()[1:]
