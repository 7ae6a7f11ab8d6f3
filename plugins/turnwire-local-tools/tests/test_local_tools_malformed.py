"""Malformed answers are no call and never an exception; huge and adversarial ones return."""

from __future__ import annotations

import json
import keyword
import string

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_local_tools_formats import TOOLS
from turnwire_local_tools import FORMATS, parse

from turnwire import Tool

# (format, text): each is no call, read by its own format and by auto.
MALFORMED = [
    # hermes
    ("hermes", '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}'),
    ("hermes", '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"</tool_call>'),
    ("hermes", '<tool_call>{"name": "send_money", "arguments": {"to": "me"}}</tool_call>'),
    ("hermes", '<tool_call>{"name": "get_weather", "arguments": ["Paris"]}</tool_call>'),
    ("hermes", '<tool_call>{"name": "get_weather", "arguments": "\\"Paris\\""}</tool_call>'),
    ("hermes", '<tool_call>{"name": "get_weather", "arguments": "{\\"city\\": 1"}</tool_call>'),
    ("hermes", '<tool_call>{"name": ["get_weather"], "arguments": {}}</tool_call>'),
    ("hermes", '<tool_call>"get_weather"</tool_call>'),
    ("hermes", "<tool_call></tool_call>"),
    ("hermes", '<tool_call><tool_call>{"name": "get_time", "arguments": {}}</tool_call>'),
    ("hermes", 'stray </tool_call> <tool_call>{"name": "get_time", "arguments": {}}</tool_call>'),
    (
        "hermes",
        '<tool_call>{"name": "get_time", "arguments": {}}</tool_call>'
        "<tool_call>{'name': 'get_time', 'arguments': {'x': __import__('os')}}</tool_call>",
    ),
    ("hermes", '<tool_call>{"name": "get_weather", "arguments": {"city": "\\ud800"}}</tool_call>'),
    ("hermes", "I can't use <tool_call> here."),
    # qwen3_coder
    ("qwen3_coder", "<tool_call>\n<function=get_time>\n<parameter=timezone>\nUTC\n</parameter>\n"),
    ("qwen3_coder", "<function=get_time>\n<parameter=timezone>\nUTC\n</function>"),
    ("qwen3_coder", "<function=get_time>\nchatter\n<parameter=timezone>UTC</parameter></function>"),
    (
        "qwen3_coder",
        "<function=get_time><parameter=timezone>UTC</parameter>"
        "<parameter=timezone>CET</parameter></function>",
    ),
    ("qwen3_coder", "<function=rm_rf>\n<parameter=path>\n/\n</parameter>\n</function>"),
    ("qwen3_coder", "<function=get_time><function=get_time></function>"),
    ("qwen3_coder", "<tool_call>\n<function=get_time>\n</function>\n</tool_call>\n<tool_call>"),
    # llama3_json
    ("llama3_json", '<|python_tag|>brave_search.call(query="weather in Paris")'),
    ("llama3_json", '{"name": "get_weather", "parameters": {"city": "Paris"}, "confidence": 0.9}'),
    ("llama3_json", '{"name": "get_weather", "parameters": ["Paris"]}'),
    ("llama3_json", '{"name": "get_weather", "parameters": {"city": "Paris"}'),
    ("llama3_json", '{"name": "get_weather", "parameters": {}} {"name": "nope", "parameters": {}}'),
    # mistral
    ("mistral", '[TOOL_CALLS]get_weather{"city": "Paris"}'),
    ("mistral", '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}'),
    ("mistral", '[TOOL_CALLS]get_weather[ARGS]"Paris"'),
    ("mistral", '[TOOL_CALLS]delete_all[ARGS]{"really": true}'),
    ("mistral", "[TOOL_CALLS]"),
    ("mistral", "[TOOL_CALLS]get_time[ARGS]{} then [TOOL_CALLS] in prose"),
    # phi
    ("phi", '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]'),
    ("phi", 'functools["get_weather"]'),
    ("phi", 'functools[{"name": "get_weather", "arguments": {"city": "Paris"}}'),
    ("phi", '<|tool_call|>[{"name": "get_weather", "arguments": 42}]<|/tool_call|>'),
    # gpt_oss
    (
        "gpt_oss",
        "<|channel|>commentary to=browser.search <|constrain|>json"
        '<|message|>{"query": "weather Paris"}<|call|>',
    ),
    ("gpt_oss", '<|channel|>commentary to=functions.get_weather json<|message|>{"city": "Par'),
    ("gpt_oss", "<|channel|>commentary to=functions.get_weather json<|message|>[1, 2]<|call|>"),
    ("gpt_oss", "<|channel|>commentary to=functions.launch json<|message|>{}<|call|>"),
    ("gpt_oss", "<|start|>assistant<|channel|>commentary to=functions.get_weather<|end|>"),
    ("gpt_oss", "<|channel|>analysis<|message|>thinking only<|end|>"),
    # gemma
    ("gemma", '```tool_code\nget_weather(city="Paris")\n'),
    ("gemma", '```tool_code\nget_weather("Paris")\n```'),
    ("gemma", '```tool_code\nget_weather(city=os.environ["HOME"])\n```'),
    ("gemma", "```tool_code\nimport os\n```"),
    ("gemma", "```tool_code\nget_weather(**{'city': 'Paris'})\n```"),
    ("gemma", "```tool_code\nrun_shell(cmd='ls')\n```"),
    ("gemma", "```tool_code\n\n```"),
    ("gemma", "```tool_code\nget_weather(city='Paris'\n```"),
    # pythonic
    ("pythonic", '[get_weather(city="Paris"), unknown_tool(x=1)]'),
    ("pythonic", '[get_weather(city=open("/etc/passwd").read())]'),
    ("pythonic", '[get_weather(city="Paris")'),
    ("pythonic", '[get_weather("Paris")]'),
    ("pythonic", '[get_weather(city=f"{secret}")]'),
    ("pythonic", "[get_weather(city={1, 2})]"),
    ("pythonic", '[get_weather(city=b"Paris")]'),
    ("pythonic", "[get_weather(city='Paris', city='Rome')]"),
    # bare_pythonic
    ("bare_pythonic", "get_weather(city)"),
    ("bare_pythonic", 'get_weather(city="Paris"'),
    ("bare_pythonic", "get_weather(city=lambda: 1)"),
    ("bare_pythonic", "get_weather(city='Paris', 2)"),
    ("bare_pythonic", "get_time() and get_weather(city=get_time())"),
    # loose_keyed
    ("loose_keyed", '{"tool": "get_weather", "args": {"city": "Paris"}'),
    ("loose_keyed", '{"tool": "format_disk", "args": {}}'),
    ("loose_keyed", '{"tool": "get_weather", "args": "Paris"}'),
    ("loose_keyed", '{"tool": "get_weather", "args": {"city": "Paris"}, "confidence": 1}'),
    ("loose_keyed", '{"tool": "get_weather", "name": "get_time", "args": {}}'),
    ("loose_keyed", '[{"tool": "get_weather", "args": {}}, {"note": "not a call"}]'),
    ("loose_keyed", "{'tool': 'get_weather', 'args': {'city': 'Paris'}}"),
]


@pytest.mark.parametrize(("fmt", "text"), MALFORMED)
def test_malformed_answers_are_no_call(fmt, text):
    assert parse(text, TOOLS, format=fmt) is None


@pytest.mark.parametrize(("fmt", "text"), MALFORMED)
def test_malformed_answers_are_no_call_for_auto_either(fmt, text):
    assert parse(text, TOOLS, format="auto") is None


def test_every_format_has_malformed_cases():
    assert {fmt for fmt, _ in MALFORMED} == set(FORMATS) - {"auto", "none"}


def test_llama3_json_is_the_whole_answer_and_loose_keyed_reads_prose():
    text = '{"name": "get_weather", "parameters": {"city": "Paris"}} and then I add prose'
    assert parse(text, TOOLS, format="llama3_json") is None
    found = parse(text, TOOLS, format="auto")  # loose_keyed, last in auto's order
    assert found is not None and found.text == "and then I add prose"
    assert parse(text, TOOLS, format="loose_keyed") == found


def test_a_half_broken_block_is_not_half_read_by_a_looser_format():
    text = (
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>\n'
        "<tool_call>{broken</tool_call>"
    )
    assert parse(text, TOOLS, format="auto") is None
    assert parse(text, TOOLS, format="loose_keyed") is not None  # what auto refuses to do


def test_plain_answers_are_no_call():
    for text in (
        "The weather in Paris is sunny, 21 °C.",
        "Use a dict like {'a': 1} or a list [1, 2, 3] (see [1]).",
        'JSON looks like {"key": "value"}.',
        "In Python, call print(x) to show x.",
        "",
        "   \n",
    ):
        assert parse(text, TOOLS, format="auto") is None, text


MEGABYTE = 1 << 20
ADVERSARIAL = [
    "<tool_call>" * (MEGABYTE // 11),
    "<tool_call>{" * (MEGABYTE // 12) + "</tool_call>",
    "<tool_call>" + "[" * MEGABYTE + "]" * 10 + "</tool_call>",
    "[" * MEGABYTE,
    "{" * MEGABYTE,
    "[" * (MEGABYTE // 2) + "]" * (MEGABYTE // 2),
    '{"a":' * (MEGABYTE // 5),
    "(" * MEGABYTE,
    '"' * MEGABYTE,
    "\\" * MEGABYTE,
    "a" * MEGABYTE,
    " " * MEGABYTE + "get_weather(",
    "[get_weather(" * (MEGABYTE // 13),
    "get_weather(" * (MEGABYTE // 12),
    "get_weather(city=" + "[" * (MEGABYTE // 2) + "]" * (MEGABYTE // 2) + ")",
    "x(" * (MEGABYTE // 2),
    '{"tool": ' * (MEGABYTE // 9),
    "[1]" * (MEGABYTE // 3),
    '{"tool": "get_time", "args": {}}' * (MEGABYTE // 32),
    '<tool_call>{"name": "get_time", "arguments": {}}</tool_call>' * (MEGABYTE // 60),
    "<|channel|>x" * (MEGABYTE // 12),
    "<|message|>" * (MEGABYTE // 11),
    "<|start|>" * (MEGABYTE // 9),
    "```tool_code" * (MEGABYTE // 12),
    "```tool_code\n" + "get_time()\n" * (MEGABYTE // 11) + "```",
    "[TOOL_CALLS]" * (MEGABYTE // 12),
    "[TOOL_CALLS]x" * (MEGABYTE // 13),
    "[TOOL_CALLS]get_time[ARGS]{}" * (MEGABYTE // 26),
    "<function=" * (MEGABYTE // 10),
    "<function=get_time>" + "<parameter=" * (MEGABYTE // 11) + "</function>",
    "<|python_tag|>" + '{"name": "get_time", "parameters": {}};' * (MEGABYTE // 40),
    "functools[" * (MEGABYTE // 10),
    "<|tool_call|>" * (MEGABYTE // 13),
    "'" * MEGABYTE,
    "\n```json\n" * (MEGABYTE // 9),
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("index", range(len(ADVERSARIAL)))
def test_megabyte_adversarial_answers_return(fmt, index):
    text = ADVERSARIAL[index]
    found = parse(text, TOOLS, format=fmt, max_chars=2 * MEGABYTE)
    assert found is None  # none is a well-formed answer of at most 32 calls


def test_a_megabyte_answer_is_not_read_by_default():
    valid = '<tool_call>{"name": "get_time", "arguments": {}}</tool_call>'
    assert parse(valid + " " * MEGABYTE, TOOLS) is None
    assert parse(valid + " " * MEGABYTE, TOOLS, max_chars=2 * MEGABYTE) is not None


FRAGMENTS = [
    "<tool_call>",
    "</tool_call>",
    "<function=",
    "</function>",
    "<parameter=",
    "</parameter>",
    "<|python_tag|>",
    "[TOOL_CALLS]",
    "[ARGS]",
    "[CALL_ID]",
    "<|tool_call|>",
    "<|/tool_call|>",
    "functools[",
    "<|channel|>",
    "<|message|>",
    "<|start|>",
    "<|call|>",
    "<|end|>",
    " to=functions.",
    "<|constrain|>",
    "```tool_code\n",
    "```json\n",
    "```",
    "get_weather",
    "get_time",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    '"',
    "'",
    ",",
    ":",
    ";",
    "=",
    "\\",
    "\n",
    '"name": ',
    '"arguments": ',
    '"tool": ',
    '"args": ',
    "city=",
    '"Paris"',
    "1",
    "true",
    "None",
    "é東🌧",
]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(FRAGMENTS) | st.text(string.printable, max_size=3), max_size=40),
    st.sampled_from(FORMATS),
    st.booleans(),
)
def test_any_text_is_no_call_or_well_formed_calls(pieces, fmt, declared):
    tools = TOOLS if declared else ()
    found = parse("".join(pieces), tools, format=fmt)
    if found is None:
        return
    assert found.calls
    for call in found.calls:
        assert isinstance(call.arguments, dict)
        msgspec.json.encode(call.arguments)  # the client encodes them
        if declared:
            assert call.name in {"get_weather", "get_time"}


JSON_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(), children, max_size=3)
    ),
    max_leaves=10,
)
ARGUMENTS = st.dictionaries(
    # Keyword names (`is`, `if`) cannot be written as Python keyword arguments.
    st.text(string.ascii_letters, min_size=1, max_size=8).filter(
        lambda name: name.isidentifier() and not keyword.iskeyword(name)
    ),
    JSON_VALUES,
    max_size=4,
)


def _surrogate_free(value: object) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return False
    return True


@settings(max_examples=200, deadline=None)
@given(ARGUMENTS.filter(_surrogate_free), st.sampled_from(["", "Let me check.\n", "好的！ "]))
def test_hermes_arguments_come_back_exactly(arguments, prose):
    call = json.dumps({"name": "get_weather", "arguments": arguments}, ensure_ascii=False)
    # Named, not `auto`: a value may spell a marker of a format `auto` checks first.
    found = parse(f"{prose}<tool_call>\n{call}\n</tool_call>", TOOLS, format="hermes")
    assert found is not None
    assert [(c.name, c.arguments) for c in found.calls] == [("get_weather", arguments)]
    assert found.text == prose.strip()


@settings(max_examples=200, deadline=None)
@given(ARGUMENTS.filter(_surrogate_free))
def test_pythonic_arguments_come_back_exactly(arguments):
    # repr() writes Python literals: quotes of either kind, escapes, True/None.
    written = ", ".join(f"{key}={value!r}" for key, value in arguments.items())
    # Named, not `auto`: a value may spell another format's marker ("[TOOL_CALLS]"), and under
    # `auto` a marked format decides alone.
    found = parse(f"[get_weather({written})]", TOOLS, format="pythonic")
    assert found is not None
    assert [(c.name, c.arguments) for c in found.calls] == [("get_weather", arguments)]


def test_a_tool_named_print_is_called_not_unwrapped():
    tools = (Tool(name="print"),)
    found = parse("```tool_code\nprint(x='hi')\n```", tools, format="auto")
    assert found is not None and [(c.name, c.arguments) for c in found.calls] == [
        ("print", {"x": "hi"})
    ]


@pytest.mark.parametrize("marker", ["<tool_call>", "</tool_call>", "<tool_call></tool_call>"])
def test_a_hermes_argument_may_spell_the_tags(marker):
    """Found by the property test above: a string value holding a tag is data, not markup."""
    arguments = {"A": {marker: None}, "b": f"x{marker}y"}
    call = json.dumps({"name": "get_weather", "arguments": arguments})
    found = parse(f"<tool_call>\n{call}\n</tool_call> after", TOOLS, format="hermes")
    assert found is not None
    assert [(c.name, c.arguments) for c in found.calls] == [("get_weather", arguments)]
    assert found.text == "after"
