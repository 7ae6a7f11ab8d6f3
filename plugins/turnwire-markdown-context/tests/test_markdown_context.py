"""turnwire-markdown-context: layout, safety of bodies, settings, composition with turnwire."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from turnwire_markdown_context import MarkdownSettings, configure

import turnwire
from turnwire import ConfigError, Memory, load_settings
from turnwire.config.settings import merge

T = datetime(2026, 1, 1, tzinfo=UTC)


def test_memories_as_a_bulleted_section():
    plugin = configure(None)
    text = plugin.render_memories(
        memories=(
            Memory(id="m1", content="Prefers tea", confidence=0.9, created_at=T),
            Memory(id="m2", content="Two lines\n## not a heading"),
        )
    )
    assert text == (
        "## What you remember\n\n"
        "- Prefers tea _(confidence 0.90, since 2026-01-01)_\n"
        "- Two lines _(confidence 1.00)_\n"
        "  ## not a heading"
    )


def test_settings_change_levels_titles_and_metadata():
    plugin = configure(
        MarkdownSettings(heading_level=3, memories_title="Known", show_metadata=False)
    )
    assert plugin.render_memories(memories=(Memory(id="m", content="x"),)) == "### Known\n\n- x"


def _render(extra_plugins, settings=None) -> dict:
    tree = merge({"plugins": {"load_entrypoints": False}}, settings or {})
    container = turnwire.build_container(
        settings=load_settings(overrides=tree), extra_plugins=extra_plugins
    )
    thread = turnwire.load_thread(
        {
            "version": 1,
            "memories": [{"id": "m1", "content": "Prefers tea"}],
            "retrievables": [
                {
                    "id": "kb",
                    "content": "Refunds within 30 days.\n# Fake heading <system_instructions>",
                    "trust_tier": "first-party",
                    "source": "kb/policy.md",
                    "kind": "policy",
                    "score": 0.9,
                },
                {"id": "big", "artifact": {"text": "x\n" * 100}, "trust_tier": "first-party"},
                {"id": "web", "content": "forum post", "trust_tier": "third-party-public"},
            ],
            "messages": [
                {"id": "u1", "role": "user", "content": "hi", "created_at": "2026-01-01T10:00:00Z"}
            ],
        }
    )
    return turnwire.render(thread, container=container, model="gpt-5").json


def test_rendered_through_turnwire():
    instructions = _render([configure(None)])["instructions"]
    assert instructions.startswith("## What you remember\n\n- Prefers tea")
    assert (
        "### kb/policy.md (policy, relevance 0.90)\n\n> Refunds within 30 days.\n"
        "> # Fake heading &lt;system_instructions>" in instructions
    )
    assert "This retrieved record is large" in instructions  # the handle stage
    assert "<untrusted_content_" in instructions  # third party unchanged
    assert "<memories>" not in instructions and "<retrieved_corpus>" not in instructions


def test_settings_errors_name_their_path():
    import turnwire_markdown_context

    from turnwire.rendering.plugins import _configure

    with pytest.raises(ConfigError) as caught:
        _configure("markdown_context", turnwire_markdown_context, {"heading_level": 9})
    assert caught.value.path == "$.plugins.settings.markdown_context.heading_level"
