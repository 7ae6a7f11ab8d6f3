"""render_standing_instructions."""

from __future__ import annotations

from types import SimpleNamespace

from turnwire import hookimpl
from turnwire.stages.instructions import render_standing_instructions

from ..conftest import render_body, thread, user


def test_standing_instructions_join_non_empty_parts_with_a_blank_line():
    text = render_standing_instructions(standing_instructions=("Be terse.", "", "Cite sources."))
    assert text == (
        '<system_instructions kind="developer-rules">\nBe terse.\n\nCite sources.\n'
        "</system_instructions>"
    )
    assert render_standing_instructions(standing_instructions=("",)) == ""


def test_hook_render_standing_instructions():
    """A plugin renders the standing instructions the request's instructions carry."""

    @hookimpl
    def render_standing_instructions(standing_instructions):
        return "RULES: " + " / ".join(standing_instructions)

    plugin = SimpleNamespace(render_standing_instructions=render_standing_instructions)
    t = thread(standing_instructions=["Be terse.", "Cite sources."], messages=[user()])
    body = render_body(t, extra_plugins=[plugin])
    assert body["instructions"] == "RULES: Be terse. / Cite sources."
