"""``context.window`` (all, last_turns, token_budget, the hysteresis of ``cut_to``) and the
plain-text transcript."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

import turnwire
from turnwire.config.schema import config_schema
from turnwire.config.settings import CompactWindow, WindowSettings
from turnwire.errors import ConfigError
from turnwire.rendering.windows import (
    WindowCut,
    apply_window,
    estimate_tokens,
    timeline_turns,
    transcript,
    window_cut,
)

from ..conftest import REPLAY, assistant, at, make_container, reasoning_thought, thread, user


def _exchange(n: int, *, words: int = 3, reasoning: bool = False) -> dict[str, list[Any]]:
    """Turn n: a question, maybe reasoning, a tool call with its result, an answer."""
    base = 7 * n
    records: dict[str, list[Any]] = {
        "messages": [
            user(f"u{n}", "question " * words, base),
            assistant(f"msg_{n}", "answer " * words, base + 3, seq=3),
        ],
        "thoughts": [],
        "tool_calls": [
            {
                "id": f"call_{n}|fc_{n}",
                "tool": "lookup",
                "args": {"n": n},
                "result": {"text": "result " * words},
                "created_at": at(base + 2),
                "seq": 2,
            }
        ],
    }
    if reasoning:
        records["thoughts"].append(
            reasoning_thought(f"rs_{n}", base + 1, fingerprint=None, paired=f"fc_{n}", seq=1)
        )
    return records


def _conversation(sizes: list[int], *, reasoning: bool = False) -> turnwire.Thread:
    fields: dict[str, list[Any]] = {"messages": [], "thoughts": [], "tool_calls": []}
    for n, words in enumerate(sizes):
        for key, values in _exchange(n, words=words, reasoning=reasoning).items():
            fields[key] += values
    return thread(
        model="gpt-5",
        system_prompt="Be useful.",
        memories=[{"id": "m1", "content": "Likes tea"}],
        tools=[{"name": "lookup"}],
        **fields,
    )


def test_all_is_the_default_and_keeps_everything():
    assert turnwire.load_settings().context.window == "all"
    whole = _conversation([3, 3, 3])
    assert apply_window(whole, "all") is whole


def test_last_turns_keeps_whole_turns_and_the_header():
    whole = _conversation([3, 3, 3, 3])
    kept = apply_window(whole, WindowSettings(last_turns=2))
    assert [m.id for m in kept.messages] == ["u2", "msg_2", "u3", "msg_3"]
    assert [c.id for c in kept.tool_calls] == ["call_2|fc_2", "call_3|fc_3"]
    assert (kept.system_prompt, kept.memories, kept.tools) == (
        whole.system_prompt,
        whole.memories,
        whole.tools,
    )
    assert apply_window(whole, WindowSettings(last_turns=9)) is whole


def test_the_window_applies_to_the_rendered_request():
    container = make_container({"context": {"window": {"last_turns": 1}}})
    body = turnwire.render(_conversation([3, 3, 3]), container=container).json
    users = [item for item in body["input"] if item.get("role") == "user"]
    assert len(users) == 1
    assert 'createdAt="2026-01-01T10:00:14.000Z"' in users[0]["content"][0]["text"]
    calls = [item["call_id"] for item in body["input"] if item.get("type") == "function_call"]
    assert calls == ["call_2"]
    assert "Likes tea" in body["instructions"]


def test_token_budget_keeps_the_longest_recent_run_that_fits():
    whole = _conversation([50, 50, 5, 5])
    small = sum(estimate_tokens(r) for turn in timeline_turns(whole)[2:] for r in turn)
    kept = apply_window(whole, WindowSettings(token_budget=small))
    assert [m.id for m in kept.messages if m.role == "user"] == ["u2", "u3"]
    kept = apply_window(whole, WindowSettings(token_budget=small - 1))
    assert [m.id for m in kept.messages if m.role == "user"] == ["u3"]


def test_a_last_turn_over_the_budget_is_sent_whole_with_a_warning(caplog):
    whole = _conversation([5, 500])
    kept = apply_window(whole, WindowSettings(token_budget=10))
    assert [m.id for m in kept.messages] == ["u1", "msg_1"]
    assert "over context.window.token_budget" in caplog.text


@pytest.mark.parametrize(
    "window",
    [{"last_turns": 0}, {"token_budget": -1}, {}, {"last_turns": 1, "token_budget": 5}, "some"],
)
def test_bad_windows_fail_at_load_time(window):
    with pytest.raises(ConfigError) as caught:
        turnwire.load_settings(overrides={"context": {"window": window}})
    assert caught.value.path.startswith("$.context.window")


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=8),
    budget=st.integers(min_value=1, max_value=400),
    reasoning=st.booleans(),
)
def test_token_budget_property_the_kept_suffix_pairs_and_fits(sizes, budget, reasoning):
    """With ``cut_to: 1`` the window slides: the longest recent run of turns that fits."""
    whole = _conversation(sizes, reasoning=reasoning)
    kept = apply_window(whole, WindowSettings(token_budget=budget, cut_to=1))
    turns = timeline_turns(whole)
    kept_turns = timeline_turns(kept)
    # A suffix of whole turns, never empty.
    assert 1 <= len(kept_turns) <= len(turns)
    assert kept_turns == turns[len(turns) - len(kept_turns) :]
    cost = sum(estimate_tokens(r) for turn in kept_turns for r in turn)
    if len(kept_turns) > 1:
        assert cost <= budget
        # Maximal: one more turn would not fit.
    if len(kept_turns) < len(turns):
        more = sum(estimate_tokens(r) for r in turns[-len(kept_turns) - 1])
        assert cost + more > budget
    # Pairs survive: every kept reasoning item's partner and every call's output are kept.
    ids = {m.id for m in kept.messages} | {c.id.split("|")[1] for c in kept.tool_calls}
    for thought in kept.thoughts:
        assert thought.payload is not None and thought.payload.paired_item_id in ids
    assert all(call.result is not None for call in kept.tool_calls)


def test_a_window_with_replay_still_renders_valid_pairs():
    container = make_container(
        {**REPLAY, "context": {"window": {"last_turns": 2}}, "render": {**REPLAY["render"]}}
    )
    rendered = turnwire.render(_conversation([3, 3, 3], reasoning=True), container=container)
    # The fingerprints are absent, so the reasoning is dropped, never sent unpaired.
    assert all(item.get("type") != "reasoning" for item in rendered.json["input"])


def test_transcript():
    conversation = thread(
        messages=[
            user(
                "u1",
                "What's the weather?",
                0,
                identity={"identifier": "u", "representation": "Ana"},
                attachments=[
                    {
                        "id": "a1",
                        "kind": "image",
                        "mime_type": "image/png",
                        "filename": "sky.png",
                        "data_base64": "iVBORw0KGgo=",
                    }
                ],
            ),
            assistant("msg_1", "Sunny, 21C.", 3, seq=3),
        ],
        thoughts=[{"id": "t1", "content": "Check the tool.", "created_at": at(1), "seq": 1}],
        tool_calls=[
            {
                "id": "c1",
                "tool": "weather",
                "args": {"city": "Paris"},
                "result": {"text": "21C"},
                "created_at": at(2),
                "seq": 2,
            },
            {"id": "c2", "tool": "weather", "args": {}, "created_at": at(4), "seq": 4},
        ],
    )
    assert transcript(conversation) == (
        "Ana: What's the weather? [attached sky.png]\n"
        "(thinking) Check the tool.\n"
        '[tool weather({"city":"Paris"})] 21C\n'
        "Assistant: Sunny, 21C.\n"
        "[tool weather({})] (not run yet)\n"
    )
    assert turnwire.rendering.windows.transcript(thread()) == ""


def test_a_window_never_cuts_inside_one_response():
    """A user message stamped inside a response (a hand-made file) does not start the last turn
    between a reasoning item and the call it produced."""
    import turnwire

    from ..conftest import REPLAY, make_container

    stamp = "2026-01-01T10:00:02Z"
    data = {
        "version": 1,
        "model": "gpt-5",
        "messages": [
            {"id": "u1", "role": "user", "content": "hi", "created_at": "2026-01-01T10:00:00Z"},
            {"id": "u2", "role": "user", "content": "next", "created_at": stamp, "seq": 1},
        ],
        "thoughts": [
            {
                "id": "rs_1",
                "created_at": stamp,
                "seq": 0,
                "replay_compatibility": "openai-responses-reasoning-v1",
                "payload": {
                    "variant": "responses-reasoning",
                    "paired_item_id": "ws_1",
                    "item": {
                        "type": "reasoning",
                        "id": "rs_1",
                        "summary": [],
                        "encrypted_content": "gAAAA",
                    },
                },
            }
        ],
        "hosted_items": [
            {
                "id": "ws_1",
                "type": "web_search_call",
                "created_at": stamp,
                "seq": 2,
                "item": {
                    "id": "ws_1",
                    "type": "web_search_call",
                    "status": "completed",
                    "action": {"type": "search", "query": "q"},
                },
            }
        ],
    }
    thread = turnwire.load_thread(data)
    windowed = apply_window(thread, WindowSettings(last_turns=1))
    # the cut moves back to a response boundary: here, before the first turn
    assert [t.id for t in windowed.thoughts] == ["rs_1"]  # kept with the call
    assert [m.id for m in windowed.messages] == ["u1", "u2"]
    settings = {
        "render": {
            **REPLAY["render"],
            "unfingerprinted_reasoning": "trust",
            "hosted_replay": "all",
        },
        "context": {"window": {"last_turns": 1}},
    }
    body = turnwire.render(thread, container=make_container(settings)).json
    kinds = [i.get("type") for i in body["input"]]
    assert "web_search_call" not in kinds or "reasoning" in kinds


# ---------------------------------------------------------------- cutting with hysteresis

TRUSTED_REPLAY = {"render": {**REPLAY["render"], "unfingerprinted_reasoning": "trust"}}


def _stamp(second: int) -> str:
    return f"2026-01-01T{10 + second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}Z"


def _reasoned_turn(n: int, calls: int = 1) -> dict[str, list[Any]]:
    """Turn n: a question, then ``calls`` responses each reasoning into a call (its result
    recorded), then one reasoning into the answer; each response has a timestamp of its own."""
    base = 100 * n
    records: dict[str, list[Any]] = {
        "messages": [
            {"id": f"u{n}", "role": "user", "content": "question", "created_at": _stamp(base)}
        ],
        "thoughts": [],
        "tool_calls": [],
    }
    for step in range(calls + 1):
        stamp, partner = _stamp(base + 1 + step), f"fc_{n}_{step}" if step < calls else f"msg_{n}"
        thought = reasoning_thought(f"rs_{n}_{step}", 0, fingerprint=None, paired=partner)
        records["thoughts"].append({**thought, "created_at": stamp})
        if step < calls:
            records["tool_calls"].append(
                {
                    "id": f"call_{n}_{step}|{partner}",
                    "tool": "lookup",
                    "args": {"n": n},
                    "result": {"text": "result"},
                    "created_at": stamp,
                    "seq": 1,
                }
            )
        else:
            records["messages"].append(assistant(partner, "answer", 0, seq=1, created_at=stamp))
    return records


def _growing(turns: list[dict[str, list[Any]]]) -> turnwire.Thread:
    fields: dict[str, list[Any]] = {"messages": [], "thoughts": [], "tool_calls": []}
    for records in turns:
        for key, values in records.items():
            fields[key] += values
    return thread(model="gpt-5", system_prompt="Be useful.", tools=[{"name": "lookup"}], **fields)


def _turn_cost(records: dict[str, list[Any]]) -> int:
    (turn,) = timeline_turns(_growing([records]))
    return sum(estimate_tokens(record) for record in turn)


def _check_pairs(items: list[dict[str, Any]]) -> None:
    """Every reasoning item is followed by its partner, every call by its output."""
    outputs = [i for i, item in enumerate(items) if item.get("type") == "function_call_output"]
    calls = [i for i, item in enumerate(items) if item.get("type") == "function_call"]
    assert [items[i]["call_id"] for i in calls] == [items[i]["call_id"] for i in outputs]
    assert all(call < output for call, output in zip(calls, outputs, strict=True))
    for i, item in enumerate(items):
        if item.get("type") == "reasoning":
            n, step = item["id"].removeprefix("rs_").split("_")
            assert items[i + 1]["id"] in (f"fc_{n}_{step}", f"msg_{n}")


def _requests(threads: list[turnwire.Thread], window: dict[str, Any]) -> list[dict[str, Any]]:
    container = make_container({**TRUSTED_REPLAY, "context": {"window": window}})
    return [turnwire.render(grown, container=container).json for grown in threads]


def _resets(bodies: list[dict[str, Any]]) -> list[int]:
    """The requests (counted from 1) that do not extend the one before them byte for byte."""
    resets = []
    for number, (before, body) in enumerate(itertools.pairwise(bodies), start=2):
        assert (body["instructions"], body["tools"]) == (before["instructions"], before["tools"])
        if body["input"][: len(before["input"])] != before["input"]:
            resets.append(number)
        else:
            assert {k: v for k, v in body.items() if k != "input"} == {
                k: v for k, v in before.items() if k != "input"
            }
    return resets


@pytest.mark.parametrize(
    ("kind", "limit", "cut_to", "cuts"),
    [
        ("last_turns", 4, 0.5, [5, 8, 11]),  # the default cut_to
        ("token_budget", 4, 0.5, [5, 8, 11]),
        ("token_budget", 4, 0.75, [5, 7, 9, 11]),
        ("last_turns", 4, 1.0, [5, 6, 7, 8, 9, 10, 11, 12]),  # sliding, as before cut_to
    ],
)
def test_a_growing_thread_extends_every_request_but_at_the_cuts(kind, limit, cut_to, cuts):
    """A thread grows by one turn per request, twelve turns, with a window of four turns (by
    count, or by a budget of four turns' estimate). Over the limit, a cut keeps ``cut_to`` of
    it; every other request starts with the previous one's input, byte for byte."""
    records = [_reasoned_turn(n) for n in range(12)]
    cost = _turn_cost(records[0])
    assert {_turn_cost(turn) for turn in records} == {cost}
    window = {kind: limit * (cost if kind == "token_budget" else 1)}
    if cut_to != 0.5:
        window["cut_to"] = cut_to
    threads = [_growing(records[:n]) for n in range(1, 13)]
    bodies = _requests(threads, window)
    assert _resets(bodies) == cuts
    settings = WindowSettings(**window)
    start = 0
    for number, (grown, body) in enumerate(zip(threads, bodies, strict=True), start=1):
        cut = window_cut(grown, settings)
        if number in cuts:
            kept = int(limit * cut_to)
            assert cut == WindowCut(
                first_turn=number - kept, dropped=number - kept - start, in_last_turn=True
            )
            start = cut.first_turn
        else:
            assert (cut.first_turn if cut else 0) == start
            assert cut is None or not cut.in_last_turn
        users = [i for i in body["input"] if i.get("role") == "user"]
        assert len(users) == number - start
        # The reasoning is sent, and a cut separates neither it nor a call from its partner.
        reasoning = [i for i in body["input"] if i.get("type") == "reasoning"]
        assert len(reasoning) == 2 * (number - start)
        _check_pairs(body["input"])


def test_requests_within_one_turn_extend_each_other_after_a_cut():
    """A turn of many tool calls is many requests; a window replayed turn by turn would cut
    again at each once over its budget. Here four turns fill the budget, the fifth question
    cuts to half of it (three turns dropped), and its calls grow the window until it is over
    again: one more cut drops the turn left before the fifth, and that is all."""
    earlier = [_reasoned_turn(n) for n in range(4)]
    cost = _turn_cost(earlier[0])
    budget = 4 * cost
    long = _reasoned_turn(4, calls=12)

    def asked(calls: int) -> dict[str, list[Any]]:
        """The fifth turn when its ``calls``-th result is in: the next request is due."""
        return {
            "messages": long["messages"][:1],
            "thoughts": long["thoughts"][:calls],
            "tool_calls": long["tool_calls"][:calls],
        }

    steps = [_growing([*earlier, asked(calls)]) for calls in range(13)]
    bodies = _requests([_growing(earlier), *steps], {"token_budget": budget})
    question, call = _turn_cost(asked(0)), _turn_cost(asked(1)) - _turn_cost(asked(0))
    # The question (request 2) cuts to turn 3; the second cut comes with the first result
    # that puts turn 3 and the fifth turn so far over the budget.
    second = next(calls for calls in range(13) if cost + question + calls * call > budget)
    assert 1 < second < 12
    assert _resets(bodies) == [2, 2 + second]
    assert window_cut(steps[-1], WindowSettings(token_budget=budget)) == WindowCut(
        first_turn=4, dropped=1, in_last_turn=True
    )
    assert window_cut(steps[second - 1], WindowSettings(token_budget=budget)) == WindowCut(
        first_turn=3, dropped=3, in_last_turn=True
    )
    for body in bodies:
        _check_pairs(body["input"])


class _Client:
    """A client that keeps its window from request to request, fed the thread record by
    record: where the stateless replay must arrive."""

    def __init__(self, limit: int, cut_to: float) -> None:
        self.limit, self.low = limit, limit * cut_to
        self.turns: list[int] = []  # what each turn adds to the window
        self.start = 0

    def add(self, cost: int, *, opens_turn: bool) -> None:
        if opens_turn:
            self.turns.append(0)
        self.turns[-1] += cost
        if sum(self.turns[self.start :]) > self.limit:
            while self.start < len(self.turns) - 1 and sum(self.turns[self.start :]) > self.low:
                self.start += 1


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=1, max_value=4), min_size=1, max_size=10),
    by_tokens=st.booleans(),
    limit=st.integers(min_value=1, max_value=6),
    cut_to=st.sampled_from([0.1, 0.25, 0.5, 0.6, 0.75, 1.0]),
)
def test_the_stateless_cut_is_where_a_stateful_client_would_be(sizes, by_tokens, limit, cut_to):
    """Turns of 1 to 4 tool calls; a window of ``limit`` turns, or of ``limit`` times the
    estimate of a one-call turn. After each turn, the window of the thread so far starts where
    a client that kept it since the first record has it."""
    records = [_reasoned_turn(n, calls=calls) for n, calls in enumerate(sizes)]
    if by_tokens:
        limit *= _turn_cost(records[0])
        window = WindowSettings(token_budget=limit, cut_to=cut_to)
    else:
        window = WindowSettings(last_turns=limit, cut_to=cut_to)
    client = _Client(limit, cut_to)
    for n in range(1, len(records) + 1):
        grown = _growing(records[:n])
        for index, record in enumerate(timeline_turns(grown)[-1]):
            opens = index == 0
            client.add(estimate_tokens(record) if by_tokens else int(opens), opens_turn=opens)
        cut = window_cut(grown, window)
        assert (cut.first_turn if cut else 0) == client.start
        kept = timeline_turns(apply_window(grown, window))
        assert kept == timeline_turns(grown)[client.start :]


def test_window_cut_is_none_while_every_turn_is_sent():
    grown = _growing([_reasoned_turn(n) for n in range(3)])
    assert window_cut(grown, "all") is None
    assert window_cut(grown, WindowSettings(last_turns=3)) is None
    assert window_cut(grown, WindowSettings(compact=CompactWindow(threshold=1))) is None
    assert window_cut(grown, WindowSettings(last_turns=2)) == WindowCut(
        first_turn=2, dropped=2, in_last_turn=True
    )


def test_cut_to_is_a_fraction_of_the_limit_and_the_schema_agrees():
    validator = Draft202012Validator(config_schema())

    def window(value: dict[str, Any]) -> dict[str, Any]:
        return {"context": {"window": value}}

    assert turnwire.load_settings().context.window == "all"
    loaded = turnwire.load_settings(overrides=window({"last_turns": 3}))
    assert loaded.context.window == WindowSettings(last_turns=3, cut_to=0.5)
    for accepted in ({"last_turns": 3, "cut_to": 1}, {"token_budget": 900, "cut_to": 0.01}):
        loaded = turnwire.load_settings(overrides=window(accepted))
        assert loaded.context.window == WindowSettings(**accepted)
        assert list(validator.iter_errors(window(accepted))) == []
    for rejected in (0, -0.5, 1.5, "half"):
        with pytest.raises(ConfigError) as caught:
            turnwire.load_settings(overrides=window({"last_turns": 3, "cut_to": rejected}))
        assert caught.value.path.startswith("$.context.window")
        assert list(validator.iter_errors(window({"last_turns": 3, "cut_to": rejected})))
    with pytest.raises(ConfigError, match="cut_to"):
        turnwire.load_settings(overrides=window({"compact": {"threshold": 9}, "cut_to": 0.3}))
