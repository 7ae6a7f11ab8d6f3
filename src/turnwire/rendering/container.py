"""The dependency-injection container: the only module that imports ``dependency_injector``.

Its providers mirror ``build_input``'s injected-function signature one for one: a provider per
render option (``bucket_order``, ``self_identity``, ``unsupported_media_policy``, ...) and a
provider per stage. A stage provider resolves to :data:`~turnwire.rendering.relay.HOOK` ("through
the
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
import operator
import os
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from dependency_injector import containers, providers

from turnwire.config.nonce import EnvelopeNonce
from turnwire.config.options import Endpoint, MediaPolicy, RenderOptions
from turnwire.config.secret import envelope_secret
from turnwire.config.settings import Settings, default_config_path, load_settings
from turnwire.rendering import pipeline
from turnwire.rendering._incremental.memo import RenderMemo
from turnwire.rendering.plugins import build_plugin_manager
from turnwire.rendering.relay import HOOK, StagePlan
from turnwire.wire.response import ResponseAccumulator

__all__ = ["Container", "ContainerCache", "build_container", "overriding"]


def _envelope_secret(settings: Settings) -> str | bytes | None:
    """The envelope secret these settings name (the container's nonce and the container
    cache's check both read it through here)."""
    render = settings.render
    return envelope_secret(
        env_var=render.envelope_secret_env,
        secret_file=render.envelope_secret_file,
        store_path=settings.store.path,
    )


def _envelope_nonce(settings: Settings) -> EnvelopeNonce:
    secret = _envelope_secret(settings)
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


class _PlanCache:
    """The last stage plan a container built and what it was built from: the plugin manager's
    implementations of each stage, the stage providers' values and the tracing flag."""

    __slots__ = ("last",)

    def __init__(self) -> None:
        # (inputs, plan) as one object: two renders on two threads never leave the inputs of
        # one beside the plan of the other
        self.last: tuple[tuple[Any, ...], StagePlan] | None = None


def _stage_plan(plugin_manager: Any, trace: bool, cache: _PlanCache, **overrides: Any) -> StagePlan:
    """The stage plan, the last one again while nothing it was built from changed (a plugin
    registered or unregistered, a stage provider overridden, tracing switched)."""
    # A manager that counts its changes (TurnwirePluginManager) is current when its count is:
    # the plugins, the flag and the overrides, compared by identity, are then the inputs.
    generation = getattr(plugin_manager, "generation", None)
    last = cache.last
    if generation is not None:
        counted = (plugin_manager, generation, trace, *overrides.values())
        if last is not None and _same_inputs(last[0], counted):
            return last[1]
    # One snapshot of the implementations for both the inputs and the plan: a plugin
    # registered on another thread between the two would leave a plan kept under inputs it was
    # not built from (stale until the plugins change again). The count is read before the
    # snapshot, so a change made meanwhile leaves a plan kept under an older count.
    impls = StagePlan.hookimpls(plugin_manager)
    inputs = StagePlan.inputs(plugin_manager, overrides, trace=trace, hookimpls=impls)
    if generation is None and last is not None and _same_inputs(last[0], inputs):
        return last[1]
    plan = StagePlan(plugin_manager, overrides, trace=trace, hookimpls=impls)
    cache.last = (counted if generation is not None else inputs, plan)
    return plan


def _same_inputs(old: tuple[Any, ...], new: tuple[Any, ...]) -> bool:
    """Element by element the same objects (implementations and overrides by identity)."""
    return len(old) == len(new) and all(map(operator.is_, old, new))


class Container(containers.DeclarativeContainer):
    """Providers for settings, plugins, every render option and stage, and ``build_input``."""

    settings = providers.Dependency(instance_of=Settings)
    extra_plugins = providers.Object(())
    plugin_manager = providers.ThreadSafeSingleton(_plugin_manager, settings, extra_plugins)

    # ---------------------------------------------------------------- render options
    model = providers.Callable(lambda s: s.request.model, settings)
    bucket_order = providers.Callable(lambda s: s.render.bucket_order, settings)
    system_prompt_channel = providers.Callable(lambda s: s.render.system_prompt_channel, settings)
    self_identity = providers.Callable(lambda s: s.render.self_identity, settings)
    thought_surfacing = providers.Callable(lambda s: s.render.thought_surfacing, settings)
    reasoning_replay = providers.Callable(lambda s: s.render.reasoning_replay, settings)
    replay_compatibility = providers.Callable(lambda s: s.render.replay_compatibility, settings)
    fingerprint_binding = providers.Callable(lambda s: s.render.fingerprint_binding, settings)
    hosted_replay = providers.Callable(lambda s: s.render.hosted_replay, settings)
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
    envelope_nonce = providers.ThreadSafeSingleton(_envelope_nonce, settings)

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
    render_hosted_item = providers.Object(HOOK)
    render_hosted_item_text = providers.Object(HOOK)
    filter_thoughts = providers.Object(HOOK)
    fingerprint_prefix = providers.Object(HOOK)
    tools_to_wire = providers.Object(HOOK)
    description_to_json_schema = providers.Object(HOOK)

    stage_plan_cache = providers.ThreadSafeSingleton(_PlanCache)
    stage_plan = providers.Factory(
        _stage_plan,
        plugin_manager,
        providers.Callable(lambda s: s.plugins.trace, settings),
        stage_plan_cache,
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
        render_hosted_item=render_hosted_item,
        render_hosted_item_text=render_hosted_item_text,
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
        hosted_replay=hosted_replay,
        system_prompt_template=system_prompt_template,
        render_context=render_context,
        unsupported_media_policy=unsupported_media_policy,
        tool_result_inline_max_bytes=tool_result_inline_max_bytes,
        strict=strict,
        endpoint=endpoint,
        envelope_nonce=envelope_nonce,
    )
    render_memo = providers.ThreadSafeSingleton(RenderMemo)
    build_input = providers.Factory(
        functools.partial,
        pipeline.build_input,
        plan=stage_plan,
        options=render_options,
        render_memo=render_memo,
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


class _RecordingEnv(Mapping[str, str]):
    """The environment as ``load_settings`` sees it, noting each variable it looks up."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.environ = environ
        self.read: dict[str, str | None] = {}
        self.listed = False

    def __getitem__(self, name: str) -> str:
        value = self.read[name] = self.environ.get(name)
        if value is None:
            raise KeyError(name)
        return value

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        value = self.read[name] = self.environ.get(name)
        return value is not None

    def __iter__(self) -> Iterator[str]:
        self.listed = True
        return iter(self.environ)

    def __len__(self) -> int:
        self.listed = True
        return len(self.environ)


def _entry_point_token() -> tuple[tuple[str, int | None], ...]:
    """What a new or removed distribution changes: the import path and its folders' mtimes.

    Installing or removing a distribution creates or deletes its ``.dist-info`` folder in a
    ``sys.path`` folder, which changes that folder's mtime; this costs a few ``stat`` calls
    where listing the entry points costs milliseconds.
    """
    token: list[tuple[str, int | None]] = []
    for entry in sys.path:
        try:
            token.append((entry, os.stat(entry or ".").st_mtime_ns))
        except OSError:
            token.append((entry, None))
    return tuple(token)


def _secret_token(settings: Settings) -> str | None:
    secret = _envelope_secret(settings)
    return EnvelopeNonce(secret).cache_key if secret else None


class _Build:
    __slots__ = ("container", "entry_points", "environment", "secret")

    def __init__(
        self,
        container: Container,
        environment: tuple[tuple[str, str | None], ...],
        entry_points: tuple[tuple[str, int | None], ...] | None,
    ) -> None:
        self.container = container
        self.environment = environment
        self.entry_points = entry_points
        # wherever the secret comes from (a variable, a file), the same secret or a rebuild
        self.secret = _secret_token(container.settings())

    def current(self) -> bool:
        environ = os.environ
        if any(environ.get(name) != value for name, value in self.environment):
            return False
        if _secret_token(self.container.settings()) != self.secret:
            return False
        return self.entry_points is None or self.entry_points == _entry_point_token()


@functools.cache
def _default_config() -> str:
    return str(default_config_path())


class ContainerCache:
    """Containers built from configuration files, reused while what their build read is
    unchanged: the files' bytes (the packaged default's too), the environment variables the
    build looked up (``${ENV}`` placeholders), the envelope secret and, when entry points are
    loaded, the distributions visible on ``sys.path``. A reused container keeps its plugin
    manager, stage plan inputs and render memo, so a repeated ``render(config_files=...)``
    costs a few file reads and ``stat`` calls.

    Not tracked: environment variables or files a plugin reads when it is loaded or
    configured, and edits to the code of an installed plugin (as with any imported module).

    :param maxsize: how many builds to keep (least recently used go first).
    """

    def __init__(self, maxsize: int = 8) -> None:
        self.maxsize = maxsize
        self._builds: dict[tuple[Any, ...], _Build] = {}
        self._lock = threading.Lock()

    def get(self, config_files: Iterable[str | os.PathLike[str]] = ()) -> Container:
        """A container for ``config_files``: the kept one if still current, else a new one.

        Raises what :func:`build_container` raises for the same files.
        """
        paths = (_default_config(), *(os.fspath(file) for file in config_files))
        try:
            contents = tuple(_file_bytes(path) for path in paths)
        except OSError:
            return build_container(paths[1:])  # let the loader report the unreadable file
        key = (paths, contents)
        with self._lock:
            kept = self._builds.pop(key, None)
            if kept is not None and kept.current():
                self._builds[key] = kept
                return kept.container
        return self._build(key, paths[1:])

    def _build(self, key: tuple[Any, ...], files: tuple[str, ...]) -> Container:
        environ = _RecordingEnv(os.environ)
        settings = load_settings(files, env=environ)
        container = build_container(settings=settings)
        if environ.listed:  # the build saw the whole environment: nothing to key on
            return container
        try:
            if tuple(_file_bytes(path) for path in key[0]) != key[1]:
                return container  # a file changed while it was read: keep nothing
        except OSError:
            return container
        entry_points = _entry_point_token() if settings.plugins.load_entrypoints else None
        build = _Build(container, tuple(sorted(environ.read.items())), entry_points)
        with self._lock:
            self._builds[key] = build
            while len(self._builds) > self.maxsize:
                del self._builds[next(iter(self._builds))]
        return container

    def clear(self) -> None:
        """Forget every kept container."""
        with self._lock:
            self._builds.clear()

    def __len__(self) -> int:
        return len(self._builds)

    def __repr__(self) -> str:
        return f"ContainerCache(kept={len(self._builds)}, maxsize={self.maxsize})"


def _file_bytes(path: str) -> bytes:
    with open(path, "rb") as file:
        return file.read()
