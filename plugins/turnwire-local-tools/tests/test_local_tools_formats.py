"""Each format on answers shaped like the models' own (model cards, chat templates, the
inference servers' parser docs), several calls, the prose kept; ``auto`` finds the same."""

from __future__ import annotations

from typing import Any

import pytest
from turnwire_local_tools import FORMATS, parse

from turnwire import Tool

WEATHER = Tool(
    name="get_weather",
    parameters={
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "days": {"type": "integer"},
            "hourly": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "zip": {"type": ["string", "null"]},
        },
        "required": ["city"],
    },
)
TIME = Tool(name="get_time", parameters={"type": "object", "properties": {"timezone": {}}})
TOOLS = (WEATHER, TIME)

PARIS = ("get_weather", {"city": "Paris"})
UTC = ("get_time", {"timezone": "UTC"})

# (format, text the model wrote, calls as (name, arguments[, id]), text that remains)
CASES: list[tuple[str, str, list[tuple[Any, ...]], str]] = [
    # hermes: Hermes 2 Pro / Hermes 3, Qwen2.5 and Qwen3 chat templates
    (
        "hermes",
        "I'll look that up.\n\n<tool_call>\n"
        '{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}\n'
        "</tool_call>",
        [("get_weather", {"city": "Paris", "unit": "celsius"})],
        "I'll look that up.",
    ),
    (
        "hermes",
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "get_time", "arguments": {"timezone": "UTC"}}\n</tool_call>',
        [PARIS, UTC],
        "",
    ),
    (
        "hermes",
        "Checking.\n<tool_call>\n"
        '{"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}\n'
        "</tool_call>\nI will report back.",
        [PARIS],
        "Checking.\n\nI will report back.",
    ),
    (
        "hermes",
        "<tool_call>\n{'name': 'get_weather', 'arguments': {'city': 'Paris', 'hourly': True}}\n"
        "</tool_call>",
        [("get_weather", {"city": "Paris", "hourly": True})],
        "",
    ),
    (
        "hermes",
        '<tool_call>{"name": "get_weather", "arguments": '
        '{"city": "São Paulo \\"centro\\"", "tags": ["東京", "</tool", "{", "🌧"]}}</tool_call>',
        [("get_weather", {"city": 'São Paulo "centro"', "tags": ["東京", "</tool", "{", "🌧"]})],
        "",
    ),
    (
        "hermes",
        '<tool_call>\n{"name": "get_time"}\n</tool_call>',
        [("get_time", {})],
        "",
    ),
    (
        "hermes",
        '<tool_call>{"type": "function", "function": {"name": "get_weather", '
        '"arguments": "{\\"city\\":\\"Paris\\"}"}}</tool_call>',
        [PARIS],
        "",
    ),
    # qwen3_coder: Qwen3-Coder's XML-ish template
    (
        "qwen3_coder",
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
        "<parameter=days>\n3\n</parameter>\n<parameter=hourly>\ntrue\n</parameter>\n"
        '<parameter=tags>\n["rain", "wind"]\n</parameter>\n</function>\n</tool_call>',
        [("get_weather", {"city": "Paris", "days": 3, "hourly": True, "tags": ["rain", "wind"]})],
        "",
    ),
    (
        "qwen3_coder",
        "Two lookups.\n<tool_call>\n<function=get_weather>\n<parameter=city>\n"
        "  New York <NY>\nsecond line\n</parameter>\n<parameter=zip>\n10001\n</parameter>\n"
        "</function>\n<function=get_time>\n<parameter=timezone>\nUTC\n</parameter>\n"
        "</function>\n</tool_call>",
        [("get_weather", {"city": "  New York <NY>\nsecond line", "zip": "10001"}), UTC],
        "Two lookups.",
    ),
    (
        "qwen3_coder",
        "<function=get_time>\n<parameter=timezone>\nUTC\n</parameter>\n</function>",
        [UTC],
        "",
    ),
    (
        "qwen3_coder",
        "<function=get_time>\n<parameter=timezone>\n5\n</parameter>\n</function>",
        [("get_time", {"timezone": "5"})],  # an untyped value stays text
        "",
    ),
    (
        "qwen3_coder",
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
        "<parameter=days>\nthree\n</parameter>\n</function>\n</tool_call>",
        [("get_weather", {"city": "Paris", "days": "three"})],
        "",
    ),
    # llama3_json: Llama 3.1 / 3.2 / 3.3 JSON tool calling
    (
        "llama3_json",
        '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}<|eom_id|>',
        [PARIS],
        "",
    ),
    (
        "llama3_json",
        '{"name": "get_weather", "parameters": {"city": "Paris", "unit": "celsius"}}',
        [("get_weather", {"city": "Paris", "unit": "celsius"})],
        "",
    ),
    (
        "llama3_json",
        '{"name": "get_weather", "parameters": {"city": "Paris"}}; '
        '{"type": "function", "name": "get_time", "parameters": {"timezone": "UTC"}}',
        [PARIS, UTC],
        "",
    ),
    (
        "llama3_json",
        '{"name": "get_time", "parameters": {"timezone": "UTC"}};\n',
        [UTC],
        "",
    ),
    (
        "llama3_json",
        'Let me check.<|python_tag|>{"name": "get_time", "arguments": {"timezone": "UTC"}}',
        [UTC],
        "Let me check.",
    ),
    (
        "llama3_json",
        '<function=get_weather>{"city": "Paris"}</function>',
        [PARIS],
        "",
    ),
    # mistral: v3 tokenizers (Mistral 7B v0.3, Nemo), then v11+ (Small 3.2, Devstral, Magistral)
    (
        "mistral",
        '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "D681PevKs"}]',
        [("get_weather", {"city": "Paris"}, "D681PevKs")],
        "",
    ),
    (
        "mistral",
        '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_time[ARGS]'
        '{"timezone": "UTC"}',
        [PARIS, UTC],
        "",
    ),
    (
        "mistral",
        "Let me check the weather for you."
        '[TOOL_CALLS]get_weather[CALL_ID]a1B2c3D4e[ARGS]{"city": "Paris"}</s>',
        [("get_weather", {"city": "Paris"}, "a1B2c3D4e")],
        "Let me check the weather for you.",
    ),
    (
        "mistral",
        '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "same12345"}, '
        '{"name": "get_time", "arguments": {"timezone": "UTC"}, "id": "same12345"}]',
        [PARIS, UTC],  # a repeated id is no id: the client makes unique ones
        "",
    ),
    # phi: Phi-4-mini
    (
        "phi",
        '<|tool_call|>[{"type": "function", "name": "get_weather", "arguments": {"city": "Paris"}}]'
        "<|/tool_call|>",
        [PARIS],
        "",
    ),
    (
        "phi",
        'Sure. functools[{"name": "get_weather", "arguments": {"city": "Paris"}}, '
        '{"name": "get_time", "arguments": {"timezone": "UTC"}}]',
        [PARIS, UTC],
        "Sure.",
    ),
    # gpt_oss: OpenAI harmony, as gpt-oss writes it when the server does not parse it
    (
        "gpt_oss",
        "<|channel|>analysis<|message|>User asks for the weather in Paris. Use get_weather."
        "<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather "
        '<|constrain|>json<|message|>{"city":"Paris"}<|call|>',
        [PARIS],
        "",
    ),
    (
        "gpt_oss",
        "<|start|>assistant to=functions.get_time<|channel|>commentary json<|message|>"
        '{"timezone": "UTC"}<|call|>',
        [UTC],
        "",
    ),
    (
        "gpt_oss",
        "<|channel|>commentary<|message|>Checking the weather and the time now.<|end|>"
        "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
        '<|message|>{"city":"Paris"}<|call|><|start|>assistant<|channel|>commentary '
        'to=functions.get_time <|constrain|>json<|message|>{"timezone":"UTC"}',
        [PARIS, UTC],
        "Checking the weather and the time now.",
    ),
    # gemma: Gemma's function-calling prompts ask for ```tool_code blocks
    (
        "gemma",
        'I\'ll check.\n```tool_code\nget_weather(city="Paris", unit="celsius")\n```',
        [("get_weather", {"city": "Paris", "unit": "celsius"})],
        "I'll check.",
    ),
    (
        "gemma",
        '```tool_code\n[get_weather(city="Paris"), get_time(timezone="UTC")]\n```',
        [PARIS, UTC],
        "",
    ),
    (
        "gemma",
        "```tool_code\nprint(get_weather(city='Paris'))\nget_time(timezone='UTC')\n```\n"
        "One moment.",
        [PARIS, UTC],
        "One moment.",
    ),
    # pythonic: Llama 3.2 / Llama 4 pythonic tool calling
    (
        "pythonic",
        '[get_weather(city="San Francisco", days=3), get_time(timezone="America/Los_Angeles")]',
        [
            ("get_weather", {"city": "San Francisco", "days": 3}),
            ("get_time", {"timezone": "America/Los_Angeles"}),
        ],
        "",
    ),
    (
        "pythonic",
        '<|python_start|>[get_weather(city="Paris")]<|python_end|>',
        [PARIS],
        "",
    ),
    (
        "pythonic",
        "Sure, one moment. [get_weather(city='Paris', tags=['rain', \"it's\"], hourly=true, "
        "zip=None, days=-1)]",
        [
            (
                "get_weather",
                {
                    "city": "Paris",
                    "tags": ["rain", "it's"],
                    "hourly": True,
                    "zip": None,
                    "days": -1,
                },
            )
        ],
        "Sure, one moment.",
    ),
    # bare_pythonic: calls written as statements, for declared names only
    ("bare_pythonic", 'get_weather(city="Paris")', [PARIS], ""),
    (
        "bare_pythonic",
        'Calling both:\n```python\nget_weather(city="Paris")\nget_time(timezone="UTC")\n```',
        [PARIS, UTC],
        "Calling both:",
    ),
    ("bare_pythonic", "Let me see: get_time()", [("get_time", {})], "Let me see:"),
    # loose_keyed: a call-shaped JSON object anywhere
    (
        "loose_keyed",
        'Here is the call:\n```json\n{"tool": "get_weather", "args": {"city": "Paris"}}\n```',
        [PARIS],
        "Here is the call:",
    ),
    (
        "loose_keyed",
        'I will call {"name": "get_weather", "arguments": {"city": "Paris"}} now.',
        [PARIS],
        "I will call\n\nnow.",
    ),
    (
        "loose_keyed",
        '[{"tool": "get_weather", "parameters": {"city": "Paris"}}, '
        '{"tool": "get_time", "parameters": {"timezone": "UTC"}}]',
        [PARIS, UTC],
        "",
    ),
    (
        "loose_keyed",
        "Use {curly} braces [1]. "
        '{"tool_calls": [{"tool": "get_time", "args": {"timezone": "UTC"}}]}',
        [UTC],
        "Use {curly} braces [1].",
    ),
]


def _expected(calls: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return [(*call, None) if len(call) == 2 else call for call in calls]


def _found(text: str, fmt: str, tools: tuple[Tool, ...] = TOOLS) -> tuple[list[Any], str] | None:
    result = parse(text, tools, format=fmt)
    if result is None:
        return None
    return [(c.name, c.arguments, c.call_id) for c in result.calls], result.text


@pytest.mark.parametrize(("fmt", "text", "calls", "rest"), CASES)
def test_each_format_reads_its_models_answers(fmt, text, calls, rest):
    assert _found(text, fmt) == (_expected(calls), rest)


@pytest.mark.parametrize(("fmt", "text", "calls", "rest"), CASES)
def test_auto_reads_them_the_same(fmt, text, calls, rest):
    assert _found(text, "auto") == (_expected(calls), rest)


@pytest.mark.parametrize(("fmt", "text", "calls", "rest"), CASES)
def test_none_reads_nothing(fmt, text, calls, rest):
    assert parse(text, TOOLS, format="none") is None


def test_every_format_has_cases():
    assert {case[0] for case in CASES} == set(FORMATS) - {"auto", "none"}


OTHER_FORMAT = {
    "hermes": "mistral",
    "qwen3_coder": "hermes",
    "mistral": "hermes",
    "phi": "hermes",
    "gpt_oss": "hermes",
    "gemma": "hermes",
}


@pytest.mark.parametrize(
    ("fmt", "text"), [(fmt, text) for fmt, text, _, _ in CASES if fmt in OTHER_FORMAT]
)
def test_a_marked_format_is_not_read_as_another(fmt, text):
    # Formats without markup (pythonic, bare_pythonic, loose_keyed, llama3_json) may overlap.
    assert parse(text, TOOLS, format=OTHER_FORMAT[fmt]) is None


def test_harmony_analysis_is_dropped_and_final_kept():
    text = (
        "<|channel|>analysis<|message|>secret reasoning<|end|>"
        "<|start|>assistant<|channel|>final<|message|>Let me fetch it.<|return|>"
        "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
        '<|message|>{"city": "Paris"}<|call|>'
    )
    found = parse(text, TOOLS, format="gpt_oss")
    assert found is not None and found.text == "Let me fetch it."
    assert "secret" not in found.text


def test_without_declared_tools_markup_may_name_any_tool_and_plain_text_none():
    hermes = '<tool_call>{"name": "lookup", "arguments": {"q": "x"}}</tool_call>'
    assert _found(hermes, "auto", ()) == ([("lookup", {"q": "x"}, None)], "")
    assert parse('[lookup(q="x")]', (), format="pythonic") is None
    assert parse('lookup(q="x")', (), format="bare_pythonic") is None
    assert parse('{"tool": "lookup", "args": {}}', (), format="loose_keyed") is None
    assert parse('{"name": "lookup", "parameters": {}}', (), format="llama3_json") is None


def test_turnwires_artifact_tools_count_as_declared():
    # The client declares these itself when a thread shows artifact handles.
    text = '<tool_call>{"name": "artifact_head", "arguments": {"callId": "c1", "n": 5}}</tool_call>'
    assert _found(text, "auto") == ([("artifact_head", {"callId": "c1", "n": 5}, None)], "")


def test_several_calls_up_to_the_limit_and_not_beyond():
    block = '<tool_call>{"name": "get_time", "arguments": {}}</tool_call>\n'
    found = parse(block * 3, TOOLS, max_calls=3)
    assert found is not None and len(found.calls) == 3
    assert parse(block * 4, TOOLS, max_calls=3) is None


def test_a_text_longer_than_max_chars_is_not_read():
    text = '<tool_call>{"name": "get_time", "arguments": {}}</tool_call>'
    assert parse(text, TOOLS, max_chars=len(text)) is not None
    assert parse(text + " ", TOOLS, max_chars=len(text)) is None


def test_an_unknown_format_is_an_error():
    with pytest.raises(ValueError, match="unknown format 'xml'"):
        parse("x", TOOLS, format="xml")
