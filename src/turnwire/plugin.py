"""What a plugin author imports: the hook marker, the values stages receive, the text helpers.

A plugin is a module (or object) with ``@hookimpl`` functions named after the stages of
:mod:`turnwire.hookspecs`, registered under the entry point group ``turnwire.plugins``::

    from turnwire.plugin import hookimpl, neutralise

    @hookimpl
    def render_memories(memories, stages):
        ...

Everything here is also importable from where it lives; this module only gathers it.
"""

from turnwire.config.nonce import EnvelopeNonce
from turnwire.config.options import EnvelopeAttrs, HandleInfo, MediaPolicy, RenderOptions
from turnwire.hookspecs import hookimpl, hookspec
from turnwire.rendering.relay import HOOK, StagePlan, StageRelay
from turnwire.text import (
    envelope,
    escape_attr,
    format_size,
    iso,
    neutralise,
    retrievable_body,
    sanitise_filename,
    sanitise_mime,
)

__all__ = [
    "HOOK",
    "EnvelopeAttrs",
    "EnvelopeNonce",
    "HandleInfo",
    "MediaPolicy",
    "RenderOptions",
    "StagePlan",
    "StageRelay",
    "envelope",
    "escape_attr",
    "format_size",
    "hookimpl",
    "hookspec",
    "iso",
    "neutralise",
    "retrievable_body",
    "sanitise_filename",
    "sanitise_mime",
]
