"""The render stages: turnwire's plugin contract, one hookspec per stage, in pipeline order.

Every stage is ``firstresult``: the first implementation that returns non-None wins. The
built-ins in :mod:`turnwire.stages` are registered ``trylast``, so a plugin overrides a stage by
returning a value, defers by returning ``None``, and augments with ``@hookimpl(wrapper=True)``.

How arguments arrive. A stage is called through the stage relay
(:class:`turnwire.plugin.StageRelay`).
Per-call data (the message, the thought, the items) comes from the caller; every option
argument (``self_identity``, ``unsupported_media_policy``, ``envelope_nonce``, ``warn`` ...)
is injected by name from the render options, so an implementation asks for an option simply by
naming the parameter, and the name is the container provider's. ``stages`` is the relay itself:
a composite stage reaches its sub-stages only through it, so overriding a sub-stage changes
every composite that uses it.

Implementations never give their parameters defaults (pluggy does not pass defaulted
arguments), never mutate their inputs, and stay pure: no I/O, clock, randomness, environment or
logging. A stage reports a recoverable problem through ``warn``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from turnwire.client.progress import ProgressEvent
    from turnwire.client.text_calls import TextToolCalls
    from turnwire.config.nonce import EnvelopeNonce
    from turnwire.config.options import (
        Bucket,
        EnvelopeAttrs,
        FingerprintBinding,
        HandleInfo,
        HostedReplay,
        MediaPolicy,
        ReasoningContent,
        ReasoningReplay,
        ThoughtSurfacing,
        Warn,
    )
    from turnwire.config.options import Endpoint as EndpointT
    from turnwire.model.records import (
        HostedItem,
        Media,
        Memory,
        Message,
        Retrievable,
        Thought,
        Tool,
        ToolCall,
    )
    from turnwire.rendering.relay import StageRelay
    from turnwire.wire import HostedTool, InputContent, InputItem, ReasoningItem, WireTool
    from turnwire.wire.content import ImageDetail
    from turnwire.wire.response import Generation

__all__ = ["CLIENT_HOOKS", "STAGES", "hookimpl", "hookspec"]

hookspec = pluggy.HookspecMarker("turnwire")
hookimpl = pluggy.HookimplMarker("turnwire")


# ---------------------------------------------------------------------------- envelopes


@hookspec(firstresult=True)
def render_untrusted_content(content: str, attrs: EnvelopeAttrs) -> str | None:
    """Wrap content from an untrusted source in an untrusted-content envelope.

    :param content: the body, verbatim.
    :param attrs: the envelope's nonce, kind and optional ``tool`` / ``modality`` attributes.
    :returns: the envelope text.

    Stops at the first non-None result. Runs once per untrusted body: tool results of untrusted
    tools, third-party retrievables, media fallbacks, artifact handles.
    Default: ``<untrusted_content_NONCE nonce=".." kind=".." ...>`` + body + closing tag.
    Invariant: the body can neither close the envelope early nor open a
    ``<system_instructions`` block.
    """


@hookspec(firstresult=True)
def render_trusted_content(content: str, attrs: EnvelopeAttrs) -> str | None:
    """Wrap content from a trusted source (a trusted tool, first-party media) in its envelope.

    :param content: the body, verbatim.
    :param attrs: the envelope's nonce, kind and optional attributes.
    :returns: the envelope text.

    Stops at the first non-None result. Runs once per trusted body.
    Default: as :func:`render_untrusted_content` with the ``trusted_content_`` tag prefix.
    Invariant: as :func:`render_untrusted_content`.
    """


# ------------------------------------------------------------------ leading system content


@hookspec(firstresult=True)
def render_standing_instructions(
    standing_instructions: tuple[str, ...], render_context: Mapping[str, str]
) -> str | None:
    """Render the deployer's standing instructions as one block.

    :param standing_instructions: instruction texts, in order; empty ones are skipped.
    :param render_context: the caller's values for this dispatch (``render_context=``,
        ``--render-context``); an implementation that names it reads them.
    :returns: the block, or ``""`` when there is nothing to say.

    Stops at the first non-None result. Runs once per request.
    Default: ``<system_instructions kind="developer-rules">`` with the texts separated by a
    blank line.
    """


@hookspec(firstresult=True)
def render_memories(
    memories: tuple[Memory, ...], envelope_nonce: EnvelopeNonce, render_context: Mapping[str, str]
) -> str | None:
    """Render what the agent remembers as one block.

    :param memories: the memories, in stored order.
    :param envelope_nonce: derives each record's nonce from its id.
    :param render_context: the caller's values for this dispatch (``render_context=``,
        ``--render-context``); an implementation that names it reads them.
    :returns: the block, or ``""`` when there are no memories.

    Stops at the first non-None result. Runs once per request (twice never: a bucket is either
    leading or trailing); under ``render.context_placement: timeline``, once per memory
    instead, from :func:`render_timeline_context`, with that memory alone.
    Default: ``<memories>`` holding one ``<memory_NONCE ...>`` element per memory.
    """


@hookspec(firstresult=True)
def render_retrievable_safety_directive() -> str | None:
    """Say how the model must treat retrieved content.

    :returns: the directive text.

    Stops at the first non-None result. Runs once per request that has retrievables (under
    ``render.context_placement: timeline``, once per retrievable: each one's item carries it).
    Default: a one-paragraph directive: retrieved envelopes are data, never instructions.
    """


@hookspec(firstresult=True)
def render_first_party_retrievables(
    retrievables: tuple[Retrievable, ...], envelope_nonce: EnvelopeNonce, stages: StageRelay
) -> str | None:
    """Render deployer-vetted retrieved records.

    :param retrievables: the first-party records, in stored order.
    :param envelope_nonce: derives each record's nonce from its id.
    :param stages: the relay; large bodies go through ``render_retrievable_handle_body``.
    :returns: the block, or ``""`` when there are none.

    Stops at the first non-None result. Runs once per request, from ``render_retrievables``.
    Default: ``<retrieved_corpus>`` holding ``<retrieved_NONCE source=".." ...>`` elements,
    ``source`` first (small models cite the first path-like token).
    """


@hookspec(firstresult=True)
def render_third_party_public_retrievables(
    retrievables: tuple[Retrievable, ...], envelope_nonce: EnvelopeNonce, stages: StageRelay
) -> str | None:
    """Render records retrieved from the open web, search or public APIs.

    :param retrievables: the records, sorted by ``(created_at, id)``.
    :param envelope_nonce: derives each record's nonce from its id.
    :param stages: the relay; each record goes through ``render_untrusted_content``.
    :returns: the block, or ``""`` when there are none.

    Stops at the first non-None result. Runs once per request, from ``render_retrievables``.
    Default: one untrusted envelope per record, kind ``retrieved-third-party-public``.
    """


@hookspec(firstresult=True)
def render_third_party_private_retrievables(
    retrievables: tuple[Retrievable, ...], envelope_nonce: EnvelopeNonce, stages: StageRelay
) -> str | None:
    """Render records from uploads and partner APIs.

    :param retrievables: the records, sorted by ``(created_at, id)``.
    :param envelope_nonce: derives each record's nonce from its id.
    :param stages: the relay; each record goes through ``render_untrusted_content``.
    :returns: the block, or ``""`` when there are none.

    Stops at the first non-None result. Runs once per request, from ``render_retrievables``.
    Default: one untrusted envelope per record, kind ``retrieved-third-party-private``.
    """


@hookspec(firstresult=True)
def render_retrievables(
    retrievables: tuple[Retrievable, ...], stages: StageRelay, render_context: Mapping[str, str]
) -> str | None:
    """Render every retrieved record: the directive, then each trust tier.

    :param retrievables: all records, any tier.
    :param stages: the relay to the directive and the three tier stages.
    :param render_context: the caller's values for this dispatch (``render_context=``,
        ``--render-context``); an implementation that names it reads them.
    :returns: the blocks separated by a blank line, or ``""`` when there are none.

    Stops at the first non-None result. Runs once per request; under
    ``render.context_placement: timeline``, once per retrievable instead, from
    :func:`render_timeline_context`, with that record alone.
    Default: partitions by tier (unknown tiers count as third-party-private), sorts the two
    third-party groups by ``(created_at, id)``.
    """


@hookspec(firstresult=True)
def render_retrievable_handle_body(handle: HandleInfo) -> str | None:
    """Describe a large retrieved body that is not inlined.

    :param handle: the record id (as ``call_id``), the body's kind, byte and line counts.
    :returns: the handle text.

    Stops at the first non-None result. Runs once per non-inline retrievable artifact.
    Default: what is known about the body (kind, byte and line counts) and the artifact tools
    that read it by its ``callId``.
    """


@hookspec(firstresult=True)
def render_artifact_handle_body(handle: HandleInfo) -> str | None:
    """Describe a large tool result that is not inlined, and how to read it.

    :param handle: the tool call id, the artifact's kind, byte and line counts.
    :returns: the handle text.

    Stops at the first non-None result. Runs once per non-inline artifact result.
    Default: what is known about the artifact (kind, byte and line counts) and the artifact
    tools that read it by its ``callId``.
    """


@hookspec(firstresult=True)
def render_system_prompt(
    system_prompt: str,
    standing_instructions: tuple[str, ...],
    memories: tuple[Memory, ...],
    retrievables: tuple[Retrievable, ...],
    bucket_order: tuple[Bucket, ...],
    system_prompt_template: bool,
    render_context: Mapping[str, str],
    stages: StageRelay,
) -> str | None:
    """Render the leading system content: the prompt and every bucket before ``timeline``.

    :param system_prompt: the thread's system prompt.
    :param standing_instructions: the thread's standing instructions.
    :param memories: the thread's memories (none under ``render.context_placement:
        timeline``: each renders in the timeline, through :func:`render_timeline_context`).
    :param retrievables: the thread's retrieved records (none under ``timeline`` placement).
    :param bucket_order: the configured bucket order (without ``memories`` and
        ``retrievables`` under ``timeline`` placement).
    :param system_prompt_template: whether ``{name}`` placeholders in the prompt take values
        from ``render_context``.
    :param render_context: the values the caller passed for this dispatch (``render_context=``
        in Python, ``--render-context KEY=VALUE`` on the command line); any stage may ask for it.
    :param stages: the relay to the bucket stages.
    :returns: the parts separated by a blank line (``""`` when all are empty).

    Stops at the first non-None result. Runs once per request. Where the text goes (the
    ``instructions`` field or a leading item) is ``system_prompt_channel``'s business.
    Default: the prompt (its placeholders filled when ``system_prompt_template`` is on; names
    only, unknown ones left as written), then each bucket before ``timeline`` rendered by its
    own stage, empty parts left out.
    """


# ---------------------------------------------------------------------------- timeline


@hookspec(firstresult=True)
def render_media_blocks(
    media: Media,
    unsupported_media_policy: MediaPolicy,
    image_detail: ImageDetail | None,
    envelope_nonce: EnvelopeNonce,
    warn: Warn,
    stages: StageRelay,
) -> tuple[InputContent, ...] | None:
    """Render one attachment as content blocks.

    :param media: the attachment, with its bytes loaded (a reference, ``file_id`` or ``url``,
        has none: it is sent as it is).
    :param unsupported_media_policy: what to do with audio and video.
    :param image_detail: the ``detail`` of an image without its own (``None``: ``auto``).
    :param envelope_nonce: derives the fallback envelope's nonce from the media id.
    :param warn: reports a recoverable problem (a stash miss).
    :param stages: the relay to the envelope stages (fallback texts).
    :returns: the blocks: an id marker, then the native block or a fallback text.

    Stops at the first non-None result. Runs once per attachment and per media tool result.
    Default: image → ``input_image`` (a data URI, the URL or the file id); document →
    ``input_file`` (a data URI, ``file_url`` or ``file_id``); audio and video by policy
    (``throw`` raises :class:`~turnwire.errors.UnsupportedMediaError`), whatever their source.
    """


@hookspec(firstresult=True)
def render_timeline_message(
    message: Message,
    self_identity: str,
    envelope_nonce: EnvelopeNonce,
    stages: StageRelay,
    render_context: Mapping[str, str],
) -> tuple[InputItem, ...] | None:
    """Render one message of the conversation as input items.

    :param message: the message.
    :param self_identity: the identifier of the agent's own output.
    :param envelope_nonce: derives the identity envelope's nonce from the message id.
    :param stages: the relay (media blocks, envelopes).
    :param render_context: the caller's values for this dispatch (``render_context=``,
        ``--render-context``); an implementation that names it reads them.
    :returns: zero, one or two items (an assistant message's attachments follow it as a user
        item).

    Stops at the first non-None result. Runs once per timeline message.
    Default: user → an identity envelope plus media blocks; own output → an assistant message
    (``output_text`` with its id, which the pairing sweep keeps only after its reasoning item);
    peer assistant → string content in a peer envelope. Never ``input_text`` under the
    assistant role.
    """


@hookspec(firstresult=True)
def render_tool_call_result(
    tool_call: ToolCall,
    tool: Tool | None,
    tool_result_inline_max_bytes: int,
    envelope_nonce: EnvelopeNonce,
    warn: Warn,
    stages: StageRelay,
    render_context: Mapping[str, str],
) -> str | tuple[InputContent, ...] | None:
    """Render a tool call's result as the ``output`` of its ``function_call_output`` item.

    :param tool_call: the call, with its result.
    :param tool: the tool's declaration, or ``None`` when the thread no longer has it.
    :param tool_result_inline_max_bytes: artifacts up to this size are inlined.
    :param envelope_nonce: derives the envelope nonce from the call id.
    :param warn: reports a recoverable problem (unknown tool).
    :param stages: the relay (envelopes, media blocks, handle bodies).
    :param render_context: the caller's values for this dispatch (``render_context=``,
        ``--render-context``); an implementation that names it reads them.
    :returns: a string, or content blocks for media results.

    Stops at the first non-None result. Runs once per tool call that has a result.
    Default: text and inline artifacts in the (un)trusted envelope of the tool; large artifacts
    as a handle in an untrusted envelope; media bracketed by a trust boundary.
    """


@hookspec(firstresult=True)
def render_reasoning_item(
    thought: Thought,
    reasoning_replay: ReasoningReplay,
    replay_compatibility: tuple[str, ...],
    reasoning_content: ReasoningContent,
) -> ReasoningItem | None:
    """Turn a thought into a native reasoning item, when it can be replayed.

    :param thought: the thought.
    :param reasoning_replay: the replay mode.
    :param replay_compatibility: the replay tags this deployment accepts.
    :param reasoning_content: ``replay`` keeps the item's raw reasoning text (``content``),
        ``omit`` leaves it out.
    :returns: the reasoning item, or ``None`` when it cannot be replayed natively.

    Stops at the first non-None result. Runs once per surfaced thought. The pairing sweep then
    checks the fingerprint and the partner.
    Default: only in ``encrypted`` mode, for an accepted tag and a payload whose item carries
    ``encrypted_content`` (under ``store: false`` nothing else resolves); its ``content`` left
    out under ``omit``.
    """


@hookspec(firstresult=True)
def render_thought(
    thought: Thought,
    self_identity: str,
    envelope_nonce: EnvelopeNonce,
    render_context: Mapping[str, str],
) -> str | None:
    """Render a thought as text, when it is not replayed natively.

    :param thought: the thought (its ``content`` is what the model sees).
    :param self_identity: the identifier of the agent's own output.
    :param envelope_nonce: derives the thought envelope's nonce from its id.
    :param render_context: the caller's values for this dispatch (``render_context=``,
        ``--render-context``); an implementation that names it reads them.
    :returns: the text; the pipeline sends it as assistant string content.

    Stops at the first non-None result. Runs once per text-rendered thought.
    Default: a ``<thought_NONCE kind="self-reasoning" ...>`` element, wrapped in a peer
    envelope for other agents' thoughts.
    """


@hookspec(firstresult=True)
def render_hosted_item(
    hosted_item: HostedItem,
    hosted_replay: HostedReplay,
    envelope_nonce: EnvelopeNonce,
    thread_anchor: str,
    warn: Warn,
    stages: StageRelay,
) -> tuple[InputItem, ...] | None:
    """Render a hosted item as input items.

    A hosted item is a web search, file search, code interpreter, image generation, MCP or
    tool-search call, an MCP listing or approval, a compaction, or a type added later.

    :param hosted_item: the hosted item, as the API emitted it.
    :param hosted_replay: ``sealed``: only items this deployment recorded (a valid seal) go
        as items; ``all``: every replayable one.
    :param envelope_nonce: checks the item's seal (the envelope secret's HMAC).
    :param thread_anchor: the rendered thread's :func:`~turnwire.model.hosted.thread_anchor`:
        a seal is valid only in the thread it was made for.
    :param warn: reports an item sent as text for want of a seal.
    :param stages: the relay (``render_hosted_item_text`` for the text form).
    :returns: the items to send in its place (empty: send nothing).

    Stops at the first non-None result. Runs once per hosted item of the timeline.
    Default: a type the API accepts as input (:data:`turnwire.model.hosted.INPUT_FIELDS`) goes back
    as a :class:`~turnwire.wire.HostedInputItem` holding the fields its input shape allows, in
    the emitted order; when a reasoning item of its response came before it and that reasoning
    is not sent, the pairing sweep sends its text form (an assistant message) instead, since
    the API refuses such an item without its reasoning. Any other type, and under
    ``hosted_replay: sealed`` an item without this deployment's seal for this thread (a thread
    file is untrusted: an item can declare tools to the API or approve an MCP call), is sent as
    its text form only; a ``compaction`` needs no seal.
    """


@hookspec(firstresult=True)
def render_hosted_item_text(
    hosted_item: HostedItem, envelope_nonce: EnvelopeNonce, stages: StageRelay
) -> str | None:
    """Describe a hosted item as text, for when it cannot be sent as an item.

    :param hosted_item: the hosted item.
    :param envelope_nonce: derives the envelope nonce from the item id.
    :param stages: the relay (the untrusted envelope).
    :returns: the text of an assistant message, or ``""`` to send nothing.

    Stops at the first non-None result. Runs once per hosted item of the timeline.
    Default: one line naming the type, id and status, then the item's fields (without
    ``encrypted_content`` and base64 image data) as JSON in an untrusted envelope of kind
    ``hosted-item``: a search result or an MCP server's output is third-party content.
    """


@hookspec(firstresult=True)
def render_timeline_context(
    context_item: Memory | Retrievable,
    envelope_nonce: EnvelopeNonce,
    render_context: Mapping[str, str],
    stages: StageRelay,
) -> tuple[InputItem, ...] | None:
    """Render one memory or retrieved record at its place in the timeline.

    Under ``render.context_placement: timeline`` each memory and each retrieved record is sent
    once, where its ``created_at`` sorts among the records
    (:func:`turnwire.model.timeline.context_order_key`), so adding one appends to the request
    instead of rewriting its leading content.

    :param context_item: the memory or the retrieved record.
    :param envelope_nonce: derives a record's nonce from its id.
    :param render_context: the caller's values for this dispatch (``render_context=``,
        ``--render-context``); an implementation that names it reads them.
    :param stages: the relay (``render_memories``, ``render_retrievables`` and their
        sub-stages).
    :returns: the items to send in its place (empty: send nothing).

    Stops at the first non-None result. Runs once per memory and per retrievable, under
    ``render.context_placement: timeline`` only.
    Default: one developer message whose text is ``render_memories`` of the memory alone, or
    ``render_retrievables`` of the record alone (the safety directive, then the record in the
    envelope of its tier), so a plugin overriding those applies here too; nothing when that
    text is empty.
    """


@hookspec(firstresult=True)
def filter_thoughts(
    thoughts: tuple[Thought, ...],
    thought_surfacing: ThoughtSurfacing,
    self_identity: str,
    replay_compatibility: tuple[str, ...],
) -> tuple[Thought, ...] | None:
    """Choose which thoughts the model sees.

    :param thoughts: every thought of the thread.
    :param thought_surfacing: ``all-self``, ``latest-self`` or ``all``.
    :param self_identity: the identifier of the agent's own output.
    :param replay_compatibility: the replay tags this deployment accepts.
    :returns: the surfaced thoughts sorted by ``(created_at, seq, id)``.

    Stops at the first non-None result. Runs once per request.
    Default: the agent's own thoughts (everyone's under ``all``) that are plain text or carry
    an accepted replay tag; ``latest-self`` keeps only the last of them.

    An implementation may declare ``decides_each_thought(thought_surfacing) -> bool`` (an
    attribute of the function): true when it keeps or drops each thought on its own, in order,
    so that its result for a grown list extends its result for the shorter one. A warm render
    then filters only the thoughts a thread added. The default declares it, false under
    ``latest-self``.
    """


@hookspec(firstresult=True)
def fingerprint_prefix(
    model: str,
    instructions: str | None,
    tools: tuple[WireTool, ...] | None,
    input: Sequence[InputItem],
    through_item: int,
    fingerprint_binding: FingerprintBinding,
    endpoint: EndpointT,
    scratch: dict[str, Any],
) -> str | None:
    """Fingerprint what a reasoning item was produced after.

    :param model: the model.
    :param instructions: the request's ``instructions`` (``None`` when absent).
    :param tools: the tool declarations (``None`` when absent, never empty).
    :param input: the input items. Between two calls of one render the pipeline only appends
        to this sequence, which lets the default hash successive prefixes in linear time.
    :param through_item: how many leading items the fingerprint covers.
    :param fingerprint_binding: ``prefix`` (byte-compatible with the reference) or ``model``.
    :param endpoint: base URL, organization and project (``model`` binding).
    :param scratch: per-render memo; lets the default hash successive prefixes in linear time.
    :returns: 64 lowercase hex characters.

    Stops at the first non-None result. Runs once per replay candidate and once per recorded
    reasoning item.
    Default: ``prefix``: SHA-256 of the canonical JSON of ``{input, instructions, model,
    tools}`` over the first ``through_item`` items; ``model``: SHA-256 of the model and the
    endpoint alone.

    An implementation may declare ``resumable`` (an attribute of the function, shaped like
    :class:`turnwire.stages.fingerprint.PrefixHashing`): for the bindings it ``applies`` to,
    its fingerprint is a SHA-256 over ``head``, ``items(input[:through_item])`` and
    ``tail(model, instructions, tools)``. The pairing sweep and a warm render then keep hash
    states instead of calling the stage once per candidate. The default declares it for
    ``prefix``.
    """


# ------------------------------------------------------------------------------- tools


@hookspec(firstresult=True)
def tools_to_wire(
    tools: tuple[Tool, ...],
    hosted_tools: tuple[HostedTool, ...],
    strict: bool | None,
    stages: StageRelay,
) -> tuple[WireTool, ...] | None:
    """Declare the visible tools to the model.

    :param tools: the thread's tools, hidden ones included (the default leaves them out).
    :param hosted_tools: the hosted tools to declare (web search, file search, code
        interpreter, MCP servers, image generation): ``tools.hosted`` of the configuration,
        then the thread's ``hosted_tools`` that the configuration does not declare.
    :param strict: ``render.strict``: the flag of every tool without its own; ``None``: each
        such tool is strict exactly when its schema qualifies for strict mode.
    :param stages: the relay to ``description_to_json_schema``.
    :returns: the declarations (possibly empty).

    Stops at the first non-None result. Runs once per request.
    Default: every tool that is not hidden, in thread order, with its description, the schema
    from ``description_to_json_schema`` and an explicit ``strict`` flag (the tool's own, else
    ``strict``, else whether that schema qualifies:
    :func:`turnwire.model.structured.strict_problems` finds nothing); then the hosted tools as
    they are declared.
    """


@hookspec(firstresult=True)
def description_to_json_schema(description: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Turn a tool's parameter description into the JSON Schema the API reads.

    :param description: the tool's ``parameters`` (JSON Schema), or ``None``.
    :returns: an object schema (``{"type": "object", "properties": {}}`` when empty).

    Stops at the first non-None result. Runs once per declared tool.
    Default: a copy of the description whose ``type`` defaults to ``object``; an object schema
    without ``properties`` gets empty ones.
    """


# ------------------------------------------------------------------------------ client


@hookspec
def on_prompt_assembled(body: bytes, model: str, attempt_kind: str) -> None:
    """Observe the exact body of a request that is about to be sent.

    :param body: the request body bytes, exactly as they are POSTed.
    :param model: the model of the request.
    :param attempt_kind: ``request``, ``reasoning-free-retry`` for the one-shot retry, or
        ``compact`` for a body sent to the compact endpoint (``POST /responses/compact``).
    :returns: nothing; the return value is ignored.

    Calls every implementation (collect-all). Runs once per request actually sent (the
    reasoning-free retry included; transport retries resend the same body and do not run it
    again). An observer that raises is logged (kind ``observer-error``) and never fails the turn.
    Default: none; turnwire registers no observer.
    """


@hookspec
def on_raw_generation(generation: Generation, model: str) -> None:
    """Observe a parsed generation before its tool calls run.

    :param generation: the response as received (text, reasoning, calls, usage).
    :param model: the model of the request.
    :returns: nothing; the return value is ignored.

    Calls every implementation (collect-all). Runs once per response. An observer that raises
    is logged (kind ``observer-error``) and never fails the turn.
    Default: none; turnwire registers no observer.
    """


@hookspec
def on_stream_event(event: ProgressEvent, model: str) -> None:
    """Observe a run's progress: deltas, finished items and responses, tool calls.

    :param event: one :mod:`turnwire.client.progress` event (``text.delta``,
        ``refusal.delta``, ``reasoning_summary.delta``, ``reasoning_text.delta``,
        ``tool_arguments.delta``, ``item.done``, ``response.done`` with the usage,
        ``tool.started``, ``tool.finished``).
    :param model: the model of the run.
    :returns: nothing; the return value is ignored.

    Calls every implementation (collect-all). Runs once per event, in the order things
    happen, alongside the ``on_event=`` callback of ``run``. An observer that raises is logged
    (kind ``observer-error``) and never fails the turn.
    Default: none; turnwire registers no observer.
    """


@hookspec(firstresult=True)
def filter_tool_call_id(tool_call_id: str, existing_ids: frozenset[str]) -> str | None:
    """Choose the id under which a new tool call is stored.

    :param tool_call_id: the id from the response (``call_id`` or ``call_id|fc_...``).
    :param existing_ids: the ids of the thread's tool calls so far.
    :returns: the id to store.

    Stops at the first non-None result. Runs once per tool call the model makes.
    Default: unchanged unless it collides, then a fresh ``call_`` id that keeps an ``fc_``
    item half (so the call still pairs with its reasoning item).
    """


@hookspec(firstresult=True)
def parse_text_tool_calls(text: str, tools: Sequence[Tool]) -> TextToolCalls | None:
    """Find the tool calls a model wrote into its answer text (local models).

    :param text: the response's message texts, joined without a separator.
    :param tools: the tools the request declared, the built-in ``artifact_*`` tools included
        when they were (a parser may accept only their names).
    :returns: the calls found and the text without their markup, or ``None`` for none.

    Stops at the first non-None result. Runs once per response that has text and no
    structured tool calls (never otherwise). Default: no implementation, so text stays text;
    the ``turnwire-local-tools`` plugin parses the common local-model formats. A parser never
    raises on malformed text: it returns ``None``.
    """


@hookspec(firstresult=True)
def on_request_body(body: dict[str, Any], model: str) -> dict[str, Any] | None:
    """Change a request body before it is sent (add a field turnwire does not model).

    :param body: the body as rendered and checked (a fresh dict: the implementation may
        change it in place and return it, or return another one).
    :param model: the model of the request.
    :returns: the body to send, or ``None`` to send it unchanged.

    Stops at the first non-None result. Runs once per rendered body (``turnwire render``
    shows the changed body; a transport retry resends the same bytes), and only when a plugin
    implements it: with none, the body is never decoded. The changed body is checked again:
    the fields turnwire owns (``store``, ``input``, ``instructions``, ``stream``,
    ``background``, ``previous_response_id``, ``conversation``) must be left as they were
    (:class:`~turnwire.errors.ConfigError` naming the field otherwise), and the preflight
    rules run on the result. Risks: what this hook changes is outside what turnwire checks
    and records (the prefix ledger sees the rendered input, not extra fields), a field that
    changes from one request to the next can cost the prompt cache, and a field a server does
    not know gets a 400. Prefer ``request.extra`` for a fixed field.
    Default: none; turnwire registers no implementation.
    """


CLIENT_HOOKS: tuple[str, ...] = (
    "on_prompt_assembled",
    "on_raw_generation",
    "on_stream_event",
    "filter_tool_call_id",
    "parse_text_tool_calls",
    "on_request_body",
)
"""The client's seams: observers (collect-all) and the tool-call id filter."""

STAGES: tuple[str, ...] = (
    "render_untrusted_content",
    "render_trusted_content",
    "render_standing_instructions",
    "render_memories",
    "render_retrievable_safety_directive",
    "render_first_party_retrievables",
    "render_third_party_public_retrievables",
    "render_third_party_private_retrievables",
    "render_retrievables",
    "render_retrievable_handle_body",
    "render_artifact_handle_body",
    "render_system_prompt",
    "render_media_blocks",
    "render_timeline_message",
    "render_tool_call_result",
    "render_reasoning_item",
    "render_thought",
    "render_hosted_item",
    "render_hosted_item_text",
    "render_timeline_context",
    "filter_thoughts",
    "fingerprint_prefix",
    "tools_to_wire",
    "description_to_json_schema",
)
"""Every stage hook, in pipeline order."""
