"""render_system_prompt."""

from __future__ import annotations

from types import SimpleNamespace

from turnwire import hookimpl

from ..conftest import render_body, thread, user


def test_prompt_then_leading_buckets_in_configured_order():
    t = thread(
        system_prompt="SYS",
        standing_instructions=["Rule."],
        memories=[{"id": "m1", "content": "tea"}],
        messages=[user()],
    )
    text = render_body(
        t, {"render": {"bucket_order": ["memories", "standing_instructions", "timeline"]}}
    )["instructions"]
    assert text.startswith("SYS\n\n<memories>")
    assert text.index("<memories>") < text.index("<system_instructions")


def test_empty_parts_are_skipped():
    t = thread(memories=[{"id": "m1", "content": "tea"}], messages=[user()])
    assert render_body(t)["instructions"].startswith("<memories>")


def test_hook_render_system_prompt():
    """A plugin writes the request's instructions, given the thread's system prompt."""

    @hookimpl
    def render_system_prompt(system_prompt):
        return f"SYSTEM: {system_prompt.upper()}"

    plugin = SimpleNamespace(render_system_prompt=render_system_prompt)
    body = render_body(thread(system_prompt="be kind", messages=[user()]), extra_plugins=[plugin])
    assert body["instructions"] == "SYSTEM: BE KIND"
