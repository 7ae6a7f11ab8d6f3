"""turnwire: stored agent conversations → exact, stateless OpenAI Responses API requests.

Every rendering step is a pluggy stage (see :mod:`turnwire.hookspecs`); a dependency-injector
container built from YAML wires them (:func:`build_container`).
"""

import logging

from turnwire._relay import HOOK, StagePlan, StageRelay
from turnwire.api import RenderedRequest, render, run, run_thread
from turnwire.container import Container, build_container
from turnwire.context import EnvelopeAttrs, EnvelopeNonce, HandleInfo, MediaPolicy, RenderOptions
from turnwire.errors import (
    ConfigError,
    InputError,
    PluginError,
    PreflightError,
    RenderError,
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
from turnwire.request import build_body, encode_body, preflight
from turnwire.settings import Settings, load_settings
from turnwire.thread_file import dump_thread, load_thread
from turnwire.turns import ContextAssembler

__version__ = "0.1.0"

# A library logs to "turnwire" and leaves the handlers to the application.
logging.getLogger("turnwire").addHandler(logging.NullHandler())

__all__ = [
    "HOOK",
    "REPLAY_TAG",
    "Artifact",
    "ConfigError",
    "Container",
    "ContextAssembler",
    "EnvelopeAttrs",
    "EnvelopeNonce",
    "HandleInfo",
    "Identity",
    "InputError",
    "Media",
    "MediaPolicy",
    "Memory",
    "Message",
    "PluginError",
    "PreflightError",
    "ReasoningPayload",
    "RenderError",
    "RenderOptions",
    "RenderedInput",
    "RenderedRequest",
    "Retrievable",
    "Settings",
    "StagePlan",
    "StageRelay",
    "StashEntry",
    "Thought",
    "Thread",
    "ThreadFileError",
    "Tool",
    "ToolCall",
    "ToolResult",
    "TurnwireError",
    "UnsupportedMediaError",
    "build_body",
    "build_container",
    "build_input",
    "dump_thread",
    "encode_body",
    "hookimpl",
    "hookspec",
    "load_settings",
    "load_thread",
    "preflight",
    "render",
    "run",
    "run_thread",
]
