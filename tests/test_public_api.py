"""The public surface as a user's code sees it: types, credentials, conventions, lifetime."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import httpx
import pytest

import turnwire
from turnwire.errors import MissingApiKeyError

from .client.server import Reply, ScriptedServer, recorded
from .conftest import REPO_EXAMPLES, make_container, mypy_strict, thread, turnwire_process, user

OPENAI = "https://api.openai.com/v1"
DOWNSTREAM = Path(__file__).parent / "typing" / "downstream.py"


def test_downstream_script_type_checks_and_typos_are_type_errors(tmp_path: Path) -> None:
    status, output = mypy_strict(DOWNSTREAM, tmp_path / "cache")
    assert status == 0, output
    typo = tmp_path / "typo.py"
    text = DOWNSTREAM.read_text()
    assert "result.response.finish_reason" in text
    typo.write_text(
        text.replace("result.response.finish_reason", "result.response.finish_raeson").replace(
            "result.records.tool_calls", "result.record.tool_calls"
        )
    )
    status, output = mypy_strict(typo, tmp_path / "cache")
    assert status == 1
    assert '"ResponseMeta" has no attribute "finish_raeson"' in output
    assert '"RunResult" has no attribute "record"' in output


def _answering(server: ScriptedServer) -> list[str]:
    return [seen.headers.get("authorization", "") for seen in server.requests]


def test_api_key_base_url_organization_project_in_code(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with ScriptedServer([Reply.sse(recorded("text_simple_gpt-4o-mini.sse"))]) as server:
        result = turnwire.run(
            thread(messages=[user("hi")]),
            container=make_container(),
            base_url=server.base_url,
            api_key="sk-from-code",
            organization="org-code",
            project="proj_code",
            model="gpt-4o-mini",
        )
    assert isinstance(result, turnwire.RunResult)
    seen = server.requests[0].headers
    assert seen["authorization"] == "Bearer sk-from-code"
    assert seen["openai-organization"] == "org-code"
    assert seen["openai-project"] == "proj_code"
    assert result.response.finish_reason == "stop"


def test_openai_environment_variables_are_read_as_the_sdk_reads_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("OPENAI_ORG_ID", "org-env")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj_env")
    with ScriptedServer([Reply.sse(recorded("text_simple_gpt-4o-mini.sse"))]) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        container = turnwire.build_container(settings=turnwire.load_settings())
        turnwire.run(thread(messages=[user("hi")]), container=container, model="gpt-4o-mini")
    assert len(server.requests) == 1
    seen = server.requests[0].headers
    assert seen["authorization"] == "Bearer sk-env"
    assert seen["openai-organization"] == "org-env"
    assert seen["openai-project"] == "proj_env"


def test_explicit_settings_win_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/from-env")
    monkeypatch.setenv("OPENAI_ORG_ID", "org-env")
    settings = turnwire.load_settings(
        overrides={"client": {"base_url": "http://127.0.0.1:9/from-config", "organization": "o"}}
    )
    assert settings.client.base_url == "http://127.0.0.1:9/from-config"
    assert settings.client.organization == "o"
    assert turnwire.load_settings().client.base_url == "http://127.0.0.1:9/from-env"
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.delenv("OPENAI_ORG_ID")
    plain = turnwire.load_settings().client
    assert (plain.base_url, plain.organization, plain.project) == (
        "https://api.openai.com/v1",
        None,
        None,
    )
    client = turnwire.Client(
        turnwire.build_container(settings=settings), base_url="http://127.0.0.1:9/arg"
    )
    assert client.transport.url == "http://127.0.0.1:9/arg/responses"


def test_no_key_for_a_remote_endpoint_fails_before_sending(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    sent: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(500)

    http = httpx.AsyncClient(transport=httpx.MockTransport(record))
    client = turnwire.Client(make_container(), base_url="https://api.openai.com/v1", client=http)
    with pytest.raises(MissingApiKeyError) as caught:
        client.run_sync(thread(messages=[user("hi")]), model="gpt-5")
    assert sent == []
    assert caught.value.code == "E_OPENAI_API_KEY_MISSING"
    assert caught.value.variable == "OPENAI_API_KEY"
    assert "set OPENAI_API_KEY" in str(caught.value)
    asyncio.run(http.aclose())


def test_no_key_is_fine_for_a_local_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with ScriptedServer([Reply.sse(recorded("text_simple_gpt-4o-mini.sse"))]) as server:
        local = server.base_url.replace("127.0.0.1", "localhost")
        result = turnwire.run(
            thread(messages=[user("hi")]), container=make_container(), base_url=local, model="m"
        )
    assert "authorization" not in server.requests[0].headers
    assert result.records.messages


def test_cli_without_a_key_says_which_variable_to_set(tmp_path: Path) -> None:
    shutil.copy(REPO_EXAMPLES / "weather.yaml", tmp_path / "weather.yaml")
    shutil.copy(REPO_EXAMPLES / "photo.png", tmp_path / "photo.png")
    thread = str(tmp_path / "weather.yaml")
    done = turnwire_process("run", thread, "--base-url", OPENAI, "--profile", "examples")
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()
    assert last == [
        "error: E_OPENAI_API_KEY_MISSING: no API key for https://api.openai.com/v1: "
        "set OPENAI_API_KEY (or pass api_key= in code); nothing was sent"
    ]


def test_client_is_an_async_context_manager_that_closes_its_connections() -> None:
    async def scenario() -> tuple[bool, bool]:
        with ScriptedServer([Reply.sse(recorded("text_simple_gpt-4o-mini.sse"))]) as server:
            async with turnwire.Client(make_container(), base_url=server.base_url) as client:
                await client.run(thread(messages=[user("hi")]), model="m")
                http = client.transport.shared_client()
                open_inside = not http.is_closed
        return open_inside, http.is_closed

    assert asyncio.run(scenario()) == (True, True)


def test_client_repr_never_shows_the_key() -> None:
    client = turnwire.Client(make_container(), api_key="sk-secret-value-123")
    assert "sk-secret" not in repr(client) and "sk-secret" not in repr(client.transport)
