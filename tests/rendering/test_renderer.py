"""The render core: a thread in, the exact request body out.

Inline loading: a first render (an empty render memo) sorts the records once and hands the assembler
only those that read a file. The differential property below builds random threads mixing inline
data, pointers to files inside a root (text, invalid UTF-8, empty), missing files, pointers outside
the root and small per-file and per-request limits, and checks that the first render returns exactly
what ``assembler.inline`` of the whole thread returns (or raises the same error, with the same
``$.path``), that the state it keeps is the one computed from the whole loaded thread, and that a
warm render after it still agrees. A warm render reads a file pointer again every time and still
counts kept records' inline bytes against the request budget.

The render context: values passed per render (and per dispatch of a run, and on the command line)
that stages may ask for by name.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from itertools import accumulate
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import turnwire
from turnwire import hookimpl
from turnwire.files.pointers import ContextAssembler
from turnwire.model.records import (
    Artifact,
    Media,
    Message,
    Retrievable,
    Thread,
    ToolCall,
    ToolResult,
)
from turnwire.rendering._incremental.memo import InlineState, RenderMemo
from turnwire.rendering.container import overriding
from turnwire.rendering.renderer import _inline, _inline_bytes, _loaded_bytes, _reads_files
from turnwire.stages.system_prompt import fill_template

from ..client.server import Reply, ScriptedServer, recorded
from ..conftest import REPLAY, at, make_container, thread, turnwire_process, user
from ._incremental.test_memo import PNG, TOOLS, _cycle, _growing_thread

T0 = datetime(2026, 1, 1, tzinfo=UTC)


FILES = {
    "small.bin": b"12345",
    "large.bin": bytes(range(60)),
    "text.txt": "h\u00e9llo w\u00f6rld".encode(),
    "broken.txt": b"ok \xff\xfe \xe2\x82",
    "empty.bin": b"",
}


# Mostly files that can be read, so that most threads load and their limits decide.
POINTERS = (*FILES, *FILES, *FILES, "missing.bin", "../outside.bin", "")


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("first-inline")
    folder = base / "root"
    folder.mkdir()
    for name, data in FILES.items():
        (folder / name).write_bytes(data)
    (base / "outside.bin").write_bytes(b"secret")
    return folder


def _pointer(root: Path, name: str) -> str:
    return str(root / name) if name else ""


@st.composite
def _media(draw: st.DrawFn, root: Path, name: str) -> Media:
    if draw(st.booleans()):
        empty = draw(st.integers(0, 4)) == 0
        data = b"" if empty else draw(st.binary(min_size=1, max_size=40))
        return Media(id=name, kind="image", mime_type="image/png", data=data)
    pointer = _pointer(root, draw(st.sampled_from(POINTERS)))
    return Media(id=name, kind="image", mime_type="image/png", path=pointer)


@st.composite
def _artifact(draw: st.DrawFn, root: Path) -> Artifact:
    if draw(st.booleans()):
        return Artifact(text=draw(st.text(max_size=20)))
    return Artifact(path=_pointer(root, draw(st.sampled_from(POINTERS))))


@st.composite
def _message(draw: st.DrawFn, root: Path, index: int) -> Message:
    count = draw(st.sampled_from((0, 0, 0, 1, 2)))
    return Message(
        id=f"m{index}",
        role="user",
        content="question",
        attachments=tuple(draw(_media(root, f"m{index}.{j}")) for j in range(count)),
        created_at=T0 + timedelta(seconds=index),
    )


@st.composite
def _thread(draw: st.DrawFn, root: Path) -> Thread:
    messages = [draw(_message(root, index)) for index in range(draw(st.integers(0, 8)))]
    calls = []
    for index in range(draw(st.integers(0, 6))):
        shape = draw(st.sampled_from(("none", "text", "media", "media", "artifact", "artifacts")))
        result = None
        if shape == "text":
            result = ToolResult(text="plain")
        elif shape == "media":
            count = draw(st.integers(1, 2))
            result = ToolResult(
                media=tuple(draw(_media(root, f"c{index}.{j}")) for j in range(count))
            )
        elif shape == "artifact":
            result = ToolResult(artifact=draw(_artifact(root)))
        elif shape == "artifacts":
            count = draw(st.integers(1, 2))
            result = ToolResult(artifacts=tuple(draw(_artifact(root)) for _ in range(count)))
        calls.append(
            ToolCall(
                id=f"call_{index}",
                tool="lookup",
                result=result,
                created_at=T0 + timedelta(seconds=index, milliseconds=500),
            )
        )
    retrievables = []
    for index in range(draw(st.integers(0, 2))):
        if draw(st.booleans()):
            retrievable = Retrievable(id=f"r{index}", content="doc", trust_tier="first-party")
        else:
            retrievable = Retrievable(
                id=f"r{index}", artifact=draw(_artifact(root)), trust_tier="first-party"
            )
        retrievables.append(retrievable)
    return Thread(
        messages=tuple(messages), tool_calls=tuple(calls), retrievables=tuple(retrievables)
    )


def _assembler(root: Path, file_limit: int | None, request_limit: int | None) -> ContextAssembler:
    return ContextAssembler(
        roots=(root,),
        max_file_bytes=32 * 2**20 if file_limit is None else file_limit,
        max_request_bytes=64 * 2**20 if request_limit is None else request_limit,
    )


def _loaded(load: Any) -> Any:
    """The loaded thread, or the error as ``("error", type, message, $.path)``."""
    try:
        return load()
    except turnwire.TurnwireError as err:
        return ("error", type(err).__name__, str(err), getattr(err, "path", None))


def _charges(records: tuple[Any, ...], reading: list[int]) -> list[int]:
    again = set(reading)
    sizes = (0 if i in again else _inline_bytes(r) for i, r in enumerate(records))
    return list(accumulate(sizes, initial=0))


def _expected_state(thread: Thread, assembler: ContextAssembler) -> InlineState | None:
    """The state a first render keeps, computed from the whole thread loaded at once."""
    try:
        loaded = assembler.inline(thread)
    except turnwire.TurnwireError:
        return None
    if _loaded_bytes(loaded) > assembler.max_request_bytes:
        return None
    messages = [i for i, m in enumerate(thread.messages) if _reads_files(m)]
    calls = [i for i, c in enumerate(thread.tool_calls) if c.result is not None and _reads_files(c)]
    return InlineState(
        messages=thread.messages,
        loaded_messages=loaded.messages,
        reading_messages=messages,
        message_charges=_charges(thread.messages, messages),
        tool_calls=thread.tool_calls,
        loaded_tool_calls=loaded.tool_calls,
        reading_tool_calls=calls,
        call_charges=_charges(thread.tool_calls, calls),
    )


def _kept_by_identity(records: tuple[Any, ...], loaded: tuple[Any, ...], whole: Any) -> None:
    """Every record the whole thread's loading kept as it was is the same object in
    ``loaded``, and ``loaded`` is ``records`` itself when loading kept all of them."""
    kept = [a is b for a, b in zip(records, whole, strict=True)]
    assert [a is b for a, b in zip(records, loaded, strict=True)] == kept
    if all(kept):
        assert loaded is records


def _charged_sizes(thread: Thread) -> list[int]:
    """The size of every item loading ``thread`` charges that exists (inline data, and the
    files its pointers name inside the root)."""
    media = [m for message in thread.messages for m in message.attachments]
    artifacts = [r.artifact for r in thread.retrievables if r.artifact is not None]
    for call in thread.tool_calls:
        if call.result is not None:
            media += call.result.media or ()
            artifacts += call.result.artifacts or ()
            artifacts += (call.result.artifact,) if call.result.artifact is not None else ()
    paths = [m.path for m in media if m.path] + [a.path for a in artifacts if a.path]
    sizes = [len(m.data) for m in media if m.data is not None]
    return sizes + [len(FILES[Path(p).name]) for p in paths if Path(p).name in FILES]


def _near(*values: int) -> list[int]:
    return sorted({max(0, value + delta) for value in values for delta in (-1, 0, 1)})


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_a_first_render_loads_what_the_whole_thread_loads(root: Path, data: st.DataObject) -> None:
    thread = data.draw(_thread(root))
    # Limits at the edges this thread reaches: its largest item, the bytes it charges, and
    # the bound the loaded thread is checked against; or anywhere, or none.
    sizes = _charged_sizes(thread)
    unlimited = _loaded(lambda: ContextAssembler(roots=(root,)).inline(thread))
    bound = 0 if isinstance(unlimited, tuple) else _loaded_bytes(unlimited)
    file_limit = data.draw(
        st.one_of(st.none(), st.sampled_from(_near(0, *sizes)), st.integers(0, 70))
    )
    request_limit = data.draw(
        st.one_of(st.none(), st.sampled_from(_near(sum(sizes), bound)), st.integers(0, 160))
    )
    thread = data.draw(_thread(root))
    assembler = _assembler(root, file_limit, request_limit)
    memo = RenderMemo()
    first = _loaded(lambda: _inline(thread, memo, assembler))
    whole = _loaded(lambda: assembler.inline(thread))
    assert first == whole
    expected = _expected_state(thread, assembler)
    assert memo.inlined == expected
    if expected is not None:
        assert memo.loaded_from == {}
        assert memo.inlined is not None
        _kept_by_identity(thread.messages, first.messages, whole.messages)
        _kept_by_identity(thread.tool_calls, first.tool_calls, whole.tool_calls)
        assert memo.inlined.loaded_messages is first.messages
        assert memo.inlined.loaded_tool_calls is first.tool_calls
    # A warm render after it, of the same thread and of the thread grown by one record.
    assert _loaded(lambda: _inline(thread, memo, assembler)) == whole
    added = data.draw(_message(root, len(thread.messages)))
    grown = msgspec.structs.replace(thread, messages=(*thread.messages, added))
    assert _loaded(lambda: _inline(grown, memo, assembler)) == _loaded(
        lambda: assembler.inline(grown)
    )


def test_a_first_render_hands_the_assembler_only_the_records_that_read_a_file(root: Path) -> None:
    picture = Media(id="p", kind="image", mime_type="image/png", data=b"\x89PNG")
    pointer = Media(id="f", kind="image", mime_type="image/png", path=str(root / "small.bin"))
    messages = tuple(
        Message(
            id=f"m{i}",
            role="user",
            content="question",
            attachments=(pointer,) if i == 5 else (picture,) if i % 3 == 0 else (),
            created_at=T0 + timedelta(seconds=i),
        )
        for i in range(12)
    )
    calls = tuple(
        ToolCall(
            id=f"call_{i}",
            tool="lookup",
            result=ToolResult(text="plain"),
            created_at=T0 + timedelta(seconds=i),
        )
        for i in range(4)
    )
    thread = Thread(messages=messages, tool_calls=calls)
    seen: list[Thread] = []

    class Counting(ContextAssembler):
        def inline(self, thread: Thread) -> Thread:
            seen.append(thread)
            return super().inline(thread)

    assembler = Counting(roots=(root,))
    memo = RenderMemo()
    loaded = _inline(thread, memo, assembler)
    assert [len(part.messages) for part in seen] == [1]
    assert [len(part.tool_calls) for part in seen] == [0]
    assert loaded == ContextAssembler(roots=(root,)).inline(thread)
    assert loaded.tool_calls is thread.tool_calls
    assert loaded.messages[5].attachments[0].data == FILES["small.bin"]
    assert all(loaded.messages[i] is messages[i] for i in range(12) if i != 5)
    assert memo.inlined is not None
    assert memo.inlined.reading_messages == [5]
    assert memo.inlined.message_charges == list(
        accumulate((4 if i % 3 == 0 and i != 5 else 0 for i in range(12)), initial=0)
    )
    assert memo.inlined.call_charges == [0] * 5


def _picture(name: str, size: int) -> Media:
    return Media(id=name, kind="image", mime_type="image/png", data=b"x" * size)


def _edge_thread(root: Path, case: str) -> tuple[Thread, ContextAssembler]:
    """A thread where one record that reads no file decides, next to one that reads a file."""
    pointer = Media(id="f", kind="image", mime_type="image/png", path=str(root / "small.bin"))
    message = Message(id="m0", role="user", content="q", attachments=(pointer,), created_at=T0)
    result = ToolResult(media=(_picture("c", 8),))
    other: Message | None = None
    file_limit, request_limit = 32 * 2**20, 64 * 2**20
    if case == "message over the per-file limit":
        other = Message(
            id="m1", role="user", content="q", attachments=(_picture("p", 8),), created_at=T0
        )
        result, file_limit = ToolResult(text="plain"), 7
    elif case == "call over the per-file limit":
        file_limit = 7
    elif case == "call over the per-request limit":
        request_limit = 12  # the file's 5 bytes and the call's 8
    elif case == "artifact texts over the bound":
        result, request_limit = ToolResult(artifact=Artifact(text="\u00e9" * 4)), 12
    call = ToolCall(id="call_0", tool="lookup", result=result, created_at=T0)
    messages = (message,) if other is None else (message, other)
    assembler = ContextAssembler(
        roots=(root,), max_file_bytes=file_limit, max_request_bytes=request_limit
    )
    return Thread(messages=messages, tool_calls=(call,)), assembler


@pytest.mark.parametrize(
    "case",
    [
        "message over the per-file limit",
        "call over the per-file limit",
        "call over the per-request limit",
        "artifact texts over the bound",
        "within every limit",
    ],
)
def test_a_record_that_reads_no_file_still_counts_against_the_limits(root: Path, case: str) -> None:
    thread, assembler = _edge_thread(root, case)
    memo = RenderMemo()
    stale: dict[str, Any] = {"messages": ((), (), 0, [])}
    memo.loaded_from = stale
    first = _loaded(lambda: _inline(thread, memo, assembler))
    assert first == _loaded(lambda: assembler.inline(thread))
    expected = _expected_state(thread, assembler)
    assert memo.inlined == expected
    # What a successful first render leaves is its own; a fallback leaves what was there.
    assert memo.loaded_from == ({} if expected is not None else stale)
    assert (expected is not None) == (case == "within every limit")


def test_a_file_pointer_is_read_again_on_every_render(tmp_path):
    picture = tmp_path / "p.png"
    picture.write_bytes(PNG)
    media = {"id": "img", "kind": "image", "mime_type": "image/png", "path": str(picture)}
    records = _cycle(0, 10, {}, media)
    thread = turnwire.load_thread({"version": 1, "model": "gpt-5", "tools": TOOLS, **records})
    container = make_container(REPLAY)
    before = turnwire.api.render(thread, container=container, roots=[tmp_path]).body
    picture.write_bytes(PNG + b"changed")
    after = turnwire.api.render(thread, container=container, roots=[tmp_path]).body
    with overriding(container.render_memo, None):
        cold = turnwire.api.render(thread, container=container, roots=[tmp_path]).body
    assert after == cold
    assert after != before


def test_inline_bytes_of_kept_records_still_count_against_the_request_budget():
    container = make_container({**REPLAY, "files": {"max_request_bytes": 150}})
    full = _growing_thread(3)
    picture = {"id": "img", "kind": "image", "mime_type": "image/png"}

    def with_pictures(count: int) -> turnwire.Thread:
        media = (
            turnwire.load_thread(
                {
                    "version": 1,
                    "messages": [
                        {
                            "id": "x",
                            "role": "user",
                            "content": "c",
                            "created_at": at(1),
                            "attachments": [{**picture, "data_base64": "QUJD" * 20}],
                        }
                    ],
                }
            )
            .messages[0]
            .attachments
        )
        messages = tuple(
            msgspec.structs.replace(m, attachments=media) if m.role == "user" else m
            for m in full.messages[: 2 * count]
        )
        return msgspec.structs.replace(full, messages=messages)

    two = with_pictures(2)
    three = msgspec.structs.replace(
        two, messages=two.messages + with_pictures(3).messages[4:]
    )  # as the client grows a thread: the old records are the same objects
    turnwire.api.render(
        two, container=container
    )  # 120 bytes: within the budget of 150; 180 are not
    with pytest.raises(turnwire.TurnwireError) as warm:
        turnwire.api.render(three, container=container)
    with overriding(container.render_memo, None), pytest.raises(turnwire.TurnwireError) as cold:
        turnwire.api.render(three, container=container)
    assert str(warm.value) == str(cold.value)


def test_a_thread_without_file_pointers_keeps_its_own_tuples():
    """Loading changes no record of such a thread: the render uses its tuples as they are
    (no copy that grows with the thread), which the next render recognises by identity."""
    container = make_container(REPLAY)
    thread = _growing_thread(3)
    turnwire.api.render(thread, container=container)
    inlined = container.render_memo().inlined
    assert inlined is not None
    assert inlined.loaded_messages is thread.messages
    assert inlined.loaded_tool_calls is thread.tool_calls


TEMPLATE = {"render": {"system_prompt_template": True}}


PROMPT = "Today is {date}. You help {user}. Literal {{braces}}, {missing} and {0.__class__}."


def test_fill_template_replaces_names_only():
    filled = fill_template(PROMPT, {"date": "2026-12-01", "user": "Ana {date}"})
    assert filled == (
        "Today is 2026-12-01. You help Ana {date}. Literal {{braces}}, {missing} and {0.__class__}."
    )


def test_the_system_prompt_template_uses_the_context():
    t = thread(model="gpt-5", system_prompt=PROMPT, messages=[user()])
    context = {"date": "2026-12-01", "user": "Ana"}
    body = turnwire.render(t, container=make_container(TEMPLATE), render_context=context).json
    assert body["instructions"].startswith("Today is 2026-12-01. You help Ana.")
    # Off by default: the prompt is sent as written.
    plain = turnwire.render(t, container=make_container(), render_context=context).json
    assert plain["instructions"].startswith("Today is {date}.")


def test_a_plugin_stage_may_ask_for_it_by_name():
    class Greeting:
        @hookimpl
        def render_system_prompt(self, system_prompt: Any, render_context: Any) -> str:
            return f"{system_prompt} Greet {render_context.get('user', 'nobody')}."

    t = thread(model="gpt-5", system_prompt="Be kind.", messages=[user()])
    container = make_container(extra_plugins=[Greeting()])
    body = turnwire.render(t, container=container, render_context={"user": "Ana"}).json
    assert body["instructions"] == "Be kind. Greet Ana."
    assert turnwire.render(t, container=container).json["instructions"] == (
        "Be kind. Greet nobody."
    )


def test_every_request_of_a_run_gets_the_context():
    t = thread(model="gpt-5", system_prompt="Help {user}.", messages=[user()])
    with ScriptedServer([Reply.sse(recorded("text_simple_gpt-4o-mini.sse"))]) as server:
        turnwire.run(
            t,
            container=make_container(TEMPLATE),
            base_url=server.base_url,
            render_context={"user": "Ana"},
        )
    assert server.requests[0].json["instructions"] == "Help Ana."


def test_context_on_the_command_line(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(
        json.dumps(
            {
                "version": 1,
                "model": "gpt-5",
                "system_prompt": "Help {user} on {date}.",
                "messages": [user()],
            }
        )
    )
    done = turnwire_process(
        "render",
        str(path),
        "--set",
        "render.system_prompt_template=true",
        "--render-context",
        "user=Ana",
        "--render-context",
        "date=2026-12-01",
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["instructions"] == "Help Ana on 2026-12-01."
    bad = turnwire_process("render", str(path), "--render-context", "no-equals")
    assert bad.returncode == 2
    assert bad.stderr.startswith(
        "error: E_INVALID_OPENAI_RESPONSES_OPTIONS: --render-context 'no-equals'"
    )


def test_content_stages_may_ask_for_it_too_and_a_warm_render_sees_each_context():
    class Signed:
        @hookimpl
        def render_standing_instructions(
            self, standing_instructions: Any, render_context: Any
        ) -> str:
            return f"rules for {render_context.get('user', 'nobody')}"

        @hookimpl
        def render_timeline_message(self, message: Any, render_context: Any) -> Any:
            return None  # defers to the built-in: asking for the context changes nothing

    t = thread(model="gpt-5", standing_instructions=["x"], messages=[user()])
    container = make_container(extra_plugins=[Signed()])
    first = turnwire.render(t, container=container, render_context={"user": "Ana"}).json
    second = turnwire.render(t, container=container, render_context={"user": "Bo"}).json
    assert "rules for Ana" in first["instructions"]
    assert "rules for Bo" in second["instructions"]
    assert first["input"] == second["input"]
