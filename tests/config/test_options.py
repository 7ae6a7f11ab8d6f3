"""Render options' own rules: one ``bucket_order`` rule, checked when settings load and again when a
container override sets the order."""

from __future__ import annotations

import pytest
from dependency_injector import providers

import turnwire

from ..conftest import thread, user


@pytest.mark.parametrize(
    ("order", "problem"),
    [
        (("memories", "retrievables"), "must contain `timeline`"),
        (("timeline", "memories", "timeline"), "a bucket is listed twice"),
    ],
)
def test_one_bucket_order_rule_at_load_and_for_an_override(order, problem):
    from turnwire.errors import ConfigError

    with pytest.raises(ConfigError, match=problem) as loaded:
        turnwire.build_container(overrides={"render": {"bucket_order": list(order)}})
    assert loaded.value.path == "$.render.bucket_order"
    container = turnwire.build_container()
    t = thread(model="gpt-5", messages=[user()])
    with container.bucket_order.override(providers.Object(order)):
        with pytest.raises(ConfigError, match=problem) as rendered:
            turnwire.render(t, container=container)
    assert rendered.value.path == "$.render.bucket_order"
