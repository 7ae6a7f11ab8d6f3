"""The context-window guard's estimate: six buckets, images, files and reasoning blobs."""

from __future__ import annotations

import base64
import logging
import struct
import zlib

import pytest

import turnwire
from turnwire.errors import ContextOverflowError
from turnwire.rendering.tokens import (
    BUCKETS,
    check_context_window,
    estimate,
    file_tokens,
    image_tokens,
)

from ..conftest import REPLAY, at, make_container, reasoning_thought, thread, user


def _png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IEND", b"")


def _jpeg(width: int, height: int) -> bytes:
    app0 = (
        b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00" + b"\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    )
    sof = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return b"\xff\xd8" + app0 + sof + b"\xff\xd9"


@pytest.mark.parametrize(
    ("detail", "size", "expected"),
    [
        ("low", (4000, 4000), 85),
        ("high", (512, 512), 85 + 170),  # short side scaled up? no: only down; one tile
        ("high", (1024, 1024), 85 + 170 * 4),  # 768x768: 2x2 tiles
        ("auto", (2048, 4096), 85 + 170 * 6),  # 1024x2048 -> 768x1536: 2x3 tiles
        ("high", None, 765),  # unknown size counts as 1024x1024
    ],
)
def test_image_tokens_follow_the_documented_rule(detail, size, expected):
    assert image_tokens(detail, size) == expected


def test_file_tokens_count_pdf_pages():
    pdf = b"%PDF-1.4 /Type /Pages /Kids [1 0 R 2 0 R] /Type /Page /Type/Page %%EOF"
    assert file_tokens(pdf) == 2 * (765 + 500)
    assert file_tokens(None) == 765 + 500


def _media(data: bytes, mime: str, name: str) -> dict:
    kind = "image" if mime.startswith("image/") else "document"
    return {
        "id": name,
        "kind": kind,
        "mime_type": mime,
        "filename": name,
        "data_base64": base64.b64encode(data).decode(),
    }


def test_six_buckets_in_the_reference_order_each_counted_from_its_source():
    t = thread(
        model="gpt-5",
        system_prompt=" ".join(["system"] * 20),
        standing_instructions=[" ".join(["rule"] * 30)],
        memories=[{"id": "m1", "content": " ".join(["memory"] * 40)}],
        retrievables=[{"id": "r1", "content": " ".join(["doc"] * 50), "trust_tier": "first-party"}],
        tools=[{"name": "lookup", "description": "finds things"}],
        messages=[user(content="question " * 10)],
    )
    body = turnwire.render(t, container=make_container()).request
    breakdown = estimate(body, t, encoding="o200k_base")
    assert tuple(breakdown) == BUCKETS
    assert breakdown["system_prompt"] == 20
    assert breakdown["standing_instructions"] == 30
    assert breakdown["memories"] == 40
    assert breakdown["retrievables"] == 50
    # The question plus its envelope; the leading system content is not counted twice.
    assert 10 < breakdown["timeline"] < 60
    assert breakdown["tools"] > 5


def test_images_files_and_reasoning_blobs_count_in_the_timeline():
    image = _media(_png(2048, 4096), "image/png", "tall.png")
    jpeg = _media(_jpeg(1024, 1024), "image/jpeg", "square.jpg")
    pdf = _media(b"%PDF-1.4 /Type /Page /Type /Page /Type /Page %%EOF", "application/pdf", "a.pdf")
    plain = thread(model="gpt-5", messages=[user(content="look")])
    media = thread(model="gpt-5", messages=[user(content="look", attachments=[image, jpeg, pdf])])
    container = make_container()
    base = estimate(
        turnwire.render(plain, container=container).request, plain, encoding="o200k_base"
    )
    with_media = estimate(
        turnwire.render(media, container=container).request, media, encoding="o200k_base"
    )
    extra = with_media["timeline"] - base["timeline"]
    assert extra >= (85 + 170 * 6) + (85 + 170 * 4) + 3 * (765 + 500)
    assert extra < (85 + 170 * 6) + (85 + 170 * 4) + 3 * (765 + 500) + 60  # the file names etc.

    blob = "x" * 4000
    reasoning = thread(
        model="gpt-5",
        messages=[
            user(content="hi"),
            {
                "id": "msg_1",
                "role": "assistant",
                "content": "ok",
                "created_at": "2026-01-01T10:00:02Z",
                "seq": 2,
            },
        ],
        thoughts=[
            reasoning_thought("rs_1", 1, fingerprint=None, paired="msg_1", seq=1, encrypted=blob)
        ],
    )
    replay = make_container({"render": {**REPLAY["render"], "unfingerprinted_reasoning": "trust"}})
    body = turnwire.render(reasoning, container=replay).request
    assert any(getattr(item, "encrypted_content", None) == blob for item in body.input)
    assert estimate(body, reasoning, encoding="o200k_base")["timeline"] >= 1000


def test_hosted_items_count_what_the_model_reads_and_their_opaque_state():
    compaction = {"id": "cmp_1", "type": "compaction", "encrypted_content": "y" * 4000}
    search = {
        "id": "ws_1",
        "type": "web_search_call",
        "status": "completed",
        "action": {"type": "search", "query": "word " * 200},
    }
    plain = thread(model="gpt-5", messages=[user(content="hi")])
    hosted = thread(
        model="gpt-5",
        messages=[user(content="hi", second=5)],
        hosted_items=[
            {"id": "cmp_1", "type": "compaction", "item": compaction, "created_at": at(1)},
            {"id": "ws_1", "type": "web_search_call", "item": search, "created_at": at(2)},
        ],
    )
    container = make_container()
    base = estimate(
        turnwire.render(plain, container=container).request, plain, encoding="o200k_base"
    )
    body = turnwire.render(hosted, container=container).request
    extra = estimate(body, hosted, encoding="o200k_base")["timeline"] - base["timeline"]
    assert extra >= 1000 + 200  # the compaction's 4,000 characters, and the query's words


def test_the_guard_logs_its_estimate_and_raises_over_the_window(caplog):
    t = thread(model="gpt-5", system_prompt="word " * 100, messages=[user()])
    body = turnwire.render(t, container=make_container()).request
    with caplog.at_level(logging.DEBUG, logger="turnwire"):
        breakdown = check_context_window(body, t, encoding="cl100k_base", window=10_000)
    (record,) = [r for r in caplog.records if getattr(r, "kind", "") == "context-window-usage"]
    assert record.per_bucket == breakdown and record.limit == 10_000
    with pytest.raises(ContextOverflowError) as caught:
        check_context_window(body, t, encoding="cl100k_base", window=50)
    assert caught.value.breakdown["system_prompt"] in (100, 101)
    assert check_context_window(body, t, encoding=None, window=50) is None


@pytest.mark.parametrize("encoding", ["o200k_base", "o200k_harmony", "cl100k_base", "qwen3.5"])
def test_every_encoding_the_counter_has_is_accepted(encoding):
    settings = turnwire.load_settings(
        overrides={"context": {"token_encoding": encoding, "context_window": 1000}}
    )
    assert settings.context.token_encoding == encoding
    t = thread(model="gpt-5", messages=[user(content="hello world")])
    body = turnwire.render(t, container=make_container()).request
    assert estimate(body, t, encoding=encoding)["timeline"] > 0
