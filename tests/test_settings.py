"""Settings: the packaged defaults, profile merging, interpolation, and errors with $.path."""

from __future__ import annotations

from pathlib import Path

import pytest

from turnwire import ConfigError, load_settings
from turnwire.config.settings import default_config_path

REPO = Path(__file__).resolve().parents[1]


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
