"""The render context: values passed per dispatch that stages may ask for by name."""

from __future__ import annotations

import json
from typing import Any

import turnwire
from turnwire import hookimpl
from turnwire.stages.system_prompt import fill_template

from .client.server import Reply, ScriptedServer, recorded
from .conftest import make_container, thread, turnwire_process, user

TEMPLATE = {"render": {"system_prompt_template": True}}
PROMPT = "Today is {date}. You help {user}. Literal {{braces}}, {missing} and {0.__class__}."


def test_fill_template_replaces_names_only():
    filled = fill_template(PROMPT, {"date": "2026-12-01", "user": "Ana {date}"})
    assert filled == (
        "Today is 2026-12-01. You help Ana {date}. Literal {{braces}}, {missing} and {0.__class__}."
    )


def test_the_system_prompt_template_uses_the_context():
    t = thread(model="gpt-5", system_prompt=PROMPT, messages=[user()])
    context = {"date": "2026-12-01", "user": "Ana"}
    body = turnwire.render(t, container=make_container(TEMPLATE), render_context=context).json
    assert body["instructions"].startswith("Today is 2026-12-01. You help Ana.")
    # Off by default: the prompt is sent as written.
    plain = turnwire.render(t, container=make_container(), render_context=context).json
    assert plain["instructions"].startswith("Today is {date}.")


def test_a_plugin_stage_may_ask_for_it_by_name():
    class Greeting:
        @hookimpl
        def render_system_prompt(self, system_prompt: Any, render_context: Any) -> str:
            return f"{system_prompt} Greet {render_context.get('user', 'nobody')}."

    t = thread(model="gpt-5", system_prompt="Be kind.", messages=[user()])
    container = make_container(extra_plugins=[Greeting()])
    body = turnwire.render(t, container=container, render_context={"user": "Ana"}).json
    assert body["instructions"] == "Be kind. Greet Ana."
    assert turnwire.render(t, container=container).json["instructions"] == (
        "Be kind. Greet nobody."
    )


def test_every_request_of_a_run_gets_the_context():
    t = thread(model="gpt-5", system_prompt="Help {user}.", messages=[user()])
    with ScriptedServer([Reply.sse(recorded("text_simple_gpt-4o-mini.sse"))]) as server:
        turnwire.run(
            t,
            container=make_container(TEMPLATE),
            base_url=server.base_url,
            render_context={"user": "Ana"},
        )
    assert server.requests[0].json["instructions"] == "Help Ana."


def test_context_on_the_command_line(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(
        json.dumps(
            {
                "version": 1,
                "model": "gpt-5",
                "system_prompt": "Help {user} on {date}.",
                "messages": [user()],
            }
        )
    )
    done = turnwire_process(
        "render",
        str(path),
        "--set",
        "render.system_prompt_template=true",
        "--render-context",
        "user=Ana",
        "--render-context",
        "date=2026-12-01",
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["instructions"] == "Help Ana on 2026-12-01."
    bad = turnwire_process("render", str(path), "--render-context", "no-equals")
    assert bad.returncode == 2
    assert bad.stderr.startswith("error: E_INVALID_OPENAI_RESPONSES_OPTIONS: --render-context 'no-equals'")


def test_content_stages_may_ask_for_it_too_and_a_warm_render_sees_each_context():
    class Signed:
        @hookimpl
        def render_standing_instructions(
            self, standing_instructions: Any, render_context: Any
        ) -> str:
            return f"rules for {render_context.get('user', 'nobody')}"

        @hookimpl
        def render_timeline_message(self, message: Any, render_context: Any) -> Any:
            return None  # defers to the built-in: asking for the context changes nothing

    t = thread(model="gpt-5", standing_instructions=["x"], messages=[user()])
    container = make_container(extra_plugins=[Signed()])
    first = turnwire.render(t, container=container, render_context={"user": "Ana"}).json
    second = turnwire.render(t, container=container, render_context={"user": "Bo"}).json
    assert "rules for Ana" in first["instructions"]
    assert "rules for Bo" in second["instructions"]
    assert first["input"] == second["input"]
