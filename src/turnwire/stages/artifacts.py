"""Built-in ``render_artifact_handle_body`` and ``render_retrievable_handle_body``."""

from __future__ import annotations

from turnwire.config.options import HandleInfo
from turnwire.hookspecs import hookimpl

__all__ = [
    "ARTIFACT_TOOLS",
    "handle_body",
    "render_artifact_handle_body",
    "render_retrievable_handle_body",
]

ARTIFACT_TOOLS: tuple[tuple[str, str], ...] = (
    ("artifact_head", "the first n lines"),
    ("artifact_tail", "the last n lines"),
    ("artifact_grep", "the lines matching a pattern"),
    ("artifact_cat", "a range of lines"),
    ("artifact_byte_length", "the size in bytes"),
    ("artifact_line_count", "the number of lines"),
    ("artifact_estimate_tokens", "an estimate of its size in tokens"),
)


def handle_body(opening: str, handle: HandleInfo) -> str:
    """The handle layout shared by artifacts and retrieved records."""
    lines = [
        opening,
        "",
        "What is known about it:",
        f"- callId: {handle.call_id}",
        f"- kind: {handle.kind}",
        f"- byteLength: {handle.byte_length}",
        f"- lineCount: {handle.line_count}",
        "",
        f"To read parts of it in this turn, call one of these tools with callId={handle.call_id}:",
        *(f"- {name} — {what}" for name, what in ARTIFACT_TOOLS),
        "",
        "Ask as often as you need; the body is not repeated anywhere else in this conversation.",
    ]
    return "\n".join(lines)


@hookimpl(trylast=True)
def render_artifact_handle_body(handle: HandleInfo) -> str:
    return handle_body(
        "The tool returned a large artifact; its body was left out to save context.", handle
    )


@hookimpl(trylast=True)
def render_retrievable_handle_body(handle: HandleInfo) -> str:
    return handle_body(
        "This retrieved record is large; its body was left out to save context.", handle
    )
