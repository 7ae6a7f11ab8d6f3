"""``context.window`` (all, last_turns, token_budget) and the plain-text transcript."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import turnwire
from turnwire.config.settings import WindowSettings
from turnwire.errors import ConfigError
from turnwire.rendering.windows import apply_window, estimate_tokens, timeline_turns, transcript

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
    whole = _conversation(sizes, reasoning=reasoning)
    kept = apply_window(whole, WindowSettings(token_budget=budget))
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
