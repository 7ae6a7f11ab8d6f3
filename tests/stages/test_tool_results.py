"""render_tool_call_result: text, artifacts, handles, media bracketing, trust."""

from __future__ import annotations

import hashlib
import logging
from types import SimpleNamespace

import turnwire
from turnwire import hookimpl
from turnwire.config.nonce import EnvelopeNonce

from ..conftest import (
    SECRET,
    at,
    render_body,
    thread,
    user,
)

N = EnvelopeNonce(SECRET)


TOOL = {"name": "search", "parameters": {"type": "object", "properties": {}}}


def _output(result, *, tool=TOOL, settings=None, inline=None, extra_plugins=()):
    call = {
        "id": "call_7|fc_42",
        "tool": "search",
        "args": {"q": "x"},
        "created_at": at(1),
        "result": result,
    }
    if inline is not None:
        call["inline"] = inline
    t = thread(tools=[tool] if tool else [], messages=[user()], tool_calls=[call])
    body = render_body(t, settings, extra_plugins=extra_plugins)
    return body["input"][2]["output"]


def test_text_result_in_an_untrusted_envelope_keyed_on_the_call():
    n = N("call_7|fc_42")
    assert _output({"text": "42 results"}) == (
        f'<untrusted_content_{n} nonce="{n}" kind="tool-result" tool="search">\n42 results\n'
        f"</untrusted_content_{n}>"
    )


def test_trusted_tool_uses_the_trusted_envelope():
    out = _output({"text": "ok"}, tool={**TOOL, "trusted": True})
    assert out.startswith("<trusted_content_") and 'kind="trusted-tool-result"' in out


def test_unknown_tool_warns_and_stays_untrusted(caplog):
    with caplog.at_level(logging.WARNING, logger="turnwire"):
        out = _output({"text": "ok"}, tool=None)
    assert out.startswith("<untrusted_content_")
    assert "not declared" in caplog.text


def test_small_artifacts_are_inlined_and_large_ones_become_handles():
    small = _output({"artifact": {"text": "x" * 4096}})
    assert "x" * 4096 in small and 'kind="tool-result"' in small
    large = _output({"artifact": {"text": "x" * 4097}})
    assert 'kind="artifact-handle"' in large and "x" * 100 not in large
    assert "- byteLength: 4097" in large and "callId=call_7|fc_42" in large


def test_the_inline_threshold_is_a_setting_and_flags_win():
    assert 'kind="artifact-handle"' in _output(
        {"artifact": {"text": "abc"}}, settings={"render": {"tool_result_inline_max_bytes": 2}}
    )
    assert "x" * 5000 in _output({"artifact": {"text": "x" * 5000, "inline": True}})
    assert 'kind="artifact-handle"' in _output({"artifact": {"text": "tiny"}}, inline=False)


def test_a_handle_is_untrusted_even_for_a_trusted_tool():
    out = _output({"artifact": {"text": "x", "inline": False}}, tool={**TOOL, "trusted": True})
    assert out.startswith("<untrusted_content_") and 'kind="artifact-handle"' in out


def test_artifact_arrays_share_one_envelope():
    out = _output({"artifacts": [{"text": "one"}, {"text": "two"}]})
    assert out.count("<untrusted_content_") == 1 and "\none\n\ntwo\n" in out


def test_media_results_are_bracketed_by_a_trust_boundary():
    out = _output(
        {
            "media": [
                {"id": "img1", "kind": "image", "mime_type": "image/png", "data_base64": "AAAA"}
            ]
        }
    )
    n = N("call_7|fc_42")
    assert [p["type"] for p in out] == ["input_text", "input_text", "input_image", "input_text"]
    assert out[0]["text"] == (
        f'<untrusted_content_{n} nonce="{n}" kind="tool-result-media" tool="search">'
    )
    assert out[-1]["text"] == f"</untrusted_content_{n}>"


class _BodySwallower:
    @hookimpl
    def render_untrusted_content(self, content, attrs):
        return "[redacted]"


def test_the_boundary_survives_an_envelope_renderer_that_drops_the_body(caplog):
    with caplog.at_level(logging.WARNING, logger="turnwire"):
        out = _output(
            {
                "media": [
                    {"id": "img1", "kind": "image", "mime_type": "image/png", "data_base64": "AAAA"}
                ]
            },
            extra_plugins=[_BodySwallower()],
        )
    assert out[0]["text"].startswith("<untrusted_content_")
    assert out[-1]["text"].startswith("</untrusted_content_")
    assert "dropped the body" in caplog.text


def test_error_results_render_like_text():
    assert "\nTool not found: x\n" in _output({"text": "Tool not found: x"})


def test_nonces_are_keyed_not_the_raw_id_or_the_public_checksum():
    """Reference: tool-result nonce = sha256(tool+args), message tag = the raw id."""
    t = thread(
        messages=[user("u1")],
        tools=[{"name": "s"}],
        tool_calls=[
            {
                "id": "call_1",
                "tool": "s",
                "args": {"q": "x"},
                "created_at": at(1),
                "result": {"text": "r"},
            }
        ],
    )
    body = render_body(t)
    checksum = hashlib.sha256(b'{"args":{"q":"x"},"tool":"s"}').hexdigest()
    text = str(body)
    assert checksum not in text and "<message_u1 " not in text
    assert turnwire.plugin.EnvelopeNonce(SECRET)("call_1") in body["input"][2]["output"]


def test_hook_render_tool_call_result():
    """A plugin renders a call's output, given the call and its declared tool."""

    @hookimpl
    def render_tool_call_result(tool_call, tool):
        return f"{tool.name} answered {tool_call.result.text!r} to {tool_call.id}"

    plugin = SimpleNamespace(render_tool_call_result=render_tool_call_result)
    output = _output({"text": "42 results"}, extra_plugins=[plugin])
    assert output == "search answered '42 results' to call_7|fc_42"
