"""TurnBuilder: the only code that knows both the stored shape and the render input shape."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from turnwire.model.records import Media, Message, ReasoningPayload, Thought, ToolCall, ToolResult
from turnwire.store.turns import (
    FilePart,
    MessagePart,
    TextPart,
    ThoughtPart,
    ToolCallPart,
    Turn,
    TurnBuilder,
)
from turnwire.wire import ReasoningItem

T = datetime(2026, 1, 1, 10, tzinfo=UTC)


def builder() -> TurnBuilder:
    ids = iter(f"turn_{n}" for n in range(100))
    return TurnBuilder(clock=lambda: T, new_id=lambda: next(ids))


def pointer(name: str = "cat.png") -> Media:
    return Media(
        id=f"f-{name}", kind="image", mime_type="image/png", filename=name, path=f"/data/{name}"
    )


def at(seconds: int) -> datetime:
    return T + timedelta(seconds=seconds)


def test_user_turn_has_a_text_part_and_one_file_part_per_pointer():
    turn = builder().build_user_turn("look", [pointer("a.png"), pointer("b.png")])
    assert turn.id == "turn_0" and turn.role == "user" and turn.created_at == T
    assert [type(p) for p in turn.parts] == [TextPart, FilePart, FilePart]
    assert turn.parts[1].media.path == "/data/a.png"


def test_an_empty_prompt_gives_no_text_part_and_files_alone_are_a_question():
    turn = builder().build_user_turn("", [pointer()])
    assert [type(p) for p in turn.parts] == [FilePart]
    with pytest.raises(ValueError, match="prompt or at least one file"):
        builder().build_user_turn("", [])


def test_file_bytes_never_reach_a_turn():
    inline = Media(id="x", kind="image", mime_type="image/png", data=b"PNG")
    with pytest.raises(ValueError, match="pointers and references only, never bytes"):
        builder().build_user_turn("hi", [inline])


def _run():
    item = ReasoningItem(id="rs_1", summary=(), encrypted_content="e")
    thought = Thought(
        id="rs_1",
        replay_compatibility="openai-responses-reasoning-v1",
        payload=ReasoningPayload(item=item, paired_item_id="fc_1"),
        created_at=at(1),
        seq=0,
    )
    call = ToolCall(
        id="call_1|fc_1",
        tool="weather",
        args={"city": "Paris"},
        created_at=at(1),
        seq=1,
        result=ToolResult(text="21C"),
    )
    answer = Message(
        id="msg_1",
        role="assistant",
        content="21C in Paris",
        created_at=at(1),
        seq=2,
        attachments=(
            Media(id="chart", kind="image", mime_type="image/png", path="/data/chart.png"),
            Media(id="inline", kind="image", mime_type="image/png", data=b"PNGDATA"),
        ),
    )
    follow_up = Message(id="msg_2", role="assistant", content="Anything else?", created_at=at(2))
    return [thought, call, answer, follow_up]


def test_assistant_turns_one_per_message_model_on_each_usage_on_the_last():
    turns = builder().build_assistant_turns(
        _run(), model="gpt-5", usage={"total_tokens": 9}, request_fingerprint="f" * 64
    )
    assert [[type(p) for p in t.parts] for t in turns] == [
        [ThoughtPart, ToolCallPart, MessagePart],
        [MessagePart],
    ]
    assert all(t.model == "gpt-5" and t.role == "assistant" for t in turns)
    assert turns[0].usage is None and turns[1].usage == {"total_tokens": 9}
    assert turns[1].request_fingerprint == "f" * 64
    assert [t.created_at for t in turns] == [at(1), at(2)]


def test_inline_bytes_are_dropped_and_pointers_kept():
    turns = builder().build_assistant_turns(_run(), model="gpt-5")
    kept = turns[0].parts[2].message.attachments
    assert [m.id for m in kept] == ["chart"] and kept[0].data is None


def test_a_record_left_without_anything_to_store_is_dropped():
    only_bytes = Message(
        id="m",
        role="assistant",
        created_at=at(1),
        attachments=(Media(id="inline", kind="image", mime_type="image/png", data=b"x"),),
    )
    assert builder().build_assistant_turns([only_bytes], model="m") == []


def test_a_blocked_answer_is_stored_without_its_final_text():
    turns = builder().build_assistant_turns(_run(), model="gpt-5", without_final_answer=True)
    assert [m.message.id for t in turns for m in t.parts if isinstance(m, MessagePart)] == ["msg_1"]


def test_pending_calls_after_the_last_message_join_its_turn():
    pending = ToolCall(id="call_9", tool="weather", created_at=at(3), seq=5)
    turns = builder().build_assistant_turns([*_run(), pending], model="gpt-5")
    assert [[type(p) for p in t.parts] for t in turns] == [
        [ThoughtPart, ToolCallPart, MessagePart],
        [MessagePart, ToolCallPart],
    ]
    assert turns[-1].created_at == at(3)


def test_an_answer_with_pending_calls_is_one_turn():
    text = Message(id="msg_1", role="assistant", content="Checking.", created_at=at(1), seq=1)
    call = ToolCall(id="call_1|fc_1", tool="weather", created_at=at(1), seq=2)
    (turn,) = builder().build_assistant_turns([text, call], model="gpt-5", usage={"n": 1})
    assert [type(p) for p in turn.parts] == [MessagePart, ToolCallPart]
    assert turn.usage == {"n": 1}


def test_text_that_comes_with_calls_stays_in_the_step_its_answer_ends():
    commentary = Message(id="msg_1", role="assistant", content="Checking.", created_at=at(1))
    call = ToolCall(
        id="call_1", tool="weather", created_at=at(1), seq=1, result=ToolResult(text="21C")
    )
    answer = Message(id="msg_2", role="assistant", content="21C.", created_at=at(2))
    (turn,) = builder().build_assistant_turns([commentary, call, answer], model="gpt-5")
    assert [p.message.id for p in turn.parts if isinstance(p, MessagePart)] == ["msg_1", "msg_2"]


def test_each_turn_stores_the_summed_usage_of_the_generations_it_holds():
    from turnwire.model.usage import GenerationStats, Usage

    records = _run()  # thought, call, answer (one step), then a follow-up message
    gens = [
        GenerationStats(
            model="gpt-5",
            finish_reason="tool_calls",
            usage=Usage(prompt_tokens=10, total_tokens=12),
            record_ids=(records[0].id, records[1].id),
        ),
        GenerationStats(
            model="gpt-5",
            finish_reason="stop",
            usage=Usage(prompt_tokens=20, total_tokens=25),
            record_ids=(records[2].id, records[3].id),
        ),
        GenerationStats(model="gpt-5", finish_reason="stop", usage=Usage(total_tokens=1)),
    ]
    turns = builder().build_assistant_turns(records, model="gpt-5", generations=gens)
    assert [t.usage["total_tokens"] for t in turns] == [12 + 25, 1]
    assert [t.usage["generations"] for t in turns] == [2, 1]
    assert turns[0].usage["provider"] == "openai_responses"
    assert turns[0].usage["prompt_tokens"] == 30


def test_run_turns_the_question_the_resolved_calls_then_the_answer_in_timeline_order():
    b = builder()
    question = b.build_user_turn("weather?")
    resolved = ToolCall(id="call_0", tool="weather", created_at=at(0), result=ToolResult(text="x"))
    answer = Message(id="msg_2", role="assistant", content="21C.", created_at=at(2))
    thought = Thought(id="rs_1", content="plan", created_at=at(1))
    turns = b.build_run_turns(
        question=question, resolved=[resolved], records=[answer, thought], model="gpt-5"
    )
    assert [t.role for t in turns] == ["user", "assistant", "assistant"]
    assert turns[1].parts == (ToolCallPart(call=resolved),)
    assert [type(p) for p in turns[2].parts] == [ThoughtPart, MessagePart]


def test_run_thread_once_stores_an_answer_with_its_pending_call_as_one_turn(tmp_path):
    import turnwire
    from turnwire.api import run_thread
    from turnwire.store.sqlite import SQLiteStore

    from ..client.server import Reply, ScriptedServer, recorded
    from ..conftest import make_container

    stream = recorded("phase_commentary_function_call_gpt-5.5.sse")
    container = make_container()
    with SQLiteStore(tmp_path / "threads.db") as store:
        thread = turnwire.load_thread(
            {
                "version": 1,
                "model": "gpt-5.5",
                "tools": [{"name": "get_capital", "parameters": {"type": "object"}}],
            }
        )
        thread_id = store.create_thread(thread)
        with ScriptedServer([Reply.sse(stream)]) as server:
            run_thread(
                thread_id,
                store=store,
                prompt="capital of France?",
                once=True,
                container=container,
                base_url=server.base_url,
            )
        turns = store.turns(thread_id)
    assert [t.role for t in turns] == ["user", "assistant"]
    kinds = [type(p) for p in turns[1].parts]
    assert MessagePart in kinds and kinds[-1] is ToolCallPart
    assert turns[1].parts[-1].call.result is None
    assert turns[1].usage["completion_tokens"] == 69
    assert turns[1].usage["reasoning_tokens"] == 26
    assert turns[1].usage["generations"] == 1


def test_to_messages_is_the_reverse_every_question_with_its_files():
    """An earlier question keeps its file: a later request sends it again, in its place."""
    b = builder()
    first = b.build_user_turn("look at this", [pointer()])
    answers = b.build_assistant_turns(_run(), model="gpt-5")
    current = b.build_user_turn("and this one?", [pointer("dog.png")])
    messages, thoughts, calls = b.to_messages([first, *answers, current])
    assert [m.id for m in messages] == [first.id, "msg_1", "msg_2", current.id]
    assert [a.filename for a in messages[0].attachments] == ["cat.png"]  # kept
    assert [a.filename for a in messages[3].attachments] == ["dog.png"]
    assert [t.id for t in thoughts] == ["rs_1"] and [c.id for c in calls] == ["call_1|fc_1"]


def test_a_tool_call_stored_again_supersedes_the_pending_copy_in_place():
    b = builder()
    pending = ToolCall(id="call_1", tool="weather", created_at=at(1))
    done = ToolCall(id="call_1", tool="weather", created_at=at(1), result=ToolResult(text="ok"))
    later = ToolCall(id="call_2", tool="weather", created_at=at(2))
    turns = [
        Turn(
            id="a",
            role="assistant",
            created_at=at(1),
            parts=(ToolCallPart(call=pending), ToolCallPart(call=later)),
        ),
        Turn(id="b", role="assistant", created_at=at(3), parts=(ToolCallPart(call=done),)),
    ]
    _, _, calls = b.to_messages(turns)
    assert [(c.id, c.result) for c in calls] == [
        ("call_1", ToolResult(text="ok")),
        ("call_2", None),
    ]


def test_a_threads_records_as_turns_group_each_run():
    b = builder()
    user = Message(id="u1", role="user", content="weather?", created_at=at(0))
    turns = b.records_as_turns(_thread(user))
    assert [t.role for t in turns] == ["user", "assistant", "assistant"]
    assert turns[0].parts == (MessagePart(message=user),)


def _thread(user):
    from turnwire.model.records import Thread

    run = _run()
    return Thread(messages=(user, run[2], run[3]), thoughts=(run[0],), tool_calls=(run[1],))


def test_records_extended_turn_by_turn_are_the_records_of_all_the_turns_at_once():
    """``extend_records`` is ``to_records`` in steps: the same records (the same objects, a
    call stored again in its earlier place), the last ledger, the latest date."""
    import itertools

    import msgspec

    import turnwire
    from turnwire.model.records import latest
    from turnwire.rendering.ledger import Ledger
    from turnwire.store.turns import TurnRecords

    b = builder()
    first = b.build_user_turn("weather?")
    call = ToolCall(id="call_1", tool="get_weather", created_at=T)
    pending = Turn(id="t1", role="assistant", parts=(ToolCallPart(call=call),), created_at=T)
    ledger = Ledger(model="gpt-5", items=("x",))
    answered = msgspec.structs.replace(call, result=ToolResult(text="sunny"))
    resolved = Turn(
        id="t2",
        role="assistant",
        parts=(ToolCallPart(call=answered),),
        created_at=T,
        ledger=ledger,
    )
    later = b.build_user_turn("and tomorrow?")
    turns = [first, pending, resolved, later]
    whole = b.to_records(turns)
    for cut in itertools.combinations(range(1, len(turns)), 2):
        records = TurnRecords()
        for start, stop in itertools.pairwise((0, *cut, len(turns))):
            records = b.extend_records(records, turns[start:stop])
        assert (records.messages, records.thoughts, records.tool_calls) == whole[:3]
        assert all(map(lambda a, c: a is c, records.tool_calls, whole[2]))
        assert records.tool_calls == (answered,)
        assert records.ledger == ledger
        assert records.latest == latest(records.as_thread(turnwire.Thread()))
