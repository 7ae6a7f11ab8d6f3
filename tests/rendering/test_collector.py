"""A render leaves nothing for the garbage collector: what it made and dropped is freed by
reference counting as the render ends (a stage relay holds itself, ``options["stages"]``, and
is released when its render ends), so a long-lived process rendering request after request
does not set off collections that walk everything the memo keeps."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from types import SimpleNamespace

import msgspec
import pytest

from turnwire.hookspecs import hookimpl
from turnwire.rendering.relay import StageRelay

from ..conftest import _REAL_RENDER, REPLAY, make_container
from .test_sweep_chunks import _grown, _thread


@pytest.fixture
def no_collection() -> Iterator[None]:
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _composite_plugin() -> SimpleNamespace:
    """A message stage that calls a sub-stage through ``stages`` (the relay)."""

    @hookimpl(tryfirst=True)
    def render_timeline_message(message, stages):
        stages.filter_thoughts(thoughts=())  # a sub-stage through the relay

    return SimpleNamespace(render_timeline_message=render_timeline_message)


@pytest.mark.parametrize("plugins", [(), (_composite_plugin(),)], ids=["built-in", "composite"])
def test_a_render_leaves_no_cyclic_garbage(no_collection: None, plugins: tuple) -> None:
    container = make_container(REPLAY, extra_plugins=plugins)
    _REAL_RENDER(_thread(2), container=container)  # the container's own first use
    gc.collect()
    thread = _thread(6)
    for n in range(6, 10):  # a first render, then warm ones of a growing thread
        _REAL_RENDER(thread, container=container)  # (not the oracle-checked one of conftest)
        assert gc.collect() == 0, n
        thread = _grown(thread, n)
        thread = msgspec.structs.replace(
            thread,
            thoughts=tuple(
                msgspec.structs.replace(
                    t, payload=msgspec.structs.replace(t.payload, prefix_fingerprint=None)
                )
                if t.payload is not None
                else t
                for t in thread.thoughts
            ),
        )


def test_a_released_relay_calls_no_stage() -> None:
    container = make_container()
    relay = StageRelay(container.stage_plan(), container.render_options().injectable())
    assert relay.reached() == ()
    relay.release()
    assert vars(relay) == {}
    with pytest.raises(AttributeError):
        relay.render_message_content  # noqa: B018
