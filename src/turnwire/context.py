"""Values the render stages receive besides the records: options, envelope attributes, policies.

Everything here is frozen. Option values reach a stage as hook arguments named like the container
provider that supplies them (``self_identity``, ``unsupported_media_policy``, ``envelope_nonce``,
...); :class:`RenderOptions` is the bundle the stage relay injects from.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any, Literal

import msgspec

__all__ = [
    "BUCKETS",
    "DEFAULT_STASH_KEYS",
    "NONCE_CACHE_SIZE",
    "Bucket",
    "Endpoint",
    "EnvelopeAttrs",
    "EnvelopeNonce",
    "FingerprintBinding",
    "HandleInfo",
    "HostedReplay",
    "MediaPolicy",
    "MediaPolicyName",
    "ReasoningReplay",
    "RenderOptions",
    "SystemPromptChannel",
    "ThoughtSurfacing",
    "Warn",
]

Bucket = Literal["standing_instructions", "memories", "retrievables", "timeline"]
BUCKETS: tuple[Bucket, ...] = ("standing_instructions", "memories", "retrievables", "timeline")
SystemPromptChannel = Literal["instructions", "developer-item", "system-item"]
ThoughtSurfacing = Literal["all-self", "latest-self", "all"]
ReasoningReplay = Literal["off", "encrypted", "summary-only"]
FingerprintBinding = Literal["prefix", "model"]
UnfingerprintedReasoning = Literal["drop", "trust"]
HostedReplay = Literal["sealed", "all"]
MediaPolicyName = Literal["throw", "fallback-stash", "synthetic-description"]
Warn = Callable[[str], None]

DEFAULT_STASH_KEYS: tuple[str, ...] = ("text:transcript", "text:caption", "text:description")


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


_SHA256_BLOCK = 64
_INNER_PAD = bytes(byte ^ 0x36 for byte in range(256))  # XOR with 0x36, as a translate table
_OUTER_PAD = bytes(byte ^ 0x5C for byte in range(256))


def _hmac_pad_states(key: bytes) -> tuple[Any, Any]:
    """SHA-256 states that have absorbed ``key XOR ipad`` and ``key XOR opad``.

    As RFC 2104 sets up HMAC-SHA256: a key longer than a block is hashed first, then the key is
    padded with zero bytes to the 64-byte block. ``outer(inner(message))`` of copies of these
    states is ``hmac.digest(key, message, "sha256")`` byte for byte.
    """
    if len(key) > _SHA256_BLOCK:
        key = hashlib.sha256(key).digest()
    block = key.ljust(_SHA256_BLOCK, b"\0")
    return hashlib.sha256(block.translate(_INNER_PAD)), hashlib.sha256(block.translate(_OUTER_PAD))


NONCE_CACHE_SIZE = 1 << 16
"""How many nonces an :class:`EnvelopeNonce` keeps (then it starts again from none)."""


class EnvelopeNonce:
    """Derives envelope nonces: HMAC-SHA256 of a record id under a per-deployment secret.

    Stable for a given secret and id (so prompt caching and prefix fingerprints hold), and
    unpredictable to anyone without the secret (so content cannot forge an envelope's closing
    tag). The secret never appears in a ``repr``.
    """

    __slots__ = ("_cache", "_inner", "_outer", "cache_key", "keyed")

    _UNKEYED = b"turnwire:unkeyed-envelope-nonce:v1"

    def __init__(self, secret: str | bytes | None) -> None:
        self.keyed = bool(secret)
        raw = secret.encode() if isinstance(secret, str) else secret
        key = raw or self._UNKEYED
        self._cache: dict[str, str] = {}
        # Names the secret for render memos without revealing it: equal secrets, equal nonces.
        self.cache_key = hashlib.sha256(b"turnwire:nonce-cache-key:" + key).hexdigest()
        # HMAC (RFC 2104) with its two keyed pads absorbed once: each nonce then costs two
        # copies of a SHA-256 state and two short updates, not a fresh HMAC set-up per call.
        self._inner, self._outer = _hmac_pad_states(key)

    def __call__(self, record_id: str) -> str:
        cache = self._cache
        nonce = cache.get(record_id)
        if nonce is None:
            inner = self._inner.copy()
            inner.update(record_id.encode())
            outer = self._outer.copy()
            outer.update(inner.digest())
            nonce = outer.hexdigest()[:16]  # the first 8 bytes, in hex
            if len(cache) >= NONCE_CACHE_SIZE:  # a long-lived container sees ids without end
                cache.clear()
            cache[record_id] = nonce
        return nonce

    def seal(self, data: bytes) -> str:
        """A full HMAC-SHA256 (hex) of ``data`` under the same secret, in a domain of its own:
        what marks a hosted item as recorded by this deployment (see :mod:`turnwire.hosted`)."""
        inner = self._inner.copy()
        inner.update(b"turnwire:hosted-item-seal:v1\0")
        inner.update(data)
        outer = self._outer.copy()
        outer.update(inner.digest())
        sealed: str = outer.hexdigest()
        return sealed

    def __repr__(self) -> str:
        return f"EnvelopeNonce(keyed={self.keyed})"


class Endpoint(msgspec.Struct, frozen=True, kw_only=True):
    """What the API binds encrypted reasoning to, besides the model (``model`` binding)."""

    base_url: str = "https://api.openai.com/v1"
    organization: str | None = None
    project: str | None = None


class RenderOptions(msgspec.Struct, frozen=True, kw_only=True):
    """Every option of ``build_input``; each field is a container provider of the same name."""

    model: str
    bucket_order: tuple[Bucket, ...] = BUCKETS
    system_prompt_channel: SystemPromptChannel = "instructions"
    self_identity: str = "assistant"
    thought_surfacing: ThoughtSurfacing = "all-self"
    reasoning_replay: ReasoningReplay = "off"
    replay_compatibility: tuple[str, ...] = ()
    fingerprint_binding: FingerprintBinding = "prefix"
    unfingerprinted_reasoning: UnfingerprintedReasoning = "drop"
    hosted_replay: HostedReplay = "sealed"
    system_prompt_template: bool = False
    render_context: dict[str, str] = msgspec.field(default_factory=dict)
    unsupported_media_policy: MediaPolicy = msgspec.field(default_factory=MediaPolicy)
    tool_result_inline_max_bytes: int = 4096
    strict: bool | None = None
    endpoint: Endpoint = msgspec.field(default_factory=Endpoint)
    envelope_nonce: Any = None

    def injectable(self) -> dict[str, Any]:
        """Option values by provider name, as the stage relay injects them."""
        values = {field: getattr(self, field) for field in self.__struct_fields__}
        if values["envelope_nonce"] is None:
            values["envelope_nonce"] = EnvelopeNonce(None)
        return values
