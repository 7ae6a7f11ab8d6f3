"""What every store does the same way above its SQL: the header a store keeps, timestamps,
reading a stored value, loading a thread from its turns, the files an import copies into the
store, exporting, and removing a thread's files."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self, TypeVar

import msgspec

from turnwire.errors import InputError, StoreError
from turnwire.files.pointers import ContextAssembler, located_pointers
from turnwire.files.thread_file import check_unbounded, save_thread
from turnwire.model.checks import check_thread
from turnwire.model.records import Thread, map_pointers
from turnwire.model.timeline import not_before
from turnwire.rendering.ledger import Ledger
from turnwire.store._kept import KeptThreads, Snapshot
from turnwire.store.turns import Part, Turn, TurnBuilder

__all__ = [
    "HOSTED_ITEMS_PATTERN",
    "StoreRecords",
    "decode_header",
    "decode_turn",
    "encode_header",
    "encode_turn",
    "folder_key",
    "header_without_hosted_items",
    "iso",
    "stored",
    "unencodable",
    "utc",
]

_HEADER = msgspec.json.Decoder(Thread)
_PARTS = msgspec.json.Decoder(tuple[Part, ...])
_LEDGER = msgspec.json.Decoder(Ledger)
_ENCODER = msgspec.json.Encoder()
_DAMAGE = (msgspec.DecodeError, ValueError, TypeError, OverflowError, RecursionError)
_T = TypeVar("_T")


def utc(moment: datetime) -> datetime:
    """``moment`` in UTC, as a store keeps it; a moment that has none (a thread file may say
    ``9999-12-31T23:59:59-23:59``, past year 9999 in UTC) is a :class:`StoreError`."""
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        raise StoreError(
            f"the timestamp {moment.isoformat()} is past the range a store keeps (in UTC it is "
            "beyond year 9999); nothing was stored"
        ) from None


def iso(moment: datetime) -> str:
    """``moment`` in UTC as ISO 8601 text, to the microsecond: how a text column keeps it."""
    return utc(moment).isoformat(timespec="microseconds")


def stored(thread_id: str, column: str, decode: Callable[[Any], _T], value: Any) -> _T:
    """``decode(value)``, the store's ``column`` of thread ``thread_id``: a value that does not
    decode (a row damaged outside turnwire) is a :class:`StoreError` naming both."""
    try:
        return decode(value)
    except _DAMAGE as err:
        detail = (str(err).splitlines() or [type(err).__name__])[0][:300]
        raise StoreError(
            f"the store's {column} of thread {thread_id!r} is damaged and cannot be read "
            f"({detail}); restore the store from a backup, or delete the thread"
        ) from None
    except InputError as err:  # a header past the thread file's limits
        raise StoreError(
            f"the store's {column} of thread {thread_id!r} is past the thread file's limits "
            f"({err}); restore the store from a backup, or delete the thread"
        ) from None


def encode_header(thread: Thread) -> str:
    """The header a store keeps for ``thread``: the thread without its records
    (:meth:`Thread.header_only`), which live in its turns, each once.

    :raises turnwire.errors.ThreadFileError: the header (built in code) breaks a rule a thread
        file is held to (:func:`turnwire.model.checks.check_thread`); nothing is stored.
    """
    header = thread.header_only()
    check_thread(header)
    return _ENCODER.encode(header).decode()


def decode_header(data: str | bytes) -> Thread:
    """A stored header, with the limits a thread file is read under."""
    raw = data.encode() if isinstance(data, str) else data
    header = _HEADER.decode(raw)
    check_unbounded(header, "header", raw)
    return header


HOSTED_ITEMS_PATTERN = '%"hosted_items"%'
"""A ``LIKE`` pattern that matches every stored header holding hosted items (and a few
more): what :func:`header_without_hosted_items` is asked about."""


def header_without_hosted_items(data: str | bytes) -> str | None:
    """A header stored before schema version 3, as this turnwire writes it: without the hosted
    items it kept besides its turns. ``None`` when it holds none, or does not decode (a damaged
    row is left as it is, and reads as damaged)."""
    try:
        header = _HEADER.decode(data)
    except _DAMAGE:
        return None
    return encode_header(header) if header.hosted_items else None


def unencodable(where: object, err: UnicodeEncodeError) -> str:
    """The message of a value no store can hold: text with a lone surrogate (half of a UTF-16
    pair, which is no Unicode text: it has no UTF-8 form)."""
    return (
        f"the thread store {where} cannot hold text with a lone surrogate "
        f"(U+{ord(err.object[err.start]):04X} at character {err.start}); nothing was stored"
    )


def encode_turn(turn: Turn) -> tuple[str, str | None, str | None]:
    """A turn's parts, usage and ledger as the JSON text a store keeps."""
    usage = None if turn.usage is None else _ENCODER.encode(turn.usage).decode()
    ledger = None if turn.ledger is None else _ENCODER.encode(turn.ledger).decode()
    return _ENCODER.encode(turn.parts).decode(), usage, ledger


def decode_turn(thread_id: str, row: Sequence[Any], timestamp: Callable[[Any], datetime]) -> Turn:
    """A stored turn from its row ``(id, role, created_at, parts, model, usage,
    request_fingerprint, ledger)``; ``timestamp`` reads the ``created_at`` column."""
    turn_id, role, created, parts, model, usage, fingerprint, ledger = row
    where = f"turn {turn_id!r}"
    return Turn(
        id=turn_id,
        role=role,
        created_at=stored(thread_id, f"{where} created_at", timestamp, created),
        parts=stored(thread_id, f"{where} parts", _PARTS.decode, parts),
        model=model,
        usage=None
        if usage is None
        else stored(thread_id, f"{where} usage", msgspec.json.decode, usage),
        request_fingerprint=fingerprint,
        ledger=None
        if ledger is None
        else stored(thread_id, f"{where} ledger", _LEDGER.decode, ledger),
    )


@contextlib.contextmanager
def _folder_locked(folder: Path) -> Iterator[None]:
    """An exclusive advisory lock on ``folder`` (its directory file) while the block runs;
    without ``fcntl`` (Windows), the block runs unlocked."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - POSIX only here
        yield
        return
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # closing it releases the lock


_UMASK = os.umask(0)  # read once, at import: setting it back at once is then harmless
os.umask(_UMASK)


def folder_key(thread_id: str) -> str:
    """A thread's name among the store's file folders: a digest, never a path the id spells."""
    return hashlib.sha256(thread_id.encode()).hexdigest()[:24]


def thread_folders(files_folder: Path, thread_id: str) -> list[Path]:
    """The folders of ``files_folder`` that hold ``thread_id``'s files (one per import and per
    question that sent files), each ``<folder_key>.<suffix>``."""
    return sorted(files_folder.glob(f"{folder_key(thread_id)}.*"))


def new_thread_folder(files_folder: Path, thread_id: str) -> Path:
    """A fresh folder name for files of ``thread_id`` (not created)."""
    return files_folder / f"{folder_key(thread_id)}.{uuid.uuid4().hex[:8]}"


_NAME_BYTES = 200  # a copy's file name, well under the 255 bytes of most file systems


def copy_name(prefix: str, original: str) -> str:
    """The file name of a copy: ``prefix``, then ``original`` cut (in its stem, on a character
    boundary, its extension kept when short) so the whole fits in 200 bytes."""
    stem, dot, extension = original.rpartition(".")
    if not dot or not stem or len(extension.encode()) > 16:
        stem, extension = original, ""
    suffix = f".{extension}" if extension else ""
    room = _NAME_BYTES - len(prefix.encode()) - len(suffix.encode())
    cut = stem.encode()[: max(room, 1)].decode("utf-8", "ignore")
    return f"{prefix}{cut}{suffix}"


def copy_files(thread: Thread, folder: Path, files: ContextAssembler) -> Thread:
    """``thread`` with every file it points at read through ``files`` and copied into
    ``folder`` (each pointer once), the pointers leading to the copies."""
    replace = msgspec.structs.replace
    copied: dict[str, str] = {}

    def copy(pointer: str, where: str) -> str:
        if pointer not in copied:
            data = files.read(pointer, where=where, owner=where)
            folder.mkdir(parents=True, exist_ok=True)
            target = folder / copy_name(f"{len(copied)}-", Path(pointer).name)
            target.write_bytes(data)
            copied[pointer] = str(target)
        return copied[pointer]

    return located_pointers(
        thread,
        # An empty path is refused here, as a render would refuse it, not stored.
        lambda where, media: (
            replace(media, path=copy(media.path, f"{where}.path"))
            if media.path is not None
            else media
        ),
        lambda where, art: (
            replace(art, path=copy(art.path, f"{where}.path")) if art.path is not None else art
        ),
    )


class StoreRecords:
    """The part of a store shared by SQLite and PostgreSQL (a context manager that closes it;
    creating, restoring, loading, exporting and importing threads); a store supplies the SQL
    (:meth:`header`, :meth:`turns`, :meth:`_new_thread`), :meth:`close` and
    :attr:`files_folder`."""

    builder: TurnBuilder

    def __init__(self) -> None:
        self._kept = KeptThreads()

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def files_folder(self) -> Path:
        """Where imported files live."""
        raise NotImplementedError

    def header(self, thread_id: str) -> Thread:
        raise NotImplementedError

    def turns(self, thread_id: str) -> list[Turn]:
        raise NotImplementedError

    def _new_thread(
        self,
        header: Thread,
        turns: Sequence[Turn],
        thread_id: str | None,
        title: str | None,
        *,
        created_at: datetime | None = None,
        updated_at: datetime | None = None,
    ) -> str:
        """Store a new thread (its header without records, then ``turns``) in one transaction;
        the timestamps default to now. :raises StoreError: the id, or a turn's, is taken."""
        raise NotImplementedError

    def create_thread(
        self, header: Thread, *, thread_id: str | None = None, title: str | None = None
    ) -> str:
        """Create an empty thread from ``header`` (its records are ignored); return its id."""
        return self._new_thread(header, (), thread_id, title)

    def restore_thread(
        self,
        thread_id: str,
        *,
        header: Thread,
        turns: Sequence[Turn],
        title: str | None,
        created_at: datetime,
        updated_at: datetime,
    ) -> None:
        """Store a thread exactly as another store held it (ids, timestamps, turns), in one
        transaction; what ``turnwire threads copy`` writes."""
        self._new_thread(
            header, turns, thread_id, title, created_at=created_at, updated_at=updated_at
        )

    def load(self, thread_id: str, *, current: Turn | None = None) -> Thread:
        """The thread as the renderer reads it, ``current`` (a question not stored yet) last:
        dated after every record the thread holds (one may be dated a little ahead of this
        machine's clock, within the drift a thread file may have), so an older compaction
        dated ahead never cuts it out of the request; store the turn with that date."""
        return self.load_with_ledger(thread_id, current=current)[0]

    def load_with_ledger(
        self, thread_id: str, *, current: Turn | None = None
    ) -> tuple[Thread, Ledger | None]:
        """:meth:`load`, and the ledger of the last request a run of the thread recorded
        (:meth:`TurnBuilder.last_ledger <turnwire.store.turns.TurnBuilder.last_ledger>` of its
        turns), from one read. The records of turns an earlier load read, unchanged since (the
        database says so: see :mod:`turnwire.store._kept`), are the same objects again."""
        header, records = self._kept.load(
            thread_id,
            self.builder,
            lambda after: self._snapshot(thread_id, after),
            lambda stored_header: self._header(thread_id, stored_header),
        )
        thread = records.as_thread(header)
        if current is None:
            return thread, records.ledger
        moment = not_before(lambda: current.created_at, records.latest)()
        asked, *_ = self.builder.to_records([msgspec.structs.replace(current, created_at=moment)])
        return msgspec.structs.replace(thread, messages=thread.messages + asked), records.ledger

    def _snapshot(self, thread_id: str, after: int) -> Snapshot:
        """The thread's header row and its turns after position ``after``, read at once.
        This default reads :meth:`header` and :meth:`turns` and keeps nothing."""
        header = self.header(thread_id)
        turns = self.turns(thread_id)[after + 1 :]
        return Snapshot(header, None, turns, after + len(turns))

    def _header(self, thread_id: str, stored_header: Any) -> Thread:
        """The header :meth:`_snapshot` read, decoded (by default it is one already)."""
        header: Thread = stored_header
        return header

    def export_thread(self, thread_id: str) -> Thread:
        """The thread with every record and file pointer, as a thread file holds it."""
        return self.load(thread_id)

    def export_file(self, thread_id: str, path: str | os.PathLike[str]) -> Thread:
        """Write the thread to the thread file ``path`` with the files it keeps in this store
        copied beside it, into ``FILE.files/`` (``w.yaml.files/`` for ``w.yaml``), pointers
        relative to the file: the export renders and runs wherever the two are put, and
        imports again without loss.

        Regular files inside :attr:`files_folder`, or inside the ``FILE.files/`` an earlier
        export made, are copied; a pointer that leads elsewhere, or to a file that is gone, is
        written as it is. The copies are made in a new folder, which replaces ``FILE.files/``
        only once it is complete; the old folder is kept until the new thread file is written
        (an export that fails leaves the old export whole). A ``FILE.files`` that is not a
        plain folder is refused, never written through.

        :returns: the thread as written.
        :raises turnwire.errors.StoreError: the file's folder does not exist, or
            ``FILE.files`` is a link or a file.
        """
        target = Path(path)
        if target.is_symlink():  # written through the link, its files beside the real file
            target = target.resolve()
        parent = target.parent.resolve()
        if not parent.is_dir():
            raise StoreError(f"the folder {target.parent} does not exist; create it first")
        with _folder_locked(parent):  # two exports into one folder: one after the other
            return self._export_file(thread_id, target, parent)

    def _export_file(self, thread_id: str, target: Path, parent: Path) -> Thread:
        folder = parent / f"{target.name}.files"
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            raise StoreError(
                f"{folder} is not a folder an export made (a link or a file): move it away"
            )
        thread = self.export_thread(thread_id)
        sources = (self.files_folder.resolve(), folder)
        try:
            fresh = Path(tempfile.mkdtemp(prefix=f".{target.name}.files.", dir=parent))
        except OSError as err:
            raise StoreError(
                f"the export cannot be written in {parent} ({err.strerror or err}); nothing "
                "was written"
            ) from None
        os.chmod(fresh, 0o777 & ~_UMASK)  # as a folder made by mkdir
        copied: dict[str, str] = {}
        names: set[str] = set()
        replace = msgspec.structs.replace

        def copy(pointer: str) -> str:
            source = Path(pointer).resolve()
            if not any(source.is_relative_to(root) for root in sources) or not source.is_file():
                return pointer
            if pointer not in copied:
                name, number = copy_name("", source.name), 0
                while name in names:  # each pointer a copy of its own
                    name, number = copy_name(f"{number}-", source.name), number + 1
                names.add(name)
                shutil.copyfile(source, fresh / name)  # a new file in a new folder
                copied[pointer] = str(folder / name)
            return copied[pointer]

        aside: Path | None = None
        try:
            exported = map_pointers(
                thread,
                lambda media: replace(media, path=copy(media.path)) if media.path else media,
                lambda art: replace(art, path=copy(art.path)) if art.path else art,
            )
            if folder.is_dir():  # the last export's: kept aside until this one is written
                aside = parent / f".{target.name}.files.old.{uuid.uuid4().hex[:8]}"
                folder.rename(aside)
            if copied:
                fresh.rename(folder)
            save_thread(exported, target)
        except BaseException:
            if aside is not None:  # the old export back, whole
                if folder.is_dir():
                    shutil.rmtree(folder, ignore_errors=True)
                aside.rename(folder)
            raise
        finally:
            shutil.rmtree(fresh, ignore_errors=True)
        if aside is not None:
            shutil.rmtree(aside, ignore_errors=True)
        return exported

    def import_thread(
        self,
        thread: Thread,
        *,
        thread_id: str | None = None,
        title: str | None = None,
        files: ContextAssembler | None = None,
    ) -> str:
        """Store a whole thread (header and records) as a new thread, in one transaction.

        :param files: when given, every file the thread points at is read through it (its
            roots and limits apply) and copied into :attr:`files_folder`, and the stored
            pointers lead there, so later runs of the thread read them from the store's own
            folder (the default root of a stored thread). Without it, pointers are kept as
            they are.
        :raises turnwire.errors.ThreadFileError: the thread (built in code) breaks a rule a
            thread file is held to (:func:`turnwire.model.checks.check_thread`); nothing is
            stored.
        """
        check_thread(thread)
        new_id = thread_id or f"thr_{uuid.uuid4().hex}"
        if files is None:
            return self._new_thread(thread, self.builder.records_as_turns(thread), new_id, title)
        # A folder of its own per import: a failed or duplicate import never touches the files
        # of a thread already stored, and leaves nothing behind.
        folder = new_thread_folder(self.files_folder, new_id)
        try:
            thread = copy_files(thread, folder, files)
            return self._new_thread(thread, self.builder.records_as_turns(thread), new_id, title)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise

    def _remove_files(self, thread_id: str) -> None:
        """Remove the files imports copied for ``thread_id``."""
        for folder in thread_folders(self.files_folder, thread_id):
            shutil.rmtree(folder, ignore_errors=True)
