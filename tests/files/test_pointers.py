"""File pointers are thread data: the assembler inlines them per call and never stores their bytes,
confined to the roots, regular files only, bounded, and read race-free (walked from the root's
descriptor, component by component).

The CLI cases run as processes with a timeout, so a FIFO that blocks or a device that never ends
fails the test instead of hanging the suite."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import turnwire
from turnwire.errors import FileNotAllowedError, RenderError, TurnwireError
from turnwire.files.pointers import ContextAssembler
from turnwire.store.sqlite import SQLiteStore

from ..client.server import Reply, ScriptedServer, recorded
from ..conftest import REPO, SECRET, at, make_container


def _thread(paths):
    return turnwire.load_thread(
        {
            "version": 1,
            "messages": [
                {
                    "id": "u1",
                    "role": "user",
                    "content": "look",
                    "created_at": at(0),
                    "attachments": [
                        {"id": f"a{i}", "kind": "image", "mime_type": "image/png", "path": str(p)}
                        for i, p in enumerate(paths)
                    ],
                }
            ],
        }
    )


def test_pointers_are_inlined_for_the_call_and_the_thread_keeps_them(tmp_path):
    picture = tmp_path / "a.png"
    picture.write_bytes(b"12345")
    thread = _thread([picture])
    loaded = ContextAssembler(roots=[tmp_path]).inline(thread)
    assert loaded.messages[0].attachments[0].data == b"12345"
    assert thread.messages[0].attachments[0].data is None  # the stored record is untouched


def test_a_file_over_the_per_file_limit_is_a_clear_error(tmp_path):
    picture = tmp_path / "big.png"
    picture.write_bytes(b"x" * 11)
    with pytest.raises(RenderError) as caught:
        ContextAssembler(roots=[tmp_path], max_file_bytes=10).inline(_thread([picture]))
    assert caught.value.record == "a0"
    assert "11 bytes" in str(caught.value) and "per-file limit of 10" in str(caught.value)


def test_files_over_the_per_request_limit_are_a_clear_error(tmp_path):
    paths = []
    for name in ("a.png", "b.png"):
        path = tmp_path / name
        path.write_bytes(b"x" * 6)
        paths.append(path)
    with pytest.raises(RenderError) as caught:
        ContextAssembler(roots=[tmp_path], max_request_bytes=10).inline(_thread(paths))
    assert caught.value.record == "a1" and "per-request limit of 10" in str(caught.value)


def test_artifact_pointers_are_read_as_text(tmp_path):
    log = tmp_path / "out.log"
    log.write_text("line 1\nline 2\n")
    thread = turnwire.load_thread(
        {
            "version": 1,
            "messages": [{"id": "u1", "role": "user", "content": "x", "created_at": at(0)}],
            "tool_calls": [
                {
                    "id": "c1",
                    "tool": "t",
                    "created_at": at(1),
                    "result": {"artifact": {"path": str(log), "inline": True}},
                }
            ],
        }
    )
    loaded = ContextAssembler(roots=[tmp_path]).inline(thread)
    assert loaded.tool_calls[0].result.artifact.text == "line 1\nline 2\n"


TEXT = recorded("text_simple_gpt-4o-mini.sse")


ENVIRON_MARK = "TURNWIRE_SECURITY_TEST_MARK"


def turnwire_cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    """The command as a process, bounded: a hang is a failure, not a stuck suite."""
    environment = {**os.environ, "TURNWIRE_ENVELOPE_SECRET": SECRET, ENVIRON_MARK: "leaked"}
    environment.pop("OPENAI_API_KEY", None)
    return subprocess.run(
        [sys.executable, "-m", "turnwire", *args],
        capture_output=True,
        text=True,
        env=environment,
        cwd=cwd,
        timeout=20,
        check=False,
    )


def thread_with(folder: Path, pointer: str, *, kind: str = "document") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    mime = "text/plain" if kind == "document" else "image/png"
    thread = {
        "version": 1,
        "model": "gpt-4o",
        "messages": [
            {
                "id": "u1",
                "role": "user",
                "content": "look",
                "created_at": at(0),
                "attachments": [
                    {"id": "a1", "kind": kind, "mime_type": mime, "filename": "f", "path": pointer}
                ],
            }
        ],
    }
    path = folder / "thread.json"
    path.write_text(json.dumps(thread))
    return path


def assert_refused(done: subprocess.CompletedProcess[str], status: int, words: str = "") -> None:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == status, done.stderr
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: E_FILE_NOT_ALLOWED: $.messages[0].attachments[0].path: ")
    assert words in lines[0]
    assert "leaked" not in done.stdout + done.stderr


def render_cli(path: Path) -> subprocess.CompletedProcess[str]:
    return turnwire_cli("render", str(path))


def run_cli(path: Path, server: ScriptedServer) -> subprocess.CompletedProcess[str]:
    return turnwire_cli(
        "run", str(path), "--base-url", server.base_url, "--set", "client.retry.max_retries=0"
    )


def secret_outside(tmp_path: Path) -> Path:
    outside = tmp_path / "outside" / "secret.txt"
    outside.parent.mkdir()
    outside.write_text(f"{ENVIRON_MARK}=leaked\n")
    return outside


# ---------------------------------------------------------------- outside the roots


def test_proc_self_environ_is_refused_by_render_and_run(tmp_path):
    path = thread_with(tmp_path / "t", "/proc/self/environ")
    assert_refused(render_cli(path), 2, "never read")
    with ScriptedServer([Reply.sse(TEXT)]) as server:
        assert_refused(run_cli(path, server), 1, "never read")
    assert server.requests == []


@pytest.mark.parametrize("how", ["relative-symlink", "absolute-symlink", "dotdot", "absolute"])
def test_a_pointer_that_leaves_the_thread_folder_is_refused_by_render_and_run(tmp_path, how):
    secret = secret_outside(tmp_path)
    folder = tmp_path / "t"
    folder.mkdir()
    (folder / "link.txt").symlink_to(secret)
    pointer = {
        "relative-symlink": "link.txt",
        "absolute-symlink": str(folder / "link.txt"),
        "dotdot": "../outside/secret.txt",
        "absolute": str(secret),
    }[how]
    path = thread_with(folder, pointer)
    assert_refused(render_cli(path), 2, "outside the allowed roots")
    with ScriptedServer([Reply.sse(TEXT)]) as server:
        assert_refused(run_cli(path, server), 1, "outside the allowed roots")
    assert server.requests == []


def test_a_symlink_is_followed_only_while_it_stays_inside_the_folder(tmp_path):
    folder = tmp_path / "t"
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "notes.txt").write_text("inside the folder")
    (folder / "notes.txt").symlink_to(folder / "data" / "notes.txt")
    done = render_cli(thread_with(folder, "notes.txt"))
    assert done.returncode == 0, done.stderr
    assert base64.b64encode(b"inside the folder").decode() in done.stdout
    (folder / "data" / "notes.txt").unlink()
    (folder / "data" / "notes.txt").symlink_to(secret_outside(tmp_path))  # a chain that leaves
    assert_refused(render_cli(thread_with(folder, "notes.txt")), 2, "outside the allowed roots")


def test_run_thread_file_proc_environ_is_refused(tmp_path):
    db = tmp_path / "t.db"
    with SQLiteStore(db) as store:
        thread_id = store.create_thread(turnwire.load_thread({"version": 1, "model": "gpt-4o"}))
    with ScriptedServer([Reply.sse(TEXT)]) as server:
        done = turnwire_cli(
            "run",
            "--thread",
            thread_id,
            "--store",
            str(db),
            "--file",
            "/proc/self/environ",
            "--base-url",
            server.base_url,
        )
    assert done.returncode == 1 and server.requests == []
    # refused as the store reads the question's file to keep its copy: the first --file
    assert done.stderr.startswith("error: E_FILE_NOT_ALLOWED: files[0]:")
    with SQLiteStore(db) as store:
        assert store.turns(thread_id) == []
    assert not (tmp_path / "files").exists() or not any((tmp_path / "files").rglob("*.*"))


def test_a_stored_thread_reads_only_its_own_folders_of_the_store_files(tmp_path):
    """An import copies a thread's files into a folder of its own, which its runs read; a
    pointer into the store's files folder but outside the thread's folders (another thread's
    files, or anything put there) is refused, like one outside the store."""
    db = tmp_path / "store" / "t.db"
    loose = tmp_path / "store" / "files" / "loose.txt"
    loose.parent.mkdir(parents=True)
    loose.write_text("not this thread's")
    (tmp_path / "kept.txt").write_text("kept by the store")
    secret = secret_outside(tmp_path)
    container = make_container()

    def stored(pointer: Path, **files: object) -> tuple[SQLiteStore, str]:
        store = SQLiteStore(db)
        imported = turnwire.load_thread(json.loads(thread_with(tmp_path, str(pointer)).read_text()))
        return store, store.import_thread(imported, **files)

    store, thread_id = stored(
        tmp_path / "kept.txt", files=ContextAssembler(roots=[str(tmp_path / "kept.txt")])
    )
    with store, ScriptedServer([Reply.sse(TEXT)]) as server:
        turnwire.run_thread(thread_id, store=store, container=container, base_url=server.base_url)
    sent = json.dumps(server.requests[0].json)
    assert base64.b64encode(b"kept by the store").decode() in sent
    for outside in (loose, secret):
        store, thread_id = stored(outside)
        with store, ScriptedServer([Reply.sse(TEXT)]) as server:
            with pytest.raises(FileNotAllowedError) as caught:
                turnwire.run_thread(
                    thread_id, store=store, container=container, base_url=server.base_url
                )
        assert caught.value.path == "$.messages[0].attachments[0].path"
        assert server.requests == []


def test_render_of_a_thread_object_reads_only_the_roots_it_is_given(tmp_path):
    (tmp_path / "a.txt").write_text("hello")
    thread = turnwire.load_thread(thread_with(tmp_path, "a.txt"))
    container = make_container()
    with pytest.raises(FileNotAllowedError) as caught:
        turnwire.render(thread, container=container)
    assert caught.value.code == "E_FILE_NOT_ALLOWED"
    body = turnwire.render(thread, container=container, roots=[tmp_path]).body
    assert base64.b64encode(b"hello") in body
    assert turnwire.render(tmp_path / "thread.json", container=container).body == body


def test_files_roots_in_configuration_replace_the_thread_folder(tmp_path):
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "a.txt").write_text("hello")
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    (uploads / "b.txt").write_text("uploaded")
    container = make_container({"files": {"roots": [str(uploads)]}})
    with pytest.raises(FileNotAllowedError):
        turnwire.render(thread_with(tmp_path / "t", "a.txt"), container=container)
    body = turnwire.render(thread_with(tmp_path / "t", str(uploads / "b.txt")), container=container)
    assert base64.b64encode(b"uploaded") in body.body


# ---------------------------------------------------------------- special files


def test_a_fifo_is_refused_without_blocking(tmp_path):
    folder = tmp_path / "t"
    folder.mkdir()
    os.mkfifo(folder / "pipe")
    done = render_cli(thread_with(folder, "pipe"))  # opened, a FIFO would block the read
    assert_refused(done, 2, "is a FIFO; only regular files are read")


def test_dev_zero_is_refused_at_once(tmp_path):
    done = render_cli(thread_with(tmp_path / "t", "/dev/zero"))  # read, it never ends
    assert_refused(done, 2, "never read")


def test_a_device_inside_the_roots_is_refused_by_its_kind(tmp_path):
    thread = turnwire.load_thread(thread_with(tmp_path / "t", "/dev/null"))
    with pytest.raises(FileNotAllowedError):
        ContextAssembler(roots=["/"]).inline(thread)  # even a root of / never reaches /dev


@pytest.mark.parametrize(("pointer", "words"), [(".", "is a directory"), ("", "names no file")])
def test_a_directory_or_an_empty_path_is_refused(tmp_path, pointer, words):
    done = render_cli(thread_with(tmp_path / "t", pointer))
    assert_refused(done, 2, words)


def test_a_socket_is_refused(tmp_path):
    import socket

    folder = tmp_path / "t"
    folder.mkdir()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(str(folder / "s"))
        thread = turnwire.load_thread(thread_with(folder, "s"))
        with pytest.raises(FileNotAllowedError) as caught:
            ContextAssembler(roots=[folder]).inline(thread)
    finally:
        listener.close()
    assert caught.value.path == "$.messages[0].attachments[0].path"


def test_inline_data_is_under_the_same_limit(tmp_path):
    (tmp_path / "small.txt").write_bytes(b"x" * 10)
    thread = turnwire.load_thread(
        {
            "version": 1,
            "messages": [
                {
                    "id": "u1",
                    "role": "user",
                    "created_at": at(0),
                    "attachments": [
                        {
                            "id": "big",
                            "kind": "document",
                            "mime_type": "text/plain",
                            "data_base64": base64.b64encode(b"y" * 11).decode(),
                        }
                    ],
                }
            ],
        }
    )
    container = make_container({"files": {"max_file_bytes": 10}})
    with pytest.raises(RenderError) as caught:
        turnwire.render(thread, container=container, model="gpt-4o")
    assert "$.messages[0].attachments[0].data_base64" in str(caught.value)
    assert "per-file limit of 10 bytes" in str(caught.value)


def test_a_file_read_stops_at_its_announced_size(tmp_path):
    """A file that grows between fstat and read is refused, never read without bound."""
    (tmp_path / "a.txt").write_text("abc")
    assembler = ContextAssembler(roots=[tmp_path])
    real_fstat = os.fstat

    def shrunken(fd):
        result = real_fstat(fd)
        values = list(result)
        values[6] = 1  # st_size
        return os.stat_result(values)

    thread = turnwire.load_thread(thread_with(tmp_path, "a.txt"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "fstat", shrunken)
        with pytest.raises(RenderError) as caught:
            assembler.inline(thread)
    assert "grew past its size of 1 bytes" in str(caught.value)


# ---------------------------------------------------------------- artifacts


def _artifact_thread(pointer: str) -> turnwire.Thread:
    return turnwire.load_thread(
        {
            "version": 1,
            "messages": [{"id": "u1", "role": "user", "content": "x", "created_at": at(0)}],
            "tool_calls": [
                {
                    "id": "call_log",
                    "tool": "read_log",
                    "created_at": at(1),
                    "result": {"artifact": {"path": pointer, "inline": False}},
                }
            ],
            "retrievables": [
                {"id": "r1", "trust_tier": "first-party", "artifact": {"path": pointer}}
            ],
        }
    )


def test_every_pointer_is_named_by_its_path(tmp_path):
    secret = secret_outside(tmp_path)
    thread = _artifact_thread(str(secret))
    assembler = ContextAssembler(roots=[tmp_path / "t"])
    with pytest.raises(FileNotAllowedError) as caught:
        assembler.check(thread)
    assert caught.value.path == "$.tool_calls[0].result.artifact.path"
    only_retrievable = msgspec_replace(thread, tool_calls=())
    with pytest.raises(FileNotAllowedError) as caught:
        assembler.inline(only_retrievable)
    assert caught.value.path == "$.retrievables[0].artifact.path"


def msgspec_replace(value, **changes):
    import msgspec

    return msgspec.structs.replace(value, **changes)


def test_a_symlink_loop_is_refused_with_one_line(tmp_path):
    folder = tmp_path / "t"
    folder.mkdir()
    (folder / "loop").symlink_to(folder / "loop")
    assert_refused(render_cli(thread_with(folder, "loop")), 2, "a symlink or a special file")


INSIDE, OUTSIDE = b"inside bytes", b"SECRET outside"


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "real").mkdir(parents=True)
    outside.mkdir()
    (root / "real" / "file.txt").write_bytes(INSIDE)
    (outside / "file.txt").write_bytes(OUTSIDE)
    return root, outside


def _flipper(root: Path, outside: Path, stop: threading.Event) -> threading.Thread:
    """Flips ``root/sub`` between a real folder, a symlink to the real folder inside the
    root, and a symlink to the folder outside, as fast as it can; one cycle in 16 holds each
    state for a millisecond. Without the holds two threads sharing the GIL can fall into a
    lockstep (each system call of the reader lets the flipper take one step) in which no read
    ever sees a whole state: CI once read nothing in 100,000 tries."""

    def flip() -> None:
        sub, parked = root / "sub", root / "parked"
        cycle = 0
        while not stop.is_set():
            cycle += 1
            hold = 0.001 if cycle % 16 == 0 else 0.0
            os.rename(root / "real", sub)  # a real folder
            if hold:
                time.sleep(hold)
            os.rename(sub, root / "real")
            os.symlink("real", parked)  # a symlink that stays inside
            os.replace(parked, sub)
            if hold:
                time.sleep(hold)
            os.symlink(str(outside), parked)  # a symlink out of the root
            os.replace(parked, sub)
            if hold:
                time.sleep(hold)
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
    attempts = 0
    try:
        # At least 5,000 reads, and on until both sides of the race were met (a loaded machine
        # can keep one side from the reader for a while), within a bound.
        while attempts < 5000 or (not (read and refused) and attempts < 100_000):
            attempts += 1
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
    sent, refused, untyped = 0, 0, []
    attempts = 0
    try:
        # Issue 24's bar: 0 outside reads, 0 untyped errors in at least 3,000 renders, and on
        # until both sides of the race were met (on a loaded 2-core machine the flipper can keep
        # the folder away from the renderer for thousands of renders), within a bound.
        while attempts < 3000 or (not (sent and refused) and attempts < 60_000):
            attempts += 1
            try:
                body = turnwire.render(thread, container=container, roots=[root]).body
            except TurnwireError:
                refused += 1
            except Exception as err:  # anything else is a defect
                untyped.append(repr(err))
            else:
                sent += 1
                assert b"SECRET" not in body and b"U0VDUkVU" not in body  # nor its base64
    finally:
        stop.set()
        flipper.join(timeout=5)
    assert untyped == []
    assert sent + refused == attempts and sent > 0 and refused > 0


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
        == OUTSIDE
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
