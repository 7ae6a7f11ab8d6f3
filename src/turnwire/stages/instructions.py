"""Built-in ``render_standing_instructions``."""

from __future__ import annotations

from turnwire.hookspecs import hookimpl

__all__ = ["render_standing_instructions"]


@hookimpl(trylast=True)
def render_standing_instructions(standing_instructions: tuple[str, ...]) -> str:
    parts = [text for text in standing_instructions if text]
    if not parts:
        return ""
    body = "\n\n".join(parts)
    return f'<system_instructions kind="developer-rules">\n{body}\n</system_instructions>'
