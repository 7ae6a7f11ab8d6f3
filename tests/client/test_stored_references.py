"""A stored thread's question may name files by reference: a ``file_id`` uploaded to the API or
a ``url`` it fetches, stored as they are and sent the same way on every later request; a file
given by its bytes alone is refused, naming it, with nothing stored."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import turnwire
from turnwire.model.records import Media
from turnwire.store.sqlite import SQLiteStore

from ..conftest import make_container
from .server import Reply, ScriptedServer
from .streams import text_answer

PHOTO = Media.from_file_id("file-photo123", kind="image", detail="low")
REPORT = Media.from_url("https://example.com/reports/q3.pdf")


def _run(store: SQLiteStore, thread_id: str, server: ScriptedServer, **options: Any) -> Any:
    async def go() -> Any:
        async with turnwire.Client(
            make_container(), base_url=server.base_url, api_key="sk-t"
        ) as client:
            return await client.run_thread(thread_id, store=store, **options)

    return asyncio.run(go())


def _blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        block
        for item in body["input"]
        if item.get("role") == "user" and isinstance(item.get("content"), list)
        for block in item["content"]
        if block.get("type") != "input_text"
    ]


def test_references_are_stored_as_they_are_and_sent_the_same_on_every_request(
    tmp_path: Path,
) -> None:
    store = SQLiteStore(tmp_path / "threads.db")
    thread_id = store.create_thread(turnwire.Thread.create("Help.", model="gpt-4o"))
    notes = tmp_path / "notes.txt"
    notes.write_text("the notes")
    answers = [Reply.sse(text_answer("first")), Reply.sse(text_answer("second"))]
    with ScriptedServer(answers) as server:
        _run(store, thread_id, server, prompt="look at these", files=[PHOTO, REPORT, notes])
        _run(store, thread_id, server, prompt="and now?")
    one, two = (seen.json for seen in server.requests)
    sent = _blocks(one)
    assert sent[0] == {"type": "input_image", "detail": "low", "file_id": "file-photo123"}
    assert sent[1]["type"] == "input_file"
    assert sent[1]["file_url"] == "https://example.com/reports/q3.pdf"
    assert sent[2]["type"] == "input_file" and "file_data" in sent[2]
    # The second request carries the first question exactly as the first request sent it.
    assert _blocks(two) == sent
    assert two["input"][: len(one["input"])] == one["input"]

    stored = store.load(thread_id)
    [asked] = [m for m in stored.messages if m.role == "user" and m.attachments]
    photo, report, copy = asked.attachments
    assert (photo.file_id, photo.path, photo.data) == ("file-photo123", None, None)
    assert (report.url, report.path, report.data) == (
        "https://example.com/reports/q3.pdf",
        None,
        None,
    )
    # A path is copied among the store's files, as before.
    assert (
        copy.path is not None
        and Path(copy.path) != notes
        and Path(copy.path).read_text() == ("the notes")
    )


def test_a_file_given_by_its_bytes_alone_is_refused_and_nothing_is_stored(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "threads.db")
    thread_id = store.create_thread(turnwire.Thread.create("Help.", model="gpt-4o"))
    inline = Media(id="m1", kind="image", mime_type="image/png", data=b"\x89PNG")
    before = store.last_position(thread_id)
    with ScriptedServer([]) as server:
        with pytest.raises(turnwire.ConfigError) as caught:
            _run(store, thread_id, server, prompt="hi", files=[PHOTO, inline])
    assert caught.value.path == "files[1]"
    assert "holds bytes alone" in str(caught.value)
    assert server.requests == []
    assert store.last_position(thread_id) == before


def test_a_media_with_a_path_that_is_no_file_is_refused_naming_it(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "threads.db")
    thread_id = store.create_thread(turnwire.Thread.create("Help.", model="gpt-4o"))
    missing = Media.from_path(tmp_path / "gone.png")
    with ScriptedServer([]) as server:
        with pytest.raises(turnwire.ConfigError) as caught:
            _run(store, thread_id, server, prompt="hi", files=[missing])
    assert caught.value.path == "files[0]"
