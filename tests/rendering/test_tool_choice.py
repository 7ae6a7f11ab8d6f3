"""``request.tool_choice``: the whole union of the API's types, each checked against the tools
the request declares (rule ``tool-choice-declared``), ``allowed_tools`` among them."""

from __future__ import annotations

from typing import Any

import pytest

import turnwire
from turnwire.errors import ConfigError, PreflightError
from turnwire.rendering.preflight import preflight

from ..conftest import make_container, render_body


def _function(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": f"The {name} tool.",
        "parameters": {
            "type": "object",
            "properties": {},
            "required": [],
            "additionalProperties": False,
        },
    }


THREAD = {
    "version": 1,
    "model": "gpt-5",
    "tools": [_function("lookup"), _function("refund")],
    "hosted_tools": [{"type": "image_generation"}],
    "messages": [
        {"id": "u1", "role": "user", "content": "hi", "created_at": "2026-01-01T10:00:00Z"}
    ],
}


def _render(choice: Any) -> dict[str, Any]:
    return render_body(THREAD, {"request": {"tool_choice": choice}})


def test_allowed_tools_is_sent_and_keeps_the_declarations_as_they_were() -> None:
    only_lookup = {
        "type": "allowed_tools",
        "mode": "required",
        "tools": [{"type": "function", "name": "lookup"}],
    }
    both = {
        "type": "allowed_tools",
        "mode": "auto",
        "tools": [
            {"type": "function", "name": "lookup"},
            {"type": "function", "name": "refund"},
            {"type": "image_generation"},
        ],
    }
    first, second = _render(only_lookup), _render(both)
    assert first["tool_choice"] == only_lookup and second["tool_choice"] == both
    # What changes is the choice, never the tools: the prompt cache keeps the declarations.
    assert first["tools"] == second["tools"] == render_body(THREAD)["tools"]


@pytest.mark.parametrize(
    "choice",
    [
        {"type": "image_generation"},
        {"type": "function", "name": "refund"},
        "required",
    ],
)
def test_a_choice_of_a_declared_tool_is_sent_as_given(choice: Any) -> None:
    assert _render(choice)["tool_choice"] == choice


@pytest.mark.parametrize(
    ("choice", "where"),
    [
        (
            {
                "type": "allowed_tools",
                "mode": "auto",
                "tools": [
                    {"type": "function", "name": "lookup"},
                    {"type": "function", "name": "nope"},
                ],
            },
            "tool_choice.tools[1] names function 'nope'",
        ),
        (
            {"type": "allowed_tools", "mode": "auto", "tools": [{"type": "code_interpreter"}]},
            "tool_choice.tools[0] names the code_interpreter tool",
        ),
        ({"type": "custom", "name": "sql"}, "tool_choice names custom 'sql'"),
        ({"type": "mcp", "server_label": "docs"}, "tool_choice names mcp 'docs'"),
        ({"type": "shell"}, "tool_choice names the shell tool"),
        ({"type": "apply_patch"}, "tool_choice names the apply_patch tool"),
        ({"type": "file_search"}, "tool_choice names the file_search tool"),
    ],
)
def test_a_choice_naming_a_tool_the_request_does_not_declare_is_refused(
    choice: Any, where: str
) -> None:
    with pytest.raises(PreflightError) as caught:
        turnwire.render(
            turnwire.load_thread(THREAD),
            container=make_container({"request": {"tool_choice": choice}}),
        )
    assert caught.value.rule == "tool-choice-declared"
    assert where in str(caught.value)


def test_the_rule_reads_a_decoded_body_too() -> None:
    body = render_body(THREAD)
    preflight({**body, "tool_choice": {"type": "image_generation"}})
    with pytest.raises(PreflightError, match="tool-choice-declared"):
        preflight({**body, "tool_choice": {"type": "custom", "name": "sql"}})


@pytest.mark.parametrize(
    ("choice", "path"),
    [
        (
            {"type": "allowed_tools", "mode": "auto", "tools": [{"type": "function"}]},
            "$.request.tool_choice",
        ),
        (
            {"type": "allowed_tools", "mode": "sometimes", "tools": [{"type": "shell"}]},
            "$.request.tool_choice.mode",
        ),
        ({"type": "allowed_tools", "mode": "auto", "tools": []}, "$.request.tool_choice.tools"),
        ({"type": "mcp"}, "$.request.tool_choice"),
        ({"type": "teleport"}, "$.request.tool_choice"),
    ],
)
def test_a_malformed_choice_is_refused_at_load_naming_it(choice: Any, path: str) -> None:
    with pytest.raises(ConfigError) as caught:
        make_container({"request": {"tool_choice": choice}}).settings()
    assert caught.value.path.startswith(path), caught.value.path


def test_the_union_is_the_official_types_one() -> None:
    """Every kind of ``tool_choice`` the installed ``openai`` types name has its Struct."""
    import typing

    from openai.types.responses import response_create_params

    from turnwire.wire.request import ToolChoice

    official: set[str] = set()
    for member in typing.get_args(response_create_params.ToolChoice):
        if typing.get_origin(member) is typing.Literal:
            official.update(typing.get_args(member))  # the modes
        else:
            official.update(typing.get_args(typing.get_type_hints(member)["type"]))
    ours: set[str] = set()
    for member in typing.get_args(ToolChoice):
        tag = getattr(getattr(member, "__struct_config__", None), "tag", None)
        ours.update([tag] if tag else typing.get_args(member))
    assert ours == official
