"""The tool search rules of the preflight check: the ``tool_search`` tool needs a deferred tool,
and a deferred tool needs ``tool_search`` (``tool-search-needs-deferred``,
``deferred-needs-tool-search``); a namespace's name, and each name inside one, are declared once
(``unique-tool-names``). The client's render, a decoded body and the body memo refuse the same
bodies, and the offline emulator answers them with the API's recorded wording."""

from __future__ import annotations

from typing import Any

import msgspec
import openai
import pytest

import turnwire.testing
from turnwire import PreflightError
from turnwire.rendering.body import checked_body
from turnwire.rendering.preflight import PREFLIGHT_RULES, preflight
from turnwire.wire import FunctionTool, InputMessage, RequestBody
from turnwire.wire.tools import NamespaceFunction, NamespaceTool, ToolSearchTool

from ..conftest import make_container, render_body, thread, user

SEARCH = {"type": "tool_search"}


def _function(name: str = "f", **extra: Any) -> dict[str, Any]:
    return {"type": "function", "name": name, "parameters": {}, "strict": False, **extra}


def _namespace(*tools: dict[str, Any], name: str = "crm") -> dict[str, Any]:
    return {"type": "namespace", "name": name, "description": "CRM.", "tools": list(tools)}


def _body(*tools: dict[str, Any]) -> dict[str, Any]:
    return {
        "model": "gpt-5",
        "store": False,
        "input": [{"type": "message", "role": "user", "content": "hi"}],
        "tools": list(tools),
    }


def _rule(body: dict[str, Any]) -> str:
    with pytest.raises(PreflightError) as caught:
        preflight(body)
    return caught.value.rule


def test_the_rules_are_named():
    assert "tool-search-needs-deferred" in PREFLIGHT_RULES
    assert "deferred-needs-tool-search" in PREFLIGHT_RULES


@pytest.mark.parametrize(
    "tools",
    [
        [SEARCH],
        [SEARCH, _function()],
        [SEARCH, _function(defer_loading=False)],
        [SEARCH, _namespace(_function())],
        [SEARCH, {"type": "custom", "name": "c"}],
        [SEARCH, {"type": "mcp", "server_label": "m", "server_url": "https://m.example"}],
    ],
)
def test_tool_search_without_a_deferred_tool_is_refused(tools):
    assert _rule(_body(*tools)) == "tool-search-needs-deferred"


@pytest.mark.parametrize(
    "tools",
    [
        [_function(defer_loading=True)],
        [_namespace(_function(), _function("g", defer_loading=True))],
        [_namespace({"type": "custom", "name": "c", "defer_loading": True})],
        [{"type": "custom", "name": "c", "defer_loading": True}],
        [
            {
                "type": "mcp",
                "server_label": "m",
                "server_url": "https://m.example",
                "defer_loading": True,
            }
        ],
    ],
)
def test_a_deferred_tool_without_tool_search_is_refused(tools):
    assert _rule(_body(*tools)) == "deferred-needs-tool-search"


@pytest.mark.parametrize(
    "tools",
    [
        [SEARCH, _function(defer_loading=True)],
        [_namespace(_function("g", defer_loading=True)), SEARCH],
        [SEARCH, _namespace(_function(), {"type": "custom", "name": "c", "defer_loading": True})],
        [SEARCH, {"type": "custom", "name": "c", "defer_loading": True}],
        [
            SEARCH,
            {
                "type": "mcp",
                "server_label": "m",
                "server_url": "https://m.example",
                "defer_loading": True,
            },
        ],
        # a namespace needs no tool search when nothing in it is deferred
        [_namespace(_function(), _function("g"))],
    ],
)
def test_tool_search_with_a_deferred_tool_passes(tools):
    preflight(_body(*tools))


def test_the_message_names_the_declaration():
    with pytest.raises(PreflightError, match=r"tools\[1\]\.tools\[1\] is declared with"):
        preflight(_body(_function(), _namespace(_function(), _function("g", defer_loading=True))))
    with pytest.raises(PreflightError, match=r"tools\[1\] declares the tool_search tool"):
        preflight(_body(_function(), SEARCH))


def test_names_in_and_of_namespaces_are_declared_once():
    with pytest.raises(PreflightError, match="namespace 'crm' again") as caught:
        preflight(_body(_namespace(_function()), _namespace(_function("g"))))
    assert caught.value.rule == "unique-tool-names"
    with pytest.raises(PreflightError, match=r"'f' again in namespace 'crm'"):
        preflight(_body(_namespace(_function(), _function())))
    with pytest.raises(PreflightError, match="type tool_search again"):
        preflight(_body(SEARCH, SEARCH, _function(defer_loading=True)))
    # one function name in two namespaces, or in a namespace and on its own: distinct tools
    preflight(_body(_function(), _namespace(_function()), _namespace(_function(), name="b")))


def test_a_namespaced_function_a_program_may_call_counts_for_programmatic_tool_calling():
    programmatic = {"type": "programmatic_tool_calling"}
    member = _function(allowed_callers=["programmatic"])
    preflight(_body(programmatic, _namespace(member)))
    with pytest.raises(PreflightError) as caught:
        preflight(_body(_namespace(member)))
    assert caught.value.rule == "programmatic-tools"


def test_the_render_refuses_what_the_rules_refuse():
    with pytest.raises(PreflightError) as caught:
        render_body(
            thread(
                model="gpt-5",
                messages=[user()],
                tools=[{"name": "lookup"}],
                hosted_tools=[SEARCH],
            )
        )
    assert caught.value.rule == "tool-search-needs-deferred"
    with pytest.raises(PreflightError) as caught:
        render_body(
            thread(
                model="gpt-5",
                messages=[user()],
                hosted_tools=[
                    {
                        "type": "namespace",
                        "name": "crm",
                        "description": "CRM.",
                        "tools": [{"type": "function", "name": "lookup", "defer_loading": True}],
                    }
                ],
            )
        )
    assert caught.value.rule == "deferred-needs-tool-search"


def test_the_body_memo_checks_the_tools_of_a_struct_body():
    memo = make_container().render_memo()
    deferred = NamespaceTool(
        name="crm",
        description="CRM.",
        tools=(NamespaceFunction(name="lookup", parameters={}, strict=False, defer_loading=True),),
    )
    message = InputMessage(role="user", content="hi")
    body = RequestBody(model="gpt-5", input=(message,), stream=True, store=False, tools=(deferred,))
    with pytest.raises(PreflightError, match="deferred-needs-tool-search"):
        checked_body(body, memo=memo)
    searched = msgspec.structs.replace(body, tools=(deferred, ToolSearchTool()))
    checked_body(searched, memo=memo)
    alone = msgspec.structs.replace(
        body,
        tools=(ToolSearchTool(), FunctionTool(name="f", parameters={}, strict=False)),
    )
    with pytest.raises(PreflightError, match="tool-search-needs-deferred"):
        checked_body(alone, memo=memo)


# ------------------------------------------------------------------------ the emulator


@pytest.mark.parametrize(
    ("tools", "message"),
    [
        (
            [SEARCH, _function()],
            "Invalid Value: 'tools.tool_search'. tools.tool_search requires at least one "
            "deferred tool.",
        ),
        (
            [_function(defer_loading=True)],
            "Invalid Value: 'tools.defer_loading'. Deferred tools require tools.tool_search.",
        ),
    ],
)
def test_the_emulator_answers_with_the_recorded_wording(tools, message):
    with (
        turnwire.testing.emulator() as api,
        openai.OpenAI(base_url=api.base_url, api_key="x", max_retries=0) as sdk,
        pytest.raises(openai.BadRequestError) as caught,
    ):
        sdk.responses.create(model="gpt-5", input="hi", tools=tools)
    error = caught.value.response.json()["error"]
    assert error == {
        "message": message,
        "type": "invalid_request_error",
        "param": "tools",
        "code": None,
    }


def test_the_emulator_accepts_a_searchable_request():
    tools = [SEARCH, _namespace(_function("lookup", defer_loading=True))]
    with (
        turnwire.testing.emulator() as api,
        openai.OpenAI(base_url=api.base_url, api_key="x", max_retries=0) as sdk,
    ):
        response = sdk.responses.create(model="gpt-5", input="hi", tools=tools)
    assert response.status == "completed"


NAMESPACED_TOOLS = [
    {"type": "tool_search"},
    {
        "type": "namespace",
        "name": "crm",
        "description": "CRM tools.",
        "tools": [
            {"type": "function", "name": "lookup", "defer_loading": True, "parameters": {}},
        ],
    },
]


def _namespaced_body(call: dict) -> dict:
    return {
        "model": "gpt-5.4",
        "store": False,
        "tools": NAMESPACED_TOOLS,
        "input": [
            {"role": "user", "content": "find Ann"},
            call,
            {"type": "function_call_output", "call_id": "call_1", "output": "found"},
        ],
    }


def test_a_call_into_a_namespace_sent_back_without_it_is_refused():
    call = {"type": "function_call", "call_id": "call_1", "name": "lookup", "arguments": "{}"}
    with pytest.raises(PreflightError) as caught:
        preflight(_namespaced_body(call))
    assert (caught.value.rule, caught.value.index) == ("namespaced-call", 1)
    preflight(_namespaced_body({**call, "namespace": "crm"}))  # with it: accepted


def test_a_top_level_function_of_the_same_name_needs_no_namespace():
    call = {"type": "function_call", "call_id": "call_1", "name": "lookup", "arguments": "{}"}
    body = _namespaced_body(call)
    body["tools"] = [*NAMESPACED_TOOLS, {"type": "function", "name": "lookup", "parameters": {}}]
    preflight(body)


def test_the_emulator_answers_a_missing_namespace_as_the_api_does():
    import httpx

    call = {"type": "function_call", "call_id": "call_1", "name": "lookup", "arguments": "{}"}
    with turnwire.testing.emulator() as api:
        answer = httpx.post(f"{api.base_url}/responses", json=_namespaced_body(call))
    assert answer.status_code == 400
    assert answer.json()["error"] == {
        "message": "Missing namespace for function_call 'lookup'. It does not exist in the "
        "default namespace. Round-trip the model's function_call item with its namespace "
        "field included.",
        "type": "invalid_request_error",
        "param": "input[1].namespace",
        "code": None,
    }
