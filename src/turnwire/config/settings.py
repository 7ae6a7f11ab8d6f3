"""Settings: one msgspec schema for the whole configuration, and its loader.

Load order: the packaged ``default.yaml``, then each configuration file in order (recursive
merge: mappings merge key by key, everything else is replaced), then ``${ENV}`` /
``${ENV:default}`` interpolation. The merged tree is validated before anything is built; an
unknown key, a bad value or a rejected option fails with :class:`~turnwire.errors.ConfigError`
naming its ``$.path``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

from turnwire._redact import MARK, is_secret_header, redact, remember_secret, remember_url_secrets
from turnwire.config.options import (
    BUCKETS,
    DEFAULT_STASH_KEYS,
    Bucket,
    FingerprintBinding,
    HostedReplay,
    MediaPolicy,
    MediaPolicyName,
    ReasoningReplay,
    SystemPromptChannel,
    ThoughtSurfacing,
    UnfingerprintedReasoning,
)
from turnwire.errors import ConfigError, validation_location
from turnwire.files.loading import DocumentKind, format_for
from turnwire.model.structured import OutputSchema
from turnwire.wire.request import (
    ReasoningOptions,
    StreamOptions,
    TextOptions,
    ToolChoice,
)
from turnwire.wire.tools import HostedTool, check_hosted_tools

__all__ = [
    "INSTALL_HINT",
    "ClientSettings",
    "CompactWindow",
    "ContextSettings",
    "FileSettings",
    "PluginSettings",
    "RenderSettings",
    "RequestSettings",
    "RetrySettings",
    "Settings",
    "StoreSettings",
    "ToolSettings",
    "Window",
    "WindowSettings",
    "counter_installed",
    "default_config_path",
    "load_settings",
    "profile_names",
    "profile_path",
]

NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]
NonNegative = Annotated[float, msgspec.Meta(ge=0)]


INSTALL_HINT = "install the optional token counter: pip install 'turnwire[tokens]' (toktok-rs)"


def counter_installed() -> bool:
    """Whether the optional token counter (``turnwire[tokens]``) can be imported."""
    try:
        import toktok  # noqa: F401
    except ImportError:
        return False
    return True


class CompactWindow(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``context.window.compact``: when the client compacts before a run.

    :ivar threshold: compact once the estimate of what the request would send is over N tokens.
    """

    threshold: Annotated[int, msgspec.Meta(ge=1)]


class WindowSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``context.window`` as a mapping: exactly one of ``last_turns``, ``token_budget`` or
    ``compact``.

    :ivar last_turns: keep the last N turns.
    :ivar token_budget: keep the most recent whole turns whose estimate fits in N tokens.
    :ivar compact: keep every turn, and compact before a run whose estimate is over the
        threshold.
    """

    last_turns: Annotated[int, msgspec.Meta(ge=1)] | None = None
    token_budget: Annotated[int, msgspec.Meta(ge=1)] | None = None
    compact: CompactWindow | None = None

    def __post_init__(self) -> None:
        given = [self.last_turns, self.token_budget, self.compact]
        if sum(value is not None for value in given) != 1:
            raise ValueError("give exactly one of last_turns, token_budget or compact")


Window = Literal["all"] | WindowSettings


class _Section(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pass


class RenderSettings(_Section, frozen=True, kw_only=True):
    """``render:``: how a thread becomes input items."""

    bucket_order: tuple[Bucket, ...] = BUCKETS
    system_prompt_channel: SystemPromptChannel = "instructions"
    self_identity: NonEmpty = "assistant"
    thought_surfacing: ThoughtSurfacing = "all-self"
    reasoning_replay: ReasoningReplay = "off"
    replay_compatibility: tuple[NonEmpty, ...] = ()
    fingerprint_binding: FingerprintBinding = "prefix"
    unfingerprinted_reasoning: UnfingerprintedReasoning = "drop"
    hosted_replay: HostedReplay = "sealed"
    system_prompt_template: bool = False
    unsupported_media_policy: MediaPolicyName | dict[Literal["audio", "video"], MediaPolicyName] = (
        "throw"
    )
    media_stash_keys: Annotated[tuple[NonEmpty, ...], msgspec.Meta(min_length=1)] = (
        DEFAULT_STASH_KEYS
    )
    tool_result_inline_max_bytes: Annotated[int, msgspec.Meta(ge=0)] = 4096
    strict: bool | None = None
    envelope_secret_env: str | None = "TURNWIRE_ENVELOPE_SECRET"
    # null: $XDG_CONFIG_HOME/turnwire/envelope-secret (created once), else beside the store
    envelope_secret_file: NonEmpty | None = None

    def __post_init__(self) -> None:
        if len(set(self.bucket_order)) != len(self.bucket_order):
            raise ValueError("bucket_order: a bucket is listed twice")
        if "timeline" not in self.bucket_order:
            raise ValueError(
                "bucket_order: must contain `timeline`; without it no message would be sent"
            )

    def media_policy(self) -> MediaPolicy:
        policy = self.unsupported_media_policy
        if isinstance(policy, str):
            return MediaPolicy(default=policy, stash_keys=self.media_stash_keys)
        per_kind: dict[str, MediaPolicyName] = dict(policy.items())
        return MediaPolicy(default="throw", per_kind=per_kind, stash_keys=self.media_stash_keys)


REJECTED_REQUEST_KEYS: dict[str, str] = {
    "store": "turnwire is stateless and always sends `store: false`",
    "instructions": "`instructions` is rendered from the thread's system_prompt and buckets",
    "previous_response_id": "turnwire resends the whole conversation; server-side state is off",
    "conversation": "turnwire resends the whole conversation; server-side state is off",
    "prompt": "stored prompts are server-side state, which turnwire does not use",
    "context_management": "turnwire manages the context itself; server-side state is off",
    "input": "`input` is rendered from the thread",
    "tools": "tools are declared by the thread's `tools`",
    "stream": "set client.stream instead",
}


class RequestSettings(_Section, frozen=True, kw_only=True):
    """``request:``: wire options copied into the body when set."""

    model: NonEmpty | None = None
    max_output_tokens: Annotated[int, msgspec.Meta(ge=16)] | None = None
    include: tuple[NonEmpty, ...] = ()
    reasoning: ReasoningOptions | None = None
    parallel_tool_calls: bool | None = None
    temperature: Annotated[float, msgspec.Meta(ge=0, le=2)] | None = None
    top_p: Annotated[float, msgspec.Meta(ge=0, le=1)] | None = None
    top_logprobs: Annotated[int, msgspec.Meta(ge=0, le=20)] | None = None
    truncation: Literal["auto", "disabled"] | None = None
    service_tier: Literal["auto", "default", "flex", "scale", "priority"] | None = None
    prompt_cache_key: str | None = None
    prompt_cache_retention: Literal["in_memory", "24h"] | None = None
    safety_identifier: str | None = None
    metadata: dict[str, str] | None = None
    tool_choice: ToolChoice | None = None
    text: TextOptions | None = None
    output_schema: OutputSchema | None = None
    background: Literal[False] | None = None
    stream_options: StreamOptions | None = None


class RetrySettings(_Section, frozen=True, kw_only=True):
    """``client.retry:``: the official SDK's policy by default."""

    max_retries: Annotated[int, msgspec.Meta(ge=0)] = 2
    initial_delay_s: NonNegative = 0.5
    max_delay_s: NonNegative = 8.0
    max_retry_after_s: NonNegative = 120.0
    statuses: tuple[Annotated[int, msgspec.Meta(ge=100, le=599)], ...] | None = None
    honor_retry_after: bool = True


_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_HEADER_VALUE = re.compile(r"[\t\x20-\x7e]*")


class ClientSettings(_Section, frozen=True, kw_only=True):
    """``client:``: where and how requests are sent."""

    base_url: NonEmpty = "https://api.openai.com/v1"
    api_key_env: str | None = "OPENAI_API_KEY"
    organization: str | None = None
    project: str | None = None
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    stream: bool = True
    request_timeout_s: NonNegative = 600.0
    connect_timeout_s: NonNegative = 5.0
    stream_idle_timeout_s: NonNegative = 0.0
    max_stream_bytes: Annotated[int, msgspec.Meta(ge=1)] = 256 << 20
    retry: RetrySettings = msgspec.field(default_factory=RetrySettings)
    max_iterations: Annotated[int, msgspec.Meta(ge=1)] = 8
    strict_tool_choice: bool = False
    telemetry: bool = True
    telemetry_content: bool = False

    def __post_init__(self) -> None:
        # Credentials in the configuration: no log record or error shows them from now on.
        remember_url_secrets(self.base_url)
        for name, value in self.headers.items():
            if is_secret_header(name):
                remember_secret(value)
                remember_secret(value.rpartition(" ")[2])  # the token after a scheme
        for name, value in self.headers.items():
            # What HTTP can carry (RFC 9110): a token for the name, visible ASCII, spaces and
            # tabs for the value. Anything else fails at the first send, with the value in
            # httpx's message, so it is refused here, without it.
            if not _HEADER_NAME.fullmatch(name):
                raise ValueError(f"headers: {name!r} is not an HTTP header name")
            if not _HEADER_VALUE.fullmatch(value):
                raise ValueError(
                    f"headers: the value of {name} holds a character HTTP cannot carry "
                    "(a line break, a control character, or one outside ASCII)"
                )

    def __repr__(self) -> str:
        """The fields, with every header value and the URL's password ``[redacted]``."""
        shown = []
        for name in self.__struct_fields__:
            value = getattr(self, name)
            if name == "headers":
                value = dict.fromkeys(value, MARK)
            elif name == "base_url":
                value = redact(value)
            shown.append(f"{name}={value!r}")
        return f"ClientSettings({', '.join(shown)})"

    __str__ = __repr__


class ContextSettings(_Section, frozen=True, kw_only=True):
    """``context:``: which turns a request sends (``window``) and the context-window guard
    (off while ``token_encoding`` is null)."""

    window: Window = "all"
    token_encoding: Literal["o200k_base", "o200k_harmony", "cl100k_base", "qwen3.5"] | None = None
    context_window: Annotated[int, msgspec.Meta(ge=1)] | None = None

    def __post_init__(self) -> None:
        if self.token_encoding is not None and self.context_window is None:
            raise ValueError("context_window: required when token_encoding is set")
        if self.token_encoding is not None and not counter_installed():
            raise ValueError(f"token_encoding: the context-window guard needs it: {INSTALL_HINT}")


class PluginSettings(_Section, frozen=True, kw_only=True):
    """``plugins:``: which plugins load, tracing, and per-plugin settings."""

    load_entrypoints: bool = True
    allow: tuple[str, ...] | None = None
    block: tuple[str, ...] = ()
    trace: bool = False
    settings: dict[str, dict[str, Any]] = msgspec.field(default_factory=dict)


class StoreSettings(_Section, frozen=True, kw_only=True):
    """``store:``: where ``--thread`` conversations live: ``url``, a PostgreSQL database, or
    ``path``, a SQLite file (both null: ``$TURNWIRE_STORE``, a URL or a path, else
    ``$XDG_DATA_HOME/turnwire/threads.db``); ``folder``: a PostgreSQL store's local folder,
    whose ``files/`` holds imported files (null: ``$XDG_DATA_HOME/turnwire``)."""

    path: str | None = None
    url: str | None = None
    folder: NonEmpty | None = None

    def __post_init__(self) -> None:
        if self.url is not None and not self.url.startswith(("postgresql://", "postgres://")):
            raise ValueError(
                "url: a PostgreSQL URL starts with postgresql:// (a SQLite file goes in `path`)"
            )
        if self.url is not None and self.path is not None:
            raise ValueError("set `url` (PostgreSQL) or `path` (SQLite), not both")


_HANDLER = re.compile(r"[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*")


class ToolSettings(_Section, frozen=True, kw_only=True):
    """``tools:``: which code runs a tool, and for how long.

    A thread names tools, never the code behind them: ``handlers`` (tool name →
    ``module:function``, written by the deployer), the ``turnwire.tools`` entry points and the
    Python API register handlers; a thread's own ``handler:`` runs only when it matches one of
    the glob patterns of ``allow_thread_handlers`` (empty: never).
    """

    handlers: dict[NonEmpty, NonEmpty] = msgspec.field(default_factory=dict)
    allow_thread_handlers: tuple[NonEmpty, ...] = ()
    load_entrypoints: bool = True
    timeout_s: Annotated[float, msgspec.Meta(gt=0)] = 30.0
    max_result_bytes: Annotated[int, msgspec.Meta(ge=1)] = 8 * 2**20
    hosted: tuple[HostedTool, ...] = ()
    allow_thread_mcp_servers: tuple[NonEmpty, ...] = ()

    def __post_init__(self) -> None:
        if self.hosted:
            check_hosted_tools(self.hosted)
        for name, target in self.handlers.items():
            if not _HANDLER.fullmatch(target):
                raise ValueError(
                    f"handlers: {name}: {target!r} is not `module:function` "
                    "(such as `mypackage.tools:get_weather`)"
                )


class FileSettings(_Section, frozen=True, kw_only=True):
    """``files:``: where file pointers may lead, and how much is read.

    ``roots`` null: a thread file's own folder; for a stored thread, the ``files`` folder next
    to the store and the files named for the turn. A list replaces those defaults (absolute
    paths only; an empty list allows no pointer at all).
    """

    roots: tuple[NonEmpty, ...] | None = None
    max_file_bytes: Annotated[int, msgspec.Meta(ge=0)] = 32 * 2**20
    max_request_bytes: Annotated[int, msgspec.Meta(ge=0)] = 64 * 2**20

    def __post_init__(self) -> None:
        for root in self.roots or ():
            if not os.path.isabs(root):
                raise ValueError(f"roots: {root!r} is not an absolute path")


class Settings(_Section, frozen=True, kw_only=True):
    """The whole configuration."""

    render: RenderSettings = msgspec.field(default_factory=RenderSettings)
    request: RequestSettings = msgspec.field(default_factory=RequestSettings)
    client: ClientSettings = msgspec.field(default_factory=ClientSettings)
    context: ContextSettings = msgspec.field(default_factory=ContextSettings)
    plugins: PluginSettings = msgspec.field(default_factory=PluginSettings)
    store: StoreSettings = msgspec.field(default_factory=StoreSettings)
    tools: ToolSettings = msgspec.field(default_factory=ToolSettings)
    files: FileSettings = msgspec.field(default_factory=FileSettings)


def default_config_path() -> Path:
    """The packaged ``default.yaml`` (in a checkout, ``config/default.yaml``)."""
    packaged = resources.files("turnwire").joinpath("default.yaml")
    if packaged.is_file():
        return Path(str(packaged))
    return Path(__file__).resolve().parents[3] / "config" / "default.yaml"


def profile_names() -> list[str]:
    """The profiles shipped with turnwire (``--profile NAME``)."""
    return sorted(path.stem for path in _profile_folder().glob("*.yaml") if path.stem != "default")


def _profile_folder() -> Path:
    packaged = resources.files("turnwire").joinpath("profiles")
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(__file__).resolve().parents[3] / "config"


def profile_path(name: str) -> Path:
    """The file of the shipped profile ``name`` (in the wheel, or ``config/`` in a checkout).

    :raises ConfigError: no profile has that name.
    """
    path = _profile_folder() / f"{name}.yaml"
    if name in profile_names() and path.is_file():
        return path
    known = ", ".join(profile_names()) or "none"
    raise ConfigError(f"--profile {name!r}: no shipped profile has that name (known: {known})")


def _read(path: Path) -> dict[str, Any]:
    data = CONFIG_FILES.parse(CONFIG_FILES.read(path), name=str(path), format=format_for(path))
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"configuration file {path} must hold a mapping at the top level")
    return data


CONFIG_FILES = DocumentKind("configuration file", ConfigError)
"""How configuration files are read: the limits of thread files, and :class:`ConfigError`."""


def merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Recursive merge: mappings merge key by key; any other value replaces."""
    merged = dict(base)
    for key, value in override.items():
        current = merged.get(key)
        if isinstance(current, Mapping) and isinstance(value, Mapping):
            merged[key] = merge(current, value)
        else:
            merged[key] = value
    return merged


_PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::([^}]*))?\}")


def _interpolate(value: Any, env: Mapping[str, str], path: str) -> Any:
    if isinstance(value, dict):
        return {k: _interpolate(v, env, f"{path}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [_interpolate(v, env, f"{path}[{i}]") for i, v in enumerate(value)]
    if not isinstance(value, str) or "${" not in value:
        return value

    def substitute(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in env:
            return env[name]
        if default is None:
            raise ConfigError(
                f"environment variable {name} is not set and ${{{name}}} has no default "
                f"(write ${{{name}:value}})",
                path=path,
            )
        return default

    whole = _PLACEHOLDER.fullmatch(value)
    text = _PLACEHOLDER.sub(substitute, value)
    if whole is None:
        return text
    # A value that is one placeholder takes the YAML type of what it expands to, within the
    # limits of a file (a huge integer or an alias bomb stays a string, for validation to name).
    if not text:
        return None
    try:
        return CONFIG_FILES.parse(text.encode(), name=path, format="yaml")
    except (ConfigError, UnicodeEncodeError):
        return text


def _check_rejected(tree: Mapping[str, Any]) -> None:
    request = tree.get("request")
    if isinstance(request, Mapping):
        for key in request:
            if key in REJECTED_REQUEST_KEYS:
                raise ConfigError(
                    f"$.request.{key}: cannot be set: {REJECTED_REQUEST_KEYS[key]}",
                    path=f"$.request.{key}",
                )
        if request.get("background") is True:
            raise ConfigError(
                "$.request.background: only false is accepted: background responses need "
                "polling, and turnwire reads the answer from the stream of the request itself",
                path="$.request.background",
            )


def settings_from_tree(tree: Mapping[str, Any]) -> Settings:
    """Validate a merged configuration tree."""
    _check_rejected(tree)
    try:
        return msgspec.convert(tree, Settings)
    except msgspec.ValidationError as err:
        path, detail = validation_location(err)
        raise ConfigError(f"{path}: {detail}", path=path) from err


def load_settings(
    config_files: Iterable[str | os.PathLike[str]] = (),
    *,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Load, merge, interpolate and validate the configuration.

    :param config_files: profiles merged over the packaged default, in order.
    :param env: the environment for ``${ENV:default}`` (``os.environ`` when omitted).
    :param overrides: a last layer given in code (a mapping shaped like the files).
    """
    tree = _read(default_config_path())
    for file in config_files:
        tree = merge(tree, _read(Path(file)))
    if overrides:
        tree = merge(tree, overrides)
    tree = _interpolate(tree, os.environ if env is None else env, "$")
    return settings_from_tree(tree)
