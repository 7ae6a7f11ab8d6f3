"""The built-in ``filter_tool_call_id``: a call id the thread already holds gets a fresh one,
keeping its ``fc_`` half."""

from __future__ import annotations


def test_filter_tool_call_id_de_collides_and_keeps_the_fc_half():
    from turnwire.stages.client_hooks import filter_tool_call_id

    assert (
        filter_tool_call_id(tool_call_id="call_1|fc_1", existing_ids=frozenset()) == "call_1|fc_1"
    )
    fresh = filter_tool_call_id(tool_call_id="call_1|fc_1", existing_ids=frozenset({"call_1|fc_1"}))
    assert fresh.endswith("|fc_1") and fresh.startswith("call_") and fresh != "call_1|fc_1"
    bare = filter_tool_call_id(tool_call_id="call_1", existing_ids=frozenset({"call_1"}))
    assert "|" not in bare and bare != "call_1"
