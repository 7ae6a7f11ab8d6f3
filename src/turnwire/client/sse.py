"""Server-sent events over bytes, following the WHATWG event-stream rules.

Lines end with LF, CRLF or CR (a CR at the end of one chunk and an LF at the start of the next
are one line end). ``data:`` lines of one event are joined with LF; ``event:`` sets the type;
``id:`` and ``retry:`` are kept; a line starting with ``:`` is a comment; a field name without a
colon has an empty value; one space after the colon is dropped. A blank line dispatches the
event; an event without data is not dispatched. One UTF-8 byte order mark at the very start of
the stream is dropped (it may arrive split over chunks); an empty chunk changes nothing, not even
a CR waiting for its LF. Unlike the official SDK's decoder, an event still pending at end of
stream (the server sent no final blank line) is dispatched by :meth:`SSEDecoder.close`.

Between events, a chunk with LF line ends only is cut at its LF LF pairs, and the usual block
(``event: NAME`` then ``data: DATA``, or the data line alone) is sliced out without going line
by line; any other block, an event begun in an earlier chunk, and every chunk holding a CR take
the general line-by-line path. :meth:`SSEDecoder.feed_data` returns only each event's data (no
event object per event), for a reader that needs nothing else; :meth:`SSEDecoder.feed_one` takes
a chunk that is exactly one usual event with nothing pending (one event per chunk, as a live
server flushes them) and returns its data alone, no list.

The decoder keeps the pending incomplete line as a list of fragments, so one huge event
arriving in tiny chunks costs linear time. One event (its pending line and its data lines
together) may hold at most ``max_event_bytes``: a server that sends an endless line, or a
compressed stream that inflates into one, is a :class:`~turnwire.errors.StreamError`, never
unbounded memory.
"""

from __future__ import annotations

from typing import Any

from turnwire.errors import StreamError

__all__ = ["SSEDecoder", "ServerSentEvent"]

_BOM = b"\xef\xbb\xbf"
MAX_EVENT_BYTES = 64 * 2**20
"""The largest event the decoder holds (a whole ``response.completed`` fits many times)."""


class ServerSentEvent:
    """One dispatched event. ``data`` is bytes (what the JSON decoder reads); the event name is
    decoded only when asked for."""

    __slots__ = ("_event", "data", "id", "retry")

    def __init__(
        self,
        data: bytes,
        event: str | bytes = "message",
        id: str | None = None,
        retry: int | None = None,
    ) -> None:
        self.data = data
        self._event = event
        self.id = id
        self.retry = retry

    @property
    def event(self) -> str:
        name = self._event
        if isinstance(name, bytes):
            name = self._event = name.decode("utf-8", "replace") or "message"
        return name

    def __repr__(self) -> str:
        return f"ServerSentEvent(event={self.event!r}, data={self.data[:60]!r}...)"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ServerSentEvent):
            return NotImplemented
        return (self.data, self.event, self.id, self.retry) == (
            other.data,
            other.event,
            other.id,
            other.retry,
        )

    __hash__ = None  # type: ignore[assignment]


class SSEDecoder:
    """Incremental decoder: :meth:`feed` chunks, then :meth:`close` at end of stream.

    :meth:`feed_data` and :meth:`close_data` are the same decoder returning only each event's
    ``data`` (what the Responses client reads: the JSON carries its own ``type``), without an
    event object per event. One decoder may mix the two kinds of call.
    """

    __slots__ = (
        "_after_cr",
        "_data",
        "_event",
        "_fragments",
        "_has_data",
        "_head",
        "_held",
        "_id",
        "_idle",
        "_limit",
        "_retry",
        "_wrap",
    )

    def __init__(self, *, max_event_bytes: int = MAX_EVENT_BYTES) -> None:
        self._limit = max_event_bytes
        self._held = 0  # bytes of the pending line and of the pending event's data
        # The stream's first bytes until they are known not to be a byte order mark, then None.
        self._head: bytes | None = b""
        self._fragments: list[bytes] = []  # the pending incomplete line (never holds CR or LF)
        self._after_cr = False
        self._data: list[bytes] = []
        self._has_data = False
        self._event: bytes = b""
        self._id: str | None = None
        self._retry: int | None = None
        self._wrap = False  # True while feed or close runs: dispatch ServerSentEvent objects
        # Between events with nothing pending (no BOM check, CR, line or event under way): a
        # chunk that is one usual event may be sliced at once (see feed_data).
        self._idle = False

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """Decode ``chunk``; return the events it completes."""
        self._wrap = True
        try:
            events: list[Any] = self.feed_data(chunk)
        finally:
            self._wrap = False
        return events

    def feed_data(self, chunk: bytes) -> list[bytes]:
        """Decode ``chunk``; return the ``data`` of each event it completes."""
        if self._idle and not self._wrap:
            data = self.feed_one(chunk)
            if data is not None:
                return [data]
        self._idle = False
        events = self._feed(chunk)
        self._settle()
        return events

    def feed_one(self, chunk: bytes) -> bytes | None:
        """The ``data`` of the one event ``chunk`` holds, when it is exactly one usual block
        (``event: NAME`` and ``data: DATA``, or the data line alone; LF ends) and nothing is
        pending (nor the stream's first bytes, which may start with a byte order mark): one
        event per chunk, as a live server flushes them. The one element :meth:`feed_data` gives
        for it, the state left as it leaves it. ``None`` for any other chunk, which is then not
        taken: give it to :meth:`feed_data`.

        :raises turnwire.errors.StreamError: the event is larger than ``max_event_bytes``.
        """
        if not self._idle:
            return None
        # One split: "NAME", "DATA" and LF for the usual block, "DATA" and two empty parts for
        # the data line alone (fewer steps than searching for each LF: each costs some 50 ns).
        parts = chunk.split(b"\n", 2)
        if len(parts) == 3 and 13 not in chunk:  # 13: a CR
            name, line, tail = parts
            if tail == b"\n":
                data = line[6:] if name[:7] == b"event: " and line[:6] == b"data: " else None
            elif tail or line:
                data = None
            else:
                data = name[6:] if name[:6] == b"data: " else None
            if data is not None:
                if self._held + len(chunk) > self._limit:
                    self._too_large()
                self._held = 0
                return data
        self._idle = False  # feed_data, which is to have the chunk, need not look again
        return None

    def _settle(self) -> None:
        self._idle = (
            self._head is None
            and not self._after_cr
            and not self._fragments
            and not self._has_data
            and not self._event
        )

    def _feed(self, chunk: bytes) -> list[Any]:
        if not chunk:
            return []
        if self._head is not None:
            chunk = self._head + chunk
            if len(chunk) < len(_BOM) and _BOM.startswith(chunk):
                self._head = chunk
                return []
            self._head = None
            if chunk.startswith(_BOM):
                chunk = chunk[len(_BOM) :]
                if not chunk:
                    return []
        if self._after_cr:
            self._after_cr = False
            if chunk[0] == 10:  # the LF of a CRLF split over two chunks
                chunk = chunk[1:]
                if not chunk:
                    return []
        if 13 in chunk:  # a CR (an int is looked up faster than a bytes)
            return self._feed_cr(chunk)
        held = self._held + len(chunk)
        if held > self._limit:
            self._too_large()
        events: list[Any] = []
        if self._fragments or self._has_data or self._event:
            # An event is under way: its lines up to the first blank line go line by line.
            if not self._fragments and chunk[0] == 10:
                self._line(b"", events)
                chunk = chunk[1:]
            else:
                end = chunk.find(b"\n\n")
                if end == -1:
                    self._lines(chunk, events)
                    self._held = held
                    return events
                self._lines(chunk[: end + 2], events)
                chunk = chunk[end + 2 :]
        # The decoder is between events: every block before an LF LF is a whole event. The
        # usual one, "event: NAME" and "data: DATA" (or the data line alone), is sliced out
        # directly; any other block goes line by line.
        blocks = chunk.split(b"\n\n")
        rest = blocks.pop()
        wrap = self._wrap
        for block in blocks:
            lines = block.split(b"\n")
            if len(lines) == 2:
                name, data = lines
                if name[:7] == b"event: " and data[:6] == b"data: ":
                    if wrap:
                        events.append(ServerSentEvent(data[6:], name[7:], self._id, self._retry))
                    else:
                        events.append(data[6:])
                    continue
            elif block[:6] == b"data: " and len(lines) == 1:
                if wrap:
                    events.append(ServerSentEvent(block[6:], b"", self._id, self._retry))
                else:
                    events.append(block[6:])
                continue
            for line in lines:
                self._line(line, events)
            self._line(b"", events)
        if rest:
            self._lines(rest, events)
        if not events:
            self._held = held
        elif self._fragments or self._data:  # held from here on: the pending line and data
            self._held = sum(map(len, self._fragments)) + sum(map(len, self._data))
        else:
            self._held = 0
        return events

    def close(self) -> list[ServerSentEvent]:
        """End of stream: dispatch a pending event that lacked its final blank line."""
        self._wrap = True
        try:
            events: list[Any] = self.close_data()
        finally:
            self._wrap = False
        return events

    def close_data(self) -> list[bytes]:
        """:meth:`close`, returning only the pending event's ``data``."""
        events: list[Any] = []
        self._idle = False
        if self._head:  # a stream of one or two bytes that only looked like a BOM's start
            head, self._head = self._head, None
            events += self._feed(head)
        self._head = None
        if self._fragments:
            line = b"".join(self._fragments)
            self._fragments = []
            self._line(line, events)
        self._after_cr = False
        if self._has_data:
            self._line(b"", events)
        self._settle()
        return events

    def _lines(self, text: bytes, events: list[Any]) -> None:
        """Lines of ``text`` (LF line ends only); an incomplete last line is kept pending."""
        lines = text.split(b"\n")
        rest = lines.pop()
        fragments = self._fragments
        if fragments and lines:
            fragments.append(lines[0])
            lines[0] = b"".join(fragments)
            fragments.clear()
        if rest:
            fragments.append(rest)
        data = self._data
        for line in lines:
            # The lines every Responses event has, handled inline; the rest in _line.
            if line[:6] == b"data: ":
                data.append(line[6:])
                self._has_data = True
            elif line[:7] == b"event: ":
                self._event = line[7:]
            else:
                self._line(line, events)

    def _too_large(self) -> None:
        raise StreamError(
            f"the stream sent an event larger than {self._limit} bytes without ending it; "
            "nothing was recorded"
        )

    def _feed_cr(self, chunk: bytes) -> list[Any]:
        self._held += len(chunk)
        if self._held > self._limit:
            self._too_large()
        text = b"".join([*self._fragments, chunk]) if self._fragments else chunk
        self._fragments = []
        events: list[Any] = []
        start, length = 0, len(text)
        while start < length:
            cr = text.find(b"\r", start)
            lf = text.find(b"\n", start)
            if cr == -1 and lf == -1:
                self._fragments.append(text[start:])
                break
            if cr == -1 or (lf != -1 and lf < cr):
                self._line(text[start:lf], events)
                start = lf + 1
                continue
            self._line(text[start:cr], events)
            if cr + 1 == length:
                self._after_cr = True
                start = length
            elif text[cr + 1 : cr + 2] == b"\n":
                start = cr + 2
            else:
                start = cr + 1
        if events:
            self._held = sum(map(len, self._fragments)) + sum(map(len, self._data))
        return events

    def _line(self, line: bytes, events: list[Any]) -> None:
        if not line:
            if self._has_data:
                data = b"\n".join(self._data)
                if self._wrap:
                    events.append(ServerSentEvent(data, self._event, self._id, self._retry))
                else:
                    events.append(data)
            self._data.clear()
            self._has_data = False
            self._event = b""
            return
        if line[0] == 58:  # ":" comment
            return
        name, colon, value = line.partition(b":")
        if colon and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._data.append(value)
            self._has_data = True
        elif name == b"event":
            self._event = value
        elif name == b"id":
            if b"\0" not in value:
                self._id = value.decode("utf-8", "replace")
        elif name == b"retry" and value.isdigit():
            self._retry = int(value)
