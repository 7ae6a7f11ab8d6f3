"""Thread files, schema version 1 (YAML or JSON) ↔ :class:`~turnwire.model.records.Thread`.

The file is the :class:`~turnwire.model.records.Thread` Struct as plain data: field names are the
model's, and the same Structs validate it. ``docs/`` documents every field (the thread file page,
generated from those Structs), and :func:`turnwire.config.schema.thread_schema` (``turnwire schema
thread``) publishes it as JSON Schema. Relative ``path`` pointers (attachments, artifacts) are
resolved against the thread file's folder when it is loaded, so a loaded thread renders wherever
the process runs. Every validation error names its ``$.path``.

Files are read and parsed within the limits of :mod:`turnwire.files.loading` (size, nesting,
integer range, YAML aliases, UTF-8 text). JSON (a ``.json`` file, or text starting with ``{``)
is decoded by msgspec straight into the :class:`~turnwire.model.records.Thread`; only a document
that
does not validate is decoded again as plain data, so that its error names the same ``$.path``
as a parsed mapping's would.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec
import yaml

from turnwire.errors import (
    InputError,
    ThreadFileChangedError,
    ThreadFileError,
    validation_location,
)
from turnwire.files.loading import (
    INT_MAX,
    INT_MIN,
    DocumentKind,
    Format,
    format_for,
    looks_like_json,
)
from turnwire.model import checks
from turnwire.model.checks import (
    RECORD_FIELDS,
    check_date,
    check_pointer,
    date_limit,
    points,
    record_pointers,
)
from turnwire.model.records import HostedItem, Message, Thought, Thread, ToolCall, map_pointers

__all__ = ["dump_thread", "load_thread", "load_thread_bytes", "save_thread", "thread_to_builtins"]


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
        thread = msgspec.convert(data, Thread)
    except msgspec.ValidationError as err:
        path, detail = validation_location(err)
        raise ThreadFileError(f"{path}: {detail}", path=path) from err
    _check_pointers(thread)
    _check_dates(thread)
    return thread


FUTURE_SKEW = checks.FUTURE_SKEW
"""How far ahead of this machine's clock a record may be dated (clocks drift)."""


def _check_dates(thread: Thread, now: datetime | None = None) -> None:
    """Refuse a record dated ahead of now (past :data:`FUTURE_SKEW`; see
    :func:`turnwire.model.checks.check_date`)."""
    limit = date_limit(now)
    for field in RECORD_FIELDS:
        for index, record in enumerate(getattr(thread, field)):
            check_date(field, index, record, limit)


def _pointers(thread: Thread) -> Iterator[tuple[str, str | None]]:
    """``($.path, pointer)`` of every file pointer, in the order of :func:`map_pointers`."""
    for field in ("messages", "tool_calls", "retrievables"):
        for index, record in enumerate(getattr(thread, field)):
            if points(field, record):
                yield from record_pointers(field, index, record)


def _check_pointers(thread: Thread) -> None:
    for path, pointer in _pointers(thread):
        check_pointer(path, pointer)


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


_UMASK = os.umask(0)  # read once, at import: setting it back at once is then harmless
os.umask(_UMASK)

THREAD_FILES = DocumentKind(
    "thread file", ThreadFileError, yaml_syntax="neither valid YAML nor JSON"
)
"""How thread files are read: their limits and their error."""

STDIN = "-"
"""The source :func:`load_thread` reads from standard input."""


# The parts of a Thread whose type does not bound them: `Any` trees (checked for nesting and
# integer range) and plain `int` fields. tests/files/test_loading.py derives this list from the
# model.
UNBOUNDED_FIELDS = (
    "output_schema.schema",
    "tools[].parameters",
    "tool_calls[].args",
    "hosted_items[].item",
    "messages[].annotations[]",
    "messages[].logprobs[]",
    "messages[].seq",
    "thoughts[].seq",
    "tool_calls[].seq",
    "hosted_items[].seq",
    "hosted_tools[].filters",
    "hosted_tools[].parameters",
    "hosted_tools[].tools[].parameters",
)


def check_unbounded(thread: Thread, name: str, data: bytes) -> None:
    """The limits msgspec's typed decoding cannot check (see ``UNBOUNDED_FIELDS``)."""
    check_tree = THREAD_FILES.check_tree
    if thread.output_schema is not None:
        schema = thread.output_schema.schema
        check_tree(schema, name=name, data=data, path="$.output_schema.schema", depth=3)
    for index, tool in enumerate(thread.tools):
        if tool.parameters:
            path = f"$.tools[{index}].parameters"
            check_tree(tool.parameters, name=name, data=data, path=path, depth=4)
    for index, call in enumerate(thread.tool_calls):
        if call.args:
            path = f"$.tool_calls[{index}].args"
            check_tree(call.args, name=name, data=data, path=path, depth=4)
    for index, message in enumerate(thread.messages):
        if message.annotations or message.logprobs:
            for field in ("annotations", "logprobs"):
                for at, tree in enumerate(getattr(message, field)):
                    path = f"$.messages[{index}].{field}[{at}]"
                    check_tree(tree, name=name, data=data, path=path, depth=5)
    for index, hosted in enumerate(thread.hosted_items):
        path = f"$.hosted_items[{index}].item"
        check_tree(hosted.item, name=name, data=data, path=path, depth=4)
    for index, declared in enumerate(thread.hosted_tools):
        filters = getattr(declared, "filters", None)
        if isinstance(filters, dict):  # file search's attribute filter: free-form
            path = f"$.hosted_tools[{index}].filters"
            check_tree(filters, name=name, data=data, path=path, depth=4)
        parameters = getattr(declared, "parameters", None)
        if isinstance(parameters, dict):  # a client tool search's JSON Schema
            path = f"$.hosted_tools[{index}].parameters"
            check_tree(parameters, name=name, data=data, path=path, depth=4)
        for place, member in enumerate(getattr(declared, "tools", None) or ()):
            parameters = getattr(member, "parameters", None)
            if isinstance(parameters, dict):  # a namespace function's JSON Schema
                path = f"$.hosted_tools[{index}].tools[{place}].parameters"
                check_tree(parameters, name=name, data=data, path=path, depth=6)
    timeline: tuple[tuple[str, Sequence[Message | Thought | ToolCall | HostedItem]], ...] = (
        ("messages", thread.messages),
        ("thoughts", thread.thoughts),
        ("tool_calls", thread.tool_calls),
        ("hosted_items", thread.hosted_items),
    )
    for field, records in timeline:
        for index, record in enumerate(records):
            if record.seq > INT_MAX or record.seq < INT_MIN:
                THREAD_FILES.check_int(record.seq, name=name, path=f"$.{field}[{index}].seq")


def _decode_json(data: bytes, name: str, *, or_yaml: bool) -> Thread:
    try:
        thread: Thread = THREAD_FILES.decode_json(data, name=name, type=Thread)
    except msgspec.ValidationError:
        # Decoded again as plain data, to fail with the same message a mapping would.
        return _convert(THREAD_FILES.decode_json(data, name=name, type=Any))
    except InputError as json_error:
        if not or_yaml:
            raise
        # It only looked like JSON: YAML's flow style starts with `{` too.
        try:
            tree = THREAD_FILES.parse_yaml(data, name=name)
        except InputError:
            raise json_error from None
        return _convert(tree)
    check_unbounded(thread, name, data)
    _check_pointers(thread)
    _check_dates(thread)
    return thread


def _parse(data: bytes, name: str, format: Format | None) -> Thread:
    data = THREAD_FILES.text(data, name=name)
    if format == "json" or (format is None and looks_like_json(data)):
        return _decode_json(data, name, or_yaml=format is None)
    return _convert(THREAD_FILES.parse_yaml(data, name=name))


def _lone_surrogate(value: Any, path: str) -> str | None:
    """The ``$.path`` of the first string (key or value) in ``value`` holding a lone
    surrogate, else ``None``."""
    if isinstance(value, str):
        try:
            value.encode()
        except UnicodeEncodeError:
            return path
        return None
    if isinstance(value, Mapping):
        for key, item in value.items():
            where = f"{path}.{key}" if isinstance(key, str) else f"{path}[{key!r}]"
            if isinstance(key, str) and _lone_surrogate(key, path) is not None:
                return where
            found = _lone_surrogate(item, where)
            if found is not None:
                return found
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found = _lone_surrogate(item, f"{path}[{index}]")
            if found is not None:
                return found
    return None


def load_thread(source: str | os.PathLike[str] | Mapping[str, Any]) -> Thread:
    """Load a thread from a YAML or JSON file, standard input (``"-"``), or an already
    parsed mapping.

    The format is the suffix's (``.json``, ``.yaml``, ``.yml``), else told by the content.
    Standard input's relative pointers resolve against the working directory.

    :raises ThreadFileError: the file cannot be read, breaks a limit, does not parse or does
        not match schema version 1; a schema error's message starts with the ``$.path`` at
        fault, a parse error's names the file, line and column.
    """
    if isinstance(source, Mapping):
        where = _lone_surrogate(source, "$")
        if where is not None:  # a file's decoder refuses them; a mapping never met one
            raise ThreadFileError(
                f"{where}: a lone surrogate (half of a UTF-16 pair) is no text; give the "
                "character itself",
                path=where,
            )
        return _convert(source)
    if isinstance(source, str) and source == STDIN:
        data = THREAD_FILES.read_stream(sys.stdin.buffer, name="<stdin>")
        return load_thread_bytes(data, name="<stdin>")
    path = Path(source)
    data = THREAD_FILES.read(path)
    return _rebase(_parse(data, str(path), format_for(path)), path.resolve().parent)


def load_thread_bytes(
    data: bytes,
    *,
    name: str = "<stdin>",
    format: Format | None = None,
    base: str | os.PathLike[str] | None = None,
) -> Thread:
    """Load a thread from the bytes of a thread file (standard input, a network upload).

    :param name: what messages call the source.
    :param format: ``json``, ``yaml``, or ``None`` to tell by the content (JSON when the
        first non-blank byte is ``{``).
    :param base: the folder relative pointers are resolved against (the working directory
        when omitted).
    :raises ThreadFileError: the bytes break a limit, do not parse, or do not match schema
        version 1.
    """
    folder = Path.cwd() if base is None else Path(base)
    return _rebase(_parse(data, name, format), folder.resolve())


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


class _Dumper(yaml.SafeDumper):
    """PyYAML's safe dumper, with a string holding a character YAML reads as a line break
    double-quoted: PyYAML writes U+0085 raw into a plain or single-quoted scalar, which
    reads back as a space (the text, and the prefix fingerprints over it, would change)."""


def _represent_text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\x85" in value or "\u2028" in value or "\u2029" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"')
    return dumper.represent_str(value)


_Dumper.add_representer(str, _represent_text)


def dump_yaml(tree: Any) -> str:
    """``tree`` as YAML that reads back as the same values (keys in their order)."""
    return yaml.dump(tree, Dumper=_Dumper, sort_keys=False, allow_unicode=True)


def file_digest(path: str | os.PathLike[str]) -> str | None:
    """The SHA-256 of the file's bytes (``None`` when there is no file)."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except FileNotFoundError:
        return None


def save_thread(
    thread: Thread,
    path: str | os.PathLike[str],
    *,
    unchanged_since: str | None = None,
    result: object = None,
) -> None:
    """Write ``thread`` to ``path`` (YAML for ``.yaml``/``.yml``, else JSON), atomically.

    Pointers inside the file's folder are written relative to it again; the file is replaced
    in one step, so a crash leaves either the old or the new thread, never half of one.

    :param unchanged_since: the :func:`file_digest` the file had when the thread was read:
        when it has another now (a second run saved it meanwhile), nothing is written and
        :class:`~turnwire.errors.ThreadFileChangedError` (carrying ``result``) is raised. The
        check and the replacement hold an exclusive lock on the file being replaced, so of
        two runs that finish together the second sees the first one's file and stops.
    """
    target = Path(path)
    if target.is_symlink():  # written through the link: the pointers are the real file's
        target = target.resolve()
    base = target.resolve().parent
    replace = msgspec.structs.replace
    portable = map_pointers(
        thread,
        lambda media: replace(media, path=_relative(media.path, base)) if media.path else media,
        lambda art: replace(art, path=_relative(art.path, base)) if art.path else art,
    )
    tree = thread_to_builtins(portable)
    if target.suffix.lower() in (".yaml", ".yml"):
        data = dump_yaml(tree).encode()
    else:
        data = msgspec.json.format(msgspec.json.encode(tree), indent=2) + b"\n"
    # A name of its own for each save (two saves of one file in one process never share it).
    try:
        handle, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as err:  # no such folder, no permission: nothing was written
        raise ThreadFileError(
            f"thread file {target} cannot be written ({err.strerror or err}); nothing was saved"
        ) from None
    temporary = Path(name)
    try:
        with os.fdopen(handle, "wb") as written:
            # The mode the file had, else the umask's (mkstemp makes it 0600).
            try:
                mode = stat.S_IMODE(target.stat().st_mode)
            except FileNotFoundError:
                mode = 0o666 & ~_UMASK
            if hasattr(os, "fchmod"):  # POSIX
                os.fchmod(written.fileno(), mode)
            written.write(data)
            written.flush()
            os.fsync(written.fileno())  # the bytes on disk before the name points at them
        if unchanged_since is None:
            os.replace(temporary, target)
        else:
            with _locked(target):
                if file_digest(target) != unchanged_since:
                    raise ThreadFileChangedError(str(target), result=result)
                os.replace(temporary, target)
        _sync_folder(target.parent)  # and the rename itself
    finally:  # a save that failed leaves no temporary file behind (one that worked has none)
        temporary.unlink(missing_ok=True)


def _sync_folder(folder: Path) -> None:
    """Make a rename into ``folder`` durable (where a folder can be opened for it)."""
    try:
        descriptor = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass  # a file system that cannot sync folders: the rename stands as it is
    finally:
        os.close(descriptor)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive advisory lock on the file at ``path`` while the block runs (a waiting
    locker wakes on the file it opened, replaced meanwhile: what it reads then is the new
    one); with no file, or no ``fcntl`` (Windows), the block runs unlocked."""
    try:
        import fcntl

        handle = open(path, "rb")  # noqa: SIM115 - closed below, after the unlock
    except (ImportError, FileNotFoundError):
        yield
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
