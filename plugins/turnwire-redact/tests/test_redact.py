"""turnwire-redact: what is redacted, what is left alone, and its settings."""

from __future__ import annotations

import pytest
from turnwire_redact import RedactSettings, configure, redact
from turnwire_redact import compile_rules as rules_for

import turnwire
from turnwire import ConfigError, load_settings
from turnwire.config.settings import merge
from turnwire.plugin import EnvelopeAttrs

ATTRS = EnvelopeAttrs(nonce="0123456789abcdef", kind="tool-result", tool="search")


def scrub(text: str, **settings: object) -> str:
    chosen = RedactSettings(**settings)  # type: ignore[arg-type]
    return redact(text, rules_for(chosen), chosen.replacement)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("mail jane.doe+x@mail.example.co.uk now", "email"),
        ("call +33 1 23 45 67 89 today", "phone"),
        ("call (415) 555-0134 today", "phone"),
        ("key sk-proj-AbCdEfGhIjKlMnOpQrSt in env", "secret"),
        ("aws AKIAIOSFODNN7EXAMPLE", "secret"),
        ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.abc", "secret"),
        ("api_key=abcdef123456", "secret"),
        ("password: hunter2hunter2", "secret"),
        ("token ghp_abcdefghijklmnopqrstuvwxyz0123456789", "secret"),
    ],
)
def test_each_kind_is_replaced(text, kind):
    out = scrub(text)
    assert f"[redacted {kind}]" in out


@pytest.mark.parametrize(
    "text",
    [
        "order 1234 shipped 2026-01-01T10:00:00.000Z",
        "version 3.11.7 and nonce 0123456789abcdef",
        "total 12.50 EUR",
    ],
)
def test_ordinary_text_is_left_alone(text):
    assert scrub(text) == text


def test_kinds_can_be_switched_off_and_patterns_added():
    text = "ring +33 1 23 45 67 89 about ORD-123456"
    out = scrub(text, phones=False, patterns=(r"\bORD-\d{6}\b",), replacement="<{kind}>")
    assert out == "ring +33 1 23 45 67 89 about <custom>"


def test_a_bad_pattern_is_a_settings_error():
    with pytest.raises(ValueError, match="patterns\\[0\\]"):
        RedactSettings(patterns=("(",))


def test_the_envelope_is_turnwires_own_with_the_body_scrubbed():
    plugin = configure(None)
    text = plugin.render_untrusted_content(content="write to a@b.io", attrs=ATTRS)
    assert text == (
        '<untrusted_content_0123456789abcdef nonce="0123456789abcdef" '
        'kind="tool-result" tool="search">\nwrite to [redacted email]\n'
        "</untrusted_content_0123456789abcdef>"
    )


def _render(settings: dict, plugin) -> dict:
    tree = merge({"plugins": {"load_entrypoints": False}}, settings)
    container = turnwire.build_container(
        settings=load_settings(overrides=tree), extra_plugins=[plugin]
    )
    thread = turnwire.load_thread(
        {
            "version": 1,
            "tools": [{"name": "crm"}, {"name": "vault", "trusted": True}],
            "messages": [
                {
                    "id": "u1",
                    "role": "user",
                    "content": "my mail is me@home.org",
                    "created_at": "2026-01-01T10:00:00Z",
                }
            ],
            "retrievables": [
                {
                    "id": "w1",
                    "trust_tier": "third-party-public",
                    "content": "contact sales@corp.com",
                }
            ],
            "tool_calls": [
                {
                    "id": "c1",
                    "tool": "crm",
                    "created_at": "2026-01-01T10:00:01Z",
                    "result": {"text": "owner: bob@corp.com, +1 415 555 0134"},
                },
                {
                    "id": "c2",
                    "tool": "vault",
                    "created_at": "2026-01-01T10:00:02Z",
                    "result": {"text": "trusted: alice@corp.com"},
                },
            ],
        }
    )
    return turnwire.render(thread, container=container, model="gpt-5").json


def test_rendered_untrusted_content_is_scrubbed_and_the_rest_is_not():
    body = _render({}, configure(None))
    untrusted = body["input"][2]["output"]
    assert "bob@corp.com" not in untrusted and "[redacted email]" in untrusted
    assert "[redacted phone]" in untrusted
    assert "sales@corp.com" not in body["instructions"]
    assert "alice@corp.com" in body["input"][4]["output"]  # trusted tool
    assert "me@home.org" in body["input"][0]["content"][0]["text"]  # the user's own words


def test_settings_are_validated_at_load_time_with_their_path():
    with pytest.raises(ConfigError) as caught:
        import turnwire_redact

        from turnwire.rendering.plugins import _configure

        _configure("redact", turnwire_redact, {"phones": "no"})
    assert caught.value.path == "$.plugins.settings.redact.phones"
