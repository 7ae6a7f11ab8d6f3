"""Loading what stored records point at, per call.

:class:`ContextAssembler` reads the bytes behind file pointers (attachments, artifact bodies)
just before a request is rendered. The bytes never go back into the store: a stored record keeps
its pointer only.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from turnwire.errors import RenderError
from turnwire.model import Artifact, Media, Thread

__all__ = ["ContextAssembler"]


class ContextAssembler:
    """Inlines file bytes for one render, within size limits.

    :param max_file_bytes: the largest single file that may be inlined.
    :param max_request_bytes: the most file bytes one render may inline in total.
    """

    def __init__(
        self, *, max_file_bytes: int = 32 * 2**20, max_request_bytes: int = 64 * 2**20
    ) -> None:
        self.max_file_bytes = max_file_bytes
        self.max_request_bytes = max_request_bytes

    def inline(self, thread: Thread) -> Thread:
        """``thread`` with every pointer's bytes loaded."""
        budget = [self.max_request_bytes]
        replace = msgspec.structs.replace

        def media(item: Media) -> Media:
            if item.data is not None or item.path is None:
                return item
            return replace(item, data=self._read(item.path, item.id, budget), path=None)

        def artifact(item: Artifact | None, owner: str) -> Artifact | None:
            if item is None or item.text is not None or item.path is None:
                return item
            data = self._read(item.path, owner, budget)
            return replace(item, text=data.decode("utf-8", "replace"), path=None)

        messages = tuple(
            replace(m, attachments=tuple(media(a) for a in m.attachments)) if m.attachments else m
            for m in thread.messages
        )
        calls = []
        for call in thread.tool_calls:
            result = call.result
            if result is not None and (result.media or result.artifact or result.artifacts):
                result = replace(
                    result,
                    media=None if result.media is None else tuple(media(m) for m in result.media),
                    artifact=artifact(result.artifact, call.id),
                    artifacts=None
                    if result.artifacts is None
                    else tuple(a for a in (artifact(a, call.id) for a in result.artifacts) if a),
                )
                calls.append(replace(call, result=result))
            else:
                calls.append(call)
        retrievables = tuple(
            replace(r, artifact=artifact(r.artifact, r.id)) if r.artifact else r
            for r in thread.retrievables
        )
        return replace(
            thread, messages=messages, tool_calls=tuple(calls), retrievables=retrievables
        )

    def _read(self, path: str, owner: str, budget: list[int]) -> bytes:
        file = Path(path)
        try:
            size = file.stat().st_size
        except OSError as err:
            raise RenderError(
                f"record {owner} points at {path}, which cannot be read: {err.strerror}",
                stage="context",
                record=owner,
            ) from err
        if size > self.max_file_bytes:
            raise RenderError(
                f"record {owner} points at {path} ({size} bytes), over the per-file limit of "
                f"{self.max_file_bytes} bytes",
                stage="context",
                record=owner,
            )
        if size > budget[0]:
            raise RenderError(
                f"record {owner} points at {path} ({size} bytes), which would pass the "
                f"per-request limit of {self.max_request_bytes} file bytes",
                stage="context",
                record=owner,
            )
        budget[0] -= size
        return file.read_bytes()
