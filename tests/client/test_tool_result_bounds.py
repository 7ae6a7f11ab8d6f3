"""What a tool gives back enters the thread as text a request can carry, within its limits:
a lone surrogate becomes U+FFFD (never an encode error deep in the run), and the built-in
artifact tools run under ``tools.timeout_s`` like any handler."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import turnwire
from turnwire.client.tools import ToolExecutor
from turnwire.model.records import Artifact, ToolCall, ToolResult

AT = datetime(2026, 1, 1, tzinfo=UTC)


def _thread(*calls: ToolCall) -> turnwire.Thread:
    thread = turnwire.load_thread(
        {
            "version": 1,
            "model": "gpt-5",
            "tools": [
                {
                    "name": "echo",
                    "description": "Echo.",
                    "parameters": {"type": "object", "properties": {}},
                }
            ],
        }
    )
    import msgspec

    return msgspec.structs.replace(thread, tool_calls=calls)


def test_a_lone_surrogate_in_a_result_or_an_error_becomes_a_replacement_character() -> None:
    def handler() -> str:
        return "half \ud800 of a pair"

    def failing() -> str:
        raise ValueError("broken \udcff message")

    call = ToolCall(id="call_1", tool="echo", args={}, created_at=AT)
    for function, expected, is_error in (
        (handler, "half \ufffd of a pair", False),
        (failing, "broken \ufffd message", True),
    ):
        executor = ToolExecutor(inline_max_bytes=4096, handlers={"echo": function})
        done = asyncio.run(executor.execute(call, _thread()))
        assert done.is_error is is_error
        assert done.result is not None and expected in (done.result.text or "")
        done.result.text.encode()  # well-formed: it encodes


def test_a_rendered_request_carries_the_replaced_result() -> None:
    call = ToolCall(id="call_1", tool="echo", args={}, created_at=AT)
    executor = ToolExecutor(inline_max_bytes=4096, handlers={"echo": lambda: "x\ud800y"})
    done = asyncio.run(executor.execute(call, _thread()))
    body = turnwire.render(_thread(done)).body
    assert "x\ufffdy".encode() in body


def test_artifact_grep_is_held_to_the_tool_timeout() -> None:
    huge = "\n".join(f"line {n} of a long artifact" for n in range(400_000))
    earlier = ToolCall(
        id="call_big",
        tool="echo",
        args={},
        created_at=AT,
        result=ToolResult(artifact=Artifact(text=huge)),
    )
    grep = ToolCall(
        id="call_grep",
        tool="artifact_grep",
        args={"callId": "call_big", "pattern": "matches no line"},
        created_at=AT,
    )
    executor = ToolExecutor(inline_max_bytes=4096, timeout_s=0.001)
    done = asyncio.run(executor.execute(grep, _thread(earlier)))
    assert done.is_error
    assert "did not finish within" in (done.result.text or "")
    # with time to finish, the same call answers
    relaxed = asyncio.run(
        ToolExecutor(inline_max_bytes=4096, timeout_s=60).execute(grep, _thread(earlier))
    )
    assert not relaxed.is_error
