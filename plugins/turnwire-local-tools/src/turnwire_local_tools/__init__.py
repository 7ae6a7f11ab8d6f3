"""turnwire-local-tools: tool calls that local models write as text become ordinary tool calls.

Many local models (served by llama.cpp, Ollama, vLLM or LM Studio without a tool parser) write
their tool calls into the answer text: ``<tool_call>{...}</tool_call>``, ``[TOOL_CALLS]...``,
``[get_weather(city="Paris")]``, harmony's ``to=functions.get_weather``... This plugin implements
``parse_text_tool_calls``: turnwire asks it only for an answer with text and no structured calls,
and runs what it finds like any other call; the markup is cut from the stored answer.

Settings (``plugins.settings.local_tools``): see :class:`LocalToolsSettings`. The parsing
itself is :func:`parse`, usable without turnwire's client.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import msgspec

from turnwire import Tool, hookimpl
from turnwire.client.text_calls import TextToolCall, TextToolCalls

from ._common import Malformed, Scope
from ._formats import AUTO_MARKED, AUTO_UNMARKED, PARSERS

__all__ = [
    "FORMATS",
    "LocalToolsPlugin",
    "LocalToolsSettings",
    "TextToolCall",
    "TextToolCalls",
    "configure",
    "parse",
    "settings_struct",
]

FORMATS: tuple[str, ...] = ("auto", *PARSERS, "none")
"""Every value of ``format``."""

DEFAULT_MAX_CHARS = 262_144
DEFAULT_MAX_CALLS = 32


class LocalToolsSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How answers are read.

    :ivar format: one of :data:`FORMATS`: a model family's format, ``auto`` (the formats with
        markup first, then the ones without), or ``none`` (nothing is parsed).
    :ivar max_chars: a longer answer is left as text, unread.
    :ivar max_calls: an answer with more calls than this is left as text.
    """

    format: str = "auto"
    max_chars: Annotated[int, msgspec.Meta(ge=1)] = DEFAULT_MAX_CHARS
    max_calls: Annotated[int, msgspec.Meta(ge=1, le=1024)] = DEFAULT_MAX_CALLS

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise ValueError(
                f"format: {self.format!r} is not a known format; use one of {', '.join(FORMATS)}"
            )


def _auto(text: str, scope: Scope) -> TextToolCalls | None:
    for name, marker in AUTO_MARKED:
        if marker in text:
            return PARSERS[name](text, scope)
    for name in AUTO_UNMARKED:
        try:
            found = PARSERS[name](text, scope)
        except Malformed:
            continue
        if found is not None:
            return found
    return None


def parse(
    text: str,
    tools: Sequence[Tool] = (),
    *,
    format: str = "auto",
    max_chars: int = DEFAULT_MAX_CHARS,
    max_calls: int = DEFAULT_MAX_CALLS,
) -> TextToolCalls | None:
    """The tool calls written in ``text``, and the text without them; ``None`` for none.

    All or nothing: an unknown tool name (when ``tools`` declares any), arguments that are not
    a mapping, an unterminated or undecodable block, more than ``max_calls`` calls, or a text
    longer than ``max_chars`` and the whole text is left as it is. Never raises on any text.

    :param text: the answer's text.
    :param tools: the tools the thread declares.
    :param format: one of :data:`FORMATS`.
    :raises ValueError: ``format`` is not one of :data:`FORMATS`.
    """
    if format not in FORMATS:
        raise ValueError(f"unknown format {format!r}; use one of {', '.join(FORMATS)}")
    if format == "none" or len(text) > max_chars or not text.strip():
        return None
    scope = Scope.of(tools, max_calls)
    try:
        return _auto(text, scope) if format == "auto" else PARSERS[format](text, scope)
    except Malformed:
        return None


class LocalToolsPlugin:
    """The registered plugin: one instance per plugin manager, holding its settings."""

    def __init__(self, settings: LocalToolsSettings) -> None:
        self.settings = settings

    @hookimpl
    def parse_text_tool_calls(self, text: str, tools: Sequence[Tool]) -> TextToolCalls | None:
        settings = self.settings
        return parse(
            text,
            tools,
            format=settings.format,
            max_chars=settings.max_chars,
            max_calls=settings.max_calls,
        )


settings_struct = LocalToolsSettings


def configure(settings: LocalToolsSettings | None) -> LocalToolsPlugin:
    """Build the plugin from its validated settings (turnwire calls this at load time)."""
    return LocalToolsPlugin(settings or LocalToolsSettings())
