"""Settings: the packaged defaults, profile merging, interpolation, and errors with $.path."""

from __future__ import annotations

import re
import types
import typing
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from turnwire import ConfigError, load_settings
from turnwire.config import settings as settings_module
from turnwire.config.options import Endpoint, RenderOptions
from turnwire.config.schema import FIELD_DOCS
from turnwire.config.settings import (
    ClientSettings,
    RenderSettings,
    Settings,
    default_config_path,
    replay_problems,
)
from turnwire.model.records import REPLAY_TAG

from ..conftest import REPO, make_container


def write(tmp_path: Path, text: str, name: str = "p.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_defaults_match_the_documented_contract():
    settings = load_settings()
    assert settings.render.bucket_order == (
        "standing_instructions",
        "memories",
        "retrievables",
        "timeline",
    )
    assert settings.render.system_prompt_channel == "instructions"
    assert settings.render.reasoning_replay == "off"
    assert settings.render.unsupported_media_policy == "throw"
    assert settings.render.tool_result_inline_max_bytes == 4096
    assert settings.request.model is None and settings.request.include == ()
    assert settings.client.base_url == "https://api.openai.com/v1"
    assert settings.client.retry.max_retries == 2
    assert settings.plugins.load_entrypoints is True
    assert default_config_path().read_text() == (REPO / "config" / "default.yaml").read_text()


def test_profiles_merge_recursively_in_order(tmp_path):
    first = write(
        tmp_path, "render: {reasoning_replay: encrypted}\nrequest: {model: a}\n", "a.yaml"
    )
    second = write(tmp_path, "request: {model: b, max_output_tokens: 64}\n", "b.yaml")
    settings = load_settings([first, second])
    assert settings.render.reasoning_replay == "encrypted"
    assert settings.render.self_identity == "assistant"
    assert (settings.request.model, settings.request.max_output_tokens) == ("b", 64)


def test_env_interpolation_with_defaults_and_types(tmp_path):
    path = write(
        tmp_path,
        "request: {model: '${MODEL:gpt-5}', max_output_tokens: '${MAX:32}'}\n"
        "client: {base_url: 'http://${HOST}/v1'}\n",
    )
    settings = load_settings([path], env={"HOST": "127.0.0.1:8080", "MAX": "128"})
    assert settings.request.model == "gpt-5"
    assert settings.request.max_output_tokens == 128
    assert settings.client.base_url == "http://127.0.0.1:8080/v1"


def test_a_missing_variable_without_default_names_its_path(tmp_path):
    path = write(tmp_path, "client: {base_url: '${NOPE}'}\n")
    with pytest.raises(ConfigError) as caught:
        load_settings([path], env={})
    assert caught.value.path == "$.client.base_url" and "NOPE" in str(caught.value)


@pytest.mark.parametrize(
    ("text", "path", "words"),
    [
        ("render: {colour: red}\n", "$.render", "unknown field `colour`"),
        (
            "render: {unsupported_media_policy: teleport}\n",
            "$.render.unsupported_media_policy",
            "teleport",
        ),
        (
            "render: {unsupported_media_policy: {audio: nope}}\n",
            "$.render.unsupported_media_policy[...]",
            "nope",
        ),
        ("render: {bucket_order: [memories]}\n", "$.render.bucket_order", "timeline"),
        ("render: {bucket_order: [timeline, timeline]}\n", "$.render.bucket_order", "twice"),
        ("request: {max_output_tokens: 8}\n", "$.request.max_output_tokens", ">= 16"),
        ("request: {store: false}\n", "$.request.store", "always sends `store: false`"),
        (
            "request: {previous_response_id: resp_1}\n",
            "$.request.previous_response_id",
            "server-side state",
        ),
        ("request: {instructions: hi}\n", "$.request.instructions", "system_prompt"),
        ("request: {background: true}\n", "$.request.background", "only false"),
        ("request: {temperature: 3}\n", "$.request.temperature", "<= 2"),
        ("context: {token_encoding: o200k_base}\n", "$.context.context_window", "required"),
        ("plugins: {allow: nope}\n", "$.plugins.allow", "array"),
    ],
)
def test_bad_profiles_fail_at_load_time_naming_the_path(tmp_path, text, path, words):
    with pytest.raises(ConfigError) as caught:
        load_settings([write(tmp_path, text)])
    assert caught.value.path == path
    assert str(caught.value).startswith(path)
    assert words in str(caught.value)
    assert caught.value.code == "E_INVALID_OPENAI_RESPONSES_OPTIONS"


def test_a_file_that_is_not_a_mapping_or_not_yaml(tmp_path):
    with pytest.raises(ConfigError, match="mapping"):
        load_settings([write(tmp_path, "- a\n- b\n")])
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_settings([write(tmp_path, "render: {a: [}\n")])
    with pytest.raises(ConfigError, match="cannot read"):
        load_settings([tmp_path / "missing.yaml"])


def test_per_kind_media_policy():
    settings = load_settings(
        overrides={
            "render": {
                "unsupported_media_policy": {
                    "audio": "fallback-stash",
                    "video": "synthetic-description",
                }
            }
        }
    )
    policy = settings.render.media_policy()
    assert policy.for_kind("audio") == "fallback-stash"
    assert policy.for_kind("video") == "synthetic-description"


@pytest.mark.parametrize("profile", sorted((REPO / "config").glob("*.yaml")), ids=lambda p: p.name)
def test_every_shipped_profile_validates(profile):
    settings = load_settings([profile], env={})
    assert "timeline" in settings.render.bucket_order


def test_profiles_differ_only_where_they_say():
    production = load_settings([REPO / "config" / "production.yaml"], env={})
    assert production.render.media_policy().for_kind("audio") == "fallback-stash"
    assert production.render.reasoning_replay == "encrypted"
    assert production.request.model == "gpt-5"
    assert production.render.bucket_order == load_settings().render.bucket_order


def test_the_request_timeout_defaults_to_the_sdks_600_seconds():
    # Kept on purpose (docs/design-differences.md): the reference's default is no limit.
    assert load_settings().client.request_timeout_s == 600.0


# ---------------------------------------------------------------- one source of defaults

_PLACEHOLDER = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*(:[^}]*)?\}")
SHIPPED = sorted((REPO / "config").glob("*.yaml"))


def _struct_in(annotation: Any) -> type[msgspec.Struct] | None:
    """The Struct a field's value is, when it is one (through ``| None`` and ``Annotated``)."""
    if isinstance(annotation, type) and issubclass(annotation, msgspec.Struct):
        return annotation
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _struct_in(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        found = [_struct_in(member) for member in typing.get_args(annotation)]
        return next((struct for struct in found if struct is not None), None)
    return None


def _unknown_keys(struct: type[msgspec.Struct], tree: dict[str, Any], at: str) -> list[str]:
    """The keys of ``tree`` that no field of ``struct`` (or of the Structs below it) has."""
    fields = {field.encode_name: field for field in msgspec.structs.fields(struct)}
    unknown = []
    for key, value in tree.items():
        if key not in fields:
            unknown.append(f"{at}.{key}")
            continue
        inner = _struct_in(fields[key].type)
        if inner is not None and isinstance(value, dict):
            unknown += _unknown_keys(inner, value, f"{at}.{key}")
    return unknown


def _leaves(tree: Any, at: str = "$") -> list[tuple[str, Any]]:
    if isinstance(tree, dict):
        return [leaf for key, value in tree.items() for leaf in _leaves(value, f"{at}.{key}")]
    return [(at, tree)]


def test_the_key_walk_finds_a_misspelled_key_at_any_depth():
    tree = {"client": {"retry": {"max_retires": 3}}, "render": {"colour": "red"}}
    assert _unknown_keys(Settings, tree, "$") == ["$.client.retry.max_retires", "$.render.colour"]
    assert _unknown_keys(Settings, {"client": {"headers": {"X-Team": "a"}}}, "$") == []


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_key_a_shipped_file_sets_is_a_setting(path):
    assert {p.name for p in SHIPPED} >= {"default.yaml", "production.yaml", "examples.yaml"}
    assert _unknown_keys(Settings, yaml.safe_load(path.read_text()), "$") == []


def test_the_packaged_default_sets_only_what_a_struct_cannot():
    """The Structs hold every default; ``default.yaml`` only reads the environment, and with
    nothing set there its values are the Structs' own (its header says so)."""
    text = default_config_path().read_text()
    leaves = _leaves(yaml.safe_load(text))
    assert leaves
    assert [(at, value) for at, value in leaves if not _PLACEHOLDER.fullmatch(value)] == []
    assert load_settings(env={}) == Settings()
    assert "src/turnwire/config/settings.py" in text and "README" not in text


def _defaults(struct: type[msgspec.Struct]) -> dict[str, Any]:
    return {
        field.name: field.default_factory()
        if field.default is msgspec.NODEFAULT and field.default_factory is not msgspec.NODEFAULT
        else field.default
        for field in msgspec.structs.fields(struct)
    }


def test_the_render_options_defaults_are_the_settings_defaults():
    """``RenderOptions`` (what ``build_input`` takes without a container) repeats defaults of
    ``render:`` and ``client:``; they may not drift from the Structs that own them."""
    options, render = _defaults(RenderOptions), _defaults(RenderSettings)
    shared = (set(options) & set(render)) - {"unsupported_media_policy", "replay_compatibility"}
    assert len(shared) >= 12
    assert {name: options[name] for name in shared} == {name: render[name] for name in shared}
    assert options["unsupported_media_policy"] == RenderSettings().media_policy()
    # unset in ``render:``, the tags the replay mode implies (none while replay is off)
    assert render["replay_compatibility"] is None
    assert options["replay_compatibility"] == RenderSettings().replay_tags == ()
    client = ClientSettings()
    assert Endpoint() == Endpoint(
        base_url=client.base_url, organization=client.organization, project=client.project
    )


SETTINGS_STRUCTS = [
    value
    for value in vars(settings_module).values()
    if isinstance(value, type)
    and issubclass(value, msgspec.Struct)
    and value.__module__ == settings_module.__name__
    and msgspec.structs.fields(value)
]


@pytest.mark.parametrize("struct", SETTINGS_STRUCTS, ids=lambda s: s.__name__)
def test_every_setting_is_described_in_its_struct(struct):
    """Each field's words live on its Struct (an ``:ivar:`` line), where the configuration page
    and the JSON Schema read them, and nowhere else."""
    assert len(SETTINGS_STRUCTS) >= 12
    documented = set(re.findall(r"^\s*:ivar (\w+):", struct.__doc__ or "", re.MULTILINE))
    assert {field.encode_name for field in msgspec.structs.fields(struct)} <= documented
    assert struct.__name__ not in FIELD_DOCS


@pytest.mark.parametrize(
    ("render", "tags", "problem"),
    [
        ({}, (), None),
        ({"reasoning_replay": "encrypted"}, (REPLAY_TAG,), None),
        ({"reasoning_replay": "summary-only"}, (REPLAY_TAG,), None),
        ({"replay_compatibility": []}, (), None),
        (
            {"reasoning_replay": "encrypted", "replay_compatibility": ["x-v1", REPLAY_TAG]},
            ("x-v1", REPLAY_TAG),
            None,
        ),
        ({"reasoning_replay": "encrypted", "replay_compatibility": []}, (), "is empty"),
        (
            {"reasoning_replay": "encrypted", "replay_compatibility": ["x-v1"]},
            ("x-v1",),
            "lists only x-v1",
        ),
        ({"replay_compatibility": [REPLAY_TAG]}, (REPLAY_TAG,), "reasoning_replay is off"),
    ],
)
def test_the_replay_mode_implies_its_tag_unless_the_tags_are_set(render, tags, problem):
    """``render.reasoning_replay`` is the one switch: unset, ``replay_compatibility`` is the
    tag of the reasoning turnwire records while a mode replays; set, it is what it says, and
    a combination that replays nothing is named (what ``check-config`` warns of)."""
    settings = load_settings(overrides={"render": render}).render
    assert settings.replay_tags == tags
    assert make_container(settings={"render": render}).replay_compatibility() == tags
    problems = replay_problems(settings)
    if problem is None:
        assert problems == []
    else:
        assert len(problems) == 1 and problem in problems[0]
