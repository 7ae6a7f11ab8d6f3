"""render_standing_instructions."""

from __future__ import annotations

from turnwire.stages.instructions import render_standing_instructions


def test_standing_instructions_join_non_empty_parts_with_a_blank_line():
    text = render_standing_instructions(standing_instructions=("Be terse.", "", "Cite sources."))
    assert text == (
        '<system_instructions kind="developer-rules">\nBe terse.\n\nCite sources.\n'
        "</system_instructions>"
    )
    assert render_standing_instructions(standing_instructions=("",)) == ""
