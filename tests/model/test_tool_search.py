"""Tool search declarations: the ``tool_search`` tool, ``namespace`` tools and ``defer_loading``,
in a thread file, in configuration and in Python (``@tool(defer_loading=True)``,
:func:`~turnwire.model.functions.tool_namespace`); every body rendered here is checked by the
official types with extra keys forbidden (the suite's autouse oracle, and once more by hand)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import msgspec
import pytest

from turnwire.config.schema import thread_schema
from turnwire.errors import InputError, ThreadFileError
from turnwire.model.functions import (
    called_tool,
    client_tool_search,
    custom_tool,
    function_tools,
    handler_keys,
    tool,
    tool_namespace,
    with_function_tools,
)
from turnwire.model.records import HostedItem, Message
from turnwire.model.tool_search import (
    ToolSearch,
    deferred_tools,
    load_paths,
    output_item,
    output_record,
    paths_of,
    search_paths,
    waiting_searches,
)
from turnwire.wire.tools import (
    NamespaceFunction,
    NamespaceTool,
    ToolSearchTool,
    declaration_key,
    namespace_function,
)

from ..conftest import render_body, thread, user
from ..oracle import validate_body, validate_open_responses, validate_openapi

ORDERS = {
    "type": "object",
    "properties": {"customer_id": {"type": "string"}},
    "required": ["customer_id"],
    "additionalProperties": False,
}
CRM = {
    "type": "namespace",
    "name": "crm",
    "description": "CRM tools for customer lookup and order management.",
    "tools": [
        {
            "type": "function",
            "name": "list_open_orders",
            "description": "List open orders for a customer ID.",
            "defer_loading": True,
            "parameters": ORDERS,
        },
        {"type": "function", "name": "ping"},
        {"type": "custom", "name": "crm_sql", "defer_loading": True},
    ],
}


def _checked(body: dict) -> dict:
    validate_body(body)
    validate_openapi(body)
    validate_open_responses(body)
    return body


def test_a_thread_declares_tool_search_namespaces_and_deferred_functions():
    body = _checked(
        render_body(
            thread(
                model="gpt-5",
                messages=[user()],
                tools=[{"name": "get_weather", "defer_loading": True, "parameters": ORDERS}],
                hosted_tools=[{"type": "tool_search"}, CRM],
            )
        )
    )
    weather, search, crm = body["tools"]
    assert weather == {
        "type": "function",
        "name": "get_weather",
        "parameters": ORDERS,
        "strict": True,
        "defer_loading": True,
    }
    assert search == {"type": "tool_search"}
    assert crm["type"] == "namespace" and crm["name"] == "crm"
    orders, ping, sql = crm["tools"]
    # a namespace's function goes as a thread's does: its schema completed, strict decided
    assert orders == {
        "type": "function",
        "name": "list_open_orders",
        "description": "List open orders for a customer ID.",
        "parameters": ORDERS,
        "strict": True,
        "defer_loading": True,
    }
    assert ping == {
        "type": "function",
        "name": "ping",
        "parameters": {"type": "object", "properties": {}},
        "strict": False,
    }
    assert sql == {"type": "custom", "name": "crm_sql", "defer_loading": True}


def test_defer_loading_is_left_out_unless_true():
    body = render_body(thread(model="gpt-5", messages=[user()], tools=[{"name": "lookup"}]))
    assert "defer_loading" not in body["tools"][0]


def test_a_client_executed_tool_search_declaration_renders_as_the_api_takes_it():
    declared = {
        "type": "tool_search",
        "execution": "client",
        "description": "Find tools by keyword.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
    }
    body = _checked(
        render_body(
            thread(
                model="gpt-5",
                messages=[user()],
                tools=[{"name": "lookup", "defer_loading": True}],
                hosted_tools=[declared],
            )
        )
    )
    assert body["tools"][1] == declared


def test_configuration_declares_them_for_every_request():
    settings = {"tools": {"hosted": [{"type": "tool_search"}, CRM]}}
    body = _checked(render_body(thread(model="gpt-5", messages=[user()]), settings))
    assert [t["type"] for t in body["tools"]] == ["tool_search", "namespace"]


def test_deferred_mcp_servers_and_custom_tools_are_declared_too():
    hosted = [
        {"type": "tool_search"},
        {
            "type": "mcp",
            "server_label": "docs",
            "server_url": "https://mcp.example.com/sse",
            "defer_loading": True,
        },
        {"type": "custom", "name": "run_sql", "defer_loading": True},
    ]
    settings = {"tools": {"hosted": hosted, "handlers": {"run_sql": "json:dumps"}}}
    body = _checked(render_body(thread(model="gpt-5", messages=[user()]), settings))
    assert body["tools"][1]["defer_loading"] is True
    assert body["tools"][2]["defer_loading"] is True


@pytest.mark.parametrize(
    ("declared", "where"),
    [
        ({**CRM, "tools": []}, "tools"),
        ({**CRM, "description": None}, "description"),
        ({**CRM, "name": "crm.v2"}, "name"),
        ({**CRM, "tools": [CRM["tools"][1], CRM["tools"][1]]}, "declared twice"),
        ({**CRM, "tools": [{"type": "shell"}]}, "tools"),
        ({"type": "tool_search", "execution": "sometimes"}, "execution"),
        ({"type": "tool_search", "made_up": 1}, "made_up"),
    ],
)
def test_a_bad_declaration_does_not_load(declared, where):
    with pytest.raises(ThreadFileError, match=where):
        thread(model="gpt-5", messages=[user()], hosted_tools=[declared])


def test_two_namespaces_of_one_name_do_not_load():
    with pytest.raises(ThreadFileError, match="namespace:crm"):
        thread(model="gpt-5", messages=[user()], hosted_tools=[CRM, CRM])


def test_the_thread_schema_describes_every_new_field():
    defs = thread_schema()["$defs"]
    for name in ("ToolSearchTool", "NamespaceTool", "NamespaceFunction"):
        for field, schema in defs[name]["properties"].items():
            assert schema.get("description"), (name, field)
    assert defs["Tool"]["properties"]["defer_loading"]["description"]
    assert defs["McpTool"]["properties"]["defer_loading"]["description"]


def test_the_declaration_helpers():
    crm = thread(model="gpt-5", messages=[user()], hosted_tools=[CRM]).hosted_tools[0]
    assert isinstance(crm, NamespaceTool)
    assert declaration_key(crm) == "namespace:crm"
    member = namespace_function((crm,), "crm", "ping")
    assert isinstance(member, NamespaceFunction) and member.name == "ping"
    assert namespace_function((crm,), "crm", "nope") is None
    assert namespace_function((crm,), "other", "ping") is None


# ------------------------------------------------------------------------ handlers' keys


def test_a_namespaced_call_is_looked_up_by_namespace_dot_name_then_name():
    assert handler_keys("lookup", "crm") == ("crm.lookup", "lookup")
    assert handler_keys("lookup", None) == ("lookup",)
    # the API names a deferred function declared on its own with its own name as namespace,
    # and a namespace may share its function's name: namespace.name first all the same
    assert handler_keys("lookup", "lookup") == ("lookup.lookup", "lookup")


def test_the_called_declaration_is_the_namespace_function():
    declared = thread(
        model="gpt-5",
        messages=[user()],
        tools=[{"name": "list_open_orders", "description": "top level", "defer_loading": True}],
        hosted_tools=[CRM],
    )
    inside = called_tool(declared, "list_open_orders", "crm")
    assert inside is not None and inside.description == "List open orders for a customer ID."
    assert inside.parameters == ORDERS and inside.defer_loading
    alone = called_tool(declared, "list_open_orders", None)
    assert alone is not None and alone.description == "top level"
    synthetic = called_tool(declared, "list_open_orders", "list_open_orders")
    assert synthetic == alone
    assert called_tool(declared, "list_open_orders", "billing") is None
    assert called_tool(declared, "crm_sql", "crm") is None  # a custom tool, not a function
    # the configuration's namespace wins over the thread's of the same name
    other = NamespaceTool(
        name="crm",
        description="configured",
        tools=(NamespaceFunction(name="list_open_orders", description="configured one"),),
    )
    configured = called_tool(declared, "list_open_orders", "crm", (other,))
    assert configured is not None and configured.description == "configured one"


# ------------------------------------------------------------------------ Python


def test_a_python_function_is_deferred_with_defer_loading():
    @tool(defer_loading=True)
    def lookup(city: str) -> str:
        """Look a city up."""
        return city

    assert lookup.declaration.defer_loading
    assert lookup.key == "lookup" and lookup.namespace is None
    declared = with_function_tools(
        thread(model="gpt-5", messages=[user()], hosted_tools=[{"type": "tool_search"}]),
        function_tools([lookup]).values(),
    )
    body = _checked(render_body(declared))
    assert body["tools"][0]["defer_loading"] is True


def list_open_orders(customer_id: str) -> str:
    """List open orders for a customer ID."""
    return f"orders of {customer_id}"


def ping() -> str:
    """Ping."""
    return "pong"


def test_a_python_namespace_groups_functions_and_custom_tools():
    @custom_tool
    def crm_sql(call) -> str:  # type: ignore[no-untyped-def]
        """Query the CRM."""
        return "1 row"

    crm = tool_namespace(
        "crm", "CRM tools.", [list_open_orders, tool(ping), crm_sql], defer_loading=True
    )
    assert crm.name == "crm"
    assert [member.key for member in crm.members] == [
        "crm.list_open_orders",
        "crm.ping",
        "crm.crm_sql",
    ]
    assert all(member.namespace is crm.declaration for member in crm.members)
    assert all(member.defer_loading for member in crm.declaration.tools)
    found = function_tools([crm, tool(ping)])
    assert list(found) == ["crm.list_open_orders", "crm.ping", "crm.crm_sql", "ping"]
    base = thread(model="gpt-5", messages=[user()], hosted_tools=[{"type": "tool_search"}])
    declared = with_function_tools(base, found.values())
    assert [t.name for t in declared.tools] == ["ping"]  # the members stay in their namespace
    assert declared.hosted_tools[1] == crm.declaration
    # a thread saved after a run with the namespace holds its declaration already
    once = with_function_tools(base, function_tools([crm]).values())
    assert with_function_tools(once, function_tools([crm]).values()) == once
    body = _checked(render_body(declared))
    namespace = body["tools"][2]
    assert namespace["type"] == "namespace" and namespace["description"] == "CRM tools."
    assert [t["name"] for t in namespace["tools"]] == ["list_open_orders", "ping", "crm_sql"]
    assert namespace["tools"][0]["parameters"]["required"] == ["customer_id"]
    assert namespace["tools"][0]["strict"] is True


def test_a_namespace_keeps_each_members_own_defer_loading_by_default():
    crm = tool_namespace("crm", "CRM tools.", [tool(ping, defer_loading=True), list_open_orders])
    assert [member.defer_loading for member in crm.declaration.tools] == [True, False]


def test_a_namespace_the_thread_declares_differently_is_refused():
    crm = tool_namespace("crm", "Another description.", [ping])
    base = thread(model="gpt-5", messages=[user()], hosted_tools=[CRM])
    with pytest.raises(InputError, match="namespace:crm"):
        with_function_tools(base, function_tools([crm]).values())


@pytest.mark.parametrize(
    ("name", "members", "error"),
    [
        ("crm.v2", [ping], ValueError),
        ("crm", [], ValueError),
        ("crm", [ping, tool(ping)], ValueError),
    ],
)
def test_a_bad_python_namespace_is_refused(name, members, error):
    with pytest.raises(error):
        tool_namespace(name, "CRM tools.", members)


def test_a_member_of_one_namespace_cannot_join_another_and_shell_cannot_join_any():
    from turnwire.model.functions import client_tool
    from turnwire.wire.tools import ShellTool

    crm = tool_namespace("crm", "CRM tools.", [ping])
    with pytest.raises(TypeError, match="belongs to namespace 'crm'"):
        tool_namespace("billing", "Billing.", [crm.members[0]])
    with pytest.raises(TypeError, match="functions and custom tools"):
        tool_namespace("ops", "Ops.", [client_tool(ShellTool(), lambda action: "")])


def test_the_same_function_in_two_namespaces_is_registered_twice():
    crm = tool_namespace("crm", "CRM.", [ping])
    billing = tool_namespace("billing", "Billing.", [ping])
    assert list(function_tools([crm, billing])) == ["crm.ping", "billing.ping"]


# ------------------------------------------------------------------------ client tool search


def test_a_client_search_with_parameters_of_its_own_is_found_where_it_is_declared():
    base = thread(model="gpt-5", messages=[user()], tools=[{"name": "f", "defer_loading": True}])
    assert client_tool_search(base) is None
    # The built-in search answers one without parameters: nothing to find.
    assert client_tool_search(base, (ToolSearchTool(execution="client"),)) is None
    own = ToolSearchTool(execution="client", parameters={"type": "object"})
    assert client_tool_search(base, (own,)) == "$.tools.hosted[0]"
    server = ToolSearchTool(execution="server", parameters={"type": "object"})
    assert client_tool_search(base, (server,)) is None
    search = {"type": "tool_search", "execution": "client", "parameters": {"type": "object"}}
    declared = thread(
        model="gpt-5",
        messages=[user()],
        tools=[{"name": "f", "defer_loading": True}],
        hosted_tools=[search],
    )
    assert client_tool_search(declared) == "$.hosted_tools[0]"


def _search_records(*outputs: dict) -> list[HostedItem]:
    call = {
        "type": "tool_search_call",
        "id": "tsc_1",
        "call_id": "call_ts",
        "execution": "client",
        "arguments": {"paths": ["f"]},
        "status": "completed",
    }
    at = datetime(2026, 1, 1, 10, 0, 1, tzinfo=UTC)
    records = [HostedItem(id="tsc_1", type="tool_search_call", item=call, created_at=at)]
    records += [
        HostedItem(id=f"tso_{i}", type="tool_search_output", item=item, created_at=at, seq=i + 1)
        for i, item in enumerate(outputs)
    ]
    return records


def test_a_client_search_waits_until_a_client_output_answers_its_call_id():
    assert waiting_searches(_search_records()) == [0]
    assert waiting_searches(_search_records(), start=1) == []
    answer = output_item("call_ts", [])
    assert waiting_searches(_search_records(answer)) == []
    assert waiting_searches(_search_records({**answer, "call_id": "other"})) == [0]
    # A server's output does not answer a call the client was asked to run.
    assert waiting_searches(_search_records({**answer, "execution": "server"})) == [0]


DECLARED = [
    {"type": "tool_search", "execution": "client"},
    {"type": "function", "name": "refund", "parameters": {}, "strict": True, "defer_loading": True},
    {"type": "function", "name": "greet", "parameters": {}, "strict": True},
    {"type": "custom", "name": "sql", "defer_loading": True},
    {
        "type": "namespace",
        "name": "crm",
        "description": "CRM tools.",
        "tools": [
            {"type": "function", "name": "lookup", "defer_loading": True},
            {"type": "function", "name": "notes", "defer_loading": True},
            {"type": "function", "name": "always"},
        ],
    },
    {"type": "namespace", "name": "loaded", "description": "Loaded.", "tools": [{"name": "x"}]},
    {"type": "mcp", "server_label": "docs", "server_url": "https://x", "defer_loading": True},
    {"type": "mcp", "server_label": "eager", "server_url": "https://y"},
    {
        "type": "mcp",
        "server_label": "private",
        "server_url": "https://z",
        "authorization": "sk-secret-token-1234",
        "defer_loading": True,
    },
]


def test_only_deferred_tools_can_be_loaded_a_namespace_with_its_deferred_tools_alone():
    assert [t.get("name") or t.get("server_label") for t in deferred_tools(DECLARED)] == [
        "refund",
        "sql",
        "crm",
        "docs",
    ]
    crm = deferred_tools(DECLARED)[2]
    assert [t["name"] for t in crm["tools"]] == ["lookup", "notes"]  # `always` is loaded
    assert crm["description"] == "CRM tools."


@pytest.mark.parametrize(
    ("paths", "names", "unknown"),
    [
        (["refund"], ["refund"], []),
        (["sql", "docs"], ["sql", "docs"], []),
        (["crm"], ["crm:lookup,notes"], []),
        (["crm.notes"], ["crm:notes"], []),
        # Members of one namespace named apart go back as one entry, where the first was named.
        (["crm.notes", "refund", "crm.lookup"], ["crm:notes,lookup", "refund"], []),
        (["crm", "crm.lookup", "refund", "refund"], ["crm:lookup,notes", "refund"], []),
        # Loaded already, not deferred, or nowhere: nothing loaded, each reported.
        (["greet", "eager", "crm.always", "loaded", "nope", "crm."], [], None),
    ],
)
def test_the_built_in_search_loads_what_each_path_names(paths, names, unknown):
    loaded, missing, withheld = load_paths(paths, DECLARED)
    assert withheld == []
    shown = [
        f"{t['name']}:{','.join(m['name'] for m in t['tools'])}"
        if t["type"] == "namespace"
        else t.get("name") or t["server_label"]
        for t in loaded
    ]
    assert shown == names
    assert missing == (paths if unknown is None else unknown)
    for declaration in loaded:  # declared as the request declared them
        if declaration["type"] != "namespace":
            assert declaration in DECLARED


def test_the_api_s_own_arguments_hold_paths():
    assert search_paths({"paths": ["a", "b.c"]}) == ("a", "b.c")
    assert search_paths({"paths": ["a", "", 3, None]}) == ("a",)
    assert search_paths({"query": "a"}) is None
    assert search_paths({"paths": "a"}) is None
    assert search_paths(["a"]) is None


def test_a_search_handler_can_ask_for_what_the_built_in_search_loads():
    search = ToolSearch(call_id="c", arguments={}, paths=("crm.lookup",), declared=tuple(DECLARED))
    assert [t["name"] for t in search.load()] == ["crm"]
    assert [t["name"] for t in search.load(["refund"])] == ["refund"]
    assert ToolSearch(call_id="c", arguments={}, paths=None, declared=()).load() == []


def test_the_answer_is_dated_as_its_response_after_its_records():
    [call] = _search_records()
    at = call.created_at
    said = Message(id="msg_1", role="assistant", content="Searching.", created_at=at, seq=3)
    later = Message(id="u2", role="user", content="and then?", created_at=at + timedelta(seconds=5))
    held = thread(model="gpt-5", messages=[user()])
    held = msgspec.structs.replace(
        held, messages=(*held.messages, said, later), hosted_items=(call,)
    )
    record = output_record(held, call, [DECLARED[1]])
    # After every record of its response, before the question asked after it.
    assert (record.created_at, record.seq) == (at, 4)
    assert record.created_at < later.created_at
    assert record.item == {
        "type": "tool_search_output",
        "call_id": "call_ts",
        "execution": "client",
        "status": "completed",
        "tools": [DECLARED[1]],
    }
    assert record.seal is None  # the caller seals what it records


def test_a_deferred_mcp_server_with_credentials_is_never_loaded():
    # Its answer is stored in the thread and replayed: credentials stay in `tools` alone.
    assert "private" not in [t.get("server_label") for t in deferred_tools(DECLARED)]
    loaded = load_paths(["private", "docs"], DECLARED)
    assert [t["server_label"] for t in loaded.tools] == ["docs"]
    assert (loaded.unknown, loaded.withheld) == ([], ["private"])
    with_headers = {**DECLARED[6], "headers": {"X-Key": "k"}}
    assert load_paths(["docs"], [with_headers]).withheld == ["docs"]


def test_a_handler_s_declaration_names_the_paths_that_load_it():
    deferred = deferred_tools(DECLARED)
    assert paths_of(deferred[0], DECLARED) == ["refund"]
    assert paths_of(deferred[3], DECLARED) == ["docs"]
    crm = deferred[2]
    assert paths_of(crm, DECLARED) == ["crm.lookup", "crm.notes"]
    assert paths_of({**crm, "tools": crm["tools"][1:]}, DECLARED) == ["crm.notes"]
    for foreign in (
        {"type": "function", "name": "ping", "parameters": {}, "strict": False},
        {**deferred[0], "description": "changed"},  # not as the request declared it
        DECLARED[2],  # declared, not deferred: loaded already
        {**crm, "description": "Other."},
        {**crm, "tools": [{"type": "function", "name": "always"}]},
        {**crm, "tools": []},
    ):
        with pytest.raises(ValueError, match="no deferred tool the request declares"):
            paths_of(foreign, DECLARED)
    with pytest.raises(ValueError, match="declared with credentials"):
        paths_of(DECLARED[-1], DECLARED)
