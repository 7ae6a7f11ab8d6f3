"""Content blocks of the Responses wire: what goes inside a message or a tool output.

Tags are the API's ``type`` literals. Fields whose absence changes meaning have no default, so
``omit_defaults`` can never drop them (``annotations`` on output text, ``detail`` on images).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

__all__ = [
    "CacheBreakpointCarrier",
    "FileDetail",
    "ImageDetail",
    "InputContent",
    "InputFile",
    "InputImage",
    "InputText",
    "OutputText",
    "PromptCacheBreakpoint",
    "ReasoningText",
    "Refusal",
    "SummaryText",
    "WireStruct",
]


ImageDetail = Literal["low", "high", "auto", "original"]
"""The detail levels of an ``input_image`` (``original``: the image as sent, unscaled)."""

FileDetail = Literal["low", "high", "auto"]
"""The detail levels of an ``input_file`` (the API has no ``original`` for documents)."""


class WireStruct(
    msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, tag_field="type", gc=False
):
    """Base of every tagged wire value; unknown fields are tolerated (the API grows)."""


class PromptCacheBreakpoint(
    msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, forbid_unknown_fields=True
):
    """``prompt_cache_breakpoint`` of an input content block: the exact end of a reusable
    prompt prefix (GPT-5.6 and later). ``mode`` has no default, so ``omit_defaults`` never
    drops it; without ``ttl`` the breakpoint inherits ``prompt_cache_options.ttl``."""

    mode: Literal["explicit"]
    ttl: Literal["30m", "12h"] | None = None


class InputText(WireStruct, frozen=True, kw_only=True, tag="input_text"):
    """Plain text given to the model."""

    text: str
    prompt_cache_breakpoint: PromptCacheBreakpoint | None = None


class InputImage(WireStruct, frozen=True, kw_only=True, tag="input_image"):
    """An image, by data URI or URL (``image_url``) or by uploaded file (``file_id``)."""

    detail: ImageDetail
    image_url: str | None = None
    file_id: str | None = None
    prompt_cache_breakpoint: PromptCacheBreakpoint | None = None


class InputFile(WireStruct, frozen=True, kw_only=True, tag="input_file"):
    """A document, as a ``data:<mime>;base64,...`` URI (``file_data``), a URL or a file id.

    ``detail`` unset is left out (the API's default, ``auto``), so a document without one
    encodes to the bytes it did before the field existed."""

    filename: str | None = None
    file_data: str | None = None
    file_id: str | None = None
    file_url: str | None = None
    detail: FileDetail | None = None
    prompt_cache_breakpoint: PromptCacheBreakpoint | None = None


class OutputText(WireStruct, frozen=True, kw_only=True, tag="output_text"):
    """Text the model produced, replayed inside an assistant output message."""

    text: str
    annotations: tuple[Any, ...]
    logprobs: tuple[Any, ...] | None = None


class Refusal(WireStruct, frozen=True, kw_only=True, tag="refusal"):
    """The model's refusal, replayed inside an assistant output message."""

    refusal: str


class SummaryText(WireStruct, frozen=True, kw_only=True, tag="summary_text"):
    """One part of a reasoning summary."""

    text: str


class ReasoningText(WireStruct, frozen=True, kw_only=True, tag="reasoning_text"):
    """Raw reasoning text (some models emit it beside the summary)."""

    text: str


InputContent = InputText | InputImage | InputFile

CacheBreakpointCarrier = (InputText, InputImage, InputFile)
"""The content blocks that may carry a ``prompt_cache_breakpoint`` (input blocks only: the
API's output text and refusal parts have no such field). Unset, the field is left out, so a
block without a breakpoint encodes to the very bytes it did before the field existed."""
