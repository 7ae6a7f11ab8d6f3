"""The client against a real HTTP server on 127.0.0.1: retries, faults, the reasoning-free
retry, the tool loop, observers, and what ends up in the thread file on disk."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import httpx
import pytest

import turnwire
from turnwire import hookimpl
from turnwire.client.dispatch import Client
from turnwire.errors import (
    MissingApiKeyError,
    RequestTimeoutError,
)

from ..conftest import (
    REPLAY,
    make_container,
    thread,
    user,
)
from .conftest import (
    AFTER_CALL,
    CALL,
    ERROR_400,
    PHRASES,
    TEXT,
    THREAD,
    assert_unchanged,
    replay_thread,
    run,
)
from .server import Reply, ScriptedServer, recorded

# ------------------------------------------------------------------ the reasoning-free retry


# ------------------------------------------------------------------ hooks


class Observer:
    def __init__(self) -> None:
        self.bodies: list[tuple[str, bytes]] = []
        self.generations: list[object] = []

    @hookimpl
    def on_prompt_assembled(self, body, attempt_kind):
        self.bodies.append((attempt_kind, body))

    @hookimpl
    def on_raw_generation(self, generation):
        self.generations.append(generation)


class Broken:
    @hookimpl
    def on_prompt_assembled(self, body):
        raise RuntimeError("observer bug")


def test_observers_see_every_request_sent_and_a_broken_one_never_fails_the_turn(tmp_path, caplog):
    path = replay_thread(tmp_path / "t.json")
    observer = Observer()
    container = make_container(REPLAY, extra_plugins=[observer, Broken()])
    body = {"error": {"message": PHRASES[0]}}
    script = [Reply.json(503, ERROR_400), Reply.json(400, body), Reply.sse(TEXT)]
    with ScriptedServer(script) as server, caplog.at_level(logging.ERROR, logger="turnwire"):
        run(server, path, container=container)
    assert [kind for kind, _ in observer.bodies] == ["request", "reasoning-free-retry"]
    assert observer.bodies[1][1] == server.requests[2].body
    assert len(observer.generations) == 1
    assert "observer-error" in [r.kind for r in caplog.records]


def test_a_thread_file_saved_by_another_run_meanwhile_is_not_overwritten(thread_file):
    """Two runs of one file: the one that saves last would drop the other's turn. It finds
    the file changed since it read it, writes nothing and says so (E_THREAD_FILE_CONFLICT)."""
    from turnwire.errors import ThreadFileChangedError

    other = (
        THREAD + '  - {id: u9, role: user, content: "from the other run", created_at: '
        '"2026-01-01T10:00:09Z"}\n'
    )

    def get_capital(country="?"):
        thread_file.write_text(other)  # the other run saves while this one runs its tool
        return f"the capital of {country}"

    with ScriptedServer([Reply.sse(CALL), Reply.sse(AFTER_CALL)]) as server:
        with pytest.raises(ThreadFileChangedError) as caught:
            run(server, thread_file, handlers={"get_capital": get_capital})
    assert thread_file.read_text() == other
    assert caught.value.code == "E_THREAD_FILE_CONFLICT" and not caught.value.fatal
    assert str(thread_file) in str(caught.value)
    assert caught.value.result.records.tool_calls  # what this run recorded, for the caller
    assert not list(thread_file.parent.glob(".*.tmp"))


def test_a_run_that_saves_over_the_file_it_read_saves(thread_file):
    with ScriptedServer([Reply.sse(TEXT)]) as server:
        run(server, thread_file)
    assert "Hi in Portuguese" in thread_file.read_text()


def test_a_thread_saved_by_run_once_renders_to_a_clear_error_until_its_calls_run(thread_file):
    from turnwire.errors import PreflightError

    with ScriptedServer([Reply.sse(CALL)]) as server:
        run(server, thread_file, once=True)
    saved = turnwire.load_thread(thread_file)
    (pending,) = saved.tool_calls
    assert pending.result is None
    with pytest.raises(PreflightError) as caught:
        turnwire.render(saved, container=make_container())
    assert caught.value.rule == "call-output-pairing"
    assert str(caught.value).startswith(f"$.tool_calls[0]: tool call {pending.id!r}")
    assert "`turnwire run` runs them first" in str(caught.value)
    with ScriptedServer([Reply.sse(AFTER_CALL)]) as server:  # and the next run runs it
        result = run(server, thread_file)
    assert result.resolved and turnwire.render(turnwire.load_thread(thread_file)).body


def test_a_transport_option_given_to_run_wins_and_an_unknown_one_is_named(thread_file):
    reply = Reply.sse(TEXT, chunk=500, delay_s=0.25)
    with ScriptedServer([reply]) as server, pytest.raises(RequestTimeoutError):
        run(server, thread_file, request_timeout_s=0.6)  # over client.request_timeout_s
    with ScriptedServer([Reply.sse(TEXT)]) as server:
        with pytest.raises(
            TypeError, match=r"unexpected keyword argument 'temperature'.*request\.temperature"
        ):
            run(server, thread_file, temperature=0.2)
    assert_unchanged(thread_file)


def test_per_dispatch_overrides_merge_key_by_key_and_may_reset_to_null(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-override-000")
    t = thread(model="gpt-5", messages=[user()])
    base = {
        "client": {"headers": {"X-A": "1", "X-B": "2"}, "organization": "org-base"},
        "request": {"max_output_tokens": 64},
    }

    async def scenario(base_url: str) -> None:
        client = Client(make_container(base), base_url=base_url)
        await client.run(
            t,
            overrides={
                "client": {"headers": {"X-B": "3"}, "organization": None},
                "request": {"max_output_tokens": None},
            },
        )
        await client.run(t)
        await client.transport.aclose()

    with ScriptedServer([Reply.sse(TEXT)]) as server:
        asyncio.run(scenario(server.base_url))
    first, second = server.requests
    assert (first.headers["x-a"], first.headers["x-b"]) == ("1", "3")
    assert "openai-organization" not in first.headers
    assert "max_output_tokens" not in first.json
    assert (second.headers["x-b"], second.headers["openai-organization"]) == ("2", "org-base")
    assert second.json["max_output_tokens"] == 64


def test_overrides_are_validated_again():
    client = Client(make_container(), base_url="http://127.0.0.1:9/v1")
    with pytest.raises(turnwire.ConfigError) as caught:
        client.with_overrides({"request": {"max_output_tokens": 8}})
    assert caught.value.path == "$.request.max_output_tokens"


def test_overrides_of_a_client_made_with_its_transport_go_through_that_transport(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``run(overrides=...)`` and ``extra_body=`` make a client of those settings: one made
    with ``transport=`` keeps that transport's URL and key (it went to client.base_url with
    the environment's key, or none)."""
    from turnwire.client.transport import Transport

    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    t = thread(messages=[user("hi")], model="gpt-4o-mini")

    async def scenario(base_url: str) -> None:
        transport = Transport(base_url=base_url, api_key="sk-of-the-transport")
        client = Client(make_container(), transport=transport)
        try:
            await client.run(t, overrides={"request": {"max_output_tokens": 32}})
            await client.run(t, extra_body={"max_tool_calls": 5})
            with pytest.raises(turnwire.ConfigError) as caught:
                client.with_overrides({"client": {"request_timeout_s": 5}})
            assert caught.value.path == "client.request_timeout_s"
            assert "made with transport=" in str(caught.value)
            # what is the client's own (not the transport's) may still be overridden, and
            # closing that client leaves the transport it shares open
            async with client.with_overrides({"client": {"max_iterations": 2}}) as derived:
                assert derived.transport is transport
            await client.run(t)
        finally:
            await transport.aclose()

    replies = [Reply.sse(recorded("text_simple_gpt-4o-mini.sse"))] * 3
    with ScriptedServer(replies, keep_alive=True) as server:
        asyncio.run(scenario(server.base_url))
    assert server.connections == 1  # the third request still on the first connection
    first, second, _ = server.requests
    assert first.headers["authorization"] == second.headers["authorization"]
    assert first.headers["authorization"] == "Bearer sk-of-the-transport"
    assert first.json["max_output_tokens"] == 32 and second.json["max_tool_calls"] == 5


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


class _Once(httpx.AsyncByteStream):
    def __init__(self, data: bytes) -> None:
        self._data = data

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self._data


def test_api_key_env_null_sends_no_key_to_any_host_and_is_not_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-leave")
    sent: list[httpx.Request] = []
    bodies: list[bytes] = []

    async def record(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        bodies.append(await request.aread())
        data = recorded("text_simple_gpt-4o-mini.sse")
        return httpx.Response(
            200, stream=_Once(data), headers={"content-type": "text/event-stream"}
        )

    http = httpx.AsyncClient(transport=httpx.MockTransport(record))
    container = make_container({"client": {"api_key_env": None}})
    client = turnwire.Client(container, base_url="https://llm.internal.example/v1", client=http)
    result = client.run_sync(thread(messages=[user("hi")]), model="m")
    assert result.records.messages
    (request,) = sent
    assert str(request.url) == "https://llm.internal.example/v1/responses"
    assert "authorization" not in request.headers
    assert b"sk-must-not-leave" not in bodies[0] and b'"store":false' in bodies[0]


def test_no_key_is_fine_for_a_local_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with ScriptedServer([Reply.sse(recorded("text_simple_gpt-4o-mini.sse"))]) as server:
        local = server.base_url.replace("127.0.0.1", "localhost")
        result = turnwire.run(
            thread(messages=[user("hi")]), container=make_container(), base_url=local, model="m"
        )
    assert "authorization" not in server.requests[0].headers
    assert result.records.messages


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


def test_hook_on_prompt_assembled(thread_file):
    """A plugin sees each request body as sent, with the model and the attempt's kind."""
    seen: list[tuple[bytes, str, str]] = []

    class Recorder:
        @hookimpl
        def on_prompt_assembled(self, body, model, attempt_kind):
            seen.append((body, model, attempt_kind))

    container = make_container(extra_plugins=[Recorder()])
    with ScriptedServer([Reply.sse(CALL), Reply.sse(AFTER_CALL)]) as server:
        run(server, thread_file, container=container)
    assert [(model, kind) for _, model, kind in seen] == [("gpt-4o", "request")] * 2
    assert [body for body, _, _ in seen] == [request.body for request in server.requests]


def test_hook_on_raw_generation(thread_file):
    """A plugin sees each response as read, before it is recorded, with the model asked."""
    seen: list[tuple[object, str]] = []

    class Recorder:
        @hookimpl
        def on_raw_generation(self, generation, model):
            seen.append((generation, model))

    container = make_container(extra_plugins=[Recorder()])
    with ScriptedServer([Reply.sse(CALL), Reply.sse(AFTER_CALL)]) as server:
        result = run(server, thread_file, container=container)
    assert [model for _, model in seen] == ["gpt-4o", "gpt-4o"]
    first, last = (generation for generation, _ in seen)
    assert [call.name for call in first.tool_calls] == ["get_capital"]
    assert last.text == result.records.messages[-1].content


# ------------------------------------------------------------------ records built in code


def test_a_thread_built_in_code_is_checked_before_anything_runs_or_is_sent():
    """A pending call would run first (``--once`` left it), but a record the thread file could
    not hold stops the run before: no handler runs, no request is sent."""
    from datetime import UTC, datetime

    ran: list[str] = []
    now = datetime.now(UTC)
    built = turnwire.Thread(
        model="gpt-4o",
        tools=(turnwire.Tool(name="lookup"),),
        messages=(turnwire.Message(id="u1", role="usr", content="hi", created_at=now),),  # type: ignore[arg-type]
        tool_calls=(turnwire.ToolCall(id="call_1", tool="lookup", created_at=now),),
    )
    with ScriptedServer([Reply.sse(TEXT)]) as server:
        with pytest.raises(turnwire.ThreadFileError) as caught:
            turnwire.run(
                built,
                container=make_container(),
                base_url=server.base_url,
                handlers={"lookup": lambda: ran.append("lookup") or "x"},
            )
    assert caught.value.path == "$.messages[0].role"
    assert ran == [] and server.requests == []


def test_the_transport_is_made_from_the_settings_it_is_listed_to_read():
    """with_overrides refuses an override of what configures a given transport, by the list
    _TRANSPORT_SETTINGS: the transport is made from a view holding those alone, so a field
    read there unlisted fails at once."""
    from turnwire.client import dispatch

    view = dispatch._Only(turnwire.load_settings().client, dispatch._TRANSPORT_SETTINGS)
    assert view.base_url == "https://api.openai.com/v1"
    with pytest.raises(AttributeError, match="max_iterations is not one of _TRANSPORT_SETTINGS"):
        _ = view.max_iterations
    fields = set(turnwire.load_settings().client.__struct_fields__)
    assert set(dispatch._TRANSPORT_SETTINGS) <= fields
