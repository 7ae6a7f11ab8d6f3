"""The preflight check: each rule names the item and the rule, against recorded real requests; and
the fast pass over a body never seen before agrees with the exact loop.

``preflight._fast_state`` answers whether every per-item rule holds without building the facts of
each item; on any doubt the exact loop (``_facts_of``, ``_check_from``, ``_check_answered``)
decides. The tests compare the fast pass with the exact loop."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from unittest import mock

import msgspec
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import turnwire
from turnwire import PreflightError
from turnwire.rendering import body as request_module
from turnwire.rendering._incremental.memo import BodyState, RenderMemo
from turnwire.rendering.body import checked_body, encode_body
from turnwire.rendering.preflight import (
    _check_answered,
    _check_from,
    _facts_of,
    _fast_state,
    _item_facts,
    preflight,
)
from turnwire.wire import (
    FunctionCall,
    FunctionCallOutput,
    HostedInputItem,
    InputImage,
    InputMessage,
    InputText,
    OutputMessage,
    OutputText,
    ReasoningItem,
    RequestBody,
)

from ..conftest import CONFORMANCE, REPLAY, at, make_container, thread, user
from ._incremental.test_memo import _growing_thread

ACCEPTED = sorted((CONFORMANCE / "requests").glob("*.json"))


# ------------------------------------------------------------------ preflight rules


def _body(*items, **extra):
    return {"model": "m", "input": list(items), "store": False, **extra}


USER = {"role": "user", "content": "hi"}


RS = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e"}


FC = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}


FCO = {"type": "function_call_output", "call_id": "c1", "output": "x"}


VIOLATIONS = [
    ("non-empty-input", _body(), None),
    ("max-output-tokens", _body(USER, max_output_tokens=8), None),
    ("reasoning-partner", _body(USER, RS), 1),
    ("reasoning-partner", _body(USER, RS, {"role": "assistant", "content": "x"}), 1),
    ("reasoning-partner", _body(USER, RS, {**RS, "id": "rs_2"}, {**FC, "id": "fc_1"}, FCO), 1),
    (
        "reasoning-encrypted",
        _body(USER, {**RS, "encrypted_content": None}, {**FC, "id": "fc_1"}, FCO),
        1,
    ),
    ("item-id-prefix", _body(USER, {**FC, "id": "call_1"}, FCO), 1),
    (
        "item-id-prefix",
        _body(
            USER,
            {
                "type": "message",
                "role": "assistant",
                "id": "lc_1",
                "status": "completed",
                "content": [],
            },
        ),
        1,
    ),
    ("call-id-length", _body(USER, {**FC, "call_id": "c" * 65}, {**FCO, "call_id": "c" * 65}), 1),
    ("call-output-pairing", _body(USER, FCO), 1),
    ("call-output-pairing", _body(USER, FC), 1),
    (
        "duplicate-id",
        _body(USER, {**FC, "id": "fc_1"}, FCO, {**FC, "call_id": "c2", "id": "fc_1"}),
        3,
    ),
    ("duplicate-id", _body(USER, FC, FCO, FC), 3),
    (
        "assistant-input-text",
        _body(USER, {"role": "assistant", "content": [{"type": "input_text", "text": "x"}]}),
        1,
    ),
    ("json-object-needs-json", _body(USER, text={"format": {"type": "json_object"}}), None),
]


@pytest.mark.parametrize(
    ("rule", "body", "index"),
    VIOLATIONS,
    ids=[f"{r}-{i}" for i, (r, _, _) in enumerate(VIOLATIONS)],
)
def test_each_rule_names_the_item_and_the_rule(rule, body, index):
    with pytest.raises(PreflightError) as caught:
        preflight(body)
    assert caught.value.rule == rule
    assert caught.value.index == index
    where = "body" if index is None else f"input[{index}]"
    assert str(caught.value).startswith(f"{where}: ") and f"rule {rule}" in str(caught.value)


def test_a_valid_tool_round_trip_passes():
    preflight(
        _body(
            USER,
            RS,
            {**FC, "id": "fc_1"},
            FCO,
            text={"format": {"type": "json_object"}},
            max_output_tokens=16,
        )
        | {"input": [{"role": "user", "content": "answer in JSON"}, RS, {**FC, "id": "fc_1"}, FCO]}
    )


@pytest.mark.parametrize("path", ACCEPTED, ids=[p.stem for p in ACCEPTED])
def test_recorded_accepted_requests_pass(path):
    preflight(json.loads(path.read_text()))


def test_the_recorded_rejected_pairing_request_fails_with_the_pairing_rule():
    body = json.loads(
        (
            CONFORMANCE / "requests" / "rejected" / "reasoning_without_following_item_gpt-5.json"
        ).read_text()
    )
    with pytest.raises(PreflightError) as caught:
        preflight(body)
    assert caught.value.rule == "reasoning-partner" and caught.value.index == 1
    answer = json.loads(
        (CONFORMANCE / "responses" / "error_400_reasoning_without_following_item.json").read_text()
    )
    assert "without its required following item" in json.dumps(answer)


def test_render_refuses_a_body_that_breaks_a_rule():
    t = thread(messages=[user()], tool_calls=[{"id": "c1", "tool": "t", "created_at": at(1)}])
    with pytest.raises(PreflightError) as caught:
        turnwire.render(t, container=make_container(), model="gpt-5")
    assert caught.value.rule == "call-output-pairing" and caught.value.index == 1


FAST = settings(
    max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)


class Twisted(str):
    """An id whose ``str()`` differs from its text (the loop checks the prefix of ``str(id)``)."""

    __slots__ = ()

    def __str__(self) -> str:
        return "fc_" + self


class Falsy(str):
    """A call id that is false (the loop reads a false call id as "")."""

    __slots__ = ()

    def __bool__(self) -> bool:
        return False


class Unknown(msgspec.Struct, frozen=True):
    """An item of a type the fast pass does not know."""

    id: str | None = None
    type: str = "custom"


def body_of(items: list[Any], *, stateless: bool = True) -> RequestBody:
    return RequestBody(model="m", input=tuple(items), stream=False, store=not stateless)


def reference(items: list[Any], stateless: bool) -> tuple[Any, ...]:
    """What the exact loop raises, or the state it leaves."""
    try:
        facts = _facts_of(items)
        seen_ids: dict[str, int] = {}
        calls: dict[str, int] = {}
        answered: dict[str, int] = {}
        _check_from(facts, 0, seen_ids, calls, answered, stateless=stateless)
        _check_answered(calls, answered)
    except Exception as error:
        return raised(error)
    return ("ok", facts, *(list(d.items()) for d in (seen_ids, calls, answered)))


def raised(error: Exception) -> tuple[Any, ...]:
    if isinstance(error, PreflightError):
        return ("PreflightError", error.rule, error.index, str(error))
    return (type(error).__name__, str(error))


def outcome(run: Callable[[], Any]) -> tuple[Any, ...]:
    try:
        return ("ok", run())
    except Exception as error:
        return raised(error)


def snapshot(state: BodyState | None) -> tuple[Any, ...] | None:
    """The preflight state a body left, its facts read from the items where the fast pass left
    them unread."""
    if state is None:
        return None
    facts = list(state.facts)
    read = [_item_facts(facts, state.input, index) for index in range(len(facts))]
    return (
        read,
        *(list(d.items()) for d in (state.seen_ids, state.calls, state.answered)),
        state.stateless,
    )


def exact_only() -> Any:
    """The library with its fast pass off: the exact loop checks every body (the body memo's
    check and ``preflight`` alike)."""
    import contextlib

    from turnwire.rendering import preflight as preflight_module

    stack = contextlib.ExitStack()
    for module in (request_module, preflight_module):
        stack.enter_context(
            mock.patch.object(module, "_fast_state", lambda items, *, stateless: None)
        )
    return stack


# Small pools, so that ids and call ids collide often.
IDS = st.sampled_from(
    ["msg_1", "fc_1", "rs_1", "fc_2", "rs_2", "msg_x", "ws_1", "", "fc_\0x", "x\0fc_", None]
) | st.builds(Twisted, st.sampled_from(["1", "fc_9", "rs_9"]))


CALL_IDS = st.sampled_from(["call_0", "call_1", "call_2", "", "c" * 64, "c" * 65, None, 7])


CONTENTS = st.sampled_from(
    [
        "hi",
        (InputText(text="t"),),
        (OutputText(text="o", annotations=()),),
        (InputImage(detail="auto", image_url="data:,"),),
        (),
    ]
)


ODD_ITEMS = st.one_of(
    st.builds(
        InputMessage,
        role=st.sampled_from(["user", "assistant", "system", "developer"]),
        content=CONTENTS,
    ),
    st.builds(
        OutputMessage,
        role=st.just("assistant"),
        status=st.just("completed"),
        id=IDS,
        content=st.just((OutputText(text="a", annotations=()),)),
    ),
    st.builds(FunctionCall, call_id=CALL_IDS, name=st.just("f"), arguments=st.just("{}"), id=IDS),
    st.builds(FunctionCallOutput, call_id=CALL_IDS, output=st.just("r")),
    st.builds(
        ReasoningItem,
        summary=st.just(()),
        id=IDS,
        encrypted_content=st.sampled_from(["enc", "", None]),
    ),
    st.just(HostedInputItem({"type": "web_search_call", "id": "ws_1", "status": "completed"})),
    # Tool searches (run by the client: paired by call_id; by the server: not), programs and
    # compactions: hosted items the rules read in their own ways.
    st.builds(
        lambda kind, call_id, execution: HostedInputItem(
            {"type": kind, "call_id": call_id, "execution": execution}
        ),
        st.sampled_from(["tool_search_call", "tool_search_output"]),
        st.sampled_from(["call_1", "call_2", "", None]),
        st.sampled_from(["client", "server"]),
    ),
    st.just(HostedInputItem({"type": "program", "id": "pg_1", "call_id": "call_1"})),
    st.just(HostedInputItem({"type": "program_output", "id": "pgo_1", "call_id": "call_1"})),
    st.just(HostedInputItem({"type": "compaction", "id": "cmp_1", "encrypted_content": "e"})),
    st.builds(Unknown, id=IDS),
)


@st.composite
def cycle(draw: st.DrawFn, n: int) -> list[Any]:
    """One turn as the pipeline renders it, with ids of its own: valid on its own."""
    items: list[Any] = [
        InputMessage(role="user", content=draw(st.sampled_from(["q", (InputText(text="q"),)])))
    ]
    shape = draw(
        st.sampled_from(
            ["reasoned call", "call", "reasoned answer", "answer", "reasoned search", "tool search"]
        )
    )
    if shape.startswith("reasoned"):
        items.append(ReasoningItem(summary=(), id=f"rs_{n}", encrypted_content="enc"))
    if shape == "reasoned search":
        items.append(HostedInputItem({"type": "web_search_call", "id": f"ws_{n}"}))
    if shape == "tool search":  # a search the client ran (or the server), then its answer
        run_by = draw(st.sampled_from(["client", "server"]))
        for kind in ("tool_search_call", "tool_search_output"):
            fields = {"type": kind, "call_id": f"call_s{n}", "execution": run_by}
            items.append(HostedInputItem(fields))
    if shape.endswith("call"):
        call_id = f"call_{n}"
        alone = draw(st.sampled_from([None, f"fc_{n}"]))  # a call alone may send its id
        item_id = f"fc_{n}" if shape == "reasoned call" else alone
        items.append(FunctionCall(call_id=call_id, name="f", arguments="{}", id=item_id))
        items += [FunctionCallOutput(call_id=call_id, output="r")] * draw(st.integers(1, 2))
    if shape == "reasoned answer":
        content = (OutputText(text="a", annotations=()),)
        items.append(
            OutputMessage(role="assistant", status="completed", id=f"msg_{n}", content=content)
        )
    else:
        items.append(InputMessage(role="assistant", content="a"))
    if draw(st.booleans()):
        items.append(HostedInputItem({"type": "web_search_call", "id": f"wx_{n}"}))
    return items


def tweaks(item: Any, n: int) -> list[dict[str, Any]]:
    """Changes of one field of ``item`` that break one rule (alone, or with other changes)."""
    odd_ids = [None, "", f"x_{n}", f"rs_{n}x", f"fc_{n}x", f"msg_{n}x"]
    if isinstance(item, ReasoningItem):
        return [{"encrypted_content": None}, {"encrypted_content": ""}] + [
            {"id": i} for i in odd_ids
        ]
    if isinstance(item, FunctionCall | OutputMessage):
        return [{"id": i} for i in odd_ids]
    if isinstance(item, FunctionCallOutput):
        return [{"call_id": c} for c in ("call_0", "call_1", f"call_{n}x", "")]
    if isinstance(item, InputMessage):
        return [{"role": "assistant", "content": (InputText(text="t"),)}, {"role": "assistant"}]
    if isinstance(item, HostedInputItem):
        searched = [
            {"call_id": c, "execution": e}
            for c in ("call_s0", f"call_s{n}x", "", None)
            for e in ("client", "server", None)
        ]
        return [
            {"type": t, "id": i}
            for t in ("item_reference", "message", "function_call_output", "mcp_call")
            for i in (item.id, None, "")
        ] + (searched if item.get("type", "").startswith("tool_search") else [])
    return []


def tweaked(draw: st.DrawFn, items: list[Any], at: int) -> None:
    """Change one field of ``items[at]``; a call's call id changes with its outputs'."""
    item = items[at]
    if isinstance(item, FunctionCall) and draw(st.booleans()):
        renamed = draw(st.sampled_from(["c" * 64, "c" * 65, "", "call_0", f"call_{at}x"]))
        for index, other in enumerate(items):
            if (
                isinstance(other, FunctionCall | FunctionCallOutput)
                and other.call_id == item.call_id
            ):
                items[index] = msgspec.structs.replace(other, call_id=renamed)
        return
    changes = tweaks(item, at)
    if not changes:
        return
    change = draw(st.sampled_from(changes))
    if isinstance(item, HostedInputItem):
        items[at] = HostedInputItem({k: v for k, v in {**item, **change}.items() if v is not None})
    else:
        items[at] = msgspec.structs.replace(item, **change)


@st.composite
def inputs(draw: st.DrawFn, first: int = 0) -> list[Any]:
    """A few valid turns, then a few edits that may break any rule."""
    items: list[Any] = []
    for n in range(first, first + draw(st.integers(0, 5))):
        items += draw(cycle(n))
    for _ in range(draw(st.integers(0, 2))):
        edit = draw(
            st.sampled_from(["tweak", "tweak", "insert", "replace", "delete", "swap", "repeat"])
        )
        at = draw(st.integers(0, len(items)))
        if edit == "insert":
            items.insert(at, draw(ODD_ITEMS))
        elif items and at < len(items):
            if edit == "tweak":
                changeable = [i for i, item in enumerate(items) if tweaks(item, i)]
                tweaked(draw, items, draw(st.sampled_from(changeable)) if changeable else at)
            elif edit == "replace":
                items[at] = draw(ODD_ITEMS)
            elif edit == "delete":
                del items[at]
            elif edit == "swap" and at + 1 < len(items):
                items[at], items[at + 1] = items[at + 1], items[at]
            elif edit == "repeat":
                items.insert(draw(st.integers(0, len(items))), items[at])
    return items


@settings(FAST, max_examples=1500)  # the cheapest test: the most examples
@given(items=inputs(), stateless=st.booleans())
def test_the_fast_pass_is_the_exact_loop_when_it_answers(items, stateless):
    expected = reference(items, stateless)
    fast = _fast_state(items, stateless=stateless)
    event("fast pass" if fast is not None else f"exact loop: {expected[0]}")
    if fast is not None:
        assert expected[0] == "ok", expected
        assert [list(d.items()) for d in fast] == list(expected[2:])


@FAST
@given(items=inputs(), stateless=st.booleans())
def test_a_cold_body_is_checked_as_the_exact_loop_checks_it(items, stateless):
    body = body_of(items, stateless=stateless)
    memo = RenderMemo()
    got = outcome(lambda: bytes(checked_body(body, memo)))
    with exact_only():
        exact_memo = RenderMemo()
        want = outcome(lambda: bytes(checked_body(body, exact_memo)))
        want_preflight = outcome(lambda: preflight(body))
    assert got == want
    assert snapshot(memo.body) == snapshot(exact_memo.body)
    assert outcome(lambda: preflight(body)) == want_preflight
    expected = reference(items, stateless)
    if items and expected[0] == "ok":
        assert got == outcome(lambda: encode_body(body))  # some odd ids do not encode
        if got[0] == "ok":
            assert snapshot(memo.body) == (*expected[1:], stateless)
    elif items and expected[0] == "PreflightError":
        assert got == expected == want_preflight


@FAST
@given(
    first=inputs(),
    cuts=st.lists(st.integers(0, 40), min_size=2, max_size=2),
    tails=st.lists(inputs(first=10), min_size=2, max_size=2),
    stateless=st.booleans(),
)
def test_warm_bodies_after_a_fast_cold_one_are_the_exact_loops(first, cuts, tails, stateless):
    bodies = [body_of(first, stateless=stateless)]
    for cut, tail in zip(cuts, tails, strict=True):
        kept = list(bodies[-1].input)
        bodies.append(body_of(kept[: min(cut, len(kept))] + tail, stateless=stateless))

    def run() -> list[Any]:
        memo = RenderMemo()
        return [
            (outcome(lambda b=body: bytes(checked_body(b, memo))), snapshot(memo.body))
            for body in bodies
        ]

    got = run()
    with exact_only():
        want = run()
    assert got == want


def turns(count: int) -> list[Any]:
    """The benchmark's shapes: a user message, reasoning, its call, the output, an answer."""
    items: list[Any] = []
    for n in range(count):
        items += [
            InputMessage(role="user", content=f"q{n}" if n % 10 else (InputText(text="q"),)),
            ReasoningItem(summary=(), id=f"rs_{n}", encrypted_content="enc"),
            FunctionCall(call_id=f"call_{n}", name="f", arguments="{}", id=f"fc_{n}"),
            FunctionCallOutput(call_id=f"call_{n}", output="r"),
            InputMessage(role="assistant", content=f"a{n}"),
        ]
    return items


def test_a_valid_body_takes_the_fast_pass_and_a_warm_body_reads_its_facts():
    items = turns(50)
    expected = reference(items, True)
    assert expected[0] == "ok"
    fast = _fast_state(items, stateless=True)
    assert fast is not None
    assert [list(d.items()) for d in fast] == list(expected[2:])
    memo = RenderMemo()
    checked_body(body_of(items), memo)
    assert snapshot(memo.body) == (*expected[1:], True)
    # The next body drops the last turn's answer and output: the warm path reads the facts of
    # the items it cuts, and of the call before the cut, from the items.
    grown = [*items[:-2], FunctionCallOutput(call_id="call_49", output="again"), items[-1]]
    checked_body(body_of(grown), memo)
    assert snapshot(memo.body) == (*reference(grown, True)[1:], True)
    broken = [*items[:-3], FunctionCallOutput(call_id="call_48", output="r")]
    memo_error = outcome(lambda: checked_body(body_of(broken), memo))
    assert memo_error == reference(broken, True)
    assert memo_error[1] == "reasoning-partner"


def call(n: int, call_id: str | None = None, item_id: str | None = None) -> FunctionCall:
    call_id = f"call_{n}" if call_id is None else call_id
    return FunctionCall(call_id=call_id, name="f", arguments="{}", id=item_id)


def hosted(kind: str, item_id: str | None) -> HostedInputItem:
    return HostedInputItem({"type": kind} if item_id is None else {"type": kind, "id": item_id})


REASONING = ReasoningItem(summary=(), id="rs_9", encrypted_content="enc")


ANSWER = OutputMessage(
    role="assistant",
    status="completed",
    id="msg_9",
    content=(OutputText(text="a", annotations=()),),
)


USER_ITEM = InputMessage(role="user", content="q")


# One change of a valid body each, the rule it breaks (None: a TypeError of the loop).
BROKEN: dict[str, tuple[Callable[[list[Any]], list[Any]], str | None]] = {
    "reasoning without encrypted content": (
        lambda t: [*t, msgspec.structs.replace(REASONING, encrypted_content=""), ANSWER],
        "reasoning-encrypted",
    ),
    "reasoning id prefix": (
        lambda t: [*t, msgspec.structs.replace(REASONING, id="r_9"), ANSWER],
        "item-id-prefix",
    ),
    "reasoning last": (lambda t: [*t, REASONING], "reasoning-partner"),
    "reasoning before a call without id": (
        lambda t: [*t, REASONING, call(9), FunctionCallOutput(call_id="call_9", output="r")],
        "reasoning-partner",
    ),
    "reasoning before a call with an empty id": (
        lambda t: [
            *t,
            REASONING,
            call(9, item_id=""),
            FunctionCallOutput(call_id="call_9", output="r"),
        ],
        "reasoning-partner",
    ),
    "reasoning before an input message": (
        lambda t: [*t, REASONING, USER_ITEM],
        "reasoning-partner",
    ),
    "reasoning before reasoning": (
        lambda t: [*t, REASONING, msgspec.structs.replace(REASONING, id="rs_10"), ANSWER],
        "reasoning-partner",
    ),
    "reasoning before an output": (
        lambda t: [*t[:13], REASONING, *t[13:]],
        "reasoning-partner",
    ),
    "reasoning before an item reference": (
        lambda t: [*t, REASONING, hosted("item_reference", "msg_1")],
        "reasoning-partner",
    ),
    "reasoning before a hosted item without id": (
        lambda t: [*t, REASONING, hosted("web_search_call", None), ANSWER],
        "reasoning-partner",
    ),
    "reasoning before an output message without id": (
        lambda t: [*t, REASONING, msgspec.structs.replace(ANSWER, id="")],
        "reasoning-partner",
    ),
    "duplicate item id": (
        lambda t: [*t, msgspec.structs.replace(ANSWER, id="fc_1")],
        "duplicate-id",
    ),
    "duplicate hosted id": (
        lambda t: [*t, hosted("web_search_call", "ws_1"), hosted("mcp_call", "ws_1")],
        "duplicate-id",
    ),
    "duplicate call id": (
        lambda t: [*t, call(1), FunctionCallOutput(call_id="call_1", output="r")],
        "duplicate-id",
    ),
    "long call id": (
        lambda t: [*t, call(9, "c" * 65), FunctionCallOutput(call_id="c" * 65, output="r")],
        "call-id-length",
    ),
    "false call id": (
        lambda t: [*t, call(9, Falsy("call_9")), FunctionCallOutput(call_id="call_9", output="r")],
        "call-output-pairing",
    ),
    "long output call id": (
        lambda t: [*t, FunctionCallOutput(call_id="c" * 65, output="r")],
        "call-id-length",
    ),
    "output before its call": (
        lambda t: [*t, FunctionCallOutput(call_id="call_9", output="r"), call(9)],
        "call-output-pairing",
    ),
    "output of no call": (
        lambda t: [*t, FunctionCallOutput(call_id="call_9", output="r")],
        "call-output-pairing",
    ),
    "call without output": (lambda t: [*t, call(9)], "call-output-pairing"),
    "assistant input_text": (
        lambda t: [*t, InputMessage(role="assistant", content=(InputText(text="t"),))],
        "assistant-input-text",
    ),
    "answer id prefix": (
        lambda t: [*t, msgspec.structs.replace(ANSWER, id="m_9")],
        "item-id-prefix",
    ),
    "call id prefix": (
        lambda t: [*t, call(9, item_id="f_9"), FunctionCallOutput(call_id="call_9", output="r")],
        "item-id-prefix",
    ),
    "call id prefix after a NUL": (
        lambda t: [*t, call(9, item_id="x\0fc_"), FunctionCallOutput(call_id="call_9", output="r")],
        "item-id-prefix",
    ),
    "reasoning id whose str() has another prefix": (
        lambda t: [*t, msgspec.structs.replace(REASONING, id=Twisted("rs_9")), ANSWER],
        "item-id-prefix",
    ),
    "hosted message id prefix": (lambda t: [*t, hosted("message", "ws_9")], "item-id-prefix"),
    "hosted output": (lambda t: [*t, hosted("function_call_output", None)], "call-output-pairing"),
    "call id not a string": (lambda t: [*t, msgspec.structs.replace(call(9), call_id=7)], None),
}


@pytest.mark.parametrize("case", BROKEN)
def test_each_broken_rule_is_reported_as_the_exact_loop_reports_it(case):
    # turns(3): the call of the last turn at 12, its output at 13.
    searched = [msgspec.structs.replace(REASONING, id="rs_8"), hosted("web_search_call", "ws_8")]
    valid = [*turns(3), *searched, msgspec.structs.replace(ANSWER, id="msg_8"), USER_ITEM]
    assert _fast_state(valid, stateless=True) is not None
    change, rule = BROKEN[case]
    items = change(valid)
    expected = reference(items, True)
    assert expected[0] == ("PreflightError" if rule else "TypeError")
    assert rule is None or expected[1] == rule
    assert _fast_state(items, stateless=True) is None
    memo = RenderMemo()
    assert outcome(lambda: checked_body(body_of(items), memo)) == expected
    assert memo.body is None
    assert outcome(lambda: preflight(body_of(items))) == expected


def test_the_incremental_preflight_raises_what_preflight_raises():
    container = make_container(REPLAY)
    good = turnwire.api.render(_growing_thread(2), container=container).request
    memo = RenderMemo()
    assert bytes(checked_body(good, memo)) == encode_body(good)
    calls = [i for i in good.input if isinstance(i, turnwire.wire.FunctionCall)]
    duplicate = msgspec.structs.replace(good, input=(*good.input, calls[0]))
    orphan = msgspec.structs.replace(good, input=(*good.input[:-1], calls[-1]))
    for body in (duplicate, orphan):
        with pytest.raises(turnwire.PreflightError) as full:
            preflight(body)
        with pytest.raises(turnwire.PreflightError) as incremental:
            checked_body(body, memo)
        assert str(incremental.value) == str(full.value)
        assert incremental.value.index == full.value.index
        assert bytes(checked_body(good, memo)) == encode_body(good)  # the memo survived the failure
