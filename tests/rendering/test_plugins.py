"""The plugin manager: a misspelled hook or an argument the hook does not have fails loudly, naming
it."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import turnwire
from turnwire import hookimpl

from ..conftest import make_container


def test_a_misspelled_hook_fails_loudly_naming_it():
    plugin = SimpleNamespace(render_untrusted_contnet=hookimpl(lambda: "x"))
    with pytest.raises(turnwire.errors.PluginError) as caught:
        make_container(extra_plugins=[plugin]).stage_plan()
    assert "render_untrusted_contnet" in str(caught.value)


def test_an_argument_the_hook_does_not_have_fails_at_registration():
    @hookimpl
    def render_memories(memories, colour):
        return "x"

    with pytest.raises(turnwire.errors.PluginError):
        make_container(
            extra_plugins=[SimpleNamespace(render_memories=render_memories)]
        ).stage_plan()
