"""The envelope nonce deriver: a truncated HMAC-SHA256 of the record id under the deployment's
secret, stable, pinned, never showing the secret, its cache bounded."""

from __future__ import annotations

import hmac
import re

from hypothesis import given
from hypothesis import strategies as st

from turnwire.config.nonce import EnvelopeNonce

NONCE = EnvelopeNonce("secret")("call_1")


def test_nonce_is_keyed_stable_and_not_the_id():
    keyed = EnvelopeNonce("secret")
    assert keyed("call_1") == keyed("call_1") == NONCE
    assert re.fullmatch(r"[0-9a-f]{16}", NONCE)
    assert "call_1" not in NONCE
    assert EnvelopeNonce("other")("call_1") != NONCE
    assert keyed("call_2") != NONCE


def test_nonce_repr_never_shows_the_secret():
    assert "secret" not in repr(EnvelopeNonce("secret"))
    assert repr(EnvelopeNonce("secret")) == "EnvelopeNonce(keyed=True)"


@given(
    secret=st.one_of(
        st.none(),
        st.text(max_size=100),
        st.binary(max_size=150),
        st.sampled_from([b"k" * 63, b"k" * 64, b"k" * 65, "é" * 32, "é" * 33]),
    ),
    record_id=st.text(st.characters(blacklist_categories=("Cs",)), max_size=80),
)
def test_nonce_is_the_truncated_hmac_sha256_of_the_id(secret, record_id):
    # The precomputed pad states give RFC 2104's HMAC byte for byte: keys shorter than, equal to
    # and longer than the SHA-256 block, text and bytes, and the unkeyed default for no secret.
    raw = secret.encode() if isinstance(secret, str) else secret
    key = raw or b"turnwire:unkeyed-envelope-nonce:v1"
    expected = hmac.digest(key, record_id.encode(), "sha256")[:8].hex()
    nonce = EnvelopeNonce(secret)
    assert nonce(record_id) == expected
    assert nonce(record_id) == expected  # from the cache, the same
    assert nonce.keyed is bool(secret)


def test_nonce_values_are_pinned():
    # Pinned values of the derivation: secrets in use keep their nonces.
    assert EnvelopeNonce("secret")("call_1") == "1b3a7b4da3acf7bf"
    assert EnvelopeNonce(None)("call_1") == "ff7999f33695cb10"
    assert EnvelopeNonce(b"x" * 100)("msg_7") == "164da3863501b531"


def test_nonce_state_never_shows_the_secret():
    nonce = EnvelopeNonce("hunter2-secret")
    shown = repr(nonce) + str(nonce) + repr(nonce._inner) + repr(nonce._outer)
    assert "hunter2" not in shown
    assert not hasattr(nonce, "__dict__")


def test_the_nonce_cache_is_bounded(monkeypatch):
    """A long-lived container derives nonces for every record id it ever sees: the cache
    starts again from none once full, and the nonces stay the same."""
    from turnwire.config import nonce as nonces

    monkeypatch.setattr(nonces, "NONCE_CACHE_SIZE", 8)
    nonce = nonces.EnvelopeNonce("s")
    first = [nonce(f"id{i}") for i in range(20)]
    assert len(nonce._cache) <= 8
    assert [nonce(f"id{i}") for i in range(20)] == first
    assert first == [nonces.EnvelopeNonce("s")(f"id{i}") for i in range(20)]
