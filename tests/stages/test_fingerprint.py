"""Canonical JSON and the prefix fingerprint, pinned to the reference's worked values."""

from __future__ import annotations

import hashlib
import json

from hypothesis import given
from hypothesis import strategies as st

from turnwire.config.options import Endpoint
from turnwire.model.canonical import UNDEFINED, canonical_item_bytes, canonical_json, js_number
from turnwire.stages.fingerprint import fingerprint_prefix
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


def fingerprint(input_items, *, instructions=None, tools=None, model="m"):
    return fingerprint_prefix(
        model=model,
        instructions=instructions,
        tools=tools,
        input=input_items,
        through_item=len(input_items),
        fingerprint_binding="prefix",
        endpoint=Endpoint(),
        scratch={},
    )


def test_worked_value_empty_input_no_tools():
    text = canonical_json(
        {"input": [], "instructions": UNDEFINED, "model": "m", "tools": UNDEFINED}
    )
    assert text == '{"input":[],"instructions":undefined,"model":"m","tools":undefined}'
    expected = "1a4f2d2d532b5729d5339e41e2fc7a88616dfc4f7c74defc3b3ae5d4331b83a3"
    assert hashlib.sha256(text.encode()).hexdigest() == expected
    assert fingerprint([]) == expected


def test_worked_value_empty_tools_array_differs_from_undefined():
    expected = "188b61f1a92da91b40385ec1ee9d6514a0fc9c23a45f64f19bd33e99e9af7a43"
    assert fingerprint([], tools=()) == expected
    assert fingerprint([], tools=()) != fingerprint([], tools=None)


def test_worked_value_instructions_and_one_user_item():
    item = InputMessage(role="user", content=(InputText(text="hi"),))
    expected = "e0a94d9356745ae181ad7c4c17aecd9a9871ec45eaf193417f8e48680cca7b7b"
    assert fingerprint([item], instructions="SYS") == expected


def test_incremental_prefixes_equal_fresh_hashes():
    items = [InputMessage(role="user", content=f"m{i}") for i in range(6)]
    scratch: dict = {}
    for through in range(7):
        incremental = fingerprint_prefix(
            model="m",
            instructions="i",
            tools=None,
            input=items,
            through_item=through,
            fingerprint_binding="prefix",
            endpoint=Endpoint(),
            scratch=scratch,
        )
        assert incremental == fingerprint(items[:through], instructions="i")


def test_model_binding_ignores_the_prefix_but_not_the_endpoint():
    def bound(items, endpoint):
        return fingerprint_prefix(
            model="gpt-5",
            instructions=None,
            tools=None,
            input=items,
            through_item=len(items),
            fingerprint_binding="model",
            endpoint=endpoint,
            scratch={},
        )

    a = bound([], Endpoint())
    assert a == bound([InputMessage(role="user", content="x")], Endpoint())
    assert a != bound([], Endpoint(organization="org-2"))
    assert a != bound([], Endpoint(base_url="http://127.0.0.1:9/v1"))


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
