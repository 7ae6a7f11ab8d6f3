"""Records built in code are checked once per renderer (``CheckedRecords``): a warm render checks
only the records it has not seen (by identity), a record rewritten in place is checked again,
another thread rendered in between is not checked twice, what it remembers is bounded, and a
thread the loader made is not checked again."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import pytest

import turnwire
from turnwire import Message, ThreadFileError
from turnwire.model.checks import thread_fields
from turnwire.rendering._incremental import checked as checked_module
from turnwire.rendering.container import overriding

from ...conftest import make_container, thread, user

START = datetime(2026, 1, 1, 10, tzinfo=UTC)


def _messages(count: int, first: int = 0, prefix: str = "u") -> tuple[Message, ...]:
    return tuple(
        Message(
            id=f"{prefix}{i}",
            role="user",
            content=f"question {i}",
            created_at=START + timedelta(seconds=i),
        )
        for i in range(first, first + count)
    )


def _thread(messages: tuple[Message, ...]) -> turnwire.Thread:
    return turnwire.Thread(model="gpt-5", system_prompt="S", messages=messages)


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, list[int] | None]]:
    """What each check of the memo looked at: of each record tuple, the positions (``None``:
    all of them)."""
    seen: list[tuple[str, list[int] | None]] = []
    real = checked_module.check_parts

    def spy(thread: Any, chosen: Any, **kwargs: Any) -> None:
        for name, places in chosen.items():
            if thread_fields()[name][1] is not None:
                seen.append((name, None if places is None else list(places)))
        real(thread, chosen, **kwargs)

    monkeypatch.setattr(checked_module, "check_parts", spy)
    return seen


def test_a_warm_render_checks_only_the_records_it_has_not_seen(checks):
    container = make_container()
    first = _thread(_messages(50))
    turnwire.render(first, container=container)
    assert checks == [("messages", None)]  # a first render: the whole tuple at once
    checks.clear()
    grown = msgspec.structs.replace(first, messages=first.messages + _messages(2, 50))
    turnwire.render(grown, container=container)
    assert checks == [("messages", [50, 51])]
    checks.clear()
    turnwire.render(grown, container=container)
    assert checks == []


def test_a_record_rewritten_in_place_is_checked_again_and_its_fault_named(checks):
    container = make_container()
    first = _thread(_messages(50))
    turnwire.render(first, container=container)
    checks.clear()
    bad = msgspec.structs.replace(first.messages[10], role="usr")  # type: ignore[arg-type]
    edited = msgspec.structs.replace(
        first, messages=(*first.messages[:10], bad, *first.messages[11:])
    )
    with pytest.raises(ThreadFileError) as caught:
        turnwire.render(edited, container=container)
    assert caught.value.path == "$.messages[10].role"
    assert checks == [("messages", [10])]
    # the memo keeps nothing of a thread that failed: the next render of it fails the same
    with pytest.raises(ThreadFileError):
        turnwire.render(edited, container=container)


def test_another_thread_rendered_in_between_is_not_checked_twice(checks):
    container = make_container()
    one, other = _thread(_messages(40)), _thread(_messages(40, prefix="v"))
    for each in (one, other):
        turnwire.render(each, container=container)
    checks.clear()
    again = msgspec.structs.replace(one, messages=one.messages + _messages(1, 40))
    turnwire.render(again, container=container)
    assert checks == [("messages", [40])]
    checks.clear()
    turnwire.render(other, container=container)
    assert checks == []


def test_what_it_remembers_is_bounded():
    container = make_container()
    for number in range(12):
        turnwire.render(_thread(_messages(100, prefix=f"t{number}-")), container=container)
    checked = container.render_memo().checked
    assert len(checked._known["messages"]) <= max(2 * 100, 256)
    container.render_memo().clear()  # a cold render: what held of a frozen record still holds
    assert checked._known
    checked.clear()
    assert checked._known == {} and checked._last == {}


def test_a_thread_the_loader_made_is_not_checked_again(checks):
    container = make_container()
    turnwire.render(
        thread(model="gpt-5", messages=[user("u1"), user("u2", second=1)]), container=container
    )
    checks.clear()
    mapping = {"version": 1, "model": "gpt-5", "messages": [user("u1"), user("u2", second=1)]}
    turnwire.render(mapping, container=container)
    assert checks == []


def test_without_a_memo_every_render_checks_the_whole_thread(checks):
    container = make_container()
    bad = _thread((Message(id="m", role="user", content="x", created_at="2026"),))  # type: ignore[arg-type]
    with overriding(container.render_memo, None):
        for _ in range(2):
            with pytest.raises(ThreadFileError, match=r"^\$\.messages\[0\]\.created_at: "):
                turnwire.render(bad, container=container)
        turnwire.render(_thread(_messages(3)), container=container)
    assert checks == []  # no memo: check_thread, the whole thread each time
