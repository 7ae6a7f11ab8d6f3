"""Settings: one msgspec schema for the whole configuration, and its loader.

Every default is a field default of the Structs below, and every field is described by an
``:ivar:`` line of its Struct (the configuration reference and the JSON Schema read both). The
packaged ``default.yaml`` sets only what a Struct cannot: the endpoint read from the
environment (``$OPENAI_BASE_URL``, ``$OPENAI_ORG_ID``, ``$OPENAI_PROJECT_ID``).

Load order: the packaged ``default.yaml``, then each configuration file in order (recursive
merge: mappings merge key by key, everything else is replaced), then ``${ENV}`` /
``${ENV:default}`` interpolation. The merged tree is validated before anything is built; an
unknown key, a bad value or a rejected option fails with :class:`~turnwire.errors.ConfigError`
naming its ``$.path``.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

from turnwire._redact import (
    MARK,
    is_secret_header,
    is_secret_parameter,
    redact,
    remember_query_secrets,
    remember_secret,
    remember_url_secrets,
)
from turnwire.config.options import (
    BUCKETS,
    DEFAULT_STASH_KEYS,
    Bucket,
    ContextPlacement,
    FingerprintBinding,
    HostedReplay,
    MediaPolicy,
    MediaPolicyName,
    ReasoningContent,
    ReasoningReplay,
    SystemPromptChannel,
    ThoughtSurfacing,
    UnfingerprintedReasoning,
    bucket_order_problem,
)
from turnwire.errors import ConfigError, ProviderUnsupportedError, validation_location
from turnwire.files.loading import DocumentKind, format_for
from turnwire.model.records import REPLAY_TAG
from turnwire.model.structured import OutputSchema
from turnwire.wire.content import ImageDetail
from turnwire.wire.request import (
    ContextManagement,
    PromptCacheOptions,
    ReasoningOptions,
    RequestBody,
    StreamOptions,
    TextOptions,
    ToolChoice,
)
from turnwire.wire.tools import HostedTool, check_hosted_tools, runs_on_server

__all__ = [
    "INSTALL_HINT",
    "OWNED_FIELDS",
    "ClientSettings",
    "CompactWindow",
    "ContextSettings",
    "FileSettings",
    "PluginSettings",
    "ProviderSettings",
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
    "extra_field_problem",
    "first_server_run",
    "load_settings",
    "profile_names",
    "profile_path",
    "replay_problems",
    "replay_tags",
    "unsupported",
]

NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]
NonNegative = Annotated[float, msgspec.Meta(ge=0)]


INSTALL_HINT = (
    "install the optional token counter (toktok-rs), the `tokens` extra: `uv sync --extra tokens` "
    "in a clone, or `pip install 'dist/turnwire-<version>-py3-none-any.whl[tokens]'`"
)


def counter_installed() -> bool:
    """Whether the optional token counter (``turnwire[tokens]``) can be imported."""
    try:
        import toktok  # noqa: F401
    except ImportError:
        return False
    return True


class CompactWindow(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``context.window.compact``: when the client compacts before a run.

    :ivar threshold: Compact (POST /responses/compact) before a run once the estimate of the records
        its request would send, from the latest compaction on, is over N tokens.
    """

    threshold: Annotated[int, msgspec.Meta(ge=1)]


class WindowSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``context.window`` as a mapping: exactly one of ``last_turns``, ``token_budget`` or
    ``compact``.

    :ivar last_turns: Send at most N turns.
    :ivar token_budget: Send whole turns whose estimate fits in N tokens (the last turn always).
    :ivar cut_to: What a cut of ``last_turns`` or ``token_budget`` leaves, as a fraction of the
        limit: over the limit, the window drops its oldest turns until it holds at most this
        much, then grows again, so a request extends the previous one byte for byte until the
        next cut. 1 drops only what is over the limit (a window sliding by a turn each request).
    :ivar compact: Keep every turn, and compact before a run whose estimate is over ``threshold``
        (excludes ``last_turns``, ``token_budget`` and ``cut_to``).
    """

    last_turns: Annotated[int, msgspec.Meta(ge=1)] | None = None
    token_budget: Annotated[int, msgspec.Meta(ge=1)] | None = None
    cut_to: Annotated[float, msgspec.Meta(gt=0, le=1)] = 0.5
    compact: CompactWindow | None = None

    def __post_init__(self) -> None:
        given = [self.last_turns, self.token_budget, self.compact]
        if sum(value is not None for value in given) != 1:
            raise ValueError("give exactly one of last_turns, token_budget or compact")
        if self.compact is not None and self.cut_to != 0.5:
            raise ValueError("cut_to: only with last_turns or token_budget")


Window = Literal["all"] | WindowSettings


class _Section(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pass


class RenderSettings(_Section, frozen=True, kw_only=True):
    """``render:``: how a thread becomes input items.

    :ivar bucket_order: The order of the context buckets; must hold ``timeline``. Buckets after
        ``timeline`` go in a trailing system item.
    :ivar system_prompt_channel: Where the system prompt goes: the ``instructions`` field, a
        developer item or a system item.
    :ivar context_placement: Where memories and retrieved documents go: ``leading``, in their
        buckets of ``bucket_order`` (with the system prompt, or trailing), so adding one rewrites
        the start of every later request; ``timeline``, each once, as a developer item at its
        ``created_at`` in the timeline (after the records of the same instant; undated ones at
        the head of the timeline, memories first), so adding one extends the request, and the
        leading content keeps only what does not change (the system prompt, the standing
        instructions). A compaction or a window never leaves them out.
    :ivar self_identity: The identifier of the agent's own output; other identities are peers.
    :ivar thought_surfacing: Which thoughts the model sees: every own thought, the latest own one,
        or all (peers' too).
    :ivar reasoning_replay: How thoughts are sent: never, as native reasoning items with
        ``encrypted_content``, or as their summary text.
    :ivar reasoning_content: Whether a replayed reasoning item keeps its raw reasoning text
        (``content``, which some models return): ``replay`` sends it as it came; ``omit`` leaves
        it out (the Open Responses specification takes no ``content`` back).
    :ivar replay_compatibility: The replay tags this deployment accepts. Unset (null), the one
        its replay mode implies: ``openai-responses-reasoning-v1`` (the reasoning turnwire records)
        while ``reasoning_replay`` replays (``encrypted``, ``summary-only``), none while it is
        ``off``; a list (``[]`` too) says exactly which.
    :ivar fingerprint_binding: What a replayed reasoning item is bound to: the exact request prefix,
        or the model and endpoint only.
    :ivar unfingerprinted_reasoning: Thoughts with a replay payload but no ``prefix_fingerprint``
        (reasoning imported from elsewhere): ``drop`` them, or ``trust`` them, replaying each when
        its partner item pairs (``turnwire fingerprint`` stamps them instead).
    :ivar hosted_replay: ``sealed``: a hosted item goes back as an item only when this deployment
        recorded it (its ``seal`` is valid; a ``compaction`` needs none), else as text, since an
        item can declare tools to the API or approve an MCP call; ``all``: every replayable item,
        sealed or not (thread files you trust).
    :ivar system_prompt_template: Fill ``{name}`` placeholders of the system prompt from the
        render context (``--render-context name=value``, ``render_context=``); names only,
        unknown ones stay as written.
    :ivar unsupported_media_policy: What audio and video become: an error, a stashed transcript or
        caption, or a short description; one policy or one per kind.
    :ivar media_stash_keys: The stash keys ``fallback-stash`` tries, in order.
    :ivar image_detail: The ``detail`` of every image without its own (``low``, ``high``,
        ``auto``, ``original``); null: ``auto``. An attachment's ``detail`` wins.
    :ivar tool_result_inline_max_bytes: Tool results and artifacts up to this size are inlined;
        larger ones become handles.
    :ivar strict: The ``strict`` flag of every function tool without its own; null: strict exactly
        when the tool's schema qualifies (every object closed and listing all its properties in
        ``required``, every schema typed, only keywords strict mode takes), else false.
    :ivar envelope_secret_env: The environment variable holding the secret that keys the envelope
        nonces; without a secret they are stable but predictable (a warning).
    :ivar envelope_secret_file: The file that holds the envelope secret when the variable
        ``envelope_secret_env`` names is unset (null: ``$XDG_CONFIG_HOME/turnwire/envelope-secret``,
        else a file beside the thread store), created with a random secret on first use.
    """

    bucket_order: tuple[Bucket, ...] = BUCKETS
    system_prompt_channel: SystemPromptChannel = "instructions"
    context_placement: ContextPlacement = "leading"
    self_identity: NonEmpty = "assistant"
    thought_surfacing: ThoughtSurfacing = "all-self"
    reasoning_replay: ReasoningReplay = "off"
    reasoning_content: ReasoningContent = "replay"
    replay_compatibility: tuple[NonEmpty, ...] | None = None
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
    image_detail: ImageDetail | None = None
    tool_result_inline_max_bytes: Annotated[int, msgspec.Meta(ge=0)] = 4096
    strict: bool | None = None
    envelope_secret_env: str | None = "TURNWIRE_ENVELOPE_SECRET"
    # null: $XDG_CONFIG_HOME/turnwire/envelope-secret (created once), else beside the store
    envelope_secret_file: NonEmpty | None = None

    def __post_init__(self) -> None:
        problem = bucket_order_problem(self.bucket_order)
        if problem is not None:
            raise ValueError(f"bucket_order: {problem}")

    @property
    def replay_tags(self) -> tuple[str, ...]:
        """The replay tags in force: ``replay_compatibility``, else the ones
        ``reasoning_replay`` implies (:func:`replay_tags`)."""
        return replay_tags(self.reasoning_replay, self.replay_compatibility)

    def media_policy(self) -> MediaPolicy:
        policy = self.unsupported_media_policy
        if isinstance(policy, str):
            return MediaPolicy(default=policy, stash_keys=self.media_stash_keys)
        per_kind: dict[str, MediaPolicyName] = dict(policy.items())
        return MediaPolicy(default="throw", per_kind=per_kind, stash_keys=self.media_stash_keys)


def replay_tags(
    reasoning_replay: ReasoningReplay, replay_compatibility: tuple[str, ...] | None
) -> tuple[str, ...]:
    """The replay tags a render accepts: ``replay_compatibility`` when it is set, else the tag
    of the reasoning turnwire records (:data:`~turnwire.model.records.REPLAY_TAG`) while
    ``reasoning_replay`` replays, and none while it is ``off``."""
    if replay_compatibility is not None:
        return replay_compatibility
    return () if reasoning_replay == "off" else (REPLAY_TAG,)


def replay_problems(render: RenderSettings) -> list[str]:
    """The ways ``render:`` replays no reasoning it could (what ``turnwire check-config`` warns
    of), one sentence each: a replay mode whose ``replay_compatibility`` is empty or leaves
    out the tag of the reasoning turnwire records, or tags listed while replay is ``off``."""
    tags, mode = render.replay_compatibility, render.reasoning_replay
    if tags is None:  # implied by the mode: always the one that replays
        return []
    listed = ", ".join(tags)
    if mode == "off":
        if not tags:
            return []
        return [
            f"render.replay_compatibility lists {listed} but render.reasoning_replay is off: "
            "no reasoning is replayed (set reasoning_replay to encrypted)"
        ]
    if not tags:
        return [
            f"render.reasoning_replay is {mode} but render.replay_compatibility is empty: no "
            f"reasoning is replayed (leave replay_compatibility unset for {REPLAY_TAG})"
        ]
    if REPLAY_TAG not in tags:
        return [
            f"render.reasoning_replay is {mode} but render.replay_compatibility lists only "
            f"{listed}: the reasoning turnwire records ({REPLAY_TAG}) is not replayed"
        ]
    return []


REJECTED_REQUEST_KEYS: dict[str, str] = {
    "store": "turnwire is stateless and always sends `store: false`",
    "instructions": "`instructions` is rendered from the thread's system_prompt and buckets",
    "previous_response_id": "turnwire resends the whole conversation; server-side state is off",
    "conversation": "turnwire resends the whole conversation; server-side state is off",
    "prompt": "stored prompts are server-side state, which turnwire does not use",
    "input": "`input` is rendered from the thread",
    "tools": "tools are declared by the thread's `tools`",
    "stream": "set client.stream instead",
}


class RequestSettings(_Section, frozen=True, kw_only=True):
    """``request:``: wire options copied into the body when set.

    :ivar model: The model, unless the thread or ``--model`` names one.
    :ivar max_output_tokens: The output token limit (at least 16).
    :ivar include: Extra output to include (``reasoning.encrypted_content`` is added when
        ``render.reasoning_replay`` is ``encrypted``).
    :ivar reasoning: Reasoning effort and summary.
    :ivar parallel_tool_calls: Whether the model may call several tools at once.
    :ivar temperature: Sampling temperature, 0 to 2.
    :ivar top_p: Nucleus sampling, 0 to 1.
    :ivar top_logprobs: Log-probabilities returned per token, 0 to 20.
    :ivar truncation: The API's truncation strategy.
    :ivar service_tier: The processing tier.
    :ivar prompt_cache_key: The key that routes requests to the same prompt cache: ``thread``
        sends one derived from the thread's identity (``tw-`` and 32 hex digits of a SHA-256 of
        a stored thread's id, else of the thread file's opening record: the same on every turn
        of a thread, different between threads, never the id itself); ``none`` (or null) sends
        none; any other string is sent as it is.
    :ivar prompt_cache_retention: How long a cached prompt is kept (deprecated by the API in
        favour of ``prompt_cache_options.ttl``).
    :ivar prompt_cache_options: Prompt caching options (GPT-5.6 and later): ``mode``
        (``implicit``: one implicit breakpoint plus up to three explicit ones; ``explicit``: only
        the explicit ones, and no caching without one), ``ttl`` (``30m`` or ``12h``),
        ``prewarm`` (warm the cache without generating) and ``comparison_response_id`` (ask for
        cache diagnostics against that response). Endpoints that refuse the field (the
        Codex/ChatGPT backend, servers older than GPT-5.6) need it unset.
    :ivar prompt_cache_breakpoints: Where turnwire puts an explicit ``prompt_cache_breakpoint``
        (GPT-5.6 and later): ``off`` puts none; ``auto`` puts one on the last content block of
        the stable leading prefix: the leading developer or system item when the system prompt
        goes as an item, else the last input content block before the newest user message.
        Off by default: not every endpoint accepts the field, and a breakpoint on a prefix
        that is not reused is billed as a cache write.
    :ivar safety_identifier: A stable, non-identifying id of the end user.
    :ivar metadata: String key-value pairs stored with the response.
    :ivar tool_choice: ``none``, ``auto``, ``required``, or the tool the model must call: a
        function (``{type: function, name: ...}``), a custom tool, an MCP server's tool, ``shell``,
        ``apply_patch``, a built-in tool by type (``{type: image_generation}``), a program
        (``{type: programmatic_tool_calling}``); or ``{type: allowed_tools, mode: auto|required,
        tools: [...]}``, the declared tools the model may call (the declarations stay the same,
        so the prompt cache holds). A tool it names that the request does not declare fails the
        preflight (``tool-choice-declared``; a function: ``client.strict_tool_choice``).
    :ivar text: Output format and verbosity.
    :ivar output_schema: The JSON Schema every answer must follow (structured outputs); it replaces
        ``text.format`` in the body, keeping ``text.verbosity``. A thread's own ``output_schema``
        and ``output_schema=`` / ``--output-schema`` override it.
    :ivar background: Only false: background responses need polling.
    :ivar stream_options: Options of the streamed answer.
    :ivar context_management: Server-side compaction: ``[{type: compaction, compact_threshold:
        N}]`` lets the API compact the input once it reaches N tokens; the compaction item it
        returns is recorded like one from ``POST /responses/compact`` and later requests send it
        in place of what it covers (see :mod:`turnwire.rendering.compaction`). Off by default:
        turnwire's own ``context.window`` and ``turnwire threads compact`` keep the context.
    :ivar extra: Fields turnwire does not model, sent as given at the end of the body
        (``{max_tool_calls: 3}``, whatever the API adds next). A field turnwire models is set
        by its own key (``request.temperature``), and the fields turnwire owns (``store``,
        ``input``, ``instructions``, ``stream``, ``background``, ``previous_response_id``,
        ``conversation``) cannot be set at all; either is refused at load, naming the key. The
        preflight check still runs on the rest of the body; the server alone judges these.
    """

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
    prompt_cache_key: str | None = "thread"
    prompt_cache_retention: Literal["in_memory", "24h"] | None = None
    prompt_cache_options: PromptCacheOptions | None = None
    prompt_cache_breakpoints: Literal["off", "auto"] = "off"
    safety_identifier: str | None = None
    metadata: dict[str, str] | None = None
    tool_choice: ToolChoice | None = None
    text: TextOptions | None = None
    output_schema: OutputSchema | None = None
    background: Literal[False] | None = None
    stream_options: StreamOptions | None = None
    context_management: tuple[ContextManagement, ...] | None = None
    extra: dict[str, Any] = msgspec.field(default_factory=dict)

    def __post_init__(self) -> None:
        for key in self.extra:
            problem = extra_field_problem(key)
            if problem:
                raise ValueError(f"extra.{key}: {problem}")


# What a request's unmodelled fields may never set: the fields that make turnwire stateless
# and exact (store: false, the rendered input and instructions, the stream it reads) and the
# server-state options it never uses.
OWNED_FIELDS = frozenset(
    {
        "store",
        "input",
        "instructions",
        "stream",
        "background",
        "previous_response_id",
        "conversation",
    }
)


def extra_field_problem(key: str) -> str | None:
    """Why ``key`` cannot be an unmodelled request field (``request.extra``, ``extra_body=``),
    or ``None`` when it can."""
    if key in OWNED_FIELDS:
        return (
            f"turnwire owns `{key}` (every request is stateless: store false, its input "
            "rendered from the thread); it cannot be set"
        )
    if key in RequestBody.__struct_fields__:
        return f"turnwire models `{key}`: set request.{key} instead"
    if key in REJECTED_REQUEST_KEYS:
        return f"`{key}` cannot be set: {REJECTED_REQUEST_KEYS[key]}"
    return None


class RetrySettings(_Section, frozen=True, kw_only=True):
    """``client.retry:``: the official SDK's policy by default.

    :ivar max_retries: Retries after the first attempt.
    :ivar initial_delay_s: The first backoff delay, in seconds.
    :ivar max_delay_s: The longest backoff delay, in seconds.
    :ivar max_retry_after_s: The longest ``retry-after`` the client honours, in seconds.
    :ivar statuses: The HTTP statuses retried (null: 408, 409, 429 and 5xx).
    :ivar honor_retry_after: Wait as long as the server's ``retry-after-ms`` / ``retry-after`` asks
        (false: the backoff alone decides, and a server delay over ``max_retry_after_s`` no longer
        stops the retries).
    """

    max_retries: Annotated[int, msgspec.Meta(ge=0)] = 2
    initial_delay_s: NonNegative = 0.5
    max_delay_s: NonNegative = 8.0
    max_retry_after_s: NonNegative = 120.0
    statuses: tuple[Annotated[int, msgspec.Meta(ge=100, le=599)], ...] | None = None
    honor_retry_after: bool = True


_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_HEADER_VALUE = re.compile(r"[\t\x20-\x7e]*")


class ClientSettings(_Section, frozen=True, kw_only=True, weakref=True):
    """``client:``: where and how requests are sent.

    :ivar base_url: The Responses API endpoint (``--base-url`` overrides it); by default
        ``$OPENAI_BASE_URL``, else ``https://api.openai.com/v1``.
    :ivar api_key_env: The environment variable holding the API key (null: send none, to any
        host).
    :ivar auth_header: The HTTP header that carries the API key (Azure: ``api-key``).
    :ivar auth_scheme: The word before the key in that header (null: the key alone, as Azure's
        ``api-key`` header takes it).
    :ivar query: Query parameters on every request (Azure's dated endpoints:
        ``{api-version: 2025-04-01-preview}``); a query written in ``base_url`` is read the
        same way, never sent as part of the path.
    :ivar organization: The ``OpenAI-Organization`` header (by default ``$OPENAI_ORG_ID``).
    :ivar project: The ``OpenAI-Project`` header (by default ``$OPENAI_PROJECT_ID``).
    :ivar headers: Extra HTTP headers on every request.
    :ivar stream: Stream the answer (server-sent events).
    :ivar request_timeout_s: Seconds one attempt may take, to its last byte (0: no limit).
    :ivar connect_timeout_s: Seconds to open the connection.
    :ivar stream_idle_timeout_s: Seconds a stream may stay silent before it counts as stalled (0: no
        limit).
    :ivar max_stream_bytes: The most bytes of one streamed answer, decoded (256 MiB); the items and
        responses it carries may decode to four times that (an estimate made before they are
        decoded); past either the stream is dropped with ``E_OPENAI_RESPONSES_STREAM_ERROR`` and
        nothing of it is recorded, so a server that never ends its answer cannot exhaust memory.
    :ivar retry: The retry policy.
    :ivar max_iterations: The most requests one run sends while the model keeps calling tools;
        a run that reaches it with the model still calling tools keeps what it recorded and
        fails with ``E_MAX_ITERATIONS``.
    :ivar strict_tool_choice: Fail, instead of warning, when ``request.tool_choice`` forces a tool
        the thread hides or does not have.
    :ivar telemetry: OpenTelemetry spans of each run, request and tool call (GenAI semantic
        conventions), when ``opentelemetry-api`` is installed (``turnwire[otel]``) and the
        application configured a tracer provider.
    :ivar telemetry_content: Put content in the spans too (tool arguments and results, the answer
        text); off by default, since content may be personal data.
    """

    base_url: NonEmpty = "https://api.openai.com/v1"
    api_key_env: str | None = "OPENAI_API_KEY"
    auth_header: Annotated[str, msgspec.Meta(pattern=r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")] = (
        "Authorization"
    )
    auth_scheme: Annotated[str, msgspec.Meta(pattern=r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")] | None = (
        "Bearer"
    )
    query: dict[str, str] = msgspec.field(default_factory=dict)
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
        remember_url_secrets(self.base_url, holder=self)
        remember_query_secrets(self.query.items(), holder=self)
        for name, value in self.headers.items():
            if is_secret_header(name):
                remember_secret(value, holder=self)
                remember_secret(value.rpartition(" ")[2], holder=self)  # the token after a scheme
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
        """The fields, with every header value, the URL's password and the value of each query
        parameter named as a credential ``[redacted]``."""
        shown = []
        for name in self.__struct_fields__:
            value = getattr(self, name)
            if name == "headers":
                value = dict.fromkeys(value, MARK)
            elif name == "query":
                value = {k: MARK if is_secret_parameter(k) else v for k, v in value.items()}
            elif name == "base_url":
                value = redact(value)
            shown.append(f"{name}={value!r}")
        return f"ClientSettings({', '.join(shown)})"

    __str__ = __repr__


class ContextSettings(_Section, frozen=True, kw_only=True):
    """``context:``: which turns a request sends (``window``) and the context-window guard
    (off while ``token_encoding`` is null).

    :ivar window: Which turns a request sends: ``all``, ``{last_turns: N}``, ``{token_budget: N}``
        (over its limit, either drops its oldest turns down to ``cut_to`` of it, half by default)
        or ``{compact: {threshold: N}}`` (every turn; before a run whose estimate is over N tokens
        the client compacts what precedes the question); a window cuts only between turns, never
        inside one response, and keeps the system content, and a render always starts at the
        thread's latest compaction item.
    :ivar token_encoding: The tokenizer of the estimate; null turns the guard off (needs
        ``turnwire[tokens]``).
    :ivar context_window: The most input tokens a request may hold; required with
        ``token_encoding``.
    """

    window: Window = "all"
    token_encoding: Literal["o200k_base", "o200k_harmony", "cl100k_base", "qwen3.5"] | None = None
    context_window: Annotated[int, msgspec.Meta(ge=1)] | None = None

    def __post_init__(self) -> None:
        if self.token_encoding is not None and self.context_window is None:
            raise ValueError("context_window: required when token_encoding is set")
        if self.token_encoding is not None and not counter_installed():
            raise ValueError(f"token_encoding: the context-window guard needs it: {INSTALL_HINT}")


class PluginSettings(_Section, frozen=True, kw_only=True):
    """``plugins:``: which plugins load, tracing, and per-plugin settings.

    :ivar load_entrypoints: Load the plugins installed in the ``turnwire.plugins`` entry-point group
        (false: built-ins only).
    :ivar allow: Only these entry points load (null: every one not blocked).
    :ivar block: These entry points never load.
    :ivar trace: Log every stage call.
    :ivar settings: Settings per entry-point name, validated by that plugin.
    """

    load_entrypoints: bool = True
    allow: tuple[str, ...] | None = None
    block: tuple[str, ...] = ()
    trace: bool = False
    settings: dict[str, dict[str, Any]] = msgspec.field(default_factory=dict)

    def __repr__(self) -> str:
        """The fields, each plugin's setting values ``[redacted]`` (a plugin's token is one of
        them; only the plugin knows which)."""
        shown = []
        for name in self.__struct_fields__:
            value = getattr(self, name)
            if name == "settings":
                value = {plugin: dict.fromkeys(given, MARK) for plugin, given in value.items()}
            shown.append(f"{name}={value!r}")
        return f"PluginSettings({', '.join(shown)})"

    __str__ = __repr__


class StoreSettings(_Section, frozen=True, kw_only=True, weakref=True):
    """``store:``: where ``--thread`` conversations live. ``--store`` wins over it; with it null,
    the store is ``$TURNWIRE_STORE`` (a URL or a path), else ``$XDG_DATA_HOME/turnwire/threads.db``.

    :ivar location: The store: a SQLite file, or a PostgreSQL database as a
        ``postgresql://user@host:port/dbname`` URL (needs ``turnwire[postgres]``; keep the
        password in ``$PGPASSWORD`` or ``~/.pgpass``), as ``--store``, ``$TURNWIRE_STORE`` and
        ``open_store(location)`` take it (null: ``$TURNWIRE_STORE``, else
        ``$XDG_DATA_HOME/turnwire/threads.db``).
    :ivar path: Deprecated: the name ``location`` had for a SQLite file (still read, with a
        warning, for one version).
    :ivar url: Deprecated: the name ``location`` had for a PostgreSQL URL (still read, with a
        warning, for one version).
    :ivar folder: A PostgreSQL store's local folder: imported files go to ``files/`` in it (null:
        ``$XDG_DATA_HOME/turnwire``; hosts sharing a database share it, or import no files).
    """

    location: NonEmpty | None = None
    path: str | None = None
    url: str | None = None
    folder: NonEmpty | None = None

    def __post_init__(self) -> None:
        # A PostgreSQL URL's password: no log record or error shows it from now on.
        for name in ("location", "url"):
            value = getattr(self, name)
            if value is not None:
                remember_url_secrets(value, holder=self)
        given = [name for name in ("location", "url", "path") if getattr(self, name) is not None]
        if len(given) > 1:
            raise ValueError(
                "set `location` alone (a SQLite file or a postgresql:// URL), not "
                + " and ".join(given)
            )
        if self.url is not None and not self.url.startswith(("postgresql://", "postgres://")):
            raise ValueError(
                "url: a PostgreSQL URL starts with postgresql:// (a SQLite file goes in `location`)"
            )
        for old in ("path", "url"):
            if getattr(self, old) is not None:
                warnings.warn(
                    f"store.{old} is deprecated: write store.location (a SQLite file or a "
                    "postgresql:// URL, the same value)",
                    DeprecationWarning,
                    stacklevel=2,
                )

    @property
    def where(self) -> str | None:
        """The store's location as configured, under its name or the ones it had before."""
        return self.location or self.url or self.path

    def __repr__(self) -> str:
        """The fields, a PostgreSQL URL's password ``[redacted]``."""
        shown = []
        for name in self.__struct_fields__:
            value = getattr(self, name)
            shown.append(f"{name}={redact(value) if isinstance(value, str) else value!r}")
        return f"StoreSettings({', '.join(shown)})"

    __str__ = __repr__


_HANDLER = re.compile(r"[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*")


class ToolSettings(_Section, frozen=True, kw_only=True):
    """``tools:``: which code runs a tool, and for how long.

    A thread names tools, never the code behind them: ``handlers`` (tool name →
    ``module:function``, written by the deployer), the ``turnwire.tools`` entry points and the
    Python API register handlers; a thread's own ``handler:`` runs only when it matches one of
    the glob patterns of ``allow_thread_handlers`` (empty: never).

    :ivar handlers: Tool name to ``module:function``: the code that runs each tool, chosen by the
        deployer (a thread names tools, never code).
    :ivar allow_thread_handlers: Glob patterns a thread's own ``handler:`` must match to run (empty:
        a thread's handler never runs; the examples profile allows ``turnwire.examples.*``).
    :ivar load_entrypoints: Register the handlers of the ``turnwire.tools`` entry-point group (entry
        point name = tool name).
    :ivar timeout_s: Seconds one handler call may take; past it, the call is an error result the
        model reads.
    :ivar max_result_bytes: The largest result a handler may return; a larger one is an error
        result.
    :ivar hosted: Tools other than functions every request declares, before a thread's own
        ``hosted_tools``: hosted ones (web search, file search, code interpreter, MCP servers,
        image generation) and client-executed ones (custom tools, shell, local shell,
        apply_patch, computer use: each needs a handler under ``handlers``, by name for a custom
        tool, by kind for the others); a thread's declaration of the same type (MCP: the same
        ``server_label``; a custom tool: the same ``name``) is not sent.
    :ivar allow_thread_mcp_servers: Patterns a thread's own MCP server must match to be declared
        (empty: a thread may declare none; ``E_MCP_SERVER_NOT_ALLOWED`` before anything is
        sent). A ``server_url`` is matched as a URL against URL patterns: scheme, host (exact,
        or ``*.`` and a suffix on a label boundary: ``https://*.corp.example/*``), port and a
        path prefix ending in ``*``; a ``connector_id`` against globs without ``://``
        (``connector_*``); ``*`` alone allows every server.
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

    :ivar roots: Absolute folders file pointers may lead into (null: a thread file's own folder; for
        a stored thread, the ``files`` folder beside the store and the files named for the turn).
    :ivar max_file_bytes: The largest file a pointer (or inline ``data_base64``) may hold.
    :ivar max_request_bytes: The most file bytes one request may carry, all pointers together.
    :ivar allow_hard_links: Read a regular file that has more than one hard link (another name
        for the same bytes, which may lie outside the roots); off, such a file is refused.
    """

    roots: tuple[NonEmpty, ...] | None = None
    max_file_bytes: Annotated[int, msgspec.Meta(ge=0)] = 32 * 2**20
    max_request_bytes: Annotated[int, msgspec.Meta(ge=0)] = 64 * 2**20
    allow_hard_links: bool = False

    def __post_init__(self) -> None:
        for root in self.roots or ():
            if not os.path.isabs(root):
                raise ValueError(f"roots: {root!r} is not an absolute path")


ProviderLack = Literal[
    "encrypted_reasoning",
    "reasoning_content",
    "prompt_cache_key",
    "prompt_cache_options",
    "context_management",
    "compact",
    "hosted_tools",
]


class ProviderSettings(_Section, frozen=True, kw_only=True):
    """``provider:``: which server ``client.base_url`` is, and what it does not accept.

    :ivar name: The provider's name, shown in the errors its ``lacks`` cause (a profile sets
        it: ``groq``, ``openresponses`` ...).
    :ivar lacks: What the server does not accept, each with the reason: ``encrypted_reasoning``
        (``render.reasoning_replay: encrypted``), ``reasoning_content`` (``render.reasoning_content:
        replay``), ``prompt_cache_key`` (any ``request.prompt_cache_key`` but ``none``),
        ``prompt_cache_options`` (``request.prompt_cache_options``, ``prompt_cache_retention``,
        ``prompt_cache_breakpoints: auto``), ``context_management`` (server-side compaction) and
        ``compact`` (``POST /responses/compact``: ``context.window.compact``) and
        ``hosted_tools`` (tools the server runs: web search, file search, code interpreter, MCP
        servers, image generation ..., in ``tools.hosted``). A configuration that asks for one
        is refused at load, naming the setting and the reason; a thread or a call that does is
        refused before anything is sent (:class:`~turnwire.errors.ProviderUnsupportedError`).
    """

    name: NonEmpty | None = None
    lacks: dict[ProviderLack, NonEmpty] = msgspec.field(default_factory=dict)


def _asks_for(settings: Settings, lack: ProviderLack) -> str | None:
    """The setting of ``settings`` that asks for what ``lack`` names, as its ``$.path`` (``None``
    when none does)."""
    render, request = settings.render, settings.request
    if lack == "encrypted_reasoning":
        return "$.render.reasoning_replay" if render.reasoning_replay == "encrypted" else None
    if lack == "reasoning_content":
        return "$.render.reasoning_content" if render.reasoning_content == "replay" else None
    if lack == "prompt_cache_key":
        key = request.prompt_cache_key
        return None if key is None or key == "none" else "$.request.prompt_cache_key"
    if lack == "prompt_cache_options":
        if request.prompt_cache_options is not None:
            return "$.request.prompt_cache_options"
        if request.prompt_cache_retention is not None:
            return "$.request.prompt_cache_retention"
        if request.prompt_cache_breakpoints != "off":
            return "$.request.prompt_cache_breakpoints"
        return None
    if lack == "context_management":
        return None if request.context_management is None else "$.request.context_management"
    if lack == "hosted_tools":
        return first_server_run(settings.tools.hosted, "$.tools.hosted")
    window = settings.context.window
    if isinstance(window, WindowSettings) and window.compact is not None:
        return "$.context.window.compact"
    return None


def first_server_run(tools: Iterable[object], where: str) -> str | None:
    """The path (``where[i]``) of the first of ``tools`` the server runs
    (:func:`~turnwire.wire.tools.runs_on_server`), ``None`` when none does."""
    return next((f"{where}[{i}]" for i, tool in enumerate(tools) if runs_on_server(tool)), None)


def unsupported(
    provider: ProviderSettings, lack: ProviderLack, path: str, what: str
) -> ProviderUnsupportedError | None:
    """The error for asking ``provider`` for ``what`` (at ``path``) when its ``lacks`` names
    ``lack``; ``None`` when the provider takes it."""
    reason = provider.lacks.get(lack)
    if reason is None:
        return None
    return ProviderUnsupportedError(
        f"{path}: {_refusal(provider, lack, reason, what)}; nothing was sent",
        path=path,
        provider=provider.name,
        lack=lack,
    )


def _refusal(provider: ProviderSettings, lack: str, reason: str, what: str) -> str:
    return f"{provider.name or 'the provider'} does not accept {what} ({lack}: {reason})"


class Settings(_Section, frozen=True, kw_only=True):
    """The whole configuration.

    :ivar render: How a thread becomes input items.
    :ivar request: Wire options copied into every request body.
    :ivar client: Where and how requests are sent (``turnwire run``).
    :ivar context: Which turns a request sends, and the context-window guard.
    :ivar plugins: Which plugins load, tracing, and per-plugin settings.
    :ivar store: Where stored threads live.
    :ivar tools: Which code runs a tool (registered handlers only), and for how long.
    :ivar files: Where file pointers may lead, and how much is read.
    :ivar provider: Which server ``client.base_url`` is, and what it does not accept.
    """

    render: RenderSettings = msgspec.field(default_factory=RenderSettings)
    request: RequestSettings = msgspec.field(default_factory=RequestSettings)
    client: ClientSettings = msgspec.field(default_factory=ClientSettings)
    context: ContextSettings = msgspec.field(default_factory=ContextSettings)
    plugins: PluginSettings = msgspec.field(default_factory=PluginSettings)
    store: StoreSettings = msgspec.field(default_factory=StoreSettings)
    tools: ToolSettings = msgspec.field(default_factory=ToolSettings)
    files: FileSettings = msgspec.field(default_factory=FileSettings)
    provider: ProviderSettings = msgspec.field(default_factory=ProviderSettings)

    def lacking(self) -> tuple[str, str] | None:
        """The first setting that asks for what ``provider.lacks`` names, as ``(path, message)``
        (``None`` when there is none)."""
        for lack, reason in self.provider.lacks.items():
            path = _asks_for(self, lack)
            if path is not None:
                return path, f"{path}: {_refusal(self.provider, lack, reason, 'it')}"
        return None


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
        settings = msgspec.convert(tree, Settings)
    except msgspec.ValidationError as err:
        path, detail = validation_location(err)
        raise ConfigError(f"{path}: {detail}", path=path) from err
    lacking = settings.lacking()
    if lacking is not None:
        path, message = lacking
        raise ConfigError(message, path=path)
    return settings


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
