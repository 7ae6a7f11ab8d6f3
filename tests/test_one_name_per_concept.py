"""One name per concept across the command line, the configuration and Python.

``output_schema`` (``--output-schema``, ``request.output_schema``, ``output_schema=``),
``render_context`` (``--render-context``, ``render_context=``) and the store's location
(``--store``, ``store.location``, ``open_store(location)``, ``$TURNWIRE_STORE``). The spellings
before keep working for one version, each with a warning that names the new one.
"""

from __future__ import annotations

import warnings

import msgspec
import pytest

import turnwire

from .conftest import make_container, thread, user


class Answer(msgspec.Struct):
    value: int


def _thread() -> turnwire.Thread:
    return thread(model="gpt-5", messages=[user()])


def test_render_takes_output_schema_and_the_old_output_type_with_a_warning() -> None:
    container = make_container()
    new = turnwire.render(_thread(), container=container, output_schema=Answer).body
    with pytest.warns(DeprecationWarning, match="output_type= is deprecated: pass output_schema="):
        old = turnwire.render(_thread(), container=container, output_type=Answer).body
    assert new == old
    assert b'"name":"Answer"' in new
    with warnings.catch_warnings(), pytest.raises(TypeError, match="not both"):
        warnings.simplefilter("ignore", DeprecationWarning)
        turnwire.render(_thread(), container=container, output_schema=Answer, output_type=Answer)


def test_a_renderer_takes_output_schema_too() -> None:
    renderer = turnwire.Renderer(container=make_container())
    new = renderer.render(_thread(), output_schema=Answer).body
    with pytest.warns(DeprecationWarning, match="output_schema="):
        assert renderer.render(_thread(), output_type=Answer).body == new
