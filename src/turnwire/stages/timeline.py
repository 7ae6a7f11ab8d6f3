"""Built-in ``render_timeline_message``: user, own output and peer-agent messages."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from turnwire.config.nonce import EnvelopeNonce
from turnwire.hookspecs import hookimpl
from turnwire.model.records import Message
from turnwire.stages._text import escape_attr, iso, neutralise
from turnwire.wire import (
    InputContent,
    InputItem,
    InputMessage,
    InputText,
    OutputMessage,
    OutputText,
    Refusal,
)

__all__ = ["item_id_matcher", "render_timeline_message", "valid_item_id"]

_ITEM_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
# One pattern per item type, prefix included: one match per id, no separate prefix test.
_ITEM_IDS = {
    prefix: re.compile(re.escape(prefix) + rf"[A-Za-z0-9_-]{{0,{64 - len(prefix)}}}").fullmatch
    for prefix in ("msg_", "fc_", "rs_")
}


def item_id_matcher(prefix: str) -> Callable[[str], object]:
    """The test of :func:`valid_item_id` for one of its prefixes, to call without the lookup
    (a match object when the API would accept ``item_id``, else ``None``; ``""`` fails)."""
    return _ITEM_IDS[prefix]


_MESSAGE_ID = _ITEM_IDS["msg_"]


def valid_item_id(item_id: str | None, prefix: str) -> str | None:
    """``item_id`` when the API would accept it for this item type (``msg_``, ``fc_``, ``rs_``)."""
    if not item_id:
        return None
    matches = _ITEM_IDS.get(prefix)
    if matches is not None:
        return item_id if matches(item_id) else None
    if item_id.startswith(prefix) and _ITEM_ID.fullmatch(item_id):
        return item_id
    return None


def _media_item(message: Message, stages: Any) -> InputMessage | None:
    blocks: list[InputContent] = []
    for media in message.attachments:
        blocks.extend(stages.render_media_blocks(media=media) or ())
    return InputMessage(role="user", content=tuple(blocks)) if blocks else None


@hookimpl(trylast=True)
def render_timeline_message(
    self_identity: str, envelope_nonce: EnvelopeNonce, stages: Any, message: Message
) -> tuple[InputItem, ...]:
    # The options first, the record last: the relay calls a per-record stage as a partial of
    # its options (in C), with the record by position (see _relay.positional_caller).
    identity = message.identity
    role = message.role
    # The nonce only where an envelope is built: the agent's own output goes out unwrapped.
    if role == "user":
        tag = f"message_{envelope_nonce(message.id)}"
        shown = escape_attr(identity.display if identity is not None else role)
        text = (
            f'<{tag} from="{shown}" role="user" createdAt="{iso(message.created_at)}">\n'
            f"{neutralise(message.content or '', tag)}\n</{tag}>"
        )
        first = InputText(text=text)
        if not message.attachments:
            return (InputMessage(role="user", content=(first,)),)
        blocks: list[InputContent] = [first]
        for media in message.attachments:
            blocks.extend(stages.render_media_blocks(media=media) or ())
        return (InputMessage(role="user", content=tuple(blocks)),)

    items: list[InputItem] = []
    if (identity.identifier if identity is not None else role) == self_identity:
        text = neutralise(message.content or "")
        refusal = neutralise(message.refusal) if message.refusal else ""
        if text or refusal:
            item_id = message.id
            if _MESSAGE_ID(item_id):  # valid_item_id(item_id, "msg_")
                parts: tuple[OutputText | Refusal, ...] = ()
                if text:
                    parts = (
                        OutputText(
                            text=text,
                            annotations=message.annotations,
                            logprobs=message.logprobs or None,
                        ),
                    )
                if refusal:
                    parts += (Refusal(refusal=refusal),)
                answer = OutputMessage(
                    role="assistant",
                    status="completed",
                    id=item_id,
                    content=parts,
                    phase=message.phase,
                )
                if not message.attachments:
                    return (answer,)
                items.append(answer)
            else:
                said = "\n\n".join(part for part in (text, refusal) if part)
                items.append(InputMessage(role="assistant", content=said, phase=message.phase))
    elif message.content:
        tag = f"peer_agent_output_{envelope_nonce(message.id)}"
        shown = escape_attr(identity.display if identity is not None else role)
        text = (
            f'<{tag} from="{shown}" createdAt="{iso(message.created_at)}">\n'
            f"{neutralise(message.content, tag)}\n</{tag}>"
        )
        items.append(InputMessage(role="assistant", content=text))
    if message.attachments:
        attachments = _media_item(message, stages)
        if attachments is not None:
            items.append(attachments)
    return tuple(items)
