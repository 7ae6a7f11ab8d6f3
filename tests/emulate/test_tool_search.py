"""Client-executed tool search against the emulator: a scripted ``tool_search`` answer comes
out as a ``tool_search_call`` with ``execution: client``; the emulator refuses a request that
sends it back without its ``tool_search_output`` (rule ``tool-search-pairing``); and, with
the script the emulator page shows, turnwire's own client answers it with the deferred tools
it names, then runs the loaded tool, each request extending the one before it."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import openai
import pytest
import yaml

import turnwire
import turnwire.testing
from turnwire.emulate.script import script_from
from turnwire.errors import ConfigError

from ..conftest import REPO, make_container
from ..oracle import validate_body

ORDERS = {
    "type": "object",
    "properties": {"customer_id": {"type": "string"}},
    "required": ["customer_id"],
    "additionalProperties": False,
}
SEARCH = {"match": {"last_user": "(?i)owe"}, "tool_search": {"paths": ["crm"]}}
THREAD = f"""\
version: 1
model: gpt-5.4
hosted_tools:
  - {{type: tool_search, execution: client}}
  - type: namespace
    name: crm
    description: CRM tools.
    tools:
      - {{type: function, name: list_open_orders, defer_loading: true, parameters: {ORDERS}}}
messages:
  - {{id: u1, role: user, content: "What does customer 7 owe?", created_at: "2026-01-01T10:00:00Z"}}
"""
USER = {"role": "user", "content": "What does customer 7 owe?"}
TOOLS: list[Any] = [
    {"type": "tool_search", "execution": "client"},
    {
        "type": "namespace",
        "name": "crm",
        "description": "CRM tools.",
        "tools": [
            {
                "type": "function",
                "name": "list_open_orders",
                "defer_loading": True,
                "parameters": ORDERS,
            }
        ],
    },
]


def test_a_scripted_search_is_a_client_search_call_and_its_pairing_is_enforced():
    with turnwire.testing.emulator(script=[SEARCH]) as api:
        sdk = openai.OpenAI(base_url=api.base_url, api_key="x", max_retries=0)
        response = sdk.responses.create(model="gpt-5.4", input=[USER], tools=TOOLS, store=False)
        [call] = [item.model_dump(exclude_none=True) for item in response.output]
        assert (call["type"], call["execution"], call["arguments"]) == (
            "tool_search_call",
            "client",
            {"paths": ["crm"]},
        )
        assert call["call_id"]
        with pytest.raises(openai.BadRequestError) as refused:
            sdk.responses.create(model="gpt-5.4", input=[USER, call], tools=TOOLS, store=False)
        assert refused.value.status_code == 400
        assert "tool_search_output" in str(refused.value)
        answered = {
            "type": "tool_search_output",
            "call_id": call["call_id"],
            "execution": "client",
            "status": "completed",
            "tools": [TOOLS[1]],
        }
        sdk.responses.create(
            model="gpt-5.4", input=[USER, call, answered], tools=TOOLS, store=False
        )
        rules = [exchange.rule for exchange in api.emulator.exchanges]
    assert rules == [None, "tool-search-pairing", None]


def _page_script() -> Any:
    """The script of the emulator page's section on client-executed tool search."""
    page = (REPO / "docs" / "emulate.md").read_text(encoding="utf-8")
    section = page[page.index("### Client-executed tool search\n") :]
    return yaml.safe_load(section.split("```yaml\n", 1)[1].split("```", 1)[0])


def test_turnwire_answers_the_search_then_runs_the_loaded_tool(tmp_path: Path):
    path = tmp_path / "thread.yaml"
    path.write_text(THREAD)
    ran: list[str] = []
    with turnwire.testing.emulator(script=_page_script()) as api:
        result = turnwire.api.run(
            path,
            container=make_container(),
            base_url=api.base_url,
            api_key="x",
            handlers={"crm.list_open_orders": lambda customer_id: ran.append(customer_id) or "2"},
            save=True,
        )
        exchanges = list(api.emulator.exchanges)
    assert result.text == "Customer 7 owes two invoices."
    assert ran == ["7"]
    assert [(exchange.status, exchange.rule) for exchange in exchanges] == [(200, None)] * 3
    bodies = [exchange.json() for exchange in exchanges]
    for body in bodies:
        validate_body(body)
    for earlier, later in itertools.pairwise(bodies):
        assert later["input"][: len(earlier["input"])] == earlier["input"]
    [output] = [item for item in bodies[1]["input"] if item["type"] == "tool_search_output"]
    assert output["tools"] == [bodies[0]["tools"][1]]


def test_a_script_search_takes_paths_or_arguments_not_unknown_fields():
    script = script_from([{"tool_search": {"arguments": {"query": "orders"}, "call_id": "c1"}}])
    assert script.answers[0].tool_search is not None
    with pytest.raises(ConfigError) as refused:
        script_from([{"tool_search": {"path": ["crm"]}}])
    assert refused.value.path == "$.answers[0].tool_search"
    both = {"tool_search": {"paths": ["crm"], "arguments": {"query": "x"}}}
    with pytest.raises(ConfigError, match="both paths and arguments") as refused:
        script_from({"answers": [{"text": "hi"}], "default": both})
    assert refused.value.path == "$.default.tool_search"
