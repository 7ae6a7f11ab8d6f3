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

**What importing it costs.** dependency-injector, when it is imported, imports whatever of
pydantic, pydantic-settings, FastAPI, fast-depends, Starlette and Werkzeug is installed (for its
``Configuration.from_pydantic`` and for wiring), about half of its import time where they are.
turnwire uses none of them, so while this module imports dependency-injector (in that thread
only, and only when dependency-injector is not imported yet) those packages cannot be imported;
afterwards they import as usual, and nothing is left in ``sys.modules`` or ``sys.meta_path``.
What wiring reads from them it then reads on use instead (a FastAPI or fast-depends marker, a
Starlette request class, a Werkzeug proxy: the same answers). What cannot be read on use:
dependency-injector decides at import whether ``pydantic-settings`` (pydantic 1: ``pydantic``)
is there, so in a process that imports turnwire before pydantic, ``Configuration.from_pydantic``
and ``Configuration(pydantic_settings=...)`` of your own containers raise "Unable to load
pydantic configuration". Import pydantic (or pydantic-settings) before turnwire, call
``config.from_dict(settings.model_dump())`` instead, or set ``TURNWIRE_DI_PYDANTIC=1``: then
dependency-injector is imported exactly as it imports itself, nothing held off. The same holds,
unasked, for a dependency-injector release other than the 4.x ones from 4.49 on, whose wiring
registries this was checked against.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import operator
import os
import sys
import threading
import types
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import importlib.machinery

from turnwire.config.nonce import EnvelopeNonce
from turnwire.config.options import Endpoint, MediaPolicy, RenderOptions
from turnwire.config.secret import envelope_secret
from turnwire.config.settings import RenderSettings, Settings, load_settings
from turnwire.hookspecs import STAGES
from turnwire.rendering import pipeline
from turnwire.rendering._incremental.memo import RenderMemo
from turnwire.rendering._incremental.plan import PlanCache, stage_plan
from turnwire.rendering.plugins import build_plugin_manager
from turnwire.rendering.relay import HOOK

# ---------------------------------------------------------------- importing dependency-injector
# The packages dependency-injector imports when they are installed (``providers`` and ``wiring``,
# in ``try``/``suppress(ImportError)`` blocks), and which turnwire never uses:
_PYDANTIC = frozenset({"pydantic", "pydantic_settings"})
_WIRING = frozenset({"fastapi", "fast_depends", "starlette", "werkzeug"})
_OPT_OUT = "TURNWIRE_DI_PYDANTIC"


class _HoldOff:
    """A ``sys.meta_path`` finder refusing ``packages`` (and their submodules) to one thread,
    noting what it refused."""

    def __init__(self, packages: frozenset[str]) -> None:
        self.packages = packages
        self.thread = threading.get_ident()
        self.refused: set[str] = set()

    def find_spec(
        self, name: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if name.partition(".")[0] in self.packages and threading.get_ident() == self.thread:
            self.refused.add(name)
            raise ModuleNotFoundError(
                f"No module named {name!r} (held off while turnwire imports "
                f"dependency_injector; {_OPT_OUT}=1 lets it through)",
                name=name,
            )
        return None


# The dependency-injector releases whose ``wiring`` registers what it read at import in the
# two lists :func:`_read_on_use` extends (checked against 4.49): another major release is
# imported as it imports itself, nothing held off, rather than guessed at.
_VERIFIED_MAJOR = "4"


def _verified(version: str) -> bool:
    """Whether dependency-injector ``version`` is one whose import turnwire may hold off."""
    major, _, rest = version.partition(".")
    minor = rest.partition(".")[0]
    return major == _VERIFIED_MAJOR and minor.isdigit() and int(minor) >= 49


def _held_off(environ: Mapping[str, str], version: str | None = None) -> frozenset[str]:
    """What to hold off: nothing when opted out or for a dependency-injector release not
    verified (``version``, default: the installed one's); pydantic's two only while neither
    is imported."""
    if environ.get(_OPT_OUT, "") not in ("", "0"):
        return frozenset()
    if version is None:
        import dependency_injector  # the package alone: its version, nothing else

        version = str(getattr(dependency_injector, "__version__", ""))
    if not _verified(version):
        return frozenset()
    if any(name in sys.modules for name in _PYDANTIC):
        return _WIRING
    return _WIRING | _PYDANTIC


@contextlib.contextmanager
def _holding_off(packages: frozenset[str]) -> Iterator[_HoldOff]:
    """Within the block, in this thread, ``packages`` not imported yet cannot be imported;
    ``sys.meta_path`` is as it was afterwards (``sys.modules`` is never touched: Cython's
    import reads a ``None`` there as the module)."""
    finder = _HoldOff(packages)
    # A new list each time, never the shared one changed in place: another thread's import
    # may be walking the old list, and an insert or a removal under it would skip a finder.
    sys.meta_path = [finder, *sys.meta_path]
    try:
        yield finder
    finally:
        sys.meta_path = [entry for entry in sys.meta_path if entry is not finder]


def _loaded(module: str, name: str) -> Any:
    """``module.name`` if ``module`` is imported, else None (an object of a class defined in
    a module exists only once that module is imported)."""
    return getattr(sys.modules.get(module), name, None)


def _fastapi_marker(param: Any) -> Any:
    depends = _loaded("fastapi.params", "Depends")
    return param.dependency if depends is not None and isinstance(param, depends) else None


def _fast_depends_marker(param: Any) -> Any:  # fast-depends 3 and later
    dependant = _loaded("fast_depends.dependencies.model", "Dependant")
    return param.dependency if dependant is not None and isinstance(param, dependant) else None


def _fast_depends_2_marker(param: Any) -> Any:  # fast-depends before 3
    depends = _loaded("fast_depends.dependencies", "Depends")
    return param.dependency if depends is not None and isinstance(param, depends) else None


def _is_starlette_request_class(obj: Any) -> bool:
    request = _loaded("starlette.requests", "Request")
    if request is None or not inspect.isclass(obj):
        return False
    try:
        return issubclass(obj, request)
    except TypeError:
        return False


def _is_werkzeug_proxy(obj: Any) -> bool:
    proxy = _loaded("werkzeug.local", "LocalProxy")
    return proxy is not None and isinstance(obj, proxy)


# What ``dependency_injector.wiring`` registers for each package it imported at import time,
# read on use instead when the package was held off (in wiring's order).
_WIRING_CHECKS: dict[str, tuple[str, tuple[Callable[[Any], Any], ...]]] = {
    "fastapi": ("MARKER_EXTRACTORS", (_fastapi_marker,)),
    "fast_depends": ("MARKER_EXTRACTORS", (_fast_depends_marker, _fast_depends_2_marker)),
    "starlette": ("INSPECT_EXCLUSION_FILTERS", (_is_starlette_request_class,)),
    "werkzeug": ("INSPECT_EXCLUSION_FILTERS", (_is_werkzeug_proxy,)),
}


def _read_on_use(wiring: types.ModuleType, refused: Iterable[str]) -> None:
    """Give ``wiring`` the checks of the held-off packages it asked for, reading them on use."""
    asked = {name.partition(".")[0] for name in refused}
    for package, (registry, checks) in _WIRING_CHECKS.items():
        if package in asked:
            kept = getattr(wiring, registry, None)
            if not isinstance(kept, list):  # only a release _verified() let through gets here
                raise ImportError(
                    f"dependency_injector.wiring has no {registry} list for the checks of "
                    f"{package}, which turnwire held off; set {_OPT_OUT}=1"
                )
            kept.extend(checks)


with _holding_off(_held_off(os.environ)) as _hold:
    from dependency_injector import containers, providers, wiring
_read_on_use(wiring, _hold.refused)
del _hold

__all__ = ["Container", "build_container", "envelope_secret_of", "overriding"]


def envelope_secret_of(settings: Settings) -> str | bytes | None:
    """The envelope secret these settings name (the container's nonce and the container
    cache's check both read it through here)."""
    render = settings.render
    return envelope_secret(
        env_var=render.envelope_secret_env,
        secret_file=render.envelope_secret_file,
        store_path=_sqlite_file(settings.store.where),
    )


def _sqlite_file(location: str | None) -> str | None:
    """A store location that names a SQLite file (beside which a secret may be kept)."""
    if location is None or location.startswith(("postgresql://", "postgres://")):
        return None
    return location


def _envelope_nonce(settings: Settings) -> EnvelopeNonce:
    secret = envelope_secret_of(settings)
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


def _render_setting_providers(namespace: Mapping[str, Any], settings: Any) -> dict[str, Any]:
    """A provider for each render option not defined yet that ``render:`` has a field for."""
    return {
        name: providers.Callable(operator.attrgetter(f"render.{name}"), settings)
        for name in RenderOptions.__struct_fields__
        if name not in namespace and name in RenderSettings.__struct_fields__
    }


def _named(namespace: Mapping[str, Any], names: Iterable[str]) -> dict[str, Any]:
    """``namespace``'s providers for ``names``, as keyword arguments."""
    return {name: namespace[name] for name in names}


def _response_accumulator() -> type:
    from turnwire.wire.accumulator import ResponseAccumulator

    return ResponseAccumulator


class Container(containers.DeclarativeContainer):
    """Providers for settings, plugins, every render option and stage, and ``build_input``.

    One provider per field of :class:`~turnwire.config.options.RenderOptions` and one per stage
    of :data:`~turnwire.hookspecs.STAGES`, generated from those two lists: a new option or
    stage gets its provider without a second list to keep.
    """

    settings = providers.Dependency(instance_of=Settings)
    extra_plugins = providers.Object(())
    plugin_manager = providers.ThreadSafeSingleton(_plugin_manager, settings, extra_plugins)

    # ---------------------------------------------------------------- render options
    # A field of ``render:`` with the option's name is read from there; the others:
    model = providers.Callable(lambda s: s.request.model, settings)
    # Per dispatch (``render_context=``), never from the settings: the default is empty.
    render_context: providers.Provider[dict[str, str]] = providers.Factory(dict)
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
    # Per render: the pipeline sets it from the thread (``model.hosted.thread_anchor``).
    thread_anchor = providers.Object("")
    # Unset in ``render:``, the tags the replay mode implies (``RenderSettings.replay_tags``).
    replay_compatibility = providers.Callable(lambda s: s.render.replay_tags, settings)
    vars().update(_render_setting_providers(vars(), settings))

    # ---------------------------------------------------------------- client seams
    # The output-slot state machine, as a factory: the client calls it once per streamed
    # response for a fresh accumulator (``feed(events) -> list[Generation]``, ``close() ->
    # Generation | None``, ``partial() -> Generation``). Override it with a subclass or any
    # object of that shape: ``overriding(container.response_accumulator, MyAccumulator)``.
    # (Looked up on first use: a render never reads an answer, so it never imports the reader.)
    response_accumulator = providers.Callable(_response_accumulator)

    # ---------------------------------------------------------------- render stages
    # One provider per stage, each resolving to HOOK ("through the plugin manager") until code
    # overrides it.
    vars().update({name: providers.Object(HOOK) for name in STAGES})

    stage_plan_cache = providers.ThreadSafeSingleton(PlanCache)
    stage_plan = providers.Factory(
        stage_plan,
        plugin_manager,
        providers.Callable(lambda s: s.plugins.trace, settings),
        stage_plan_cache,
        **_named(vars(), STAGES),
    )
    render_options = providers.Factory(
        RenderOptions, **_named(vars(), RenderOptions.__struct_fields__)
    )
    render_memo = providers.ThreadSafeSingleton(RenderMemo)
    build_input = providers.Factory(
        functools.partial,
        pipeline.build_input,
        plan=stage_plan,
        options=render_options,
        render_memo=render_memo,
    )

    if TYPE_CHECKING:  # what the loops above add, for type checkers

        def __getattr__(self, name: str) -> Any: ...


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
    # Provided values, not overrides: ``reset_override()`` leaves them in place.
    container.settings.set_default(settings)
    container.extra_plugins.set_provides(tuple(extra_plugins))
    return container
