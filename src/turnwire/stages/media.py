"""Built-in ``render_media_blocks``: images, documents, and the unsupported-media policy.

An attachment's source decides the native block's field: its bytes (``path`` or
``data_base64``, loaded by then) go as a ``data:`` URI, a ``url`` as ``image_url`` or
``file_url``, a ``file_id`` as ``file_id``, each sent as it is. Every source gets the same id
marker first, and audio and video follow the policy whatever their source.
"""

from __future__ import annotations

import base64
from typing import Any, cast

from turnwire.config.nonce import EnvelopeNonce
from turnwire.config.options import EnvelopeAttrs, MediaPolicy, Warn
from turnwire.errors import RenderError, UnsupportedMediaError
from turnwire.hookspecs import hookimpl
from turnwire.model.records import Media
from turnwire.stages._text import format_size, sanitise_filename, sanitise_mime, trust_floor
from turnwire.wire import InputContent, InputFile, InputImage, InputText
from turnwire.wire.content import FileDetail, ImageDetail

__all__ = ["media_marker", "render_media_blocks"]

_MODALITY = {"inert": "inert", "extractable-instructions": "extractable"}


def media_marker(media: Media) -> str:
    """The id marker that precedes every rendered attachment."""
    return f"[media id: {sanitise_filename(media.id)} | {sanitise_filename(media.filename)}]"


def _data_uri(media: Media) -> str:
    if media.data is None:
        raise RenderError(
            f"media {media.id} points at {media.path!r} but its bytes were not loaded; render "
            "through turnwire.render() or load them with turnwire.inline_media()",
            stage="render_media_blocks",
            record=media.id,
        )
    encoded = base64.b64encode(media.data).decode("ascii")
    return f"data:{sanitise_mime(media.mime_type)};base64,{encoded}"


def _wrap(media: Media, tier: str, text: str, envelope_nonce: EnvelopeNonce, stages: Any) -> str:
    attrs = EnvelopeAttrs(
        nonce=envelope_nonce(media.id),
        kind="media-fallback",
        modality=_MODALITY.get(media.hazard, "opaque"),
    )
    if tier == "first-party":
        return str(stages.render_trusted_content(content=text, attrs=attrs) or "")
    return str(stages.render_untrusted_content(content=text, attrs=attrs) or "")


def _fallback(
    media: Media, policy: MediaPolicy, envelope_nonce: EnvelopeNonce, warn: Warn, stages: Any
) -> str:
    if policy.for_kind(media.kind) == "fallback-stash":
        entries = {entry.key: entry for entry in media.stash}
        for key in policy.stash_keys:
            entry = entries.get(key)
            if entry is not None:
                tier = trust_floor(media.trust_tier, entry.trust_tier)
                return _wrap(media, tier, entry.value, envelope_nonce, stages)
        warn(
            f"unsupported_media_policy=fallback-stash for media {media.id}: no stash entry under "
            f"{', '.join(policy.stash_keys)}; using a synthetic description instead"
        )
    description = (
        f"[media: {sanitise_filename(media.filename)}, {sanitise_mime(media.mime_type)}, "
        f"{format_size(media.byte_length)}]"
    )
    return _wrap(media, media.trust_tier, description, envelope_nonce, stages)


def _image(media: Media, image_detail: ImageDetail | None) -> InputImage:
    detail = media.detail or image_detail or "auto"
    if media.file_id is not None:
        return InputImage(detail=detail, file_id=media.file_id)
    return InputImage(detail=detail, image_url=media.url or _data_uri(media))


def _document(media: Media) -> InputFile:
    detail = cast("FileDetail | None", media.detail)  # Media refuses `original` on one
    if media.file_id is not None or media.url is not None:
        # The API names a referenced file itself: a file name goes only when one is given.
        return InputFile(
            filename=sanitise_filename(media.filename) or None,
            file_id=media.file_id,
            file_url=media.url,
            detail=detail,
        )
    return InputFile(
        filename=sanitise_filename(media.filename or media.id),
        file_data=_data_uri(media),
        detail=detail,
    )


@hookimpl(trylast=True)
def render_media_blocks(
    media: Media,
    unsupported_media_policy: MediaPolicy,
    image_detail: ImageDetail | None,
    envelope_nonce: EnvelopeNonce,
    warn: Warn,
    stages: Any,
) -> tuple[InputContent, ...]:
    marker = media_marker(media)
    if media.kind == "image":
        return (InputText(text=marker), _image(media, image_detail))
    if media.kind == "document":
        return (InputText(text=marker), _document(media))
    if unsupported_media_policy.for_kind(media.kind) == "throw":
        raise UnsupportedMediaError(
            kind=media.kind,
            mime_type=sanitise_mime(media.mime_type),
            filename=sanitise_filename(media.filename),
            record=media.id,
        )
    text = _fallback(media, unsupported_media_policy, envelope_nonce, warn, stages)
    return (InputText(text=f"{marker}\n{text}"),)
