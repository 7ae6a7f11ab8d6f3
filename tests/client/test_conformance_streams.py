"""Every recorded stream, through the SSE decoder and the output slots, in three chunkings.

The expected values come from the stream's own events: the terminal response object's output
list (text, summary, call ids, names, arguments, statuses) and the ``output_item.done`` items
(``encrypted_content`` is re-encrypted at every emission: the value kept is the ``.done`` one,
which has the length of the terminal copy but not its bytes).
"""

from __future__ import annotations

import pytest

from turnwire.wire.response import HostedOutput, MessageOutput, ReasoningOutput, ToolCallOutput

from .streams import STREAMS, parse, payloads, wire_bytes

CHUNKS = (1, 7, 4096)
TERMINALS = {"response.completed": "completed", "response.incomplete": "incomplete"}


def expected_responses(path):
    """Per response on the stream: (terminal event payload or None, done items by index)."""
    responses, done = [], {}
    for payload in payloads(path):
        kind = payload["type"]
        if kind == "response.output_item.done":
            done[payload["output_index"]] = payload["item"]
        elif kind in TERMINALS or kind in ("response.failed", "error"):
            responses.append((payload, done))
            done = {}
    return responses


@pytest.mark.parametrize("chunk", CHUNKS)
@pytest.mark.parametrize("path", STREAMS, ids=[p.name for p in STREAMS])
def test_stream_gives_the_items_its_terminal_response_lists(path, chunk):
    generations = parse(wire_bytes(path), chunk)
    expected = expected_responses(path)
    if path.name.startswith("error_then_failed"):
        assert [g.terminal for g in generations] == ["error"]
        assert generations[0].error_code == "insufficient_quota"
        assert "quota" in generations[0].error_message
        return
    assert len(generations) == len(expected)
    for generation, (terminal, done) in zip(generations, expected, strict=True):
        response = terminal["response"]
        assert generation.terminal == TERMINALS[terminal["type"]]
        assert generation.response_id == response["id"]
        assert generation.model == response["model"]
        assert generation.usage == response["usage"]
        assert generation.sequence_gaps == 0
        ours = {o.output_index: o for o in generation.outputs}
        hosted = []
        for index, item in enumerate(response["output"]):
            kind = item["type"]
            if kind == "message":
                out = ours[index]
                assert isinstance(out, MessageOutput)
                texts = [p["text"] for p in item["content"] if p["type"] == "output_text"]
                assert out.text == "".join(texts)
                assert (out.item_id, out.status, out.phase) == (
                    item["id"],
                    item["status"],
                    item.get("phase"),
                )
            elif kind == "reasoning":
                out = ours[index]
                assert isinstance(out, ReasoningOutput)
                assert out.item_id == item["id"]
                assert list(out.summary) == [p["text"] for p in item["summary"]]
                final = done[index].get("encrypted_content")
                assert out.encrypted_content == final
                if item.get("encrypted_content"):
                    assert len(out.encrypted_content) == len(item["encrypted_content"])
            elif kind == "function_call":
                out = ours[index]
                assert isinstance(out, ToolCallOutput)
                assert (out.call_id, out.name, out.arguments, out.item_id, out.status) == (
                    item["call_id"],
                    item["name"],
                    item["arguments"],
                    item["id"],
                    item["status"],
                )
            else:
                hosted.append(kind)
                out = ours[index]
                assert isinstance(out, HostedOutput)
                # kept whole, as output_item.done gave it
                assert (out.type, out.item_id, out.item) == (kind, item["id"], done[index])
        assert list(generation.hosted) == hosted


def test_the_four_back_to_back_responses_are_four_generations():
    path = next(p for p in STREAMS if "4_sequential" in p.name)
    generations = parse(wire_bytes(path), 4096)
    assert [len(g.tool_calls) for g in generations] == [1, 1, 1, 0]
    assert generations[0].reasoning[0].encrypted_content
    assert generations[3].text


# ------------------------------------------------------------------ the official types agree


def _sdk_response(payload):
    """The terminal response as the SDK builds it (its lenient ``construct_type``)."""
    from openai._models import construct_type
    from openai.types.responses import Response

    return construct_type(type_=Response, value=payload["response"])


@pytest.mark.parametrize(
    "path",
    [p for p in STREAMS if p.suffix == ".sse"],
    ids=[p.name for p in STREAMS if p.suffix == ".sse"],
)
def test_the_official_types_parse_the_same_result(path):
    generations = parse(wire_bytes(path), 4096)
    completed = [_sdk_response(p) for p in payloads(path) if p["type"] in TERMINALS]
    assert len(completed) == len(generations)
    for generation, response in zip(generations, completed, strict=True):
        assert generation.response_id == response.id
        assert generation.status == response.status
        sdk_calls = [
            (o.call_id, o.name, o.arguments) for o in response.output if o.type == "function_call"
        ]
        assert [(c.call_id, c.name, c.arguments) for c in generation.tool_calls] == sdk_calls
        sdk_text = "".join(
            c.text
            for o in response.output
            if o.type == "message"
            for c in o.content
            if c.type == "output_text"
        )
        assert generation.text == sdk_text
        sdk_summaries = [
            [s.text for s in o.summary] for o in response.output if o.type == "reasoning"
        ]
        assert [list(r.summary) for r in generation.reasoning] == sdk_summaries
