"""turnwire-markdown-context: memories and first-party documents as Markdown sections.

Some models follow Markdown structure better than XML-like tags. This plugin replaces two
stages: ``render_memories`` becomes a bulleted section, and ``render_first_party_retrievables``
becomes one sub-section per document with its body as a block quote. Every body line is
indented or quoted (lines split wherever Markdown or a reader could break one: ``\r``,
``\u2028``...), so a record cannot start a heading of its own; every field printed inline (a
document's source or id, its kind) is flattened to one line; and all of it is neutralised
against developer-rules and envelope tags. Third-party documents keep their untrusted
envelopes: the layout changes, the trust boundary does not.

Settings (``plugins.settings.markdown_context``): see :class:`MarkdownSettings`.
"""

from __future__ import annotations

import re
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


# Every line boundary str.splitlines knows; CommonMark alone ends lines at \r too.
_LINE_BREAK = re.compile("\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]+")


def _lines(text: str) -> list[str]:
    return _LINE_BREAK.split(text)


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line if line else prefix.rstrip() for line in _lines(text))


def _inline(value: object) -> str:
    """A field printed inside a line: one line, no control characters, no forgeable tag."""
    return neutralise(_CONTROL.sub(" ", str(value)).strip())


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
            first, *rest = _lines(body)
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
                    facts.append(_inline(record.kind))
                if record.score is not None:
                    facts.append(f"relevance {record.score:.2f}")
            suffix = f" ({', '.join(facts)})" if facts else ""
            parts.append(
                f"{self.heading}# {_inline(title)}{suffix}\n\n"
                f"{_indent(neutralise(retrievable_body(record, stages)), '> ')}"
            )
        return "\n\n".join(parts)


settings_struct = MarkdownSettings


def configure(settings: MarkdownSettings | None) -> MarkdownContextPlugin:
    """Build the plugin from its validated settings (turnwire calls this at load time)."""
    return MarkdownContextPlugin(settings or MarkdownSettings())
