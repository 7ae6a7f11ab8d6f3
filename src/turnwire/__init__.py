"""turnwire: stored agent conversations → exact, stateless OpenAI Responses API requests.

Every rendering step is a pluggy stage (see :mod:`turnwire.hookspecs`); a dependency-injector
container built from YAML wires them (:func:`build_container`). :func:`render` gives the exact
body, :func:`run` sends it and runs the tool loop (:func:`tool`: a typed Python function as a tool),
:class:`Client` does both for long-lived callers, and :class:`SQLiteStore` keeps threads
between turns.

The names below load on first use, so ``import turnwire`` (and ``turnwire --version``) stays
fast; type checkers see ordinary imports. Everything else lives in its module: the stages'
argument types and text helpers in :mod:`turnwire.plugin`, every error in :mod:`turnwire.errors`,
the wire shapes in :mod:`turnwire.wire`.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from turnwire.api import compact, compact_thread, run, run_thread
    from turnwire.client.dispatch import Client, RunResult
    from turnwire.config.settings import Settings, load_settings
    from turnwire.errors import (
        ClientError,
        ConfigError,
        HttpError,
        InputError,
        OutputValidationError,
        PreflightError,
        RenderError,
        StoreConflictError,
        StoreError,
        StreamError,
        ThreadFileError,
        TurnwireError,
        UnknownThreadError,
    )
    from turnwire.files.thread_file import dump_thread, load_thread, save_thread
    from turnwire.hookspecs import hookimpl
    from turnwire.model.approvals import Approval
    from turnwire.model.checks import check_thread
    from turnwire.model.functions import ToolFunction, client_tool, custom_tool, tool
    from turnwire.model.records import (
        Artifact,
        Identity,
        Media,
        Memory,
        Message,
        ReasoningPayload,
        Retrievable,
        Thought,
        Thread,
        Tool,
        ToolCall,
        ToolResult,
    )
    from turnwire.model.structured import OutputSchema
    from turnwire.model.usage import Usage
    from turnwire.rendering.container import Container, build_container
    from turnwire.rendering.container_cache import ContainerCache
    from turnwire.rendering.renderer import RenderedRequest, Renderer, render
    from turnwire.store import ThreadStore, open_store
    from turnwire.store.postgres import PostgresStore
    from turnwire.store.sqlite import SQLiteStore

__version__ = "0.1.0"

# A library logs to "turnwire" and leaves the handlers to the application.
logging.getLogger("turnwire").addHandler(logging.NullHandler())

_EXPORTS: dict[str, str] = {
    "Approval": "turnwire.model.approvals",
    "Artifact": "turnwire.model.records",
    "Client": "turnwire.client.dispatch",
    "ClientError": "turnwire.errors",
    "ConfigError": "turnwire.errors",
    "Container": "turnwire.rendering.container",
    "ContainerCache": "turnwire.rendering.container_cache",
    "HttpError": "turnwire.errors",
    "Identity": "turnwire.model.records",
    "InputError": "turnwire.errors",
    "Media": "turnwire.model.records",
    "Memory": "turnwire.model.records",
    "Message": "turnwire.model.records",
    "OutputSchema": "turnwire.model.structured",
    "OutputValidationError": "turnwire.errors",
    "PostgresStore": "turnwire.store.postgres",
    "PreflightError": "turnwire.errors",
    "ReasoningPayload": "turnwire.model.records",
    "RenderError": "turnwire.errors",
    "RenderedRequest": "turnwire.rendering.renderer",
    "Renderer": "turnwire.rendering.renderer",
    "Retrievable": "turnwire.model.records",
    "RunResult": "turnwire.client.dispatch",
    "SQLiteStore": "turnwire.store.sqlite",
    "Settings": "turnwire.config.settings",
    "StoreConflictError": "turnwire.errors",
    "StoreError": "turnwire.errors",
    "StreamError": "turnwire.errors",
    "Thought": "turnwire.model.records",
    "Thread": "turnwire.model.records",
    "ThreadFileError": "turnwire.errors",
    "ThreadStore": "turnwire.store",
    "Tool": "turnwire.model.records",
    "ToolCall": "turnwire.model.records",
    "ToolFunction": "turnwire.model.functions",
    "ToolResult": "turnwire.model.records",
    "TurnwireError": "turnwire.errors",
    "UnknownThreadError": "turnwire.errors",
    "Usage": "turnwire.model.usage",
    "build_container": "turnwire.rendering.container",
    "check_thread": "turnwire.model.checks",
    "client_tool": "turnwire.model.functions",
    "compact": "turnwire.api",
    "compact_thread": "turnwire.api",
    "custom_tool": "turnwire.model.functions",
    "dump_thread": "turnwire.files.thread_file",
    "hookimpl": "turnwire.hookspecs",
    "load_settings": "turnwire.config.settings",
    "load_thread": "turnwire.files.thread_file",
    "open_store": "turnwire.store",
    "render": "turnwire.rendering.renderer",
    "run": "turnwire.api",
    "run_thread": "turnwire.api",
    "save_thread": "turnwire.files.thread_file",
    "tool": "turnwire.model.functions",
}

# Names this package exported before its public surface was pinned: still importable from
# here for one version, with a DeprecationWarning naming where they live.
_MOVED: dict[str, str] = {
    "AnswerTooLargeError": "turnwire.errors",
    "ApprovalNotPendingError": "turnwire.errors",
    "CompactResult": "turnwire.rendering.compaction",
    "ContextAssembler": "turnwire.files.pointers",
    "ContextOverflowError": "turnwire.errors",
    "EnvelopeAttrs": "turnwire.plugin",
    "EnvelopeNonce": "turnwire.plugin",
    "FileNotAllowedError": "turnwire.errors",
    "GenerationStats": "turnwire.model.usage",
    "HOOK": "turnwire.plugin",
    "HandleInfo": "turnwire.plugin",
    "HandlerNotAllowedError": "turnwire.errors",
    "InvalidToolCallArgs": "turnwire.errors",
    "McpServerNotAllowedError": "turnwire.errors",
    "MediaPolicy": "turnwire.plugin",
    "MissingApiKeyError": "turnwire.errors",
    "OutputSchemaError": "turnwire.errors",
    "PluginError": "turnwire.errors",
    "REPLAY_TAG": "turnwire.model.records",
    "ReasoningReplayRejectedError": "turnwire.errors",
    "Records": "turnwire.client.dispatch",
    "RenderMemo": "turnwire.rendering._incremental.memo",
    "RenderOptions": "turnwire.plugin",
    "RenderedInput": "turnwire.rendering.pipeline",
    "RequestTimeoutError": "turnwire.errors",
    "ResponseMeta": "turnwire.client.dispatch",
    "StagePlan": "turnwire.plugin",
    "StageRelay": "turnwire.plugin",
    "StashEntry": "turnwire.model.records",
    "StreamStalledError": "turnwire.errors",
    "ThreadFileChangedError": "turnwire.errors",
    "ThreadSummary": "turnwire.store.protocol",
    "Turn": "turnwire.store.turns",
    "TurnBuilder": "turnwire.store.turns",
    "UnsupportedMediaError": "turnwire.errors",
    "build_body": "turnwire.rendering.body",
    "build_input": "turnwire.rendering.pipeline",
    "copy_threads": "turnwire.store",
    "encode_body": "turnwire.rendering.body",
    "hookspec": "turnwire.plugin",
    "prefix_fingerprint": "turnwire.rendering.renderer",
    "preflight": "turnwire.rendering.preflight",
    "transcript": "turnwire.rendering.windows",
}

__all__ = [
    "Approval",
    "Artifact",
    "Client",
    "ClientError",
    "ConfigError",
    "Container",
    "ContainerCache",
    "HttpError",
    "Identity",
    "InputError",
    "Media",
    "Memory",
    "Message",
    "OutputSchema",
    "OutputValidationError",
    "PostgresStore",
    "PreflightError",
    "ReasoningPayload",
    "RenderError",
    "RenderedRequest",
    "Renderer",
    "Retrievable",
    "RunResult",
    "SQLiteStore",
    "Settings",
    "StoreConflictError",
    "StoreError",
    "StreamError",
    "Thought",
    "Thread",
    "ThreadFileError",
    "ThreadStore",
    "Tool",
    "ToolCall",
    "ToolFunction",
    "ToolResult",
    "TurnwireError",
    "UnknownThreadError",
    "Usage",
    "build_container",
    "check_thread",
    "client_tool",
    "compact",
    "compact_thread",
    "custom_tool",
    "dump_thread",
    "hookimpl",
    "load_settings",
    "load_thread",
    "open_store",
    "render",
    "run",
    "run_thread",
    "save_thread",
    "tool",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None and name in _MOVED:
        module = _MOVED[name]
        warnings.warn(
            f"turnwire.{name} is deprecated: import it from {module}",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(module), name)
    if module is None:
        # A submodule (``turnwire.api``) is an attribute too once imported; import it on use.
        if not name.startswith("_") and importlib.util.find_spec(f"turnwire.{name}") is not None:
            return importlib.import_module(f"turnwire.{name}")
        raise AttributeError(f"module 'turnwire' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
