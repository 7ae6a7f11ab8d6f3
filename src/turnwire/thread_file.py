"""Thread files, schema version 1 (YAML or JSON) ↔ :class:`~turnwire.model.Thread`.

The schema is the one in DESIGN.md; field names are the model's. Relative ``path`` pointers
(attachments, artifacts) are resolved against the thread file's folder when it is loaded, so a
loaded thread renders wherever the process runs. Every validation error names its ``$.path``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec
import yaml

from turnwire.errors import ThreadFileError, validation_location
from turnwire.model import Thread, map_pointers

__all__ = ["dump_thread", "load_thread", "save_thread", "thread_to_builtins"]


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
        path, detail = validation_location(err)
        raise ThreadFileError(f"{path}: {detail}", path=path) from err


def _absolute(pointer: str | None, base: Path) -> str | None:
    if pointer is None or os.path.isabs(pointer):
        return pointer
    # Lexical only: symlinks are followed (and confined) when the file is read, and a symlink
    # loop is the reader's refusal, not a traceback here.
    return os.path.abspath(os.path.join(base, pointer))


def _rebase(thread: Thread, base: Path) -> Thread:
    """Relative pointers made absolute against the thread file's folder."""
    replace = msgspec.structs.replace
    return map_pointers(
        thread,
        lambda media: replace(media, path=_absolute(media.path, base)) if media.path else media,
        lambda art: replace(art, path=_absolute(art.path, base)) if art.path else art,
    )


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


def thread_to_builtins(thread: Thread) -> dict[str, Any]:
    """The thread as plain data in schema version 1 (defaults left out, ``version`` first)."""
    data = msgspec.to_builtins(thread)
    return {"version": 1, **{k: v for k, v in data.items() if k != "version"}}


def dump_thread(thread: Thread) -> bytes:
    """The thread as JSON in schema version 1 (inline bytes as ``data_base64``)."""
    return msgspec.json.encode(thread_to_builtins(thread))


def _relative(pointer: str | None, base: Path) -> str | None:
    if pointer is None:
        return None
    try:
        return str(Path(pointer).resolve().relative_to(base))
    except ValueError:
        return pointer


def save_thread(thread: Thread, path: str | os.PathLike[str]) -> None:
    """Write ``thread`` to ``path`` (YAML for ``.yaml``/``.yml``, else JSON), atomically.

    Pointers inside the file's folder are written relative to it again; the file is replaced
    in one step, so a crash leaves either the old or the new thread, never half of one.
    """
    target = Path(path)
    base = target.resolve().parent
    replace = msgspec.structs.replace
    portable = map_pointers(
        thread,
        lambda media: replace(media, path=_relative(media.path, base)) if media.path else media,
        lambda art: replace(art, path=_relative(art.path, base)) if art.path else art,
    )
    tree = thread_to_builtins(portable)
    if target.suffix.lower() in (".yaml", ".yml"):
        data = yaml.safe_dump(tree, sort_keys=False, allow_unicode=True).encode()
    else:
        data = msgspec.json.format(msgspec.json.encode(tree), indent=2) + b"\n"
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    temporary.write_bytes(data)
    os.replace(temporary, target)
