"""Text helpers for plugin authors: the same escaping the built-in stages use.

``neutralise`` makes a body unable to open or close an envelope or a developer-rules block;
``escape_attr`` escapes an attribute value; ``iso`` prints a timestamp as the envelopes do;
``sanitise_filename`` and ``sanitise_mime`` clean attacker-influenced media metadata;
``envelope`` builds a trust envelope exactly as the built-in envelope stages do;
``retrievable_body`` is what a retrieved record shows (content, inline artifact, or handle).
"""

from turnwire.stages._text import (
    escape_attr,
    format_size,
    iso,
    neutralise,
    sanitise_filename,
    sanitise_mime,
)
from turnwire.stages.envelopes import envelope
from turnwire.stages.retrievables import retrievable_body

__all__ = [
    "envelope",
    "escape_attr",
    "format_size",
    "iso",
    "neutralise",
    "retrievable_body",
    "sanitise_filename",
    "sanitise_mime",
]
