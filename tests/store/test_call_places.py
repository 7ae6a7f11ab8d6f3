"""``TurnRecords.call_places`` (:class:`~turnwire.store.turns.CallPlaces`): a reloaded thread
extended by a few turns adds a few places and shares the rest, never copying the map, and
gives the records ``to_records`` gives for all the turns at once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from turnwire.model.records import ToolCall, ToolResult
from turnwire.store.turns import CallPlaces, ToolCallPart, Turn, TurnBuilder, TurnRecords

T = datetime(2026, 1, 1, 10, tzinfo=UTC)


def _builder() -> TurnBuilder:
    return TurnBuilder(clock=lambda: T, new_id=lambda: "turn")


def _turn(number: int, call_ids: list[int]) -> Turn:
    """An assistant turn storing these calls (an id stored before comes back answered)."""
    calls = tuple(
        ToolCallPart(
            call=ToolCall(
                id=f"call_{n}",
                tool="lookup",
                created_at=T + timedelta(seconds=n),
                result=ToolResult(text=f"turn {number}"),
            )
        )
        for n in call_ids
    )
    return Turn(id=f"t{number}", role="assistant", parts=calls, created_at=T)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 40), max_size=4, unique=True), min_size=1, max_size=40))
def test_places_extended_load_by_load_are_those_of_all_the_turns(steps: list[list[int]]) -> None:
    b = _builder()
    turns = [_turn(number, ids) for number, ids in enumerate(steps)]
    whole = b.to_records(turns)
    records = TurnRecords()
    seen: list[TurnRecords] = []
    for turn in turns:
        before = dict(records.call_places)
        extended = b.extend_records(records, [turn])
        assert dict(records.call_places) == before  # the records extended are as they were
        seen.append(records)
        records = extended
    assert (records.messages, records.thoughts, records.tool_calls) == whole[:3]
    places = records.call_places
    assert dict(places) == {call.id: place for place, call in enumerate(records.tool_calls)}
    assert len(places) == len(records.tool_calls)
    assert all(call.id in places for call in records.tool_calls) and "call_x" not in places
    assert len(places._layers) <= max(1, len(places)).bit_length() + 1  # type: ignore[attr-defined]


def test_a_long_thread_extended_shares_its_places() -> None:
    b = _builder()
    records = b.extend_records(TurnRecords(), [_turn(0, list(range(5000)))])
    grown = b.extend_records(records, [_turn(1, [5000, 5001])])
    assert type(grown.call_places) is CallPlaces
    assert grown.call_places._layers[0] is records.call_places._layers[0]  # type: ignore[attr-defined]
    assert grown.call_places["call_5001"] == 5001 and grown.call_places["call_3"] == 3
    again = b.extend_records(grown, [_turn(2, [3])])  # stored again: in its earlier place
    assert again.tool_calls[3].result == ToolResult(text="turn 2")
    assert len(again.tool_calls) == 5002 and again.call_places["call_3"] == 3


def test_records_made_with_a_plain_map_extend_alike() -> None:
    b = _builder()
    first = b.extend_records(TurnRecords(), [_turn(0, [1, 2])])
    plain = msgspec.structs.replace(first, call_places=dict(first.call_places))
    grown = b.extend_records(plain, [_turn(1, [2, 3])])
    assert dict(grown.call_places) == {"call_1": 0, "call_2": 1, "call_3": 2}
    assert repr(CallPlaces(({"a": 0},))) == "CallPlaces({'a': 0})"
