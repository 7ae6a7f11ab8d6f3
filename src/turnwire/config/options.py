"""Values the render stages receive besides the records: options, envelope attributes, policies.

The envelope nonce deriver they receive lives in :mod:`turnwire.config.nonce`.

Everything here is frozen. Option values reach a stage as hook arguments named like the container
provider that supplies them (``self_identity``, ``unsupported_media_policy``, ``envelope_nonce``,
...); :class:`RenderOptions` is the bundle the stage relay injects from.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

import msgspec

from turnwire._redact import redact
from turnwire.config.nonce import EnvelopeNonce
from turnwire.wire.content import ImageDetail

__all__ = [
    "BUCKETS",
    "DEFAULT_STASH_KEYS",
    "Bucket",
    "ContextPlacement",
    "Endpoint",
    "EnvelopeAttrs",
    "FingerprintBinding",
    "HandleInfo",
    "HostedReplay",
    "MediaPolicy",
    "MediaPolicyName",
    "ReasoningContent",
    "ReasoningReplay",
    "RenderOptions",
    "SystemPromptChannel",
    "ThoughtSurfacing",
    "Warn",
    "bucket_order_problem",
]

Bucket = Literal["standing_instructions", "memories", "retrievables", "timeline"]
BUCKETS: tuple[Bucket, ...] = ("standing_instructions", "memories", "retrievables", "timeline")
SystemPromptChannel = Literal["instructions", "developer-item", "system-item"]
ContextPlacement = Literal["leading", "timeline"]
ThoughtSurfacing = Literal["all-self", "latest-self", "all"]
ReasoningReplay = Literal["off", "encrypted", "summary-only"]
ReasoningContent = Literal["replay", "omit"]
FingerprintBinding = Literal["prefix", "model"]
UnfingerprintedReasoning = Literal["drop", "trust"]
HostedReplay = Literal["sealed", "all"]
MediaPolicyName = Literal["throw", "fallback-stash", "synthetic-description"]
Warn = Callable[[str], None]

DEFAULT_STASH_KEYS: tuple[str, ...] = ("text:transcript", "text:caption", "text:description")


def bucket_order_problem(order: tuple[str, ...]) -> str | None:
    """What is wrong with a ``bucket_order`` (``None``: nothing). The one rule, read where the
    settings are validated and again where a render starts (a container override of the
    option never went through the settings)."""
    if len(set(order)) != len(order):
        return "a bucket is listed twice"
    if "timeline" not in order:
        return "must contain `timeline`; without it no message would be sent"
    return None


class EnvelopeAttrs(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Attributes of a trust envelope. ``nonce`` is already derived (see :class:`EnvelopeNonce`)."""

    nonce: str
    kind: str
    tool: str | None = None
    modality: str | None = None


class HandleInfo(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """What a handle body says about a body that was not inlined."""

    call_id: str
    kind: str
    byte_length: int
    line_count: int


class MediaPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """What to do with media the Responses API cannot take (audio, video).

    ``default`` applies to every kind not named in ``per_kind``. ``stash_keys`` are tried in
    order by ``fallback-stash``.
    """

    default: MediaPolicyName = "throw"
    per_kind: Mapping[str, MediaPolicyName] = msgspec.field(default_factory=dict)
    stash_keys: tuple[str, ...] = DEFAULT_STASH_KEYS

    def for_kind(self, kind: str) -> MediaPolicyName:
        return self.per_kind.get(kind, self.default)


class Endpoint(msgspec.Struct, frozen=True, kw_only=True):
    """What the API binds encrypted reasoning to, besides the model (``model`` binding)."""

    base_url: str = "https://api.openai.com/v1"
    organization: str | None = None
    project: str | None = None

    def __repr__(self) -> str:
        """The fields, the URL's password and query credentials ``[redacted]``."""
        return (
            f"Endpoint(base_url={redact(self.base_url)!r}, organization={self.organization!r}, "
            f"project={self.project!r})"
        )

    __str__ = __repr__


class RenderOptions(msgspec.Struct, frozen=True, kw_only=True):
    """Every option of ``build_input``; each field is a container provider of the same name."""

    model: str
    bucket_order: tuple[Bucket, ...] = BUCKETS
    system_prompt_channel: SystemPromptChannel = "instructions"
    context_placement: ContextPlacement = "leading"
    self_identity: str = "assistant"
    thought_surfacing: ThoughtSurfacing = "all-self"
    reasoning_replay: ReasoningReplay = "off"
    reasoning_content: ReasoningContent = "replay"
    replay_compatibility: tuple[str, ...] = ()
    fingerprint_binding: FingerprintBinding = "prefix"
    unfingerprinted_reasoning: UnfingerprintedReasoning = "drop"
    hosted_replay: HostedReplay = "sealed"
    system_prompt_template: bool = False
    render_context: dict[str, str] = msgspec.field(default_factory=dict)
    unsupported_media_policy: MediaPolicy = msgspec.field(default_factory=MediaPolicy)
    image_detail: ImageDetail | None = None
    tool_result_inline_max_bytes: int = 4096
    strict: bool | None = None
    endpoint: Endpoint = msgspec.field(default_factory=Endpoint)
    envelope_nonce: Any = None
    # Per render, never from the settings: set by the pipeline from the thread it renders.
    thread_anchor: str = ""

    def injectable(self) -> dict[str, Any]:
        """Option values by provider name, as the stage relay injects them."""
        values = {field: getattr(self, field) for field in self.__struct_fields__}
        if values["envelope_nonce"] is None:
            values["envelope_nonce"] = EnvelopeNonce(None)
        return values
