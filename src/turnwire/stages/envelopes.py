"""Built-in ``render_untrusted_content`` and ``render_trusted_content``."""

from __future__ import annotations

from turnwire.config.options import EnvelopeAttrs
from turnwire.hookspecs import hookimpl
from turnwire.stages._text import escape_attr, neutralise, safe_tag

__all__ = ["envelope", "render_trusted_content", "render_untrusted_content"]


def envelope(prefix: str, content: str, attrs: EnvelopeAttrs) -> str:
    """``<PREFIX_NONCE nonce=".." kind=".." [tool=".."] [modality=".."]>`` body closing-tag."""
    nonce = safe_tag(attrs.nonce)  # tag-safe characters need no attribute escaping
    tag = f"{prefix}_{nonce}"
    head = f'<{tag} nonce="{nonce}" kind="{escape_attr(attrs.kind)}"'
    if attrs.tool:
        head += f' tool="{escape_attr(attrs.tool)}"'
    if attrs.modality:
        head += f' modality="{escape_attr(attrs.modality)}"'
    return f"{head}>\n{neutralise(content, tag)}\n</{tag}>"


@hookimpl(trylast=True)
def render_untrusted_content(content: str, attrs: EnvelopeAttrs) -> str:
    return envelope("untrusted_content", content, attrs)


@hookimpl(trylast=True)
def render_trusted_content(content: str, attrs: EnvelopeAttrs) -> str:
    return envelope("trusted_content", content, attrs)
