"""Loading thread and configuration files: limits, typed one-line errors, JSON through msgspec."""

from __future__ import annotations

import json
import os
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import turnwire
from turnwire import ConfigError, ThreadFileError, load_settings, load_thread
from turnwire.files.loading import (
    INT_MAX,
    INT_MIN,
    MAX_BYTES,
    DocumentKind,
    Limits,
    format_for,
    read_regular_file,
)
from turnwire.files.thread_file import UNBOUNDED_FIELDS, load_thread_bytes
from turnwire.model.records import Thread

from ..conftest import REPO, REPO_EXAMPLES, at, make_container, turnwire_process

EMOJI = "\U0001f600"
BILLION_LAUGHS = (
    b'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    b"b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
    b"c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
    b"d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
    b"e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
    b"f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
    b"g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
    b"h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
    b"i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n"
)
# The same document as PyYAML's pure-Python loader reads it (where libyaml is missing).
PURE = DocumentKind(
    "thread file", ThreadFileError, yaml_syntax="neither valid YAML nor JSON", pure_yaml=True
)
FAST = DocumentKind("thread file", ThreadFileError, yaml_syntax="neither valid YAML nor JSON")


def _doc(*messages: str, **fields: Any) -> dict[str, Any]:
    return {
        "version": 1,
        "model": "gpt-5",
        "messages": [
            {"id": f"u{i}", "role": "user", "content": text, "created_at": at(i)}
            for i, text in enumerate(messages)
        ],
        **fields,
    }


def _call(args: Any, seq: int = 0) -> dict[str, Any]:
    return {"id": "call_1", "tool": "t", "args": args, "created_at": at(1), "seq": seq}


def _fails(data: bytes, *words: str, format: str | None = None, path: str = "$") -> str:
    """Load ``data``; it must fail with one line naming the source and containing ``words``."""
    with pytest.raises(ThreadFileError) as caught:
        load_thread_bytes(data, name="t.in", format=format)  # type: ignore[arg-type]
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("thread file t.in, "), message
    for word in words:
        assert word in message, message
    assert caught.value.path == path
    assert caught.value.code == "E_THREAD_FILE_INVALID"
    return message


# --- JSON goes through msgspec --------------------------------------------------------------


def test_an_ascii_escaped_emoji_loads_as_the_character(tmp_path: Path) -> None:
    doc = _doc(f"weather {EMOJI}?")
    escaped = tmp_path / "escaped.json"
    escaped.write_text(json.dumps(doc))  # ensure_ascii: \ud83d\ude00
    assert "\\ud83d\\ude00" in escaped.read_text()
    utf8 = tmp_path / "utf8.json"
    utf8.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    assert load_thread(escaped).messages[0].content == f"weather {EMOJI}?"
    container = make_container()
    first = turnwire.render(escaped, container=container).body
    assert first == turnwire.render(utf8, container=container).body
    assert EMOJI.encode() in first


def test_json_loads_into_the_same_thread_as_the_yaml_it_was_dumped_from(tmp_path: Path) -> None:
    shutil.copy(REPO_EXAMPLES / "photo.png", tmp_path / "photo.png")
    shutil.copy(REPO_EXAMPLES / "weather.yaml", tmp_path / "weather.yaml")
    from_yaml = load_thread(tmp_path / "weather.yaml")
    (tmp_path / "weather.json").write_bytes(
        turnwire.dump_thread(turnwire.files.thread_file._rebase(from_yaml, tmp_path))
    )
    from_json = load_thread(tmp_path / "weather.json")
    assert from_json == from_yaml
    assert from_json.messages[0].attachments[0].path == str(tmp_path.resolve() / "photo.png")


def test_the_format_is_the_suffix_else_told_by_the_content(tmp_path: Path) -> None:
    assert format_for("a.JSON") == "json"
    assert format_for("a.yml") == "yaml" and format_for("a.yaml") == "yaml"
    assert format_for("thread") is None
    doc = json.dumps(_doc(EMOJI)).encode()
    assert load_thread_bytes(b"  \n" + doc).messages[0].content == EMOJI
    # YAML's flow style starts with `{` too; it is read as YAML when it is not JSON.
    flow = b"{version: 1, messages: [{id: u, role: user, content: hi, created_at: " + (
        at(0).encode() + b"}]}"
    )
    assert load_thread_bytes(flow).messages[0].content == "hi"
    # A `.json` file is JSON only: the same text fails, naming the place.
    (tmp_path / "t.json").write_bytes(flow)
    with pytest.raises(ThreadFileError, match=r"t\.json, line 1, column 2: not valid JSON"):
        load_thread(tmp_path / "t.json")


def test_a_byte_order_mark_is_skipped() -> None:
    doc = json.dumps(_doc("hi")).encode()
    assert load_thread_bytes(b"\xef\xbb\xbf" + doc).messages[0].content == "hi"
    assert load_thread_bytes(b"\xef\xbb\xbfversion: 1\n", format="yaml") == Thread()


def test_standard_input_is_read_through_the_dash(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    doc = json.dumps(_doc(f"from a pipe {EMOJI}")).encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(doc)))
    assert load_thread("-").messages[0].content == f"from a pipe {EMOJI}"


def test_relative_pointers_of_bytes_resolve_against_the_base(tmp_path: Path) -> None:
    doc = _doc()
    doc["messages"] = [
        {
            "id": "u",
            "role": "user",
            "created_at": at(0),
            "attachments": [
                {"id": "a", "kind": "image", "mime_type": "image/png", "path": "p.png"}
            ],
        }
    ]
    data = json.dumps(doc).encode()
    loaded = load_thread_bytes(data, base=tmp_path)
    assert loaded.messages[0].attachments[0].path == str(tmp_path.resolve() / "p.png")


json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=INT_MIN, max_value=INT_MAX)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
instants = st.datetimes(
    min_value=datetime(1970, 1, 1), max_value=datetime(2026, 1, 1), timezones=st.just(UTC)
)


@st.composite
def thread_files(draw: st.DrawFn) -> dict[str, Any]:
    """Valid thread-file mappings: any text, any JSON in tool arguments and schemas."""
    messages = [
        {
            "id": f"m{i}",
            "role": draw(st.sampled_from(["user", "assistant"])),
            "content": draw(st.text(min_size=1)),
            "created_at": draw(instants).isoformat(),
            "seq": draw(st.integers(min_value=INT_MIN, max_value=INT_MAX)),
        }
        for i in range(draw(st.integers(min_value=1, max_value=4)))
    ]
    calls = [
        {
            "id": f"call_{i}|fc_{i}",
            "tool": "lookup",
            "args": draw(st.dictionaries(st.text(), json_values, max_size=4)),
            "result": {"text": draw(st.text())},
            "created_at": draw(instants).isoformat(),
        }
        for i in range(draw(st.integers(min_value=0, max_value=2)))
    ]
    return {
        "version": 1,
        "model": "gpt-5",
        "system_prompt": draw(st.text()),
        "tools": [
            {
                "name": "lookup",
                "description": draw(st.text()),
                "parameters": {"type": "object", "x-extra": draw(json_values)},
            }
        ],
        "messages": messages,
        "tool_calls": calls,
    }


@pytest.fixture(scope="module")
def shared_container() -> turnwire.Container:
    return make_container()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    doc=thread_files(),
    ensure_ascii=st.booleans(),
    indent=st.sampled_from([None, 2]),
)
def test_any_json_dump_of_a_thread_loads_and_renders_like_its_utf8_form(
    doc: dict[str, Any],
    ensure_ascii: bool,
    indent: int | None,
    shared_container: turnwire.Container,
) -> None:
    written = json.dumps(doc, ensure_ascii=ensure_ascii, indent=indent).encode()
    utf8 = json.dumps(doc, ensure_ascii=False).encode()
    loaded = load_thread_bytes(written, name="t.json", format="json")
    assert loaded == load_thread_bytes(utf8, name="t.json", format="json")
    assert loaded == load_thread(doc)  # the parsed-mapping path agrees
    assert load_thread_bytes(written) == loaded  # sniffed as JSON
    for message, original in zip(loaded.messages, doc["messages"], strict=True):
        assert message.content == original["content"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TURNWIRE_ENVELOPE_SECRET", "property-secret")
        bodies = {
            turnwire.api.render(
                load_thread_bytes(data, format="json"), container=shared_container
            ).body
            for data in (written, utf8)
        }
    assert len(bodies) == 1


# --- limits -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", [FAST, PURE], ids=["libyaml", "pure-python"])
def test_a_yaml_alias_bomb_fails_without_being_expanded(kind: DocumentKind) -> None:
    assert len(BILLION_LAUGHS) < 614
    with pytest.raises(ThreadFileError) as caught:
        kind.parse(BILLION_LAUGHS, name="bomb.yaml")
    assert str(caught.value) == (
        "thread file bomb.yaml, line 5, column 4: YAML aliases expand to more than 100000 "
        "nodes (an alias bomb?); write the values out instead"
    )


def test_a_few_aliases_are_fine_and_the_count_is_a_limit() -> None:
    text = b"base: &b {type: object}\none: *b\ntwo: *b\n"
    assert FAST.parse(text, name="x") == {"base": {"type": "object"}} | {
        "one": {"type": "object"},
        "two": {"type": "object"},
    }
    # Each alias of the three-node mapping adds three nodes.
    enough = DocumentKind("thread file", ThreadFileError, limits=Limits(max_alias_nodes=6))
    assert enough.parse(text, name="x")["two"] == {"type": "object"}
    tight = DocumentKind("thread file", ThreadFileError, limits=Limits(max_alias_nodes=5))
    with pytest.raises(ThreadFileError, match=r"x, line 1, column 7: YAML aliases expand to more"):
        tight.parse(text, name="x")


@pytest.mark.parametrize("kind", [FAST, PURE], ids=["libyaml", "pure-python"])
def test_a_recursive_yaml_alias_is_refused(kind: DocumentKind) -> None:
    with pytest.raises(ThreadFileError) as caught:
        kind.parse(b"version: 1\nloop: &x [a, *x]\n", name="x.yaml")
    assert str(caught.value) == (
        "thread file x.yaml, line 2, column 7: a YAML alias refers to a node that contains it; "
        "write the value out"
    )


@pytest.mark.parametrize("levels", [65, 300, 100_000])
def test_json_nested_deeper_than_the_limit_fails_naming_the_line_and_column(levels: int) -> None:
    deep = b'{"version": 1,\n "x": ' + b"[" * levels + b"]" * levels + b"}"
    _fails(deep, "line 2, column 70: nested deeper than 64 levels")
    # Under a field the model types as Any, too (decoded straight into the Thread).
    call = json.dumps(_doc(tool_calls=[_call({"a": 1})])).encode()
    deep_args = call.replace(b'{"a": 1}', b'{"a": ' + b"[" * levels + b"]" * levels + b"}")
    message = _fails(deep_args, "nested deeper than 64 levels", format="json")
    column = deep_args.index(b"[" * (64 - 4)) + 64 - 4 + 1
    assert f"line 1, column {column}:" in message


def test_json_at_the_depth_limit_loads() -> None:
    levels = 64 - 4  # $, tool_calls, the call, args
    args: Any = 1
    for _ in range(levels):
        args = [args]
    loaded = load_thread_bytes(json.dumps(_doc(tool_calls=[_call({"a": args})])).encode())
    assert loaded.tool_calls[0].args["a"] == args
    with pytest.raises(ThreadFileError, match="nested deeper than 64 levels"):
        load_thread_bytes(json.dumps(_doc(tool_calls=[_call({"a": [args]})])).encode())


@pytest.mark.parametrize("kind", [FAST, PURE], ids=["libyaml", "pure-python"])
@pytest.mark.parametrize("levels", [65, 400, 5_000])
def test_yaml_nested_deeper_than_the_limit_fails(kind: DocumentKind, levels: int) -> None:
    flow = b"version: 1\nx: " + b"[" * levels + b"]" * levels
    with pytest.raises(ThreadFileError) as caught:
        kind.parse(flow, name="d.yaml")
    message = str(caught.value)
    assert message.startswith("thread file d.yaml, line 2, column "), message
    assert "nested deeper than 64 levels" in message or "maximum nesting depth" in message
    block = b"".join(b" " * i + b"k:\n" for i in range(min(levels, 800)))
    with pytest.raises(ThreadFileError, match=r"line 65, column 65: nested deeper than 64"):
        kind.parse(block, name="d.yaml")


@pytest.mark.parametrize("kind", [FAST, PURE], ids=["libyaml", "pure-python"])
@pytest.mark.parametrize("anchor", ["", "&top "], ids=["no anchor", "with an anchor"])
def test_yaml_at_the_depth_limit_loads_and_one_more_fails(kind: DocumentKind, anchor: str) -> None:
    # The top mapping is level 1; x's value opens 63 more sequences, the last holding a scalar.
    at_limit = f"x: {anchor}" + "[" * 63 + "1" + "]" * 63
    value = kind.parse(at_limit.encode(), name="d.yaml")
    for _ in range(63):
        value = value[0] if isinstance(value, list) else value["x"]
    assert value == [1]
    over = f"x: {anchor}" + "[" * 64 + "1" + "]" * 64
    column = len("x: ") + len(anchor) + 64  # the 64th `[`, level 65
    with pytest.raises(ThreadFileError, match=f"line 1, column {column}: nested deeper than 64"):
        kind.parse(over.encode(), name="d.yaml")


@pytest.mark.parametrize("kind", [FAST, PURE], ids=["libyaml", "pure-python"])
def test_an_alias_cannot_carry_nesting_past_the_limit(kind: DocumentKind) -> None:
    deep = "[" * 40 + "1" + "]" * 40
    text = f"a: &d {deep}\nb: {'[' * 30}*d{']' * 30}\n"
    # Reached through b's 30 sequences, the anchored value's 34th level is the 65th: the
    # node graph keeps no alias positions, so the place named is in the anchored value.
    with pytest.raises(ThreadFileError, match=r"line 1, column 40: nested deeper than 64 levels"):
        kind.parse(text.encode(), name="d.yaml")
    # The alias is walked first here, so the deep anchored value is the repeat visit.
    text = f"a: {'[' * 30}&d {deep}{']' * 30}\nb: *d\n"
    with pytest.raises(ThreadFileError, match=r"line 1, column 34: nested deeper than 64 levels"):
        kind.parse(text.encode(), name="d.yaml")
    fine = f"a: &d {deep}\nb: {'[' * 20}*d{']' * 20}\n"
    assert kind.parse(fine.encode(), name="d.yaml")["a"] == kind.parse(deep.encode(), name="d")


@pytest.mark.parametrize(
    ("doc", "path"),
    [
        (_doc(tool_calls=[_call({"n": 2**64})]), "$.tool_calls[0].args.n"),
        (_doc(tool_calls=[_call({"n": [1, -(2**63) - 1]})]), "$.tool_calls[0].args.n[1]"),
        (_doc(tool_calls=[_call({}, seq=2**70)]), "$.tool_calls[0].seq"),
        (
            _doc(tools=[{"name": "t", "parameters": {"maximum": 10**30}}]),
            "$.tools[0].parameters.maximum",
        ),
        ({**_doc("hi"), "x": {"y": 2**65}}, "$.x.y"),
    ],
)
def test_an_integer_beyond_64_bits_fails_naming_its_path(doc: dict[str, Any], path: str) -> None:
    _fails(
        json.dumps(doc).encode(), f"{path}: an integer of", "outside the 64-bit range", path=path
    )


def test_the_64_bit_bounds_themselves_load() -> None:
    doc = _doc(tool_calls=[_call({"lo": INT_MIN, "hi": INT_MAX}, seq=INT_MIN)])
    loaded = load_thread_bytes(json.dumps(doc).encode())
    assert loaded.tool_calls[0].args == {"lo": INT_MIN, "hi": INT_MAX}


def test_a_million_digit_integer_fails_at_once() -> None:
    digits = b"9" * 1_000_000
    as_json = (
        json.dumps(_doc(tool_calls=[_call({"n": 0})]))
        .encode()
        .replace(b'"n": 0', b'"n": ' + digits)
    )
    _fails(
        as_json,
        "$.tool_calls[0].args[...]: an integer outside the 64-bit range",
        path="$.tool_calls[0].args[...]",
    )
    _fails(b"version: 1\nn: " + digits, "line 2, column 4: an integer of 1000000 characters")


@pytest.mark.parametrize("kind", [FAST, PURE], ids=["libyaml", "pure-python"])
def test_a_yaml_integer_beyond_64_bits_fails_naming_the_place(kind: DocumentKind) -> None:
    with pytest.raises(ThreadFileError) as caught:
        kind.parse(b"a:\n  b: 0x1_0000_0000_0000_0000\n", name="i.yaml")
    assert str(caught.value) == (
        "thread file i.yaml, line 2, column 6: an integer of 65 bits is outside the 64-bit range"
    )
    assert kind.parse(b"a: 18_446_744_073_709_551_615", name="i.yaml") == {"a": INT_MAX}


@pytest.mark.parametrize("format", ["json", "yaml", None])
def test_a_nul_byte_fails_naming_the_place(format: str | None) -> None:
    _fails(b'{"version": 1,\n "model": "gp\x00t"}', "line 2, column 14: a NUL byte", format=format)


@pytest.mark.parametrize("format", ["json", "yaml", None])
def test_bytes_that_are_not_utf8_fail_naming_the_place(format: str | None) -> None:
    latin1 = '{"version": 1,\n "model": "caf\u00e9"}'.encode("latin-1")
    _fails(latin1, "line 2, column 15: byte 0xe9 is not UTF-8", format=format)
    # An encoded surrogate is not UTF-8 either.
    _fails(b'{"model": "\xed\xa0\xbd"}', "line 1, column 12: byte 0xed is not UTF-8", format=format)


@pytest.mark.parametrize(
    ("text", "column", "lone"),
    [
        ("\\ud83d", 26, "\\ud83d"),
        ("\\ud83d and more", 26, "\\ud83d"),
        ("\\ude00", 26, "\\ude00"),
        # A whole pair first: only the half after it is named.
        ("ok \\ud83d\\ude00 then \\uDE00", 47, "\\uDE00"),
        ("\\ud83d\\ud83d\\ude00", 26, "\\ud83d"),
    ],
)
def test_a_lone_surrogate_escape_in_json_fails(text: str, column: int, lone: str) -> None:
    data = b'{"version": 1, "model": "' + text.encode() + b'"}'
    _fails(
        data,
        f"line 1, column {column}: not valid JSON: {lone} is a lone surrogate; write the "
        "character itself or a whole surrogate pair",
        format="json",
    )


def test_an_escaped_backslash_before_u_is_not_a_surrogate() -> None:
    data = json.dumps(_doc("\\ud83d is how JSON escapes half an emoji")).encode()
    assert b"\\\\ud83d" in data
    assert load_thread_bytes(data).messages[0].content.startswith("\\ud83d is")


@pytest.mark.parametrize("kind", [FAST, PURE], ids=["libyaml", "pure-python"])
@pytest.mark.parametrize("escape", ["\\ud83d", "\\U0000DE00", "\\ud83d\\ude00"])
def test_a_lone_surrogate_in_yaml_fails(kind: DocumentKind, escape: str) -> None:
    # YAML escapes name code points; a surrogate is none, even as half of a pair.
    with pytest.raises(ThreadFileError) as caught:
        kind.parse(b'version: 1\nmodel: "' + escape.encode() + b'"\n', name="s.yaml")
    message = str(caught.value)
    assert message.startswith("thread file s.yaml, line 2, column "), message
    assert "neither valid YAML nor JSON" in message


@pytest.mark.parametrize(
    ("data", "format", "expected"),
    [
        (
            b'{"version": 1,\n  "model": }',
            "json",
            "thread file t.in, line 2, column 12: not valid JSON: invalid character",
        ),
        (
            b'{"version": 1,\n  "model": "gpt',
            "json",
            "thread file t.in, line 2, column 16: not valid JSON: the JSON text ends too early "
            "(an unclosed string, array or object)",
        ),
        (b"  ", "json", "thread file t.in, line 1, column 3: not valid JSON: the file is empty"),
        (
            b"version: 1\nmessages: [\n",
            None,
            "thread file t.in, line 3, column 1: neither valid YAML nor JSON: did not find "
            "expected node content (while parsing a flow node)",
        ),
        (
            b"a: &x 1\nb: &x 2\n",
            "yaml",
            "thread file t.in, line 2, column 4: neither valid YAML nor JSON: second occurrence "
            "(found duplicate anchor; first occurrence at line 1, column 4)",
        ),
        (
            b"version: 1\nmodel: \x07\n",
            "yaml",
            "thread file t.in, line 2, column 8: neither valid YAML nor JSON: character #x0007 "
            "is not allowed",
        ),
        (
            "model: \u00e9\u00e9 \x07\n".encode(),
            "yaml",
            "thread file t.in, line 1, column 11: neither valid YAML nor JSON: character #x0007 "
            "is not allowed",
        ),
    ],
)
def test_syntax_errors_are_one_line_with_line_and_column(
    data: bytes, format: str | None, expected: str
) -> None:
    assert _fails(data, format=format) == expected


@pytest.mark.parametrize("kind", [FAST, PURE], ids=["libyaml", "pure-python"])
def test_a_control_character_after_wide_ones_is_placed_by_character(kind: DocumentKind) -> None:
    with pytest.raises(ThreadFileError) as caught:
        kind.parse("a: 1\nb: \u00e9\u20ac\U0001f600 \x01\n".encode(), name="c.yaml")
    assert str(caught.value).startswith("thread file c.yaml, line 2, column 8: ")


def test_a_float_beyond_the_float_range_fails_naming_its_path() -> None:
    data = b'{"version": 1, "x": {"y": 1e999}}'
    _fails(data, "$[...][...]: a number beyond the range of a float", path="$[...][...]")


def test_a_schema_error_in_a_json_file_starts_with_its_path(tmp_path: Path) -> None:
    doc = _doc("hi")
    doc["messages"][0]["role"] = "system"
    (tmp_path / "t.json").write_text(json.dumps(doc))
    with pytest.raises(ThreadFileError) as caught:
        load_thread(tmp_path / "t.json")
    assert str(caught.value) == "$.messages[0].role: Invalid enum value 'system'"
    assert caught.value.path == "$.messages[0].role"
    (tmp_path / "t.json").write_text(json.dumps({"version": 2}))
    with pytest.raises(ThreadFileError, match=r"^\$\.version: this turnwire reads"):
        load_thread(tmp_path / "t.json")
    (tmp_path / "t.json").write_text("[]")
    with pytest.raises(ThreadFileError, match="must hold a mapping"):
        load_thread(tmp_path / "t.json")


# --- files ------------------------------------------------------------------------------------


def test_a_file_over_the_size_limit_fails_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    with big.open("wb") as file:
        file.truncate(MAX_BYTES + 1)  # sparse: nothing is written, and nothing must be read
    with pytest.raises(ThreadFileError) as caught:
        load_thread(big)
    assert str(caught.value) == (
        f"thread file {big} is larger than 64 MiB, the most turnwire reads; split it"
    )
    with big.open("wb") as file:
        file.truncate(MAX_BYTES)
    with pytest.raises(ThreadFileError, match=r"line 1, column 1: a NUL byte"):
        load_thread(big)


def test_read_regular_file_reads_at_most_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 10)
    assert read_regular_file(path, 10, ConfigError) == b"x" * 10
    with pytest.raises(ConfigError, match="larger than 9 bytes"):
        read_regular_file(path, 9, ConfigError)
    assert load_thread_bytes(b"version: 1\n") == Thread()
    tight = DocumentKind("thread file", ThreadFileError, limits=Limits(max_bytes=5))
    with pytest.raises(ThreadFileError, match=r"thread file s is larger than 5 bytes"):
        tight.parse(b"version: 1\n", name="s")


@pytest.mark.parametrize(
    ("special", "kind"),
    [
        ("/dev/zero", "a character device"),
        ("/dev/null", "a character device"),
        ("dir", "a directory"),
    ],
)
def test_devices_and_directories_are_refused(tmp_path: Path, special: str, kind: str) -> None:
    target = tmp_path if special == "dir" else Path(special)
    if not target.exists():
        pytest.skip(f"{special} does not exist here")
    with pytest.raises(ThreadFileError) as caught:
        load_thread(target)
    assert str(caught.value) == (
        f"cannot read thread file {target}: it is {kind}; give a regular file"
    )
    with pytest.raises(ConfigError) as config_error:
        load_settings([target])
    assert str(config_error.value) == (
        f"cannot read configuration file {target}: it is {kind}; give a regular file"
    )


def test_configuration_files_get_the_same_limits(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.yaml"
    bomb.write_bytes(BILLION_LAUGHS)
    with pytest.raises(ConfigError, match=r"bomb\.yaml, line 5, column 4: YAML aliases expand"):
        load_settings([bomb])
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"request:\n  max_output_tokens: 1" + b"0" * 40 + b"\n")
    with pytest.raises(ConfigError, match=r"line 2, column 22: an integer of 133 bits is outside"):
        load_settings([bad])
    bad.write_bytes(b'request: {model: "\xff"}\n')
    with pytest.raises(ConfigError, match=r"line 1, column 19: byte 0xff is not UTF-8"):
        load_settings([bad])
    profile = tmp_path / "p.json"
    profile.write_text(json.dumps({"request": {"model": f"m-{EMOJI}"}}))
    assert load_settings([profile]).request.model == f"m-{EMOJI}"
    profile.write_text('{"request": {"model": "\\ud83d"}}')
    with pytest.raises(ConfigError, match=r"p\.json, line 1, column 24: not valid JSON"):
        load_settings([profile])


def test_the_unbounded_fields_list_matches_the_model() -> None:
    """Every Thread field whose type does not bound it is checked after typed decoding."""
    from msgspec import inspect

    found: set[str] = set()

    def visit(info: Any, path: str, seen: frozenset[type]) -> None:
        if isinstance(info, inspect.StructType):
            if info.cls in seen:
                return
            for f in info.fields:
                visit(f.type, f"{path}.{f.encode_name}".lstrip("."), seen | {info.cls})
        elif isinstance(info, inspect.VarTupleType | inspect.ListType):
            visit(info.item_type, f"{path}[]", seen)
        elif isinstance(info, inspect.UnionType):
            for member in info.types:
                visit(member, path, seen)
        elif isinstance(info, inspect.DictType):
            if isinstance(info.value_type, inspect.AnyType):
                found.add(path)
            else:
                visit(info.value_type, f"{path}{{}}", seen)
        elif isinstance(info, inspect.AnyType):
            found.add(path)
        elif isinstance(info, inspect.IntType):
            lower = info.ge if info.ge is not None else info.gt
            upper = info.le if info.le is not None else info.lt
            if lower is None or upper is None or lower < INT_MIN or upper > INT_MAX:
                found.add(path)

    visit(inspect.type_info(Thread), "", frozenset())
    assert found == set(UNBOUNDED_FIELDS)


# --- the command ------------------------------------------------------------------------------


def _bad_files(tmp_path: Path) -> dict[str, tuple[list[str], str]]:
    """name -> (render arguments, the expected start of the one error line)."""
    (tmp_path / "bomb.yaml").write_bytes(BILLION_LAUGHS)
    (tmp_path / "nul.json").write_bytes(b'{"version": 1, "model": "\x00"}')
    (tmp_path / "latin1.yaml").write_bytes("model: caf\u00e9\n".encode("latin-1"))
    (tmp_path / "lone.json").write_bytes(b'{"version": 1, "model": "\\ud83d"}')
    (tmp_path / "deep.json").write_bytes(b'{"x": ' + b"[" * 50_000 + b"]" * 50_000 + b"}")
    (tmp_path / "int.json").write_bytes(
        json.dumps(_doc("hi", tool_calls=[_call({"n": 0})]))
        .encode()
        .replace(b'"n": 0', b'"n": ' + b"7" * 100_000)
    )
    os.mkfifo(tmp_path / "fifo.yaml")
    thread = str(REPO_EXAMPLES / "weather.yaml")
    prefix = "error: E_THREAD_FILE_INVALID: "
    config = "error: E_INVALID_OPENAI_RESPONSES_OPTIONS: "
    return {
        "alias bomb": ([str(tmp_path / "bomb.yaml")], prefix + "thread file"),
        "NUL": ([str(tmp_path / "nul.json")], prefix + "thread file"),
        "not UTF-8": ([str(tmp_path / "latin1.yaml")], prefix + "thread file"),
        "lone surrogate": ([str(tmp_path / "lone.json")], prefix + "thread file"),
        "deep": ([str(tmp_path / "deep.json")], prefix + "thread file"),
        "huge int": ([str(tmp_path / "int.json")], prefix + "thread file"),
        "FIFO": ([str(tmp_path / "fifo.yaml")], prefix + "cannot read thread file"),
        "directory": ([str(tmp_path)], prefix + "cannot read thread file"),
        "/dev/zero": (["/dev/zero"], prefix + "cannot read thread file /dev/zero"),
        "--config /dev/zero": (
            [thread, "--config", "/dev/zero"],
            config + "cannot read configuration file /dev/zero",
        ),
        "--config FIFO": (
            [thread, "--config", str(tmp_path / "fifo.yaml")],
            config + "cannot read configuration file",
        ),
    }


CASES = [
    "alias bomb",
    "NUL",
    "not UTF-8",
    "lone surrogate",
    "deep",
    "huge int",
    "FIFO",
    "directory",
    "/dev/zero",
    "--config /dev/zero",
    "--config FIFO",
]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("case", CASES)
def test_render_of_a_bad_file_exits_2_with_one_error_line(tmp_path: Path, case: str) -> None:
    arguments, start = _bad_files(tmp_path)[case]
    done = turnwire_process("render", *arguments, "--model", "m")
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(start), lines[0]
    assert "Traceback" not in done.stderr


def test_render_of_an_ascii_escaped_emoji_thread_prints_the_utf8_body(tmp_path: Path) -> None:
    doc = _doc(f"weather {EMOJI}?")
    (tmp_path / "escaped.json").write_text(json.dumps(doc))
    (tmp_path / "utf8.json").write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    escaped = turnwire_process("render", str(tmp_path / "escaped.json"))
    assert escaped.returncode == 0, escaped.stderr
    utf8 = turnwire_process("render", str(tmp_path / "utf8.json"))
    assert escaped.stdout == utf8.stdout
    assert f"\nweather {EMOJI}?\n" in json.loads(escaped.stdout)["input"][0]["content"][0]["text"]


POINTER_PATHS = [
    "$.messages[0].attachments[0].path",
    "$.tool_calls[0].result.media[0].path",
    "$.tool_calls[1].result.artifact.path",
    "$.tool_calls[2].result.artifacts[0].path",
    "$.retrievables[0].artifact.path",
]


def _pointer_everywhere(pointers: list[str]) -> dict[str, Any]:
    """A thread with a file pointer in each of the five places, in POINTER_PATHS order."""

    def media(pointer: str) -> dict[str, Any]:
        return {"id": "a", "kind": "image", "mime_type": "image/png", "path": pointer}

    first, second, third, fourth, fifth = pointers
    return _doc(
        messages=[{"id": "u", "role": "user", "created_at": at(0), "attachments": [media(first)]}],
        tool_calls=[
            {**_call({}), "id": "c1", "result": {"media": [media(second)]}},
            {**_call({}), "id": "c2", "result": {"artifact": {"path": third}}},
            {**_call({}), "id": "c3", "result": {"artifacts": [{"path": fourth}]}},
        ],
        retrievables=[{"id": "r", "trust_tier": "first-party", "artifact": {"path": fifth}}],
    )


@pytest.mark.parametrize("place", range(len(POINTER_PATHS)))
@pytest.mark.parametrize("form", ["json", "yaml", "mapping"])
def test_a_nul_character_in_a_file_path_fails_naming_it(place: int, form: str) -> None:
    pointers = ["ok.png"] * len(POINTER_PATHS)
    pointers[place] = "a\x00b.png"
    doc = _pointer_everywhere(pointers)
    with pytest.raises(ThreadFileError) as caught:
        if form == "mapping":
            load_thread(doc)
        else:
            text = json.dumps(doc) if form == "json" else yaml.safe_dump(doc)
            load_thread_bytes(text.encode(), format=form)  # type: ignore[arg-type]
    path = POINTER_PATHS[place]
    assert str(caught.value) == f"{path}: a file path cannot contain a NUL character"
    assert caught.value.path == path


def test_every_file_pointer_is_rebased_and_listed(tmp_path: Path) -> None:
    """The NUL check visits every pointer that loading rebases."""
    from turnwire.files.thread_file import _pointers

    names = [f"f{i}.txt" for i in range(len(POINTER_PATHS))]
    loaded = load_thread_bytes(json.dumps(_pointer_everywhere(names)).encode(), base=tmp_path)
    assert list(_pointers(loaded)) == [
        (path, str(tmp_path.resolve() / name))
        for path, name in zip(POINTER_PATHS, names, strict=True)
    ]


def test_standard_input_is_read_within_the_size_limit() -> None:
    import io

    tight = DocumentKind("thread file", ThreadFileError, limits=Limits(max_bytes=10))
    assert tight.read_stream(io.BytesIO(b"version: 1")) == b"version: 1"
    with pytest.raises(ThreadFileError) as caught:
        tight.read_stream(io.BytesIO(b"version: 1\n"))
    assert str(caught.value) == (
        "thread file <stdin> is larger than 10 bytes, the most turnwire reads; split it"
    )


def test_render_dash_reads_an_ascii_escaped_thread_from_standard_input() -> None:
    import subprocess

    from ..conftest import SECRET

    doc = json.dumps(_doc(f"piped {EMOJI}")).encode()
    done = subprocess.run(
        [sys.executable, "-m", "turnwire", "render", "-"],
        input=doc,
        capture_output=True,
        env={**os.environ, "TURNWIRE_ENVELOPE_SECRET": SECRET},
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert f"\npiped {EMOJI}\n" in body["input"][0]["content"][0]["text"]


def test_an_environment_value_is_typed_within_the_same_limits(tmp_path: Path) -> None:
    profile = tmp_path / "p.yaml"
    profile.write_text("request: {max_output_tokens: '${TOKENS}'}\n")
    assert load_settings([profile], env={"TOKENS": "64"}).request.max_output_tokens == 64
    # Past the limits the value stays the string it was, and validation names the key.
    for value in ("1" * 5000, BILLION_LAUGHS.decode()):
        with pytest.raises(ConfigError) as caught:
            load_settings([profile], env={"TOKENS": value})
        assert str(caught.value).startswith(
            "$.request.max_output_tokens: Expected `int | null`, got `str`"
        ), str(caught.value)
