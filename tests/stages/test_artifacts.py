"""render_artifact_handle_body and render_retrievable_handle_body."""

from __future__ import annotations

from types import SimpleNamespace

from turnwire import hookimpl
from turnwire.config.options import HandleInfo
from turnwire.stages.artifacts import (
    ARTIFACT_TOOLS,
    render_artifact_handle_body,
    render_retrievable_handle_body,
)

from ..conftest import at, render_body, thread, user

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


def test_hook_render_retrievable_handle_body():
    """A plugin writes the body of a retrieved record shown as a handle, given its size."""
    seen = []

    @hookimpl
    def render_retrievable_handle_body(handle):
        seen.append((handle.call_id, handle.byte_length))
        return f"HANDLE {handle.call_id}: {handle.byte_length} bytes"

    t = thread(
        messages=[user()],
        retrievables=[
            {
                "id": "r1",
                "trust_tier": "first-party",
                "artifact": {"text": "x" * 10, "inline": False},
            }
        ],
    )
    plugin = SimpleNamespace(render_retrievable_handle_body=render_retrievable_handle_body)
    body = render_body(t, extra_plugins=[plugin])
    assert seen and seen[0][1] == 10
    assert f"HANDLE {seen[0][0]}: 10 bytes" in body["instructions"]


def test_hook_render_artifact_handle_body():
    """A plugin writes the body of a tool result shown as a handle, given the call and size."""

    @hookimpl
    def render_artifact_handle_body(handle):
        return f"HANDLE {handle.call_id}: {handle.byte_length} bytes, {handle.line_count} lines"

    t = thread(
        messages=[user()],
        tools=[{"name": "read_log"}],
        tool_calls=[
            {
                "id": "call_log",
                "tool": "read_log",
                "created_at": at(1),
                "result": {"artifact": {"text": "one\ntwo\n", "inline": False}},
            }
        ],
    )
    plugin = SimpleNamespace(render_artifact_handle_body=render_artifact_handle_body)
    output = render_body(t, extra_plugins=[plugin])["input"][2]["output"]
    assert "HANDLE call_log: 8 bytes, 2 lines" in output
