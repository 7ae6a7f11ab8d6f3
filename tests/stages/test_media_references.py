"""Media by reference (issue 28 item 3): an attachment's ``file_id`` or ``url`` is sent as it
is, never read or fetched; ``detail`` per attachment, over ``render.image_detail``; the marker,
the envelopes and the media policy as for inline media; the thread file's rules, with the
``$.path`` of the attachment at fault."""

from __future__ import annotations

import json
import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import turnwire
from turnwire.config.nonce import EnvelopeNonce
from turnwire.config.options import MediaPolicy
from turnwire.errors import ThreadFileError, UnsupportedMediaError
from turnwire.files.pointers import ContextAssembler
from turnwire.files.thread_file import dump_thread, save_thread
from turnwire.model.checks import check_thread
from turnwire.model.records import Media, Message, StashEntry
from turnwire.rendering.container import overriding
from turnwire.stages.media import render_media_blocks
from turnwire.wire import InputFile, InputImage, InputText

from ..conftest import SECRET, call, make_container, render_body, thread, user
from ..oracle import OPENAI_ONLY_DETAILS, validate_body, validate_open_responses, validate_openapi

N = EnvelopeNonce(SECRET)
T0 = datetime(2026, 1, 1, 10, tzinfo=UTC)
FILE_ID = "file-6F2ksmvXxt4VdaqjVAGamQ"
TOOL = {"name": "get_weather", "parameters": {"type": "object"}}


class _Relay:
    from turnwire.stages.envelopes import render_trusted_content, render_untrusted_content

    render_trusted_content = staticmethod(render_trusted_content)
    render_untrusted_content = staticmethod(render_untrusted_content)


def blocks(media: Media, image_detail: Any = None, policy: MediaPolicy | None = None) -> tuple:
    return render_media_blocks(
        media=media,
        unsupported_media_policy=policy or MediaPolicy(),
        image_detail=image_detail,
        envelope_nonce=N,
        warn=[].append,
        stages=_Relay(),
    )


def attachment(aid: str = "a1", kind: str = "image", **source: Any) -> dict[str, Any]:
    mime = {"image": "image/png", "document": "application/pdf", "audio": "audio/ogg"}[kind]
    return {"id": aid, "kind": kind, "mime_type": mime, **source}


def with_attachments(*attachments: dict[str, Any], **fields: Any) -> turnwire.Thread:
    return thread(messages=[user(content="look", attachments=list(attachments))], **fields)


def content(body: dict[str, Any]) -> list[dict[str, Any]]:
    return body["input"][0]["content"][1:]  # after the message's own text


# ---------------------------------------------------------------- what renders


def test_an_attachment_with_a_file_id_and_detail_low_renders_as_such():
    """The done-when of issue 28 item 3, through the public render (all three oracles)."""
    body = render_body(with_attachments(attachment(file_id=FILE_ID, detail="low")))
    assert content(body) == [
        {"type": "input_text", "text": "[media id: a1 | ]"},
        {"type": "input_image", "detail": "low", "file_id": FILE_ID},
    ]


def test_each_source_fills_its_own_field_of_the_native_block():
    url = "https://cdn.example.com/a/cat.png?size=large&v=2"
    assert blocks(Media(id="i", kind="image", mime_type="image/png", url=url))[1] == InputImage(
        detail="auto", image_url=url
    )
    document = Media(
        id="d", kind="document", mime_type="application/pdf", filename="r.pdf", url=url
    )
    assert blocks(document)[1] == InputFile(filename="r.pdf", file_url=url)
    by_id = Media(id="d", kind="document", mime_type="application/pdf", file_id=FILE_ID)
    assert blocks(by_id) == (
        InputText(text="[media id: d | ]"),
        InputFile(file_id=FILE_ID),  # no file name unless the attachment gives one
    )
    inline = Media(id="d", kind="document", mime_type="application/pdf", data=b"%PDF")
    assert blocks(inline)[1] == InputFile(
        filename="d", file_data="data:application/pdf;base64,JVBERg=="
    )


def test_a_referenced_document_s_file_name_is_sanitised():
    named = Media(
        id="d",
        kind="document",
        mime_type="application/pdf",
        filename="r<1>\n.pdf",
        url="https://x.example/r",
    )
    assert blocks(named) == (
        InputText(text="[media id: d | r1.pdf]"),
        InputFile(filename="r1.pdf", file_url="https://x.example/r"),
    )
    only_markup = msgspec.structs.replace(named, filename="<>")
    assert blocks(only_markup)[1] == InputFile(file_url="https://x.example/r")


@pytest.mark.parametrize(
    ("own", "configured", "sent"),
    [
        (None, None, "auto"),  # today's behaviour, unchanged
        (None, "low", "low"),
        (None, "original", "original"),
        ("high", "low", "high"),  # the attachment's own wins
        ("auto", "original", "auto"),
    ],
)
def test_an_image_s_own_detail_wins_over_the_configured_one(own, configured, sent):
    for source in ({"file_id": FILE_ID}, {"url": "https://x.example/i.png"}, {"data": b"x"}):
        media = Media(id="i", kind="image", mime_type="image/png", detail=own, **source)
        assert blocks(media, configured)[1].detail == sent


def test_a_document_s_detail_is_sent_only_when_it_has_one():
    document = Media(id="d", kind="document", mime_type="application/pdf", data=b"x")
    assert blocks(document, "low")[1].detail is None  # render.image_detail is for images
    assert b'"detail"' not in msgspec.json.encode(blocks(document, "low")[1])
    low = msgspec.structs.replace(document, detail="low")
    assert blocks(low)[1].detail == "low"


def test_render_image_detail_reaches_every_image_through_the_configuration():
    attachments = (
        attachment("a1", file_id=FILE_ID),
        attachment("a2", url="https://x.example/i.png", detail="high"),
        attachment("a3", data_base64="eA=="),
        attachment("a4", "document", url="https://x.example/r.pdf"),
    )
    body = render_body(with_attachments(*attachments), {"render": {"image_detail": "low"}})
    assert [block.get("detail") for block in content(body)[1::2]] == ["low", "high", "low", None]


def test_without_the_new_fields_and_settings_a_body_is_byte_for_byte_what_it_was():
    """What the golden files pin for every fixture, on an inline image and document: `detail`
    auto on the image, no `detail` on the document."""
    body = turnwire.render(
        with_attachments(
            attachment("a1", data_base64="eA=="), attachment("a2", "document", data_base64="eA==")
        ),
        container=make_container(),
        model="gpt-5",
    ).body
    assert (
        b'{"type":"input_image","detail":"auto","image_url":"data:image/png;base64,eA=="}' in body
    )
    assert (
        b'{"type":"input_file","filename":"a2","file_data":"data:application/pdf;base64,eA=="}'
        in body
    )


def test_a_reference_in_a_tool_result_goes_inside_the_result_s_envelope_after_its_marker():
    media = [
        attachment("shot", file_id=FILE_ID, detail="low"),
        attachment("doc", "document", url="https://x.example/r.pdf"),
    ]
    body = render_body(
        thread(messages=[user()], tools=[TOOL], tool_calls=[call("c1", 1, result={"media": media})])
    )
    output = next(item for item in body["input"] if item["type"] == "function_call_output")[
        "output"
    ]
    nonce = N("c1")
    assert output == [
        {
            "type": "input_text",
            "text": f'<untrusted_content_{nonce} nonce="{nonce}" '
            'kind="tool-result-media" tool="get_weather">',
        },
        {"type": "input_text", "text": "[media id: shot | ]"},
        {"type": "input_image", "detail": "low", "file_id": FILE_ID},
        {"type": "input_text", "text": "[media id: doc | ]"},
        {"type": "input_file", "file_url": "https://x.example/r.pdf"},
        {"type": "input_text", "text": f"</untrusted_content_{nonce}>"},
    ]


def test_audio_by_reference_follows_the_media_policy():
    voice = Media(
        id="v",
        kind="audio",
        mime_type="audio/ogg",
        filename="note.ogg",
        url="https://x.example/note.ogg",
        stash=(
            StashEntry(key="text:transcript", value="due monday", trust_tier="third-party-private"),
        ),
    )
    with pytest.raises(UnsupportedMediaError):
        blocks(voice)
    described = blocks(voice, policy=MediaPolicy(default="synthetic-description"))
    assert described[0].text.startswith("[media id: v | note.ogg]\n<untrusted_content_")
    assert "[media: note.ogg, audio/ogg, unknown size]" in described[0].text
    stashed = blocks(voice, policy=MediaPolicy(default="fallback-stash"))
    assert "\ndue monday\n" in stashed[0].text and "https://" not in stashed[0].text


def test_the_open_responses_exceptions_for_details_are_each_needed(monkeypatch):
    """The specification's check refuses both detail levels turnwire may send without the
    exceptions of :data:`OPENAI_ONLY_DETAILS` (so each is needed), the other two oracles take
    them, and the Open Responses check still refuses a detail no one defines."""
    from .. import oracle

    assert set(OPENAI_ONLY_DETAILS) == {"input_file.detail", "input_image.detail=original"}
    original = {"type": "input_image", "detail": "original", "image_url": "https://x.example/i"}
    document = {"type": "input_file", "detail": "low", "file_url": "https://x.example/r.pdf"}
    bodies = [
        {"model": "gpt-5", "input": [{"type": "message", "role": "user", "content": [block]}]}
        for block in (original, document)
    ]
    for body in bodies:
        validate_open_responses(body)
        validate_body(body)
        validate_openapi(body)
    with monkeypatch.context() as patched:
        patched.setattr(oracle, "_without_openai_details", lambda body: body)
        for body, refusal in zip(bodies, ("detail", "content[0].detail"), strict=True):
            with pytest.raises(oracle.OracleError, match=refusal.replace("[", r"\[")):
                oracle._open_responses(body)
    wrong = {**original, "detail": "medium"}
    with pytest.raises(oracle.OracleError):
        oracle._open_responses(
            {"model": "gpt-5", "input": [{"type": "message", "role": "user", "content": [wrong]}]}
        )


# ---------------------------------------------------------------- nothing is read or fetched


def test_a_reference_is_never_read_nor_fetched(monkeypatch, tmp_path):
    def refused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("turnwire touched the file system or the network for a reference")

    monkeypatch.setattr(socket.socket, "connect", refused)
    monkeypatch.setattr(socket, "getaddrinfo", refused)
    monkeypatch.setattr(ContextAssembler, "read", refused)
    monkeypatch.setattr(ContextAssembler, "resolve", refused)
    source = tmp_path / "thread.json"
    source.write_text(
        json.dumps(
            {
                "version": 1,
                "model": "gpt-5",
                "messages": [
                    user(
                        attachments=[
                            attachment("a1", url="https://10.0.0.1/secret.png"),
                            attachment("a2", "document", file_id=FILE_ID),
                        ]
                    )
                ],
            }
        )
    )
    rendered = turnwire.render(source, container=make_container(), roots=())
    assert [
        block.get("image_url") or block.get("file_id") for block in content(rendered.json)[1::2]
    ] == [
        "https://10.0.0.1/secret.png",
        FILE_ID,
    ]
    ContextAssembler(roots=()).check(turnwire.load_thread(source))  # nothing to check either


def test_a_reference_charges_nothing_against_the_file_limits():
    references = [attachment(f"a{i}", file_id=f"file-{i}") for i in range(3)]
    settings = {"files": {"max_file_bytes": 1, "max_request_bytes": 1}}
    body = render_body(with_attachments(*references), settings)
    assert len(content(body)) == 6
    with pytest.raises(
        turnwire.errors.TurnwireError, match=r"\$\.messages\[0\]\.attachments\[3\]\.data_base64"
    ):
        render_body(with_attachments(*references, attachment("a3", data_base64="eHh4")), settings)


# ---------------------------------------------------------------- the thread file's rules


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ({"file_id": FILE_ID, "url": "https://x.example/i.png"}, "(given: `file_id`, `url`)"),
        ({"path": "i.png", "file_id": FILE_ID}, "(given: `path`, `file_id`)"),
        (
            {"data_base64": "eA==", "url": "https://x.example/i.png"},
            "(given: `data_base64`, `url`)",
        ),
        ({}, "(given: none)"),
        ({"url": "ftp://x.example/i.png"}, "must be an http or https URL, not `ftp:`"),
        ({"url": "file:///etc/passwd"}, "not `file:`: a local file goes in `path`"),
        ({"url": "/etc/passwd"}, "not a relative reference"),
        ({"url": "data:image/png;base64,eA=="}, "is a data: URL: put the bytes in `data_base64`"),
        ({"url": "https:///i.png"}, "names no host"),
        ({"url": "https://x.example/a b.png"}, "holds white space or a control character"),
        ({"url": "https://x.example/\x1b[2J"}, "holds white space or a control character"),
        ({"url": "https://x.example:99999/i.png"}, "is not a valid URL"),
        ({"url": "https://[::1/i.png"}, "is not a valid URL"),
        ({"file_id": FILE_ID, "detail": "medium"}, None),
    ],
)
def test_a_bad_source_is_a_typed_error_naming_the_attachment(source, message):
    for where, make in (
        ("$.messages[0].attachments[0]", with_attachments),
        (
            "$.tool_calls[0].result.media[0]",
            lambda a: thread(tools=[TOOL], tool_calls=[call("c1", 1, result={"media": [a]})]),
        ),
    ):
        with pytest.raises(ThreadFileError) as caught:
            make(attachment(**source))
        assert caught.value.code == "E_THREAD_FILE_INVALID"
        assert caught.value.path.startswith(where), caught.value.path
        if message is not None:
            assert message in str(caught.value)
            assert caught.value.path == where


@pytest.mark.parametrize(
    ("kind", "detail", "message"),
    [
        ("document", "original", "`detail: original` is for images"),
        ("audio", "low", "`detail` applies to images and documents, not audio"),
    ],
)
def test_a_detail_the_kind_does_not_take_is_refused(kind, detail, message):
    with pytest.raises(ThreadFileError, match=r"^\$\.messages\[0\]\.attachments\[0\]: ") as caught:
        with_attachments(attachment(kind=kind, file_id=FILE_ID, detail=detail))
    assert message in str(caught.value)


def test_a_file_id_is_one_token():
    with pytest.raises(ThreadFileError) as caught:
        with_attachments(attachment(file_id="file-1 file-2"))
    assert caught.value.path == "$.messages[0].attachments[0].file_id"
    with pytest.raises(ThreadFileError):
        with_attachments(attachment(file_id="file-1\n"))
    with pytest.raises(ThreadFileError):
        with_attachments(attachment(file_id=""))


def test_a_thread_with_references_round_trips_and_an_old_one_re_encodes_unchanged(tmp_path):
    references = with_attachments(
        attachment("a1", file_id=FILE_ID, detail="low"),
        attachment("a2", "document", url="https://x.example/r.pdf", detail="high"),
    )
    target = tmp_path / "thread.yaml"
    save_thread(references, target)
    assert turnwire.load_thread(target) == references
    text = target.read_text()
    assert f"file_id: {FILE_ID}" in text and "url: https://x.example/r.pdf" in text
    old = with_attachments(attachment("a1", data_base64="eA=="))
    saved = json.loads(dump_thread(old))
    assert saved["messages"][0]["attachments"] == [
        {"id": "a1", "kind": "image", "mime_type": "image/png", "data_base64": "eA=="}
    ]


# ---------------------------------------------------------------- from Python


def test_from_url_and_from_file_id_build_references_message_user_takes():
    image = Media.from_url("https://cdn.example.com/photos/van%20front.jpg?x=1", detail="low")
    assert (image.kind, image.mime_type, image.filename) == ("image", "image/jpeg", "van front.jpg")
    assert image.url == "https://cdn.example.com/photos/van%20front.jpg?x=1"
    assert image.id.startswith("file_") and image.path is None and image.reference
    report = Media.from_file_id(FILE_ID, kind="document", filename="report.pdf", id="r1")
    assert (report.mime_type, report.file_id, report.detail) == ("application/pdf", FILE_ID, None)
    question = Message.user("what is this?", files=[image, report], id="u1", created_at=T0)
    body = render_body(turnwire.Thread(messages=(question,)))
    assert content(body)[1] == {"type": "input_image", "detail": "low", "image_url": image.url}
    assert content(body)[3] == {"type": "input_file", "filename": "report.pdf", "file_id": FILE_ID}
    assert not Media.from_path("x.png").reference


def test_the_constructors_refuse_what_a_thread_file_refuses():
    with pytest.raises(ThreadFileError, match="not `ftp:`"):
        Media.from_url("ftp://x.example/i.png")
    with pytest.raises(ThreadFileError, match="is for images"):
        Media.from_file_id(FILE_ID, kind="document", detail="original")
    with pytest.raises(ThreadFileError) as caught:
        Media.from_file_id("two words", kind="image")
    assert caught.value.path == "$.file_id"


def test_a_record_built_in_code_is_checked_like_a_thread_file():
    bad = Media(id="a1", kind="image", mime_type="image/png", file_id="file-1 file-2")
    question = Message(id="u1", role="user", attachments=(bad,), created_at=T0)
    with pytest.raises(ThreadFileError) as caught:
        check_thread(turnwire.Thread(messages=(question,)))
    assert caught.value.path == "$.messages[0].attachments[0].file_id"
    with pytest.raises(ValueError, match="exactly one of"):
        Media(id="a1", kind="image", mime_type="image/png", file_id="f", data=b"x")


# ---------------------------------------------------------------- warm equals cold

_SOURCES = st.sampled_from(
    [
        {"file_id": FILE_ID},
        {"url": "https://x.example/i.png"},
        {"data_base64": "eA=="},
    ]
)
_DETAILS = st.sampled_from([None, "low", "high", "auto", "original"])


@st.composite
def _attachments(draw: Any, index: int) -> dict[str, Any]:
    kind = draw(st.sampled_from(["image", "document"]))
    detail = draw(_DETAILS)
    if kind == "document" and detail == "original":
        detail = None
    extra = {"detail": detail} if detail is not None else {}
    return attachment(f"a{index}", kind, **draw(_SOURCES), **extra)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.lists(st.integers(0, 9), max_size=3), min_size=1, max_size=5),
    st.lists(_DETAILS, min_size=1, max_size=5),
    st.data(),
)
def test_warm_renders_give_the_cold_bytes_as_references_and_the_default_detail_change(
    shapes, configured, data
):
    container = make_container()
    messages = []
    for turn, shape in enumerate(shapes):
        attachments = [data.draw(_attachments(turn * 10 + i)) for i, _ in enumerate(shape)]
        extra = {"attachments": attachments} if attachments else {}
        messages.append(user(f"u{turn}", f"turn {turn}", turn, **extra))
        current = thread(messages=messages)
        detail = configured[turn % len(configured)]
        with overriding(container.image_detail, detail):
            warm = turnwire.render(current, container=container, model="gpt-5").body
        cold = turnwire.render(
            current, container=make_container({"render": {"image_detail": detail}}), model="gpt-5"
        ).body
        assert warm == cold


def test_the_same_thread_renders_the_same_bytes():
    current = with_attachments(
        attachment("a1", file_id=FILE_ID, detail="low"),
        attachment("a2", url="https://x.example/i.png"),
    )
    first = turnwire.render(current, container=make_container(), model="gpt-5").body
    again = turnwire.render(
        turnwire.load_thread(json.loads(dump_thread(current))),
        container=make_container(),
        model="gpt-5",
    ).body
    assert first == again


# ---------------------------------------------------------------- stores


def test_an_import_copies_pointed_files_and_leaves_references_alone(tmp_path: Path):
    from turnwire.store.sqlite import SQLiteStore

    (tmp_path / "local.png").write_bytes(b"png")
    source = tmp_path / "thread.json"
    source.write_text(
        json.dumps(
            {
                "version": 1,
                "model": "gpt-5",
                "messages": [
                    user(
                        attachments=[
                            attachment("a1", path="local.png"),
                            attachment("a2", file_id=FILE_ID, detail="low"),
                            attachment("a3", "document", url="https://x.example/r.pdf"),
                        ]
                    )
                ],
            }
        )
    )
    loaded = turnwire.load_thread(source)
    with SQLiteStore(tmp_path / "store" / "threads.db") as store:
        files = ContextAssembler(roots=[tmp_path])
        thread_id = store.import_thread(loaded, files=files)
        stored = store.load(thread_id).messages[0].attachments
        exported = store.export_thread(thread_id).messages[0].attachments
    assert stored[0].path != str(tmp_path / "local.png")
    assert Path(stored[0].path).read_bytes() == b"png"
    assert stored[1:] == loaded.messages[0].attachments[1:] == exported[1:]
