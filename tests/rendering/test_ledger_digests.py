"""The ledger's remembered digests: the same answer as the rule (each item's digest, the
compaction items counted) on any sequence of requests, with work only for what is new."""

from __future__ import annotations

from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from turnwire.rendering import ledger
from turnwire.rendering.ledger import (
    ItemDigests,
    Ledger,
    compare,
    is_compaction,
    item_digest,
    ledger_of,
)
from turnwire.wire import InputMessage, RequestBody


def _item(n: int) -> Any:
    if n % 5 == 0:
        return {"type": "compaction", "id": f"cmp_{n}", "encrypted_content": f"e{n}"}
    return InputMessage(role="user", content=f"m{n % 7}")  # equal contents recur


def _rule(items: Any) -> tuple[tuple[str, ...], int]:
    return tuple(item_digest(i) for i in items), sum(1 for i in items if is_compaction(i))


# One request's input from the last one's: grown, an item replaced (by an equal one or
# another), cut at the front (a window), reordered, built anew, or emptied.
steps = st.lists(
    st.tuples(
        st.sampled_from(["grow", "replace", "equal", "cut", "swap", "anew", "empty"]),
        st.integers(0, 40),
        st.integers(1, 6),
    ),
    max_size=12,
)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 30), steps, st.booleans())
def test_the_remembered_digests_are_the_rule_s_on_any_requests(start, plan, as_list):
    digests = ItemDigests()
    items: list[Any] = [_item(n) for n in range(start)]
    made = start
    for step, where, count in plan:
        if step == "grow":
            items = [*items, *(_item(made + k) for k in range(count))]
            made += count
        elif step == "replace" and items:
            items[where % len(items)] = _item(made)
            made += 1
        elif step == "equal" and items:  # a new object with the same content
            index = where % len(items)
            old = items[index]
            items[index] = dict(old) if isinstance(old, dict) else msgspec.structs.replace(old)
        elif step == "cut":
            items = items[min(count, len(items)) :]
        elif step == "swap" and len(items) > 1:
            i, j = where % len(items), (where + count) % len(items)
            items[i], items[j] = items[j], items[i]
        elif step == "anew":
            items = [_item(n) for n in range(made, made + count)]
            made += count
        elif step == "empty":
            items = []
        sent = list(items) if as_list else tuple(items)
        assert digests.counted(sent) == _rule(sent)
        assert digests.of(sent) == _rule(sent)[0]


def test_a_growing_input_is_digested_once_per_item(monkeypatch):
    """An agent loop's requests: each item is digested and looked at once over the run, not
    once per request (the ledger went over every item of every request)."""
    digested: list[Any] = []
    looked: list[Any] = []
    real_digest, real_check = ledger.item_digest, ledger.is_compaction

    def digest(item: Any) -> str:
        digested.append(item)
        return real_digest(item)

    def check(item: Any) -> bool:
        looked.append(item)
        return real_check(item)

    monkeypatch.setattr(ledger, "item_digest", digest)
    monkeypatch.setattr(ledger, "is_compaction", check)
    digests = ItemDigests()
    items: tuple[Any, ...] = tuple(_item(n) for n in range(200))
    previous: Ledger | None = None
    for n in range(200, 220):
        items = (*items, _item(n))
        body = RequestBody(model="gpt-5", input=items, stream=True, store=False)
        current = ledger_of(body, digests=digests)
        report = compare(previous, current)
        assert report is None or (report.extends and report.kept == len(items) - 1)
        previous = current
    assert len(digested) == len(looked) == 220
    assert previous is not None and previous.compactions == 44


ledgers = st.builds(
    lambda model, items: Ledger(model=model, items=tuple(items)),
    st.sampled_from(["a", "b"]),
    st.lists(st.sampled_from(["x", "y", "z"]), max_size=6),
)


@given(ledgers, ledgers)
def test_compare_counts_the_kept_items_as_the_item_by_item_rule(old, new):
    kept = 0
    for a, b in zip(old.items, new.items, strict=False):
        if a != b:
            break
        kept += 1
    report = compare(old, new)
    assert report is not None and report.kept == kept
    extends = kept == len(old.items) and old.model == new.model
    assert report.extends == extends
    assert report.first_difference == (None if kept == len(old.items) else kept)
