"""``turnwire.stages._text``: the fast paths of the stages' text helpers print exactly what the
general formatting prints.

``iso`` builds the common datetimes (plain, naive or at a fixed offset) from memoised date and
offset texts and fixed-width digits; ``escape_attr`` returns a value holding nothing to escape
as it is. Each is checked against the general formatting, written out here.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo

from hypothesis import example, given
from hypothesis import strategies as st

from turnwire.model.canonical import js_number
from turnwire.stages._text import attr, escape_attr, iso


def reference_iso(moment: datetime) -> str:
    """The formatting ``iso`` had before its fast path."""
    text = moment.isoformat(timespec="milliseconds")
    if text.endswith("+00:00"):
        return text[:-6] + "Z"
    offset = moment.utcoffset()
    if offset is None:
        return text + "Z"
    if offset == timedelta(0):
        return text[:-6] + "Z"
    return text


def reference_escape(value: str) -> str:
    return value.translate(str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}))


def reference_attr(name: str, value: object) -> str:
    if isinstance(value, float | int) and not isinstance(value, bool):
        return f' {name}="{js_number(value)}"'
    return f' {name}="{reference_escape(str(value))}"'


class Moment(datetime):
    """A datetime subclass that prints its own ISO text (the fast path must not apply)."""

    def isoformat(self, sep: str = "T", timespec: str = "auto") -> str:
        return "moment:" + super().isoformat(sep, timespec)


OFFSETS: list[tzinfo | None] = [
    None,
    UTC,
    timezone(timedelta(0)),
    timezone(timedelta(0), "named UTC"),
    timezone(timedelta(hours=5, minutes=30)),
    timezone(timedelta(hours=-8)),
    timezone(timedelta(hours=14)),
    timezone(-timedelta(hours=23, minutes=59)),
    timezone(timedelta(seconds=30)),
    timezone(-timedelta(seconds=30)),
    timezone(timedelta(hours=1, microseconds=250)),
    ZoneInfo("Europe/Berlin"),
    ZoneInfo("America/St_Johns"),
    ZoneInfo("UTC"),
]
zones = st.one_of(
    st.sampled_from(OFFSETS),
    st.timedeltas(min_value=-timedelta(hours=23, minutes=59), max_value=timedelta(hours=23)).map(
        timezone
    ),
)
moments = st.builds(
    lambda moment, zone, whole, fold: moment.replace(
        tzinfo=zone, microsecond=0 if whole else moment.microsecond, fold=fold
    ),
    st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)),
    zones,
    st.booleans(),
    st.integers(0, 1),
)


@given(moments)
@example(datetime(2026, 1, 1, tzinfo=UTC))
@example(datetime(2026, 1, 1, 23, 59, 59, 999999, tzinfo=UTC))
@example(datetime(1, 1, 2, 0, 0, 0, 999, tzinfo=timezone(timedelta(hours=-5))))
@example(datetime(9999, 12, 30, 12, 0, 0, 1000))
def test_iso_prints_what_isoformat_prints(moment):
    assert iso(moment) == reference_iso(moment)
    assert iso(moment) == reference_iso(moment)  # again, from the memoised date and offset


@given(moments)
def test_iso_of_a_datetime_subclass_goes_through_its_own_isoformat(moment):
    own = Moment.combine(moment.date(), moment.timetz(), tzinfo=moment.tzinfo)
    assert iso(own) == reference_iso(own)
    assert iso(own).startswith("moment:")


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
