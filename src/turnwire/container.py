"""The dependency-injection container: the only module that imports ``dependency_injector``.

Its providers mirror ``build_input``'s injected-function signature one for one: a provider per
render option (``bucket_order``, ``self_identity``, ``unsupported_media_policy``, ...) and a
provider per stage. A stage provider resolves to :data:`~turnwire._relay.HOOK` ("through the
plugin manager") until code overrides it::

    with container.render_untrusted_content.override(providers.Object(my_renderer)):
        ...

and since composite stages call their sub-stages through the relay built from these providers,
the override reaches every composite. The unsupported-media policy is a ``Selector`` keyed by
configuration, so a deployment swaps it in YAML. No wiring, no ``@inject``, no module-level
container: :func:`build_container` makes a fresh one.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from dependency_injector import containers, providers

from turnwire import pipeline
from turnwire._plugins import build_plugin_manager
from turnwire._relay import HOOK, StagePlan
from turnwire._secret import envelope_secret
from turnwire.client.slots import ResponseAccumulator
from turnwire.context import Endpoint, EnvelopeNonce, MediaPolicy, RenderOptions
from turnwire.settings import Settings, load_settings

__all__ = ["Container", "build_container", "overriding"]


def _envelope_nonce(settings: Settings) -> EnvelopeNonce:
    render = settings.render
    secret = envelope_secret(
        env_var=render.envelope_secret_env,
        secret_file=render.envelope_secret_file,
        store_path=settings.store.path,
    )
    return EnvelopeNonce(secret)


def _media_policy_key(settings: Settings) -> str:
    policy = settings.render.unsupported_media_policy
    return policy if isinstance(policy, str) else "per-kind"


def _uniform_policy(settings: Settings, name: str) -> MediaPolicy:
    return MediaPolicy(default=name, stash_keys=settings.render.media_stash_keys)  # type: ignore[arg-type]


def _plugin_manager(settings: Settings, extra_plugins: tuple[Any, ...]) -> Any:
    plugins = settings.plugins
    return build_plugin_manager(
        load_entrypoints=plugins.load_entrypoints,
        allow=plugins.allow,
        block=plugins.block,
        trace=plugins.trace,
        plugin_settings=plugins.settings,
        extra_plugins=extra_plugins,
    )


def _stage_plan(plugin_manager: Any, trace: bool, **overrides: Any) -> StagePlan:
    return StagePlan(plugin_manager, overrides, trace=trace)


class Container(containers.DeclarativeContainer):
    """Providers for settings, plugins, every render option and stage, and ``build_input``."""

    settings = providers.Dependency(instance_of=Settings)
    extra_plugins = providers.Object(())
    plugin_manager = providers.Singleton(_plugin_manager, settings, extra_plugins)

    # ---------------------------------------------------------------- render options
    model = providers.Callable(lambda s: s.request.model, settings)
    bucket_order = providers.Callable(lambda s: s.render.bucket_order, settings)
    system_prompt_channel = providers.Callable(lambda s: s.render.system_prompt_channel, settings)
    self_identity = providers.Callable(lambda s: s.render.self_identity, settings)
    thought_surfacing = providers.Callable(lambda s: s.render.thought_surfacing, settings)
    reasoning_replay = providers.Callable(lambda s: s.render.reasoning_replay, settings)
    replay_compatibility = providers.Callable(lambda s: s.render.replay_compatibility, settings)
    fingerprint_binding = providers.Callable(lambda s: s.render.fingerprint_binding, settings)
    unfingerprinted_reasoning = providers.Callable(
        lambda s: s.render.unfingerprinted_reasoning, settings
    )
    system_prompt_template = providers.Callable(lambda s: s.render.system_prompt_template, settings)
    # Per dispatch (``render_context=``), never from the settings: the default is empty.
    render_context: providers.Provider[dict[str, str]] = providers.Factory(dict)
    tool_result_inline_max_bytes = providers.Callable(
        lambda s: s.render.tool_result_inline_max_bytes, settings
    )
    strict = providers.Callable(lambda s: s.render.strict, settings)
    unsupported_media_policy = providers.Selector(
        providers.Callable(_media_policy_key, settings),
        **{
            "throw": providers.Callable(_uniform_policy, settings, "throw"),
            "fallback-stash": providers.Callable(_uniform_policy, settings, "fallback-stash"),
            "synthetic-description": providers.Callable(
                _uniform_policy, settings, "synthetic-description"
            ),
            "per-kind": providers.Callable(lambda s: s.render.media_policy(), settings),
        },
    )
    endpoint = providers.Callable(
        lambda s: Endpoint(
            base_url=s.client.base_url,
            organization=s.client.organization,
            project=s.client.project,
        ),
        settings,
    )
    envelope_nonce = providers.Singleton(_envelope_nonce, settings)

    # ---------------------------------------------------------------- client seams
    # The output-slot state machine, as a factory: the client calls it once per streamed
    # response for a fresh accumulator (``feed(events) -> list[Generation]``, ``close() ->
    # Generation | None``, ``partial() -> Generation``). Override it with a subclass or any
    # object of that shape: ``overriding(container.response_accumulator, MyAccumulator)``.
    response_accumulator = providers.Object(ResponseAccumulator)

    # ---------------------------------------------------------------- render stages
    render_untrusted_content = providers.Object(HOOK)
    render_trusted_content = providers.Object(HOOK)
    render_standing_instructions = providers.Object(HOOK)
    render_memories = providers.Object(HOOK)
    render_retrievable_safety_directive = providers.Object(HOOK)
    render_first_party_retrievables = providers.Object(HOOK)
    render_third_party_public_retrievables = providers.Object(HOOK)
    render_third_party_private_retrievables = providers.Object(HOOK)
    render_retrievables = providers.Object(HOOK)
    render_retrievable_handle_body = providers.Object(HOOK)
    render_artifact_handle_body = providers.Object(HOOK)
    render_system_prompt = providers.Object(HOOK)
    render_media_blocks = providers.Object(HOOK)
    render_timeline_message = providers.Object(HOOK)
    render_tool_call_result = providers.Object(HOOK)
    render_reasoning_item = providers.Object(HOOK)
    render_thought = providers.Object(HOOK)
    filter_thoughts = providers.Object(HOOK)
    fingerprint_prefix = providers.Object(HOOK)
    tools_to_wire = providers.Object(HOOK)
    description_to_json_schema = providers.Object(HOOK)

    stage_plan = providers.Factory(
        _stage_plan,
        plugin_manager,
        providers.Callable(lambda s: s.plugins.trace, settings),
        render_untrusted_content=render_untrusted_content,
        render_trusted_content=render_trusted_content,
        render_standing_instructions=render_standing_instructions,
        render_memories=render_memories,
        render_retrievable_safety_directive=render_retrievable_safety_directive,
        render_first_party_retrievables=render_first_party_retrievables,
        render_third_party_public_retrievables=render_third_party_public_retrievables,
        render_third_party_private_retrievables=render_third_party_private_retrievables,
        render_retrievables=render_retrievables,
        render_retrievable_handle_body=render_retrievable_handle_body,
        render_artifact_handle_body=render_artifact_handle_body,
        render_system_prompt=render_system_prompt,
        render_media_blocks=render_media_blocks,
        render_timeline_message=render_timeline_message,
        render_tool_call_result=render_tool_call_result,
        render_reasoning_item=render_reasoning_item,
        render_thought=render_thought,
        filter_thoughts=filter_thoughts,
        fingerprint_prefix=fingerprint_prefix,
        tools_to_wire=tools_to_wire,
        description_to_json_schema=description_to_json_schema,
    )
    render_options = providers.Factory(
        RenderOptions,
        model=model,
        bucket_order=bucket_order,
        system_prompt_channel=system_prompt_channel,
        self_identity=self_identity,
        thought_surfacing=thought_surfacing,
        reasoning_replay=reasoning_replay,
        replay_compatibility=replay_compatibility,
        fingerprint_binding=fingerprint_binding,
        unfingerprinted_reasoning=unfingerprinted_reasoning,
        system_prompt_template=system_prompt_template,
        render_context=render_context,
        unsupported_media_policy=unsupported_media_policy,
        tool_result_inline_max_bytes=tool_result_inline_max_bytes,
        strict=strict,
        endpoint=endpoint,
        envelope_nonce=envelope_nonce,
    )
    build_input = providers.Factory(
        functools.partial, pipeline.build_input, plan=stage_plan, options=render_options
    )


@contextlib.contextmanager
def overriding(provider: Any, value: Any) -> Iterator[None]:
    """Within the block, ``provider`` resolves to ``value`` (then to what it was before)."""
    with provider.override(providers.Object(value)):
        yield


def build_container(
    config_files: Iterable[str | os.PathLike[str]] = (),
    *,
    settings: Settings | None = None,
    overrides: Mapping[str, Any] | None = None,
    extra_plugins: Iterable[Any] = (),
) -> Container:
    """A fresh container for the packaged defaults merged with ``config_files`` in order.

    :param config_files: deployment profiles (YAML).
    :param settings: already validated settings (skips loading files).
    :param overrides: a last layer given in code, shaped like the files.
    :param extra_plugins: plugin objects registered after the built-ins.
    """
    container = Container()
    if settings is None:
        settings = load_settings(config_files, overrides=overrides)
    container.settings.override(settings)
    container.extra_plugins.override(tuple(extra_plugins))
    return container
