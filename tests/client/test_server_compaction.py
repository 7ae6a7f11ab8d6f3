"""Server-side compaction (``request.context_management``): the compaction item the API returns
in a response is recorded like one from ``POST /responses/compact``, and the next request sends
it in place of everything it covers."""

from __future__ import annotations

from typing import Any

import pytest

import turnwire
from turnwire.errors import ProviderUnsupportedError

from ..conftest import make_container
from ..oracle import validate_body
from .server import Reply, ScriptedServer
from .streams import items_answer, message_item

SETTINGS = {"request": {"context_management": [{"type": "compaction", "compact_threshold": 2000}]}}


def _answer(n: int, *, compacted: bool) -> Reply:
    items: list[dict[str, Any]] = []
    if compacted:
        items.append({"type": "compaction", "id": f"cmp_{n}", "encrypted_content": "gAAAA-srv"})
    items.append(message_item(f"answer {n}", f"msg_{n}"))
    return Reply.sse(items_answer(*items, response_id=f"resp_{n}"))


def test_a_compaction_the_server_returns_is_recorded_and_replaces_what_it_covers() -> None:
    container = make_container(SETTINGS)
    thread = turnwire.Thread.create(model="gpt-5", prompt="first question")
    with ScriptedServer([_answer(1, compacted=True), _answer(2, compacted=False)]) as server:
        first = turnwire.run(thread, container=container, base_url=server.base_url, api_key="k")
        asked = first.thread.with_user_message("second question")
        turnwire.run(asked, container=container, base_url=server.base_url, api_key="k")
    one, two = (seen.json for seen in server.requests)
    assert one["context_management"] == [{"type": "compaction", "compact_threshold": 2000}]
    assert [(item.type, item.id) for item in first.thread.hosted_items] == [("compaction", "cmp_1")]
    # The second request opens with the compaction item; the first question it covers is gone.
    assert two["input"][0] == {
        "type": "compaction",
        "id": "cmp_1",
        "encrypted_content": "gAAAA-srv",
    }
    assert "first question" not in str(two["input"])
    assert "answer 1" in str(two["input"][1]) and "second question" in str(two["input"][2])


def test_context_management_is_checked_at_load() -> None:
    with pytest.raises(turnwire.ConfigError) as caught:
        make_container({"request": {"context_management": [{"type": "truncate"}]}}).settings()
    assert caught.value.path.startswith("$.request.context_management[0]")


@pytest.mark.parametrize("key", ["prompt", "context_management"])
def test_extra_refuses_what_request_refuses_or_models(key: str) -> None:
    with pytest.raises(turnwire.ConfigError) as caught:
        make_container({"request": {"extra": {key: {}}}}).settings()
    assert caught.value.path == f"$.request.extra.{key}"


def _compaction_only(n: int) -> Reply:
    item = {"type": "compaction", "id": f"cmp_{n}", "encrypted_content": "gAAAA-now"}
    return Reply.sse(items_answer(item, response_id=f"resp_{n}"))


def test_a_compaction_trigger_ends_the_first_request_and_is_never_recorded() -> None:
    container = make_container(SETTINGS)
    thread = turnwire.Thread.create(model="gpt-5", prompt="first question")
    with ScriptedServer([_compaction_only(1), _answer(2, compacted=False)]) as server:
        first = turnwire.run(
            thread,
            container=container,
            base_url=server.base_url,
            api_key="k",
            compaction_trigger=True,
        )
        asked = first.thread.with_user_message("second question")
        turnwire.run(asked, container=container, base_url=server.base_url, api_key="k")
    one, two = (seen.json for seen in server.requests)
    validate_body(one)
    assert one["input"][-1] == {"type": "compaction_trigger"}
    assert [item.get("type") for item in one["input"]].count("compaction_trigger") == 1
    assert first.text == ""  # the compaction alone came back
    assert [(h.type, h.id) for h in first.thread.hosted_items] == [("compaction", "cmp_1")]
    # The next request starts from the compaction; no trigger is replayed.
    assert two["input"][0]["type"] == "compaction"
    assert all(item.get("type") != "compaction_trigger" for item in two["input"])


def test_a_trigger_goes_on_the_requests_until_one_is_answered_and_no_further() -> None:
    from .streams import call_answer, text_answer

    container = make_container(SETTINGS)
    thread = turnwire.Thread.create(model="gpt-5", prompt="weather?")
    called = call_answer("lookup", "{}", call_id="call_1", item_id="fc_1")
    script = [Reply.sse(called), Reply.sse(text_answer("sunny"))]
    with ScriptedServer(script) as server:
        result = turnwire.run(
            thread,
            container=container,
            base_url=server.base_url,
            api_key="k",
            handlers={"lookup": lambda: "sun"},
            compaction_trigger=True,
        )
    one, two = (seen.json for seen in server.requests)
    assert one["input"][-1] == {"type": "compaction_trigger"}
    assert two["input"][-1]["type"] == "function_call_output"
    assert result.text == "sunny"


def test_a_trigger_anywhere_but_last_is_refused_by_the_preflight_rule() -> None:
    from turnwire.rendering.preflight import preflight

    body = {
        "model": "gpt-5",
        "store": False,
        "input": [{"type": "compaction_trigger"}, {"role": "user", "content": "hi"}],
    }
    with pytest.raises(turnwire.PreflightError) as caught:
        preflight(body)
    assert caught.value.rule == "compaction-trigger-last"
    assert "input[0]" in str(caught.value)
    preflight({**body, "input": body["input"][::-1]})  # last: accepted


def test_a_provider_without_server_side_compaction_refuses_the_trigger() -> None:
    from turnwire.config.settings import profile_path

    container = turnwire.build_container([profile_path("vllm")])
    thread = turnwire.Thread.create(model="m", prompt="hi")
    with ScriptedServer([]) as server:
        with pytest.raises(ProviderUnsupportedError) as caught:
            turnwire.run(
                thread, container=container, base_url=server.base_url, compaction_trigger=True
            )
    assert (caught.value.path, caught.value.lack) == ("compaction_trigger", "context_management")
    assert server.requests == []
