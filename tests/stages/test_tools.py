"""tools_to_wire and description_to_json_schema."""

from __future__ import annotations

from types import SimpleNamespace

from turnwire import hookimpl
from turnwire.stages.tools import description_to_json_schema

from ..conftest import render_body, thread, user


def test_empty_descriptions_become_an_empty_object_schema():
    assert description_to_json_schema(description=None) == {"type": "object", "properties": {}}
    assert description_to_json_schema(description={}) == {"type": "object", "properties": {}}
    given = {"properties": {"q": {"type": "string"}}, "required": ["q"]}
    assert description_to_json_schema(description=given) == {"type": "object", **given}


def test_visible_tools_are_declared_with_strict_always_present():
    t = thread(
        messages=[user()],
        tools=[
            {"name": "a", "description": "A"},
            {"name": "b", "hidden": True},
            {
                "name": "c",
                "strict": True,
                "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
            },
        ],
    )
    tools = render_body(t)["tools"]
    assert tools == [
        {
            "type": "function",
            "name": "a",
            "parameters": {"type": "object", "properties": {}},
            "strict": False,
            "description": "A",
        },
        {
            "type": "function",
            "name": "c",
            "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
            "strict": True,
        },
    ]


def test_the_configured_strict_flag_applies_to_tools_without_their_own():
    t = thread(messages=[user()], tools=[{"name": "a"}])
    assert render_body(t, {"render": {"strict": True}})["tools"][0]["strict"] is True


def test_a_tool_without_a_flag_is_strict_exactly_when_its_schema_qualifies():
    closed = {
        "type": "object",
        "properties": {"q": {"type": "string"}, "n": {"type": ["integer", "null"]}},
        "required": ["q", "n"],
        "additionalProperties": False,
    }
    optional = {**closed, "required": ["q"]}  # not every property required
    opened = {key: value for key, value in closed.items() if key != "additionalProperties"}
    untyped = {**closed, "properties": {"q": {}, "n": {"type": "integer"}}}
    t = thread(
        messages=[user()],
        tools=[
            {"name": "closed", "parameters": closed},
            {"name": "optional", "parameters": optional},
            {"name": "opened", "parameters": opened},
            {"name": "untyped", "parameters": untyped},
            {"name": "empty"},
            {"name": "own", "parameters": closed, "strict": False},
        ],
    )
    flags = [tool["strict"] for tool in render_body(t)["tools"]]
    assert flags == [True, False, False, False, False, False]
    # render.strict decides for every tool without its own flag
    forced = render_body(t, {"render": {"strict": True}})["tools"]
    assert [tool["strict"] for tool in forced] == [True, True, True, True, True, False]
    never = render_body(t, {"render": {"strict": False}})["tools"]
    assert [tool["strict"] for tool in never] == [False] * 6
    # the schema goes as it is either way
    assert render_body(t)["tools"][0]["parameters"] == closed


def test_hosted_tools_follow_the_function_tools_as_declared():
    hosted = [
        {"type": "image_generation", "output_format": "webp"},
        {"type": "code_interpreter", "container": "cntr_123"},
    ]
    t = thread(
        messages=[user()], tools=[{"name": "a"}, {"name": "b", "hidden": True}], hosted_tools=hosted
    )
    body = render_body(t)
    assert [tool["type"] for tool in body["tools"]] == ["function", *(h["type"] for h in hosted)]
    assert body["tools"][1:] == hosted
    assert body["include"] == ["code_interpreter_call.outputs"]
    # Hosted tools alone are declarations too: `tools` is there, never empty.
    assert render_body(thread(messages=[user()], hosted_tools=hosted[:1]))["tools"] == hosted[:1]


def test_the_configured_include_is_kept_and_not_repeated():
    t = thread(messages=[user()], hosted_tools=[{"type": "code_interpreter", "container": "c"}])
    settings = {
        "request": {"include": ["code_interpreter_call.outputs", "file_search_call.results"]}
    }
    assert render_body(t, settings)["include"] == [
        "code_interpreter_call.outputs",
        "file_search_call.results",
    ]


def test_hook_tools_to_wire():
    """A plugin declares the request's tools, given the thread's."""
    seen = []

    @hookimpl
    def tools_to_wire(tools):
        seen.append([t.name for t in tools])
        return ()

    t = thread(messages=[user()], tools=[{"name": "a"}, {"name": "b", "hidden": True}])
    body = render_body(t, extra_plugins=[SimpleNamespace(tools_to_wire=tools_to_wire)])
    assert "tools" not in body
    assert seen and "a" in seen[0]
    assert [tool["name"] for tool in render_body(t)["tools"]] == ["a"]


def test_hook_description_to_json_schema():
    """A plugin turns a tool's description into its parameters schema."""

    @hookimpl
    def description_to_json_schema(description):
        return {"type": "object", "properties": {}, "description": f"keys: {sorted(description)}"}

    t = thread(messages=[user()], tools=[{"name": "a", "parameters": {"type": "object"}}])
    plugin = SimpleNamespace(description_to_json_schema=description_to_json_schema)
    (tool,) = render_body(t, extra_plugins=[plugin])["tools"]
    assert tool["parameters"] == {
        "type": "object",
        "properties": {},
        "description": "keys: ['type']",
    }
