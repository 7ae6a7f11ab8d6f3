"""Text with a lone surrogate from records built in code is a typed error naming the item, and
a renderer that met one renders the next thread as a cold one would."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
import pytest

import turnwire
from turnwire.errors import RenderError
from turnwire.model.records import Message, Thread

AT = datetime(2026, 1, 1, tzinfo=UTC)


def _thread(*texts: str) -> Thread:
    return Thread(
        model="gpt-5",
        messages=tuple(
            Message(id=f"m{n}", role="user", content=text, created_at=AT.replace(second=n))
            for n, text in enumerate(texts)
        ),
    )


def test_a_lone_surrogate_in_a_record_is_a_render_error_naming_the_item():
    container = turnwire.build_container()
    good = _thread("one", "two")
    turnwire.render(good, container=container)  # the warm path has a body to extend
    with pytest.raises(RenderError) as caught:
        turnwire.render(_thread("one", "two", "half \ud800"), container=container)
    assert str(caught.value).startswith("$.messages[2]: text with a lone surrogate")
    grown = _thread("one", "two", "three")
    warm = turnwire.render(grown, container=container).body
    cold = turnwire.render(grown, container=turnwire.build_container()).body
    assert warm == cold
    assert msgspec.json.decode(warm)["input"][2]["content"][0]["text"].count("three") == 1
