"""Offline token estimates for the context-window guard (``turnwire[tokens]``: toktok-rs).

An estimate, not the bill: the server adds message framing, and its own counts of images and
files may differ. The guard counts six buckets, as the reference system does:

- ``system_prompt``, ``standing_instructions``, ``memories``, ``retrievables``: the thread's
  raw text for each (what the leading system content is made of);
- ``timeline``: every conversation item of the body (messages, tool calls and their results,
  replayed reasoning), text counted with the tokenizer; images, files and reasoning blobs by
  the rules below;
- ``tools``: the JSON of the declarations.

Images follow the API's documented rule: ``low`` detail costs 85 tokens; otherwise the image
is scaled to fit 2048x2048, then its short side to 768, and costs 85 plus 170 per 512-pixel
tile. The size is read from the PNG, JPEG, GIF or WebP header of inline data; an image whose
size is unknown (a URL, a file id) counts as 1024x1024 (765 tokens). A PDF counts, per page
(``/Type /Page`` objects), the image of the page (765) plus a page of text (500). A reasoning
item's ``encrypted_content`` counts a token per four bytes (the blob grows with the reasoning
it carries).
"""

from __future__ import annotations

import base64
import binascii
import logging
import math
import re
import struct

import msgspec

from turnwire.config.settings import INSTALL_HINT
from turnwire.errors import ConfigError, ContextOverflowError
from turnwire.model.records import Thread
from turnwire.wire import (
    FunctionCall,
    FunctionCallOutput,
    HostedInputItem,
    InputImage,
    InputItem,
    InputMessage,
    InputText,
    OutputMessage,
    ReasoningItem,
    RequestBody,
)
from turnwire.wire.content import InputFile

__all__ = [
    "BUCKETS",
    "check_context_window",
    "estimate",
    "file_tokens",
    "image_tokens",
]

logger = logging.getLogger("turnwire")

BUCKETS = (
    "system_prompt",
    "standing_instructions",
    "memories",
    "retrievables",
    "timeline",
    "tools",
)
_UNKNOWN_SIZE = (1024, 1024)
_PAGE_TOKENS = 765 + 500
_PAGE = re.compile(rb"/Type\s*/Page(?![a-zA-Z])")


def _image_size(data: bytes) -> tuple[int, int] | None:
    """Width and height from a PNG, GIF, JPEG or WebP header, if ``data`` starts with one."""
    if data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
        return width, height
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        width, height = struct.unpack("<HH", data[6:10])
        return width, height
    if data.startswith(b"RIFF") and data[8:12] == b"WEBP" and len(data) >= 30:
        chunk = data[12:16]
        if chunk == b"VP8X":
            width = int.from_bytes(data[24:27], "little") + 1
            height = int.from_bytes(data[27:30], "little") + 1
            return width, height
        if chunk == b"VP8 " and len(data) >= 30:
            width, height = struct.unpack("<HH", data[26:30])
            return width & 0x3FFF, height & 0x3FFF
        if chunk == b"VP8L" and len(data) >= 25:
            bits = int.from_bytes(data[21:25], "little")
            return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if data.startswith(b"\xff\xd8"):
        index = 2
        while index + 9 < len(data) and data[index] == 0xFF:
            marker = data[index + 1]
            length = int.from_bytes(data[index + 2 : index + 4], "big")
            if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
                height, width = struct.unpack(">HH", data[index + 5 : index + 9])
                return width, height
            index += 2 + length
    return None


def _inline_bytes(uri: str | None, limit: int | None = None) -> bytes | None:
    """The decoded bytes of a ``data:...;base64,`` URI (the first ``limit`` bytes at most)."""
    if not uri or not uri.startswith("data:"):
        return None
    _, _, payload = uri.partition(",")
    if limit is not None:
        payload = payload[: (limit // 3 + 1) * 4]
    try:
        return base64.b64decode(payload, validate=False)
    except (binascii.Error, ValueError):
        return None


def image_tokens(detail: str, size: tuple[int, int] | None) -> int:
    """The documented cost of an image at ``detail`` (see the module docstring)."""
    if detail == "low":
        return 85
    known = size if size and size[0] > 0 and size[1] > 0 else _UNKNOWN_SIZE
    width, height = float(known[0]), float(known[1])
    scale = min(1.0, 2048 / max(width, height))
    width, height = width * scale, height * scale
    scale = min(1.0, 768 / min(width, height))
    width, height = width * scale, height * scale
    return 85 + 170 * math.ceil(width / 512) * math.ceil(height / 512)


def file_tokens(data: bytes | None) -> int:
    """A document's estimate: per PDF page, its image and a page of text (one page if unknown)."""
    pages = len(_PAGE.findall(data)) if data else 0
    return _PAGE_TOKENS * max(pages, 1)


def _content(part: object, texts: list[str]) -> int:
    """Collect ``part``'s text into ``texts``; return the tokens of what is not text."""
    if isinstance(part, InputText):
        texts.append(part.text)
    elif isinstance(part, InputImage):
        head = _inline_bytes(part.image_url, limit=64 * 1024)
        return image_tokens(part.detail, _image_size(head) if head else None)
    elif isinstance(part, InputFile):
        return file_tokens(_inline_bytes(part.file_data))
    elif hasattr(part, "text"):
        texts.append(str(part.text))
    return 0


def _item(item: InputItem, texts: list[str]) -> int:
    if isinstance(item, InputMessage | OutputMessage):
        if isinstance(item.content, str):
            texts.append(item.content)
            return 0
        return sum(_content(part, texts) for part in item.content)
    if isinstance(item, FunctionCall):
        texts += [item.name, item.arguments]
        return 0
    if isinstance(item, FunctionCallOutput):
        if isinstance(item.output, str):
            texts.append(item.output)
            return 0
        return sum(_content(part, texts) for part in item.output)
    if isinstance(item, ReasoningItem):
        texts += [part.text for part in item.summary]
        return math.ceil(len(item.encrypted_content or "") / 4)
    if isinstance(item, HostedInputItem):
        # What the model reads of it: every field but the opaque state, which is counted
        # like a reasoning item's (a compaction's summary of the turns it replaced).
        opaque = item.get("encrypted_content")
        shown = {key: value for key, value in item.items() if key != "encrypted_content"}
        texts.append(msgspec.json.encode(shown).decode())
        return math.ceil(len(opaque) / 4) if isinstance(opaque, str) else 0
    return 0


def _is_leading_system(item: InputItem) -> bool:
    return isinstance(item, InputMessage) and item.role in ("system", "developer")


def estimate(body: RequestBody, thread: Thread, *, encoding: str) -> dict[str, int]:
    """Estimated tokens per bucket (:data:`BUCKETS`, in that order)."""
    try:
        import toktok
    except ImportError as err:
        raise ConfigError(
            f"context.token_encoding is set: {INSTALL_HINT}", path="$.context.token_encoding"
        ) from err

    def count(texts: list[str]) -> int:
        texts = [text for text in texts if text]
        return sum(toktok.batch_count(texts, encoding, threads=1)) if texts else 0

    timeline: list[str] = []
    extra = sum(_item(item, timeline) for item in body.input if not _is_leading_system(item))
    retrievables = [
        r.content or (r.artifact.text if r.artifact else "") or "" for r in thread.retrievables
    ]
    return {
        "system_prompt": count([thread.system_prompt]),
        "standing_instructions": count(list(thread.standing_instructions)),
        "memories": count([memory.content for memory in thread.memories]),
        "retrievables": count(retrievables),
        "timeline": count(timeline) + extra,
        "tools": count([msgspec.json.encode(body.tools).decode()]) if body.tools else 0,
    }


def check_context_window(
    body: RequestBody, thread: Thread, *, encoding: str | None, window: int | None
) -> dict[str, int] | None:
    """Raise :class:`ContextOverflowError` when the estimate exceeds ``window``.

    Logs the estimate at debug level (kind ``context-window-usage``) either way.
    """
    if encoding is None or window is None:
        return None
    breakdown = estimate(body, thread, encoding=encoding)
    total = sum(breakdown.values())
    logger.debug(
        "context window usage: %d/%d tokens (%s)",
        total,
        window,
        encoding,
        extra={
            "kind": "context-window-usage",
            "total": total,
            "limit": window,
            "encoding": encoding,
            "per_bucket": breakdown,
        },
    )
    if total > window:
        raise ContextOverflowError(
            total=total, window=window, encoding=encoding, breakdown=breakdown
        )
    return breakdown
