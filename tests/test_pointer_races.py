"""File pointers are read race-free: walked from the root's descriptor, component by component.

A folder on a pointer's path swapped for a symlink (or a symlink retargeted) while renders run
never leads a read outside the roots, and every refusal is a typed error naming the pointer.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

import turnwire
from turnwire.errors import FileNotAllowedError, RenderError, TurnwireError
from turnwire.files.pointers import ContextAssembler

INSIDE, SECRET = b"inside bytes", b"SECRET outside"


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "real").mkdir(parents=True)
    outside.mkdir()
    (root / "real" / "file.txt").write_bytes(INSIDE)
    (outside / "file.txt").write_bytes(SECRET)
    return root, outside


def _flipper(root: Path, outside: Path, stop: threading.Event) -> threading.Thread:
    """Flips ``root/sub`` between a real folder, a symlink to the real folder inside the
    root, and a symlink to the folder outside, as fast as it can."""

    def flip() -> None:
        sub, parked = root / "sub", root / "parked"
        while not stop.is_set():
            os.rename(root / "real", sub)  # a real folder
            os.rename(sub, root / "real")
            os.symlink("real", parked)  # a symlink that stays inside
            os.replace(parked, sub)
            os.symlink(str(outside), parked)  # a symlink out of the root
            os.replace(parked, sub)
            os.unlink(sub)

    return threading.Thread(target=flip, daemon=True)


def test_a_folder_flipping_to_a_symlink_never_leads_a_read_outside(tmp_path: Path) -> None:
    root, outside = _tree(tmp_path)
    files = ContextAssembler(roots=[root])
    pointer = str(root / "sub" / "file.txt")
    stop = threading.Event()
    flipper = _flipper(root, outside, stop)
    flipper.start()
    read, refused, untyped = 0, 0, []
    try:
        for _ in range(5000):
            try:
                data = files.read(pointer, where="$.x.path", owner="m1")
            except (FileNotAllowedError, RenderError) as err:
                assert "$.x.path" in str(err) or "m1" in str(err)
                refused += 1
            except Exception as err:  # anything else is a defect
                untyped.append(repr(err))
            else:
                assert data == INSIDE
                read += 1
    finally:
        stop.set()
        flipper.join(timeout=5)
    assert untyped == []
    assert read > 0 and refused > 0  # both sides of the race were met


def test_renders_racing_a_flipping_folder_never_send_outside_bytes(tmp_path: Path) -> None:
    root, outside = _tree(tmp_path)
    thread = turnwire.load_thread(
        {
            "version": 1,
            "model": "gpt-5",
            "messages": [
                {
                    "id": "u1",
                    "role": "user",
                    "content": "read this",
                    "created_at": "2026-01-01T00:00:00Z",
                    "attachments": [
                        {
                            "id": "a1",
                            "kind": "document",
                            "mime_type": "text/plain",
                            "filename": "file.txt",
                            "path": str(root / "sub" / "file.txt"),
                        }
                    ],
                }
            ],
        }
    )
    container = turnwire.build_container()
    stop = threading.Event()
    flipper = _flipper(root, outside, stop)
    flipper.start()
    sent, refused = 0, 0
    try:
        for _ in range(300):
            try:
                body = turnwire.render(thread, container=container, roots=[root]).body
            except TurnwireError:
                refused += 1
            else:
                sent += 1
                assert b"SECRET" not in body and b"U0VDUkVU" not in body  # nor its base64
    finally:
        stop.set()
        flipper.join(timeout=5)
    assert sent + refused == 300


def test_symlinks_inside_the_root_are_followed_and_dotdot_never_climbs_out(tmp_path: Path) -> None:
    root, outside = _tree(tmp_path)
    (root / "relative").symlink_to("real")
    (root / "absolute").symlink_to(root / "real")
    (root / "escape").symlink_to(outside)
    (root / "real" / "up").symlink_to("../../outside")
    files = ContextAssembler(roots=[root])

    def read(pointer: Path | str) -> bytes:
        return files.read(str(pointer), where="$.p", owner="o")

    assert read(root / "relative" / "file.txt") == INSIDE
    assert read(root / "absolute" / "file.txt") == INSIDE
    assert read(root / "real" / ".." / "real" / "file.txt") == INSIDE
    for pointer in (
        root / "escape" / "file.txt",
        root / "real" / "up" / "file.txt",
        f"{root}/../outside/file.txt",
    ):
        with pytest.raises(FileNotAllowedError, match="leads outside the allowed roots"):
            read(pointer)


def test_a_hard_linked_file_is_refused_unless_configured(tmp_path: Path) -> None:
    root, outside = _tree(tmp_path)
    os.link(outside / "file.txt", root / "real" / "linked.txt")
    pointer = str(root / "real" / "linked.txt")
    with pytest.raises(FileNotAllowedError, match="2 hard links") as refused:
        ContextAssembler(roots=[root]).read(pointer, where="$.p", owner="o")
    assert refused.value.path == "$.p"
    assert (
        ContextAssembler(roots=[root], allow_hard_links=True).read(pointer, where="$.p", owner="o")
        == SECRET
    )
    settings = turnwire.load_settings(overrides={"files": {"allow_hard_links": True}})
    assert ContextAssembler.from_settings(settings.files, [root]).allow_hard_links


def test_a_missing_or_special_component_is_a_typed_error(tmp_path: Path) -> None:
    root, _ = _tree(tmp_path)
    os.mkfifo(root / "real" / "pipe")
    files = ContextAssembler(roots=[root])
    with pytest.raises(RenderError, match="cannot be read"):
        files.read(str(root / "nothing" / "file.txt"), where="$.p", owner="o")
    with pytest.raises(FileNotAllowedError, match="a FIFO"):
        files.read(str(root / "real" / "pipe"), where="$.p", owner="o")
    with pytest.raises(FileNotAllowedError):
        files.read(str(root / "real" / "file.txt" / "deeper"), where="$.p", owner="o")
