"""The stage plan a container keeps: rebuilt only when a plugin or a stage provider changes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from dependency_injector import providers

import turnwire

from ...conftest import at, make_container, thread, user


def _plain_plugin_manager() -> Any:
    """A pluggy manager of turnwire's hookspecs and built-ins that does not count its changes
    (as a deployment may hand a container one of its own)."""
    import pluggy

    from turnwire import hookspecs
    from turnwire.stages import DEFAULT_PLUGINS

    manager = pluggy.PluginManager("turnwire")
    manager.add_hookspecs(hookspecs)
    for plugin in DEFAULT_PLUGINS:
        manager.register(plugin)
    return manager


@pytest.mark.parametrize("manager", ["turnwire", "plain pluggy"])
def test_the_stage_plan_is_kept_until_a_plugin_or_a_stage_provider_changes(manager):
    """A container builds its stage plan again only when what it is built from changed: a
    plugin registered or unregistered, a stage provider overridden or restored. turnwire's
    own manager counts its changes; any other is looked into on every render."""
    from types import SimpleNamespace

    from turnwire.hookspecs import hookimpl

    @hookimpl(tryfirst=True)
    def render_thought(thought):
        return "LOUD " + (thought.content or "")

    container = make_container()
    if manager != "turnwire":
        container.plugin_manager.override(providers.Object(_plain_plugin_manager()))
        assert not hasattr(container.plugin_manager(), "generation")
    thoughtful = thread(
        thoughts=[{"id": "t1", "content": "aside", "created_at": at(0)}], messages=[user()]
    )

    def rendered_text() -> str:
        return json.dumps(turnwire.render(thoughtful, container=container, model="m").json)

    first = container.stage_plan()
    assert container.stage_plan() is first
    assert "LOUD" not in rendered_text()

    plugin = SimpleNamespace(render_thought=render_thought)
    container.plugin_manager().register(plugin)
    with_plugin = container.stage_plan()
    assert with_plugin is not first and container.stage_plan() is with_plugin
    assert "LOUD aside" in rendered_text()

    with container.render_thought.override(providers.Object(lambda thought: "QUIET")):
        overridden = container.stage_plan()
        assert overridden is not with_plugin
        assert "QUIET" in rendered_text() and "LOUD" not in rendered_text()
    assert "LOUD aside" in rendered_text()  # the override is gone: the plugin again

    container.plugin_manager().unregister(plugin)
    assert container.stage_plan() is not with_plugin
    assert "LOUD" not in rendered_text()
