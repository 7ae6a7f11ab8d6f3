"""Text primitives shared by the built-in stages: escaping, neutralising, sanitising."""

from __future__ import annotations

import bisect
import re
from datetime import UTC, datetime, timedelta, timezone

from turnwire.model.canonical import js_number

__all__ = [
    "TRUST_RANK",
    "attr",
    "escape_attr",
    "format_size",
    "iso",
    "neutralise",
    "safe_tag",
    "sanitise_filename",
    "sanitise_mime",
    "trust_floor",
]

_ATTR_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"})
# A `<` that opens or closes developer rules, a turnwire envelope (name_<16 hex>) or a block
# wrapper. Bodies may mention such tags; they may not produce them. Matched on the folded text
# (see `_fold`), so every spelling a case mapping turns into one of these counts as one.
_FORGEABLE = re.compile(
    r"<(?=/?(?:system_instructions|memories|retrieved_corpus|[a-z_]+_[0-9a-f]{16}\b))"
)
_LESS_THAN = re.compile("<")
_TAG_SAFE = re.compile(r"[A-Za-z0-9_-]+")
_MIME = re.compile(r"[A-Za-z0-9_.+-]+/[A-Za-z0-9_.+-]+")
_FILENAME_STRIP = re.compile("[<>\x00-\x1f\x7f-\x9f]")

_NUMBERS = (float, int)

TRUST_RANK = {"first-party": 0, "third-party-public": 1, "third-party-private": 2}


def escape_attr(value: str) -> str:
    """Escape an attribute value (``& < > "``)."""
    # Most values (roles, tool names, kinds) hold none of the four: four fast scans, no copy.
    if type(value) is str and not ("&" in value or "<" in value or ">" in value or '"' in value):
        return value
    return value.translate(_ATTR_ESCAPES)


def attr(name: str, value: object) -> str:
    """`` name="value"`` with the value escaped; numbers print as JavaScript prints them."""
    if type(value) is str:
        return f' {name}="{escape_attr(value)}"'
    if isinstance(value, _NUMBERS) and not isinstance(value, bool):
        return f' {name}="{js_number(value)}"'
    return f' {name}="{escape_attr(str(value))}"'


def safe_tag(name: str) -> str:
    """A tag-name-safe version of ``name`` (anything outside ``[A-Za-z0-9_-]`` becomes ``_``)."""
    if (name.isascii() and name.isalnum()) or _TAG_SAFE.fullmatch(name):
        return name
    return re.sub(r"[^A-Za-z0-9_-]", "_", name) or "_"


def _fold(text: str) -> str:
    """A case-insensitive key: two texts equal under ``lower``, ``upper``, ``casefold`` or
    ``title`` have equal keys. It works code point by code point (``İ``, ``ß`` or ``ﬃ`` become
    two or three), and only ``<`` folds to a text containing ``<``."""
    return text.casefold().upper().casefold()


def _forged(body: str, tag: str | None) -> list[int]:
    """Indices of the ``<`` in ``body`` that start a forbidden tag once folded."""
    folded = _fold(body)
    hits = [match.start() for match in _FORGEABLE.finditer(folded)]
    if tag is not None:
        closer = _fold("</" + tag)
        index = folded.find(closer)
        while index != -1:
            hits.append(index)
            index = folded.find(closer, index + 1)
    if not hits or len(folded) == len(body):  # every character folded to one: same offsets
        return hits
    # Some character folded to several. Every hit starts at a `<`, and `<` is the only character
    # whose fold holds a `<` (it folds to itself), so the n-th `<` of the folded text is the
    # n-th `<` of the body.
    in_body = [match.start() for match in _LESS_THAN.finditer(body)]
    in_folded = [match.start() for match in _LESS_THAN.finditer(folded)]
    return [in_body[bisect.bisect_left(in_folded, hit)] for hit in hits]


def neutralise(body: str, tag: str | None = None) -> str:
    """Make ``body`` unable to open or close an envelope or a developer-rules block.

    Every ``<`` that starts such a tag becomes ``&lt;``; so does any ``</tag`` of the
    enclosing envelope ``tag``, whatever its shape. Tags are matched case-insensitively under
    every Unicode case mapping (``</İ...``, ``<syﬆem_instructions``), on the original text, so
    characters whose case mapping is longer cannot shift a replacement; text that holds no
    such tag is returned unchanged.
    """
    while "<" in body:
        hits = _forged(body, tag)
        if not hits:
            break
        pieces: list[str] = []
        start = 0
        for index in sorted(set(hits)):
            pieces.append(body[start:index])
            pieces.append("&lt;")
            start = index + 1
        pieces.append(body[start:])
        body = "".join(pieces)
        # A replacement can complete a new tag only when the tag's name holds `&` (`&lt;`).
        if tag is None or "&" not in tag:
            break
    return body


def sanitise_mime(mime: str) -> str:
    """Keep a strict ``type/subtype``; anything else becomes ``application/octet-stream``."""
    return mime if _MIME.fullmatch(mime) else "application/octet-stream"


def sanitise_filename(name: str) -> str:
    """Drop ``<``, ``>`` and control characters; cap at 256 characters."""
    cleaned = _FILENAME_STRIP.sub("", name)
    return cleaned if len(cleaned) <= 256 else cleaned[:256] + "…"


def iso(moment: datetime) -> str:
    """ISO 8601 with milliseconds and the value's own offset (``Z`` for UTC)."""
    zone = moment.tzinfo
    if type(moment) is datetime and (zone is UTC or zone is None or type(zone) is timezone):
        # The common case, several times faster than ``isoformat(timespec=...)``: a datetime,
        # naive or at a fixed offset. The date's text and the offset's are looked up (a thread
        # spans few days and offsets), the time of day is put together from fixed-width digits.
        day = moment.toordinal()
        date = _DATES.get(day)
        if date is None:
            date = moment.date().isoformat()
            if len(_DATES) < _MEMO_LIMIT:
                _DATES[day] = date
        suffix = "Z" if zone is UTC or zone is None else _offset_text(moment)
        return (
            f"{date}T{_TWO_DIGITS[moment.hour]}:{_TWO_DIGITS[moment.minute]}:"
            f"{_TWO_DIGITS[moment.second]}.{_THREE_DIGITS[moment.microsecond // 1000]}{suffix}"
        )
    return _iso(moment)


_TWO_DIGITS = tuple(f"{number:02d}" for number in range(60))
_THREE_DIGITS = tuple(f"{number:03d}" for number in range(1000))
_MEMO_LIMIT = 4096
_DATES: dict[int, str] = {}  # proleptic ordinal -> "YYYY-MM-DD"
_OFFSETS: dict[timezone, str] = {}  # a fixed offset -> "Z", "+05:30", "-00:00:30" ...


def _offset_text(moment: datetime) -> str:
    """What :func:`iso` prints after the milliseconds of ``moment``, a fixed-offset datetime."""
    zone = moment.tzinfo
    assert isinstance(zone, timezone)
    suffix = _OFFSETS.get(zone)
    if suffix is None:
        suffix = _iso(moment)[23:]  # what follows ``YYYY-MM-DDTHH:MM:SS.mmm``
        if len(_OFFSETS) < _MEMO_LIMIT:
            _OFFSETS[zone] = suffix
    return suffix


def _iso(moment: datetime) -> str:
    """:func:`iso` for any datetime (a subclass, a zone with rules): through ``isoformat``."""
    text = moment.isoformat(timespec="milliseconds")
    if text.endswith("+00:00"):
        return text[:-6] + "Z"
    offset = moment.utcoffset()
    if offset is None:
        return text + "Z"
    if offset == timedelta(0):  # pragma: no cover - isoformat prints +00:00 for it
        return text[:-6] + "Z"
    return text


def trust_floor(first: str, second: str) -> str:
    """The less trusted of two tiers (unknown tiers count as third-party-private)."""
    return first if TRUST_RANK.get(first, 2) >= TRUST_RANK.get(second, 2) else second


def format_size(size: int | None) -> str:
    """``N B`` below 1 KiB, else one decimal in KB, MB or GB (base 1024)."""
    if size is None:
        return "unknown size"
    if size < 1024:
        return f"{size} B"
    value = float(size)
    for unit in ("KB", "MB", "GB"):
        value /= 1024
        if value < 1024 or unit == "GB":
            return f"{value:.1f} {unit}"
    raise AssertionError("unreachable")  # pragma: no cover
