"""Typed errors with stable codes.

Every error turnwire raises on purpose derives from :class:`TurnwireError` and carries a stable
``code``, an HTTP-like ``status``, a ``fatal`` flag (retrying the same input cannot help) and the
context that locates the problem (a ``$.path`` in a thread or configuration file, an ``input[i]``
in a request body, a stage or plugin name).

```
TurnwireError                            E_TURNWIRE (the base class)
├── InputError                           E_INVALID_INPUT (the caller must change something)
│   ├── ThreadFileError                  E_THREAD_FILE_INVALID ($.path)
│   ├── ConfigError                      E_INVALID_OPENAI_RESPONSES_OPTIONS ($.path)
│   │   └── MissingApiKeyError           E_OPENAI_API_KEY_MISSING (the variable to set)
│   ├── PreflightError                   E_OPENAI_RESPONSES_PREFLIGHT (input[i], rule)
│   ├── RenderError                      E_RENDER_FAILED (stage, record)
│   │   └── UnsupportedMediaError        E_OPENAI_RESPONSES_UNSUPPORTED_MEDIA_MODALITY
│   ├── PluginError                      E_PLUGIN_INVALID (plugin)
│   ├── HandlerNotAllowedError           E_HANDLER_NOT_ALLOWED ($.path, tool, handler)
│   ├── ToolHandlerMissingError          E_TOOL_HANDLER_MISSING ($.path, tool, kind, call_id)
│   ├── FileNotAllowedError              E_FILE_NOT_ALLOWED ($.path)
│   ├── ApprovalNotPendingError          E_MCP_APPROVAL_NOT_PENDING (item_id)
│   ├── McpServerNotAllowedError         E_MCP_SERVER_NOT_ALLOWED ($.path, server_label)
│   ├── ProviderUnsupportedError         E_PROVIDER_UNSUPPORTED ($.path, provider, lack)
│   ├── OutputSchemaError                E_OUTPUT_SCHEMA_INVALID ($.path in the schema)
│   ├── ContextOverflowError             E_OPENAI_RESPONSES_CONTEXT_OVERFLOW (tokens per bucket)
│   ├── StoreError                       E_STORE (an unusable store, a damaged row)
│   └── UnknownThreadError               E_THREAD_NOT_FOUND (thread_id)
├── ClientError                          E_OPENAI_RESPONSES_CLIENT (the exchange failed)
│   ├── HttpError                        E_OPENAI_RESPONSES_HTTP_ERROR (http_status; 0 = transport)
│   │   └── ReasoningReplayRejectedError E_OPENAI_RESPONSES_REASONING_REPLAY_REJECTED (item_id)
│   ├── RequestTimeoutError              E_OPENAI_RESPONSES_REQUEST_TIMEOUT (seconds, phase)
│   ├── StreamError                      E_OPENAI_RESPONSES_STREAM_ERROR (event, field, partial)
│   │   └── AnswerTooLargeError          E_OPENAI_RESPONSES_STREAM_ERROR (limit, setting)
│   └── StreamStalledError               E_OPENAI_RESPONSES_STREAM_STALLED (seconds, partial)
├── OutputValidationError                E_OUTPUT_INVALID ($.path in the answer, text, result)
├── ThreadFileChangedError               E_THREAD_FILE_CONFLICT (file, result)
├── MaxIterationsError                   E_MAX_ITERATIONS (iterations, pending, result)
├── StoreConflictError                   E_STORE_CONFLICT (thread_id)
└── InvalidToolCallArgs                  E_OPENAI_RESPONSES_INVALID_TOOL_CALL_ARGS (never raised)
```

A test keeps this tree true: every class below is in it once, under its base, with its code.
The documentation's Errors page is generated from the classes themselves (code, status, fatal
flag, docstring). ``InvalidToolCallArgs`` is never raised: its message becomes the error result
the model reads on the next request.

Messages say what was wrong, where, and what to do instead. They never contain secrets: every
message goes through :func:`turnwire._redact.redact` when the error is built, whatever text it
quotes (an answer's body, a stream's error event, a configuration value).
"""

from __future__ import annotations

import re
from typing import Any

from turnwire._redact import redact

__all__ = [
    "AnswerTooLargeError",
    "ApprovalNotPendingError",
    "ClientError",
    "ConfigError",
    "ContextOverflowError",
    "FileNotAllowedError",
    "HandlerNotAllowedError",
    "HttpError",
    "InputError",
    "InvalidToolCallArgs",
    "MaxIterationsError",
    "McpServerNotAllowedError",
    "MissingApiKeyError",
    "OutputSchemaError",
    "OutputValidationError",
    "PluginError",
    "PreflightError",
    "ProviderUnsupportedError",
    "ReasoningReplayRejectedError",
    "RenderError",
    "RequestTimeoutError",
    "StoreConflictError",
    "StoreError",
    "StreamError",
    "StreamStalledError",
    "ThreadFileChangedError",
    "ThreadFileError",
    "ToolHandlerMissingError",
    "TurnwireError",
    "UnknownThreadError",
    "UnsupportedMediaError",
    "validation_location",
]


_EXCERPT = 2000


# Every character str.splitlines() breaks at: a value quoted from a thread or an answer must not
# turn the one `error: CODE: message` line into two.
# Line breaks, and every other control character but tab (an escape sequence a server put in
# its error text must not drive the terminal that prints the error line), written as escapes.
_LINE_BREAKS = {
    ord(c): f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"
    for c in (
        *(chr(code) for code in range(0x20) if code != 0x09),
        *(chr(code) for code in range(0x7F, 0xA0)),
        "\u2028",
        "\u2029",
    )
}


def _one_line(message: str) -> str:
    return message.translate(_LINE_BREAKS)


class TurnwireError(Exception):
    """Base class of every error turnwire raises on purpose."""

    code: str = "E_TURNWIRE"
    status: int = 500
    fatal: bool = True

    def __init__(self, message: str) -> None:
        message = _one_line(redact(message))
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r})"


class InputError(TurnwireError):
    """The input (thread, configuration, request) is wrong; the same input fails again.

    Raised as itself for bad input no subclass names, such as ``threads compact`` on a thread
    with nothing to compact.
    """

    code = "E_INVALID_INPUT"
    status = 422


class ThreadFileError(InputError):
    """A thread file does not match schema version 1; the message starts with the path.

    :ivar path: the JSON path of the offending value, such as ``$.messages[3].role``.
    """

    code = "E_THREAD_FILE_INVALID"

    def __init__(self, message: str, *, path: str = "$") -> None:
        super().__init__(message)
        self.path = path


class ThreadFileChangedError(TurnwireError):
    """A thread file changed between the read a run started from and its save (another run
    saved it meanwhile); this run's records were not written. Not fatal: run again.

    :ivar file: the thread file.
    :ivar result: this run's :class:`~turnwire.client.dispatch.RunResult`, for a caller that
        wants to keep what it recorded.
    """

    code = "E_THREAD_FILE_CONFLICT"
    status = 409
    fatal = False

    def __init__(self, file: str, *, result: object = None) -> None:
        super().__init__(
            f"the thread file {file} changed while this run was in flight (another run saved "
            "it?); this run's records were not saved: run again on the file as it is now"
        )
        self.file = file
        self.result = result


class MaxIterationsError(TurnwireError):
    """A run stopped at ``client.max_iterations`` while the model was still calling tools:
    the calls of its last response ran, but no request sent their results. What the run
    recorded is kept: :func:`turnwire.run` with ``save=True`` has saved the thread file and
    :func:`turnwire.run_thread` has stored the turns before it is raised, and :attr:`result`
    holds the whole run. Not fatal: a next run sends the results and goes on (or raise
    ``client.max_iterations``).

    :ivar iterations: the requests the run sent for answers (``client.max_iterations``).
    :ivar pending: the ids of the calls whose results the model has not read (and of the
        client-executed tool searches whose answers it has not read).
    :ivar result: the :class:`~turnwire.client.dispatch.RunResult` of the run.
    """

    code = "E_MAX_ITERATIONS"
    status = 508
    fatal = False

    def __init__(
        self, *, iterations: int, pending: tuple[str, ...] = (), tools: tuple[str, ...] = ()
    ) -> None:
        called = f" ({', '.join(dict.fromkeys(tools))})" if tools else ""
        requests = f"{iterations} request{'' if iterations == 1 else 's'}"
        unsent = f"{len(pending)} result{'' if len(pending) == 1 else 's'}"
        super().__init__(
            f"the run stopped after {requests} (client.max_iterations) with the model still "
            f"calling tools{called}: {unsent} not sent yet; what the run recorded is kept: run "
            "again to go on, or raise client.max_iterations"
        )
        self.iterations = iterations
        self.pending = pending
        self.result: object = None


class ConfigError(InputError):
    """A configuration file, a profile, a plugin's settings or an override (``--set``,
    ``overrides=``) is invalid: the merged configuration does not validate.

    :ivar path: the JSON path of the offending value, such as ``$.request.max_output_tokens``.
    """

    code = "E_INVALID_OPENAI_RESPONSES_OPTIONS"
    status = 529

    def __init__(self, message: str, *, path: str = "$") -> None:
        super().__init__(message)
        self.path = path


class MissingApiKeyError(ConfigError):
    """No API key for an endpoint that is not on this machine; nothing was sent.

    :ivar variable: the environment variable to set (``client.api_key_env``), if any.
    """

    code = "E_OPENAI_API_KEY_MISSING"
    status = 401

    def __init__(self, message: str, *, variable: str | None) -> None:
        super().__init__(message, path="$.client.api_key_env")
        self.variable = variable


class PreflightError(InputError):
    """A rendered request body breaks a wire rule the real API enforces.

    :ivar rule: the stable name of the rule, such as ``reasoning-partner``.
    :ivar index: the position in ``input`` at fault, or ``None`` for body-level rules.
    """

    code = "E_OPENAI_RESPONSES_PREFLIGHT"

    def __init__(self, message: str, *, rule: str, index: int | None = None) -> None:
        super().__init__(message)
        self.rule = rule
        self.index = index

    @property
    def where(self) -> str:
        return "body" if self.index is None else f"input[{self.index}]"


class RenderError(InputError):
    """A render stage could not turn a record into wire items (a file that cannot be read, a
    size limit).

    :ivar stage: the hook name that failed.
    :ivar record: the id of the record being rendered, when there is one.
    """

    code = "E_RENDER_FAILED"

    def __init__(self, message: str, *, stage: str, record: str | None = None) -> None:
        super().__init__(message)
        self.stage = stage
        self.record = record


class UnsupportedMediaError(RenderError):
    """Media of a kind the Responses API cannot take, under the ``throw`` policy."""

    code = "E_OPENAI_RESPONSES_UNSUPPORTED_MEDIA_MODALITY"

    def __init__(self, *, kind: str, mime_type: str, filename: str, record: str) -> None:
        super().__init__(
            f"the Responses API has no input block for {kind} media "
            f"(mime={mime_type}, filename={filename}, id={record}); set "
            "render.unsupported_media_policy to fallback-stash or synthetic-description "
            "to degrade instead",
            stage="render_media_blocks",
            record=record,
        )
        self.kind = kind


class PluginError(InputError):
    """A plugin failed to load or to validate against the hook specifications.

    :ivar plugin: the plugin (entry-point) name.
    """

    code = "E_PLUGIN_INVALID"

    def __init__(self, message: str, *, plugin: str) -> None:
        super().__init__(message)
        self.plugin = plugin


class HandlerNotAllowedError(InputError):
    """A thread names the code that runs one of its tools, and configuration does not allow it.

    A thread may name a tool, never the code behind it: handlers come from the Python API,
    ``tools.handlers`` or the ``turnwire.tools`` entry points, and a thread's own ``handler:``
    only when it matches ``tools.allow_thread_handlers``. Raised before any request is sent.

    :ivar path: the JSON path of the handler, such as ``$.tools[0].handler``.
    :ivar tool: the tool's name.
    :ivar handler: the ``module:function`` the thread names.
    """

    code = "E_HANDLER_NOT_ALLOWED"
    status = 403

    def __init__(self, message: str, *, path: str, tool: str, handler: str) -> None:
        super().__init__(message)
        self.path = path
        self.tool = tool
        self.handler = handler


class ToolHandlerMissingError(InputError):
    """A client-executed tool (a custom tool, ``shell``, ``local_shell``, ``apply_patch``,
    computer use) has no handler, so its call could never be answered: the thread holds such a
    call waiting for its answer, or the request would declare such a tool. The model's call is
    never dropped: it stays in the thread, and a run with a handler answers it. Raised before
    any request is sent.

    Register the handler under the custom tool's name, or the kind (``shell``,
    ``local_shell``, ``apply_patch``, ``computer``): ``handlers=`` or ``tools=`` in Python,
    ``tools.handlers`` in configuration, or a ``turnwire.tools`` entry point of that name.

    :ivar path: the JSON path of the call (``$.tool_calls[3]``) or of the declaration
        (``$.hosted_tools[0]``, ``$.tools.hosted[1]`` in configuration).
    :ivar tool: the name the handler is registered under.
    :ivar kind: the tool's kind (``custom``, ``shell``, ``local_shell``, ``apply_patch``,
        ``computer``; ``tool_search`` for a client-executed tool search declared with
        ``parameters`` of its own, whose handler is registered under ``tool_search``).
    :ivar call_id: the waiting call's id (``None`` for a declaration).
    :ivar result: when a response of a run made the call (a tool nothing declared), the run's
        result: what it recorded, the call waiting among it; :func:`turnwire.run` with
        ``save`` has saved it and :func:`turnwire.run_thread` has stored it before the error is
        raised. ``None`` when raised before anything was sent.
    """

    code = "E_TOOL_HANDLER_MISSING"
    status = 422

    def __init__(
        self, message: str, *, path: str, tool: str, kind: str, call_id: str | None = None
    ) -> None:
        super().__init__(message)
        self.path = path
        self.tool = tool
        self.kind = kind
        self.call_id = call_id
        self.result: Any = None


class FileNotAllowedError(InputError):
    """A file pointer leaves the allowed roots (a symlink out of them too), or names something
    that is not a regular file (``/proc``, a FIFO, a directory).

    :ivar path: the JSON path of the pointer, such as ``$.messages[0].attachments[0].path``.
    """

    code = "E_FILE_NOT_ALLOWED"
    status = 403

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message)
        self.path = path


class ApprovalNotPendingError(InputError):
    """An approval decision (``--approve ID``, ``--deny ID``, ``approvals=``) names no MCP
    approval request of the thread that is still waiting: no ``mcp_approval_request`` has that
    id, or it was answered already. Raised before anything is sent.

    :ivar item_id: the id the decision names.
    :ivar pending: the ids of the requests that are waiting.
    """

    code = "E_MCP_APPROVAL_NOT_PENDING"

    def __init__(self, message: str, *, item_id: str, pending: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.item_id = item_id
        self.pending = pending


class McpServerNotAllowedError(InputError):
    """A thread declares an MCP server that ``tools.allow_thread_mcp_servers`` does not
    allow. The API would call that server with whatever the model sends it, so a thread file
    (untrusted input) may not choose one: the configuration declares servers
    (``tools.hosted``) or allows a thread's. Raised before any request is sent, and by
    ``render`` alike.

    :ivar path: the JSON path of the declaration, such as ``$.hosted_tools[0]``.
    :ivar server_label: the declaration's ``server_label``.
    """

    code = "E_MCP_SERVER_NOT_ALLOWED"
    status = 403

    def __init__(self, message: str, *, path: str, server_label: str) -> None:
        super().__init__(message)
        self.path = path
        self.server_label = server_label


class ProviderUnsupportedError(InputError):
    """A thread or a call asks for what the configured provider does not accept
    (``provider.lacks``, which the shipped profiles fill in): a hosted tool on a server that
    runs none, a compaction on one without ``/responses/compact``... Raised before any request
    is sent, and by ``render`` alike. (A configuration that asks for such a thing is a
    :class:`ConfigError` when it loads.)

    :ivar path: where the ask is: a thread's ``$.hosted_tools[0]``, or the argument
        (``compaction_trigger``, ``compact``).
    :ivar provider: ``provider.name`` (``None`` when the configuration names none).
    :ivar lack: the ``provider.lacks`` entry (``hosted_tools``, ``compact`` ...).
    """

    code = "E_PROVIDER_UNSUPPORTED"
    status = 422

    def __init__(self, message: str, *, path: str, provider: str | None, lack: str) -> None:
        super().__init__(message)
        self.path = path
        self.provider = provider
        self.lack = lack


class ContextOverflowError(InputError):
    """The rendered request is estimated to exceed ``context.context_window``.

    :ivar total: the estimated token count.
    :ivar window: the configured window.
    :ivar breakdown: estimated tokens per bucket.
    """

    code = "E_OPENAI_RESPONSES_CONTEXT_OVERFLOW"
    status = 529

    def __init__(
        self, *, total: int, window: int, encoding: str, breakdown: dict[str, int]
    ) -> None:
        parts = ", ".join(f"{name} {count}" for name, count in breakdown.items())
        super().__init__(
            f"the request is about {total} tokens ({encoding}), over the context window of "
            f"{window}: {parts}; trim the thread or raise context.context_window"
        )
        self.total = total
        self.window = window
        self.breakdown = breakdown


class OutputSchemaError(InputError):
    """An output schema (``output_schema=``, ``--output-schema``) cannot be sent: not a Struct,
    a JSON Schema or an :class:`~turnwire.model.structured.OutputSchema`, or outside the strict
    subset. Raised before any request is sent.

    :ivar path: where in the schema, such as ``$.properties.items``.
    """

    code = "E_OUTPUT_SCHEMA_INVALID"

    def __init__(self, message: str, *, path: str = "$") -> None:
        super().__init__(message)
        self.path = path


class OutputValidationError(TurnwireError):
    """The final answer of a structured-output run is not JSON, or does not match the schema.

    Raised after the turn is recorded: the model did answer. :func:`turnwire.run` with
    ``save=True`` has saved the thread file and :func:`turnwire.run_thread` has stored the
    turns before it is raised; :attr:`result` holds the whole run (its ``parsed`` is ``None``).
    Not fatal: asking again may give a valid answer.

    :ivar path: where in the answer, such as ``$.items[2].price`` (``$``: not JSON at all).
    :ivar text: the answer's raw text.
    :ivar schema_name: the output schema's ``name``.
    :ivar result: the :class:`~turnwire.client.dispatch.RunResult` of the run.
    """

    code = "E_OUTPUT_INVALID"
    status = 502
    fatal = False

    def __init__(self, message: str, *, path: str, text: str, schema_name: str) -> None:
        super().__init__(message)
        self.path = path
        self.text = text
        self.schema_name = schema_name
        self.result: object = None


class StoreError(InputError):
    """The store cannot be used: a store file that is unusable or newer than this turnwire, a
    ``--store`` in a folder that does not exist, a row damaged outside turnwire (the message names
    the thread and the column), or a timestamp the store cannot keep."""

    code = "E_STORE"


class UnknownThreadError(InputError):
    """No thread has this id in the store.

    :ivar thread_id: the id asked for.
    """

    code = "E_THREAD_NOT_FOUND"
    status = 404

    def __init__(self, thread_id: str) -> None:
        super().__init__(f"no thread {thread_id!r} in the store (see `turnwire threads list`)")
        self.thread_id = thread_id


class StoreConflictError(TurnwireError):
    """The thread changed between the read a run started from and its append; nothing was stored.

    Not fatal: load the thread again and re-run the turn.

    :ivar thread_id: the thread.
    """

    code = "E_STORE_CONFLICT"
    status = 409
    fatal = False

    def __init__(self, thread_id: str, *, expected_last: int, actual_last: int) -> None:
        super().__init__(
            f"thread {thread_id!r} changed while this run was in flight (its last turn was "
            f"{expected_last} when the run read it, {actual_last} now); nothing was stored: "
            "load the thread again and re-run"
        )
        self.thread_id = thread_id
        self.expected_last = expected_last
        self.actual_last = actual_last


class ClientError(TurnwireError):
    """The exchange with the Responses API failed; the thread is left as it was."""

    code = "E_OPENAI_RESPONSES_CLIENT"
    status = 502
    fatal = False


class HttpError(ClientError):
    """A non-2xx answer, or a transport failure (``http_status`` 0) after every retry.

    ``status`` stays the class's HTTP-like status (502), like every other error's.

    :ivar http_status: the upstream HTTP status (the ``status`` argument), or 0 when no answer
        arrived.
    :ivar body: the start of the answer's body (at most 2,000 characters), redacted.
    :ivar attempts: how many requests were sent.
    :param bytes_read: how many body bytes were read, when reading stopped at a size cap.
    """

    code = "E_OPENAI_RESPONSES_HTTP_ERROR"

    def __init__(
        self, *, status: int, body: str, attempts: int = 1, bytes_read: int | None = None
    ) -> None:
        # Redacted before the cut, so no secret is split in two and half of it shown.
        excerpt = redact(body[: _EXCERPT + 512])[:_EXCERPT]
        shown = excerpt or "(empty body)"
        if bytes_read is not None or len(body) > _EXCERPT:
            size = len(body.encode("utf-8", "replace")) if bytes_read is None else bytes_read
            shown += f"... (truncated, {size} bytes read)"
        where = f"HTTP {status}" if status else "no HTTP answer"
        super().__init__(f"{where} after {attempts} attempt(s): {shown}")
        self.http_status = status
        self.body = excerpt
        self.attempts = attempts


_ITEM_IN_BODY = re.compile(
    r"\b[Ii]tem(?: with id)? '?((?:rs|msg|fc|ctc|ws|ci|mcp)_[A-Za-z0-9_-]+)'?"
)


class ReasoningReplayRejectedError(HttpError):
    """The API rejected reasoning pairing even after the reasoning-free retry.

    :ivar item_id: the item the API blamed (from its message), or ``None`` when it named none.
    """

    code = "E_OPENAI_RESPONSES_REASONING_REPLAY_REJECTED"
    status = 422

    def __init__(self, *, body: str, attempts: int, item_id: str | None = None) -> None:
        super().__init__(status=400, body=body, attempts=attempts)
        if item_id is None:
            match = _ITEM_IN_BODY.search(body)
            item_id = match.group(1) if match else None
        self.item_id = item_id
        blamed = f"item {item_id}" if item_id else "an item it did not name"
        self.message = (
            f"the API still rejects reasoning pairing ({blamed}) after a retry without any "
            f"reasoning item: {self.body}; the thread's own output items are at fault "
            "(check their ids), or set render.reasoning_replay to off"
        )
        self.args = (self.message,)


class RequestTimeoutError(ClientError):
    """The exchange took longer than ``client.request_timeout_s``, before or during the answer.

    :ivar seconds: the limit that passed.
    :ivar phase: what was under way when it passed.
    """

    code = "E_OPENAI_RESPONSES_REQUEST_TIMEOUT"
    status = 504

    def __init__(self, *, seconds: float, phase: str) -> None:
        super().__init__(f"the request took longer than {seconds:g} s ({phase})")
        self.seconds = seconds
        self.phase = phase


class StreamError(ClientError):
    """The stream reported a failure (``response.failed``, ``error``, a ``cancelled`` status),
    ended or dropped before its terminal event (``response.completed``, ``.incomplete`` or
    ``.failed``), or could not be read, or the server sent a value of a shape the schema cannot
    hold. Nothing of the answer is recorded.

    :ivar error_code: the upstream error code, when the server gave one.
    :ivar event: for a shape error, the event that carried the value
        (``response.output_item.done``; ``response`` for a non-streamed answer).
    :ivar field: for a shape error, where in that event, such as ``output[1].content[0].text``.
    :ivar partial: for a stream that ended or dropped before its terminal event, what had
        arrived (a :class:`turnwire.wire.response.Generation`, its ``terminal`` ``eof``), for
        inspection only: it is never persisted as history.
    """

    code = "E_OPENAI_RESPONSES_STREAM_ERROR"

    def __init__(
        self,
        message: str,
        *,
        error_code: str | None = None,
        event: str | None = None,
        field: str | None = None,
        partial: object = None,
    ) -> None:
        super().__init__(f"stream error: {message}")
        self.error_code = error_code
        self.event = event
        self.field = field
        self.partial = partial


class AnswerTooLargeError(StreamError):
    """The answer's decoded body passed its limit (``client.max_stream_bytes`` for an event
    stream); it was not read further and nothing of it was recorded.

    :ivar limit: the limit, in bytes.
    :ivar setting: what sets it.
    """

    def __init__(self, *, limit: int, setting: str, unit: str = "bytes") -> None:
        what = f"is larger than {limit} bytes" if unit == "bytes" else f"holds over {limit} {unit}"
        super().__init__(
            f"the answer's body {what} ({setting}); it was not read further and nothing of it "
            "was recorded"
        )
        self.limit = limit
        self.setting = setting


class StreamStalledError(ClientError):
    """No bytes arrived for ``client.stream_idle_timeout_s``; nothing was recorded.

    :ivar partial: what had been received (a :class:`turnwire.wire.response.Generation`), for
        inspection only: it is never persisted as history.
    """

    code = "E_OPENAI_RESPONSES_STREAM_STALLED"
    status = 504

    def __init__(self, *, seconds: float, partial: object = None) -> None:
        super().__init__(
            f"the stream sent nothing for {seconds:g} s; the partial answer was discarded"
        )
        self.seconds = seconds
        self.partial = partial


class InvalidToolCallArgs(TurnwireError):
    """The model's tool arguments are not a JSON object, or do not match the tool's
    ``parameters`` (JSON Schema Draft 2020-12, checked before the handler runs; the message
    names the field: ``$.city: expected string``). Never raised: its message is the error
    result the model reads on the next request."""

    code = "E_OPENAI_RESPONSES_INVALID_TOOL_CALL_ARGS"
    status = 422
    fatal = False


_AT_PATH = re.compile(r" - at `\$([^`]*)`$")
# A cross-field rule names its field first ("bucket_order: ...", "tools[1].name: ..."); the
# path then points at it.
_FIELD_RULE = re.compile(r"([a-z_]+(?:\[\d+\])?(?:\.[a-z_]+)*): ")
# msgspec's message for a mapping key of the wrong value: "... - at `key` in `$.a.b`".
_AT_KEY = re.compile(r" - at `key` in `\$([^`]*)`$")


def validation_location(err: Exception, *, root: str = "$") -> tuple[str, str]:
    """``(path, detail)`` of a msgspec ``ValidationError``, the path rooted at ``root``.

    msgspec ends its messages with `` - at `$.a.b` ``; a rule raised by a ``__post_init__``
    that starts with a field name (``"bucket_order: ..."``) extends the path to that field.
    """
    message = str(err)
    keyed = _AT_KEY.search(message)
    if keyed is not None:  # a key of the mapping at that path
        return root + keyed.group(1), "a key: " + _AT_KEY.sub("", message)
    match = _AT_PATH.search(message)
    path = root + (match.group(1) if match else "")
    detail = _AT_PATH.sub("", message)
    field = _FIELD_RULE.match(detail)
    if field is not None:
        path, detail = f"{path}.{field.group(1)}", detail[field.end() :]
    return path, detail
