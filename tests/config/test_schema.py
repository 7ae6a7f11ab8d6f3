"""The published JSON Schemas agree with the loaders: what one accepts, the other accepts."""

from __future__ import annotations

import base64
import datetime
import json
from pathlib import Path
from typing import Annotated, Any

import msgspec
import pytest
import yaml
from jsonschema import Draft202012Validator

from turnwire import ConfigError, ThreadFileError, dump_thread, load_settings, load_thread
from turnwire.config.schema import DIALECT, FIELD_DOCS, config_schema, thread_schema
from turnwire.config.settings import Settings
from turnwire.model.records import Thread

from ..conftest import REPO, turnwire_process

THREAD_FILES = sorted(
    [*REPO.glob("examples/*.yaml"), *REPO.glob("tests/golden/*.yaml")],
    key=str,
)
THREAD_FILES = [path for path in THREAD_FILES if not path.name.endswith(".config.yaml")]
CONFIG_FILES = sorted([*REPO.glob("config/*.yaml"), *REPO.glob("tests/golden/*.config.yaml")])

T0 = "2026-01-01T10:00:00Z"


def _as_json(value: Any) -> Any:
    """A YAML document as the JSON it stands for (unquoted timestamps become strings)."""
    if isinstance(value, dict):
        return {key: _as_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_as_json(item) for item in value]
    if isinstance(value, datetime.datetime | datetime.date):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return value


@pytest.fixture(scope="module")
def thread_validator() -> Draft202012Validator:
    schema = thread_schema()
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


@pytest.fixture(scope="module")
def config_validator() -> Draft202012Validator:
    schema = config_schema()
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _errors(validator: Draft202012Validator, document: Any) -> list[str]:
    return [f"{error.json_path}: {error.message}" for error in validator.iter_errors(document)]


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [node["$ref"]] if "$ref" in node else []
        return own + [ref for value in node.values() for ref in _refs(value)]
    if isinstance(node, list):
        return [ref for value in node for ref in _refs(value)]
    return []


@pytest.mark.parametrize("make", [thread_schema, config_schema])
def test_both_schemas_are_draft_2020_12_with_resolvable_defs(make):
    schema = make()
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == DIALECT
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    refs = _refs(schema)
    assert refs, "the records are shared through $defs"
    for ref in refs:
        assert ref.startswith("#/$defs/"), ref
        assert ref.removeprefix("#/$defs/") in schema["$defs"], ref
    # A fresh copy each call, shared with nothing: a caller editing one cannot change the next.
    pristine = json.dumps(schema)

    def vandalise(node: Any) -> None:
        if isinstance(node, dict):
            for value in node.values():
                vandalise(value)
            node.clear()
        elif isinstance(node, list):
            for value in node:
                vandalise(value)
            node.clear()

    vandalise(schema)
    assert json.dumps(make()) == pristine


def test_the_root_is_the_thread_with_version_1_and_its_docstring():
    schema = thread_schema()
    assert schema["title"] == "Thread"
    assert schema["properties"]["version"]["const"] == 1
    assert schema["required"] == []
    assert schema["$defs"]["Media"]["description"].startswith("An attachment")
    # Docstring markup is Markdown in the schema.
    assert "``" not in json.dumps(schema)
    assert schema["$defs"]["ReasoningPayload"]["properties"]["variant"] == {
        "const": "responses-reasoning",
        "description": FIELD_DOCS["ReasoningPayload"]["variant"],
    }


def test_every_field_of_every_struct_is_described():
    for make in (thread_schema, config_schema):
        schema = make()
        for name, definition in [(schema["title"], schema), *schema["$defs"].items()]:
            for field, value in definition.get("properties", {}).items():
                assert value.get("description"), (
                    f"{name}.{field} has no description: add one to "
                    f"turnwire.config.schema.FIELD_DOCS[{name!r}][{field!r}], or document it in "
                    "the Struct (msgspec.Meta(description=...) or an :ivar: line)"
                )


class _Documented(msgspec.Struct, kw_only=True):
    """A record documented in the code.

    :ivar plain: from the ``:ivar:`` line,
        continued on the next.
    :ivar both: the ivar loses to the annotation.
    """

    plain: int = 0
    both: Annotated[int, msgspec.Meta(description="from ``Meta``")] = 0
    neither: int = 0


def test_fields_can_be_described_in_the_struct_itself():
    """Meta(description=...) or an :ivar: line documents a field FIELD_DOCS does not name."""
    from turnwire.config.schema import _build

    schema = _build(_Documented, "test")
    assert schema["description"] == "A record documented in the code."
    fields = schema["properties"]
    assert fields["plain"]["description"] == "from the `:ivar:` line, continued on the next."
    assert fields["both"]["description"] == "from `Meta`"
    assert "description" not in fields["neither"]


def test_field_docs_name_only_fields_that_exist():
    structs: dict[str, set[str]] = {}
    for root in (Thread, Settings):
        _, components = msgspec.json.schema_components((root,))
        for name, definition in components.items():
            structs[name] = set(definition.get("properties", {}))
    for name, docs in FIELD_DOCS.items():
        assert name in structs, f"FIELD_DOCS names a Struct that is not in a schema: {name}"
        assert set(docs) <= structs[name], f"{name}: {set(docs) - structs[name]}"


@pytest.mark.parametrize("path", THREAD_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_example_and_golden_thread_validates(path, thread_validator):
    assert len(THREAD_FILES) >= 4
    document = _as_json(yaml.safe_load(path.read_text()))
    assert _errors(thread_validator, document) == []
    load_thread(path)


@pytest.mark.parametrize("path", CONFIG_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_shipped_configuration_validates(path, config_validator):
    assert len(CONFIG_FILES) >= 6
    document = _as_json(yaml.safe_load(path.read_text()))
    assert _errors(config_validator, document) == []
    load_settings([path], env={})


def _message(**fields: Any) -> dict[str, Any]:
    return {"id": "u1", "role": "user", "content": "hi", "created_at": T0, **fields}


def _image(**fields: Any) -> dict[str, Any]:
    return {"id": "a1", "kind": "image", "mime_type": "image/png", **fields}


def _payload(**fields: Any) -> dict[str, Any]:
    item = {"type": "reasoning", "summary": [], "encrypted_content": "gAAA"}
    return {"variant": "responses-reasoning", "item": item, **fields}


def _thought(payload: dict[str, Any]) -> dict[str, Any]:
    tag = "openai-responses-reasoning-v1"
    return {"id": "t1", "replay_compatibility": tag, "payload": payload, "created_at": T0}


def _call(result: dict[str, Any]) -> dict[str, Any]:
    return {"id": "call_1", "tool": "t", "result": result, "created_at": T0}


VALID_THREADS = {
    "empty": {},
    "version only": {"version": 1},
    "attachments without content": {
        "messages": [_message(content=None, attachments=[_image(path="a.png")])]
    },
    "inline bytes and a stash": {
        "messages": [
            _message(
                attachments=[
                    _image(
                        kind="audio",
                        mime_type="audio/ogg",
                        data_base64="T2dnUw==",
                        modality_hazard="opaque-perceptual",
                        stash=[
                            {"key": "text:transcript", "value": "hi", "trust_tier": "first-party"}
                        ],
                    )
                ]
            )
        ]
    },
    "a payload with its tag and no content": {
        "thoughts": [
            {
                "id": "t1",
                "replay_compatibility": "openai-responses-reasoning-v1",
                "payload": _payload(paired_item_id="msg_1"),
                "created_at": T0,
            }
        ]
    },
    "an offset without a colon": {"messages": [_message(created_at="2026-01-01T10:00:00+0100")]},
    # msgspec needs no tag where only one Struct can stand, so neither does the schema.
    "a payload and an item without their tags": {
        "thoughts": [_thought({"item": {"summary": [{"text": "checked"}]}})]
    },
    "a tool result as artifacts": {"tool_calls": [_call({"artifacts": [{"text": "x"}]})]},
}

INVALID_THREADS = {
    "version 2": {"version": 2},
    "a system role": {"messages": [_message(role="system")]},
    "an unknown field": {"messages": [_message(colour="red")]},
    "no time zone": {"messages": [_message(created_at="2026-01-01T10:00:00")]},
    "no created_at": {"messages": [{"id": "u1", "role": "user", "content": "hi"}]},
    "neither content nor attachments": {"messages": [_message(content="")]},
    "both path and data_base64": {
        "messages": [_message(attachments=[_image(path="a.png", data_base64="AA==")])]
    },
    "neither path nor data_base64": {"messages": [_message(attachments=[_image()])]},
    "an unknown media kind": {"messages": [_message(attachments=[_image(kind="hologram")])]},
    "a bad trust tier": {
        "retrievables": [{"id": "r", "content": "x", "trust_tier": "kinda-trusted"}]
    },
    "a retrievable with content and artifact": {
        "retrievables": [
            {"id": "r", "content": "x", "artifact": {"text": "y"}, "trust_tier": "first-party"}
        ]
    },
    "a payload without replay_compatibility": {
        "thoughts": [{"id": "t1", "payload": _payload(), "created_at": T0}]
    },
    "a payload with another variant": {"thoughts": [_thought(_payload(variant="text"))]},
    "an item of another type": {
        "thoughts": [_thought(_payload(item={"type": "message", "summary": []}))]
    },
    "a thought with nothing in it": {"thoughts": [{"id": "t1", "created_at": T0}]},
    "two result silos": {"tool_calls": [_call({"text": "a", "artifact": {"text": "b"}})]},
    "an empty artifacts list": {"tool_calls": [_call({"artifacts": []})]},
    "an empty media list": {"tool_calls": [_call({"media": []})]},
    "an artifact with text and path": {
        "tool_calls": [_call({"artifact": {"text": "a", "path": "b"}})]
    },
    "a score above 1": {
        "retrievables": [{"id": "r", "content": "x", "trust_tier": "first-party", "score": 2}]
    },
    "an empty tool name": {"tools": [{"name": ""}]},
    "tools as a mapping": {"tools": {"get_weather": {}}},
}


@pytest.mark.parametrize("document", VALID_THREADS.values(), ids=list(VALID_THREADS))
def test_what_the_loader_accepts_the_schema_accepts(document, thread_validator):
    load_thread(document)
    assert _errors(thread_validator, document) == []


@pytest.mark.parametrize("document", INVALID_THREADS.values(), ids=list(INVALID_THREADS))
def test_what_the_loader_rejects_the_schema_rejects(document, thread_validator):
    with pytest.raises(ThreadFileError):
        load_thread(document)
    assert _errors(thread_validator, document) != []


def test_a_saved_thread_validates(thread_validator):
    """What turnwire writes (dump_thread) is a valid file too, replay payloads included."""
    document = {
        **VALID_THREADS["a payload with its tag and no content"],
        **VALID_THREADS["inline bytes and a stash"],
        "tool_calls": [_call({"text": "21C"})],
    }
    written = json.loads(dump_thread(load_thread(document)))
    assert written["thoughts"][0]["payload"]["variant"] == "responses-reasoning"
    assert _errors(thread_validator, written) == []


VALID_CONFIGS = {
    "empty": {},
    "a placeholder for a number": {"client": {"request_timeout_s": "${TURNWIRE_TIMEOUT:30}"}},
    "a placeholder for an enum": {"render": {"reasoning_replay": "${REPLAY:encrypted}"}},
    "a placeholder in a list": {"render": {"replay_compatibility": ["${TAG:x}"]}},
    "a policy per kind": {"render": {"unsupported_media_policy": {"audio": "fallback-stash"}}},
    "a function tool choice": {"request": {"tool_choice": {"type": "function", "name": "f"}}},
    "plugin settings": {"plugins": {"settings": {"redact": {"phones": False}}}},
    "memories and documents in the timeline": {"render": {"context_placement": "timeline"}},
}

INVALID_CONFIGS = {
    "an unknown section": {"rendering": {}},
    "an unknown key": {"render": {"colour": "red"}},
    "a bad enum value": {"render": {"reasoning_replay": "sometimes"}},
    "a context placement that does not exist": {"render": {"context_placement": "trailing"}},
    "a bucket order without the timeline": {"render": {"bucket_order": ["memories"]}},
    "a bucket listed twice": {"render": {"bucket_order": ["timeline", "timeline"]}},
    "store": {"request": {"store": False}},
    "background responses": {"request": {"background": True}},
    "too few output tokens": {"request": {"max_output_tokens": 8}},
    "a negative retry count": {"client": {"retry": {"max_retries": -1}}},
    "a policy for images": {"render": {"unsupported_media_policy": {"image": "throw"}}},
    "a string where a number goes": {"client": {"request_timeout_s": "soon"}},
    "a broken placeholder": {"client": {"request_timeout_s": "${TIMEOUT"}},
}


def _load_config(tmp_path: Path, document: dict[str, Any]) -> Settings:
    path = tmp_path / "profile.yaml"
    path.write_text(yaml.safe_dump(document))
    return load_settings([path], env={})


@pytest.mark.parametrize("document", VALID_CONFIGS.values(), ids=list(VALID_CONFIGS))
def test_what_the_config_loader_accepts_the_schema_accepts(document, config_validator, tmp_path):
    _load_config(tmp_path, document)
    assert _errors(config_validator, document) == []


@pytest.mark.parametrize("document", INVALID_CONFIGS.values(), ids=list(INVALID_CONFIGS))
def test_what_the_config_loader_rejects_the_schema_rejects(document, config_validator, tmp_path):
    with pytest.raises(ConfigError):
        _load_config(tmp_path, document)
    assert _errors(config_validator, document) != []


def test_the_placeholder_expands_before_validation(tmp_path):
    settings = _load_config(tmp_path, VALID_CONFIGS["a placeholder for a number"])
    assert settings.client.request_timeout_s == 30


@pytest.mark.parametrize(("kind", "make"), [("thread", thread_schema), ("config", config_schema)])
def test_the_schema_command_prints_the_same_schema(kind, make):
    done = turnwire_process("schema", kind)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == make()


def test_the_schema_command_names_the_kinds():
    done = turnwire_process("schema", "request")
    assert done.returncode == 2
    assert "thread" in done.stderr and "config" in done.stderr
