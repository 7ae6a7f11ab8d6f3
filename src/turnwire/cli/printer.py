"""Everything the command line writes goes out through this module.

A thread's text and a server's answer are data (see docs/security.md). Printed as they
came, an escape sequence in them would drive the terminal that shows them: a window title, a
cleared screen, OSC 52's write to the clipboard. So the other modules of :mod:`turnwire.cli`
never call ``print`` or write to a stream themselves:

- :func:`echo` writes text. It keeps line breaks and tabs and leaves out every other control
  character, C0 and C1. Thread contents, transcripts, tool results, answers, warnings, log
  records and the ``error: CODE: message`` line all go through it.
- :func:`plain` makes one value fit in one field of a line (no breaks, nothing that reorders
  or hides text); the line is then written with :func:`echo`.
- :func:`echo_json` writes JSON as it was encoded: JSON escapes the C0 controls (ESC among
  them, though not the C1 ones), and ``render`` must print the exact bytes ``run`` sends.
- :class:`Progress` shows ``run``'s progress. It writes its own dimming codes and passes the
  text it shows through the same filter as :func:`echo`.
"""

from __future__ import annotations

import logging
import re
import sys
from typing import IO, Any

__all__ = ["LogHandler", "Progress", "echo", "echo_json", "plain", "shown"]


# C0 and C1 controls but line feed and tab: what starts a terminal escape sequence (a window
# title, a cleared screen, OSC 52's clipboard write) or moves the cursor.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")

# Control (Cc: escape sequences, breaks), format (Cf: bidi overrides and isolates, zero-width
# characters), line and paragraph separators (Zl, Zp) and lone surrogates (Cs).
_UNSAFE = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})


def _terminal_text(text: str) -> str:
    """``text`` with line breaks and tabs kept and every other control character left out (a
    stored record keeps the text as it came)."""
    return text if text.isprintable() else _CONTROLS.sub("", text)


def echo(
    text: str = "", *, file: IO[str] | None = None, end: str = "\n", flush: bool = False
) -> None:
    """Write ``text`` and ``end`` to ``file`` (stdout by default), safe for a terminal: the one
    way the command line writes text it did not write itself."""
    stream = sys.stdout if file is None else file
    stream.write(_terminal_text(text) + end)
    if flush:
        stream.flush()


def echo_json(encoded: str | bytes, *, flush: bool = False, exact: bool = False) -> None:
    """One JSON document on stdout, and a line break.

    JSON escapes the C0 controls; DEL and the C1 controls (U+0080 to U+009F: CSI, DCS, OSC,
    ST) it leaves as they are, so they are written as ``\\u00XX`` escapes here: the same JSON
    value, nothing a terminal acts on. ``exact``: the bytes as given (``turnwire render``
    prints the very body ``run`` sends).
    """
    if isinstance(encoded, str):
        text = encoded if exact else _C1_TEXT.sub(_escaped_text, encoded)
        print(text, flush=flush)
        return
    data = encoded if exact else _C1_UTF8.sub(_escaped_utf8, encoded)
    sys.stdout.flush()  # what went through the text layer goes first
    sys.stdout.buffer.write(data + b"\n")
    if flush:
        sys.stdout.flush()


# DEL and C1 in JSON text: only ever inside strings (JSON's own syntax is printable ASCII).
_C1_TEXT = re.compile("[\x7f-\x9f]")
_C1_UTF8 = re.compile(b"\x7f|\xc2[\x80-\x9f]")


def _escaped_text(match: re.Match[str]) -> str:
    return f"\\u{ord(match[0]):04x}"


def _escaped_utf8(match: re.Match[bytes]) -> bytes:
    return b"\\u%04x" % ord(match[0].decode())


def plain(value: object) -> str:
    """A value from the server or a thread as one terminal-safe line: no escape sequences, no
    breaks, nothing that reorders or hides text (each run of such characters is one space)."""
    from unicodedata import category

    out: list[str] = []
    unsafe = False
    for char in str(value):
        if char.isprintable() or category(char) not in _UNSAFE:
            out.append(char)
            unsafe = False
        elif not unsafe:
            out.append(" ")
            unsafe = True
    return "".join(out).strip()


def shown(value: object, limit: int = 400) -> str:
    """``value`` for one terminal line (:func:`plain`), cut at ``limit``."""
    clean = plain(value)
    return clean if len(clean) <= limit else clean[:limit] + "..."


class LogHandler(logging.Handler):
    """Log records on stderr, through :func:`echo`: a record may quote a server's error body."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            echo(self.format(record), file=sys.stderr, flush=True)
        except Exception:
            self.handleError(record)


class Progress:
    """``turnwire run``'s progress on stderr: reasoning summaries as they stream (dimmed on a
    terminal, else each line prefixed ``[reasoning] ``) and each tool call as it starts. (A
    request that does not extend the one before it is the ``prefix-reset`` warning, which
    ``turnwire run`` shows at its default verbosity.)"""

    DIM, RESET, PREFIX = "\x1b[2m", "\x1b[0m", "[reasoning] "

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self._open: tuple[int, int] | None = None

    def end_line(self) -> None:
        if self._open is not None:
            self.stream.write((self.RESET if self.tty else "") + "\n")
            self.stream.flush()
            self._open = None

    def __call__(self, event: Any) -> None:
        from turnwire.client.progress import (
            ReasoningSummaryDeltaEvent,
            ToolSearchEvent,
            ToolStartedEvent,
        )

        if isinstance(event, ReasoningSummaryDeltaEvent):
            key = (event.output_index, event.summary_index)
            if key != self._open:
                self.end_line()
                self.stream.write(self.DIM if self.tty else self.PREFIX)
                self._open = key
            text = _terminal_text(event.delta)
            delta = text if self.tty else text.replace("\n", "\n" + self.PREFIX)
            self.stream.write(delta)
            self.stream.flush()
        elif isinstance(event, ToolStartedEvent):
            self.end_line()
            echo(f"[tool {plain(event.call.tool)} started]", file=self.stream, flush=True)
        elif isinstance(event, ToolSearchEvent):
            self.end_line()
            loaded = ", ".join(event.loaded) or "nothing"
            echo(f"[tool search: loaded {plain(loaded)}]", file=self.stream, flush=True)
        elif self._open is not None and not type(event).__name__.startswith("Reasoning"):
            self.end_line()
