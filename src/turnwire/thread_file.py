"""Thread files, schema version 1 (YAML or JSON) ↔ :class:`~turnwire.model.Thread`.

The schema is the one in DESIGN.md; field names are the model's. Relative ``path`` pointers
(attachments, artifacts) are resolved against the thread file's folder when it is loaded, so a
loaded thread renders wherever the process runs. Every validation error names its ``$.path``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec
import yaml

from turnwire.errors import ThreadFileError
from turnwire.model import Artifact, Media, Thread

__all__ = ["dump_thread", "load_thread"]

_AT_PATH = re.compile(r" - at `(\$[^`]*)`$")


def _convert(data: Any) -> Thread:
    if not isinstance(data, Mapping):
        raise ThreadFileError("a thread file must hold a mapping at the top level", path="$")
    version = data.get("version", 1)
    if version != 1:
        raise ThreadFileError(
            f"$.version: this turnwire reads thread schema version 1, not {version!r}",
            path="$.version",
        )
    try:
        return msgspec.convert(data, Thread)
    except msgspec.ValidationError as err:
        message = str(err)
        match = _AT_PATH.search(message)
        path = match.group(1) if match else "$"
        raise ThreadFileError(f"{path}: {_AT_PATH.sub('', message)}", path=path) from err


def _absolute(pointer: str | None, base: Path) -> str | None:
    if pointer is None or os.path.isabs(pointer):
        return pointer
    return str((base / pointer).resolve())


def _rebase_media(media: Media, base: Path) -> Media:
    return msgspec.structs.replace(media, path=_absolute(media.path, base))


def _rebase_artifact(artifact: Artifact | None, base: Path) -> Artifact | None:
    if artifact is None or artifact.path is None:
        return artifact
    return msgspec.structs.replace(artifact, path=_absolute(artifact.path, base))


def _rebase(thread: Thread, base: Path) -> Thread:
    replace = msgspec.structs.replace
    messages = tuple(
        replace(m, attachments=tuple(_rebase_media(a, base) for a in m.attachments))
        if m.attachments
        else m
        for m in thread.messages
    )
    calls = []
    for call in thread.tool_calls:
        result = call.result
        if result is not None:
            result = replace(
                result,
                artifact=_rebase_artifact(result.artifact, base),
                artifacts=None
                if result.artifacts is None
                else tuple(a for a in (_rebase_artifact(a, base) for a in result.artifacts) if a),
                media=None
                if result.media is None
                else tuple(_rebase_media(m, base) for m in result.media),
            )
            calls.append(replace(call, result=result))
        else:
            calls.append(call)
    retrievables = tuple(
        replace(r, artifact=_rebase_artifact(r.artifact, base)) for r in thread.retrievables
    )
    return replace(thread, messages=messages, tool_calls=tuple(calls), retrievables=retrievables)


def load_thread(source: str | os.PathLike[str] | Mapping[str, Any]) -> Thread:
    """Load a thread from a YAML or JSON file, or from an already parsed mapping.

    :raises ThreadFileError: the file cannot be read or does not match schema version 1; the
        message starts with the ``$.path`` at fault.
    """
    if isinstance(source, Mapping):
        return _convert(source)
    path = Path(source)
    try:
        text = path.read_bytes()
    except OSError as err:
        raise ThreadFileError(f"cannot read thread file {path}: {err.strerror}") from err
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ThreadFileError(f"thread file {path} is neither valid YAML nor JSON: {err}") from err
    return _rebase(_convert(data), path.resolve().parent)


def dump_thread(thread: Thread) -> bytes:
    """The thread as JSON in schema version 1 (inline bytes as ``data_base64``)."""
    return msgspec.json.encode(thread)
