"""The envelope nonce deriver: HMAC-SHA256 of a record id under the deployment's secret."""

from __future__ import annotations

import hashlib
from typing import Any

__all__ = ["NONCE_CACHE_SIZE", "EnvelopeNonce"]


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
        what marks a hosted item as recorded by this deployment (see
        :mod:`turnwire.model.hosted`)."""
        inner = self._inner.copy()
        inner.update(b"turnwire:hosted-item-seal:v2\0")
        inner.update(data)
        outer = self._outer.copy()
        outer.update(inner.digest())
        sealed: str = outer.hexdigest()
        return sealed

    def __repr__(self) -> str:
        return f"EnvelopeNonce(keyed={self.keyed})"
