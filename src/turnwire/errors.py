"""Typed errors with stable codes.

Every error turnwire raises on purpose derives from :class:`TurnwireError` and carries a stable
``code``, an HTTP-like ``status``, a ``fatal`` flag (retrying the same input cannot help) and the
context that locates the problem (a ``$.path`` in a thread or configuration file, an ``input[i]``
in a request body, a stage or plugin name).

```
TurnwireError
├── InputError                          bad input: the caller must change something
│   ├── ThreadFileError                 E_THREAD_FILE_INVALID        ($.path)
│   ├── ConfigError                     E_INVALID_OPENAI_RESPONSES_OPTIONS ($.path)
│   ├── PreflightError                  E_OPENAI_RESPONSES_PREFLIGHT (input[i], rule)
│   ├── RenderError                     E_RENDER_FAILED              (stage, record)
│   │   └── UnsupportedMediaError       E_OPENAI_RESPONSES_UNSUPPORTED_MEDIA_MODALITY
│   └── PluginError                     E_PLUGIN_INVALID             (plugin)
└── (transport and stream errors arrive with the streaming client)
```

Messages say what was wrong, where, and what to do instead. They never contain secrets: values
that came from a secret-bearing setting are never interpolated.
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "InputError",
    "PluginError",
    "PreflightError",
    "RenderError",
    "ThreadFileError",
    "TurnwireError",
    "UnsupportedMediaError",
]


class TurnwireError(Exception):
    """Base class of every error turnwire raises on purpose."""

    code: str = "E_TURNWIRE"
    status: int = 500
    fatal: bool = True

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r})"


class InputError(TurnwireError):
    """The input (thread, configuration, request) is wrong; the same input fails again."""

    code = "E_INVALID_INPUT"
    status = 422


class ThreadFileError(InputError):
    """A thread file does not match schema version 1.

    :ivar path: the JSON path of the offending value, such as ``$.messages[3].role``.
    """

    code = "E_THREAD_FILE_INVALID"

    def __init__(self, message: str, *, path: str = "$") -> None:
        super().__init__(message)
        self.path = path


class ConfigError(InputError):
    """The merged configuration does not validate.

    :ivar path: the JSON path of the offending value, such as ``$.request.max_output_tokens``.
    """

    code = "E_INVALID_OPENAI_RESPONSES_OPTIONS"
    status = 529

    def __init__(self, message: str, *, path: str = "$") -> None:
        super().__init__(message)
        self.path = path


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
    """A render stage could not turn a record into wire items.

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
