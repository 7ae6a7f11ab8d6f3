"""`turnwire threads ...`, `turnwire run --thread` and `turnwire demo`, as processes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import turnwire
from turnwire.store.sqlite import SQLiteStore

from .client.server import Reply, ScriptedServer, recorded
from .conftest import REPO_EXAMPLES, turnwire_process

REPO = Path(__file__).resolve().parents[1]


def cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return turnwire_process(*args, cwd=cwd)


def _without_paths(thread: turnwire.Thread) -> turnwire.Thread:
    import msgspec

    from turnwire.model.records import map_pointers

    replace = msgspec.structs.replace
    return map_pointers(
        thread,
        lambda media: replace(media, path="-") if media.path else media,
        lambda art: replace(art, path="-") if art.path else art,
    )


def test_import_list_show_export_delete(tmp_path):
    db = str(tmp_path / "t.db")
    done = cli(
        "threads", "import", str(REPO_EXAMPLES / "weather.yaml"), "--title", "Weather", "--store", db
    )
    assert done.returncode == 0, done.stderr
    thread_id = done.stdout.strip()
    assert thread_id.startswith("thr_")
    listing = json.loads(cli("threads", "list", "--json", "--store", db).stdout)
    assert [(t["id"], t["title"], t["turns"]) for t in listing] == [(thread_id, "Weather", 2)]
    shown = turnwire.load_thread(json.loads(cli("threads", "show", thread_id, "--store", db).stdout))
    original = turnwire.load_thread(REPO_EXAMPLES / "weather.yaml")
    assert _without_paths(shown) == _without_paths(original)
    # The attachment was copied into the store's own folder, byte for byte.
    (copy,) = shown.messages[0].attachments
    assert copy.path is not None and Path(copy.path).parent.parent == tmp_path / "files"
    assert Path(copy.path).read_bytes() == (REPO_EXAMPLES / "photo.png").read_bytes()
    exported = tmp_path / "out.yaml"
    assert cli("threads", "export", thread_id, str(exported), "--store", db).returncode == 0
    assert _without_paths(turnwire.load_thread(exported)) == _without_paths(original)
    assert cli("threads", "delete", thread_id, "--store", db).returncode == 0
    assert not Path(copy.path).exists()
    missing = cli("threads", "show", thread_id, "--store", db)
    assert missing.returncode == 2
    assert missing.stderr.startswith("error: E_THREAD_NOT_FOUND: ")


def test_run_a_stored_thread_with_a_question_and_a_file(tmp_path):
    db = tmp_path / "t.db"
    picture = tmp_path / "cat.png"
    picture.write_bytes(b"\x89PNG fake")
    with SQLiteStore(db) as store:
        thread_id = store.create_thread(turnwire.load_thread({"version": 1, "model": "gpt-4o"}))
    with ScriptedServer([Reply.sse(recorded("text_simple_gpt-4o-mini.sse"))]) as server:
        done = cli(
            "run",
            "--thread",
            thread_id,
            "--store",
            str(db),
            "--prompt",
            "what is this?",
            "--file",
            str(picture),
            "--base-url",
            server.base_url,
            "--config",
            str(REPO / "config" / "strict-media.yaml"),
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Hi in Portuguese")
    sent = server.requests[0].json["input"][0]["content"]
    assert [p["type"] for p in sent] == ["input_text", "input_text", "input_image"]
    with SQLiteStore(db) as store:
        turns = store.turns(thread_id)
        assert [t.role for t in turns] == ["user", "assistant"]
        assert turns[0].parts[1].media.path == str(picture) and turns[0].parts[1].media.data is None
        assert turns[1].model == "gpt-4o-mini-2024-07-18" and turns[1].usage["total_tokens"] > 0
        assert len(turns[1].request_fingerprint) == 64
    # The next question sends the history, without the earlier file's bytes.
    with ScriptedServer([Reply.sse(recorded("text_simple_gpt-4o-mini.sse"))]) as server:
        again = cli(
            "run",
            "--thread",
            thread_id,
            "--store",
            str(db),
            "--prompt",
            "and now?",
            "--base-url",
            server.base_url,
        )
    assert again.returncode == 0, again.stderr
    history = server.requests[0].json["input"]
    assert [i.get("role") for i in history] == ["user", "assistant", "user"]
    assert all(
        p["type"] != "input_image"
        for i in history
        if isinstance(i["content"], list)
        for p in i["content"]
    )


def test_a_failed_run_appends_nothing(tmp_path):
    db = tmp_path / "t.db"
    with SQLiteStore(db) as store:
        thread_id = store.create_thread(turnwire.load_thread({"version": 1, "model": "gpt-4o"}))
    failing = recorded("error_then_failed_insufficient_quota_gpt-5-nano.jsonl")
    with ScriptedServer([Reply.sse(failing)]) as server:
        done = cli(
            "run",
            "--thread",
            thread_id,
            "--store",
            str(db),
            "--prompt",
            "hi",
            "--base-url",
            server.base_url,
        )
    assert done.returncode == 1
    with SQLiteStore(db) as store:
        assert store.turns(thread_id) == []


def test_the_demo_runs_end_to_end_offline(tmp_path):
    db = tmp_path / "demo" / "threads.db"
    missing = cli("demo", "--store", str(db), cwd=tmp_path)  # as every --db: no new folder
    assert missing.returncode == 2 and "does not exist; create it first" in missing.stderr
    assert not db.parent.exists()
    db.parent.mkdir()
    done = cli("demo", "--store", str(db), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "RECORDED" in out
    assert "[tool] weather" in out and "Florence" in out
    assert "replaying 1 reasoning item(s) with encrypted_content" in out
    assert "Right now in Florence, Italy" in out
    assert "image of a potato" in out and "1 image(s) as input_image" in out
    thread_id = re.search(r"Stored thread (thr_\w+)", out).group(1)
    with SQLiteStore(db) as store:
        assert len(store.turns(thread_id)) == 4
        thread = store.export_thread(thread_id)
    assert [t.payload.paired_item_id[:3] for t in thread.thoughts] == ["fc_", "msg"]
    assert thread.tool_calls[0].result.text.startswith("40C")


def test_the_readme_opens_with_the_two_commands_and_ci_runs_the_second():
    lines = (REPO / "README.md").read_text().splitlines()
    assert lines[2] == "```sh" and lines[5] == "```"
    demo, tests = lines[3], lines[4]
    assert demo.endswith("uv run turnwire demo") and tests.endswith("uv run pytest")
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    assert tests.rsplit("&& ", 1)[1] in ci


def test_the_readme_demo_command_in_a_fresh_clone(tmp_path):
    """The README's first command, as written, in a fresh clone with its own environment."""
    clone = tmp_path / "clone"
    done = subprocess.run(
        ["git", "clone", "--quiet", str(REPO), str(clone)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    demo = (REPO / "README.md").read_text().splitlines()[3]
    venv_bin = str(Path(sys.prefix) / "bin")
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("VIRTUAL_ENV", "PYTHONPATH", "UV_PROJECT_ENVIRONMENT")
    }
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p != venv_bin)
    done = subprocess.run(
        ["bash", "-c", demo],
        cwd=clone,
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Right now in Florence" in done.stdout and "Stored thread thr_" in done.stdout
    assert (clone / ".venv").is_dir()


def test_run_needs_a_thread_file_or_a_stored_thread(tmp_path):
    done = cli("run", "--base-url", "http://127.0.0.1:9/v1")
    assert done.returncode == 1
    assert "give a THREAD file, or --thread ID" in done.stderr
    mixed = cli("run", str(REPO_EXAMPLES / "weather.yaml"), "--prompt", "x")
    assert mixed.returncode == 1 and "--prompt and --file go with --thread" in mixed.stderr


def test_an_imported_thread_runs_with_its_files_from_the_store(tmp_path):
    """The README's store tour: import a thread file, then run it with a new question."""
    db = str(tmp_path / "t.db")
    done = cli("threads", "import", str(REPO_EXAMPLES / "weather.yaml"), "--store", db)
    assert done.returncode == 0, done.stderr
    thread_id = done.stdout.strip()
    with ScriptedServer([Reply.sse(recorded("text_simple_gpt-4o-mini.sse"))]) as server:
        ran = cli(
            "run", "--thread", thread_id, "--store", db, "--prompt", "And tomorrow?",
            "--base-url", server.base_url, "--profile", "examples",
        )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    sent = server.requests[0].json["input"]
    images = [
        part
        for item in sent
        if isinstance(item.get("content"), list)
        for part in item["content"]
        if part.get("type") == "input_image"
    ]
    assert images and images[0]["image_url"].startswith("data:image/png;base64,")
    listing = json.loads(cli("threads", "list", "--json", "--store", db).stdout)
    assert listing[0]["turns"] == 4


def test_an_import_that_points_outside_its_folder_is_refused_and_stores_nothing(tmp_path):
    thread = tmp_path / "in" / "t.yaml"
    thread.parent.mkdir()
    thread.write_text(
        "version: 1\nmessages:\n  - {id: u1, role: user, content: hi, "
        "created_at: '2026-01-01T10:00:00Z', attachments: "
        "[{id: a1, kind: document, mime_type: text/plain, path: /etc/hostname}]}\n"
    )
    db = str(tmp_path / "t.db")
    done = cli("threads", "import", str(thread), "--store", db)
    assert done.returncode == 2
    assert done.stderr.startswith("error: E_FILE_NOT_ALLOWED: $.messages[0].attachments[0].path")
    assert json.loads(cli("threads", "list", "--json", "--store", db).stdout) == []
    assert not any((tmp_path / "files").glob("*/*"))
