"""turnwire-redact: scrub personal data and secrets from untrusted content.

Everything turnwire renders through ``render_untrusted_content`` (results of untrusted tools,
third-party retrieved documents, media fallbacks, artifact handles) is redacted before it is
wrapped: e-mail addresses, phone numbers and API-key-like strings are replaced by a marker
naming what was removed. Trusted content, the conversation itself and the system prompt are
left alone.

Settings (``plugins.settings.redact``): see :class:`RedactSettings`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import msgspec

from turnwire import hookimpl
from turnwire.plugin import EnvelopeAttrs
from turnwire.text import envelope

__all__ = [
    "RedactPlugin",
    "RedactSettings",
    "compile_rules",
    "configure",
    "redact",
    "settings_struct",
]


class RedactSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What to redact.

    :ivar emails: e-mail addresses.
    :ivar phones: phone numbers (7 to 15 digits, with the usual separators).
    :ivar secrets: API-key-like tokens (``sk-...``, ``AKIA...``, ``ghp_...``, ``xox?-...``,
        ``Bearer ...``, ``api_key=...``).
    :ivar patterns: extra regular expressions, each replaced as ``custom``.
    :ivar replacement: the marker; ``{kind}`` becomes ``email``, ``phone``, ``secret`` or
        ``custom``.
    """

    emails: bool = True
    phones: bool = True
    secrets: bool = True
    patterns: tuple[str, ...] = ()
    replacement: str = "[redacted {kind}]"

    def __post_init__(self) -> None:
        for index, pattern in enumerate(self.patterns):
            try:
                re.compile(pattern)
            except re.error as err:
                raise ValueError(f"patterns[{index}] is not a regular expression: {err}") from None


_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
_PHONE = re.compile(r"(?<![\w.-])\+?\(?\d(?:[\s().-]?\d){6,14}(?![\w-])")
_SECRET = re.compile(
    r"\b(?:sk-[A-Za-z0-9_-]{16,}"
    r"|AKIA[0-9A-Z]{16}"
    r"|gh[pousr]_[A-Za-z0-9]{30,}"
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"
    r"|AIza[0-9A-Za-z_-]{30,})"
    r"|(?i:bearer\s+)[A-Za-z0-9._~+/-]{16,}=*"
    r"|(?i:\b(?:api[_-]?key|secret|token|password)\b\s*[:=]\s*)[^\s\"',;]{6,}"
)


def compile_rules(settings: RedactSettings) -> list[tuple[str, re.Pattern[str]]]:
    rules = []
    if settings.secrets:
        rules.append(("secret", _SECRET))
    if settings.emails:
        rules.append(("email", _EMAIL))
    if settings.phones:
        rules.append(("phone", _PHONE))
    rules.extend(("custom", re.compile(pattern)) for pattern in settings.patterns)
    return rules


def redact(text: str, rules: Iterable[tuple[str, re.Pattern[str]]], replacement: str) -> str:
    """``text`` with every match of ``rules`` replaced by ``replacement`` (``{kind}`` filled)."""
    for kind, pattern in rules:
        text = pattern.sub(replacement.format(kind=kind), text)
    return text


class RedactPlugin:
    """The registered plugin: one instance per plugin manager, holding its settings."""

    def __init__(self, settings: RedactSettings) -> None:
        self.settings = settings
        self._rules = compile_rules(settings)

    @hookimpl(tryfirst=True)
    def render_untrusted_content(self, content: str, attrs: EnvelopeAttrs) -> str:
        cleaned = redact(content, self._rules, self.settings.replacement)
        return envelope("untrusted_content", cleaned, attrs)


settings_struct = RedactSettings


def configure(settings: RedactSettings | None) -> RedactPlugin:
    """Build the plugin from its validated settings (turnwire calls this at load time)."""
    return RedactPlugin(settings or RedactSettings())
