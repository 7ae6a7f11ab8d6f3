"""Input items: the frozen item form a hosted item keeps (read-only all the way down, encoded and
compared as its fields, copied as plain mutable values)."""

from __future__ import annotations

import json

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turnwire.model.hosted import (
    INPUT_FIELDS,
    input_item,
)
from turnwire.wire.items import FrozenDict, FrozenList, frozen_tree

from ..hosted_items import WEB, hosted, replay, sealed


def test_the_item_form_is_read_only():
    (item,) = replay(sealed(hosted(WEB)))
    with pytest.raises(TypeError):
        item["status"] = "failed"
    with pytest.raises(TypeError):
        item.update(status="failed")
    assert item["status"] == "completed"


def test_the_item_form_is_read_only_all_the_way_down():
    record = sealed(hosted(json.loads(json.dumps(WEB))))  # a tree of its own, changed below
    (item,) = replay(record)
    action = item["action"]
    writes = [
        lambda: action.__setitem__("query", "x"),
        lambda: action.update(query="x"),
        lambda: action.pop("query"),
        lambda: action["sources"].append({"type": "url"}),
        lambda: action["sources"].__setitem__(0, None),
        lambda: action["sources"].extend([1]),
        action["sources"][0].clear,
        lambda: item.__ior__({"status": "failed"}),
    ]
    for write in writes:
        with pytest.raises(TypeError, match="read-only"):
            write()
    assert item == {k: v for k, v in WEB.items() if k in INPUT_FIELDS["web_search_call"]}
    # a copy of the record's values: a change to the record's own tree is not shared
    record.item["action"]["query"] = "changed"
    assert item["action"]["query"] == "weather"


def test_the_frozen_item_encodes_and_compares_as_its_fields():
    (item,) = replay(sealed(hosted(WEB)))
    fields = input_item(WEB)
    assert fields is not None
    assert item == fields
    assert msgspec.json.encode(item) == msgspec.json.encode(fields)
    assert json.dumps(item) == json.dumps(fields)
    ordered = msgspec.json.Encoder(order="sorted")
    assert ordered.encode(item) == ordered.encode(fields)


def test_the_frozen_containers_refuse_to_be_made_again():
    # list.__init__ would empty a list and dict.__init__ merge into a dict
    (item,) = replay(sealed(hosted(WEB)))
    action = item["action"]
    for again in (
        lambda: action["sources"].__init__([]),
        lambda: action.__init__(query="x"),
        lambda: item.__init__({"id": "ws_evil"}),
        lambda: FrozenList([1]).__init__([]),
        lambda: FrozenDict(a=1).__init__(b=2),
    ):
        with pytest.raises(TypeError, match="read-only"):
            again()
    assert item == {k: v for k, v in WEB.items() if k in INPUT_FIELDS["web_search_call"]}
    assert FrozenDict({"a": 1}, b=2) == {"a": 1, "b": 2} and FrozenList((1, 2)) == [1, 2]


def test_a_copy_of_the_item_form_is_plain_and_mutable():
    import copy
    import pickle

    (item,) = replay(sealed(hosted(WEB)))
    for twin in (copy.deepcopy(item), pickle.loads(pickle.dumps(item)), copy.copy(item)):
        assert twin == item
        assert type(twin) is dict
        twin["status"] = "failed"
        assert item["status"] == "completed"
    deep = copy.deepcopy(item)
    assert type(deep["action"]) is dict and type(deep["action"]["sources"]) is list
    shallow = copy.copy(item)  # as documented: only its top level is plain
    assert type(shallow) is dict and type(shallow["action"]) is FrozenDict
    deep["action"]["sources"].append({"type": "url"})
    assert len(item["action"]["sources"]) == 1


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=20,
)


def _frozen_throughout(value: object) -> bool:
    if isinstance(value, dict):
        return type(value) is FrozenDict and all(map(_frozen_throughout, value.values()))
    if isinstance(value, list):
        return type(value) is FrozenList and all(map(_frozen_throughout, value))
    return not isinstance(value, tuple)


@given(_JSON)
@settings(max_examples=200, deadline=None)
def test_a_frozen_tree_is_the_same_json_and_frozen_throughout(value):
    frozen = frozen_tree(value)
    assert frozen == value
    assert msgspec.json.encode(frozen) == msgspec.json.encode(value)
    assert _frozen_throughout(frozen)
    assert frozen_tree(frozen) == value  # freezing again is a copy of the same values
