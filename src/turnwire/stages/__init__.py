"""The built-in render stages, registered as plain plugins (``trylast``) in this order.

``turnwire.client.hooks`` (the tool-call id filter) is registered with them.
"""

from __future__ import annotations

from types import ModuleType

from turnwire.client import hooks as client_hooks
from turnwire.stages import (
    artifacts,
    envelopes,
    fingerprint,
    hosted,
    instructions,
    media,
    memories,
    reasoning,
    retrievables,
    system_prompt,
    thoughts,
    timeline,
    tool_results,
    tools,
)

__all__ = ["DEFAULT_PLUGINS"]

DEFAULT_PLUGINS: tuple[ModuleType, ...] = (
    envelopes,
    instructions,
    memories,
    retrievables,
    artifacts,
    system_prompt,
    media,
    timeline,
    tool_results,
    reasoning,
    thoughts,
    hosted,
    fingerprint,
    tools,
    client_hooks,
)
