"""Reviewer's reproductions: sequences of renders through one warm container that must each
equal a cold render of the same thread."""

from __future__ import annotations

import turnwire
from turnwire.container import overriding

from .conftest import REPLAY, make_container
from .test_warm_render import _outcome, _Scenario


def _cold(container: turnwire.Container, thread: turnwire.Thread, roots: tuple) -> object:
    with overriding(container.render_memo, None):
        return _outcome(container, thread, False, roots)


def test_a_sweep_without_a_body_between_two_renders_leaves_the_body_memo_exact(tmp_path):
    """``render_input`` (what the client's ``fingerprint_new_thoughts`` and ``turnwire
    fingerprint`` call) sweeps without checking a body. The sweep's ``out`` list is reused in
    place, so the body memo's ``source`` (that list, by identity) no longer says which items
    the kept body was made of: the next body took the edited answer's old bytes."""
    container = make_container(REPLAY)
    scenario = _Scenario(tmp_path)
    roots = (scenario.folder,)
    for _ in range(4):
        scenario.append({"q": "a"}, False)
    _outcome(container, scenario.thread(), False, roots)
    scenario.append({"q": "a"}, False)  # a body whose item bounds are known
    _outcome(container, scenario.thread(), False, roots)

    answers = [record["id"] for record in scenario.records["messages"]]
    scenario.edit("edit", answers.index("msg_2"), " (edited)")
    turnwire.api.render_input(scenario.thread(), container=container, model="gpt-5", roots=roots)

    scenario.append({"q": "a"}, False)
    thread = scenario.thread()
    warm = _outcome(container, thread, False, roots)
    assert warm == _cold(container, thread, roots)
    assert b"answer 2 (edited)" in warm[0]
