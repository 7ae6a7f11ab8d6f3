"""The provider profiles shipped with turnwire (``--profile azure``, ``vllm``...), each against a
local server: the key in the header the provider reads (or none), the query, the model; and
``client.auth_header`` / ``auth_scheme`` / ``query`` on their own."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import turnwire
from turnwire.config.settings import profile_path

from ..conftest import make_container
from .server import Reply, ScriptedServer
from .streams import text_answer

THREAD = {
    "version": 1,
    "messages": [
        {"id": "u1", "role": "user", "content": "hi", "created_at": "2026-01-01T10:00:00Z"}
    ],
}
KEY = "sk-profile-test-key"
LEAKED = "sk-openai-key-that-must-stay-home"


def _run(profile: str, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch, **env: str) -> Any:
    monkeypatch.setenv("OPENAI_API_KEY", LEAKED)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    container = turnwire.build_container([profile_path(profile)])
    return turnwire.run(THREAD, container=container)


# profile -> (the variable naming its base URL, the variable of its key or None, the model)
PROVIDERS: dict[str, tuple[str, str | None, str]] = {
    "openrouter": ("OPENROUTER_BASE_URL", "OPENROUTER_API_KEY", "openai/gpt-5"),
    "groq": ("GROQ_BASE_URL", "GROQ_API_KEY", "openai/gpt-oss-120b"),
    "openresponses": ("OPENRESPONSES_BASE_URL", "OPENRESPONSES_API_KEY", "gpt-5"),
    "vllm": ("VLLM_BASE_URL", None, "Qwen/Qwen3-8B"),
    "ollama": ("OLLAMA_BASE_URL", None, "gpt-oss:20b"),
    "lmstudio": ("LMSTUDIO_BASE_URL", None, "openai/gpt-oss-20b"),
    "llamacpp": ("LLAMACPP_BASE_URL", None, "local-model"),
}


@pytest.mark.parametrize("profile", sorted(PROVIDERS))
def test_each_provider_profile_sends_its_key_its_way_and_no_other(
    profile: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    base_variable, key_variable, model = PROVIDERS[profile]
    monkeypatch.delenv("TURNWIRE_MODEL", raising=False)
    env = {base_variable: "BASE"} | ({key_variable: KEY} if key_variable else {})
    with ScriptedServer([Reply.sse(text_answer("Hi."))]) as server:
        env[base_variable] = server.base_url
        result = _run(profile, server, monkeypatch, **env)
    assert result.text == "Hi."
    (seen,) = server.requests
    assert seen.path == "/v1/responses"
    assert seen.json["model"] == model and seen.json["store"] is False
    if key_variable:
        assert seen.headers["authorization"] == f"Bearer {KEY}"
    else:
        assert "authorization" not in seen.headers  # the OpenAI key in the environment too
    assert LEAKED.encode() not in seen.body and LEAKED not in str(seen.headers)
    if profile in {"vllm", "ollama", "lmstudio", "llamacpp", "openresponses"}:
        assert "prompt_cache_key" not in seen.json


def test_azure_sends_api_key_and_no_authorization_and_its_deployment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with ScriptedServer([Reply.sse(text_answer("Hi."))]) as server:
        _run(
            "azure",
            server,
            monkeypatch,
            AZURE_OPENAI_BASE_URL=server.base_url,
            AZURE_OPENAI_API_KEY=KEY,
            AZURE_OPENAI_DEPLOYMENT="my-gpt5-deployment",
        )
    (seen,) = server.requests
    assert seen.headers["api-key"] == KEY
    assert "authorization" not in seen.headers
    assert seen.json["model"] == "my-gpt5-deployment"
    assert LEAKED not in str(seen.headers)


def test_azure_without_its_key_is_refused_before_anything_is_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AZURE_OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", LEAKED)
    container = turnwire.build_container([profile_path("azure")])
    with pytest.raises(turnwire.errors.MissingApiKeyError) as caught:
        turnwire.run(THREAD, container=container)
    assert caught.value.variable == "AZURE_OPENAI_API_KEY"


@pytest.mark.parametrize(
    ("settings", "base"),
    [
        ({"client": {"query": {"api-version": "2025-04-01-preview"}}}, ""),
        ({}, "?api-version=2025-04-01-preview"),  # written in the base URL: no longer a path
    ],
    ids=["client.query", "in the base URL"],
)
def test_a_query_goes_on_every_request_after_the_endpoint_s_path(
    settings: dict[str, Any], base: str
) -> None:
    compaction = {
        "id": "resp_cmp",
        "object": "response.compaction",
        "created_at": 1767261600,
        "output": [{"id": "cmp_1", "type": "compaction", "encrypted_content": "gAAAA-x"}],
        "usage": {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12},
    }
    script = [Reply.sse(text_answer("Hi.")), Reply.json(200, compaction)]
    with ScriptedServer(script, keep_alive=True) as server:

        async def both() -> None:
            container = make_container(settings)
            url = server.base_url + base
            async with turnwire.Client(container, base_url=url, api_key=KEY) as client:
                result = await client.run(turnwire.load_thread(THREAD), model="gpt-5")
                await client.compact(result.thread, model="gpt-5")

        asyncio.run(both())
    paths = [seen.path for seen in server.requests]
    assert paths == [
        "/v1/responses?api-version=2025-04-01-preview",
        "/v1/responses/compact?api-version=2025-04-01-preview",
    ]


def test_the_auth_header_and_scheme_are_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = {"client": {"auth_header": "X-Gateway-Token", "auth_scheme": "Token"}}
    with ScriptedServer([Reply.sse(text_answer("Hi."))]) as server:
        turnwire.run(
            THREAD,
            container=make_container(settings),
            base_url=server.base_url,
            api_key=KEY,
            model="m",
        )
    (seen,) = server.requests
    assert seen.headers["x-gateway-token"] == f"Token {KEY}"
    assert "authorization" not in seen.headers


@pytest.mark.parametrize(
    ("key", "value"), [("auth_header", "Bad Header"), ("auth_scheme", "Bear er")]
)
def test_a_header_http_cannot_carry_is_refused_at_load(key: str, value: str) -> None:
    with pytest.raises(turnwire.ConfigError) as caught:
        make_container({"client": {key: value}}).settings()
    assert caught.value.path == f"$.client.{key}"


def test_the_transport_s_repr_shows_no_key_and_the_query() -> None:
    container = make_container({"client": {"query": {"api-version": "v"}}})
    client = turnwire.Client(container, base_url="https://x.example/v1", api_key=KEY)
    assert KEY not in repr(client.transport) and KEY not in repr(client)
    assert client.transport.query == {"api-version": "v"}
