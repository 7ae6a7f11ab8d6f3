"""Thread files (schema version 1, YAML or JSON): loading with relative pointers, dumping and saving
(every character, the mode, through a link, one verdict per save), and records dated ahead of the
clock refused where a thread comes in."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import turnwire
from turnwire import ThreadFileError, dump_thread, load_thread
from turnwire.files.thread_file import FUTURE_SKEW, save_thread
from turnwire.model.records import HostedItem

from ..conftest import REPO_EXAMPLES, at, thread, turnwire_process, user


def _fails(data, path, words):
    with pytest.raises(ThreadFileError) as caught:
        load_thread({"version": 1, **data})
    assert caught.value.path == path, str(caught.value)
    assert str(caught.value).startswith(path)
    assert words in str(caught.value)
    return caught.value


def test_the_example_thread_loads_from_yaml_and_resolves_relative_paths():
    t = load_thread(REPO_EXAMPLES / "weather.yaml")
    attachment = t.messages[0].attachments[0]
    assert attachment.path == str((REPO_EXAMPLES / "photo.png").resolve())
    assert t.tool_calls[0].call_id == "call_1" and t.tool_calls[0].item_id == "fc_1"
    assert t.messages[0].who.display == "Alice"


def test_json_threads_load_too(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(
        json.dumps(
            {
                "version": 1,
                "messages": [{"id": "u1", "role": "user", "content": "hi", "created_at": at(0)}],
            }
        )
    )
    assert load_thread(path).messages[0].content == "hi"


def test_unknown_version_and_bad_files(tmp_path):
    _fails({"version": 2}, "$.version", "version 1")
    bad = tmp_path / "bad.yaml"
    bad.write_text("messages: [")
    with pytest.raises(ThreadFileError, match="neither valid YAML nor JSON"):
        load_thread(bad)
    with pytest.raises(ThreadFileError, match="cannot read"):
        load_thread(tmp_path / "none.yaml")


def test_dump_then_load_gives_the_same_thread():
    t = load_thread(REPO_EXAMPLES / "weather.yaml")
    again = load_thread(json.loads(dump_thread(t)))
    assert again == t


def test_save_thread_writes_schema_version_1_with_relative_pointers(tmp_path):
    import shutil

    from turnwire.files.thread_file import save_thread

    shutil.copy(REPO_EXAMPLES / "photo.png", tmp_path / "photo.png")
    source = (REPO_EXAMPLES / "weather.yaml").read_text()
    (tmp_path / "t.yaml").write_text(source)
    thread = load_thread(tmp_path / "t.yaml")
    save_thread(thread, tmp_path / "t.yaml")
    save_thread(thread, tmp_path / "t.json")
    text = (tmp_path / "t.yaml").read_text()
    assert text.startswith("version: 1\n") and "path: photo.png" in text
    assert json.loads((tmp_path / "t.json").read_text())["version"] == 1
    assert load_thread(tmp_path / "t.yaml") == thread == load_thread(tmp_path / "t.json")
    assert not list(tmp_path.glob(".*.tmp"))


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_a_saved_thread_keeps_every_character_of_its_text(tmp_path, suffix):
    """Each code point up to U+3000 and a few beyond, in a message, a tool call's arguments
    and a hosted item: PyYAML, left alone, writes U+0085 raw and reads it back as a space."""
    points = [
        cp
        for cp in [*range(1, 0x3000), 0xFEFF, 0xFFFE, 0x1F600, 0x10FFFF]
        if not 0xD800 <= cp <= 0xDFFF
    ]
    text = "".join(f"a{chr(cp)}b" for cp in points)
    thread = turnwire.Thread(
        messages=(turnwire.Message(id="u1", role="user", content=text, created_at=at(0)),),
        tool_calls=(turnwire.ToolCall(id="c1", tool="f", args={"q": text}, created_at=at(1)),),
        hosted_items=(
            HostedItem(
                id="ws_1",
                type="web_search_call",
                item={"type": "web_search_call", "id": "ws_1", "q": text},
                created_at=at(2),
            ),
        ),
    )
    path = tmp_path / f"t{suffix}"
    turnwire.save_thread(thread, path)
    loaded = load_thread(path)
    assert loaded.messages[0].content == text
    assert loaded.tool_calls[0].args == {"q": text}
    assert loaded.hosted_items[0].item["q"] == text


def test_two_saves_of_one_file_in_one_process_each_get_a_verdict_that_holds(tmp_path):
    """Each checks the file under the lock: exactly one writes, and the file holds its thread
    (a temporary file shared between them once let one publish the other's bytes)."""
    import threading

    from turnwire.errors import ThreadFileChangedError
    from turnwire.files.thread_file import file_digest

    path = tmp_path / "t.json"
    base = load_thread({"version": 1, "messages": []})
    turnwire.save_thread(base, path)
    for _ in range(40):
        turnwire.save_thread(base, path)
        read_as = file_digest(path)
        verdicts: dict[str, str] = {}

        def save(name: str, read_as: str | None, verdicts: dict[str, str]) -> None:
            thread = load_thread({"version": 1, "system_prompt": name})
            try:
                turnwire.save_thread(thread, path, unchanged_since=read_as)
                verdicts[name] = "saved"
            except ThreadFileChangedError:
                verdicts[name] = "conflict"

        runs = [
            threading.Thread(target=save, args=(name, read_as, verdicts)) for name in ("A", "B")
        ]
        for run in runs:
            run.start()
        for run in runs:
            run.join()
        (winner,) = [name for name, verdict in verdicts.items() if verdict == "saved"]
        assert load_thread(path).system_prompt == winner
    assert not list(tmp_path.glob(".*.tmp"))


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o600])
def test_a_saved_thread_file_keeps_its_mode(tmp_path, mode):
    import os
    import stat

    path = tmp_path / "t.json"
    thread = load_thread({"version": 1, "messages": []})
    turnwire.save_thread(thread, path)
    os.chmod(path, mode)
    turnwire.save_thread(thread, path)
    assert stat.S_IMODE(path.stat().st_mode) == mode


def test_a_save_goes_through_a_link_and_a_folder_it_cannot_write_is_a_typed_error(tmp_path):
    real = tmp_path / "data" / "t.yaml"
    real.parent.mkdir()
    (real.parent / "photo.png").write_bytes(b"png")
    thread = load_thread(
        {
            "version": 1,
            "messages": [
                {
                    "id": "u1",
                    "role": "user",
                    "content": "look",
                    "created_at": "2026-01-01T10:00:00Z",
                    "attachments": [
                        {
                            "id": "a1",
                            "kind": "image",
                            "mime_type": "image/png",
                            "path": str(real.parent / "photo.png"),
                        }
                    ],
                }
            ],
        }
    )
    turnwire.save_thread(thread, real)
    (tmp_path / "links").mkdir()
    link = tmp_path / "links" / "t.yaml"
    link.symlink_to(real)
    turnwire.save_thread(thread, link)
    assert link.is_symlink()  # the link stays; the file it leads to is written
    assert load_thread(link).messages[0].attachments[0].path == str(real.parent / "photo.png")
    with pytest.raises(ThreadFileError, match="cannot be written"):
        turnwire.save_thread(thread, tmp_path / "missing" / "t.yaml")


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _thread(ahead: timedelta) -> dict:
    now = datetime.now(UTC)
    return {
        "version": 1,
        "model": "gpt-5",
        "messages": [
            {
                "id": "u1",
                "role": "user",
                "content": "hi",
                "created_at": _iso(now - timedelta(hours=1)),
            }
        ],
        "hosted_items": [
            {
                "id": "cmp_1",
                "type": "compaction",
                "item": {"type": "compaction", "id": "cmp_1", "encrypted_content": "x"},
                "created_at": _iso(now + ahead),
            }
        ],
    }


def test_a_compaction_dated_in_the_future_is_refused_naming_it() -> None:
    with pytest.raises(ThreadFileError, match="is in the future") as refused:
        turnwire.load_thread(_thread(timedelta(days=365)))
    assert refused.value.path == "$.hosted_items[0].created_at"


def test_a_few_minutes_of_clock_drift_are_allowed() -> None:
    thread = turnwire.load_thread(_thread(FUTURE_SKEW - timedelta(minutes=1)))
    assert len(thread.hosted_items) == 1


def test_a_thread_file_and_an_import_refuse_it_alike(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps(_thread(timedelta(days=1))))
    for arguments in (
        ("render", str(path)),
        ("threads", "import", str(path), "--store", str(tmp_path / "threads.db")),
    ):
        done = turnwire_process(*arguments)
        assert done.returncode == 2
        last = done.stderr.strip().splitlines()[-1]
        assert last.startswith("error: E_THREAD_FILE_INVALID: $.hosted_items[0].created_at: ")


def test_a_save_syncs_the_file_and_its_folder(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    synced: list[str] = []
    real = os.fsync

    def fsync(descriptor: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{descriptor}"))
        real(descriptor)

    monkeypatch.setattr(os, "fsync", fsync)
    target = tmp_path / "t.json"
    save_thread(thread(model="gpt-5", messages=[user()]), target)
    assert any(Path(name).name.startswith(".t.json.") for name in synced)  # the new file
    assert str(tmp_path) in synced  # the folder, after the rename
    assert turnwire.load_thread(target).messages[0].content == "hi"
