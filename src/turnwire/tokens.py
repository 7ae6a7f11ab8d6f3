"""Offline token estimates for the context-window guard (toktok-rs, tiktoken-exact counts).

An estimate, not the bill: message framing, images and reasoning items are counted by the
server. The guard counts what turnwire renders, per bucket, and refuses a request whose
estimate exceeds ``context.context_window``.
"""

from __future__ import annotations

import msgspec

from turnwire.errors import ConfigError, ContextOverflowError
from turnwire.wire import (
    FunctionCall,
    FunctionCallOutput,
    InputItem,
    InputMessage,
    InputText,
    OutputMessage,
    RequestBody,
)

__all__ = ["check_context_window", "counter_installed", "estimate"]

INSTALL_HINT = "install the optional token counter: pip install 'turnwire[tokens]' (toktok-rs)"


def counter_installed() -> bool:
    """Whether the optional token counter (``turnwire[tokens]``) can be imported."""
    try:
        import toktok  # noqa: F401
    except ImportError:
        return False
    return True


def _texts(item: InputItem) -> list[str]:
    if isinstance(item, InputMessage):
        if isinstance(item.content, str):
            return [item.content]
        return [part.text for part in item.content if isinstance(part, InputText)]
    if isinstance(item, OutputMessage):
        return [part.text for part in item.content]
    if isinstance(item, FunctionCall):
        return [item.name, item.arguments]
    if isinstance(item, FunctionCallOutput):
        if isinstance(item.output, str):
            return [item.output]
        return [part.text for part in item.output if isinstance(part, InputText)]
    return []


def estimate(body: RequestBody, *, encoding: str, fingerprintable_length: int) -> dict[str, int]:
    """Estimated tokens per bucket: instructions, timeline, trailing, tools."""
    try:
        import toktok
    except ImportError as err:
        raise ConfigError(
            f"context.token_encoding is set: {INSTALL_HINT}", path="$.context.token_encoding"
        ) from err
    groups: dict[str, list[str]] = {
        "instructions": [body.instructions or ""],
        "timeline": [t for item in body.input[:fingerprintable_length] for t in _texts(item)],
        "trailing": [t for item in body.input[fingerprintable_length:] for t in _texts(item)],
        "tools": [msgspec.json.encode(body.tools).decode()] if body.tools else [],
    }
    return {
        name: sum(toktok.batch_count(texts, encoding, threads=1)) if texts else 0
        for name, texts in groups.items()
    }


def check_context_window(
    body: RequestBody, *, encoding: str | None, window: int | None, fingerprintable_length: int
) -> dict[str, int] | None:
    """Raise :class:`ContextOverflowError` when the estimate exceeds ``window``."""
    if encoding is None or window is None:
        return None
    breakdown = estimate(body, encoding=encoding, fingerprintable_length=fingerprintable_length)
    total = sum(breakdown.values())
    if total > window:
        raise ContextOverflowError(
            total=total, window=window, encoding=encoding, breakdown=breakdown
        )
    return breakdown
