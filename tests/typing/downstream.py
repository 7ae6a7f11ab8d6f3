"""A downstream script, checked by ``mypy --strict`` in tests/test_public_api.py."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

import turnwire


def summary(path: str) -> str:
    result = turnwire.run(path, base_url="http://127.0.0.1:9/v1", api_key="sk-example", once=True)
    calls = [call.tool for call in result.records.tool_calls]
    text = " ".join(message.content or "" for message in result.records.messages)
    return f"{result.response.finish_reason} {result.iterations} {calls} {text}"


async def main(container: turnwire.Container, thread: turnwire.Thread) -> turnwire.RunResult:
    async with turnwire.Client(container, api_key="sk-example") as client:
        return await client.run(thread, once=True)


def stored(store: turnwire.ThreadStore, thread_id: str) -> int:
    result: turnwire.RunResult = turnwire.run_thread(thread_id, store=store, prompt="hi")
    return len(result.thread.messages)


@turnwire.tool
def get_weather(city: str, days: int = 1) -> str:
    """The weather in a city."""
    return city * days


@turnwire.tool(name="lookup", strict=False)
async def lookup_order(order_id: int) -> dict[str, int]:
    """Look an order up."""
    return {"order": order_id}


def plain_tool(text: str) -> str:
    return text


def with_tools(path: str) -> str:
    forecast: str = get_weather("Paris", days=2)  # still the function, typed as it was
    declared: turnwire.Tool = get_weather.declaration
    made: turnwire.ToolFunction[[int], Coroutine[Any, Any, dict[str, int]]] = lookup_order
    result = turnwire.run(path, tools=[get_weather, lookup_order, plain_tool])
    return f"{forecast} {declared.name} {made.name} {result.iterations}"


def handle(error: turnwire.TurnwireError) -> str:
    if isinstance(error, turnwire.HttpError):
        return f"{error.code} {error.status}"
    return error.code


if __name__ == "__main__":
    with turnwire.SQLiteStore(":memory:") as store:
        print(stored(store, "t"), asyncio.run(main(turnwire.build_container(), turnwire.Thread())))
