"""``turnwire threads ...`` and ``turnwire run --thread`` as processes, on both stores (a SQLite
file and a PostgreSQL database): import, list, show, export (to a file or standard output), copy and
delete, and a stored thread run with a new question."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import turnwire
from turnwire.store import open_store

from ..client.server import Reply, ScriptedServer, recorded
from ..conftest import REPO, REPO_EXAMPLES, turnwire_process


def test_threads_show_transcript(tmp_path):
    from ..conftest import REPO_EXAMPLES, turnwire_process

    db = tmp_path / "t.db"
    done = turnwire_process(
        "threads", "import", str(REPO_EXAMPLES / "weather.yaml"), "--store", str(db), "--id", "w"
    )
    assert done.returncode == 0, done.stderr
    shown = turnwire_process("threads", "show", "w", "--transcript", "--store", str(db))
    assert shown.returncode == 0, shown.stderr
    first = shown.stdout.splitlines()[0]
    assert first == "Alice: What's the weather in Paris? [attached photo.png]"
    assert '[tool get_weather({"city":"Paris"})] 21C' in shown.stdout


def _files_folder(location: str, tmp_path: Path) -> Path:
    """Where the CLI's store keeps imported files: beside a SQLite file; for PostgreSQL in
    store.folder, by default $XDG_DATA_HOME/turnwire."""
    if location.startswith("postgresql://"):
        return tmp_path / "data" / "turnwire" / "files"
    return Path(location).parent / "files"


def cli(tmp_path: Path, *args: str, **env: str) -> Any:
    return turnwire_process(*args, env={"XDG_DATA_HOME": str(tmp_path / "data"), **env})


def _opened(location: str, tmp_path: Path) -> Any:
    return open_store(location, folder=tmp_path / "data" / "turnwire")


def _new_thread(location: str, tmp_path: Path) -> str:
    """The id of a new, empty thread (model gpt-4o) in the store at ``location``."""
    with _opened(location, tmp_path) as store:
        return str(store.create_thread(turnwire.load_thread({"version": 1, "model": "gpt-4o"})))


def _without_paths(thread: turnwire.Thread) -> turnwire.Thread:
    import msgspec

    from turnwire.model.records import map_pointers

    replace = msgspec.structs.replace
    return map_pointers(
        thread,
        lambda media: replace(media, path="-") if media.path else media,
        lambda art: replace(art, path="-") if art.path else art,
    )


def test_import_list_show_export_delete(location, tmp_path):
    db = location
    done = cli(
        tmp_path, "threads", "import", str(REPO_EXAMPLES / "weather.yaml"), "--title", "Weather",
        "--store", db,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    thread_id = done.stdout.strip()
    assert thread_id.startswith("thr_")
    listing = json.loads(cli(tmp_path, "threads", "list", "--json", "--store", db).stdout)
    assert [(t["id"], t["title"], t["turns"]) for t in listing] == [(thread_id, "Weather", 2)]
    shown = cli(tmp_path, "threads", "show", thread_id, "--store", db)
    thread = turnwire.load_thread(json.loads(shown.stdout))
    original = turnwire.load_thread(REPO_EXAMPLES / "weather.yaml")
    assert _without_paths(thread) == _without_paths(original)
    (copy,) = thread.messages[0].attachments
    assert copy.path is not None
    assert Path(copy.path).parent.parent == _files_folder(location, tmp_path).resolve()
    assert Path(copy.path).read_bytes() == (REPO_EXAMPLES / "photo.png").read_bytes()
    transcript = cli(tmp_path, "threads", "show", thread_id, "--transcript", "--store", db)
    assert transcript.returncode == 0 and "weather" in transcript.stdout.lower()
    exported = tmp_path / "out.yaml"
    done = cli(tmp_path, "threads", "export", thread_id, str(exported), "--store", db)
    assert done.returncode == 0, done.stderr
    assert _without_paths(turnwire.load_thread(exported)) == _without_paths(original)
    assert cli(tmp_path, "threads", "delete", thread_id, "--store", db).returncode == 0
    assert not Path(copy.path).exists()
    missing = cli(tmp_path, "threads", "show", thread_id, "--store", db)
    assert missing.returncode == 2
    assert missing.stderr.startswith("error: E_THREAD_NOT_FOUND: ")
    empty = cli(tmp_path, "threads", "list", "--store", db)
    assert empty.returncode == 0 and empty.stderr.startswith("no threads in ")


def test_run_a_stored_thread_with_a_question_and_a_file(location, tmp_path):
    picture = tmp_path / "cat.png"
    picture.write_bytes(b"\x89PNG fake")
    thread_id = _new_thread(location, tmp_path)
    with ScriptedServer([Reply.sse(recorded("text_simple_gpt-4o-mini.sse"))]) as server:
        done = cli(
            tmp_path, "run", "--thread", thread_id, "--store", location,
            "--prompt", "what is this?", "--file", str(picture), "--base-url", server.base_url,
            "--config", str(REPO / "config" / "strict-media.yaml"),
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Hi in Portuguese")
    sent = server.requests[0].json["input"][0]["content"]
    assert [p["type"] for p in sent] == ["input_text", "input_text", "input_image"]
    first = server.requests[0].json
    with _opened(location, tmp_path) as store:
        turns = store.turns(thread_id)
        assert [t.role for t in turns] == ["user", "assistant"]
        kept = turns[0].parts[1].media
        # the store keeps a copy of its own, in the thread's folder among its files
        assert kept.data is None and kept.path != str(picture)
        assert Path(kept.path).read_bytes() == picture.read_bytes()
        assert turns[1].model == "gpt-4o-mini-2024-07-18" and turns[1].usage["total_tokens"] > 0
        assert len(turns[1].request_fingerprint) == 64
    picture.unlink()  # the original may go: the thread has its copy
    # The next question sends the history with the earlier file, the same block in the same
    # place: the request extends the one before byte for byte.
    with ScriptedServer([Reply.sse(recorded("text_simple_gpt-4o-mini.sse"))]) as server:
        again = cli(
            tmp_path, "run", "--thread", thread_id, "--store", location, "--prompt", "and now?",
            "--base-url", server.base_url,
            "--config", str(REPO / "config" / "strict-media.yaml"),
        )  # fmt: skip
    assert again.returncode == 0, again.stderr
    history = server.requests[0].json["input"]
    assert [i.get("role") for i in history] == ["user", "assistant", "user"]
    assert history[: len(first["input"])] == first["input"]
    assert history[0]["content"][2]["type"] == "input_image"


def test_a_stored_thread_s_files_are_its_own_another_thread_cannot_point_at_them(
    location, tmp_path
):
    """The store's copies of one thread's files are roots for that thread only: a stored
    pointer (untrusted data) naming another thread's copy is refused."""
    picture = tmp_path / "cat.png"
    picture.write_bytes(b"\x89PNG fake")
    owner = _new_thread(location, tmp_path)
    with ScriptedServer([Reply.sse(recorded("text_simple_gpt-4o-mini.sse"))]) as server:
        done = cli(
            tmp_path, "run", "--thread", owner, "--store", location, "--prompt", "what is this?",
            "--file", str(picture), "--base-url", server.base_url,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    with _opened(location, tmp_path) as store:
        copy = store.turns(owner)[0].parts[1].media.path
        # a thread stored with its pointers as given (no files= to copy them)
        other = store.import_thread(
            turnwire.load_thread(
                {
                    "version": 1,
                    "model": "gpt-4o",
                    "messages": [
                        {
                            "id": "u1",
                            "role": "user",
                            "content": "and this?",
                            "created_at": "2026-01-01T00:00:00Z",
                            "attachments": [
                                {"id": "a1", "kind": "image", "mime_type": "image/png",
                                 "filename": "cat.png", "path": copy}
                            ],
                        }
                    ],
                }
            )
        )  # fmt: skip
    with ScriptedServer([Reply.sse(recorded("text_simple_gpt-4o-mini.sse"))]) as server:
        refused = cli(
            tmp_path, "run", "--thread", other, "--store", location, "--prompt", "and now?",
            "--base-url", server.base_url,
        )  # fmt: skip
    assert refused.returncode == 1
    assert "E_FILE_NOT_ALLOWED" in refused.stderr
    assert server.requests == []


def test_a_failed_run_appends_nothing(location, tmp_path):
    thread_id = _new_thread(location, tmp_path)
    failing = recorded("error_then_failed_insufficient_quota_gpt-5-nano.jsonl")
    with ScriptedServer([Reply.sse(failing)]) as server:
        done = cli(
            tmp_path, "run", "--thread", thread_id, "--store", location, "--prompt", "hi",
            "--base-url", server.base_url,
        )  # fmt: skip
    assert done.returncode == 1
    with _opened(location, tmp_path) as store:
        assert store.turns(thread_id) == []


def test_an_imported_thread_runs_with_its_files_from_the_store(location, tmp_path):
    """The README's store tour: import a thread file, then run it with a new question."""
    done = cli(
        tmp_path, "threads", "import", str(REPO_EXAMPLES / "weather.yaml"), "--store", location
    )
    assert done.returncode == 0, done.stderr
    thread_id = done.stdout.strip()
    with ScriptedServer([Reply.sse(recorded("text_simple_gpt-4o-mini.sse"))]) as server:
        ran = cli(
            tmp_path, "run", "--thread", thread_id, "--store", location,
            "--prompt", "And tomorrow?", "--base-url", server.base_url, "--profile", "examples",
        )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    images = [
        part
        for item in server.requests[0].json["input"]
        if isinstance(item.get("content"), list)
        for part in item["content"]
        if part.get("type") == "input_image"
    ]
    assert images and images[0]["image_url"].startswith("data:image/png;base64,")
    listing = json.loads(cli(tmp_path, "threads", "list", "--json", "--store", location).stdout)
    assert listing[0]["turns"] == 4


def test_the_store_comes_from_the_environment_or_the_settings(location, tmp_path):
    """$TURNWIRE_STORE and store.url / store.path name the store when --store does not."""
    done = cli(
        tmp_path, "threads", "import", str(REPO_EXAMPLES / "weather.yaml"),
        TURNWIRE_STORE=location,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    thread_id = done.stdout.strip()
    key = "url" if location.startswith("postgresql://") else "path"
    config = tmp_path / "store.yaml"
    config.write_text(f"store:\n  {key}: '{location}'\n  folder: '{tmp_path / 'elsewhere'}'\n")
    listing = cli(tmp_path, "threads", "list", "--json", "--config", str(config))
    assert [t["id"] for t in json.loads(listing.stdout)] == [thread_id]


def test_threads_copy_between_the_two_kinds_and_back(location, tmp_path):
    other = str(tmp_path / "other" / "copy.db")
    (tmp_path / "other").mkdir()
    done = cli(tmp_path, "threads", "import", str(REPO_EXAMPLES / "weather.yaml"),
               "--store", location, "--title", "Weather")  # fmt: skip
    thread_id = done.stdout.strip()
    with ScriptedServer([Reply.sse(recorded("text_simple_gpt-4o-mini.sse"))]) as server:
        ran = cli(
            tmp_path, "run", "--thread", thread_id, "--store", location,
            "--prompt", "And tomorrow?", "--base-url", server.base_url, "--profile", "examples",
        )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    copied = cli(tmp_path, "threads", "copy", "--from", location, "--to", other)
    assert copied.returncode == 0, copied.stderr
    assert copied.stdout.split() == [thread_id]
    assert "copied 1 thread(s)" in copied.stderr
    listings = [
        json.loads(cli(tmp_path, "threads", "list", "--json", "--store", where).stdout)
        for where in (location, other)
    ]
    assert listings[0] == listings[1] and listings[0][0]["title"] == "Weather"
    with _opened(location, tmp_path) as source, _opened(other, tmp_path) as target:
        assert [t.id for t in target.turns(thread_id)] == [t.id for t in source.turns(thread_id)]
        (turn,) = [t for t in target.turns(thread_id) if t.usage is not None]
        assert turn.model == "gpt-4o-mini-2024-07-18"
        assert turn == next(t for t in source.turns(thread_id) if t.usage is not None)
    # Run the copy: its files were copied too, so it renders the same image from its own folder.
    with ScriptedServer([Reply.sse(recorded("text_simple_gpt-4o-mini.sse"))]) as server:
        ran = cli(
            tmp_path, "run", "--thread", thread_id, "--store", other, "--prompt", "And after?",
            "--base-url", server.base_url, "--profile", "examples",
        )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    sent = json.dumps(server.requests[0].json["input"])
    assert "data:image/png;base64," in sent
    again = cli(tmp_path, "threads", "copy", "--from", location, "--to", other, thread_id)
    assert again.returncode == 2 and "E_STORE" in again.stderr
    missing = cli(tmp_path, "threads", "copy", "--from", other, "--to", location, "thr_nope")
    assert missing.returncode == 2 and "E_THREAD_NOT_FOUND" in missing.stderr


def test_an_exported_thread_file_renders_and_imports_again_wherever_it_is_put(tmp_path):
    """Its files are copied beside it, the pointers relative: the export is self-contained."""
    import turnwire

    from ..conftest import REPO_EXAMPLES, turnwire_process

    db = tmp_path / "store" / "t.db"
    db.parent.mkdir()
    imported = turnwire_process(
        "threads", "import", str(REPO_EXAMPLES / "weather.yaml"), "--store", str(db)
    )
    assert imported.returncode == 0, imported.stderr
    thread_id = imported.stdout.strip()
    before = turnwire_process("threads", "show", thread_id, "--store", str(db))
    for target in (tmp_path / "exports" / "w.yaml", tmp_path / "elsewhere" / "sub" / "w.json"):
        target.parent.mkdir(parents=True)
        done = turnwire_process("threads", "export", thread_id, str(target), "--store", str(db))
        assert done.returncode == 0, done.stderr
        text = target.read_text()
        assert str(db.parent) not in text  # no pointer back into the store
        copies = sorted(p.name for p in (target.parent / f"{target.name}.files").iterdir())
        assert copies, "the thread's files are copied beside the export"
        rendered = turnwire_process("render", str(target))
        assert rendered.returncode == 0, rendered.stderr
        assert '"input_image"' in rendered.stdout
        moved = tmp_path / "moved" / target.parent.name
        moved.parent.mkdir(exist_ok=True)
        target.parent.rename(moved)  # the export and its files, taken elsewhere together
        again = turnwire_process("render", str(moved / target.name))
        assert again.returncode == 0, again.stderr
        reimported = turnwire_process(
            "threads",
            "import",
            str(moved / target.name),
            "--store",
            str(tmp_path / f"{target.stem}.db"),
        )
        assert reimported.returncode == 0, reimported.stderr
    original = turnwire.load_thread(REPO_EXAMPLES / "weather.yaml")
    exported = turnwire.load_thread(tmp_path / "moved" / "exports" / "w.yaml")
    assert [m.content for m in exported.messages] == [m.content for m in original.messages]
    attached = [a for m in exported.messages for a in m.attachments]
    assert attached and all(a.path and "w.yaml.files" in a.path for a in attached)
    assert before.returncode == 0


def test_an_export_never_writes_through_a_link_and_keeps_each_files_folder_its_own(tmp_path):
    from ..conftest import turnwire_process

    db, thread_id, out = _weather_in_a_store(tmp_path)
    victim = tmp_path / "victim"
    victim.mkdir()
    (out / "t.json.files").symlink_to(victim)  # planted: the copies must not land there
    refused = turnwire_process(
        "threads", "export", thread_id, str(out / "t.json"), "--store", str(db)
    )
    assert refused.returncode == 2 and "is not a folder an export made" in refused.stderr
    assert list(victim.iterdir()) == [] and not (out / "t.json").exists()
    (out / "t.json.files").unlink()
    for name in ("t.json", "t.yaml", "t.json"):  # again over an earlier export: replaced
        done = turnwire_process("threads", "export", thread_id, str(out / name), "--store", str(db))
        assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "t.json",
        "t.json.files",
        "t.yaml",
        "t.yaml.files",
    ]
    for name in ("t.json", "t.yaml"):
        assert turnwire_process("render", str(out / name)).returncode == 0
    missing = turnwire_process(
        "threads", "export", thread_id, str(tmp_path / "nope" / "t.json"), "--store", str(db)
    )
    assert missing.returncode == 2 and "does not exist; create it first" in missing.stderr


def test_a_re_export_keeps_the_files_its_thread_points_at_and_a_failed_one_keeps_the_last(
    tmp_path, monkeypatch
):
    import stat

    import turnwire
    from turnwire.store import open_store

    out = tmp_path / "out"
    out.mkdir()
    (out / "x.json.files").mkdir()
    photo = out / "x.json.files" / "photo.txt"
    photo.write_text("the only copy")
    thread = _looking_at(
        [{"id": "a1", "kind": "document", "mime_type": "text/plain", "path": str(photo)}]
    )
    with open_store(tmp_path / "t.db") as store:
        thread_id = store.import_thread(thread)  # pointers kept as they are (no files=)
        store.export_file(thread_id, out / "x.json")
        assert photo.read_text() == "the only copy"  # copied into the new folder, not lost
        saved = turnwire.load_thread(out / "x.json")
        assert Path(saved.messages[0].attachments[0].path).read_text() == "the only copy"
        assert stat.S_IMODE((out / "x.json.files").stat().st_mode) == 0o777 & ~_umask()
        assert stat.S_IMODE((out / "x.json").stat().st_mode) == 0o666 & ~_umask()

        before = (out / "x.json").read_bytes()
        import turnwire.store._base as shared

        def interrupted(*args, **kwargs):
            raise KeyboardInterrupt

        monkeypatch.setattr(shared, "save_thread", interrupted)
        with pytest.raises(KeyboardInterrupt):
            store.export_file(thread_id, out / "x.json")
        assert (out / "x.json").read_bytes() == before  # the last export, whole
        assert photo.read_text() == "the only copy"
        assert sorted(p.name for p in out.iterdir()) == ["x.json", "x.json.files"]


def _looking_at(attachments: list[dict[str, Any]]) -> Any:
    """A thread of one question with these attachments."""
    question = {
        "id": "u1",
        "role": "user",
        "content": "look",
        "created_at": "2026-01-01T10:00:00Z",
        "attachments": attachments,
    }
    return turnwire.load_thread({"version": 1, "messages": [question]})


def _umask() -> int:
    import os

    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_an_export_gives_each_file_a_copy_of_its_own_whatever_the_names(tmp_path):
    import turnwire
    from turnwire.store import open_store

    sources = tmp_path / "src"
    for folder, name, text in (
        ("a", "2-0-a.txt", "P1"),
        ("a", "0-a.txt", "P2"),
        ("b", "0-a.txt", "P3"),
    ):
        (sources / folder).mkdir(parents=True, exist_ok=True)
        (sources / folder / name).write_text(text)
    attachments = [
        {"id": f"m{i}", "kind": "document", "mime_type": "text/plain", "path": str(sources / f / n)}
        for i, (f, n) in enumerate((("a", "2-0-a.txt"), ("a", "0-a.txt"), ("b", "0-a.txt")))
    ]
    thread = _looking_at(attachments)
    with open_store(tmp_path / "t.db") as store:
        from turnwire.files.pointers import ContextAssembler

        thread_id = store.import_thread(thread, files=ContextAssembler(roots=[sources]))
        store.export_file(thread_id, tmp_path / "e.json")
    saved = turnwire.load_thread(tmp_path / "e.json")
    texts = [Path(a.path).read_text() for a in saved.messages[0].attachments]
    assert texts == ["P1", "P2", "P3"]


def test_exports_of_one_file_from_several_processes_at_once_lose_nothing(tmp_path):
    import subprocess
    import sys

    db, thread_id, out = _weather_in_a_store(tmp_path)
    script = (
        "import sys\nfrom turnwire.store import open_store\n"
        "with open_store(sys.argv[1]) as store:\n"
        "    for _ in range(8):\n"
        "        store.export_file(sys.argv[2], sys.argv[3])\n"
    )
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(db), thread_id, str(out / "x.json")],
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    for run in runs:
        _, errors = run.communicate(timeout=120)
        assert run.returncode == 0, errors
    assert sorted(p.name for p in out.iterdir()) == ["x.json", "x.json.files"]
    assert turnwire_process("render", str(out / "x.json")).returncode == 0


def _weather_in_a_store(tmp_path: Path) -> tuple[Path, str, Path]:
    """The example thread imported into a new store; the store, the id, an empty ``out/``."""
    from ..conftest import REPO_EXAMPLES

    db = tmp_path / "t.db"
    done = turnwire_process(
        "threads", "import", str(REPO_EXAMPLES / "weather.yaml"), "--store", str(db)
    )
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out"
    out.mkdir()
    return db, done.stdout.strip(), out


WEATHER = REPO_EXAMPLES / "weather.yaml"


def _env() -> dict[str, str]:
    import os

    return {key: value for key, value in os.environ.items() if key != "OPENAI_API_KEY"}


def test_export_to_stdout_and_import_from_stdin(tmp_path: Path):
    db = tmp_path / "threads.db"
    imported = turnwire_process("threads", "import", str(WEATHER), "--store", str(db), "--id", "w")
    assert imported.returncode == 0, imported.stderr
    exported = turnwire_process("threads", "export", "w", "-", "--store", str(db))
    assert exported.returncode == 0, exported.stderr
    shown = turnwire_process("threads", "show", "w", "--store", str(db))
    assert json.loads(exported.stdout) == json.loads(shown.stdout)
    assert not (tmp_path / "-").exists()
    again = subprocess.run(
        [
            sys.executable,
            "-m",
            "turnwire",
            "threads",
            "import",
            "-",
            "--store",
            str(db),
            "--id",
            "w2",
        ],
        input=exported.stdout.encode(),
        capture_output=True,
        env=_env(),
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert again.returncode == 0, again.stderr
    copy = turnwire_process("threads", "show", "w2", "--store", str(db))
    assert _without_pointers(json.loads(copy.stdout)) == _without_pointers(json.loads(shown.stdout))


def _without_pointers(thread: dict) -> dict:
    """A thread file's data with its attachment pointers blanked (imports copy the files)."""
    for message in thread.get("messages", []):
        for attachment in message.get("attachments", []):
            assert Path(attachment.pop("path")).is_file()
    return thread


def test_an_import_that_points_outside_its_folder_is_refused_and_stores_nothing(tmp_path):
    thread = tmp_path / "in" / "t.yaml"
    thread.parent.mkdir()
    thread.write_text(
        "version: 1\nmessages:\n  - {id: u1, role: user, content: hi, "
        "created_at: '2026-01-01T10:00:00Z', attachments: "
        "[{id: a1, kind: document, mime_type: text/plain, path: /etc/hostname}]}\n"
    )
    db = str(tmp_path / "t.db")
    done = turnwire_process("threads", "import", str(thread), "--store", db)
    assert done.returncode == 2
    assert done.stderr.startswith("error: E_FILE_NOT_ALLOWED: $.messages[0].attachments[0].path")
    assert json.loads(turnwire_process("threads", "list", "--json", "--store", db).stdout) == []
    assert not any((tmp_path / "files").glob("*/*"))


def test_run_says_when_a_request_does_not_extend_the_last_one_and_json_shows_each(
    location, tmp_path
):
    """At the default verbosity `turnwire run` prints a prefix reset with its cause; --json
    holds the report of every request."""
    config = tmp_path / "c.yaml"
    with _opened(location, tmp_path) as store:
        thread_id = store.create_thread(
            turnwire.load_thread({"version": 1, "model": "gpt-4o", "system_prompt": "Be brief."})
        )

    def ask(prompt: str, *more: str) -> Any:
        with ScriptedServer([Reply.sse(recorded("text_simple_gpt-4o-mini.sse"))]) as server:
            done = cli(
                tmp_path, "run", "--thread", thread_id, "--store", location, "--prompt", prompt,
                "--base-url", server.base_url, *more,
            )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done

    first = ask("one")
    assert "prefix-reset" not in first.stderr
    steady = ask("two", "--json")
    (report,) = json.loads(steady.stdout)["prefix"]
    assert report["extends"] is True and report["kept"] == report["previous_items"] == 1
    config.write_text("render: {system_prompt_channel: developer-item}\n")
    moved = ask("three", "--config", str(config))
    lines = [line for line in moved.stderr.splitlines() if "prefix-reset" in line]
    assert len(lines) == 1, moved.stderr
    (line,) = lines
    assert line.startswith("turnwire: WARNING: request 1: prefix-reset: the instructions changed;")


def test_run_a_stored_thread_with_files_by_reference(location, tmp_path):
    """``--file-url`` and ``--file-id`` attach references (never read, never copied), in the
    order given among the ``--file`` paths; the next request sends them again in place."""
    picture = tmp_path / "cat.png"
    picture.write_bytes(b"\x89PNG fake")
    thread_id = _new_thread(location, tmp_path)
    with ScriptedServer([Reply.sse(recorded("text_simple_gpt-4o-mini.sse"))]) as server:
        done = cli(
            tmp_path, "run", "--thread", thread_id, "--store", location, "--prompt", "compare",
            "--file-url", "https://example.com/papers/report.pdf", "--file", str(picture),
            "--file-id", "image:file-abc123:low", "--file-id", "document:file-def456",
            "--base-url", server.base_url,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    first = server.requests[0].json["input"]
    sent = first[0]["content"]
    files = [p for p in sent if p["type"] != "input_text"]
    assert files[0] == {
        "type": "input_file",
        "filename": "report.pdf",
        "file_url": "https://example.com/papers/report.pdf",
    }
    assert files[1]["type"] == "input_image" and files[1]["image_url"].startswith("data:")
    assert {k: files[2][k] for k in ("type", "file_id", "detail")} == {
        "type": "input_image",
        "file_id": "file-abc123",
        "detail": "low",
    }
    assert files[3]["type"] == "input_file" and files[3]["file_id"] == "file-def456"
    with _opened(location, tmp_path) as store:
        parts = store.turns(thread_id)[0].parts
        kept = [part.media for part in parts if getattr(part, "media", None) is not None]
    assert [m.url for m in kept] == ["https://example.com/papers/report.pdf", None, None, None]
    assert [m.file_id for m in kept] == [None, None, "file-abc123", "file-def456"]
    with ScriptedServer([Reply.sse(recorded("text_simple_gpt-4o-mini.sse"))]) as server:
        again = cli(
            tmp_path, "run", "--thread", thread_id, "--store", location, "--prompt", "and now?",
            "--base-url", server.base_url,
        )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert server.requests[0].json["input"][: len(first)] == first


@pytest.mark.parametrize(
    ("option", "value", "said"),
    [
        ("--file-id", "file-abc", "say what the file holds and its id: image:ID or document:ID"),
        ("--file-id", "audio:file-abc", "image:ID or document:ID"),
        ("--file-id", "image:", "image:ID or document:ID"),
        ("--file-id", "document:file-abc:low", "only an image takes a detail"),
        ("--file-id", "image:file-abc:tiny", "an image's detail is one of low, high"),
        ("--file-id", "image:file a", "$.file_id"),
        ("--file-id", "image:file-abc:", "an image's detail is one of low, high"),
        ("--file-url", "ftp://example.com/a.pdf", "http"),
    ],
)
def test_a_reference_that_is_none_is_refused_naming_the_option(option, value, said, tmp_path):
    from turnwire.cli.run import question_files
    from turnwire.errors import ConfigError

    with pytest.raises(ConfigError) as raised:
        question_files([("--file", "a.png"), (option, value)])
    assert str(raised.value).startswith(f"{option} {value}: ")
    assert said in str(raised.value)


def test_a_refused_url_is_named_without_its_query():
    """A presigned URL's signature stays out of the message."""
    from turnwire.cli.run import question_files
    from turnwire.errors import ConfigError

    with pytest.raises(ConfigError) as raised:
        question_files([("--file-url", "ftp://example.com/a.pdf?X-Amz-Signature=0a1b2c3d4e5f")])
    assert str(raised.value).startswith(
        "--file-url ftp://example.com/a.pdf?X-Amz-Signature=[redacted]: "
    )
    assert "0a1b2c3d4e5f" not in str(raised.value)


def test_a_bad_reference_stops_the_command_before_anything_is_sent(tmp_path):
    db = str(tmp_path / "t.db")
    thread_id = _new_thread(db, tmp_path)
    with ScriptedServer([Reply.sse(recorded("text_simple_gpt-4o-mini.sse"))]) as server:
        done = cli(
            tmp_path, "run", "--thread", thread_id, "--store", db, "--prompt", "x",
            "--file-id", "file-abc", "--base-url", server.base_url,
        )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("error: E_INVALID_OPENAI_RESPONSES_OPTIONS: --file-id file-abc: ")
    assert server.requests == []
    with _opened(db, tmp_path) as store:
        assert store.turns(thread_id) == []


def test_references_without_a_stored_thread_are_refused(tmp_path):
    thread = tmp_path / "t.yaml"
    thread.write_text("version: 1\nmodel: gpt-4o\n")
    done = cli(tmp_path, "run", str(thread), "--file-url", "https://example.com/a.pdf")
    assert done.returncode == 1
    assert "--file-url and --file-id go with --thread" in done.stderr
