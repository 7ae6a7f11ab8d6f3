"""turnwire-markdown-context: memories and first-party documents as Markdown sections.

Some models follow Markdown structure better than XML-like tags. This plugin replaces two
stages: ``render_memories`` becomes a bulleted section, and ``render_first_party_retrievables``
becomes one sub-section per document with its body as a block quote. Every body line is
indented or quoted, so a record cannot start a heading of its own, and bodies are still
neutralised against developer-rules and envelope tags. Third-party documents keep their
untrusted envelopes: the layout changes, the trust boundary does not.

Settings (``plugins.settings.markdown_context``): see :class:`MarkdownSettings`.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from turnwire import Memory, Retrievable, hookimpl
from turnwire.text import iso, neutralise, retrievable_body

__all__ = ["MarkdownContextPlugin", "MarkdownSettings", "configure", "settings_struct"]


class MarkdownSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Layout of the two sections.

    :ivar heading_level: the level of the section headings (sub-sections are one deeper).
    :ivar memories_title: the heading of the memories section.
    :ivar documents_title: the heading of the first-party documents section.
    :ivar show_metadata: print confidence, dates, kinds and scores beside each record.
    """

    heading_level: Annotated[int, msgspec.Meta(ge=1, le=5)] = 2
    memories_title: str = "What you remember"
    documents_title: str = "Reference documents"
    show_metadata: bool = True


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line if line else prefix.rstrip() for line in text.split("\n"))


class MarkdownContextPlugin:
    """The registered plugin: one instance per plugin manager, holding its settings."""

    def __init__(self, settings: MarkdownSettings) -> None:
        self.settings = settings
        self.heading = "#" * settings.heading_level

    @hookimpl(tryfirst=True)
    def render_memories(self, memories: tuple[Memory, ...]) -> str:
        if not memories:
            return ""
        lines = [f"{self.heading} {self.settings.memories_title}", ""]
        for memory in memories:
            body = neutralise(memory.content)
            first, *rest = body.split("\n")
            note = ""
            if self.settings.show_metadata:
                facts = [f"confidence {memory.confidence:.2f}"]
                if memory.created_at is not None:
                    facts.append(f"since {iso(memory.created_at)[:10]}")
                note = f" _({', '.join(facts)})_"
            lines.append(f"- {first}{note}")
            lines.extend(_indent(line, "  ") for line in rest)
        return "\n".join(lines)

    @hookimpl(tryfirst=True)
    def render_first_party_retrievables(
        self, retrievables: tuple[Retrievable, ...], stages: Any
    ) -> str:
        if not retrievables:
            return ""
        parts = [f"{self.heading} {self.settings.documents_title}"]
        for record in retrievables:
            title = record.source or record.id
            facts = []
            if self.settings.show_metadata:
                if record.kind:
                    facts.append(record.kind)
                if record.score is not None:
                    facts.append(f"relevance {record.score:.2f}")
            suffix = f" ({', '.join(facts)})" if facts else ""
            parts.append(
                f"{self.heading}# {neutralise(title)}{suffix}\n\n"
                f"{_indent(neutralise(retrievable_body(record, stages)), '> ')}"
            )
        return "\n\n".join(parts)


settings_struct = MarkdownSettings


def configure(settings: MarkdownSettings | None) -> MarkdownContextPlugin:
    """Build the plugin from its validated settings (turnwire calls this at load time)."""
    return MarkdownContextPlugin(settings or MarkdownSettings())
