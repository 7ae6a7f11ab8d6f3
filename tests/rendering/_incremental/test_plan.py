"""The stage plan a container keeps: rebuilt only when a plugin or a stage provider changes."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest
from dependency_injector import providers

import turnwire
from turnwire.hookspecs import hookimpl

from ...conftest import at, make_container, thread, user
from .test_memo import _cold_outcome, _mixed, _render_outcome


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


def test_a_plugin_registered_while_a_plan_is_built_is_not_kept_past_its_unregistration():
    """Another thread registers a plugin between the moment the container reads what a stage
    plan is built from and the moment it builds it (simulated here by registering it from
    inside the build). Once that plugin is unregistered again, the container's plan must not
    still call it."""
    from unittest import mock

    from turnwire.rendering.relay import StagePlan

    container = make_container()
    manager = container.plugin_manager()
    plugin = SimpleNamespace(render_tool_call_result=_warning_result)
    real_init = StagePlan.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        if not manager.is_registered(plugin):
            manager.register(plugin)  # "another thread", between the inputs and the build
        real_init(self, *args, **kwargs)

    with mock.patch.object(StagePlan, "__init__", init):
        container.stage_plan()
    manager.unregister(plugin)
    plan = container.stage_plan()
    kind, target = plan.targets["render_tool_call_result"]
    functions = [target[0]] if kind == "only" else [function for function, _ in target[3]]
    assert _warning_result not in functions
    thread = _mixed(1)
    assert _render_outcome(container, thread) == _cold_outcome(container, thread)
    assert not any("warned" in w for w in _render_outcome(container, thread)[1])


@hookimpl(tryfirst=True)
def _warning_result(tool_call: Any, warn: Any) -> Any:
    warn(f"warned {tool_call.id}")
    return None
