"""Built-in ``render_hosted_item`` and ``render_hosted_item_text``."""

from __future__ import annotations

import re
from typing import Any

import msgspec

from turnwire.config.nonce import EnvelopeNonce
from turnwire.config.options import EnvelopeAttrs, HostedReplay, Warn
from turnwire.hookspecs import hookimpl
from turnwire.model.hosted import replay
from turnwire.model.records import HostedItem
from turnwire.wire import HostedInputItem, InputItem, InputMessage

__all__ = ["render_hosted_item", "render_hosted_item_text"]

# Never shown as text: opaque state, and image bytes (base64) that only cost tokens.
_HIDDEN = {"type", "id", "status", "encrypted_content"}
_HIDDEN_BY_TYPE = {"image_generation_call": {"result"}}
_ENCODER = msgspec.json.Encoder()
_PLAIN = re.compile(r"[A-Za-z0-9_-]{1,128}")


@hookimpl(trylast=True)
def render_hosted_item(
    hosted_item: HostedItem,
    hosted_replay: HostedReplay,
    envelope_nonce: EnvelopeNonce,
    thread_anchor: str,
    warn: Warn,
    stages: Any,
) -> tuple[InputItem, ...]:
    item = hosted_item
    text = stages.render_hosted_item_text(hosted_item=item)
    as_text = InputMessage(role="assistant", content=text) if text else None
    fields, unsealed, problem = replay(item, hosted_replay, envelope_nonce, thread_anchor)
    if unsealed:
        warn(
            f"hosted item {item.id} ({item.type}) was not recorded by this deployment in this "
            "thread (no valid seal): sent as text; `turnwire fingerprint --seal-hosted` seals "
            "a thread you trust, render.hosted_replay: all replays every one"
        )
    if problem is not None:
        warn(
            f"hosted item {item.id} ({item.type}) does not fit the API's input shape "
            f"({problem}): sent as text"
        )
    if fields is None:
        return (as_text,) if as_text is not None else ()
    return (HostedInputItem(fields, as_text),)


@hookimpl(trylast=True)
def render_hosted_item_text(
    hosted_item: HostedItem, envelope_nonce: EnvelopeNonce, stages: Any
) -> str:
    item = hosted_item
    raw = item.item
    status = raw.get("status")
    # The type is a checked name; an id or status outside the API's alphabet is left out of
    # the line that stands outside the envelope.
    head = f"[{item.type}"
    if _PLAIN.fullmatch(item.id):
        head += f" {item.id}"
    if isinstance(status, str) and _PLAIN.fullmatch(status):
        head += f" ({status})"
    head += "]"
    hidden = _HIDDEN | _HIDDEN_BY_TYPE.get(item.type, set())
    shown = {key: value for key, value in raw.items() if key not in hidden}
    if not shown:
        return head
    body = _ENCODER.encode(shown).decode()
    attrs = EnvelopeAttrs(nonce=envelope_nonce(item.id), kind="hosted-item", tool=item.type)
    return f"{head}\n{stages.render_untrusted_content(content=body, attrs=attrs)}"
