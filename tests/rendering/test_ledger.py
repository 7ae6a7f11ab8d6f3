"""The prefix ledger: digests of a request, and how the next one relates to it."""

from __future__ import annotations

import msgspec

from turnwire.rendering.ledger import ItemDigests, compare, ledger_of
from turnwire.wire import InputMessage, RequestBody


def _body(*texts: str, instructions: str | None = "Be brief.", model: str = "gpt-5", tools=None):
    return RequestBody(
        model=model,
        instructions=instructions,
        input=tuple(InputMessage(role="user", content=t) for t in texts),
        tools=tools,
        stream=True,
        store=False,
    )


def test_a_request_that_only_adds_items_extends_the_previous_one():
    before, after = ledger_of(_body("a", "b")), ledger_of(_body("a", "b", "c"))
    report = compare(before, after)
    assert report is not None and report.extends and report.cause is None
    assert (report.previous_items, report.kept, report.first_difference) == (2, 2, None)
    assert "extends" in report.describe()
    assert compare(None, after) is None


def test_each_cause_is_named_the_first_in_the_request_s_order():
    base = ledger_of(_body("a", "b"))
    cases = {
        "model": ledger_of(_body("a", "b", model="gpt-5-mini")),
        "instructions": ledger_of(_body("a", "b", instructions="Be long.")),
        "input": ledger_of(_body("a", "x", "c")),
    }
    for cause, after in cases.items():
        report = compare(base, after)
        assert report is not None and not report.extends and report.cause == cause
    changed = compare(base, ledger_of(_body("a", "x", "c")))
    assert changed is not None and changed.first_difference == 1 and changed.kept == 1
    assert "prefix-reset" in changed.describe() and "input[1]" in changed.describe()
    shorter = compare(base, ledger_of(_body("a")))
    assert shorter is not None and shorter.first_difference == 1 and shorter.cause == "input"


def test_a_cut_is_put_down_to_the_window_a_compaction_or_the_configuration():
    base = ledger_of(_body("a", "b"), settings="s1")
    window = ledger_of(_body("b", "c"), settings="s1", window_start=1)
    assert compare(base, window).cause == "window"  # type: ignore[union-attr]
    configured = ledger_of(_body("b", "c"), settings="s2")
    assert compare(base, configured).cause == "configuration"  # type: ignore[union-attr]
    same_settings_grown = ledger_of(_body("a", "b", "c"), settings="s2")
    assert compare(base, same_settings_grown).extends  # type: ignore[union-attr]


def test_a_ledger_holds_digests_only_and_round_trips_as_json():
    ledger = ledger_of(_body("my secret question"))
    encoded = msgspec.json.encode(ledger)
    assert b"secret" not in encoded and b"Be brief" not in encoded
    assert msgspec.json.decode(encoded, type=type(ledger)) == ledger


def test_item_digests_are_the_digests_of_the_items_whether_remembered_or_not():
    digests = ItemDigests()
    items = tuple(InputMessage(role="user", content=str(n)) for n in range(5))
    first = digests.of(items)
    again = digests.of((*items, InputMessage(role="user", content="5")))
    fresh = ItemDigests().of((*items, InputMessage(role="user", content="5")))
    assert again[:5] == first and again == fresh
