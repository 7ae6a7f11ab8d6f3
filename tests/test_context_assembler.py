"""ContextAssembler: file bytes are read per call, within limits, never stored."""

from __future__ import annotations

import pytest

import turnwire
from turnwire import RenderError
from turnwire.files.pointers import ContextAssembler

from .conftest import at


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
