"""Responses API wire types as msgspec Structs; tags are the API's ``type`` literals."""

from turnwire.wire.content import (
    InputContent,
    InputFile,
    InputImage,
    InputText,
    OutputText,
    PromptCacheBreakpoint,
    ReasoningText,
    Refusal,
    SummaryText,
)
from turnwire.wire.items import (
    FunctionCall,
    FunctionCallOutput,
    HostedInputItem,
    InputItem,
    InputMessage,
    OutputMessage,
    ProgramCaller,
    ReasoningItem,
)
from turnwire.wire.request import (
    FunctionToolChoice,
    ProgrammaticToolChoice,
    PromptCacheOptions,
    ReasoningOptions,
    RequestBody,
    StreamOptions,
    TextOptions,
)
from turnwire.wire.tools import FunctionTool, HostedTool, WireTool

__all__ = [
    "FunctionCall",
    "FunctionCallOutput",
    "FunctionTool",
    "FunctionToolChoice",
    "HostedInputItem",
    "HostedTool",
    "InputContent",
    "InputFile",
    "InputImage",
    "InputItem",
    "InputMessage",
    "InputText",
    "OutputMessage",
    "OutputText",
    "ProgramCaller",
    "ProgrammaticToolChoice",
    "PromptCacheBreakpoint",
    "PromptCacheOptions",
    "ReasoningItem",
    "ReasoningOptions",
    "ReasoningText",
    "Refusal",
    "RequestBody",
    "StreamOptions",
    "SummaryText",
    "TextOptions",
    "WireTool",
]
