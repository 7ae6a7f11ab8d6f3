"""Hosted tool declarations: from the thread file (``hosted_tools``) and the configuration
(``tools.hosted``) to the body the server receives, after the function tools and checked by both
oracles; the MCP servers a thread may declare (``tools.allow_thread_mcp_servers``, matched as a URL,
not as text); MCP credentials kept out of every repr, error, log, printed body and fingerprint."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

import turnwire
from turnwire.errors import McpServerNotAllowedError, ThreadFileError
from turnwire.model.records import McpTool
from turnwire.wire.hosted_tools import url_allowed

from ..client.server import Reply, ScriptedServer, recorded
from ..conftest import make_container, turnwire_process
from ..oracle import validate_body, validate_open_responses

PATTERN = "https://*.corp.example/*"


@pytest.mark.parametrize(
    "server",
    [
        "https://mcp.corp.example/sse",
        "https://a.b.corp.example/",
        "https://MCP.Corp.Example/sse",
        "https://mcp.corp.example:443/x?session=1",
    ],
)
def test_servers_the_pattern_names_are_allowed(server: str) -> None:
    assert url_allowed(server, PATTERN)


@pytest.mark.parametrize(
    "server",
    [
        "https://evil.com/.corp.example/x",  # the path, not the host
        "https://evil.com?.corp.example/x",  # the query
        "https://evil.com#.corp.example/x",  # the fragment
        "https://mcp.corp.example@evil.com/x",  # a user name
        "https://user:pw@mcp.corp.example/x",  # credentials in the URL
        "https://evil.com%2f.corp.example/x",  # an escape in the host
        "https://evil.com\\.corp.example/x",  # a backslash in the host
        "https://evilcorp.example/x",  # no label boundary
        "https://corp.example/x",  # the suffix alone
        "http://mcp.corp.example/x",  # another scheme
        "https://mcp.corp.example:8443/x",  # another port
        "https://mcp.corp.example/a/../../x",  # a dot-dot segment
        "https://mcp.corp.example/a/%2e%2e/x",  # an escaped one
        "https://mcp.corp.example/x#frag",
        "ftp://mcp.corp.example/x",
        "not a url",
    ],
)
def test_look_alikes_are_not(server: str) -> None:
    assert not url_allowed(server, PATTERN)


def test_a_lone_star_allows_every_server_and_other_globs_no_url() -> None:
    assert url_allowed("https://anything.example/x", "*")
    assert not url_allowed("https://anything.example/x", "https*")
    assert not url_allowed("https://anything.example/x", "anything*")


def test_an_exact_host_and_a_path_prefix() -> None:
    pattern = "https://mcp.deepwiki.com/mcp/*"
    assert url_allowed("https://mcp.deepwiki.com/mcp/sse", pattern)
    assert not url_allowed("https://mcp.deepwiki.com/other", pattern)
    assert not url_allowed("https://x.mcp.deepwiki.com/mcp/sse", pattern)
    assert url_allowed("https://mcp.deepwiki.com/mcp", "https://mcp.deepwiki.com/mcp")
    assert not url_allowed("https://mcp.deepwiki.com/mcp/more", "https://mcp.deepwiki.com/mcp")


def _thread_using(server_url: str) -> turnwire.Thread:
    return turnwire.load_thread(
        {
            "version": 1,
            "model": "gpt-5",
            "hosted_tools": [{"type": "mcp", "server_label": "crm", "server_url": server_url}],
            "messages": [
                {"id": "u1", "role": "user", "content": "hi", "created_at": "2026-01-01T00:00:00Z"}
            ],
        }
    )


def test_a_render_refuses_a_look_alike_server_before_anything_is_sent() -> None:
    container = turnwire.build_container(
        overrides={"tools": {"allow_thread_mcp_servers": [PATTERN, "connector_*"]}}
    )
    assert (
        b"mcp.corp.example"
        in turnwire.render(_thread_using("https://mcp.corp.example/sse"), container=container).body
    )
    with pytest.raises(McpServerNotAllowedError, match=r"\$\.hosted_tools\[0\]"):
        turnwire.render(_thread_using("https://evil.com/.corp.example/x"), container=container)


SECRET = "mcp-header-secret-0f9d8c7b6a"


TOKEN = "oauth-token-5e4d3c2b1a09"


FOLLOW_UP = recorded("text_simple_gpt-4o-mini.sse")


QUESTION = {
    "id": "u1",
    "role": "user",
    "content": "Ask the wiki.",
    "created_at": "2026-01-01T10:00:00Z",
}


HOSTED = [
    {"type": "web_search", "search_context_size": "medium", "user_location": {"city": "Paris"}},
    {
        "type": "file_search",
        "vector_store_ids": ["vs_1"],
        "max_num_results": 4,
        "filters": {"type": "eq", "key": "region", "value": "eu"},
        "ranking_options": {"ranker": "auto", "score_threshold": 0.25},
    },
    {"type": "code_interpreter", "container": {"type": "auto"}},
    {"type": "image_generation", "quality": "low", "size": "1024x1024"},
]


MCP = {
    "type": "mcp",
    "server_label": "deepwiki",
    "server_url": "https://mcp.deepwiki.com/mcp",
    "allowed_tools": ["ask_question"],
    "require_approval": "always",
    "headers": {"X-Api-Token": SECRET},
    "authorization": TOKEN,
}


def _thread(tmp_path: Path, **fields: Any) -> Path:
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"version": 1, "model": "gpt-5", "messages": [QUESTION], **fields}))
    return path


def _config(tmp_path: Path, **tools: Any) -> Path:
    config = tmp_path / "c.yaml"
    tree = {
        "plugins": {"load_entrypoints": False},
        "client": {"retry": {"max_retries": 0}},
        "tools": tools,
    }
    config.write_text(yaml.safe_dump(tree))
    return config


def _container(**tools: Any) -> turnwire.Container:
    return make_container({"client": {"retry": {"max_retries": 0}}, "tools": tools})


def _run(path: Path, replies: list[Reply], container: Any = None, **options: Any) -> Any:
    with ScriptedServer(replies) as server:
        result = turnwire.api.run(
            path,
            container=container or _container(hosted=[MCP]),
            base_url=server.base_url,
            save=True,
            **options,
        )
    return result, server.requests


def _checked(seen: Any) -> dict[str, Any]:
    body = seen.json
    validate_body(body)
    validate_open_responses(body)
    return body


# ------------------------------------------------------------------ declarations


def test_the_declarations_reach_the_body_the_server_receives(tmp_path):
    tools = [{"name": "get_weather", "parameters": {"type": "object", "properties": {}}}]
    path = _thread(tmp_path, tools=tools, hosted_tools=HOSTED)
    _, requests = _run(path, [Reply.sse(FOLLOW_UP)])
    body = _checked(requests[0])
    sent = body["tools"]
    assert [t["type"] for t in sent] == [
        "function",
        "mcp",  # tools.hosted first
        "web_search",
        "file_search",
        "code_interpreter",
        "image_generation",
    ]
    assert sent[1] == MCP  # the credentials are sent, to the API only
    assert sent[2:] == HOSTED
    # A code interpreter call is replayed with its outputs: asked for, as the recorded
    # accepted request does.
    assert body["include"] == ["code_interpreter_call.outputs"]
    assert body["store"] is False


def test_a_thread_without_hosted_tools_renders_as_before(tmp_path):
    path = _thread(tmp_path)
    body = turnwire.render(path, container=make_container()).json
    assert "tools" not in body and "include" not in body
    loaded = turnwire.load_thread(path)
    assert loaded.hosted_tools == ()
    assert "hosted_tools" not in msgspec.to_builtins(loaded)  # saved files stay as they were


def test_the_recorded_declarations_load_and_render_as_recorded():
    from ..conftest import CONFORMANCE

    for name in ("web_search_call", "code_interpreter_call"):
        recorded_body = json.loads(
            (CONFORMANCE / "requests" / f"reasoning_replay_{name}_gpt-5.json").read_text()
        )
        declared = recorded_body.get("body", recorded_body)["tools"]
        thread = turnwire.load_thread(
            {"version": 1, "model": "gpt-5", "messages": [QUESTION], "hosted_tools": declared}
        )
        body = turnwire.render(thread, container=make_container()).json
        assert body["tools"] == declared
        # What the declarations add to `include` is what the recorded request asked for.
        expected = set(recorded_body.get("body", recorded_body)["include"])
        assert set(body.get("include", [])) == expected - {"reasoning.encrypted_content"}


def test_the_configuration_wins_over_a_thread_declaration_of_the_same_tool(tmp_path, caplog):
    forged = {**MCP, "server_url": "https://attacker.example/mcp", "require_approval": "never"}
    del forged["headers"], forged["authorization"]
    path = _thread(tmp_path, hosted_tools=[forged, HOSTED[0]])
    with caplog.at_level(logging.WARNING, logger="turnwire"):
        body = turnwire.render(path, container=_container(hosted=[MCP])).json
    assert [t.get("server_url") for t in body["tools"]] == [MCP["server_url"], None]
    assert "hosted-tool-shadowed" in [getattr(r, "kind", None) for r in caplog.records]


def test_a_thread_declares_only_the_mcp_servers_the_configuration_allows(tmp_path):
    own = {"type": "mcp", "server_label": "wiki", "server_url": "https://mcp.deepwiki.com/mcp"}
    path = _thread(tmp_path, hosted_tools=[HOSTED[0], own])
    with ScriptedServer([Reply.sse(FOLLOW_UP)]) as server:
        with pytest.raises(turnwire.errors.McpServerNotAllowedError) as caught:
            turnwire.api.run(path, container=_container(), base_url=server.base_url)
    assert server.requests == []  # nothing was sent
    assert caught.value.code == "E_MCP_SERVER_NOT_ALLOWED"
    assert caught.value.path == "$.hosted_tools[1]" and caught.value.server_label == "wiki"
    with pytest.raises(turnwire.errors.McpServerNotAllowedError):  # render says so too
        turnwire.render(path, container=_container(allow_thread_mcp_servers=["https://other/*"]))
    # A pattern that ends in a path; a look-alike host does not match it.
    allowed = _container(allow_thread_mcp_servers=["https://mcp.deepwiki.com/*"])
    body = turnwire.render(path, container=allowed).json
    assert body["tools"][1] == own
    path = _thread(
        tmp_path, hosted_tools=[{**own, "server_url": "https://mcp.deepwiki.com.evil.io/"}]
    )
    with pytest.raises(turnwire.errors.McpServerNotAllowedError):
        turnwire.render(path, container=allowed)
    # A connector is matched by its id; a server the configuration shadows is not checked.
    connector = {"type": "mcp", "server_label": "drive", "connector_id": "connector_googledrive"}
    path = _thread(tmp_path, hosted_tools=[connector, {**own, "server_label": "deepwiki"}])
    body = turnwire.render(
        path,
        container=_container(hosted=[MCP], allow_thread_mcp_servers=["connector_googledrive"]),
    ).json
    assert [t["server_label"] for t in body["tools"]] == ["deepwiki", "drive"]


@pytest.mark.parametrize(
    ("declared", "message"),
    [
        ([HOSTED[0], HOSTED[0]], "'web_search' is declared twice"),
        ([{**MCP}, {**MCP, "headers": None}], "'mcp:deepwiki' is declared twice"),
        ([{"type": "mcp", "server_label": "x"}], "exactly one of `server_url` or `connector_id`"),
        ([{"type": "file_search", "vector_store_ids": []}], "$.hosted_tools[0].vector_store_ids"),
        ([{"type": "web_search", "searchcontextsize": "low"}], "unknown field"),
        ([{"type": "tool_search", "execution": "elsewhere"}], "$.hosted_tools[0].execution"),
    ],
)
def test_bad_declarations_are_thread_file_errors(declared, message):
    with pytest.raises(ThreadFileError) as caught:
        turnwire.load_thread({"version": 1, "hosted_tools": declared})
    assert message in str(caught.value)
    assert SECRET not in str(caught.value)


def test_bad_configured_declarations_are_config_errors():
    with pytest.raises(turnwire.ConfigError) as caught:
        _container(hosted=[{"type": "code_interpreter"}])
    assert "$.tools.hosted[0]" in str(caught.value)


# ------------------------------------------------------------------ credentials


def test_mcp_credentials_never_reach_a_repr_an_error_or_a_log(tmp_path, caplog):
    tool = msgspec.convert(MCP, McpTool)
    for text in (
        repr(tool),
        str(tool),
        repr((tool,)),
        repr(turnwire.load_thread({"version": 1, "hosted_tools": [MCP]})),
    ):
        assert SECRET not in text and TOKEN not in text and "[redacted]" in text
    # Any error or log text that quotes them is redacted (the values are remembered).
    err = turnwire.ConfigError(f"server said: {SECRET} / Bearer {TOKEN}")
    assert SECRET not in str(err) and TOKEN not in str(err)
    caplog.set_level(logging.DEBUG)
    path = _thread(tmp_path)
    failing = Reply.json(400, {"error": {"message": f"bad header {SECRET}", "type": "x"}})
    with pytest.raises(turnwire.HttpError) as caught:
        _run(path, [failing])
    assert SECRET not in str(caught.value) and SECRET not in caplog.text
    assert TOKEN not in caplog.text


def test_turnwire_render_and_check_config_print_no_credentials(tmp_path):
    path = _thread(tmp_path, hosted_tools=[{**MCP, "server_label": "other"}])
    config = _config(
        tmp_path, hosted=[MCP], allow_thread_mcp_servers=["https://mcp.deepwiki.com/*"]
    )
    rendered = turnwire_process("render", str(path), "--config", str(config))
    assert rendered.returncode == 0, rendered.stderr
    body = json.loads(rendered.stdout)
    assert [t["headers"] for t in body["tools"]] == [{"X-Api-Token": "[redacted]"}] * 2
    assert [t["authorization"] for t in body["tools"]] == ["[redacted]"] * 2
    printed = turnwire_process("check-config", str(config), "--print")
    assert printed.returncode == 0, printed.stderr
    assert "X-Api-Token: '[redacted]'" in printed.stdout
    assert "authorization: '[redacted]'" in printed.stdout
    for done in (rendered, printed):
        assert SECRET not in done.stdout + done.stderr
        assert TOKEN not in done.stdout + done.stderr


def test_credentials_are_not_part_of_a_reasoning_fingerprint():
    from turnwire.stages.fingerprint import prefix_tail

    tool = msgspec.convert(MCP, McpTool)
    rotated = msgspec.structs.replace(tool, headers={"X-Api-Token": "another-secret-value"})
    assert prefix_tail("gpt-5", None, (tool,)) == prefix_tail("gpt-5", None, (rotated,))
    assert SECRET.encode() not in prefix_tail("gpt-5", None, (tool,))


def test_threads_show_hides_mcp_credentials_and_export_keeps_them(tmp_path):
    path = _thread(tmp_path, hosted_tools=[MCP])
    db = str(tmp_path / "threads.db")
    imported = turnwire_process("threads", "import", str(path), "--id", "t1", "--db", db)
    assert imported.returncode == 0, imported.stderr
    shown = turnwire_process("threads", "show", "t1", "--db", db)
    assert shown.returncode == 0, shown.stderr + shown.stdout
    declared = json.loads(shown.stdout)["hosted_tools"][0]
    assert declared["headers"] == {"X-Api-Token": "[redacted]"}
    assert declared["authorization"] == "[redacted]"
    assert SECRET not in shown.stdout and TOKEN not in shown.stdout
    exported = turnwire_process("threads", "export", "t1", "-", "--db", db)
    assert json.loads(exported.stdout)["hosted_tools"] == [MCP]  # lossless, as imported
