"""Canonical JSON: JavaScript's number formatting, UTF-16 key order, and the fast item encoding."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from turnwire.model.canonical import canonical_item_bytes, canonical_json, js_number
from turnwire.wire import (
    FunctionCall,
    FunctionCallOutput,
    InputMessage,
    InputText,
    OutputMessage,
    OutputText,
    ReasoningItem,
    SummaryText,
)


def test_js_number_formatting():
    cases = {
        0: "0",
        1.0: "1",
        0.9: "0.9",
        1e21: "1e+21",
        1e20: "100000000000000000000",
        1.5e-7: "1.5e-7",
        0.000001: "0.000001",
        123.456: "123.456",
        -2.5: "-2.5",
        2**53: "9007199254740992",
        1e-7: "1e-7",
        12345678901234567890: "12345678901234567000",
        float("nan"): "null",
    }
    for value, text in cases.items():
        assert js_number(value) == text, value
    assert js_number(-0.0) == "0"


def test_keys_sort_by_utf16_code_units():
    # U+FF61 sorts after U+1F600 in code points but before it in UTF-16 (surrogates D83D...).
    text = canonical_json({"\U0001f600": 1, "\uff61": 2, "a": 3})
    assert text == '{"a":3,"\U0001f600":1,"\uff61":2}'


def test_insertion_order_mode_matches_json_stringify():
    assert canonical_json({"b": 1, "a": [1.0, "é"]}, sort_keys=False) == '{"b":1,"a":[1,"é"]}'


texts = st.text(max_size=30)


content_blocks = st.lists(st.builds(InputText, text=texts), max_size=3).map(tuple)


items = st.one_of(
    st.builds(
        InputMessage,
        role=st.sampled_from(["user", "system", "developer"]),
        content=st.one_of(texts, content_blocks),
    ),
    st.builds(
        OutputMessage,
        role=st.just("assistant"),
        status=st.just("completed"),
        id=texts,
        content=st.lists(
            st.builds(OutputText, text=texts, annotations=st.just(())), max_size=2
        ).map(tuple),
    ),
    st.builds(
        FunctionCall, call_id=texts, name=texts, arguments=texts, id=st.one_of(st.none(), texts)
    ),
    st.builds(FunctionCallOutput, call_id=texts, output=st.one_of(texts, content_blocks)),
    st.builds(
        ReasoningItem,
        summary=st.lists(st.builds(SummaryText, text=texts), max_size=2).map(tuple),
        id=st.one_of(st.none(), texts),
        encrypted_content=st.one_of(st.none(), texts),
    ),
)


@given(items)
def test_fast_item_encoding_equals_the_exact_canonical_form(item):
    assert canonical_item_bytes(item).decode() == canonical_json(item)


@given(
    st.recursive(
        st.one_of(st.none(), st.booleans(), st.integers(-(2**53) + 1, 2**53 - 1), texts),
        lambda children: st.one_of(
            st.lists(children, max_size=3), st.dictionaries(texts, children, max_size=3)
        ),
        max_leaves=10,
    )
)
def test_canonical_json_is_valid_json_with_the_same_value(value):
    assert json.loads(canonical_json(value)) == value
