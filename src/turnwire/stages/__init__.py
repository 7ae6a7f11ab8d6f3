"""The built-in render stages, registered as plain plugins (``trylast``) in this order.

``turnwire.stages.client_hooks`` (the tool-call id filter) is registered with them.
"""

from __future__ import annotations

from types import ModuleType

from turnwire.stages import (
    artifacts,
    client_hooks,
    context,
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
    context,
    fingerprint,
    tools,
    client_hooks,
)
