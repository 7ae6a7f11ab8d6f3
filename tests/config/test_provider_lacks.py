"""``provider.lacks``: what a provider does not accept, named by its profile; a configuration
that asks for it is refused at load, naming the setting and the reason."""

from __future__ import annotations

from typing import Any

import pytest

import turnwire
from turnwire.config.settings import load_settings, profile_names, profile_path
from turnwire.errors import ProviderUnsupportedError

from ..client.server import ScriptedServer

# What asks for each lack, as a configuration layer over the profile.
ASKS: dict[str, tuple[dict[str, Any], str]] = {
    "encrypted_reasoning": (
        {"render": {"reasoning_replay": "encrypted"}},
        "$.render.reasoning_replay",
    ),
    "reasoning_content": (
        {"render": {"reasoning_content": "replay"}},
        "$.render.reasoning_content",
    ),
    "prompt_cache_key": ({"request": {"prompt_cache_key": "thread"}}, "$.request.prompt_cache_key"),
    "prompt_cache_options": (
        {"request": {"prompt_cache_options": {"ttl": "30m"}}},
        "$.request.prompt_cache_options",
    ),
    "context_management": (
        {"request": {"context_management": [{"type": "compaction", "compact_threshold": 2000}]}},
        "$.request.context_management",
    ),
    "compact": (
        {"context": {"window": {"compact": {"threshold": 1000}}}},
        "$.context.window.compact",
    ),
    "hosted_tools": (
        {"tools": {"hosted": [{"type": "web_search"}]}},
        "$.tools.hosted[0]",
    ),
}


def _lacks() -> list[tuple[str, str, str]]:
    found = []
    for name in profile_names():
        settings = load_settings([profile_path(name)], env={})
        for lack, reason in settings.provider.lacks.items():
            found.append((name, lack, reason))
    return found


def test_the_shipped_profiles_name_what_their_providers_lack() -> None:
    named = {(name, lack) for name, lack, _ in _lacks()}
    assert ("openresponses", "reasoning_content") in named
    assert ("groq", "encrypted_reasoning") in named
    assert {("vllm", "prompt_cache_key"), ("ollama", "compact")} <= named
    # every lack the settings know is exercised below
    assert {lack for _, lack, _ in _lacks()} == set(ASKS)


@pytest.mark.parametrize(("profile", "lack", "reason"), _lacks())
def test_asking_a_profile_for_what_it_lacks_is_refused_at_load(
    profile: str, lack: str, reason: str
) -> None:
    layer, path = ASKS[lack]
    with pytest.raises(turnwire.ConfigError) as caught:
        load_settings([profile_path(profile)], env={}, overrides=layer)
    assert caught.value.path == path
    message = str(caught.value)
    assert message.startswith(f"{path}: {profile} does not accept it")
    assert lack in message and reason in message


@pytest.mark.parametrize("profile", profile_names())
def test_each_profile_alone_loads(profile: str) -> None:
    load_settings([profile_path(profile)], env={})


def test_prompt_cache_breakpoints_and_retention_count_as_cache_options() -> None:
    lacks = {"provider": {"name": "p", "lacks": {"prompt_cache_options": "none here"}}}
    for request, path in [
        ({"prompt_cache_retention": "24h"}, "$.request.prompt_cache_retention"),
        ({"prompt_cache_breakpoints": "auto"}, "$.request.prompt_cache_breakpoints"),
    ]:
        with pytest.raises(turnwire.ConfigError) as caught:
            load_settings(overrides={**lacks, "request": request})
        assert caught.value.path == path


def test_without_a_name_the_error_still_says_why() -> None:
    with pytest.raises(turnwire.ConfigError) as caught:
        load_settings(
            overrides={
                "provider": {"lacks": {"encrypted_reasoning": "no reasoning blobs"}},
                "render": {"reasoning_replay": "encrypted"},
            }
        )
    assert "the provider does not accept it (encrypted_reasoning: no reasoning blobs)" in str(
        caught.value
    )


def test_an_unknown_lack_is_refused_naming_it() -> None:
    with pytest.raises(turnwire.ConfigError) as caught:
        load_settings(overrides={"provider": {"lacks": {"telepathy": "no"}}})
    assert caught.value.path.startswith("$.provider.lacks")


def test_the_command_line_reports_the_refusal_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from turnwire.cli.main import main

    code = main(
        [
            "render",
            "examples/weather.yaml",
            "--profile",
            "vllm",
            "--set",
            "render.reasoning_replay=encrypted",
        ]
    )
    assert code != 0
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "render.reasoning_replay" in err and "vllm does not accept it" in err


def test_an_explicit_compaction_is_refused_before_anything_is_sent() -> None:
    container = turnwire.build_container([profile_path("vllm")])
    thread = turnwire.Thread.create(model="m", prompt="first").with_user_message("second")
    with ScriptedServer([]) as server:
        with pytest.raises(ProviderUnsupportedError) as caught:
            turnwire.compact(thread, container=container, base_url=server.base_url)
    assert (caught.value.path, caught.value.provider, caught.value.lack) == (
        "compact",
        "vllm",
        "compact",
    )
    assert "vllm does not accept POST /responses/compact" in str(caught.value)
    assert server.requests == []


HOSTED = {
    "version": 1,
    "model": "m",
    "hosted_tools": [{"type": "custom", "name": "note"}, {"type": "web_search"}],
    "messages": [
        {"id": "u1", "role": "user", "content": "hi", "created_at": "2026-01-01T10:00:00Z"}
    ],
}


def test_a_thread_s_hosted_tool_is_refused_where_the_provider_runs_none() -> None:
    container = turnwire.build_container([profile_path("vllm")])
    with pytest.raises(ProviderUnsupportedError) as caught:
        turnwire.render(HOSTED, container=container)
    # the custom tool is the client's to run: the web search is what is refused
    assert (caught.value.path, caught.value.lack) == ("$.hosted_tools[1]", "hosted_tools")
    assert "vllm does not accept a tool the server runs" in str(caught.value)
    # the same thread renders where the provider runs them
    turnwire.render(HOSTED, container=turnwire.build_container())


def test_a_client_executed_or_namespaced_tool_is_not_a_hosted_one() -> None:
    thread = {**HOSTED, "hosted_tools": [{"type": "custom", "name": "note"}]}
    turnwire.render(thread, container=turnwire.build_container([profile_path("vllm")]))


def test_a_render_that_asks_for_what_the_provider_lacks_is_refused() -> None:
    container = turnwire.build_container([profile_path("vllm")])
    with pytest.raises(ProviderUnsupportedError) as caught:
        turnwire.render(HOSTED_FREE, container=container, reasoning_replay="encrypted")
    assert (caught.value.path, caught.value.lack) == ("reasoning_replay", "encrypted_reasoning")
    turnwire.render(HOSTED_FREE, container=container, reasoning_replay="off")


HOSTED_FREE = {**HOSTED, "hosted_tools": []}
