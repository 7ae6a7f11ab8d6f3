"""The fast paths of the stages' text helpers print exactly what the general formatting prints.

``escape_attr`` returns a value holding nothing to escape as it is. Each is checked against the
formatting it replaced, written out here.
"""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from turnwire._canonical import js_number
from turnwire.stages._text import attr, escape_attr


def reference_escape(value: str) -> str:
    return value.translate(str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}))


def reference_attr(name: str, value: object) -> str:
    if isinstance(value, float | int) and not isinstance(value, bool):
        return f' {name}="{js_number(value)}"'
    return f' {name}="{reference_escape(str(value))}"'


@given(st.text())
@example("")
@example('&<>"')
@example("plain")
def test_escape_attr_returns_what_the_full_escape_returns(value):
    assert escape_attr(value) == reference_escape(value)


def test_escape_attr_of_a_str_subclass_is_a_plain_str():
    class Shout(str):
        pass

    escaped = escape_attr(Shout("calm"))
    assert escaped == "calm"
    assert type(escaped) is str


@given(
    st.text(min_size=1, max_size=10),
    st.one_of(
        st.text(),
        st.integers(),
        st.floats(allow_nan=False, allow_infinity=False),
        st.booleans(),
        st.none(),
    ),
)
def test_attr_formats_what_it_formatted(name, value):
    assert attr(name, value) == reference_attr(name, value)
