"""Built-in ``fingerprint_prefix``: the ``prefix`` scheme (byte-compatible) and ``model``.

The reference system never sends ``"type": "message"`` on its input messages, and its
fingerprints hash the items as it sends them; to stay byte-compatible (the worked values of the
reference's section 2.15 are pinned), an :class:`~turnwire.wire.InputMessage` is hashed without
that key, although turnwire sends it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import msgspec

from turnwire.config.options import Endpoint, FingerprintBinding
from turnwire.hookspecs import hookimpl
from turnwire.model.canonical import canonical_json, js_string
from turnwire.wire import InputItem, InputMessage, WireTool
from turnwire.wire.tools import McpTool

__all__ = ["PREFIX_HEAD", "PrefixHashing", "canonical_items", "fingerprint_prefix", "prefix_tail"]


_SORTED = msgspec.json.Encoder(order="sorted")

PREFIX_HEAD = b'{"input":['
"""The canonical text of a prefix before its first item."""


def canonical_items(items: Sequence[InputItem]) -> bytes:
    """The canonical text of ``items`` inside the input array, as the ``prefix`` scheme hashes
    them: ``a,b`` for ``[a, b]`` (one sorted encode; "[a,b]" minus its brackets).

    The one definition the stage, the resumable sweep and
    :func:`turnwire.rendering.pipeline.prefix_fingerprint` share, so their hashes cannot drift
    apart.
    """
    return _SORTED.encode(_as_seed_hashed(items))[1:-1]


class _SeedMessage(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    """An input message as the reference system hashes it: the fields of ``InputMessage``, no
    ``type``."""

    role: str
    content: Any
    phase: str | None = None


def _as_seed_hashed(items: Sequence[InputItem]) -> list[Any]:
    return [
        _SeedMessage(role=item.role, content=item.content, phase=item.phase)
        if type(item) is InputMessage
        else item
        for item in items
    ]


def prefix_tail(model: str, instructions: str | None, tools: Sequence[WireTool] | None) -> bytes:
    """Everything of the canonical text after the input array, for these request fields."""
    instructions_text = "undefined" if instructions is None else js_string(instructions)
    # An MCP server's credentials are not part of what the model saw: rotating a token must
    # not orphan the reasoning recorded before, and no digest is taken of a secret.
    tools_text = (
        "undefined"
        if tools is None
        else canonical_json([t.masked() if isinstance(t, McpTool) else t for t in tools])
    )
    return (
        f'],"instructions":{instructions_text},"model":{js_string(model)},"tools":{tools_text}}}'
    ).encode()


def _model_binding(model: str, endpoint: Endpoint) -> str:
    text = canonical_json(
        {
            "binding": "model",
            "model": model,
            "base_url": endpoint.base_url.rstrip("/"),
            "organization": endpoint.organization,
            "project": endpoint.project,
        }
    )
    return hashlib.sha256(text.encode()).hexdigest()


@hookimpl(trylast=True)
def fingerprint_prefix(
    model: str,
    instructions: str | None,
    tools: Sequence[WireTool] | None,
    input: Sequence[InputItem],
    through_item: int,
    fingerprint_binding: FingerprintBinding,
    endpoint: Endpoint,
    scratch: dict[str, Any],
) -> str:
    if fingerprint_binding == "model":
        return _model_binding(model, endpoint)
    key = (id(input), model, instructions, id(tools))
    state = scratch.get("fingerprint_prefix")
    if state is None or state[0] != key or state[2] > through_item:
        hasher = hashlib.sha256(PREFIX_HEAD)
        state = [key, hasher, 0, prefix_tail(model, instructions, tools), input]
        scratch["fingerprint_prefix"] = state
    hasher, position = state[1], state[2]
    if through_item > position:
        if position:
            hasher.update(b",")
        hasher.update(canonical_items(input[position:through_item]))
    state[2] = through_item
    final = hasher.copy()
    final.update(state[3])
    digest: str = final.hexdigest()
    return digest


class PrefixHashing:
    """How this stage's ``prefix`` fingerprints are made, declared so a sweep can resume them.

    A ``fingerprint_prefix`` implementation may carry an object like this one as its
    ``resumable`` attribute. It promises that, whenever :meth:`applies` says so, the stage's
    fingerprint of ``input[:n]`` is the hex SHA-256 of :attr:`head`, then
    ``items(input[:n])`` (fed in any split, pieces joined by ``b","``), then
    ``tail(model, instructions, tools)``. The pipeline then keeps hashing states between
    candidates and renders instead of calling the stage for every reasoning item; the
    differential tests hold the two to the same bytes. Any implementation may declare it: the
    pipeline looks for the attribute, never for this function.
    """

    head = PREFIX_HEAD

    @staticmethod
    def items(items: Sequence[InputItem]) -> bytes:
        return canonical_items(items)

    @staticmethod
    def tail(model: str, instructions: str | None, tools: Sequence[WireTool] | None) -> bytes:
        return prefix_tail(model, instructions, tools)

    @staticmethod
    def applies(fingerprint_binding: FingerprintBinding) -> bool:
        return fingerprint_binding == "prefix"


fingerprint_prefix.resumable = PrefixHashing()  # type: ignore[attr-defined]
