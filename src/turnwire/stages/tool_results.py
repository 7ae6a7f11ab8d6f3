"""Built-in ``render_tool_call_result``: text, artifacts, handles and media results."""

from __future__ import annotations

from typing import Any

from turnwire.config.nonce import EnvelopeNonce
from turnwire.config.options import EnvelopeAttrs, HandleInfo, Warn
from turnwire.hookspecs import hookimpl
from turnwire.model.records import Artifact, Tool, ToolCall
from turnwire.stages.envelopes import envelope
from turnwire.wire import InputContent, InputText

__all__ = ["render_tool_call_result", "shows_inline"]


def shows_inline(artifact: Artifact, tool_call: ToolCall, limit: int) -> bool | None:
    """Whether the model sees the artifact's body (else a handle): the artifact's flag, then
    the call's, then the size against ``limit``; ``None`` when only the unread size decides."""
    if artifact.inline is not None:
        return artifact.inline
    if tool_call.inline is not None:
        return tool_call.inline
    if artifact.text is None:
        return None
    return artifact.byte_length <= limit


def _media_result(
    tool_call: ToolCall, trusted: bool, attrs: EnvelopeAttrs, warn: Warn, stages: Any
) -> tuple[InputContent, ...]:
    assert tool_call.result is not None and tool_call.result.media is not None
    blocks: list[InputContent] = []
    for media in tool_call.result.media:
        blocks.extend(stages.render_media_blocks(media=media) or ())
    sentinel = f"__turnwire_media_boundary_{attrs.nonce}__"
    wrap = stages.render_trusted_content if trusted else stages.render_untrusted_content
    framed = str(wrap(content=sentinel, attrs=attrs) or "")
    if sentinel not in framed:
        warn(
            f"the envelope stage dropped the body of tool {tool_call.tool!r}; the built-in "
            "envelope brackets its media instead, so the trust boundary still holds"
        )
        framed = envelope("trusted_content" if trusted else "untrusted_content", sentinel, attrs)
    opening, _, closing = framed.partition(sentinel)
    return (InputText(text=opening.rstrip()), *blocks, InputText(text=closing.lstrip()))


@hookimpl(trylast=True)
def render_tool_call_result(
    tool_result_inline_max_bytes: int,
    envelope_nonce: EnvelopeNonce,
    warn: Warn,
    stages: Any,
    tool_call: ToolCall,
    tool: Tool | None,
) -> str | tuple[InputContent, ...]:
    # The options first, the call last: see render_timeline_message.
    result = tool_call.result
    if result is None:
        raise ValueError(f"tool call {tool_call.id} has no result to render")
    if tool is None:
        warn(
            f"tool {tool_call.tool!r} is not declared in the thread; its result of call "
            f"{tool_call.id} goes in an untrusted envelope"
        )
    trusted = tool is not None and tool.trusted
    name = tool_call.tool
    nonce = envelope_nonce(tool_call.id)
    wrap = stages.render_trusted_content if trusted else stages.render_untrusted_content
    plain = "trusted-tool-result" if trusted else "tool-result"

    if result.media is not None:
        kind = "trusted-tool-result-media" if trusted else "tool-result-media"
        attrs = EnvelopeAttrs(nonce=nonce, kind=kind, tool=name)
        return _media_result(tool_call, trusted, attrs, warn, stages)
    if result.artifacts is not None:
        body = "\n\n".join(artifact.body for artifact in result.artifacts)
        return str(
            wrap(content=body, attrs=EnvelopeAttrs(nonce=nonce, kind=plain, tool=name)) or ""
        )
    if result.artifact is not None:
        artifact = result.artifact
        if not shows_inline(artifact, tool_call, tool_result_inline_max_bytes):
            handle = HandleInfo(
                call_id=tool_call.id,
                kind=artifact.kind,
                byte_length=artifact.byte_length,
                line_count=artifact.line_count,
            )
            body = str(stages.render_artifact_handle_body(handle=handle) or "")
            attrs = EnvelopeAttrs(nonce=nonce, kind="artifact-handle", tool=name)
            return str(stages.render_untrusted_content(content=body, attrs=attrs) or "")
        return str(
            wrap(content=artifact.body, attrs=EnvelopeAttrs(nonce=nonce, kind=plain, tool=name))
        )
    text = result.text or ""
    wrapped = wrap(content=text, attrs=EnvelopeAttrs(nonce=nonce, kind=plain, tool=name))
    return wrapped if type(wrapped) is str else str(wrapped or "")
