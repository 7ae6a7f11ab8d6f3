"""``tools.allow_thread_mcp_servers`` matches a thread's MCP server URL as a URL, not as text."""

from __future__ import annotations

import pytest

import turnwire
from turnwire.errors import McpServerNotAllowedError
from turnwire.wire.hosted_tools import url_allowed

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


def _thread(server_url: str) -> turnwire.Thread:
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
        in turnwire.render(_thread("https://mcp.corp.example/sse"), container=container).body
    )
    with pytest.raises(McpServerNotAllowedError, match=r"\$\.hosted_tools\[0\]"):
        turnwire.render(_thread("https://evil.com/.corp.example/x"), container=container)
