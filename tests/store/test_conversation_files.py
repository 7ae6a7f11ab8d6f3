"""A stored thread's files stay in its history: a later request extends the earlier one, the
reasoning recorded after a file is replayed, and a history over the file budget is an error."""

from __future__ import annotations

import re

import pytest

import turnwire
from turnwire.errors import RenderError
from turnwire.store.sqlite import SQLiteStore

from ..client.server import Reply, ScriptedServer, recorded
from ..conftest import REPLAY, make_container

REASONED = recorded("reasoning_summary_encrypted_text_turn2_gpt-5.sse")
_IDS = re.compile(rb"\b((?:rs|msg|resp)_[0-9a-f]{8})")


def _answer(turn: int) -> bytes:
    """The recorded answer with ids of its own for ``turn`` (a thread never holds one twice)."""
    return _IDS.sub(lambda m: m.group(1)[:-2] + b"%02d" % turn, REASONED)


def _ask(store, thread_id, container, prompt, files=()):
    turn = len(store.turns(thread_id))
    with ScriptedServer([Reply.sse(_answer(turn))]) as server:
        turnwire.run_thread(
            thread_id,
            store=store,
            prompt=prompt,
            files=files,
            container=container,
            base_url=server.base_url,
            api_key="sk-test-key",
        )
    (request,) = server.requests
    return request.json


def test_a_question_s_file_stays_in_the_history_and_its_turn_s_reasoning_is_replayed(tmp_path):
    picture = tmp_path / "photo.png"
    picture.write_bytes(b"\x89PNG\r\n\x1a\n fake image")
    container = make_container(REPLAY)
    with SQLiteStore(tmp_path / "t.db") as store:
        thread_id = store.create_thread(turnwire.load_thread({"version": 1, "model": "gpt-5"}))
        first = _ask(store, thread_id, container, "what is in it?", [picture])
        second = _ask(store, thread_id, container, "and the colours?")
        third = _ask(store, thread_id, container, "thanks")
    for before, after in ((first, second), (second, third)):
        assert after["instructions"] == before["instructions"] if "instructions" in before else True
        assert after["input"][: len(before["input"])] == before["input"]  # extends it exactly
    images = [
        part
        for item in third["input"]
        if isinstance(item.get("content"), list)
        for part in item["content"]
        if part["type"] == "input_image"
    ]
    assert len(images) == 1  # the photo, still shown
    replayed = [item for item in third["input"] if item.get("type") == "reasoning"]
    assert len(replayed) == 2  # the reasoning of both earlier answers, none dropped


def test_a_history_over_the_request_file_budget_is_an_error_not_a_silent_drop(tmp_path):
    one, two = tmp_path / "a.png", tmp_path / "b.png"
    one.write_bytes(b"a" * 600)
    two.write_bytes(b"b" * 600)
    container = make_container({"files": {"max_request_bytes": 1000}})
    with SQLiteStore(tmp_path / "t.db") as store:
        thread_id = store.create_thread(turnwire.load_thread({"version": 1, "model": "gpt-5"}))
        _ask(store, thread_id, container, "first", [one])
        before = store.turns(thread_id)
        with pytest.raises(RenderError) as caught:
            _ask(store, thread_id, container, "second", [two])
        assert "files.max_request_bytes" in str(caught.value)
        assert store.turns(thread_id) == before  # nothing stored
    copies = sorted(p.name for p in (tmp_path / "files").rglob("*") if p.is_file())
    assert copies == ["0-a.png"]  # the failed question's copy was removed


def test_each_run_is_checked_against_the_last_request_of_the_run_before(tmp_path, caplog):
    """The store keeps the ledger of a run's last request: the next run's first request is
    compared with it, and a reset is reported with its cause (here a memory added to the
    instructions under the default placement)."""
    from turnwire.client.progress import PrefixResetEvent

    container = make_container(REPLAY)
    with SQLiteStore(tmp_path / "t.db") as store:
        thread_id = store.create_thread(
            turnwire.load_thread({"version": 1, "model": "gpt-5", "system_prompt": "Be brief."})
        )

        def ask(prompt, **more):
            turn = len(store.turns(thread_id))
            events: list = []
            with ScriptedServer([Reply.sse(_answer(turn))]) as server:
                result = turnwire.run_thread(
                    thread_id,
                    store=store,
                    prompt=prompt,
                    container=container,
                    base_url=server.base_url,
                    api_key="sk-test-key",
                    on_event=events.append,
                    **more,
                )
            return result, [e for e in events if isinstance(e, PrefixResetEvent)]

        first, resets = ask("one")
        assert first.prefix == () and resets == []  # nothing sent before it
        assert store.turns(thread_id)[-1].ledger == first.ledger
        second, resets = ask("two")
        (report,) = second.prefix
        assert report.extends and report.kept == report.previous_items == len(first.ledger.items)
        assert resets == [] and second.resets == ()
        # the header changes: a memory joins the instructions
        store.update_header(
            thread_id,
            turnwire.load_thread(
                {
                    "version": 1,
                    "model": "gpt-5",
                    "system_prompt": "Be brief.",
                    "memories": [{"id": "m1", "content": "likes tea"}],
                }
            ),
        )
        caplog.set_level("WARNING", logger="turnwire")
        third, resets = ask("three")
        (report,) = third.prefix
        assert not report.extends and report.cause == "instructions"
        assert [event.report for event in resets] == [report]
        assert any(
            getattr(r, "kind", None) == "prefix-reset" and "instructions changed" in r.getMessage()
            for r in caplog.records
        )


def test_a_window_cut_is_reported_as_one_and_the_requests_between_cuts_extend(tmp_path):
    container = make_container({"context": {"window": {"last_turns": 2}}})
    with SQLiteStore(tmp_path / "t.db") as store:
        thread_id = store.create_thread(turnwire.load_thread({"version": 1, "model": "gpt-5"}))
        reports = []
        for n in range(6):
            turn = len(store.turns(thread_id))
            with ScriptedServer([Reply.sse(_answer(turn))]) as server:
                result = turnwire.run_thread(
                    thread_id,
                    store=store,
                    prompt=f"question {n}",
                    container=container,
                    base_url=server.base_url,
                    api_key="sk-test-key",
                )
            reports.extend(result.prefix)
    causes = [None if r.extends else r.cause for r in reports]
    # last_turns 2, cut to 1: the third question cuts, then every second one
    assert causes == [None, "window", None, "window", None]
