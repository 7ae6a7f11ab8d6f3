"""Opaque state the emulator mints: sealed ``encrypted_content`` and program ``fingerprint``
blobs, and what a reasoning item was minted after.

A blob is ``twe1.<payload>.<mac>`` (base64url): the payload names the kind of item (reasoning,
compaction or program), its id, the model, the organization, the hash of the history it was minted
after and when; the MAC is an HMAC-SHA256 of the payload under the emulator's key. Nothing in
it is secret (the emulator's answers are scripted), but nothing in it can be changed either:
a blob whose MAC fails (tampered, or minted under another key: foreign), that names another
model, organization or item, or that is older than the emulator's time to live (stale) is
refused as the API refuses it, ``400 invalid_encrypted_content``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

__all__ = ["Sealed", "Sealer", "history_hash", "normalized"]

_PREFIX = "twe1."
_DOMAIN = b"turnwire-emulate/1\0"

# The reasons a blob is refused. The first is the API's own wording (openai/codex#35334); the
# API's reasons for the others are not recorded, so these are the emulator's.
UNREADABLE = "Encrypted content could not be decrypted or parsed."
OTHER_ITEM = "Encrypted content item_id did not match the target item id."
OTHER_MODEL = "Encrypted content was issued for another model."
OTHER_ORGANIZATION = "Encrypted content was issued to another organization."
EXPIRED = "Encrypted content has expired."


@dataclass(frozen=True, slots=True)
class Sealed:
    """What a blob that verified says."""

    kind: str
    item_id: str
    model: str
    history: str
    issued_at: float


class _Payload(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    k: str
    i: str
    m: str
    o: str
    h: str
    t: float


_ENCODE = msgspec.json.Encoder()
_DECODE = msgspec.json.Decoder(_Payload)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Sealer:
    """Mints and verifies blobs under one key, for one organization.

    :param ttl_s: how long a blob stays valid (``None``: as long as the key).
    :param clock: seconds since the epoch (injected in tests).
    """

    def __init__(
        self,
        key: bytes,
        *,
        organization: str,
        ttl_s: float | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._key = key
        self._organization = organization
        self._ttl_s = ttl_s
        self._clock = clock

    def __repr__(self) -> str:  # the key never appears
        return f"Sealer(organization={self._organization!r}, ttl_s={self._ttl_s!r})"

    def seal(self, *, kind: str, item_id: str, model: str, history: str) -> str:
        """A new blob for the item ``item_id`` of ``kind``, minted after ``history``."""
        payload = _ENCODE.encode(
            _Payload(k=kind, i=item_id, m=model, o=self._organization, h=history, t=self._clock())
        )
        return f"{_PREFIX}{_b64(payload)}.{_b64(self._mac(payload))}"

    def open(self, blob: object, *, kind: str, item_id: str | None, model: str) -> Sealed | str:
        """What ``blob`` says, or the reason it is refused."""
        if not isinstance(blob, str) or not blob.startswith(_PREFIX) or len(blob) > 1 << 20:
            return UNREADABLE
        payload_text, _, mac_text = blob[len(_PREFIX) :].partition(".")
        try:
            payload = _unb64(payload_text)
            mac = _unb64(mac_text)
        except (binascii.Error, ValueError):
            return UNREADABLE
        if not hmac.compare_digest(mac, self._mac(payload)):
            return UNREADABLE
        try:
            sealed = _DECODE.decode(payload)
        except msgspec.DecodeError:  # pragma: no cover - only this key's payloads verify
            return UNREADABLE
        if sealed.k != kind:
            return UNREADABLE
        if item_id is not None and sealed.i != item_id:
            return OTHER_ITEM
        if sealed.o != self._organization:
            return OTHER_ORGANIZATION
        if sealed.m != model:
            return OTHER_MODEL
        if self._ttl_s is not None and self._clock() - sealed.t > self._ttl_s:
            return EXPIRED
        return Sealed(sealed.k, sealed.i, sealed.m, sealed.h, sealed.t)

    def _mac(self, payload: bytes) -> bytes:
        return hmac.new(self._key, _DOMAIN + payload, hashlib.sha256).digest()


# --------------------------------------------------------------------------- the history


def _texts(content: object) -> list[str] | object:
    if isinstance(content, str):
        return [content]
    if isinstance(content, Sequence):
        texts: list[str] = []
        for part in content:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif isinstance(part, Mapping):
                texts.append(_ENCODE.encode(_without(part, ("annotations", "logprobs"))).decode())
        return texts
    return content


def _without(item: Mapping[str, Any], names: Iterable[str]) -> dict[str, Any]:
    drop = set(names)
    return {key: value for key, value in item.items() if key not in drop}


def normalized(item: object) -> object:
    """What the model reads of one input or output item: the same for the item as the API
    returned it and as a client replays it (ids, statuses, empty annotations and the shape of
    a message's content aside)."""
    if not isinstance(item, Mapping):
        return item
    kind = item.get("type", "message")
    if kind == "message":
        return ["message", item.get("role"), _texts(item.get("content"))]
    if kind == "reasoning":
        return ["reasoning", item.get("id")]
    if kind == "function_call":
        return ["function_call", item.get("call_id"), item.get("name"), item.get("arguments")]
    if kind == "function_call_output":
        output = item.get("output")
        return ["function_call_output", item.get("call_id"), _texts(output)]
    return _without(item, ("id", "status"))


def history_hash(instructions: object, items: Iterable[object]) -> str:
    """The SHA-256 of the instructions and the items, as the model reads them."""
    digest = hashlib.sha256(_ENCODE.encode(instructions))
    for item in items:
        digest.update(b"\n")
        digest.update(_ENCODE.encode(normalized(item)))
    return digest.hexdigest()
