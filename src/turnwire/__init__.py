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
    from turnwire.api import compact, compact_thread, run, run_thread
    from turnwire.client.dispatch import Client, Records, ResponseMeta, RunResult
    from turnwire.config.nonce import EnvelopeNonce
    from turnwire.config.options import EnvelopeAttrs, HandleInfo, MediaPolicy, RenderOptions
    from turnwire.config.settings import Settings, load_settings
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
        StoreConflictError,
        StoreError,
        StreamError,
        StreamStalledError,
        ThreadFileChangedError,
        ThreadFileError,
        TurnwireError,
        UnknownThreadError,
        UnsupportedMediaError,
    )
    from turnwire.files.pointers import ContextAssembler
    from turnwire.files.thread_file import dump_thread, load_thread, save_thread
    from turnwire.hookspecs import hookimpl, hookspec
    from turnwire.model.approvals import Approval
    from turnwire.model.records import (
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
    from turnwire.model.structured import OutputSchema
    from turnwire.model.usage import GenerationStats, Usage
    from turnwire.rendering._incremental.memo import RenderMemo
    from turnwire.rendering.body import build_body, encode_body, preflight
    from turnwire.rendering.compaction import CompactResult
    from turnwire.rendering.container import Container, ContainerCache, build_container
    from turnwire.rendering.pipeline import RenderedInput, build_input
    from turnwire.rendering.relay import HOOK, StagePlan, StageRelay
    from turnwire.rendering.renderer import RenderedRequest, Renderer, prefix_fingerprint, render
    from turnwire.rendering.windows import transcript
    from turnwire.store import ThreadStore, copy_threads, open_store
    from turnwire.store.postgres import PostgresStore
    from turnwire.store.protocol import ThreadSummary
    from turnwire.store.sqlite import SQLiteStore
    from turnwire.store.turns import Turn, TurnBuilder

__version__ = "0.1.0"

# A library logs to "turnwire" and leaves the handlers to the application.
logging.getLogger("turnwire").addHandler(logging.NullHandler())

_EXPORTS: dict[str, str] = {
    "HOOK": "turnwire.rendering.relay",
    "REPLAY_TAG": "turnwire.model.records",
    "AnswerTooLargeError": "turnwire.errors",
    "Approval": "turnwire.model.approvals",
    "ApprovalNotPendingError": "turnwire.errors",
    "Artifact": "turnwire.model.records",
    "Client": "turnwire.client.dispatch",
    "CompactResult": "turnwire.rendering.compaction",
    "ClientError": "turnwire.errors",
    "ConfigError": "turnwire.errors",
    "Container": "turnwire.rendering.container",
    "ContainerCache": "turnwire.rendering.container",
    "ContextAssembler": "turnwire.files.pointers",
    "ContextOverflowError": "turnwire.errors",
    "EnvelopeAttrs": "turnwire.config.options",
    "EnvelopeNonce": "turnwire.config.nonce",
    "FileNotAllowedError": "turnwire.errors",
    "GenerationStats": "turnwire.model.usage",
    "HandleInfo": "turnwire.config.options",
    "HandlerNotAllowedError": "turnwire.errors",
    "HttpError": "turnwire.errors",
    "Identity": "turnwire.model.records",
    "InputError": "turnwire.errors",
    "InvalidToolCallArgs": "turnwire.errors",
    "McpServerNotAllowedError": "turnwire.errors",
    "Media": "turnwire.model.records",
    "MediaPolicy": "turnwire.config.options",
    "Memory": "turnwire.model.records",
    "Message": "turnwire.model.records",
    "MissingApiKeyError": "turnwire.errors",
    "OutputSchema": "turnwire.model.structured",
    "OutputSchemaError": "turnwire.errors",
    "OutputValidationError": "turnwire.errors",
    "PluginError": "turnwire.errors",
    "PostgresStore": "turnwire.store.postgres",
    "PreflightError": "turnwire.errors",
    "ReasoningPayload": "turnwire.model.records",
    "ReasoningReplayRejectedError": "turnwire.errors",
    "Records": "turnwire.client.dispatch",
    "RenderError": "turnwire.errors",
    "RenderMemo": "turnwire.rendering._incremental.memo",
    "RenderOptions": "turnwire.config.options",
    "RenderedInput": "turnwire.rendering.pipeline",
    "RenderedRequest": "turnwire.rendering.renderer",
    "Renderer": "turnwire.rendering.renderer",
    "RequestTimeoutError": "turnwire.errors",
    "ResponseMeta": "turnwire.client.dispatch",
    "Retrievable": "turnwire.model.records",
    "RunResult": "turnwire.client.dispatch",
    "SQLiteStore": "turnwire.store.sqlite",
    "Settings": "turnwire.config.settings",
    "StagePlan": "turnwire.rendering.relay",
    "StageRelay": "turnwire.rendering.relay",
    "StashEntry": "turnwire.model.records",
    "StoreConflictError": "turnwire.errors",
    "StoreError": "turnwire.errors",
    "StreamError": "turnwire.errors",
    "StreamStalledError": "turnwire.errors",
    "ThreadFileChangedError": "turnwire.errors",
    "Thought": "turnwire.model.records",
    "Thread": "turnwire.model.records",
    "ThreadFileError": "turnwire.errors",
    "ThreadStore": "turnwire.store",
    "ThreadSummary": "turnwire.store.protocol",
    "Tool": "turnwire.model.records",
    "ToolCall": "turnwire.model.records",
    "ToolResult": "turnwire.model.records",
    "Turn": "turnwire.store.turns",
    "TurnBuilder": "turnwire.store.turns",
    "TurnwireError": "turnwire.errors",
    "UnknownThreadError": "turnwire.errors",
    "UnsupportedMediaError": "turnwire.errors",
    "Usage": "turnwire.model.usage",
    "build_body": "turnwire.rendering.body",
    "build_container": "turnwire.rendering.container",
    "build_input": "turnwire.rendering.pipeline",
    "compact": "turnwire.api",
    "compact_thread": "turnwire.api",
    "copy_threads": "turnwire.store",
    "dump_thread": "turnwire.files.thread_file",
    "encode_body": "turnwire.rendering.body",
    "hookimpl": "turnwire.hookspecs",
    "hookspec": "turnwire.hookspecs",
    "load_settings": "turnwire.config.settings",
    "load_thread": "turnwire.files.thread_file",
    "open_store": "turnwire.store",
    "prefix_fingerprint": "turnwire.rendering.renderer",
    "preflight": "turnwire.rendering.body",
    "render": "turnwire.rendering.renderer",
    "run": "turnwire.api",
    "run_thread": "turnwire.api",
    "save_thread": "turnwire.files.thread_file",
    "transcript": "turnwire.rendering.windows",
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
