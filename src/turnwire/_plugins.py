"""The plugin manager: hookspecs, the built-in stages, and plugins from entry points."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

import pluggy

from turnwire import hookspecs
from turnwire.errors import PluginError
from turnwire.stages import DEFAULT_PLUGINS

__all__ = ["ENTRY_POINT_GROUP", "build_plugin_manager"]

ENTRY_POINT_GROUP = "turnwire.plugins"
logger = logging.getLogger("turnwire")


def build_plugin_manager(
    *,
    load_entrypoints: bool = True,
    allow: Sequence[str] | None = None,
    block: Iterable[str] = (),
    trace: bool = False,
    extra_plugins: Iterable[Any] = (),
) -> pluggy.PluginManager:
    """A fresh plugin manager with the hookspecs, the built-ins and the allowed plugins.

    :param load_entrypoints: load the ``turnwire.plugins`` entry points.
    :param allow: entry-point names that may load (``None``: all that are not blocked).
    :param block: entry-point names that never load.
    :param trace: log every stage call (logger ``turnwire.trace``).
    :param extra_plugins: plugin objects registered after the built-ins (tests, embedding).
    """
    manager = pluggy.PluginManager("turnwire")
    manager.add_hookspecs(hookspecs)
    for plugin in DEFAULT_PLUGINS:
        manager.register(plugin, name=f"turnwire.stages.{plugin.__name__.rsplit('.', 1)[-1]}")
    if load_entrypoints:
        _load_entrypoints(manager, allow, set(block))
    for plugin in extra_plugins:
        try:
            manager.register(plugin)
        except pluggy.PluginValidationError as err:
            raise PluginError(
                f"plugin {plugin!r} does not match the hookspecs: {err}", plugin=repr(plugin)
            ) from err
    try:
        manager.check_pending()
    except pluggy.PluginValidationError as err:
        raise PluginError(
            f"a plugin implements a hook turnwire does not have (misspelled?): {err}",
            plugin=str(getattr(err, "plugin", "?")),
        ) from err
    if trace:
        tracer = logging.getLogger("turnwire.trace")
        manager.trace.root.setwriter(lambda message: tracer.debug(message.rstrip()))
        manager.enable_tracing()
    return manager


def _load_entrypoints(
    manager: pluggy.PluginManager, allow: Sequence[str] | None, block: set[str]
) -> None:
    from importlib.metadata import entry_points

    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        if entry_point.name in block or (allow is not None and entry_point.name not in allow):
            logger.debug(
                "plugin %s not loaded (allow/block lists)",
                entry_point.name,
                extra={"kind": "plugin-skipped"},
            )
            manager.set_blocked(entry_point.name)
    try:
        manager.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
    except pluggy.PluginValidationError as err:
        name = manager.get_name(err.plugin) or repr(err.plugin)
        raise PluginError(
            f"plugin {name} does not match the hookspecs: {err}", plugin=name
        ) from err
    except Exception as err:
        raise PluginError(f"a turnwire plugin failed to load: {err}", plugin="?") from err
