"""turnwire: stored agent conversations → exact, stateless OpenAI Responses API requests.

Every rendering step is a pluggy stage (see :mod:`turnwire.hookspecs`); a dependency-injector
container built from YAML wires them (:func:`build_container`). :func:`render` gives the exact
body, :func:`run` sends it and runs the tool loop, :class:`Client` does both for long-lived
callers, and :class:`SQLiteStore` keeps threads between turns.

The names below load on first use, so ``import turnwire`` (and ``turnwire --version``) stays
fast; type checkers see ordinary imports.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from turnwire._memo import RenderMemo
    from turnwire._relay import HOOK, StagePlan, StageRelay
    from turnwire.api import compact, compact_thread, run, run_thread
    from turnwire.approvals import Approval
    from turnwire.client.dispatch import Client, Records, ResponseMeta, RunResult
    from turnwire.compaction import CompactResult
    from turnwire.container import Container, ContainerCache, build_container
    from turnwire.context import (
        EnvelopeAttrs,
        EnvelopeNonce,
        HandleInfo,
        MediaPolicy,
        RenderOptions,
    )
    from turnwire.errors import (
        AnswerTooLargeError,
        ApprovalNotPendingError,
        ClientError,
        ConfigError,
        ContextOverflowError,
        FileNotAllowedError,
        HandlerNotAllowedError,
        HttpError,
        InputError,
        InvalidToolCallArgs,
        McpServerNotAllowedError,
        MissingApiKeyError,
        OutputSchemaError,
        OutputValidationError,
        PluginError,
        PreflightError,
        ReasoningReplayRejectedError,
        RenderError,
        RequestTimeoutError,
        StreamError,
        StreamStalledError,
        ThreadFileChangedError,
        ThreadFileError,
        TurnwireError,
        UnsupportedMediaError,
    )
    from turnwire.hookspecs import hookimpl, hookspec
    from turnwire.model import (
        REPLAY_TAG,
        Artifact,
        Identity,
        Media,
        Memory,
        Message,
        ReasoningPayload,
        Retrievable,
        StashEntry,
        Thought,
        Thread,
        Tool,
        ToolCall,
        ToolResult,
    )
    from turnwire.pipeline import RenderedInput, build_input
    from turnwire.rendering import RenderedRequest, Renderer, prefix_fingerprint, render
    from turnwire.request import build_body, encode_body, preflight
    from turnwire.settings import Settings, load_settings
    from turnwire.store import (
        StoreConflictError,
        ThreadStore,
        ThreadSummary,
        UnknownThreadError,
        copy_threads,
        open_store,
    )
    from turnwire.store.postgres import PostgresStore
    from turnwire.store.sqlite import SQLiteStore, StoreError
    from turnwire.structured import OutputSchema
    from turnwire.thread_file import dump_thread, load_thread, save_thread
    from turnwire.turns import ContextAssembler, Turn, TurnBuilder
    from turnwire.usage import GenerationStats, Usage
    from turnwire.windows import transcript

__version__ = "0.1.0"

# A library logs to "turnwire" and leaves the handlers to the application.
logging.getLogger("turnwire").addHandler(logging.NullHandler())

_EXPORTS: dict[str, str] = {
    "HOOK": "turnwire._relay",
    "REPLAY_TAG": "turnwire.model",
    "AnswerTooLargeError": "turnwire.errors",
    "Approval": "turnwire.approvals",
    "ApprovalNotPendingError": "turnwire.errors",
    "Artifact": "turnwire.model",
    "Client": "turnwire.client.dispatch",
    "CompactResult": "turnwire.compaction",
    "ClientError": "turnwire.errors",
    "ConfigError": "turnwire.errors",
    "Container": "turnwire.container",
    "ContainerCache": "turnwire.container",
    "ContextAssembler": "turnwire.turns",
    "ContextOverflowError": "turnwire.errors",
    "EnvelopeAttrs": "turnwire.context",
    "EnvelopeNonce": "turnwire.context",
    "FileNotAllowedError": "turnwire.errors",
    "GenerationStats": "turnwire.usage",
    "HandleInfo": "turnwire.context",
    "HandlerNotAllowedError": "turnwire.errors",
    "HttpError": "turnwire.errors",
    "Identity": "turnwire.model",
    "InputError": "turnwire.errors",
    "InvalidToolCallArgs": "turnwire.errors",
    "McpServerNotAllowedError": "turnwire.errors",
    "Media": "turnwire.model",
    "MediaPolicy": "turnwire.context",
    "Memory": "turnwire.model",
    "Message": "turnwire.model",
    "MissingApiKeyError": "turnwire.errors",
    "OutputSchema": "turnwire.structured",
    "OutputSchemaError": "turnwire.errors",
    "OutputValidationError": "turnwire.errors",
    "PluginError": "turnwire.errors",
    "PostgresStore": "turnwire.store.postgres",
    "PreflightError": "turnwire.errors",
    "ReasoningPayload": "turnwire.model",
    "ReasoningReplayRejectedError": "turnwire.errors",
    "Records": "turnwire.client.dispatch",
    "RenderError": "turnwire.errors",
    "RenderMemo": "turnwire._memo",
    "RenderOptions": "turnwire.context",
    "RenderedInput": "turnwire.pipeline",
    "RenderedRequest": "turnwire.rendering",
    "Renderer": "turnwire.rendering",
    "RequestTimeoutError": "turnwire.errors",
    "ResponseMeta": "turnwire.client.dispatch",
    "Retrievable": "turnwire.model",
    "RunResult": "turnwire.client.dispatch",
    "SQLiteStore": "turnwire.store.sqlite",
    "Settings": "turnwire.settings",
    "StagePlan": "turnwire._relay",
    "StageRelay": "turnwire._relay",
    "StashEntry": "turnwire.model",
    "StoreConflictError": "turnwire.store",
    "StoreError": "turnwire.store.sqlite",
    "StreamError": "turnwire.errors",
    "StreamStalledError": "turnwire.errors",
    "ThreadFileChangedError": "turnwire.errors",
    "Thought": "turnwire.model",
    "Thread": "turnwire.model",
    "ThreadFileError": "turnwire.errors",
    "ThreadStore": "turnwire.store",
    "ThreadSummary": "turnwire.store",
    "Tool": "turnwire.model",
    "ToolCall": "turnwire.model",
    "ToolResult": "turnwire.model",
    "Turn": "turnwire.turns",
    "TurnBuilder": "turnwire.turns",
    "TurnwireError": "turnwire.errors",
    "UnknownThreadError": "turnwire.store",
    "UnsupportedMediaError": "turnwire.errors",
    "Usage": "turnwire.usage",
    "build_body": "turnwire.request",
    "build_container": "turnwire.container",
    "build_input": "turnwire.pipeline",
    "compact": "turnwire.api",
    "compact_thread": "turnwire.api",
    "copy_threads": "turnwire.store",
    "dump_thread": "turnwire.thread_file",
    "encode_body": "turnwire.request",
    "hookimpl": "turnwire.hookspecs",
    "hookspec": "turnwire.hookspecs",
    "load_settings": "turnwire.settings",
    "load_thread": "turnwire.thread_file",
    "open_store": "turnwire.store",
    "prefix_fingerprint": "turnwire.rendering",
    "preflight": "turnwire.request",
    "render": "turnwire.rendering",
    "run": "turnwire.api",
    "run_thread": "turnwire.api",
    "save_thread": "turnwire.thread_file",
    "transcript": "turnwire.windows",
}

__all__ = [
    "HOOK",
    "REPLAY_TAG",
    "AnswerTooLargeError",
    "Approval",
    "ApprovalNotPendingError",
    "Artifact",
    "Client",
    "ClientError",
    "CompactResult",
    "ConfigError",
    "Container",
    "ContainerCache",
    "ContextAssembler",
    "ContextOverflowError",
    "EnvelopeAttrs",
    "EnvelopeNonce",
    "FileNotAllowedError",
    "GenerationStats",
    "HandleInfo",
    "HandlerNotAllowedError",
    "HttpError",
    "Identity",
    "InputError",
    "InvalidToolCallArgs",
    "McpServerNotAllowedError",
    "Media",
    "MediaPolicy",
    "Memory",
    "Message",
    "MissingApiKeyError",
    "OutputSchema",
    "OutputSchemaError",
    "OutputValidationError",
    "PluginError",
    "PostgresStore",
    "PreflightError",
    "ReasoningPayload",
    "ReasoningReplayRejectedError",
    "Records",
    "RenderError",
    "RenderMemo",
    "RenderOptions",
    "RenderedInput",
    "RenderedRequest",
    "Renderer",
    "RequestTimeoutError",
    "ResponseMeta",
    "Retrievable",
    "RunResult",
    "SQLiteStore",
    "Settings",
    "StagePlan",
    "StageRelay",
    "StashEntry",
    "StoreConflictError",
    "StoreError",
    "StreamError",
    "StreamStalledError",
    "Thought",
    "Thread",
    "ThreadFileChangedError",
    "ThreadFileError",
    "ThreadStore",
    "ThreadSummary",
    "Tool",
    "ToolCall",
    "ToolResult",
    "Turn",
    "TurnBuilder",
    "TurnwireError",
    "UnknownThreadError",
    "UnsupportedMediaError",
    "Usage",
    "build_body",
    "build_container",
    "build_input",
    "compact",
    "compact_thread",
    "copy_threads",
    "dump_thread",
    "encode_body",
    "hookimpl",
    "hookspec",
    "load_settings",
    "load_thread",
    "open_store",
    "prefix_fingerprint",
    "preflight",
    "render",
    "run",
    "run_thread",
    "save_thread",
    "transcript",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
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
