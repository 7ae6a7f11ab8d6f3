"""One connection for a client: answers are read to their end before their connection goes
back to the pool, so a tool loop and the next run reuse it instead of opening one per request."""

from __future__ import annotations

import asyncio

import turnwire

from ..conftest import make_container
from .server import Reply, ScriptedServer
from .streams import WEATHER_THREAD, call_answer, text_answer


def _call(n: int) -> Reply:
    return Reply.sse(
        call_answer("get_weather", '{"location":"Paris"}', call_id=f"call_{n}", item_id=f"fc_{n}")
    )


def _client(server: ScriptedServer) -> turnwire.Client:
    return turnwire.Client(
        make_container(),
        base_url=server.base_url,
        api_key="sk-test-key",
        handlers={"get_weather": lambda location: f"sunny in {location}"},
    )


def test_a_tool_loop_and_a_second_run_share_one_connection():
    script = [_call(n) for n in range(4)]
    script += [Reply.sse(text_answer("Sunny.")), Reply.sse(text_answer("Yes.", msg_id="msg_2"))]
    with ScriptedServer(script, keep_alive=True) as server:

        async def runs() -> tuple[turnwire.RunResult, turnwire.RunResult]:
            async with _client(server) as client:
                first = await client.run(turnwire.load_thread(WEATHER_THREAD))
                return first, await client.run(first.thread)

        first, second = asyncio.run(runs())
    assert first.requests == 5 and second.requests == 1
    assert len(server.requests) == 6
    assert server.connections == 1  # one TCP connection for six requests and two runs
