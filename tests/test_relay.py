"""``positional_caller`` calls a stage exactly as the relay's attribute does, on every path."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

import turnwire
from turnwire import hookimpl, hookspecs
from turnwire.rendering.plugins import TurnwirePluginManager
from turnwire.rendering.relay import StagePlan, StageRelay, positional_caller

from .conftest import make_container


class _Late:
    """Takes the per-call argument between two options."""

    @hookimpl(tryfirst=True)
    def render_thought(self, self_identity: str, thought: Any, envelope_nonce: Any) -> str:
        return f"{self_identity}:{thought.id}:{envelope_nonce(thought.id)}"


class _First:
    """Takes the per-call argument first, then one option."""

    @hookimpl
    def render_thought(self, thought: Any, self_identity: str) -> str:
        return f"{thought.id}@{self_identity}"


def _relay(manager: Any, **overrides: Any) -> StageRelay:
    options = make_container().render_options(model="gpt-5").injectable()
    return StageRelay(StagePlan(manager, overrides), {**options, "warn": print, "scratch": {}})


def _alone(plugin: Any) -> TurnwirePluginManager:
    manager = TurnwirePluginManager()
    manager.add_hookspecs(hookspecs)
    manager.register(plugin)
    return manager


THOUGHT = turnwire.Thought(id="t1", content="hmm", created_at=datetime(2026, 1, 1, tzinfo=UTC))


@pytest.mark.parametrize(
    ("manager", "overrides", "kind"),
    [
        (lambda: make_container().plugin_manager(), {}, "only"),  # the built-in, by position
        (lambda: _alone(_First()), {}, "only"),  # first, then options
        (lambda: _alone(_Late()), {}, "only"),  # mid-signature: by keyword
        (lambda: make_container(extra_plugins=(_Late(),)).plugin_manager(), {}, "hooks"),
        (
            lambda: make_container().plugin_manager(),
            {"render_thought": lambda thought, self_identity: f"{self_identity}/{thought.id}"},
            "override",
        ),
    ],
)
def test_positional_caller_matches_the_relay(manager: Any, overrides: Any, kind: str) -> None:
    relay = _relay(manager(), **overrides)
    assert relay.plan.targets["render_thought"][0] == kind
    expected = relay.render_thought(thought=THOUGHT)
    assert positional_caller(relay, "render_thought", ("thought",))(THOUGHT) == expected


def test_a_missing_argument_fails_as_through_the_relay() -> None:
    relay = _relay(_alone(_Late()))
    with pytest.raises(KeyError):
        relay.render_thought(self_identity="x")
    with pytest.raises(KeyError):
        positional_caller(relay, "render_thought", ("self_identity",))("x")
