"""The plugin manager: hookspecs, the built-in stages, and plugins from entry points.

A third-party plugin is an entry point in the group ``turnwire.plugins``. What it names is
registered as is, unless it offers the settings protocol:

``settings_struct``
    a msgspec Struct type; ``plugins.settings.<entry-point name>`` is validated against it at
    load time (an error names ``$.plugins.settings.<name>...``);
``configure(settings)``
    returns the object to register, built from the validated settings.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from importlib import metadata
from types import ModuleType
from typing import Any

import msgspec
import pluggy

from turnwire import hookspecs
from turnwire.errors import ConfigError, PluginError, validation_location
from turnwire.stages import DEFAULT_PLUGINS

__all__ = ["ENTRY_POINT_GROUP", "PluginInfo", "TurnwirePluginManager", "build_plugin_manager"]

ENTRY_POINT_GROUP = "turnwire.plugins"
logger = logging.getLogger("turnwire")


class PluginInfo(msgspec.Struct, frozen=True, kw_only=True):
    """One registered plugin, as ``turnwire plugins`` lists it."""

    name: str
    distribution: str
    version: str
    hooks: tuple[str, ...]
    builtin: bool


class TurnwirePluginManager(pluggy.PluginManager):
    """A pluggy manager that remembers where each plugin came from, and counts the changes to
    what it holds (``generation``: one more on every plugin registered or unregistered and
    every hookspec added), so a stage plan built from it is known current without listing
    every stage's implementations again."""

    def __init__(self) -> None:
        super().__init__("turnwire")
        self.origins: dict[str, tuple[str, str]] = {}
        self.skipped: dict[str, str] = {}
        self.generation = 0

    def register(self, plugin: object, name: str | None = None) -> str | None:
        try:
            return super().register(plugin, name)
        finally:
            self.generation += 1

    def unregister(self, plugin: object | None = None, name: str | None = None) -> Any:
        try:
            return super().unregister(plugin, name)
        finally:
            self.generation += 1

    def add_hookspecs(self, module_or_class: ModuleType | type) -> None:
        try:
            super().add_hookspecs(module_or_class)
        finally:
            self.generation += 1

    def describe(self) -> list[PluginInfo]:
        """Every registered plugin with its distribution, version and implemented hooks."""
        infos = []
        for name, plugin in self.list_name_plugin():
            if plugin is None:
                continue
            distribution, version = self.origins.get(name, ("?", "?"))
            hooks = tuple(sorted(caller.name for caller in self.get_hookcallers(plugin) or ()))
            infos.append(
                PluginInfo(
                    name=name,
                    distribution=distribution,
                    version=version,
                    hooks=hooks,
                    builtin=name.startswith("turnwire."),
                )
            )
        return infos


def _turnwire_version() -> str:
    try:
        return metadata.version("turnwire")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "0+unknown"


def build_plugin_manager(
    *,
    load_entrypoints: bool = True,
    allow: Sequence[str] | None = None,
    block: Iterable[str] = (),
    trace: bool = False,
    plugin_settings: Mapping[str, Mapping[str, Any]] | None = None,
    extra_plugins: Iterable[Any] = (),
) -> TurnwirePluginManager:
    """A fresh plugin manager with the hookspecs, the built-ins and the allowed plugins.

    :param load_entrypoints: load the ``turnwire.plugins`` entry points.
    :param allow: entry-point names that may load (``None``: all that are not blocked).
    :param block: entry-point names that never load.
    :param trace: log every stage call (logger ``turnwire.trace``, level DEBUG).
    :param plugin_settings: ``plugins.settings``: per-plugin settings by entry-point name.
    :param extra_plugins: plugin objects registered after the built-ins (tests, embedding).
    :raises PluginError: a plugin fails to import or does not match the hookspecs.
    :raises ConfigError: a plugin's settings do not validate.
    """
    manager = TurnwirePluginManager()
    manager.add_hookspecs(hookspecs)
    version = _turnwire_version()
    for plugin in DEFAULT_PLUGINS:
        name = plugin.__name__
        manager.register(plugin, name=name)
        manager.origins[name] = ("turnwire", version)
    settings = dict(plugin_settings or {})
    if load_entrypoints:
        _load_entrypoints(manager, allow, set(block), settings)
    for name in settings:
        if manager.get_plugin(name) is None:
            logger.warning(
                "plugins.settings.%s is set but no plugin of that name is loaded",
                name,
                extra={"kind": "plugin-settings-unused"},
            )
    for plugin in extra_plugins:
        _register(manager, plugin, None)
    try:
        manager.check_pending()
    except pluggy.PluginValidationError as err:
        name = manager.get_name(err.plugin) or repr(err.plugin)
        detail = "; ".join(line.strip() for line in str(err).splitlines() if line.strip())
        raise PluginError(
            f"plugin {name} implements a hook turnwire does not have (misspelled?): {detail}",
            plugin=name,
        ) from err
    if trace:
        tracer = logging.getLogger("turnwire.trace")
        manager.trace.root.setwriter(lambda message: tracer.debug(message.rstrip()))
        manager.enable_tracing()
    return manager


def _register(manager: pluggy.PluginManager, plugin: Any, name: str | None) -> None:
    try:
        manager.register(plugin, name=name)
    except pluggy.PluginValidationError as err:
        label = name or repr(plugin)
        detail = "; ".join(line.strip() for line in str(err).splitlines() if line.strip())
        raise PluginError(
            f"plugin {label} does not match the hookspecs: {detail}", plugin=label
        ) from err
    except ValueError as err:
        label = name or repr(plugin)
        raise PluginError(f"plugin {label} is registered twice: {err}", plugin=label) from err


def _configure(name: str, loaded: Any, raw: Mapping[str, Any] | None) -> Any:
    struct = getattr(loaded, "settings_struct", None)
    configure = getattr(loaded, "configure", None)
    if struct is None:
        if raw:
            raise ConfigError(
                f"$.plugins.settings.{name}: plugin {name} takes no settings",
                path=f"$.plugins.settings.{name}",
            )
        return configure(None) if callable(configure) else loaded
    try:
        settings = msgspec.convert(dict(raw or {}), struct)
    except msgspec.ValidationError as err:
        path, detail = validation_location(err, root=f"$.plugins.settings.{name}")
        raise ConfigError(f"{path}: {detail}", path=path) from err
    if not callable(configure):
        raise PluginError(
            f"plugin {name} declares settings_struct but no configure(settings)", plugin=name
        )
    return configure(settings)


def _load_entrypoints(
    manager: TurnwirePluginManager,
    allow: Sequence[str] | None,
    block: set[str],
    settings: Mapping[str, Mapping[str, Any]],
) -> None:
    found = metadata.entry_points(group=ENTRY_POINT_GROUP)
    installed = {entry_point.name for entry_point in found}
    for listed, names in (("allow", allow or ()), ("block", sorted(block))):
        for name in names:
            if name not in installed:  # a typo here would silently drop (or keep) a plugin
                logger.warning(
                    "plugins.%s names %r, which is no installed plugin (installed: %s)",
                    listed,
                    name,
                    ", ".join(sorted(installed)) or "none",
                    extra={"kind": "plugin-name-unknown"},
                )
    for entry_point in found:
        name = entry_point.name
        if name in block or (allow is not None and name not in allow):
            reason = "block-listed" if name in block else "not in plugins.allow"
            manager.skipped[name] = reason
            logger.debug(
                "plugin %s not loaded (%s)", name, reason, extra={"kind": "plugin-skipped"}
            )
            continue
        if manager.get_plugin(name) is not None:
            continue
        try:
            loaded = entry_point.load()
        except Exception as err:
            raise PluginError(f"plugin {name} failed to import: {err}", plugin=name) from err
        _register(manager, _configure(name, loaded, settings.get(name)), name)
        dist = entry_point.dist
        manager.origins[name] = (dist.name, dist.version) if dist is not None else ("?", "?")
